import t, { type Test } from 'tap';
import { isDeepStrictEqual } from 'node:util';
import {
  createRaftCore,
  raftDurableFold,
  RaftCore,
  type LogEntry,
  type RaftDurableRecord,
  type RaftMessage,
  type RaftPersistentState,
  type RaftRole,
} from '../../src/replication/cores/raft.js';
import {
  defaultTimings,
  emptyOutput,
  type ClientReply,
  type ClusterConfig,
  type CoreOutput,
  type CoreTimings,
  type NodeId,
} from '../../src/replication/core.js';
import { DetCluster } from '../../src/fabric/deterministic.js';
import { withStatus } from '../helpers/status.js';
import { SeededRng } from '../../src/util/rng.js';
import { AssertionFailure } from '../../src/util/assert.js';
import { runRaftSwarm } from '../../src/replication/swarm/raft-swarm.js';
import { createHash } from 'node:crypto';
import { snapshotCatchUpEntriesDefault } from '../../src/replication/limits.js';

// ------------------------------------------------------------------ helpers

const config: ClusterConfig = {
  strategy: 'raft',
  node_count: 3,
  replication_mode: 'async',
  conflict_resolver: 'lww',
  quorum_n: 3,
  quorum_w: 2,
  quorum_r: 2,
  regions: 1,
  inter_region_latency_ms: 80,
  consistency_level: 'quorum',
  read_repair_mode: 'async',
  sloppy_quorum: true,
};

const three = ['n1', 'n2', 'n3'];
const five = ['n1', 'n2', 'n3', 'n4', 'n5'];

/** A log whose entry i+1 has term terms[i] (puts of k<i>=v<i>). */
function entries(terms: number[], from = 1): LogEntry[] {
  return terms.map((term, i) => ({
    index: from + i,
    term,
    node_id: 'n1',
    timestamp: 1_000_000 + from + i,
    type: 'put' as const,
    key: `k${from + i}`,
    value: `v${from + i}-t${term}`,
  }));
}

function persisted(
  term: number,
  logTerms: number[],
  votedFor: NodeId | null = null,
  peers = three,
): RaftPersistentState {
  return {
    term,
    votedFor,
    log: entries(logTerms),
    raftSnapshot: { lastIncludedIndex: 0, lastIncludedTerm: 0, voters: peers, store: {} },
  };
}

function mk(
  id: NodeId,
  opts: { peers?: NodeId[]; persisted?: RaftPersistentState; timings?: Partial<CoreTimings>; now?: number } = {},
): RaftCore {
  return new RaftCore({
    id,
    cluster_id: 'c',
    peers: opts.peers ?? three,
    config,
    timings: { ...defaultTimings, ...opts.timings },
    rng: new SeededRng(1),
    now: opts.now ?? 0,
    ...(opts.persisted ? { persisted: opts.persisted } : {}),
  });
}

function drain(c: RaftCore): CoreOutput {
  const out = emptyOutput();
  c.drain(out);
  return out;
}

function sent(out: CoreOutput, to?: NodeId): RaftMessage[] {
  return out.messages.filter((m) => to === undefined || m.to === to).map((m) => m.msg as RaftMessage);
}

function only<K extends RaftMessage['kind']>(msgs: RaftMessage[], kind: K): Extract<RaftMessage, { kind: K }> {
  const m = msgs.filter((x) => x.kind === kind);
  if (m.length !== 1) throw new Error(`expected one ${kind}, got ${JSON.stringify(msgs)}`);
  return m[0] as Extract<RaftMessage, { kind: K }>;
}

/** Drives `c` through PreVote and a real election with every peer granting; returns the time. */
function elect(c: RaftCore, peers: NodeId[]): number {
  const now = c.nextDeadline();
  c.onTick(now);
  drain(c);
  const preTerm = c.inspect().term + 1;
  for (const p of peers)
    if (p !== c.id) c.onMessage(p, { kind: 'vote_resp', term: preTerm, preVote: true, granted: true }, now);
  drain(c);
  const term = c.inspect().term;
  for (const p of peers)
    if (p !== c.id) c.onMessage(p, { kind: 'vote_resp', term, preVote: false, granted: true }, now);
  if (c.inspect().role !== 'leader') throw new Error(`election failed: ${JSON.stringify(c.inspect())}`);
  return now;
}

function appendReq(
  term: number,
  prevLogIndex: number,
  prevLogTerm: number,
  ents: LogEntry[],
  leaderCommit = 0,
): RaftMessage {
  return {
    kind: 'append',
    term,
    prevLogIndex,
    prevLogTerm,
    entries: ents,
    leaderCommit,
    leaderLastIndex: prevLogIndex + ents.length,
    seq: 0,
  };
}

function cluster(ids: NodeId[], seed: number, timings: Partial<CoreTimings> = {}): DetCluster {
  const c = new DetCluster({ factory: createRaftCore, nodeIds: ids, config, seed, timings, startTimeMs: 0 });
  for (const a of ids) for (const b of ids) if (a !== b) c.fabric.setLatency(a, b, 5);
  return c;
}

function raft(c: DetCluster, id: NodeId): RaftCore {
  return c.core(id) as RaftCore;
}

function leaderOf(c: DetCluster): NodeId | undefined {
  const ls = c.nodeIds().filter((id) => c.state(id) === 'online' && raft(c, id).inspect().role === 'leader');
  return ls.length === 1 ? ls[0] : undefined;
}

function settle(c: DetCluster, ms = 1500): NodeId {
  c.runFor(ms);
  const l = leaderOf(c);
  if (!l) throw new Error('no single leader');
  return l;
}

function write(c: DetCluster, node: NodeId, key: string, value: string, maxMs = 2000): ClientReply | undefined {
  return c.runUntilReply(c.client(node, { op: 'write', key, value }), maxMs);
}

// ------------------------------------------------------------------ elections

t.test('vote granting follows the up-to-date rule, one vote per term, and PreVote', async (t) => {
  interface Case {
    name: string;
    state: RaftPersistentState;
    /** ms since n2 (the leader of state.term) last sent an AppendEntries; undefined: never. */
    heardFromLeaderMsAgo?: number;
    req: { term: number; lastLogIndex: number; lastLogTerm: number; preVote: boolean; from?: NodeId };
    expect: { granted: boolean; term: number; votedFor: NodeId | null } | 'ignored';
  }
  const cases: Case[] = [
    {
      name: 'a candidate with a longer log of the same last term gets the vote',
      state: persisted(2, [1, 2]),
      req: { term: 3, lastLogIndex: 3, lastLogTerm: 2, preVote: false },
      expect: { granted: true, term: 3, votedFor: 'n3' },
    },
    {
      name: 'a longer log with an older last term is not up to date (§5.4.1)',
      state: persisted(3, [1, 3]),
      req: { term: 4, lastLogIndex: 5, lastLogTerm: 2, preVote: false },
      expect: { granted: false, term: 4, votedFor: null },
    },
    {
      name: 'a shorter log of the same last term is not up to date',
      state: persisted(2, [1, 2, 2]),
      req: { term: 3, lastLogIndex: 2, lastLogTerm: 2, preVote: false },
      expect: { granted: false, term: 3, votedFor: null },
    },
    {
      name: 'a shorter log with a newer last term is up to date',
      state: persisted(2, [1, 1, 1, 1]),
      req: { term: 3, lastLogIndex: 2, lastLogTerm: 2, preVote: false },
      expect: { granted: true, term: 3, votedFor: 'n3' },
    },
    {
      name: 'a node that voted in this term refuses a second candidate',
      state: persisted(3, [1], 'n2'),
      req: { term: 3, lastLogIndex: 1, lastLogTerm: 1, preVote: false },
      expect: { granted: false, term: 3, votedFor: 'n2' },
    },
    {
      name: 'a repeated request from the candidate it voted for is granted again',
      state: persisted(3, [1], 'n3'),
      req: { term: 3, lastLogIndex: 1, lastLogTerm: 1, preVote: false },
      expect: { granted: true, term: 3, votedFor: 'n3' },
    },
    {
      name: 'a request from an older term is refused with the newer term',
      state: persisted(5, [1]),
      req: { term: 4, lastLogIndex: 9, lastLogTerm: 4, preVote: false },
      expect: { granted: false, term: 5, votedFor: null },
    },
    {
      name: 'a pre-vote is granted without changing term or vote',
      state: persisted(2, [1, 2], 'n1'),
      req: { term: 3, lastLogIndex: 2, lastLogTerm: 2, preVote: true },
      expect: { granted: true, term: 2, votedFor: 'n1' },
    },
    {
      name: 'a pre-vote from a stale log is refused, term unchanged',
      state: persisted(2, [1, 2]),
      req: { term: 3, lastLogIndex: 1, lastLogTerm: 1, preVote: true },
      expect: { granted: false, term: 2, votedFor: null },
    },
    {
      name: 'a pre-vote for a term not ahead of ours is refused',
      state: persisted(4, [1, 2]),
      req: { term: 4, lastLogIndex: 2, lastLogTerm: 2, preVote: true },
      expect: { granted: false, term: 4, votedFor: null },
    },
    {
      name: 'a pre-vote is ignored while the leader was heard within the minimum election timeout',
      state: persisted(2, [1, 2]),
      heardFromLeaderMsAgo: 20,
      req: { term: 3, lastLogIndex: 9, lastLogTerm: 2, preVote: true },
      expect: 'ignored',
    },
    {
      name: 'a real vote request for a newer term is ignored inside the lease, term kept (§4.2.3)',
      state: persisted(2, [1, 2]),
      heardFromLeaderMsAgo: 100,
      req: { term: 7, lastLogIndex: 9, lastLogTerm: 2, preVote: false },
      expect: 'ignored',
    },
    {
      name: 'once the lease has expired the same request is granted',
      state: persisted(2, [1, 2]),
      heardFromLeaderMsAgo: 200,
      req: { term: 7, lastLogIndex: 9, lastLogTerm: 2, preVote: false },
      expect: { granted: true, term: 7, votedFor: 'n3' },
    },
  ];
  for (const c of cases) {
    const node = mk('n1', { persisted: c.state, now: 0 });
    let now = 10;
    if (c.heardFromLeaderMsAgo !== undefined) {
      const lastIndex = c.state.log.length;
      const lastTerm = c.state.log[lastIndex - 1]?.term ?? 0;
      node.onMessage('n2', appendReq(c.state.term, lastIndex, lastTerm, []), now);
      drain(node);
      now += c.heardFromLeaderMsAgo;
    }
    node.onMessage(c.req.from ?? 'n3', { kind: 'vote_req', ...c.req }, now);
    const msgs = sent(drain(node), 'n3');
    const after = node.inspect();
    if (c.expect === 'ignored') {
      t.same(msgs, [], `${c.name}: no answer`);
      t.equal(after.term, c.state.term, `${c.name}: term unchanged`);
      continue;
    }
    const resp = only(msgs, 'vote_resp');
    t.equal(resp.granted, c.expect.granted, `${c.name}: granted`);
    t.equal(resp.preVote, c.req.preVote, `${c.name}: answers in kind`);
    t.equal(after.term, c.expect.term, `${c.name}: term`);
    t.equal(after.votedFor, c.expect.votedFor, `${c.name}: votedFor`);
    if (c.req.preVote && c.expect.granted)
      t.equal(resp.term, c.req.term, `${c.name}: a granted pre-vote echoes the proposed term`);
  }
});

t.test('an election runs PreVote first, then a real vote, and the winner appends a no-op', async (t) => {
  const n1 = mk('n1', { persisted: persisted(4, [1, 4]) });
  const d = n1.nextDeadline();
  t.ok(
    d >= defaultTimings.electionTimeoutMsMin && d <= defaultTimings.electionTimeoutMsMax,
    'randomized election timeout',
  );
  n1.onTick(d);
  const pre = sent(drain(n1));
  t.equal(pre.length, 2, 'asks both peers');
  t.ok(
    pre.every((m) => m.kind === 'vote_req' && m.preVote && m.term === 5 && m.lastLogIndex === 2 && m.lastLogTerm === 4),
  );
  t.equal(n1.inspect().term, 4, 'PreVote leaves the term alone');
  t.equal(n1.status(d).role, 'candidate');

  n1.onMessage('n2', { kind: 'vote_resp', term: 5, preVote: true, granted: true }, d + 1);
  const real = sent(drain(n1));
  t.ok(
    real.length === 2 && real.every((m) => m.kind === 'vote_req' && !m.preVote && m.term === 5),
    'a pre-vote majority starts the real election',
  );
  t.equal(n1.inspect().term, 5);
  t.equal(n1.inspect().votedFor, 'n1');

  n1.onMessage('n3', { kind: 'vote_resp', term: 5, preVote: false, granted: true }, d + 2);
  const out = drain(n1);
  const s = n1.inspect();
  t.equal(s.role, 'leader');
  t.same(
    s.entries.map((e) => [e.index, e.term, e.type]),
    [
      [1, 1, 'put'],
      [2, 4, 'put'],
      [3, 5, 'noop'],
    ],
    'a no-op of the new term',
  );
  t.same(
    out.events.filter((e) => e.type === 'leader_elected').map((e) => e.data),
    [{ term: 5 }],
  );
  const appends = sent(out).filter((m) => m.kind === 'append');
  t.equal(appends.length, 2, 'announces itself to both followers');
  t.equal(n1.status(d + 2).leader_id, 'n1');
});

t.test('a pre-vote refusal from a newer term makes the pre-candidate follow that term', async (t) => {
  const n1 = mk('n1', { persisted: persisted(2, [1]) });
  n1.onTick(n1.nextDeadline());
  drain(n1);
  n1.onMessage('n2', { kind: 'vote_resp', term: 6, preVote: true, granted: false }, 400);
  const s = n1.inspect();
  t.equal(s.role, 'follower');
  t.equal(s.term, 6);
  t.equal(s.votedFor, null);
});

t.test('a node outside the configuration never campaigns', async (t) => {
  const n4 = mk('n4', { peers: three });
  for (let i = 0; i < 5; i++) n4.onTick(n4.nextDeadline());
  t.same(sent(drain(n4)), [], 'no vote requests');
  t.equal(n4.inspect().term, 0);
});

// ------------------------------------------------------------------ AppendEntries, follower side

t.test('AppendEntries: log matching check, conflict truncation, fast back-off hints', async (t) => {
  interface Case {
    name: string;
    log: number[];
    commit?: number;
    req: { term: number; prev: number; prevTerm: number; entries: number[]; leaderCommit?: number };
    expect: {
      success: boolean;
      matchIndex?: number;
      conflictTerm?: number;
      conflictIndex?: number;
      log: number[];
      commit?: number;
    };
  }
  const cases: Case[] = [
    {
      name: 'entries are appended to an empty log',
      log: [],
      req: { term: 2, prev: 0, prevTerm: 0, entries: [1, 1] },
      expect: { success: true, matchIndex: 2, log: [1, 1] },
    },
    {
      name: 'a prevLogIndex past the end is refused with conflictIndex = last + 1',
      log: [1, 1],
      req: { term: 3, prev: 5, prevTerm: 3, entries: [3] },
      expect: { success: false, conflictTerm: 0, conflictIndex: 3, log: [1, 1] },
    },
    {
      name: 'a term mismatch at prevLogIndex names the conflicting term and its first index',
      log: [1, 2, 2, 2],
      req: { term: 3, prev: 4, prevTerm: 3, entries: [3] },
      expect: { success: false, conflictTerm: 2, conflictIndex: 2, log: [1, 2, 2, 2] },
    },
    {
      name: 'a conflicting suffix is deleted and replaced by the leader entries (§5.3)',
      log: [1, 1, 2, 2],
      req: { term: 3, prev: 2, prevTerm: 1, entries: [3, 3, 3] },
      expect: { success: true, matchIndex: 5, log: [1, 1, 3, 3, 3] },
    },
    {
      name: 'a stale shorter resend does not truncate matching entries past it',
      log: [1, 1, 1, 1],
      req: { term: 2, prev: 1, prevTerm: 1, entries: [1] },
      expect: { success: true, matchIndex: 2, log: [1, 1, 1, 1] },
    },
    {
      name: 'the commit index stops at the last entry the request verified',
      log: [1, 1, 2, 2],
      req: { term: 3, prev: 1, prevTerm: 1, entries: [1], leaderCommit: 9 },
      expect: { success: true, matchIndex: 2, log: [1, 1, 2, 2], commit: 2 },
    },
    {
      name: 'a request from an older term is refused without touching the log',
      log: [1, 2],
      req: { term: 1, prev: 1, prevTerm: 1, entries: [1] },
      expect: { success: false, log: [1, 2] },
    },
  ];
  for (const c of cases) {
    const node = mk('n2', { persisted: persisted(2, c.log) });
    const ents = entries(c.req.entries, c.req.prev + 1);
    node.onMessage('n1', appendReq(c.req.term, c.req.prev, c.req.prevTerm, ents, c.req.leaderCommit ?? 0), 10);
    const resp = only(sent(drain(node), 'n1'), 'append_resp');
    const s = node.inspect();
    t.equal(resp.success, c.expect.success, `${c.name}: success`);
    if (c.expect.matchIndex !== undefined) t.equal(resp.matchIndex, c.expect.matchIndex, `${c.name}: matchIndex`);
    if (c.expect.conflictTerm !== undefined)
      t.equal(resp.conflictTerm, c.expect.conflictTerm, `${c.name}: conflictTerm`);
    if (c.expect.conflictIndex !== undefined)
      t.equal(resp.conflictIndex, c.expect.conflictIndex, `${c.name}: conflictIndex`);
    t.same(
      s.entries.map((e) => e.term),
      c.expect.log,
      `${c.name}: resulting log`,
    );
    if (c.expect.commit !== undefined) t.equal(s.commitIndex, c.expect.commit, `${c.name}: commit`);
    if (!c.expect.success && c.req.term < 2) t.equal(resp.term, 2, `${c.name}: answers with the newer term`);
  }
});

t.test('the leader backs off nextIndex with the conflict hints and ignores stale rejections', async (t) => {
  interface Case {
    name: string;
    leaderLog: number[];
    reject: { rejectIndex: number; conflictTerm: number; conflictIndex: number };
    /** match already known for n2 before the rejection */
    match?: number;
    expectPrev: number | 'none';
  }
  const cases: Case[] = [
    {
      name: 'a conflict term the leader also holds resumes after its last entry of that term',
      leaderLog: [1, 1, 2, 2, 4, 4],
      reject: { rejectIndex: 6, conflictTerm: 2, conflictIndex: 3 },
      expectPrev: 4,
    },
    {
      name: 'a conflict term the leader lacks resumes at the follower first index of it',
      leaderLog: [1, 1, 4, 4, 4],
      reject: { rejectIndex: 5, conflictTerm: 3, conflictIndex: 3 },
      expectPrev: 2,
    },
    {
      name: 'a follower whose log is too short resumes at its end',
      leaderLog: [1, 1, 1, 4],
      reject: { rejectIndex: 4, conflictTerm: 0, conflictIndex: 2 },
      expectPrev: 1,
    },
    {
      name: 'a rejection at or below the known match index is stale and ignored',
      leaderLog: [1, 1, 1, 4],
      match: 4,
      reject: { rejectIndex: 3, conflictTerm: 0, conflictIndex: 1 },
      expectPrev: 'none',
    },
  ];
  for (const c of cases) {
    const leader = mk('n1', { persisted: persisted(4, c.leaderLog) });
    const now = elect(leader, three);
    drain(leader);
    const term = leader.inspect().term;
    if (c.match !== undefined) {
      leader.onMessage(
        'n2',
        {
          kind: 'append_resp',
          term,
          success: true,
          matchIndex: c.match,
          rejectIndex: 0,
          conflictTerm: 0,
          conflictIndex: 0,
          seq: 0,
        },
        now,
      );
      drain(leader);
    }
    leader.onMessage('n2', { kind: 'append_resp', term, success: false, matchIndex: 0, seq: 0, ...c.reject }, now + 1);
    const msgs = sent(drain(leader), 'n2').filter((m) => m.kind === 'append');
    if (c.expectPrev === 'none') {
      t.same(msgs, [], `${c.name}: nothing resent`);
      continue;
    }
    const m = only(msgs, 'append');
    t.equal(m.prevLogIndex, c.expectPrev, `${c.name}: prevLogIndex`);
    t.equal(m.prevLogTerm, c.leaderLog[c.expectPrev - 1] ?? 0, `${c.name}: prevLogTerm`);
    t.equal(m.entries.length, c.leaderLog.length + 1 - c.expectPrev, `${c.name}: resends the rest, no-op included`);
  }
});

// ------------------------------------------------------------------ commit rules

t.test('commit rules: majority of the current term only, never by counting older-term replicas', async (t) => {
  interface Case {
    name: string;
    /** Writes the leader proposes after its no-op (indices 4, 5, ...). */
    proposals: number;
    /** follower -> matchIndex it reports */
    acks: Record<NodeId, number>;
    expectCommit: number;
  }
  // Leader log [term 1, term 2] from earlier terms; elected in term 5, its no-op sits at index 3.
  const cases: Case[] = [
    {
      name: 'an older-term entry on a majority is not committed by counting (§5.4.2, Figure 8)',
      proposals: 0,
      acks: { n2: 2, n3: 2, n4: 2 },
      expectCommit: 0,
    },
    {
      name: 'the current-term no-op on a majority commits it and everything before it',
      proposals: 0,
      acks: { n2: 3, n3: 3 },
      expectCommit: 3,
    },
    {
      name: 'one follower of four is not a majority of five',
      proposals: 0,
      acks: { n2: 3 },
      expectCommit: 0,
    },
    {
      name: 'the commit index is the highest index a majority holds',
      proposals: 2,
      acks: { n2: 5, n3: 4, n4: 3 },
      expectCommit: 4,
    },
  ];
  for (const c of cases) {
    const leader = mk('n1', { peers: five, persisted: persisted(4, [1, 2], null, five) });
    const now = elect(leader, five);
    for (let i = 0; i < c.proposals; i++)
      leader.onClient({ id: i + 1, op: { op: 'write', key: 'k', value: `${i}` } }, now);
    drain(leader);
    const term = leader.inspect().term;
    t.equal(term, 5);
    for (const [peer, matchIndex] of Object.entries(c.acks)) {
      leader.onMessage(
        peer,
        {
          kind: 'append_resp',
          term,
          success: true,
          matchIndex,
          rejectIndex: 0,
          conflictTerm: 0,
          conflictIndex: 0,
          seq: 0,
        },
        now + 1,
      );
    }
    drain(leader);
    t.equal(leader.inspect().commitIndex, c.expectCommit, c.name);
  }

  // Entries of the leader's own term commit by counting: propose twice, ack a majority.
  const leader = mk('n1', { peers: five, persisted: persisted(1, [1], null, five) });
  const now = elect(leader, five);
  leader.onClient({ id: 1, op: { op: 'write', key: 'a', value: '1' } }, now);
  leader.onClient({ id: 2, op: { op: 'write', key: 'b', value: '2' } }, now);
  drain(leader);
  const term = leader.inspect().term;
  t.same(
    leader.inspect().entries.map((e) => e.term),
    [1, term, term, term],
  );
  for (const peer of ['n2', 'n3']) {
    leader.onMessage(
      peer,
      {
        kind: 'append_resp',
        term,
        success: true,
        matchIndex: 3,
        rejectIndex: 0,
        conflictTerm: 0,
        conflictIndex: 0,
        seq: 0,
      },
      now + 5,
    );
  }
  const out = drain(leader);
  t.equal(leader.inspect().commitIndex, 3, 'current-term entries commit on a majority');
  t.same(
    out.replies.map((r) => [r.id, r.ok]),
    [[1, true]],
    'the committed write is answered, the other waits',
  );
  t.same(
    out.events.filter((e) => e.type === 'entry_replicated').map((e) => e.data),
    [{ index: 3 }],
    'one event per applied batch',
  );
});

// ------------------------------------------------------------------ client semantics

t.test(
  'client requests: not_leader naming the leader, no_leader while electing, atomic batches, tombstones',
  async (t) => {
    const c = cluster(three, 11);
    const leader = settle(c);
    const follower = three.find((id) => id !== leader) as NodeId;

    const rows: Array<{
      name: string;
      node: NodeId;
      op: Parameters<DetCluster['client']>[1];
      check: (r: ClientReply | undefined, tt: typeof t) => void;
    }> = [
      {
        name: 'a write aimed at a follower is refused with 409 not_leader naming the leader',
        node: follower,
        op: { op: 'write', key: 'x', value: '1' },
        check: (r, tt) =>
          tt.same(r && !r.ok ? { code: r.code, status: r.status, error: r.error, leader_id: r.leader_id } : r, {
            code: 'not_leader',
            status: 409,
            error: `not leader; leader is ${leader}`,
            leader_id: leader,
          }),
      },
      {
        name: 'a read aimed at a follower is refused with not_leader too',
        node: follower,
        op: { op: 'read', key: 'x' },
        check: (r, tt) => tt.equal(r && !r.ok ? r.code : 'ok', 'not_leader'),
      },
      {
        name: 'a write on the leader answers after commit with a Version stamped by the leader',
        node: leader,
        op: { op: 'write', key: 'x', value: 'hello' },
        check: (r, tt) => {
          tt.ok(r?.ok, 'ok');
          if (r?.ok && r.result.kind === 'entry') {
            tt.equal(r.result.entry.value, 'hello');
            tt.equal(r.result.entry.node_id, leader);
            tt.ok(r.result.entry.version > 1, 'version is the log index');
            tt.ok(r.result.entry.timestamp > 0, 'an HLC timestamp');
          }
        },
      },
      {
        name: 'a read on the leader returns the committed value (ReadIndex)',
        node: leader,
        op: { op: 'read', key: 'x' },
        check: (r, tt) => tt.equal(r?.ok && r.result.kind === 'entry' ? r.result.entry.value : undefined, 'hello'),
      },
      {
        name: 'an atomic batch is one log entry applied all-or-nothing',
        node: leader,
        op: {
          op: 'batch',
          entries: [
            { key: 'b1', value: '1' },
            { key: 'b2', value: '2' },
          ],
        },
        check: (r, tt) => {
          tt.ok(r?.ok && r.result.kind === 'batch' && r.result.entries.length === 2, 'two versions');
          if (r?.ok && r.result.kind === 'batch') {
            const [a, b] = r.result.entries;
            tt.equal(a?.version, b?.version, 'one index for the whole batch');
            tt.equal(
              raft(c, leader)
                .inspect()
                .entries.filter((e) => e.type === 'batch').length,
              1,
            );
          }
        },
      },
      {
        name: 'a delete goes through the log and leaves a tombstone',
        node: leader,
        op: { op: 'delete', key: 'x' },
        check: (r, tt) => tt.ok(r?.ok && r.result.kind === 'entry' && r.result.entry.tombstone, 'tombstone version'),
      },
      {
        name: 'a read of a deleted key answers not_found',
        node: leader,
        op: { op: 'read', key: 'x' },
        check: (r, tt) => tt.same(r && !r.ok ? [r.code, r.status] : r, ['not_found', 404]),
      },
      {
        name: 'an empty batch is a bad request',
        node: leader,
        op: { op: 'batch', entries: [] },
        check: (r, tt) => tt.same(r && !r.ok ? [r.code, r.status] : r, ['bad_request', 400]),
      },
    ];
    for (const row of rows) {
      const r = withStatus(c.runUntilReply(c.client(row.node, row.op), 2000), row.op.op);
      await t.test(row.name, async (tt) => row.check(r, tt));
    }
    c.runFor(200);
    for (const id of three) {
      t.equal(raft(c, id).storeView().x?.tombstone, true, `${id} holds the tombstone`);
      t.equal(raft(c, id).storeView().b2?.value, '2', `${id} holds the batch`);
    }

    const fresh = mk('n1');
    fresh.onClient({ id: 9, op: { op: 'write', key: 'k', value: 'v' } }, 1);
    t.same(
      drain(fresh).replies.map((r) => withStatus(r, 'write')),
      [{ id: 9, ok: false, code: 'no_leader', status: 409, error: 'no leader elected yet' }],
      'no_leader before any election',
    );
  },
);

t.test('an isolated leader answers writes with an indeterminate timeout and never serves a read', async (t) => {
  const c = cluster(three, 5);
  const leader = settle(c);
  const others = three.filter((id) => id !== leader);
  c.fabric.partition([leader], others);
  const w = c.client(leader, { op: 'write', key: 'k', value: 'lost?' });
  const r = c.client(leader, { op: 'read', key: 'k' });
  c.runFor(1500);
  const wr = withStatus(c.reply(w), 'write');
  t.same(
    wr && !wr.ok ? [wr.code, wr.status, wr.indeterminate] : wr,
    ['timeout', 409, true],
    'write: 409 timeout, indeterminate',
  );
  const rr = c.reply(r);
  t.ok(rr && !rr.ok, 'the read is refused, not answered from a stale leader');
  t.not(raft(c, leader).inspect().role, 'leader', 'CheckQuorum made the isolated leader step down');
  const newLeader = leaderOf(c);
  t.ok(newLeader && newLeader !== leader, 'the majority elected another leader');
  c.fabric.clearFaults();
  c.runFor(1000);
  t.equal(leaderOf(c), newLeader, 'the old leader rejoins as a follower');
  t.notOk(raft(c, newLeader as NodeId).storeView().k, 'the uncommitted write was discarded');
  t.equal(raft(c, leader).inspect().lastIndex, raft(c, newLeader as NodeId).inspect().lastIndex, 'logs converge');
});

// ------------------------------------------------------------------ CheckQuorum and PreVote in a cluster

t.test(
  'CheckQuorum and PreVote: paused or partitioned leaders step down; rejoining nodes do not disrupt',
  async (t) => {
    await t.test('a paused leader steps down when resumed, a new leader having taken over', async (t) => {
      const c = cluster(five, 21);
      const leader = settle(c);
      const term = raft(c, leader).inspect().term;
      c.pause(leader);
      c.runFor(1000);
      const next = leaderOf(c);
      t.ok(next && next !== leader, 'a new leader while the old one is paused');
      c.resume(leader);
      c.runFor(500);
      t.equal(raft(c, leader).inspect().role, 'follower');
      t.ok(raft(c, leader).inspect().term > term, 'it learned the newer term');
      t.equal(leaderOf(c), next);
    });
    await t.test('a follower partitioned away rejoins without raising the term or changing the leader', async (t) => {
      const c = cluster(five, 22);
      const leader = settle(c);
      const term = raft(c, leader).inspect().term;
      const lonely = five.find((id) => id !== leader) as NodeId;
      c.fabric.partition(
        [lonely],
        five.filter((id) => id !== lonely),
      );
      c.runFor(3000);
      t.equal(raft(c, lonely).inspect().term, term, 'PreVote kept the isolated node from raising its term');
      t.equal(raft(c, lonely).status(c.now).role, 'candidate', 'it keeps trying');
      c.fabric.clearFaults();
      c.runFor(1000);
      t.equal(leaderOf(c), leader, 'the same leader');
      t.equal(raft(c, leader).inspect().term, term, 'the same term');
      t.equal(raft(c, lonely).status(c.now).leader_id, leader);
    });
    await t.test('a leader cut off from the majority steps down within an election timeout', async (t) => {
      const c = cluster(five, 23);
      const leader = settle(c);
      c.fabric.partition(
        [leader, five.find((id) => id !== leader) as NodeId],
        five.filter((id) => id !== leader).slice(1),
      );
      c.runFor(defaultTimings.electionTimeoutMsMax + 2 * defaultTimings.heartbeatMs);
      t.equal(raft(c, leader).inspect().role, 'follower');
    });
  },
);

// ------------------------------------------------------------------ log compaction and InstallSnapshot

t.test('InstallSnapshot receiver: replaces, keeps or ignores according to §7', async (t) => {
  const snapStore = {
    a: { key: 'a', value: '1', tombstone: false, timestamp: 5, node_id: 'n1', version: 3, vclock: {} },
  };
  interface Case {
    name: string;
    log: number[];
    commit: number;
    snap: { index: number; term: number };
    expect: { log: number[]; commit: number; snapIndex: number; storeA: string | undefined };
  }
  const cases: Case[] = [
    {
      name: 'an empty follower takes the raftSnapshot whole',
      log: [],
      commit: 0,
      snap: { index: 3, term: 2 },
      expect: { log: [], commit: 3, snapIndex: 3, storeA: '1' },
    },
    {
      name: 'a log holding the snapshot last entry keeps what follows it',
      log: [1, 2, 2, 2, 2],
      commit: 0,
      snap: { index: 3, term: 2 },
      expect: { log: [2, 2], commit: 3, snapIndex: 3, storeA: '1' },
    },
    {
      name: 'a conflicting log is discarded entirely',
      log: [1, 1, 1, 1],
      commit: 0,
      snap: { index: 3, term: 2 },
      expect: { log: [], commit: 3, snapIndex: 3, storeA: '1' },
    },
    {
      name: 'a raftSnapshot behind the commit index is acknowledged and ignored',
      log: [1, 2, 2, 2],
      commit: 4,
      snap: { index: 3, term: 2 },
      expect: { log: [1, 2, 2, 2], commit: 4, snapIndex: 0, storeA: undefined },
    },
  ];
  for (const c of cases) {
    const node = mk('n2', { persisted: persisted(2, c.log) });
    if (c.commit > 0) {
      node.onMessage('n1', appendReq(2, c.log.length, c.log[c.log.length - 1] ?? 0, [], c.commit), 5);
      drain(node);
    }
    node.onMessage(
      'n1',
      {
        kind: 'snapshot',
        term: 2,
        raftSnapshot: {
          lastIncludedIndex: c.snap.index,
          lastIncludedTerm: c.snap.term,
          voters: three,
          store: snapStore,
        },
        leaderLastIndex: 9,
        seq: 4,
      },
      10,
    );
    const resp = only(sent(drain(node), 'n1'), 'snapshot_resp');
    const s = node.inspect();
    t.equal(resp.matchIndex, c.snap.index, `${c.name}: acknowledges the snapshot index`);
    t.equal(resp.seq, 4, `${c.name}: echoes the ReadIndex round`);
    t.same(
      s.entries.map((e) => e.term),
      c.expect.log,
      `${c.name}: log`,
    );
    t.equal(s.commitIndex, c.expect.commit, `${c.name}: commit`);
    t.equal(s.raftSnapshot.lastIncludedIndex, c.expect.snapIndex, `${c.name}: snapshot boundary`);
    if (c.expect.snapIndex > 0) t.equal(s.lastApplied, c.expect.commit, `${c.name}: applied up to the snapshot`);
    t.equal(node.storeView().a?.value, c.expect.storeA, `${c.name}: store`);
    if (c.expect.snapIndex > 0) {
      t.same(
        node.logView()[0],
        { type: 'raft_snapshot', last_included_index: c.snap.index, last_included_term: c.snap.term, voters: three },
        `${c.name}: logView boundary`,
      );
    }
  }
});

t.test('a lagging follower is brought up to date with InstallSnapshot after compaction', async (t) => {
  const c = cluster(three, 31, { snapshotEveryEntries: 5 });
  const leader = settle(c);
  const lagger = three.find((id) => id !== leader) as NodeId;
  c.crash(lagger);
  for (let i = 0; i < 23; i++) t.ok(write(c, leader, `k${i % 4}`, `v${i}`)?.ok, `write ${i}`);
  const ls = raft(c, leader).inspect();
  t.ok(ls.raftSnapshot.lastIncludedIndex >= 20, 'the leader compacted its log');
  t.ok(ls.entries.length < 6, 'and keeps only the tail');
  const snapsBefore = c.trace.filter((l) => l.includes(`->${lagger} kind=snapshot`)).length;
  c.restart(lagger);
  c.runFor(1000);
  const fs = raft(c, lagger).inspect();
  t.ok(
    c.trace.filter((l) => l.includes(`->${lagger} kind=snapshot`)).length > snapsBefore,
    'an InstallSnapshot was sent',
  );
  t.equal(fs.lastApplied, raft(c, leader).inspect().lastApplied, 'caught up');
  t.same(raft(c, lagger).storeView(), raft(c, leader).storeView(), 'same store');
  t.equal(raft(c, lagger).status(c.now).lag, 0);
});

// ------------------------------------------------------------------ membership

t.test('membership: one change at a time, effective when appended, answered after commit', async (t) => {
  const c = cluster(three, 41);
  const leader = settle(c);
  const follower = three.find((id) => id !== leader) as NodeId;
  t.ok(write(c, leader, 'a', '1')?.ok);

  const refused = withStatus(
    c.control(follower, { kind: 'add_server', node_id: 'n4', reqId: c.nextRequestId() }),
    'control',
  );
  t.same(
    [refused.ok, refused.status, refused.error],
    [false, 409, `not leader; leader is ${leader}`],
    'not leader: 409 naming the leader',
  );

  c.addNode('n4', { notifyPeers: false });
  t.equal(raft(c, 'n4').inspect().voters.includes('n4'), true, 'the new node starts from the cluster node list');
  const reqId = c.nextRequestId();
  const accepted = c.control(leader, { kind: 'add_server', node_id: 'n4', reqId });
  t.equal(accepted.ok, true);
  t.same(raft(c, leader).inspect().voters, [...three, 'n4'], 'in effect on the leader as soon as appended');
  const second = withStatus(
    c.control(leader, { kind: 'add_server', node_id: 'n5', reqId: c.nextRequestId() }),
    'control',
  );
  t.same([second.ok, second.status], [false, 409], 'a second change waits for the first');
  const dup = c.control(leader, { kind: 'remove_server', node_id: 'n9', reqId: c.nextRequestId() });
  t.equal(dup.ok, false);

  const done = c.runUntilReply(reqId, 2000);
  t.ok(
    done?.ok && done.result.kind === 'entry' && done.result.entry.key === '__config__',
    'answered with a __config__ Version',
  );
  if (done?.ok && done.result.kind === 'entry') t.equal(done.result.entry.value, [...three, 'n4'].join(','));
  c.runFor(500);
  t.same(raft(c, 'n4').storeView(), raft(c, leader).storeView(), 'the new node caught up');
  t.same(raft(c, 'n4').inspect().voters, [...three, 'n4']);

  // Remove the leader itself: it steps down after committing its removal.
  const rm = c.nextRequestId();
  t.equal(c.control(leader, { kind: 'remove_server', node_id: leader, reqId: rm }).ok, true);
  t.ok(c.runUntilReply(rm, 2000)?.ok, 'removal committed');
  t.equal(raft(c, leader).inspect().role, 'follower', 'the removed leader stepped down');
  c.runFor(1500);
  const next = leaderOf(c);
  t.ok(next && next !== leader, 'the remaining members elected a leader');
  t.notOk(
    raft(c, next as NodeId)
      .inspect()
      .voters.includes(leader),
  );
  t.ok(write(c, next as NodeId, 'b', '2')?.ok, 'the new configuration accepts writes');
  t.equal(raft(c, leader).inspect().role, 'follower', 'the removed node stays quiet');
});

t.test('a leader that has not committed in its term refuses membership changes', async (t) => {
  const leader = mk('n1', { persisted: persisted(1, [1]) });
  elect(leader, three);
  const r = withStatus(leader.control({ kind: 'add_server', node_id: 'n4', reqId: 1 }, 500), 'control');
  t.same([r.ok, r.status], [false, 409]);
  t.match(r.error, /not committed an entry of its term/);
});

// ------------------------------------------------------------------ persistence, status

t.test('persistentState survives a restart: term, vote, log and raftSnapshot', async (t) => {
  const c = cluster(three, 51, { snapshotEveryEntries: 4 });
  const leader = settle(c);
  for (let i = 0; i < 10; i++) write(c, leader, `k${i}`, `v${i}`);
  const victim = three.find((id) => id !== leader) as NodeId;
  const before = raft(c, victim).persistentState();
  t.ok(before.raftSnapshot.lastIncludedIndex > 0 && before.term > 0 && before.log.length > 0);
  c.crash(victim);
  c.restart(victim);
  const after = raft(c, victim).inspect();
  t.equal(after.term, before.term);
  t.equal(after.votedFor, before.votedFor);
  t.same(after.entries, before.log);
  t.equal(after.raftSnapshot.lastIncludedIndex, before.raftSnapshot.lastIncludedIndex);
  t.equal(after.lastApplied, before.raftSnapshot.lastIncludedIndex, 'applied up to the raftSnapshot at once');
  c.runFor(500);
  t.same(raft(c, victim).storeView(), raft(c, leader).storeView(), 'and the rest after hearing the commit index');
});

t.test('a proposal whose entry was truncated waits for the entry applied at its index', async (t) => {
  const cases: Array<{ name: string; laterLeaderHasIt: boolean; expect: { ok: boolean; code?: string } }> = [
    {
      name: 'another node kept the entry and a later leader commits it: ok after all',
      laterLeaderHasIt: true,
      expect: { ok: true },
    },
    {
      name: 'another entry is committed at that index: a definite not_leader',
      laterLeaderHasIt: false,
      expect: { ok: false, code: 'not_leader' },
    },
  ];
  for (const c of cases) {
    const n1 = mk('n1', { persisted: persisted(1, [1]) });
    const now = elect(n1, three); // term 2, no-op at index 2
    n1.onClient({ id: 7, op: { op: 'write', key: 'x', value: 'mine' } }, now);
    drain(n1);
    const mine = n1.inspect().entries.find((e) => e.type === 'put' && e.key === 'x') as LogEntry;
    t.equal(mine.index, 3);
    // n2 leads term 3 with a different entry at index 2: n1's no-op and write are truncated.
    const other = { ...entries([3], 2)[0], node_id: 'n2' } as LogEntry;
    n1.onMessage('n2', appendReq(3, 1, 1, [other]), now + 10);
    const out1 = drain(n1);
    t.same(out1.replies, [], `${c.name}: no answer on truncation`);
    t.same(
      n1.inspect().entries.map((e) => e.term),
      [1, 3],
    );
    // n3 leads term 4 and commits index 3 with its own log.
    const noop2 = { index: 2, term: 2, node_id: 'n1', timestamp: 1, type: 'noop' as const };
    const log4: LogEntry[] = c.laterLeaderHasIt
      ? [noop2, mine]
      : [noop2, { ...mine, term: 4, value: 'theirs', node_id: 'n3' } as LogEntry];
    n1.onMessage('n3', appendReq(4, 1, 1, log4, 3), now + 20);
    const replies = drain(n1).replies;
    t.equal(replies.length, 1, `${c.name}: answered once applied`);
    const r = replies[0];
    t.equal(r?.ok, c.expect.ok, `${c.name}: outcome`);
    if (r && !r.ok) t.same([r.code, r.indeterminate], [c.expect.code, undefined], `${c.name}: definite`);
  }
});

t.test('a restarted node keeps its term and vote, so it cannot vote twice in one term', async (t) => {
  const n1 = mk('n1', { persisted: persisted(4, [1]) });
  n1.onMessage('n2', { kind: 'vote_req', term: 5, preVote: false, lastLogIndex: 1, lastLogTerm: 1 }, 400);
  t.ok(only(sent(drain(n1), 'n2'), 'vote_resp').granted, 'votes for n2 in term 5');
  const state = n1.persistentState();
  t.same([state.term, state.votedFor], [5, 'n2'], 'both are in the persistent state');
  const again = mk('n1', { persisted: state, now: 500 });
  again.onMessage('n3', { kind: 'vote_req', term: 5, preVote: false, lastLogIndex: 1, lastLogTerm: 1 }, 900);
  const resp = only(sent(drain(again), 'n3'), 'vote_resp');
  t.equal(resp.granted, false, 'refuses n3 in the same term after the restart');
  t.equal(resp.term, 5);
});

t.test('status reports role, term, commit, lag and the leader followers map', async (t) => {
  const c = cluster(three, 61);
  const leader = settle(c);
  const lagger = three.find((id) => id !== leader) as NodeId;
  c.fabric.setLatency(leader, lagger, 400);
  const id = c.client(leader, { op: 'write', key: 'k', value: 'v' });
  t.ok(c.runUntilReply(id, 1000)?.ok);
  const s = raft(c, leader).status(c.now + 100);
  t.equal(s.role, 'leader');
  t.equal(s.leader_id, leader);
  t.ok((s.term ?? 0) >= 1);
  const f = s.followers?.[lagger];
  t.ok(f && f.lag_entries >= 1 && f.lag_ms >= 100, `lagging follower shows lag (${JSON.stringify(f)})`);
  c.runFor(1000);
  const s2 = raft(c, leader).status(c.now);
  t.same(s2.followers?.[lagger], { match_index: s2.commit_index, lag_entries: 0, lag_ms: 0 }, 'caught up');
  const fs = raft(c, lagger).status(c.now);
  t.same([fs.role, fs.leader_id, fs.lag, fs.commit_index], ['follower', leader, 0, s2.commit_index]);
  t.ok(raft(c, leader).nextDeadline() <= c.now + defaultTimings.heartbeatMs, 'the next deadline is the heartbeat');
});

// ------------------------------------------------------------------ durable hand-off (core.ts DurableFold)

t.test('the durable fold rebuilds the persistent state record by record', async (t) => {
  const snap0 = { lastIncludedIndex: 0, lastIncludedTerm: 0, voters: three, store: {} };
  const log = entries([1, 1, 2, 2]);
  const start: RaftDurableRecord = {
    kind: 'checkpoint',
    state: { term: 1, votedFor: null, log: [], raftSnapshot: snap0 },
  };
  const cases: Array<{
    name: string;
    records: RaftDurableRecord[];
    expect: Partial<RaftPersistentState> & { logIndexes?: number[] };
  }> = [
    { name: 'a checkpoint is the whole state', records: [start], expect: { term: 1, votedFor: null, logIndexes: [] } },
    {
      name: 'a hard record sets term and vote',
      records: [start, { kind: 'hard', term: 3, votedFor: 'n2' }],
      expect: { term: 3, votedFor: 'n2' },
    },
    {
      name: 'appends extend the log',
      records: [start, { kind: 'append', entries: log.slice(0, 2) }, { kind: 'append', entries: log.slice(2) }],
      expect: { logIndexes: [1, 2, 3, 4] },
    },
    {
      name: 'a truncation drops the conflicting suffix (§5.3)',
      records: [start, { kind: 'append', entries: log }, { kind: 'truncate', fromIndex: 3 }],
      expect: { logIndexes: [1, 2] },
    },
    {
      name: 'a compaction moves the prefix into the raftSnapshot, applied with the state machine (§7)',
      records: [
        start,
        { kind: 'append', entries: log },
        { kind: 'compact', lastIncludedIndex: 3, lastIncludedTerm: 2 },
      ],
      expect: { logIndexes: [4] },
    },
  ];
  for (const c of cases) {
    let state: unknown;
    for (const r of c.records) state = raftDurableFold.fold(state, r);
    const s = state as RaftPersistentState;
    if (c.expect.term !== undefined) t.equal(s.term, c.expect.term, `${c.name}: term`);
    if (c.expect.votedFor !== undefined) t.equal(s.votedFor, c.expect.votedFor, `${c.name}: vote`);
    if (c.expect.logIndexes)
      t.same(
        s.log.map((e) => e.index),
        c.expect.logIndexes,
        `${c.name}: log`,
      );
  }
  let s: unknown;
  for (const r of cases[4]?.records ?? []) s = raftDurableFold.fold(s, r);
  const compacted = (s as RaftPersistentState).raftSnapshot;
  t.same(
    [compacted.lastIncludedIndex, compacted.lastIncludedTerm, Object.keys(compacted.store).sort()],
    [3, 2, ['k1', 'k2', 'k3']],
    'the compacted raftSnapshot holds what the first three entries wrote',
  );
  t.equal(compacted.store['k3']?.version, 3, 'versions are the entries’ indexes, as the core applies them');
  t.ok(raftDurableFold.isCheckpoint(start), 'a checkpoint says so');
  t.notOk(raftDurableFold.isCheckpoint({ kind: 'hard', term: 1, votedFor: null }), 'a hard record is not one');
  t.throws(
    () => raftDurableFold.fold(undefined, { kind: 'hard', term: 1, votedFor: null }),
    'a fold starts with a checkpoint',
  );
});

/**
 * Under both compaction policies. The old one ('interval', snapshotCatchUpEntries 0: the policy this
 * test was written under) also sends the restarted nodes InstallSnapshots, whose checkpoints it
 * counts; under 'acked' they are caught up by AppendEntries, so only the fold is compared.
 */
const faultyRunFolds = (catchUp: number) => async (t: Test) => {
  const kinds = new Map<string, number>();
  const counting = {
    fold: (state: unknown, r: unknown): unknown => {
      const kind = (r as RaftDurableRecord).kind;
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      return raftDurableFold.fold(state, r);
    },
    isCheckpoint: raftDurableFold.isCheckpoint,
  };
  const c = new DetCluster({
    factory: createRaftCore,
    nodeIds: three,
    config,
    seed: 91,
    startTimeMs: 0,
    timings: { snapshotEveryEntries: 3, snapshotCatchUpEntries: catchUp },
    durableFold: counting,
    encode: true,
  });
  for (const a of three) for (const b of three) if (a !== b) c.fabric.setLatency(a, b, 5);
  const rng = new SeededRng(5);
  let mismatches = 0;
  let checks = 0;
  const checkAll = (): void => {
    for (const id of three) {
      if (c.state(id) === 'offline') continue;
      checks++;
      if (!isDeepStrictEqual(c.durableState(id), raft(c, id).persistentState())) mismatches++;
    }
  };
  c.runFor(1000);
  for (let i = 0; i < 400; i++) {
    const leader = leaderOf(c) ?? three[rng.int(3)];
    c.client(leader as NodeId, { op: i % 7 === 0 ? 'delete' : 'write', key: `k${rng.int(5)}`, value: `v${i}` });
    if (i % 50 === 10)
      c.fabric.partition(
        [leader as NodeId],
        three.filter((x) => x !== leader),
      );
    if (i % 50 === 12) c.client(leader as NodeId, { op: 'write', key: 'orphan', value: `o${i}` });
    if (i % 50 === 30) for (const p of c.fabric.partitions().keys()) c.fabric.heal(p);
    if (i % 60 === 45) c.crash(three[rng.int(3)] as NodeId);
    if (i % 60 === 55) for (const id of three) c.restart(id);
    const until = c.now + 10;
    while (c.nextEventAt() <= until) {
      c.step();
      checkAll();
    }
  }
  for (const id of three) c.restart(id);
  c.runFor(1000);
  checkAll();
  t.equal(mismatches, 0, `the fold matched persistentState() at ${checks} checks`);
  for (const kind of ['checkpoint', 'hard', 'append', 'truncate', 'compact'])
    t.ok((kinds.get(kind) ?? 0) > 0, `${kind} records were folded (${kinds.get(kind) ?? 0})`);
  if (catchUp === 0) {
    t.ok(
      (kinds.get('checkpoint') ?? 0) > three.length,
      'compactions and installs checkpoint now and then, beyond the first records',
    );
  }
};
t.test('after every step of a faulty run, each node’s durable fold equals persistentState()', faultyRunFolds(0));
t.test(
  'the same under the acked compaction policy (snapshotCatchUpEntries default)',
  faultyRunFolds(snapshotCatchUpEntriesDefault),
);

t.test('a node restarted from its durable fold keeps term, vote and log, then catches up', async (t) => {
  const c = new DetCluster({
    factory: createRaftCore,
    nodeIds: three,
    config,
    seed: 93,
    startTimeMs: 0,
    timings: { snapshotEveryEntries: 4 },
    durableFold: raftDurableFold,
  });
  for (const a of three) for (const b of three) if (a !== b) c.fabric.setLatency(a, b, 5);
  const leader = settle(c);
  for (let i = 0; i < 10; i++) t.ok(write(c, leader, `k${i}`, `v${i}`)?.ok);
  const victim = three.find((id) => id !== leader) as NodeId;
  const before = raft(c, victim).inspect();
  c.crash(victim);
  for (let i = 10; i < 20; i++) t.ok(write(c, leader, `k${i}`, `v${i}`)?.ok, 'the majority keeps serving');
  c.restart(victim);
  const after = raft(c, victim).inspect();
  t.same([after.term, after.votedFor], [before.term, before.votedFor], 'term and vote survive');
  t.same(after.entries, before.entries, 'the retained log survives');
  t.same(after.raftSnapshot, before.raftSnapshot, 'and the raftSnapshot');
  c.runFor(1000);
  t.same(raft(c, victim).storeView(), raft(c, leader).storeView(), 'caught up after the restart');
});

t.test('a DetCluster with a durable fold refuses a crash whose fold misses a record', async (t) => {
  const forgetful = {
    fold: (state: unknown, r: unknown): unknown =>
      (r as RaftDurableRecord).kind === 'hard' ? state : raftDurableFold.fold(state, r),
    isCheckpoint: raftDurableFold.isCheckpoint,
  };
  const c = new DetCluster({
    factory: createRaftCore,
    nodeIds: three,
    config,
    seed: 95,
    startTimeMs: 0,
    durableFold: forgetful,
  });
  c.runFor(1500);
  t.throws(
    () => c.crash('n1'),
    /fold of its durable records differs/,
    'the lost term/vote record is caught at the crash',
  );
});

// ------------------------------------------------------------------ membership: repeated and committed changes

t.test('membership changes are idempotent and observable', async (t) => {
  const c = cluster(five, 97);
  const leader = settle(c);
  const victim = five.find((id) => id !== leader) as NodeId;
  const other = five.find((id) => id !== leader && id !== victim) as NodeId;
  // Two of the new configuration's four voters paused: the removal cannot commit yet.
  const paused = five.filter((id) => id !== leader && id !== victim).slice(0, 2);
  for (const p of paused) c.pause(p);
  const first = c.nextRequestId();
  t.equal(
    c.control(leader, { kind: 'remove_server', node_id: victim, reqId: first }).ok,
    true,
    'the removal is appended',
  );
  c.runFor(100);
  t.equal(c.reply(first), undefined, 'and waits: two of the four new voters are paused');
  const again = c.nextRequestId();
  const repeat = c.control(leader, { kind: 'remove_server', node_id: victim, reqId: again });
  t.same(
    [repeat.ok, (repeat.data as { pending?: boolean }).pending],
    [true, true],
    'a repeated removal waits on the pending entry',
  );
  const another = withStatus(
    c.control(leader, { kind: 'remove_server', node_id: other, reqId: c.nextRequestId() }),
    'control',
  );
  t.same([another.ok, another.status], [false, 409], 'a different change is refused while one is pending');
  t.match(another.error, /another membership change is in progress/);
  const eventsBefore = c.events.length;
  for (const p of paused) c.resume(p);
  const done = c.runUntilReply(again, 2000);
  t.ok(done?.ok, 'the repeated removal is answered when the entry commits');
  t.ok(c.reply(first)?.ok, 'and so is the first');
  const changed = c.events.slice(eventsBefore).filter((e) => e.type === 'membership_changed');
  t.ok(changed.length >= 1, 'the committing leader reports membership_changed');
  t.same(
    changed[0]?.data?.['voters'],
    five.filter((id) => id !== victim),
    'with the committed voters',
  );
  t.equal(changed[0]?.node_id, leader);
  // The committed configuration lacks the victim: removing it again is answered at once, ok.
  const third = c.nextRequestId();
  const r3 = c.control(leader, { kind: 'remove_server', node_id: victim, reqId: third });
  t.same([r3.ok, (r3.data as { already?: boolean }).already], [true, true], 'already removed: ok');
  const reply3 = c.reply(third);
  t.ok(
    reply3?.ok &&
      reply3.result.kind === 'entry' &&
      reply3.result.entry.value === five.filter((id) => id !== victim).join(','),
    'and answered at once with the configuration',
  );
  const status = raft(c, leader).status(c.now).extra ?? {};
  t.same(
    [status['config_committed'], typeof status['config_index']],
    [true, 'number'],
    'status tells whether the configuration is committed',
  );
});

// ------------------------------------------------------------------ the term gate and the invariants

t.test('the term gate: one rule per term relation, whatever the kind (§5.1, §5.2, §4.2.3, §9.6)', async (t) => {
  type Setup = 'follower' | 'leader' | 'preCandidate' | 'candidate';
  interface Case {
    name: string;
    setup: Setup;
    from: NodeId;
    /** The message, given our term after the setup. */
    msg: (term: number) => RaftMessage;
    /** What the sender gets back (kind and term relative to our term before), or null for nothing. */
    answer: { kind: RaftMessage['kind']; termDelta: number } | null;
    after: { role: RaftRole; preCandidate?: boolean; termDelta: number; leaderId?: NodeId | '' };
  }
  const hb = (term: number): RaftMessage => ({ kind: 'heartbeat', term, leaderCommit: 0, leaderLastIndex: 0, seq: 0 });
  const snapshot = (term: number): RaftMessage => ({
    kind: 'snapshot',
    term,
    raftSnapshot: { lastIncludedIndex: 0, lastIncludedTerm: 0, voters: three, store: {} },
    leaderLastIndex: 0,
    seq: 0,
  });
  const appendResp = (term: number): RaftMessage => ({
    kind: 'append_resp',
    term,
    success: true,
    matchIndex: 1,
    rejectIndex: 0,
    conflictTerm: 0,
    conflictIndex: 0,
    seq: 0,
  });
  const cases: Case[] = [
    {
      name: 'a stale append is refused with our term, and its sender is not followed',
      setup: 'follower',
      from: 'n3',
      msg: (term) => appendReq(term - 1, 0, 0, []),
      answer: { kind: 'append_resp', termDelta: 0 },
      after: { role: 'follower', termDelta: 0, leaderId: 'n2' },
    },
    {
      name: 'a stale heartbeat is answered with our term',
      setup: 'follower',
      from: 'n3',
      msg: (term) => hb(term - 1),
      answer: { kind: 'heartbeat_resp', termDelta: 0 },
      after: { role: 'follower', termDelta: 0, leaderId: 'n2' },
    },
    {
      name: 'a stale snapshot is answered with our term and installs nothing',
      setup: 'follower',
      from: 'n3',
      msg: (term) => snapshot(term - 1),
      answer: { kind: 'snapshot_resp', termDelta: 0 },
      after: { role: 'follower', termDelta: 0, leaderId: 'n2' },
    },
    {
      name: 'a stale answer to a leader is ignored',
      setup: 'leader',
      from: 'n2',
      msg: (term) => appendResp(term - 1),
      answer: null,
      after: { role: 'leader', termDelta: 0, leaderId: 'n1' },
    },
    {
      name: 'a stale vote is not counted',
      setup: 'candidate',
      from: 'n3',
      msg: (term) => ({ kind: 'vote_resp', term: term - 1, preVote: false, granted: true }),
      answer: null,
      after: { role: 'candidate', preCandidate: false, termDelta: 0, leaderId: '' },
    },
    {
      name: 'an answer of a newer term makes a leader a follower of nobody yet',
      setup: 'leader',
      from: 'n2',
      msg: (term) => appendResp(term + 2),
      answer: null,
      after: { role: 'follower', termDelta: 2, leaderId: '' },
    },
    {
      name: 'a heartbeat answer of a newer term does too',
      setup: 'leader',
      from: 'n3',
      msg: (term) => ({ kind: 'heartbeat_resp', term: term + 1, seq: 0 }),
      answer: null,
      after: { role: 'follower', termDelta: 1, leaderId: '' },
    },
    {
      name: 'a vote refusal of a newer term ends a candidacy',
      setup: 'candidate',
      from: 'n3',
      msg: (term) => ({ kind: 'vote_resp', term: term + 1, preVote: false, granted: false }),
      answer: null,
      after: { role: 'follower', termDelta: 1, leaderId: '' },
    },
    {
      name: 'a heartbeat of a newer term makes a leader follow its sender',
      setup: 'leader',
      from: 'n3',
      msg: (term) => hb(term + 1),
      answer: { kind: 'heartbeat_resp', termDelta: 1 },
      after: { role: 'follower', termDelta: 1, leaderId: 'n3' },
    },
    {
      name: 'an append of our own term makes a candidate follow its sender (§5.2)',
      setup: 'candidate',
      from: 'n2',
      msg: (term) => appendReq(term, 0, 0, []),
      answer: { kind: 'append_resp', termDelta: 0 },
      after: { role: 'follower', termDelta: 0, leaderId: 'n2' },
    },
    {
      name: 'a leader is in its lease: a vote request of a newer term is ignored (§4.2.3)',
      setup: 'leader',
      from: 'n3',
      msg: (term) => ({ kind: 'vote_req', term: term + 3, preVote: false, lastLogIndex: 99, lastLogTerm: term }),
      answer: null,
      after: { role: 'leader', termDelta: 0, leaderId: 'n1' },
    },
    {
      name: 'a pre-vote grant of an earlier round is not counted',
      setup: 'preCandidate',
      from: 'n2',
      msg: (term) => ({ kind: 'vote_resp', term, preVote: true, granted: true }),
      answer: null,
      after: { role: 'candidate', preCandidate: true, termDelta: 0, leaderId: '' },
    },
    {
      name: 'a pre-vote refusal of a newer term means nothing to a node not in a PreVote round',
      setup: 'follower',
      from: 'n3',
      msg: (term) => ({ kind: 'vote_resp', term: term + 4, preVote: true, granted: false }),
      answer: null,
      after: { role: 'follower', termDelta: 0, leaderId: 'n2' },
    },
    {
      name: 'a granted pre-vote never changes the voter’s term (§9.6)',
      setup: 'preCandidate',
      from: 'n3',
      msg: (term) => ({ kind: 'vote_req', term: term + 1, preVote: true, lastLogIndex: 9, lastLogTerm: term }),
      answer: { kind: 'vote_resp', termDelta: 1 },
      after: { role: 'candidate', preCandidate: true, termDelta: 0, leaderId: '' },
    },
  ];
  for (const c of cases) {
    const node = mk('n1', { persisted: persisted(3, [1, 2, 3]) });
    let now = 10;
    if (c.setup === 'follower') {
      node.onMessage('n2', appendReq(3, 3, 3, []), now);
    } else if (c.setup === 'leader') {
      now = elect(node, three);
    } else {
      now = node.nextDeadline();
      node.onTick(now);
      const grant: RaftMessage = { kind: 'vote_resp', term: 4, preVote: true, granted: true };
      if (c.setup === 'candidate') node.onMessage('n2', grant, now);
    }
    drain(node);
    const before = node.inspect();
    node.onMessage(c.from, c.msg(before.term), now + 1);
    const answers = sent(drain(node), c.from).filter((m) => m.kind !== 'append' && m.kind !== 'vote_req');
    const after = node.inspect();
    t.same(
      answers.map((m) => [m.kind, m.term - before.term]),
      c.answer ? [[c.answer.kind, c.answer.termDelta]] : [],
      `${c.name}: answer`,
    );
    t.equal(after.role, c.after.role, `${c.name}: role`);
    if (c.after.preCandidate !== undefined) {
      t.equal(after.preCandidate, c.after.preCandidate, `${c.name}: pre-candidate`);
    }
    t.equal(after.term - before.term, c.after.termDelta, `${c.name}: term`);
    if (c.after.leaderId !== undefined) t.equal(after.leaderId, c.after.leaderId, `${c.name}: leader`);
  }
});

t.test('the invariants hold from the first step: an entry from beyond the node’s term is refused', async (t) => {
  t.throws(() => mk('n1', { persisted: persisted(1, [1, 2]) }), AssertionFailure, 'term 1 with an entry of term 2');
  t.throws(() => mk('n1', { persisted: persisted(1, [1, 2]) }), /beyond current term/);
  t.doesNotThrow(() => mk('n1', { persisted: persisted(2, [1, 2]) }), 'term 2 with the same log is fine');
  // After a step too: an append of term 2 carrying an entry of term 5 (only a broken leader sends one).
  const follower = mk('n1', { persisted: persisted(2, [1, 2]) });
  t.doesNotThrow(() => follower.onMessage('n2', appendReq(2, 2, 2, entries([2], 3)), 10), 'an entry of its own term');
  t.throws(() => follower.onMessage('n2', appendReq(2, 3, 2, entries([5], 4)), 20), /beyond current term/);
});

/**
 * The raft swarm's trace hashes for seeds 1..20, combined (sha256 of "<seed> <traceHash> <ok>\n"
 * lines), recorded before the term gate and the invariant checks went in (issue 21 item 3), under the
 * old compaction policy (snapshotCatchUpEntries 0): a
 * refactor of the core must not change one message, reply or timer. When behaviour is meant to
 * change (the core, the swarm driver or the fabric), regenerate it with the loop below and say why
 * in the commit.
 */
const swarmTraceSeeds = { first: 1, count: 20 };
const swarmTraceHash = 'edab1da03edee31d507f6315f604559f1f6984ae8e446dd4726274bcb165ed32';

t.test('a refactor keeps every raft swarm trace: the recorded hash for seeds 1..20', async (t) => {
  const h = createHash('sha256');
  for (let s = swarmTraceSeeds.first; s < swarmTraceSeeds.first + swarmTraceSeeds.count; s++) {
    // The compaction policy of the recording ('interval'); the seeds' own draw of it came later.
    const r = runRaftSwarm(s, { snapshotCatchUpEntries: 0 });
    h.update(`${s} ${r.traceHash} ${r.ok}\n`);
  }
  t.equal(h.digest('hex'), swarmTraceHash, 'same seeds, same traces');
});
