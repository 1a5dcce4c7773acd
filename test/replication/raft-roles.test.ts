/**
 * Table-driven tests of raft's role modules (cores/raft/candidate.ts, follower.ts, leader.ts,
 * requests.ts, invariants.ts) run over a hand-built node state instead of a RaftCore: each
 * function is a free function over the Raft interface (raft/state.ts), so a test sets the state it
 * needs, calls one function, and reads what it sent, answered and asked raft.ts to do.
 */
import t from 'tap';
import type { ClientReply, CoreEvent, NodeId } from '../../src/replication/core.js';
import { defaultTimings } from '../../src/replication/core.js';
import { HybridClock } from '../../src/replication/hlc.js';
import { raftAppendTimesEntriesMax, raftProposalQueueSettledEntriesMin } from '../../src/replication/limits.js';
import {
  hasQuorum,
  inLease,
  logUpToDate,
  onVoteRequest,
  onVoteResponse,
  requestVotes,
} from '../../src/replication/cores/raft/candidate.js';
import { DurableJournal } from '../../src/replication/cores/raft/durable.js';
import {
  appendReject,
  followLeader,
  onAppend,
  onHeartbeat,
  onSnapshot,
} from '../../src/replication/cores/raft/follower.js';
import { checkInvariants } from '../../src/replication/cores/raft/invariants.js';
import {
  appendEntry,
  flush,
  maybeCommit,
  onAppendResponse,
  quorumActive,
  sendAppend,
} from '../../src/replication/cores/raft/leader.js';
import { RaftLog } from '../../src/replication/cores/raft/log.js';
import { AppendTimes, newProgress, type Progress } from '../../src/replication/cores/raft/progress.js';
import { PendingProposals } from '../../src/replication/cores/raft/proposals.js';
import { ReadIndexQueue } from '../../src/replication/cores/raft/read-index.js';
import { expireRequests, stepClient, stepControl } from '../../src/replication/cores/raft/requests.js';
import type { Raft } from '../../src/replication/cores/raft/state.js';
import { clientResultOf } from '../../src/replication/cores/raft/state-machine.js';
import type {
  AppendRequest,
  LogEntry,
  RaftMessage,
  RaftRole,
  RaftSnapshot,
} from '../../src/replication/cores/raft/types.js';
import { viewStateOf } from '../../src/replication/cores/raft/views.js';

const put = (index: number, term: number, key = `k${index}`): LogEntry => ({
  index,
  term,
  node_id: 'n1',
  timestamp: index,
  type: 'put',
  key,
  value: `v${index}`,
});

/** A node state and a record of everything the role functions asked of raft.ts. */
interface FakeRaft extends Raft {
  sent: Array<{ to: NodeId; msg: RaftMessage }>;
  replies: ClientReply[];
  events: CoreEvent[];
  /** Calls to raft.ts's actions other than output, in order ('becomeFollower 3 n2', 'apply', ...). */
  calls: string[];
}

interface FakeOptions {
  id?: NodeId;
  role?: RaftRole;
  term?: number;
  votedFor?: NodeId | null;
  voters?: NodeId[];
  entries?: LogEntry[];
  snapshot?: RaftSnapshot;
  commitIndex?: number;
  leaderId?: NodeId | '';
}

function fakeRaft(o: FakeOptions = {}): FakeRaft {
  const id = o.id ?? 'n1';
  const voters = o.voters ?? ['n1', 'n2', 'n3'];
  const snapshot = o.snapshot ?? { lastIncludedIndex: 0, lastIncludedTerm: 0, voters, store: {} };
  const journal = new DurableJournal();
  const log = new RaftLog(snapshot, [...(o.entries ?? [])], journal);
  const commitIndex = o.commitIndex ?? snapshot.lastIncludedIndex;
  const r: FakeRaft = {
    id,
    timings: { ...defaultTimings, maxEntriesPerMessage: 2 },
    clock: new HybridClock(),
    term: o.term ?? 1,
    votedFor: o.votedFor ?? null,
    log,
    journal,
    store: {},
    commitIndex,
    lastApplied: commitIndex,
    role: o.role ?? 'follower',
    preCandidate: false,
    leaderId: o.leaderId ?? '',
    voters,
    configIndex: 0,
    electionDeadline: 1000,
    lastLeaderContactAt: -Infinity,
    votes: new Set<NodeId>(),
    leaderLastIndex: 0,
    pending: new PendingProposals(),
    progress: new Map<NodeId, Progress>(),
    heartbeatDeadline: Infinity,
    termStartIndex: 0,
    leaderSince: 0,
    readSeq: 0,
    pendingReads: new ReadIndexQueue(),
    appendedAt: new AppendTimes(raftAppendTimesEntriesMax),
    flushNeeded: false,
    readBroadcast: false,
    sent: [],
    replies: [],
    events: [],
    calls: [],
    becomeFollower(term, leader) {
      this.calls.push(`becomeFollower ${term} ${leader}`);
      (this as { role: RaftRole }).role = 'follower';
      (this as { term: number }).term = term;
    },
    becomeCandidate() {
      this.calls.push('becomeCandidate');
    },
    becomeLeader() {
      this.calls.push('becomeLeader');
    },
    apply() {
      this.calls.push(`apply ${this.commitIndex}`);
    },
    refreshConfig() {
      this.calls.push('refreshConfig');
    },
    resetElectionTimer() {
      this.calls.push('resetElectionTimer');
    },
    persistentState() {
      return {
        term: this.term,
        votedFor: this.votedFor,
        log: [...this.log.all()],
        raftSnapshot: this.log.raftSnapshot,
      };
    },
    snapshotInstalled(index) {
      this.calls.push(`snapshotInstalled ${index}`);
    },
    send(to, msg) {
      this.sent.push({ to, msg });
    },
    reply(reply) {
      this.replies.push(reply);
    },
    emit(e) {
      this.events.push(e);
    },
  };
  return r;
}

/** A leader of `term` with progress for every other voter (all caught up to `match`). */
function fakeLeader(o: FakeOptions & { match?: number } = {}): FakeRaft {
  const r = fakeRaft({ ...o, role: 'leader', votedFor: o.id ?? 'n1', leaderId: o.id ?? 'n1' });
  for (const v of r.voters) {
    if (v !== r.id) r.progress.set(v, { ...newProgress(r.log.lastIndex, 0), match: o.match ?? 0 });
  }
  (r as { heartbeatDeadline: number }).heartbeatDeadline = 50;
  (r as { electionDeadline: number }).electionDeadline = Infinity;
  (r as { termStartIndex: number }).termStartIndex = r.log.lastIndex;
  return r;
}

const appendReq = (m: Partial<AppendRequest>): AppendRequest => ({
  kind: 'append',
  term: 1,
  prevLogIndex: 0,
  prevLogTerm: 0,
  entries: [],
  leaderCommit: 0,
  leaderLastIndex: 0,
  seq: 0,
  ...m,
});

t.test('candidate: §5.4.1 up to date, the lease, quorum and vote requests', async (t) => {
  const r = fakeRaft({ entries: [put(1, 1), put(2, 2), put(3, 2)] });
  const upToDate = [
    { name: 'a higher last term is up to date, however short', index: 1, term: 3, want: true },
    { name: 'the same last term and a longer log is up to date', index: 4, term: 2, want: true },
    { name: 'the same last term and the same length is up to date', index: 3, term: 2, want: true },
    { name: 'the same last term and a shorter log is not', index: 2, term: 2, want: false },
    { name: 'a longer log with an older last term is not', index: 9, term: 1, want: false },
  ];
  for (const c of upToDate) t.equal(logUpToDate(r, c.index, c.term), c.want, c.name);

  const lease = [
    {
      name: 'a leader is always in its lease',
      role: 'leader' as const,
      leaderId: 'n1',
      contact: -Infinity,
      want: true,
    },
    {
      name: 'a follower that heard its leader within the minimum timeout is',
      role: 'follower' as const,
      leaderId: 'n2',
      contact: 100,
      want: true,
    },
    {
      name: 'a follower that heard it longer ago is not',
      role: 'follower' as const,
      leaderId: 'n2',
      contact: 0,
      want: false,
    },
    {
      name: 'a follower that knows no leader is not',
      role: 'follower' as const,
      leaderId: '',
      contact: 100,
      want: false,
    },
    { name: 'a candidate is not', role: 'candidate' as const, leaderId: '', contact: 100, want: false },
  ];
  for (const c of lease) {
    const node = fakeRaft({ role: c.role, leaderId: c.leaderId });
    node.lastLeaderContactAt = c.contact;
    t.equal(inLease(node, 100 + defaultTimings.electionTimeoutMsMin - 1), c.want, c.name);
  }

  t.ok(hasQuorum(r, new Set(['n1', 'n3'])), 'two of three voters are a quorum');
  t.notOk(hasQuorum(r, new Set(['n1', 'n4'])), 'a vote from outside the configuration does not count');
  requestVotes(r, 5, true);
  t.same(
    r.sent.map((s) => s.to),
    ['n2', 'n3'],
    'every other voter is asked, in voter order',
  );
  t.same(
    r.sent[0]?.msg,
    { kind: 'vote_req', term: 5, preVote: true, lastLogIndex: 3, lastLogTerm: 2 },
    'with our last index and term',
  );
});

t.test('candidate: one vote per term (§5.2), pre-votes change nothing (§9.6)', async (t) => {
  const r = fakeRaft({ term: 2 });
  onVoteRequest(r, 'n2', { kind: 'vote_req', term: 2, preVote: false, lastLogIndex: 0, lastLogTerm: 0 }, 10);
  t.equal(r.votedFor, 'n2', 'the first candidate of the term gets the vote');
  t.same(r.calls, ['resetElectionTimer'], 'granting a vote restarts the election timer');
  onVoteRequest(r, 'n3', { kind: 'vote_req', term: 2, preVote: false, lastLogIndex: 9, lastLogTerm: 2 }, 11);
  onVoteRequest(r, 'n2', { kind: 'vote_req', term: 2, preVote: false, lastLogIndex: 0, lastLogTerm: 0 }, 12);
  t.same(
    r.sent.map((s) => [s.to, (s.msg as { granted: boolean }).granted]),
    [
      ['n2', true],
      ['n3', false],
      ['n2', true],
    ],
    'a second candidate is refused; a repeated request gets the same answer',
  );
  const p = fakeRaft({ term: 2, entries: [put(1, 2)] });
  onVoteRequest(p, 'n3', { kind: 'vote_req', term: 3, preVote: true, lastLogIndex: 1, lastLogTerm: 2 }, 10);
  onVoteRequest(p, 'n2', { kind: 'vote_req', term: 3, preVote: true, lastLogIndex: 0, lastLogTerm: 0 }, 10);
  t.equal(p.votedFor, null, 'a pre-vote records no vote');
  t.same(p.calls, [], 'and restarts no timer');
  t.same(
    p.sent.map((s) => s.msg),
    [
      { kind: 'vote_resp', term: 3, preVote: true, granted: true },
      { kind: 'vote_resp', term: 2, preVote: true, granted: false },
    ],
    'a granted pre-vote echoes the proposed term; a refusal carries ours',
  );
});

t.test('candidate: a majority of votes moves the candidate on', async (t) => {
  const pre = fakeRaft({ role: 'candidate' });
  (pre as { preCandidate: boolean }).preCandidate = true;
  pre.votes.add('n1');
  onVoteResponse(pre, 'n2', { kind: 'vote_resp', term: 2, preVote: true, granted: true }, 0);
  t.same(pre.calls, ['becomeCandidate'], 'a pre-candidate with a majority of pre-votes starts the real election');
  const c = fakeRaft({ role: 'candidate', term: 2, votedFor: 'n1' });
  c.votes.add('n1');
  onVoteResponse(c, 'n2', { kind: 'vote_resp', term: 2, preVote: false, granted: false }, 0);
  t.same(c.calls, [], 'a refusal counts for nothing');
  onVoteResponse(c, 'n3', { kind: 'vote_resp', term: 2, preVote: false, granted: true }, 0);
  t.same(c.calls, ['becomeLeader'], 'a candidate with a majority of votes becomes leader');
});

t.test('follower: following the leader of a term', async (t) => {
  const r = fakeRaft({ term: 2, role: 'candidate' });
  followLeader(r, 'n2', 2, 7, 40);
  t.same(r.calls, ['becomeFollower 2 n2'], 'a candidate hearing the leader of its term steps down (§5.2)');
  t.same(
    [r.leaderId, r.lastLeaderContactAt, r.leaderLastIndex],
    ['n2', 40, 7],
    'and records the leader, when it heard it, its last index',
  );
  const f = fakeRaft({ term: 2, leaderId: 'n2' });
  followLeader(f, 'n2', 2, 9, 50);
  t.same(f.calls, ['resetElectionTimer'], 'a follower of the same leader only restarts its timer');
  t.throws(
    () => followLeader(f, 'n3', 2, 9, 60),
    /election safety/,
    'a second leader of one term is a bug, not a message',
  );
});

t.test('follower: the AppendEntries receiver (§5.3)', async (t) => {
  const cases: Array<{
    name: string;
    entries: LogEntry[];
    commit: number;
    req: Partial<AppendRequest>;
    want: object;
    log: number[];
    calls: string[];
  }> = [
    {
      name: 'no entry at prevLogIndex: rejected with our last index + 1 as the hint',
      entries: [put(1, 1)],
      commit: 0,
      req: { prevLogIndex: 3, prevLogTerm: 1 },
      want: { success: false, rejectIndex: 3, conflictTerm: 0, conflictIndex: 2 },
      log: [1],
      calls: [],
    },
    {
      name: 'a different term at prevLogIndex: rejected with that term and our first index of it',
      entries: [put(1, 1), put(2, 2), put(3, 2)],
      commit: 0,
      req: { prevLogIndex: 3, prevLogTerm: 3 },
      want: { success: false, rejectIndex: 3, conflictTerm: 2, conflictIndex: 2 },
      log: [1, 2, 2],
      calls: [],
    },
    {
      name: 'matching: new entries appended, commit up to min(leaderCommit, last verified index)',
      entries: [put(1, 1)],
      commit: 0,
      req: { prevLogIndex: 1, prevLogTerm: 1, entries: [put(2, 1), put(3, 1)], leaderCommit: 9 },
      want: { success: true, matchIndex: 3 },
      log: [1, 1, 1],
      calls: ['apply 3'],
    },
    {
      name: 'a conflicting uncommitted suffix is replaced',
      entries: [put(1, 1), put(2, 1), put(3, 1)],
      commit: 1,
      req: { term: 2, prevLogIndex: 1, prevLogTerm: 1, entries: [put(2, 2)], leaderCommit: 1 },
      want: { success: true, matchIndex: 2 },
      log: [1, 2],
      calls: [],
    },
    {
      name: 'entries the raftSnapshot covers are skipped, not compared',
      entries: [],
      commit: 2,
      req: { prevLogIndex: 0, prevLogTerm: 0, entries: [put(1, 1), put(2, 1)], leaderCommit: 2 },
      want: { success: true, matchIndex: 2 },
      log: [],
      calls: [],
    },
  ];
  for (const c of cases) {
    const snapshot = c.name.includes('raftSnapshot')
      ? { lastIncludedIndex: 2, lastIncludedTerm: 1, voters: ['n1', 'n2', 'n3'], store: {} }
      : undefined;
    const r = fakeRaft({
      term: c.req.term ?? 1,
      entries: c.entries,
      commitIndex: c.commit,
      ...(snapshot ? { snapshot } : {}),
    });
    onAppend(r, 'n2', appendReq(c.req), 0);
    t.match(r.sent[0]?.msg, { kind: 'append_resp', ...c.want }, `${c.name}: answer`);
    t.same(
      r.log.all().map((e) => e.term),
      c.log,
      `${c.name}: log terms`,
    );
    t.same(r.calls, c.calls, `${c.name}: actions`);
  }
  const r = fakeRaft({ term: 3 });
  t.same(
    appendReject(r, appendReq({ prevLogIndex: 4, seq: 7 }), 2, 3),
    {
      kind: 'append_resp',
      term: 3,
      success: false,
      matchIndex: 0,
      rejectIndex: 4,
      conflictTerm: 2,
      conflictIndex: 3,
      seq: 7,
    },
    'a rejection carries our term, the rejected index, the hints and the read round',
  );
});

t.test('follower: heartbeats and InstallSnapshot (§7)', async (t) => {
  const h = fakeRaft({ entries: [put(1, 1), put(2, 1)] });
  onHeartbeat(h, 'n2', { kind: 'heartbeat', term: 1, leaderCommit: 5, leaderLastIndex: 5, seq: 3 }, 0);
  t.equal(h.commitIndex, 2, 'a heartbeat commits no further than our own log');
  t.same(h.sent[0]?.msg, { kind: 'heartbeat_resp', term: 1, seq: 3 }, 'and is answered with its read round');
  const s = fakeRaft({ entries: [put(1, 1)], commitIndex: 1 });
  s.pending.add({ reqId: 8, index: 2, term: 1, deadline: 100, kind: 'write' });
  const snap = {
    lastIncludedIndex: 4,
    lastIncludedTerm: 1,
    voters: ['n1', 'n2', 'n3'],
    store: { a: { key: 'a', value: '1', tombstone: false, timestamp: 0, node_id: 'n2', version: 3, vclock: {} } },
  };
  onSnapshot(s, 'n2', { kind: 'snapshot', term: 1, raftSnapshot: snap, leaderLastIndex: 4, seq: 2 }, 0);
  t.same(
    [s.commitIndex, s.lastApplied, s.log.snapshotIndex, Object.keys(s.store)],
    [4, 4, 4, ['a']],
    'a newer raftSnapshot replaces log and store',
  );
  t.match(s.replies, [{ id: 8, ok: false, indeterminate: true }], 'a proposal it swallowed has an unknown outcome');
  t.same(s.calls, ['refreshConfig', 'snapshotInstalled 4'], 'the configuration is reloaded and observers told');
  t.match(s.sent[0]?.msg, { kind: 'snapshot_resp', matchIndex: 4, seq: 2 });
  const old = fakeRaft({ entries: [put(1, 1), put(2, 1)], commitIndex: 2 });
  onSnapshot(
    old,
    'n2',
    { kind: 'snapshot', term: 1, raftSnapshot: { ...snap, lastIncludedIndex: 1 }, leaderLastIndex: 4, seq: 2 },
    0,
  );
  t.same([old.log.snapshotIndex, old.calls], [0, []], 'a raftSnapshot behind our commit index changes nothing');
});

t.test('leader: what each follower is sent', async (t) => {
  const r = fakeLeader({ entries: [put(1, 1), put(2, 1), put(3, 1), put(4, 1)], match: 0 });
  const pr = r.progress.get('n2') as Progress;
  pr.next = 1;
  sendAppend(r, 'n2', 0);
  t.match(
    r.sent[0]?.msg,
    { kind: 'append', prevLogIndex: 0, entries: [{ index: 1 }, { index: 2 }] },
    'at most maxEntriesPerMessage entries',
  );
  t.equal(pr.next, 3, 'nextIndex advances optimistically past what was sent');
  sendAppend(r, 'n3', 0);
  t.match(
    r.sent[1]?.msg,
    { kind: 'append', prevLogIndex: 4, entries: [] },
    'a follower that has everything gets an empty append',
  );
  const c = fakeLeader({
    snapshot: { lastIncludedIndex: 5, lastIncludedTerm: 1, voters: ['n1', 'n2', 'n3'], store: {} },
    entries: [put(6, 1)],
  });
  const behind = c.progress.get('n2') as Progress;
  behind.next = 3;
  sendAppend(c, 'n2', 0);
  sendAppend(c, 'n2', defaultTimings.retransmitMs - 1);
  sendAppend(c, 'n2', defaultTimings.retransmitMs);
  t.same(
    c.sent.map((s) => s.msg.kind),
    ['snapshot', 'heartbeat', 'snapshot'],
    'a compacted nextIndex gets a raftSnapshot, resent only after retransmitMs',
  );
  const f = fakeLeader({ entries: [put(1, 1)] });
  appendEntry(f, { type: 'put', key: 'x', value: 'y' }, 0);
  t.ok(f.flushNeeded, 'a new entry waits for the flush');
  flush(f, 0);
  t.same([f.sent.length, f.flushNeeded], [2, false], 'the flush sends it to every follower once');
});

t.test('leader: answers, commit of current-term entries only (§5.4.2), CheckQuorum', async (t) => {
  const r = fakeLeader({ term: 2, entries: [put(1, 1), put(2, 1)] });
  onAppendResponse(
    r,
    'n2',
    {
      kind: 'append_resp',
      term: 2,
      success: true,
      matchIndex: 2,
      rejectIndex: 0,
      conflictTerm: 0,
      conflictIndex: 0,
      seq: 0,
    },
    5,
  );
  t.equal(r.commitIndex, 0, 'a majority on an entry of an earlier term does not commit it');
  appendEntry(r, { type: 'noop' }, 5);
  (r.progress.get('n3') as Progress).match = 3;
  maybeCommit(r, 5);
  t.same(
    [r.commitIndex, r.calls],
    [3, ['apply 3']],
    'an entry of our term on a majority commits it and the earlier ones',
  );
  const b = fakeLeader({ term: 2, entries: [put(1, 1), put(2, 1), put(3, 2)] });
  onAppendResponse(
    b,
    'n2',
    {
      kind: 'append_resp',
      term: 2,
      success: false,
      matchIndex: 0,
      rejectIndex: 3,
      conflictTerm: 0,
      conflictIndex: 2,
      seq: 0,
    },
    5,
  );
  t.match(
    b.sent[0]?.msg,
    { kind: 'append', prevLogIndex: 1, entries: [{ index: 2 }, { index: 3 }] },
    'a rejection backs nextIndex off to the follower’s hint and resends from there',
  );
  t.equal((b.progress.get('n2') as Progress).next, 4, 'nextIndex then advances past what was resent');
  const q = fakeLeader();
  const max = defaultTimings.electionTimeoutMsMax;
  t.ok(quorumActive(q, max), 'followers heard within the longest election timeout keep the leader active');
  (q.progress.get('n2') as Progress).lastAckAt = -1;
  t.ok(quorumActive(q, max), 'one silent follower of two still leaves a majority');
  (q.progress.get('n3') as Progress).lastAckAt = -1;
  t.notOk(quorumActive(q, max), 'two silent followers of two do not');
});

t.test('requests: a follower answers not_leader, controls raft does not have are refused', async (t) => {
  const f = fakeRaft({ leaderId: 'n2' });
  stepClient(f, { id: 1, op: { op: 'write', key: 'a', value: 'b' } }, 0);
  stepClient(f, { id: 2, op: { op: 'read', key: 'a' } }, 0);
  stepClient(f, { id: 3, op: { op: 'batch', entries: [] } }, 0);
  t.match(f.replies, [
    { id: 1, code: 'not_leader', leader_id: 'n2' },
    { id: 2, code: 'not_leader', leader_id: 'n2' },
    { id: 3, code: 'bad_request' },
  ]);
  const refused = [
    { name: 'replication_mode is single_leader only', cmd: { kind: 'replication_mode', mode: 'sync' } },
    { name: 'peers: raft changes membership through its log', cmd: { kind: 'peers', peers: [] } },
    { name: 'set_leader: raft elects its own', cmd: { kind: 'set_leader', node_id: 'n2' } },
    { name: 'an unknown custom command', cmd: { kind: 'custom', name: 'x', args: {} } },
  ];
  for (const c of refused) {
    t.match(stepControl(f, c.cmd as Parameters<typeof stepControl>[1], 0), { ok: false, code: 'unsupported' }, c.name);
  }
  t.match(
    stepControl(f, { kind: 'add_server', node_id: 'n4', reqId: 9 }, 0),
    { ok: false, code: 'not_leader' },
    'a membership change asks the leader',
  );
  const l = fakeLeader({ entries: [put(1, 1)] });
  stepClient(l, { id: 4, op: { op: 'write', key: 'a', value: 'b' } }, 10);
  t.same(
    [l.log.lastIndex, l.pending.nextDeadline()],
    [2, 10 + defaultTimings.requestTimeoutMs],
    'a leader appends a proposal with its deadline',
  );
  stepClient(l, { id: 5, op: { op: 'read', key: 'a' } }, 10);
  t.same([l.readSeq, l.readBroadcast, l.pendingReads.length], [1, true, 1], 'a read starts a ReadIndex round');
  expireRequests(l, 10 + defaultTimings.requestTimeoutMs);
  t.match(
    l.replies,
    [
      { id: 4, code: 'timeout', indeterminate: true },
      { id: 5, code: 'timeout' },
    ],
    'past the deadline: the write indeterminate, the read failed',
  );
  t.same(clientResultOf({ ...put(3, 1), type: 'noop' } as LogEntry, [], 'n1'), undefined, 'a no-op answers nobody');
});

t.test('invariants: what holds between two steps', async (t) => {
  const ok = fakeLeader({ entries: [put(1, 1)] });
  t.doesNotThrow(() => checkInvariants(ok, { term: 1, votedFor: 'n1' }), 'a consistent leader passes');
  const broken: Array<{
    name: string;
    breakIt: (r: FakeRaft) => void;
    checked?: { term: number; votedFor: NodeId | null };
    want: RegExp;
  }> = [
    {
      name: 'commit past the last index',
      breakIt: (r) => {
        r.commitIndex = 5;
      },
      want: /commit 5 past last index/,
    },
    {
      name: 'applied past commit',
      breakIt: (r) => {
        r.lastApplied = 1;
      },
      want: /applied 1 past commit/,
    },
    { name: 'a term that went back', breakIt: () => {}, checked: { term: 3, votedFor: null }, want: /term decreased/ },
    {
      name: 'a vote changed within its term',
      breakIt: (r) => {
        r.votedFor = 'n3';
      },
      checked: { term: 1, votedFor: 'n2' },
      want: /vote of term 1 changed/,
    },
    {
      name: 'a follower holding progress',
      breakIt: (r) => {
        r.progress.set('n2', newProgress(1, 0));
      },
      want: /only a leader tracks follower progress/,
    },
  ];
  for (const c of broken) {
    const r = fakeRaft({ entries: [put(1, 1)] });
    c.breakIt(r);
    t.throws(() => checkInvariants(r, c.checked ?? { term: 1, votedFor: null }), c.want, c.name);
  }
  const v = viewStateOf(ok);
  t.same([v.role, v.term, v.appendTime(1)], ['leader', 1, 0], 'the views read the same state');
});

t.test('raft limits: at and past each cap', async (t) => {
  const r = fakeLeader();
  for (let i = 1; i <= raftAppendTimesEntriesMax + 1; i++) appendEntry(r, { type: 'noop' }, i);
  t.equal(
    r.appendedAt.size,
    raftAppendTimesEntriesMax,
    `a leader keeps ${raftAppendTimesEntriesMax} append times, no more`,
  );
  t.equal(
    r.appendedAt.timeOf(1, -1),
    2,
    'past the cap the oldest is forgotten: its lag reads from the oldest kept time',
  );
  t.equal(r.appendedAt.timeOf(raftAppendTimesEntriesMax + 1, -1), raftAppendTimesEntriesMax + 1, 'the newest is kept');

  // Settled proposals past raftProposalQueueSettledEntriesMin are dropped from the deadline queue:
  // the deadlines still come out in order on both sides of that point.
  const settled = raftProposalQueueSettledEntriesMin;
  for (const extra of [0, 1, 2]) {
    const q = new PendingProposals();
    const count = 2 * (settled + extra) + 4;
    for (let i = 1; i <= count; i++) q.add({ reqId: i, index: i, term: 1, deadline: i, kind: 'write' });
    for (let i = 1; i <= settled + extra; i++) q.takeAt(i);
    t.equal(
      q.nextDeadline(),
      settled + extra + 1,
      `${settled + extra} settled: the next deadline is the first unsettled one`,
    );
    t.same(
      q.takeExpired(settled + extra + 2).map((p) => p.reqId),
      [settled + extra + 1, settled + extra + 2],
      'and they expire in order',
    );
    t.equal(q.size, count - settled - extra - 2);
  }
});
