/**
 * Raft compaction leaves: where a compaction cuts (cores/raft/compaction.ts), the log's raftSnapshot
 * built lazily from the compacted entries (cores/raft/log.ts), and the core's count of store keys.
 */
import t from 'tap';
import {
  compactionPoint,
  type CompactionInput,
  type FollowerAck,
} from '../../src/replication/cores/raft/compaction.js';
import { RaftLog } from '../../src/replication/cores/raft/log.js';
import { applyToStore } from '../../src/replication/cores/raft/state-machine.js';
import type { LogEntry } from '../../src/replication/cores/raft/types.js';
import { RaftCore } from '../../src/replication/cores/raft.js';
import { defaultTimings, emptyOutput, type ClusterConfig, type Version } from '../../src/replication/core.js';
import { clusterConfig } from '../../src/replication/config.js';
import {
  raftSnapshotFoldEntriesMin,
  snapshotCatchUpEntriesDefault,
  validateTimings,
} from '../../src/replication/limits.js';
import { SeededRng } from '../../src/util/rng.js';

t.test('compactionPoint: interval, acked, silent followers and the bounded tail', async (t) => {
  const base: CompactionInput = {
    lastApplied: 100,
    snapshotIndex: 60,
    every: 30,
    catchUpEntries: 1000,
    followers: [],
    now: 10_000,
    answeringMs: 300,
    unansweredMax: 16,
  };
  const f = (match: number, over: Partial<FollowerAck> = {}): FollowerAck => ({
    match,
    lastAckAt: 9_990,
    unanswered: 1,
    ...over,
  });
  const cases: Array<{ name: string; over: Partial<CompactionInput>; want: number }> = [
    { name: 'never with every <= 0', over: { every: 0 }, want: 0 },
    { name: 'not before every entries past the snapshot', over: { lastApplied: 89 }, want: 0 },
    { name: 'interval: all that is applied', over: { catchUpEntries: 0, followers: [f(61)] }, want: 100 },
    { name: 'not a leader: all that is applied', over: { followers: undefined }, want: 100 },
    { name: 'acked: followers all caught up', over: { followers: [f(100), f(120)] }, want: 100 },
    { name: 'acked: at the lowest answering match', over: { followers: [f(95), f(92)] }, want: 92 },
    { name: 'acked: none while that is within every of the snapshot', over: { followers: [f(89)] }, want: 0 },
    {
      name: 'a follower silent past answeringMs holds nothing',
      over: { followers: [f(61, { lastAckAt: 9_699 }), f(97)] },
      want: 97,
    },
    {
      name: 'one silent exactly answeringMs still holds',
      over: { followers: [f(61, { lastAckAt: 9_700 })] },
      want: 0,
    },
    {
      name: 'a follower with unansweredMax messages unanswered holds nothing',
      over: { followers: [f(61, { unanswered: 16 }), f(99)] },
      want: 99,
    },
    {
      name: 'the tail is bounded: at least lastApplied - catchUpEntries',
      over: { catchUpEntries: 10, followers: [f(61)] },
      want: 90,
    },
    {
      name: 'the bound still waits for every entries',
      over: { catchUpEntries: 20, lastApplied: 95, followers: [f(61)] },
      want: 0,
    },
  ];
  for (const c of cases) t.equal(compactionPoint({ ...base, ...c.over }), c.want, c.name);
});

/** Puts (some keys again, one named like an Object.prototype member), a delete and a batch. */
function mixedEntries(n: number): LogEntry[] {
  const out: LogEntry[] = [];
  for (let i = 1; i <= n; i++) {
    const common = { index: i, term: 1 + Math.floor(i / 50), node_id: 'n1', timestamp: 1000 + i };
    if (i % 17 === 0) out.push({ ...common, type: 'delete', key: `k${i % 13}` });
    else if (i % 23 === 0)
      out.push({
        ...common,
        type: 'batch',
        entries: [
          { key: `b${i}`, value: 'x' },
          { key: `k${i % 5}`, value: 'y' },
          { key: `b${i}`, value: 'z' },
        ],
      });
    else if (i % 31 === 0) out.push({ ...common, type: 'noop' });
    else out.push({ ...common, type: 'put', key: i % 29 === 0 ? 'toString' : `k${i % 13}`, value: `v${i}` });
  }
  return out;
}

function storeAfter(entries: readonly LogEntry[], index: number): Record<string, Version> {
  const store: Record<string, Version> = {};
  for (const e of entries) if (e.index <= index) applyToStore(store, e);
  return store;
}

t.test('the log builds its raftSnapshot store when read: the store at the cut, keys in order', async (t) => {
  const all = mixedEntries(3 * raftSnapshotFoldEntriesMin);
  const log = new RaftLog({ lastIncludedIndex: 0, lastIncludedTerm: 0, voters: ['n1'], store: {} }, [...all]);
  let cut = 0;
  let reads = 0;
  while (cut + 7 <= all.length) {
    cut += 7;
    const term = log.termAt(cut) as number;
    log.compact(cut, term, ['n1']);
    t.equal(log.snapshotIndex, cut);
    t.equal(log.firstIndex, cut + 1);
    // Most cuts are not read: their stores are built later, together; none is read for more than
    // raftSnapshotFoldEntriesMin entries in the middle, so the log builds one unread.
    const unread = cut > raftSnapshotFoldEntriesMin / 2 && cut < 2 * raftSnapshotFoldEntriesMin;
    if (cut % 5 !== 0 || unread) continue;
    reads++;
    const snap = log.raftSnapshot;
    const want = storeAfter(all, cut);
    t.same(snap.store, want, `cut ${cut}: the store after entry ${cut}`);
    t.same(Object.keys(snap.store), Object.keys(want), `cut ${cut}: keys in the order they were written`);
    t.equal(snap.lastIncludedIndex, cut);
    t.equal(snap.lastIncludedTerm, term);
    t.equal(log.raftSnapshot, snap, 'read again without a compaction: the same object');
  }
  t.ok(reads > 3);
  t.same(log.all(), all.slice(cut), 'the entries after the cut are retained');
});

const config: ClusterConfig = clusterConfig({
  strategy: 'raft',
  node_count: 1,
  inter_region_latency_ms: 0,
  sloppy_quorum: false,
});

t.test('the core counts its store keys as it applies: puts, deletes, batches, prototype names', async (t) => {
  const core = new RaftCore({
    id: 'n1',
    cluster_id: 'c',
    peers: ['n1'],
    config,
    timings: { ...defaultTimings, snapshotEveryEntries: 3 },
    rng: new SeededRng(3),
    now: 0,
  });
  let now = core.nextDeadline();
  core.onTick(now);
  core.drain(emptyOutput());
  t.equal(core.inspect().role, 'leader', 'a single node elects itself');
  let id = 0;
  for (const e of mixedEntries(200)) {
    now += 1;
    id++;
    if (e.type === 'put') core.onClient({ id, op: { op: 'write', key: e.key, value: e.value } }, now);
    else if (e.type === 'delete') core.onClient({ id, op: { op: 'delete', key: e.key } }, now);
    else if (e.type === 'batch') core.onClient({ id, op: { op: 'batch', entries: e.entries } }, now);
    else continue;
    core.drain(emptyOutput());
    t.equal(core.storeKeys, Object.keys(core.storeView()).length, `after request ${id}`);
  }
  t.ok(core.storeKeys > 10);
  t.ok(core.inspect().raftSnapshot.lastIncludedIndex > 100, 'compacted along the way');
});

t.test('validateTimings: snapshotCatchUpEntries is an integer >= 0 (0: the old policy)', async (t) => {
  t.same(validateTimings({ ...defaultTimings, snapshotCatchUpEntries: 0 }), { ok: true });
  t.equal(defaultTimings.snapshotCatchUpEntries, snapshotCatchUpEntriesDefault, 'the default keeps a tail');
  for (const bad of [-1, 2.5, Number.NaN, Infinity])
    t.match(
      validateTimings({ ...defaultTimings, snapshotCatchUpEntries: bad }),
      { ok: false, error: /snapshotCatchUpEntries must be an integer >= 0/ },
      String(bad),
    );
});
