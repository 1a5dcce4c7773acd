// Unit tests of the single-leader core's leaves (cores/single-leader/*): the wire guard, the durable
// records and their fold, the retained log's compaction, and a follower's progress; then the core's
// role-change assertions and its handling of stray or stale messages, driven directly.
import t from 'tap';
import { clusterConfig } from '../../src/replication/config.js';
import { coreTimingsDefault, type CoreOutput, type Version } from '../../src/replication/core.js';
import { SingleLeaderCore } from '../../src/replication/cores/single-leader.js';
import {
  entryOfRecord,
  entryRecord,
  singleLeaderDurableFold,
  versionOf,
  type SingleLeaderPersisted,
} from '../../src/replication/cores/single-leader/durable.js';
import {
  isSingleLeaderMessage,
  type AckMessage,
  type LogEntry,
} from '../../src/replication/cores/single-leader/messages.js';
import { applyAck, newProgress, retransmitIfStalled } from '../../src/replication/cores/single-leader/progress.js';
import { RetainedLog } from '../../src/replication/cores/single-leader/retained-log.js';
import { settleWaiters, type Waiter } from '../../src/replication/cores/single-leader/waiters.js';
import {
  singleLeaderCompactChunkEntries,
  singleLeaderCompactTargetShareOfLogBudget,
  singleLeaderLogViewEntriesMax,
  singleLeaderRetainedLogEntriesMax,
  storedEntryOverheadBytes,
} from '../../src/replication/limits.js';
import { SeededRng } from '../../src/util/rng.js';
import { AssertionFailure } from '../../src/util/assert.js';

function entry(index: number, over: Partial<LogEntry> = {}): LogEntry {
  return {
    index,
    epoch: 1,
    timestamp: 1000 + index,
    node_id: 'n1',
    ops: [{ key: `k${index}`, value: `v${index}` }],
    ...over,
  };
}

t.test('isSingleLeaderMessage accepts the three kinds and nothing else', async (t) => {
  const cases: Array<{ name: string; msg: unknown; ok: boolean }> = [
    {
      name: 'an append',
      msg: { kind: 'append', epoch: 1, leader: 'n1', prevIndex: 0, entries: [], leaderLastIndex: 0, leaderCommit: 0 },
      ok: true,
    },
    {
      name: 'a store copy',
      msg: { kind: 'store_copy', epoch: 1, leader: 'n1', index: 0, store: [], leaderLastIndex: 0, leaderCommit: 0 },
      ok: true,
    },
    { name: 'an ack', msg: { kind: 'ack', epoch: 1, matchIndex: 3, success: true }, ok: true },
    { name: 'the old `t` tag', msg: { t: 'append', epoch: 1 }, ok: false },
    { name: "raft's append_resp (another strategy)", msg: { kind: 'append_resp', term: 1 }, ok: false },
    { name: 'a kind without an epoch', msg: { kind: 'ack', matchIndex: 3, success: true }, ok: false },
    { name: 'null', msg: null, ok: false },
    { name: 'a string', msg: 'append', ok: false },
  ];
  for (const c of cases) t.equal(isSingleLeaderMessage(c.msg), c.ok, c.name);
});

t.test('durable records: an entry round-trips through its flat record, writer and deletes included', async (t) => {
  const e = entry(7, {
    node_id: 'n3',
    ops: [
      { key: 'a', value: '1' },
      { key: 'b', value: null },
    ],
  });
  const r = entryRecord(e);
  t.same(
    r,
    ['e', 7, 1, 1007, 'n3', 'a', '1', 'b', null],
    'flat: index, epoch, timestamp, writer, then key/value pairs',
  );
  if (r[0] !== 'e') throw new Error('not an entry record');
  t.same(entryOfRecord(r), e);
});

t.test("versionOf stamps a version with the entry's writer, not with whoever applies it", async (t) => {
  const e = entry(4, { node_id: 'n2', timestamp: 99 });
  t.same(versionOf({ key: 'k', value: 'v' }, e), {
    key: 'k',
    value: 'v',
    tombstone: false,
    timestamp: 99,
    node_id: 'n2',
    version: 4,
    vclock: { n2: 4 },
  });
  t.same(
    versionOf({ key: 'k', value: null }, e),
    {
      key: 'k',
      value: '',
      tombstone: true,
      timestamp: 99,
      node_id: 'n2',
      version: 4,
      vclock: { n2: 4 },
    },
    'a delete is a tombstone',
  );
});

t.test('the fold rebuilds what a restarted node starts from', async (t) => {
  const fold = (records: unknown[]): SingleLeaderPersisted => {
    let st: unknown;
    for (const r of records) st = singleLeaderDurableFold.fold(st, r);
    return st as SingleLeaderPersisted;
  };
  const st = fold([
    ['l', 2, 'n2'],
    entryRecord(entry(1, { epoch: 1, node_id: 'n1' })),
    entryRecord(entry(2, { epoch: 2, node_id: 'n2' })),
  ]);
  t.equal(st.epoch, 2);
  t.equal(st.leader, 'n2');
  t.equal(st.index, 2);
  t.equal(st.lastEntryEpoch, 2);
  t.equal(st.log.length, 2);
  t.equal(st.store.get('k1')?.node_id, 'n1', 'entry 1 keeps its writer n1 although the node follows n2');
  t.equal(st.store.get('k2')?.node_id, 'n2');

  const store: Version[] = [
    { key: 'x', value: 'y', tombstone: false, timestamp: 5, node_id: 'n1', version: 9, vclock: { n1: 9 } },
  ];
  const after = fold([entryRecord(entry(1)), ['c', 3, 'n1', 9, store, 2], entryRecord(entry(10))]);
  t.same([after.epoch, after.leader, after.index, after.lastEntryEpoch], [3, 'n1', 10, 1]);
  t.same([...after.store.keys()].sort(), ['k10', 'x'], 'a checkpoint replaces everything before it');
  t.equal(after.log.length, 1, 'only entries since the checkpoint are kept');
  t.equal(fold([['c', 4, 'n1', 0, []]]).lastEntryEpoch, 4, 'a checkpoint without a last entry epoch uses its epoch');

  t.equal(singleLeaderDurableFold.fold('unchanged', { not: 'a record' }), 'unchanged', 'a foreign record is ignored');
  t.ok(singleLeaderDurableFold.isCheckpoint(['c', 1, 'n1', 0, []]));
  t.notOk(singleLeaderDurableFold.isCheckpoint(['l', 1, 'n1']));
  t.throws(
    () => fold([entryRecord(entry(1)), entryRecord(entry(3))]),
    AssertionFailure,
    'a gap in durable entries is a bug',
  );
});

t.test('the retained log compacts by count in chunks, at and past the threshold', async (t) => {
  const log = new RetainedLog(Infinity);
  const threshold = singleLeaderRetainedLogEntriesMax + singleLeaderCompactChunkEntries;
  for (let i = 1; i <= threshold; i++) log.append(entry(i), i);
  log.compact();
  t.equal(log.length, threshold, `at ${threshold} entries nothing is dropped`);
  t.equal(log.firstIndex, 1);
  log.append(entry(threshold + 1), 0);
  log.compact();
  t.equal(log.length, singleLeaderRetainedLogEntriesMax, 'one past it: back to the retained maximum');
  t.equal(log.firstIndex, threshold + 2 - singleLeaderRetainedLogEntriesMax);
  t.equal(log.lastIndex, threshold + 1);
  t.equal(log.entryAt(log.firstIndex - 1), undefined, 'a compacted entry is gone');
  t.equal(log.entryAt(log.lastIndex)?.index, log.lastIndex);
  t.equal(
    log.appendedAtOrOldest(log.firstIndex - 5),
    log.firstIndex,
    'a compacted index reports the oldest append time',
  );
  t.equal(log.newest().length, Math.min(singleLeaderLogViewEntriesMax, log.length));
  t.same(
    log.slice(log.lastIndex - 1, 10).map((e) => e.index),
    [log.lastIndex - 1, log.lastIndex],
  );
  log.checkInvariants();
});

t.test('the retained log compacts by bytes down to its target share, keeping the newest entry', async (t) => {
  const one = storedEntryOverheadBytes + 'k1'.length + 'v1'.length;
  const bytesMax = one * 10;
  const log = new RetainedLog(bytesMax);
  for (let i = 1; i <= 10; i++) log.append(entry(i, { ops: [{ key: 'k1', value: 'v1' }] }), i);
  log.compact();
  t.equal(log.length, 10, 'at the budget nothing is dropped');
  log.append(entry(11, { ops: [{ key: 'k1', value: 'v1' }] }), 11);
  log.compact();
  t.ok(
    log.bytes <= bytesMax * singleLeaderCompactTargetShareOfLogBudget,
    `past it, down to the target share (${log.bytes} bytes)`,
  );
  t.equal(log.lastIndex, 11);
  const huge = new RetainedLog(1);
  huge.append(entry(1), 0);
  huge.compact();
  t.equal(huge.length, 1, 'the newest entry stays even when it alone is over budget');
  huge.checkInvariants();
});

t.test('the retained log: contiguity, reset and restore', async (t) => {
  const log = new RetainedLog(Infinity);
  log.append(entry(1), 0);
  t.throws(() => log.append(entry(3), 0), AssertionFailure, 'a gap is a bug');
  log.resetTo(40);
  t.same(
    [log.length, log.firstIndex, log.lastIndex, log.bytes],
    [0, 41, 40, 0],
    'a store copy at 40 leaves an empty log',
  );
  log.append(entry(41), 0);
  log.checkInvariants();
  const restored = new RetainedLog(Infinity);
  restored.restore([entry(5), entry(6)], 6, 100);
  t.same([restored.firstIndex, restored.lastIndex, restored.appendedAtOrOldest(6)], [5, 6, 100]);
  restored.restore([], 9, 100);
  t.same([restored.firstIndex, restored.lastIndex, restored.length], [10, 9, 0], 'no entries since the checkpoint');
});

t.test("a follower's progress on an ack", async (t) => {
  const ack = (matchIndex: number, success: boolean): AckMessage => ({ kind: 'ack', epoch: 1, matchIndex, success });
  const cases = [
    {
      name: 'success moves match and next',
      before: { match: 2, next: 3 },
      ack: ack(5, true),
      after: { match: 5, next: 6, needStoreCopy: false, sentAt: 50 },
    },
    {
      name: "success is capped at the leader's last index",
      before: { match: 2, next: 3 },
      ack: ack(20, true),
      after: { match: 10, next: 11 },
    },
    {
      name: 'a stale success never lowers match',
      before: { match: 6, next: 8 },
      ack: ack(4, true),
      after: { match: 6, next: 8, sentAt: 0 },
    },
    {
      name: 'a diverged follower (match -1) gets a store copy',
      before: { match: 2, next: 3 },
      ack: ack(-1, false),
      after: { needStoreCopy: true, inflight: 0 },
    },
    {
      name: 'a follower behind the retained log gets a store copy',
      before: { match: 0, next: 5 },
      ack: ack(2, false),
      after: { needStoreCopy: true },
    },
    {
      name: 'a follower just at the retained log gets entries',
      before: { match: 0, next: 5 },
      ack: ack(3, false),
      after: { needStoreCopy: false, next: 4, match: 0 },
    },
    {
      name: 'a gap: resend after what it has',
      before: { match: 7, next: 9 },
      ack: ack(5, false),
      after: { match: 5, next: 6, inflight: 0 },
    },
  ];
  for (const c of cases) {
    const p = { ...newProgress(1, 0, false), ...c.before, inflight: 1 };
    applyAck(p, c.ack, 10, 4, 50);
    t.match(p, c.after, c.name);
  }
  const p = newProgress(1, 0, false);
  applyAck(p, ack(1, true), 10, 1, 50);
  t.equal(p.inflight, 0, 'in-flight never goes below zero');
  t.throws(() => newProgress(0, 0, false), AssertionFailure, 'index 0 is never sent');
});

t.test('the retransmit timer fires at retransmitMs, not before, and only for a lagging follower', async (t) => {
  const p = { ...newProgress(1, 0, false), match: 3, next: 7, inflight: 1 };
  t.equal(retransmitIfStalled(p, 10, 99, 100), false, 'one ms before');
  t.equal(retransmitIfStalled(p, 10, 100, 100), true, 'at retransmitMs');
  t.match(p, { next: 4, inflight: 0, sentAt: 100 }, 'resend from what it confirmed');
  const caughtUp = { ...newProgress(1, 0, false), match: 10, next: 11 };
  t.equal(retransmitIfStalled(caughtUp, 10, 1000, 100), false, 'a caught-up follower has nothing to resend');
});

t.test('waiting writes: sync needs every follower, semi_sync one, and the deadline answers timeout', async (t) => {
  const waiter = (requestId: number, mode: Waiter['mode'], index = 5, deadline = 100): Waiter => ({
    requestId,
    index,
    deadline,
    mode,
    reply: { id: requestId, ok: true, result: { kind: 'batch', entries: [] } },
  });
  const cases: Array<{ name: string; w: Waiter; matches: number[]; now: number; outcome: 'ok' | 'timeout' | 'wait' }> =
    [
      { name: 'sync, every follower has it', w: waiter(1, 'sync'), matches: [5, 6], now: 0, outcome: 'ok' },
      { name: 'sync, one follower lacks it', w: waiter(1, 'sync'), matches: [5, 4], now: 99, outcome: 'wait' },
      { name: 'semi_sync, one follower has it', w: waiter(1, 'semi_sync'), matches: [5, 0], now: 0, outcome: 'ok' },
      { name: 'semi_sync, none has it', w: waiter(1, 'semi_sync'), matches: [4, 0], now: 99, outcome: 'wait' },
      { name: 'no follower left: nothing to wait for', w: waiter(1, 'sync'), matches: [], now: 0, outcome: 'ok' },
      { name: 'at the deadline', w: waiter(1, 'sync'), matches: [5, 4], now: 100, outcome: 'timeout' },
      {
        name: 'confirmed at the deadline wins over the timeout',
        w: waiter(1, 'sync'),
        matches: [5, 5],
        now: 100,
        outcome: 'ok',
      },
    ];
  for (const c of cases) {
    const r = settleWaiters([c.w], c.matches, c.now, 'n1', 1000);
    if (c.outcome === 'wait') t.same(r, { replies: [], keep: [c.w] }, c.name);
    else if (c.outcome === 'ok') t.same(r, { replies: [c.w.reply], keep: [] }, c.name);
    else {
      t.equal(r.keep.length, 0, c.name);
      t.match(
        r.replies,
        [
          {
            id: 1,
            ok: false,
            code: 'timeout',
            indeterminate: true,
            error: /sync replication timed out after 1000 ms.*leader n1 \(index 5\).*all 2 followers \(1\/2 acks\)/,
          },
        ],
        c.name,
      );
    }
  }
  const r = settleWaiters([waiter(1, 'sync', 3), waiter(2, 'sync', 9), waiter(3, 'sync', 4)], [4, 4], 0, 'n1', 1000);
  t.same(
    r.replies.map((x) => x.id),
    [1, 3],
    "replies in the waiters' order",
  );
  t.same(
    r.keep.map((w) => w.requestId),
    [2],
  );
});

// ---- the core, driven directly

function core(id: string): SingleLeaderCore {
  return new SingleLeaderCore({
    id,
    peers: ['n1', 'n2', 'n3'],
    config: clusterConfig({ strategy: 'single_leader', node_count: 3 }),
    timings: coreTimingsDefault,
    cluster_id: 'c',
    rng: new SeededRng(1),
    now: 0,
  });
}

function drain(c: SingleLeaderCore): CoreOutput {
  const out: CoreOutput = { messages: [], replies: [], events: [], durable: [] };
  c.drain(out);
  return out;
}

t.test('role changes: set_leader moves leadership forward only', async (t) => {
  const n2 = core('n2');
  t.equal(n2.status(0).role, 'follower', 'n1 leads at first');
  t.same(n2.control({ kind: 'set_leader', leader_id: 'n2', epoch: 3 }, 0), {
    ok: true,
    data: { epoch: 3, last_index: 0 },
  });
  t.equal(n2.status(0).role, 'leader');
  t.same(
    n2.control({ kind: 'set_leader', leader_id: 'n3' }, 0),
    { ok: true, data: { epoch: 4, last_index: 0 } },
    'no epoch: the next one',
  );
  t.equal(n2.status(0).leader_id, 'n3');
  t.throws(
    () => n2.control({ kind: 'set_leader', leader_id: 'n1', epoch: 2 }, 0),
    AssertionFailure,
    'an epoch never goes backwards',
  );
});

t.test('a leader that is replaced answers its waiting writes as indeterminate', async (t) => {
  const n1 = new SingleLeaderCore({
    id: 'n1',
    peers: ['n1', 'n2', 'n3'],
    config: clusterConfig({ strategy: 'single_leader', node_count: 3, replication_mode: 'sync' }),
    timings: coreTimingsDefault,
    cluster_id: 'c',
    rng: new SeededRng(1),
    now: 0,
  });
  n1.onClient({ id: 1, op: { op: 'write', key: 'k', value: 'v' } }, 0);
  t.equal(drain(n1).replies.length, 0, 'a sync write waits for the followers');
  n1.control({ kind: 'set_leader', leader_id: 'n2', epoch: 1 }, 1);
  t.match(drain(n1).replies, [{ id: 1, ok: false, code: 'not_leader', indeterminate: true, leader_id: 'n2' }]);
  t.equal(n1.status(1).role, 'follower');
});

t.test('a follower ignores stray payloads and appends from an older epoch', async (t) => {
  const n2 = core('n2');
  n2.control({ kind: 'set_leader', leader_id: 'n3', epoch: 5 }, 0);
  drain(n2);
  const stale = {
    kind: 'append',
    epoch: 4,
    leader: 'n1',
    prevIndex: 0,
    entries: [entry(1)],
    leaderLastIndex: 1,
    leaderCommit: 1,
  };
  n2.onMessage('n1', stale, 1);
  n2.onMessage('n1', { t: 'append', epoch: 9, leader: 'n1', prev: 0, entries: [entry(1)], last: 1, commit: 1 }, 1);
  n2.onMessage('n1', { kind: 'vote_req', term: 9 }, 1);
  const out = drain(n2);
  t.same(out.messages, [], 'nothing answered');
  t.match(
    n2.status(1),
    { leader_id: 'n3', term: 5, last_applied: 0 },
    'still following n3 in epoch 5, nothing applied',
  );
  const fresh = { ...stale, epoch: 6 };
  n2.onMessage('n1', fresh, 2);
  t.match(n2.status(2), { leader_id: 'n1', term: 6, last_applied: 1 }, 'a newer epoch makes n1 its leader');
  t.match(drain(n2).messages, [{ to: 'n1', msg: { kind: 'ack', epoch: 6, matchIndex: 1, success: true } }]);
  t.equal(n2.storeView()['k1']?.node_id, 'n1', "stamped with the entry's writer");
});
