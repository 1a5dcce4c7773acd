/**
 * Table-driven tests of raft's leaf modules (cores/raft/*): each is pure or owns its data, so each
 * is tested on its own here, apart from the core that uses it (raft-core.test.ts).
 */
import t from 'tap';
import type { NodeId } from '../../src/replication/core.js';
import { DurableJournal, type RaftDurableRecord } from '../../src/replication/cores/raft/durable.js';
import { raftCheckpointEntriesMin as checkpointEntriesMin } from '../../src/replication/limits.js';
import { planMembershipChange, type MembershipView } from '../../src/replication/cores/raft/membership.js';
import {
  AppendTimes,
  backedOffNext,
  lowestMatch,
  newProgress,
  type Progress,
} from '../../src/replication/cores/raft/progress.js';
import { isMajority, majorityValue, quorumSize } from '../../src/replication/cores/raft/quorum.js';
import { ReadIndexQueue } from '../../src/replication/cores/raft/read-index.js';
import {
  indeterminateReply,
  notLeaderCode,
  notLeaderError,
  notLeaderReply,
  replacedReply,
} from '../../src/replication/cores/raft/replies.js';
import { applyToStore, votersAfter } from '../../src/replication/cores/raft/state-machine.js';
import type { LogEntry } from '../../src/replication/cores/raft/types.js';
import { RaftLog } from '../../src/replication/cores/raft/log.js';
import { inspectView, logView, statusView, type RaftViewState } from '../../src/replication/cores/raft/views.js';
import { withStatus } from '../helpers/status.js';

const put = (index: number, key: string, value: string, term = 1): LogEntry => ({
  index,
  term,
  node_id: 'n1',
  timestamp: index,
  type: 'put',
  key,
  value,
});

t.test('quorum: majorities of voter lists', async (t) => {
  const cases: Array<{
    name: string;
    voters: NodeId[];
    values: Record<NodeId, number>;
    size: number;
    majority: number;
  }> = [
    { name: 'one voter is its own majority', voters: ['a'], values: { a: 7 }, size: 1, majority: 7 },
    {
      name: 'three voters: the second highest value',
      voters: ['a', 'b', 'c'],
      values: { a: 9, b: 4, c: 6 },
      size: 2,
      majority: 6,
    },
    {
      name: 'four voters need three',
      voters: ['a', 'b', 'c', 'd'],
      values: { a: 9, b: 4, c: 6, d: 1 },
      size: 3,
      majority: 4,
    },
    {
      name: 'five voters need three',
      voters: ['a', 'b', 'c', 'd', 'e'],
      values: { a: 5, b: 5, c: 2, d: 1, e: 9 },
      size: 3,
      majority: 5,
    },
    { name: 'no voters: nothing is reached', voters: [], values: {}, size: 1, majority: 0 },
  ];
  for (const c of cases) {
    t.equal(quorumSize(c.voters.length), c.size, `${c.name}: size`);
    t.equal(
      majorityValue(c.voters, (v) => c.values[v] ?? 0),
      c.majority,
      `${c.name}: majority value`,
    );
  }
  t.ok(
    isMajority(['a', 'b', 'c'], (v) => v !== 'c'),
    'two of three is a majority',
  );
  t.notOk(
    isMajority(['a', 'b', 'c', 'd'], (v) => v === 'a' || v === 'b'),
    'two of four is not',
  );
});

t.test('progress: a new follower, fast back-off and append times', async (t) => {
  t.same(newProgress(10, 5), {
    next: 11,
    match: 0,
    lastAckAt: 5,
    ackedSeq: 0,
    snapshotSentAt: -Infinity,
    unanswered: 0,
    backedOffAt: -Infinity,
    backedOffTo: 0,
    backedOffLast: 0,
  });
  const pr: Progress = { ...newProgress(20, 0), match: 3 };
  const cases = [
    {
      name: 'no entry at prevLogIndex: back to the follower’s last index + 1',
      reject: { rejectIndex: 15, conflictTerm: 0, conflictIndex: 9 },
      lastOfTerm: 0,
      want: 9,
    },
    {
      name: 'the leader has the conflicting term: just after its last entry of it',
      reject: { rejectIndex: 15, conflictTerm: 2, conflictIndex: 6 },
      lastOfTerm: 8,
      want: 9,
    },
    {
      name: 'the leader lacks the term: the follower’s first index of it',
      reject: { rejectIndex: 15, conflictTerm: 2, conflictIndex: 6 },
      lastOfTerm: 0,
      want: 6,
    },
    {
      name: 'never below match + 1',
      reject: { rejectIndex: 15, conflictTerm: 0, conflictIndex: 1 },
      lastOfTerm: 0,
      want: 4,
    },
    {
      name: 'never past the rejected index',
      reject: { rejectIndex: 7, conflictTerm: 2, conflictIndex: 6 },
      lastOfTerm: 12,
      want: 7,
    },
  ];
  for (const c of cases)
    t.equal(
      backedOffNext(pr, c.reject, () => c.lastOfTerm),
      c.want,
      c.name,
    );
  const times = new AppendTimes(3);
  for (let i = 1; i <= 4; i++) times.set(i, i * 100);
  t.equal(times.size, 3, 'at most max times are kept');
  t.equal(times.timeOf(1, -1), 200, 'a fallen-off index reads as the oldest kept time');
  t.equal(times.timeOf(3, -1), 300);
  times.pruneUpTo(3);
  t.equal(times.timeOf(4, -1), 400);
  times.clear();
  t.equal(times.timeOf(4, -1), -1, 'empty: the fallback');
  t.equal(
    lowestMatch(
      new Map([
        ['b', { ...pr, match: 2 }],
        ['c', { ...pr, match: 8 }],
      ]),
      5,
    ),
    2,
    'the lowest match bounds pruning',
  );
});

t.test('read-index: answered in order once confirmed and applied, expired, failed all at once', async (t) => {
  const q = new ReadIndexQueue();
  q.add({ reqId: 1, key: 'a', readIndex: 5, seq: 1, deadline: 100 });
  q.add({ reqId: 2, key: 'b', readIndex: 7, seq: 2, deadline: 200 });
  q.add({ reqId: 3, key: 'c', readIndex: 7, seq: 3, deadline: 300 });
  t.equal(q.nextDeadline(), 100);
  t.same(
    q.takeReady(1, 4).map((r) => r.reqId),
    [],
    'not applied yet: nothing',
  );
  t.same(
    q.takeReady(2, 7).map((r) => r.reqId),
    [1, 2],
    'rounds 1 and 2 confirmed and applied',
  );
  t.same(
    q.takeExpired(250).map((r) => r.reqId),
    [],
    'nothing due before 300',
  );
  t.same(
    q.takeExpired(300).map((r) => r.reqId),
    [3],
    'the deadline passed',
  );
  q.add({ reqId: 4, key: 'd', readIndex: 9, seq: 4, deadline: 400 });
  t.same(
    q.takeAll().map((r) => r.reqId),
    [4],
  );
  t.equal(q.length, 0);
  t.equal(q.nextDeadline(), Infinity);
});

t.test('membership: single-server changes decided as values', async (t) => {
  const base: MembershipView = {
    voters: ['n1', 'n2', 'n3'],
    votersBefore: ['n1', 'n2', 'n3'],
    configIndex: 1,
    commitIndex: 10,
    termStartIndex: 5,
  };
  const pending: MembershipView = { ...base, voters: ['n1', 'n2'], votersBefore: ['n1', 'n2', 'n3'], configIndex: 12 };
  const cases: Array<{ name: string; view: MembershipView; change: 'add' | 'remove'; node: NodeId; want: string }> = [
    {
      name: 'adding a new node appends the larger configuration',
      view: base,
      change: 'add',
      node: 'n4',
      want: 'append:n1,n2,n3,n4',
    },
    {
      name: 'removing a member appends the smaller one',
      view: base,
      change: 'remove',
      node: 'n2',
      want: 'append:n1,n3',
    },
    {
      name: 'removing a node the committed configuration lacks is already done',
      view: base,
      change: 'remove',
      node: 'n9',
      want: 'already',
    },
    { name: 'adding a member is already done', view: base, change: 'add', node: 'n1', want: 'already' },
    { name: 'repeating the pending removal waits for it', view: pending, change: 'remove', node: 'n3', want: 'wait' },
    {
      name: 'another change while one is pending is refused',
      view: pending,
      change: 'remove',
      node: 'n2',
      want: 'refuse',
    },
    {
      name: 'removing a non-member while a change is pending is refused too',
      view: pending,
      change: 'remove',
      node: 'n9',
      want: 'refuse',
    },
    {
      name: 'a leader that has not committed in its term refuses',
      view: { ...base, commitIndex: 4 },
      change: 'add',
      node: 'n4',
      want: 'refuse',
    },
    {
      name: 'the last member stays',
      view: { ...base, voters: ['n1'], votersBefore: ['n1'] },
      change: 'remove',
      node: 'n1',
      want: 'refuse',
    },
  ];
  for (const c of cases) {
    const plan = planMembershipChange(c.view, c.change, c.node);
    const got = plan.kind === 'append' ? `append:${plan.voters.join(',')}` : plan.kind;
    t.equal(got, c.want, c.name);
  }
  const refused = planMembershipChange(pending, 'add', 'n4');
  t.match(refused.kind === 'refuse' ? refused.error : '', /another membership change is in progress \(config entry 12/);
});

t.test('replies: not leader, replaced, indeterminate', async (t) => {
  t.equal(notLeaderError('n2', 'n1'), 'not leader; leader is n2');
  t.equal(notLeaderError('', 'n1'), 'no leader elected yet');
  t.equal(notLeaderError('n1', 'n1'), 'no leader elected yet', 'itself as leader (stepping down): none known');
  t.match(withStatus(notLeaderReply(1, 'n2', 'n1'), 'write'), {
    ok: false,
    code: 'not_leader',
    status: 409,
    leader_id: 'n2',
  });
  t.match(withStatus(notLeaderReply(1, '', 'n1'), 'write'), { ok: false, code: 'no_leader', status: 409 });
  t.notOk('status' in notLeaderReply(1, 'n2', 'n1'), 'the core names a code; the edge picks the status');
  t.same(
    [notLeaderCode('n2', 'n1'), notLeaderCode('', 'n1'), notLeaderCode('n1', 'n1')],
    ['not_leader', 'no_leader', 'no_leader'],
  );
  t.match(replacedReply(2, 'n3', 'n1'), {
    ok: false,
    code: 'not_leader',
    leader_id: 'n3',
    error: /discarded, retry \(leader is n3\)/,
  });
  const r = withStatus(indeterminateReply(3, 'not committed within 5 ms'), 'write');
  t.match(r, {
    ok: false,
    code: 'timeout',
    status: 409,
    indeterminate: true,
    error: 'not committed within 5 ms; the write may still be applied',
  });
});

t.test('state machine: what an entry writes', async (t) => {
  const store = {};
  t.same(
    applyToStore(store, put(1, 'a', 'x')).map((v) => [v.key, v.value, v.version]),
    [['a', 'x', 1]],
  );
  t.same(
    applyToStore(store, { index: 2, term: 1, node_id: 'n1', timestamp: 2, type: 'delete', key: 'a' }).map(
      (v) => v.tombstone,
    ),
    [true],
    'a delete leaves a tombstone',
  );
  t.same(
    applyToStore(store, {
      index: 3,
      term: 1,
      node_id: 'n1',
      timestamp: 3,
      type: 'batch',
      entries: [
        { key: 'b', value: '1' },
        { key: 'c', value: '2' },
      ],
    }).length,
    2,
    'a batch writes every key in one entry',
  );
  t.same(
    applyToStore(store, { index: 4, term: 1, node_id: 'n1', timestamp: 4, type: 'noop' }),
    [],
    'a no-op writes nothing',
  );
  t.same(Object.keys(store).sort(), ['a', 'b', 'c']);
  t.same(
    votersAfter(
      ['n1'],
      [put(5, 'k', 'v'), { index: 6, term: 1, node_id: 'n1', timestamp: 6, type: 'config', voters: ['n1', 'n2'] }],
    ),
    ['n1', 'n2'],
  );
});

t.test('durable journal: one step’s records in order, hard state last, checkpoints replace the step', async (t) => {
  const j = new DurableJournal();
  const out: unknown[] = [];
  j.append(put(1, 'a', '1'));
  j.append(put(2, 'b', '2'));
  j.truncate(2);
  j.append(put(2, 'b', '3', 2));
  j.drain(2, 'n1', out);
  t.same(
    (out as RaftDurableRecord[]).map((r) =>
      r.kind === 'append' ? `append:${r.entries.map((e) => e.index).join(',')}` : r.kind,
    ),
    ['append:1,2', 'truncate', 'append:2', 'hard'],
    'contiguous appends share a record; the hard state comes last',
  );
  const again: unknown[] = [];
  j.drain(2, 'n1', again);
  t.same(again, [], 'nothing changed: nothing drained');
  j.append(put(3, 'c', '1', 2));
  j.checkpoint({
    term: 2,
    votedFor: 'n1',
    log: [],
    raftSnapshot: { lastIncludedIndex: 3, lastIncludedTerm: 2, voters: ['n1'], store: {} },
  });
  const step: unknown[] = [];
  j.drain(2, 'n1', step);
  t.same(
    (step as RaftDurableRecord[]).map((r) => r.kind),
    ['checkpoint'],
    'a checkpoint supersedes the step’s earlier records',
  );
  t.notOk(
    j.checkpointDue(() => 0),
    'no entries since the checkpoint: none due',
  );
  for (let i = 4; i < 4 + checkpointEntriesMin; i++) j.append(put(i, 'k', `${i}`, 2));
  t.ok(
    j.checkpointDue(() => 10),
    `after ${checkpointEntriesMin} entries a compaction checkpoints a small state`,
  );
  t.notOk(
    j.checkpointDue(() => checkpointEntriesMin * 4),
    'but not a state larger than what storage holds beyond it',
  );
});

t.test('views: status, log and inspection read the state and change nothing', async (t) => {
  const log = new RaftLog({ lastIncludedIndex: 2, lastIncludedTerm: 1, voters: ['n1', 'n2', 'n3'], store: {} }, [
    put(3, 'a', '1', 2),
    put(4, 'b', '2', 2),
    put(5, 'c', '3', 2),
  ]);
  const state = (over: Partial<RaftViewState>): RaftViewState => ({
    id: 'n1',
    role: 'follower',
    preCandidate: false,
    term: 2,
    votedFor: null,
    leaderId: 'n2',
    commitIndex: 4,
    lastApplied: 3,
    voters: ['n1', 'n2', 'n3'],
    configIndex: 2,
    leaderLastIndex: 5,
    hlcRemoteRefused: 0,
    log,
    progress: new Map(),
    appendTime: () => 0,
    ...over,
  });
  const follower = statusView(state({}), 1000);
  t.same(
    [follower.role, follower.leader_id, follower.lag, follower.followers],
    ['follower', 'n2', 2, undefined],
    'a follower lags by the leader’s last index less what it applied, and has no followers map',
  );
  t.same(
    [follower.extra?.['last_log_index'], follower.extra?.['raft_snapshot_index'], follower.extra?.['log_entries']],
    [5, 2, 3],
    'the log’s extent: last index, snapshot index and retained entries',
  );
  const committed = [follower.extra?.['config_committed'], follower.extra?.['voted_for']];
  t.same(committed, [true, ''], 'config committed, no vote');
  const pending = statusView(state({ configIndex: 5 }), 0).extra?.['config_committed'];
  t.equal(pending, false, 'a config entry past commit is pending');

  const progress = new Map([
    ['n2', { ...newProgress(5, 0), match: 5, next: 6 }],
    ['n3', { ...newProgress(5, 0), match: 3, next: 4 }],
  ]);
  const leader = statusView(
    state({ role: 'leader', leaderId: 'n1', votedFor: 'n1', progress, appendTime: (i) => (i === 4 ? 900 : 0) }),
    1000,
  );
  t.equal(leader.lag, 0, 'a leader does not lag');
  t.same(
    leader.followers,
    { n2: { match_index: 5, lag_entries: 0, lag_ms: 0 }, n3: { match_index: 3, lag_entries: 2, lag_ms: 100 } },
    'a follower behind lags by the age of the first entry it lacks',
  );

  const view = logView(log);
  const voters = ['n1', 'n2', 'n3'];
  const snapshotEntry = { type: 'raft_snapshot', last_included_index: 2, last_included_term: 1, voters };
  t.same(view[0], snapshotEntry, 'the snapshot first');
  t.same(view.slice(1), log.all(), 'then the retained entries');

  const inspection = inspectView(state({ role: 'leader', leaderId: 'n1', progress }));
  t.same(inspection.progress, { n2: { next: 6, match: 5 }, n3: { next: 4, match: 3 } }, 'progress as next and match');
  t.same([inspection.lastIndex, inspection.lastTerm, inspection.raftSnapshot.lastIncludedIndex], [5, 2, 2]);
  t.equal(log.length, 3, 'the log is untouched');
});
