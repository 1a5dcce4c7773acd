/**
 * The one behaviour suite every replication core passes (hono's shared router suite; simlab's
 * test/flags/store-conformance.ts is the local model). It speaks only the NodeCore contract under
 * the deterministic runtime: read your write, delete, batch, a missing key, a paused node, status
 * fields, crash/restart from the fold of the durable records, unknown controls, deterministic
 * replay. Each strategy runs it from core-conformance.test.ts, skipping a test only with a reason.
 * Not a test file itself (no `.test.`).
 */
import type { Test } from 'tap';
import { DetCluster } from '../../src/fabric/deterministic.js';
import type {
  ClientOp,
  ClientReply,
  ClusterConfig,
  CoreFactory,
  DurableFold,
  NodeId,
  Strategy,
  Version,
} from '../../src/replication/core.js';
import { withDurableStorage } from '../../src/replication/swarm/kv-swarm.js';

export type ConformanceTest =
  | 'read_your_write'
  | 'write_reaches_replicas'
  | 'delete'
  | 'missing_key'
  | 'batch'
  | 'paused_node'
  | 'status_fields'
  | 'crash_restart'
  | 'unknown_control'
  | 'deterministic_replay';

export interface CoreHarness {
  strategy: Strategy;
  factory: CoreFactory;
  /** The strategy's fold of durable records: a restarted node is built from it alone. */
  fold: DurableFold;
  config: ClusterConfig;
  /** Tests this strategy does not run, each with its reason. */
  skip?: Array<{ reason: string; tests: ConformanceTest[] }>;
}

/** Virtual ms a cluster gets to settle (raft elects a leader well within it). */
const settleMs = 1000;
/** Virtual ms any one request may take. */
const replyWithinMs = 3000;

export function runCoreConformance(t: Test, h: CoreHarness): void {
  const skipped = new Map<ConformanceTest, string>();
  for (const s of h.skip ?? []) for (const name of s.tests) skipped.set(name, s.reason);
  const ids = Array.from({ length: h.config.node_count }, (_, i) => `n${i + 1}`);

  const cluster = (seed = 11): DetCluster => {
    const c = new DetCluster({ factory: withDurableStorage(h.factory, h.fold), nodeIds: ids, config: h.config, seed });
    c.runFor(settleMs);
    return c;
  };
  /** Where writes go: the node that says it leads, else the first node (leaderless, multi-leader). */
  const writer = (c: DetCluster): NodeId =>
    ids.find((id) => c.state(id) === 'online' && c.core(id).status(c.now).role === 'leader') ?? (ids[0] as NodeId);
  const call = (c: DetCluster, node: NodeId, op: ClientOp): ClientReply | undefined =>
    c.runUntilReply(c.client(node, op), replyWithinMs);
  const entryOf = (r: ClientReply | undefined): Version | undefined =>
    r?.ok && r.result.kind === 'entry' ? r.result.entry : undefined;
  const codeOf = (r: ClientReply | undefined): string => (r === undefined ? 'no reply' : r.ok ? 'ok' : r.code);

  const test = (name: ConformanceTest, title: string, body: (t: Test) => Promise<void>): void => {
    const reason = skipped.get(name);
    if (reason !== undefined) t.test(`${h.strategy}: ${title}`, { skip: reason }, async () => {});
    else t.test(`${h.strategy}: ${title}`, body);
  };

  test('read_your_write', 'a write is acknowledged with its version and read back where it was taken', async (t) => {
    const c = cluster();
    const w = writer(c);
    const put = call(c, w, { op: 'write', key: 'k', value: 'v1' });
    const v = entryOf(put);
    t.ok(v, `write acknowledged (${codeOf(put)})`);
    const shown = v && { key: v.key, value: v.value, tombstone: v.tombstone };
    t.same(shown, { key: 'k', value: 'v1', tombstone: false }, 'the reply carries the version');
    t.ok(v && v.timestamp > 0 && v.node_id.length > 0, 'with a timestamp and a node id');
    t.equal(entryOf(call(c, w, { op: 'read', key: 'k' }))?.value, 'v1', 'read back');
    call(c, w, { op: 'write', key: 'k', value: 'v2' });
    t.equal(entryOf(call(c, w, { op: 'read', key: 'k' }))?.value, 'v2', 'an overwrite is read back too');
  });

  test('write_reaches_replicas', 'with no faults, a write reaches every node that must hold it', async (t) => {
    const c = cluster();
    const v = entryOf(call(c, writer(c), { op: 'write', key: 'k', value: 'everywhere' }));
    t.ok(v, 'acknowledged');
    c.runFor(2000);
    const holders = ids.filter((id) => c.core(id).storeView()['k']?.value === 'everywhere');
    const needed = h.strategy === 'leaderless' ? h.config.quorum_n : ids.length;
    t.equal(holders.length, needed, `held by ${holders.join(',')}`);
  });

  test('delete', 'a delete is acknowledged as a tombstone and the key then reads as not_found', async (t) => {
    const c = cluster();
    const w = writer(c);
    call(c, w, { op: 'write', key: 'k', value: 'doomed' });
    const del = call(c, w, { op: 'delete', key: 'k' });
    t.ok(del?.ok, `delete acknowledged (${codeOf(del)})`);
    const v = entryOf(del);
    if (v) t.equal(v.tombstone, true, 'the reply is a tombstone');
    t.equal(codeOf(call(c, w, { op: 'read', key: 'k' })), 'not_found');
    c.runFor(2000);
    for (const id of ids) {
      t.equal(codeOf(call(c, id, { op: 'read', key: 'k' })) === 'ok', false, `${id} does not serve the deleted value`);
    }
  });

  test('missing_key', 'a read of a key never written answers not_found (a code, not an exception)', async (t) => {
    const c = cluster();
    const r = call(c, writer(c), { op: 'read', key: 'never-written' });
    t.equal(codeOf(r), 'not_found');
    t.ok(r && !r.ok && r.error.length > 0, 'with a message');
  });

  test('batch', 'a batch writes every entry (or is refused as unsupported)', async (t) => {
    const c = cluster();
    const w = writer(c);
    const r = call(c, w, {
      op: 'batch',
      entries: [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
      ],
    });
    if (r && !r.ok && r.code === 'unsupported') {
      t.pass('refused as unsupported');
      return;
    }
    t.ok(r?.ok && r.result.kind === 'batch', `acknowledged as a batch (${codeOf(r)})`);
    if (r?.ok && r.result.kind === 'batch') {
      const pairs = r.result.entries.map((e) => [e.key, e.value]);
      t.same(
        pairs,
        [
          ['a', '1'],
          ['b', '2'],
        ],
        'one version per entry, in order',
      );
    }
    t.equal(entryOf(call(c, w, { op: 'read', key: 'a' }))?.value, '1');
    t.equal(entryOf(call(c, w, { op: 'read', key: 'b' }))?.value, '2');
  });

  test('paused_node', 'a paused node refuses clients; a write taken meanwhile reaches it after resume', async (t) => {
    const c = cluster();
    const w = writer(c);
    const victim = ids.find((id) => id !== w) as NodeId;
    c.pause(victim);
    t.equal(codeOf(call(c, victim, { op: 'read', key: 'k' })), 'paused', 'the paused node refuses');
    const put = call(c, w, { op: 'write', key: 'k', value: 'while-paused' });
    t.ok(put?.ok, `the others still take writes (${codeOf(put)})`);
    c.resume(victim);
    c.runFor(4000);
    const r = call(c, victim, { op: 'read', key: 'k' });
    const leaderRedirect = !r?.ok && r?.code === 'not_leader';
    if (leaderRedirect) {
      const held = c.core(victim).storeView()['k']?.value;
      t.equal(held, 'while-paused', 'it caught up (its store; reads go to the leader)');
    } else t.equal(entryOf(r)?.value, 'while-paused', 'it serves the write after resume');
  });

  test('status_fields', 'status() reports a role, non-negative indexes and one leader (or none) for all', async (t) => {
    const c = cluster();
    const w = writer(c);
    const before = c.core(w).status(c.now).last_applied;
    call(c, w, { op: 'write', key: 'k', value: 'v' });
    c.runFor(500);
    const leaders = new Set<string>();
    for (const id of ids) {
      const s = c.core(id).status(c.now);
      t.ok(typeof s.role === 'string' && s.role.length > 0, `${id}: role ${s.role}`);
      for (const f of ['commit_index', 'last_applied', 'lag'] as const) {
        t.ok(Number.isInteger(s[f]) && s[f] >= 0, `${id}: ${f} = ${s[f]}`);
      }
      t.ok(s.leader_id === '' || ids.includes(s.leader_id), `${id}: leader_id ${JSON.stringify(s.leader_id)}`);
      leaders.add(s.leader_id);
    }
    t.equal(leaders.size, 1, `every node names the same leader (${[...leaders].join(',') || 'none'})`);
    t.ok(c.core(w).status(c.now).last_applied > before, 'last_applied grew with the write');
  });

  const restartTitle =
    'a whole-cluster crash and restart from the durable folds keeps what each node held and every acknowledged write';
  test('crash_restart', restartTitle, async (t) => {
    const c = cluster();
    const w = writer(c);
    for (let i = 0; i < 5; i++) {
      t.ok(call(c, w, { op: 'write', key: `k${i}`, value: `v${i}` })?.ok, `write ${i} acknowledged`);
    }
    t.ok(call(c, w, { op: 'delete', key: 'k0' })?.ok, 'delete acknowledged');
    c.runFor(1000);
    // The whole cluster goes down at once, so no node can catch up from another's memory.
    const cell = (v: Version | undefined): string => (v === undefined || v.tombstone ? 'none' : `v:${v.value}`);
    const held = new Map(ids.map((id) => [id, c.core(id).storeView()]));
    for (const id of ids) c.crash(id);
    t.same(
      ids.map((id) => c.state(id)),
      ids.map(() => 'offline'),
      'all down',
    );
    for (const id of ids) c.restart(id);
    c.runFor(2000);
    for (const id of ids) {
      const before = held.get(id) ?? {};
      const store = c.core(id).storeView();
      // Leaderless nodes hold only the keys of their preference lists: each is compared with what it held.
      const lost = Object.keys(before).filter((k) => cell(store[k]) !== cell(before[k]));
      t.same(lost, [], `${id} holds what it held before the crash (${Object.keys(before).length} keys)`);
    }
    const reader = writer(c);
    t.same(
      [0, 1, 2, 3, 4].map((i) => {
        const r = call(c, reader, { op: 'read', key: `k${i}` });
        return r?.ok ? entryOf(r)?.value : codeOf(r);
      }),
      ['not_found', 'v1', 'v2', 'v3', 'v4'],
      `${reader} serves every acknowledged write and the delete after the restart`,
    );
  });

  test('unknown_control', 'an unknown custom command is refused with a code, not thrown', async (t) => {
    const c = cluster();
    const r = c.control(writer(c), { kind: 'custom', name: 'no-such-command' });
    t.equal(r.ok, false);
    t.ok(!r.ok && typeof r.code === 'string' && r.error.length > 0, `refused with a code (${r.ok ? '' : r.code})`);
  });

  test('deterministic_replay', 'the same seed and the same driving code give the same trace hash', async (t) => {
    const run = (seed: number): string => {
      const c = cluster(seed);
      const w = writer(c);
      for (let i = 0; i < 10; i++) {
        const key = `k${i % 4}`;
        const op: ClientOp = i % 3 === 2 ? { op: 'read', key } : { op: 'write', key, value: `${i}` };
        c.client(ids[i % ids.length] as NodeId, op);
      }
      c.fabric.partition(
        [w],
        ids.filter((id) => id !== w),
      );
      c.runFor(500);
      c.fabric.clearFaults();
      c.crash(ids[ids.length - 1] as NodeId);
      c.runFor(300);
      c.restart(ids[ids.length - 1] as NodeId);
      c.runFor(1500);
      return c.traceHash();
    };
    t.equal(run(21), run(21), 'seed 21 twice');
    t.equal(run(22), run(22), 'seed 22 twice');
  });
}
