/**
 * The cluster checkers: first their pure parts (history mapping, quorum plans, Merkle comparison),
 * then black-box through the real server: convergence, linearizability, invariants, anti-entropy,
 * the leaderless corrupt route and the safe add-node under concurrent load.
 */
import t from 'tap';
import { api, eventually, sleep } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import type { HistoryOp as ClusterOp } from '../../src/replication/cluster.js';
import type { Version } from '../../src/replication/core.js';
import {
  linearizabilityReport,
  toLincheckHistory,
  truncatedClient,
} from '../../src/replication/checkers/linearizability.js';
import { addNodePlan, quorumOverlap, transitionOverlaps, type Quorum } from '../../src/replication/checkers/quorum.js';
import { compareReplicas, compareTrees, merkleTree, replicaTree } from '../../src/replication/checkers/convergence.js';
import { merkleBuckets, merkleRoot } from '../../src/replication/dynamo/merkle.js';
import { preferenceList } from '../../src/replication/dynamo/ring.js';
import { createLeaderlessCore } from '../../src/replication/cores/leaderless.js';
import { defaultTimings, type ClusterConfig } from '../../src/replication/core.js';
import { SeededRng } from '../../src/util/rng.js';

// ------------------------------------------------------------------ pure parts

const op = (o: Partial<ClusterOp> & Pick<ClusterOp, 'kind'>): ClusterOp => ({
  client: 'c1',
  node: 'n1',
  key: 'k',
  value: null,
  invokeMs: 10,
  completeMs: 20,
  outcome: 'ok',
  ...o,
});

t.test('recorded client operations map onto the register model history', async (t) => {
  const cases: Array<{ name: string; in: ClusterOp; want: Record<string, unknown> }> = [
    {
      name: 'a write writes its value',
      in: op({ kind: 'write', value: 'a' }),
      want: { kind: 'write', input: 'a', output: null, status: 'ok', completeTime: 20 },
    },
    {
      name: 'a delete is a delete (a write of absent)',
      in: op({ kind: 'delete' }),
      want: { kind: 'delete', input: null, status: 'ok' },
    },
    {
      name: 'a read outputs the value seen',
      in: op({ kind: 'read', result: 'x' }),
      want: { kind: 'read', output: 'x', status: 'ok' },
    },
    {
      name: 'a not-found read outputs null',
      in: op({ kind: 'read', result: null }),
      want: { kind: 'read', output: null },
    },
    {
      name: 'an unknown outcome has no completion time',
      in: op({ kind: 'write', value: 'b', outcome: 'info' }),
      want: { status: 'info', completeTime: undefined },
    },
    {
      name: 'a failed write stays failed',
      in: op({ kind: 'write', value: 'c', outcome: 'fail' }),
      want: { status: 'fail', completeTime: 20 },
    },
  ];
  for (const c of cases) {
    const h = toLincheckHistory([c.in], false);
    t.equal(h.history.length, 1, c.name);
    t.match(h.history[0], { key: 'k', invokeTime: 10, ...c.want }, c.name);
    t.equal(h.source[0], c.in, `${c.name}: the source is kept`);
  }
});

t.test('a truncated history gets one unknown-outcome write per value read, invoked before the window', async (t) => {
  const ops = [
    op({ kind: 'read', result: 'old', invokeMs: 100, completeMs: 101 }),
    op({ kind: 'read', result: 'old', invokeMs: 102, completeMs: 103 }),
    op({ kind: 'read', result: null, invokeMs: 104, completeMs: 105 }),
    op({ kind: 'write', value: 'new', invokeMs: 106, completeMs: 107 }),
  ];
  t.equal(toLincheckHistory(ops, false).synthetic, 0, 'nothing is added to a complete history');
  const h = toLincheckHistory(ops, true);
  t.equal(h.synthetic, 2, 'one for "old", one for absent');
  const added = h.history.slice(ops.length);
  t.same(
    added.map((o) => [o.kind, o.input, o.status, o.client]),
    [
      ['write', 'old', 'info', truncatedClient],
      ['delete', null, 'info', truncatedClient],
    ],
  );
  t.ok(
    added.every((o) => o.invokeTime < 100 && o.completeTime === undefined),
    'invoked before the first recorded op, never completed',
  );
  t.same(h.source.slice(ops.length), [null, null], 'synthetic ops have no source');
});

t.test('the report says when the verdict is unknown and when the history was truncated', async (t) => {
  const h = toLincheckHistory([op({ kind: 'read', result: 'x' })], true);
  const stats = { ops: 2, partitions: 1, configurations: 5, backtracks: 0 };
  const cases = [
    {
      name: 'budget ran out',
      result: {
        verdict: 'unknown',
        reason: 'timeout',
        note: 'the time budget ran out with 0 of 1 keys decided (linearizable)',
        stats,
      } as const,
      linearizable: null,
      note: /verdict unknown: the time budget ran out.*history truncated: the oldest 7 operations/,
    },
    {
      name: 'search limit',
      result: { verdict: 'unknown', reason: 'limit', note: 'too many', stats } as const,
      linearizable: null,
      note: /search hit its limit/,
    },
    {
      name: 'linearizable but truncated',
      result: { verdict: 'linearizable', stats } as const,
      linearizable: true,
      note: /^history truncated: .* 1 unknown-outcome writes stand in/,
    },
  ];
  for (const c of cases) {
    const r = linearizabilityReport('cid', 1, 7, h, c.result, 12.4);
    t.equal(r.linearizable, c.linearizable, c.name);
    t.match(r.note, c.note, `${c.name}: the note explains`);
    t.match(r, { cluster_id: 'cid', ops: 1, history_dropped: 7, checked_ops: 2, keys: 1, elapsed_ms: 12 });
  }
});

t.test('quorum overlap is stated per strategy', async (t) => {
  const base = {
    node_count: 5,
    replication_mode: 'async',
    conflict_resolver: 'lww',
    quorum_n: 3,
    quorum_w: 2,
    quorum_r: 2,
    regions: 1,
    inter_region_latency_ms: 80,
    consistency_level: 'quorum',
    read_repair_mode: 'async',
    sloppy_quorum: false,
  } as const;
  const cases = [
    { name: 'leaderless W+R>N overlaps', cfg: { ...base, strategy: 'leaderless' as const }, ok: true, applies: true },
    {
      name: 'leaderless W+R=N does not',
      cfg: { ...base, strategy: 'leaderless' as const, quorum_w: 1 },
      ok: false,
      applies: true,
    },
    { name: 'raft majorities always overlap', cfg: { ...base, strategy: 'raft' as const }, ok: true, applies: true },
    {
      name: 'single_leader has no read quorum',
      cfg: { ...base, strategy: 'single_leader' as const },
      ok: true,
      applies: false,
    },
    {
      name: 'multi_leader has no read quorum',
      cfg: { ...base, strategy: 'multi_leader' as const },
      ok: true,
      applies: false,
    },
  ];
  for (const c of cases) {
    const q = quorumOverlap(c.cfg, 5);
    t.equal(q.ok, c.ok, c.name);
    t.equal(q.applies, c.applies, `${c.name} (applies)`);
    t.ok(q.detail.length > 20, `${c.name}: explained`);
  }
});

t.test('the add-node plan widens, joins and narrows with every neighbouring pair of quorums overlapping', async (t) => {
  const cases: Array<{ old: Quorum; members: number; widen: Quorum; joint: Quorum; final: Quorum }> = [
    { old: [3, 2, 2], members: 5, widen: [4, 3, 3], joint: [4, 3, 3], final: [4, 2, 3] },
    { old: [3, 3, 1], members: 3, widen: [4, 3, 2], joint: [4, 4, 2], final: [4, 3, 2] },
    { old: [3, 1, 3], members: 3, widen: [4, 2, 3], joint: [4, 2, 4], final: [4, 2, 3] },
    { old: [5, 3, 3], members: 5, widen: [6, 4, 4], joint: [6, 4, 4], final: [6, 3, 4] },
    { old: [1, 1, 1], members: 1, widen: [2, 1, 1], joint: [2, 2, 2], final: [2, 1, 2] },
  ];
  for (const c of cases) {
    const p = addNodePlan(c.old, c.members);
    const name = `N${c.old[0]}W${c.old[1]}R${c.old[2]} on ${c.members}`;
    t.same([p.widen, p.joint, p.final], [c.widen, c.joint, c.final], `${name}: the phases' quorums`);
    t.ok(p.overlapHeld, `${name}: overlap held (${p.checks.join('; ')})`);
    t.equal(p.final[1] + p.final[2] - p.final[0], c.old[1] + c.old[2] - c.old[0], `${name}: the margin W+R-N is kept`);
  }
  t.notOk(transitionOverlaps([3, 2, 2], [3, 2, 2], 5, true), 'adding a node under the old quorum alone leaves a gap');
  t.notOk(transitionOverlaps([3, 2, 2], [4, 2, 2], 5, false), 'raising N without raising W or R leaves a gap');
});

t.test('the leaderless set_quorum control accepts only quorums that overlap themselves', async (t) => {
  const config: ClusterConfig = {
    strategy: 'leaderless',
    node_count: 5,
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
  const core = createLeaderlessCore({
    id: 'n1',
    cluster_id: 'c',
    peers: ['n1', 'n2', 'n3', 'n4', 'n5'],
    config,
    timings: defaultTimings,
    rng: new SeededRng(1),
    now: 0,
  });
  const set = (args: unknown) => core.control({ kind: 'custom', name: 'set_quorum', args }, 1);
  const cases: Array<{ args: unknown; ok: boolean; error?: RegExp }> = [
    { args: { n: 4, w: 3, r: 3 }, ok: true },
    { args: { n: 4, w: 2, r: 2 }, ok: false, error: /W \+ R > N/ },
    { args: { n: 3, w: 4, r: 1 }, ok: false, error: /at most n/ },
    { args: { n: 3, w: 2 }, ok: false, error: /positive integers/ },
    { args: { n: 4, w: 2, r: 3 }, ok: true },
  ];
  for (const c of cases) {
    const r = set(c.args);
    t.equal(r.ok, c.ok, `set_quorum ${JSON.stringify(c.args)}`);
    if (c.error) t.match(r.error, c.error, 'with a reason');
  }
  t.same(
    core.control({ kind: 'custom', name: 'quorum' }, 2).data,
    { n: 4, w: 2, r: 3 },
    'the last accepted quorum is in force',
  );
  t.equal(config.quorum_n, 3, 'the shared config object is not changed (each core keeps a copy)');
});

t.test('Merkle trees are compared top-down, descending only into differing subtrees', async (t) => {
  const v = (key: string, value: string, tombstone = false): Version => ({
    key,
    value,
    tombstone,
    timestamp: 1,
    node_id: 'n1',
    version: 1,
    vclock: {},
  });
  const a: Record<string, Version> = {};
  for (let i = 0; i < 200; i++) a[`k${i}`] = v(`k${i}`, `v${i}`);
  const b = { ...a, k7: v('k7', 'other') };
  const keys = Object.keys(a);
  const ta = replicaTree(a, keys);
  t.equal(ta.length, Math.log2(merkleBuckets) + 1, 'a level per halving plus the leaves');
  t.equal(ta[ta.length - 1]?.[0], merkleRoot(ta[0] as string[]), 'the root is dynamo/merkle.ts merkleRoot');
  t.same(
    compareTrees(ta, replicaTree({ ...a }, keys)),
    { nodesCompared: 1, divergentLeaves: [] },
    'equal roots end the comparison',
  );
  const d = compareTrees(ta, replicaTree(b, keys));
  t.equal(d.divergentLeaves.length, 1, 'one key differs: one leaf range to exchange');
  t.equal(
    d.nodesCompared,
    1 + 2 * Math.log2(merkleBuckets),
    'the root, then both children at each level down one path',
  );
  t.same(compareTrees(merkleTree([]), merkleTree([])), { nodesCompared: 1, divergentLeaves: [] }, 'empty trees agree');

  const members = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const key = 'ring-key';
  const pl = preferenceList(key, 3, members);
  const outsider = members.find((m) => !pl.includes(m)) as string;
  const stores = members.map((m) => ({ node: m, store: pl.includes(m) ? { [key]: v(key, 'x') } : {} }));
  t.ok(
    compareReplicas(stores, { kind: 'ring', n: 3, members }).converged,
    'on a ring, replicas outside the preference list are not compared',
  );
  t.notOk(compareReplicas(stores, { kind: 'full' }).converged, 'with full replication they are');
  const tomb = members.map((m) => ({ node: m, store: m === pl[0] ? { [key]: v(key, '', true) } : {} }));
  const cmp = compareReplicas(tomb, { kind: 'ring', n: 3, members });
  t.equal(cmp.divergedTotal, 1, 'a tombstone and a missing key differ');
  t.same(cmp.diverged[0]?.states[pl[0] as string], 'tombstone');
  t.same(cmp.diverged[0]?.states[pl[1] as string], 'absent');
  t.notOk(outsider in (cmp.diverged[0]?.values ?? {}), 'the outsider is not listed');
});

// ------------------------------------------------------------------ through the server

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';
const text = (b64: string) => Buffer.from(b64, 'base64').toString();

async function cluster(body: Record<string, unknown>): Promise<any> {
  const r = await c.post(`${V}/clusters`, body);
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r.body;
}
const drop = (id: string) => c.del(`${V}/clusters/${id}`);
const write = (id: string, key: string, value: string, target?: string) =>
  c.post(`${V}/clusters/${id}/write`, { key, value, ...(target ? { target_node_id: target } : {}) });
const read = (id: string, key: string, node?: string) =>
  c.get(`${V}/clusters/${id}/read?key=${encodeURIComponent(key)}${node ? `&node_id=${node}` : ''}`);
const valueOf = async (id: string, key: string, node?: string): Promise<string | null> => {
  const r = await read(id, key, node);
  return r.status === 200 ? text(r.body.entry.value) : null;
};

t.test('every checker route answers 404 for an unknown cluster', async (t) => {
  const id = '00000000-0000-4000-8000-000000000000';
  const routes: Array<[string, string]> = [
    ['GET', 'convergence'],
    ['GET', 'linearizable'],
    ['GET', 'invariants'],
    ['POST', 'anti-entropy'],
    ['POST', 'reconfigure/add-node'],
  ];
  for (const [method, path] of routes) {
    const r =
      method === 'GET' ? await c.get(`${V}/clusters/${id}/${path}`) : await c.post(`${V}/clusters/${id}/${path}`);
    t.equal(r.status, 404, `${method} ${path}`);
    t.match(r.body.error, /not found/, `${method} ${path} says what was not found`);
  }
  const r = await c.post(`${V}/clusters/${id}/nodes/n1/corrupt`, { key: 'k', value: 'v' });
  t.equal(r.status, 404, 'the corrupt route too');
});

t.test('sequential operations on a sync single-leader cluster and on a raft cluster are linearizable', async (t) => {
  for (const cfg of [{ strategy: 'single_leader', replication_mode: 'sync' }, { strategy: 'raft' }]) {
    const d = await cluster({ ...cfg, node_count: 3 });
    if (cfg.strategy === 'raft')
      await eventually(async () => (await c.get(`${V}/clusters/${d.id}/state`)).body.leader_id, 5000);
    const readers: Array<string | undefined> = cfg.strategy === 'raft' ? [undefined] : ['n1', 'n2', 'n3'];
    let n = 0;
    for (let i = 0; i < 6; i++) {
      const key = `k${i % 2}`;
      t.equal((await write(d.id, key, `v${i}`)).status, 200, `${cfg.strategy}: write ${i}`);
      for (const node of readers) {
        t.equal(await valueOf(d.id, key, node), `v${i}`, `${cfg.strategy}: read ${key} at ${node ?? 'the leader'}`);
        n++;
      }
    }
    t.equal((await c.del(`${V}/clusters/${d.id}/kv?key=k0`)).status, 200, 'a delete');
    t.equal((await read(d.id, 'k0')).status, 404, 'then not found');
    const r = await c.get(`${V}/clusters/${d.id}/linearizable`);
    t.equal(r.status, 200, `${cfg.strategy}: the checker answers`);
    t.match(
      r.body,
      { cluster_id: d.id, linearizable: true, verdict: 'linearizable', ops: 6 + n + 2, keys: 2 },
      `${cfg.strategy}: linearizable`,
    );
    t.notOk('violation' in r.body, 'no violation');
    t.equal(
      (await c.get(`${V}/clusters/${d.id}/linearizable?timeout_ms=0`)).status,
      400,
      'a time budget below 1 ms is 400',
    );
    const inv = (await c.get(`${V}/clusters/${d.id}/invariants`)).body;
    t.match(
      inv,
      { cluster_id: d.id, ok: true, converged: true, linearizable: true, violations: [] },
      `${cfg.strategy}: invariants hold`,
    );
    t.match(
      inv.checks,
      { convergence: { ok: true }, linearizability: { ok: true }, quorum_overlap: { ok: true } },
      'every check passes',
    );
    t.equal(
      inv.checks.quorum_overlap.applies,
      cfg.strategy === 'raft',
      'quorum overlap applies to raft, not to single_leader',
    );
    await drop(d.id);
  }
});

t.test('an async single-leader read from a lagging follower is shown not linearizable, naming the read', async (t) => {
  const d = await cluster({ strategy: 'single_leader', replication_mode: 'async', node_count: 3 });
  t.equal((await write(d.id, 'lag', 'v1')).status, 200, 'first write');
  // Waits on the store view, which is not a client read (a read before replication would itself be a violation).
  await eventually(async () => (await c.get(`${V}/clusters/${d.id}/nodes/n2/store`)).body.lag !== undefined, 3000);
  t.equal(
    (await c.post(`${V}/clusters/${d.id}/network/latency`, { from: 'n1', to: 'n2', ms: 500 })).status,
    200,
    'n1 -> n2 now takes 500 ms',
  );
  t.equal((await write(d.id, 'lag', 'v2')).status, 200, 'the async write is acknowledged by the leader at once');
  t.equal(await valueOf(d.id, 'lag', 'n2'), 'v1', 'the lagging follower still answers the old value');
  const r = (await c.get(`${V}/clusters/${d.id}/linearizable`)).body;
  t.match(r, { cluster_id: d.id, linearizable: false, verdict: 'not-linearizable' });
  const v = r.violation;
  t.match(
    v,
    { key: 'lag', op: { kind: 'read', node: 'n2', value: 'v1', outcome: 'ok' } },
    'the offending read, where and what it saw',
  );
  t.ok(
    typeof v.op.invoke_ms === 'number' && v.op.complete_ms >= v.op.invoke_ms,
    'with its invoke and completion times',
  );
  t.match(v.message, /cannot be linearized/, 'the message says the read cannot be placed');
  t.ok(
    Array.isArray(v.linearizable_prefix) && v.linearizable_prefix.some((l: string) => /write "v2"/.test(l)),
    'the linearizable prefix ends with the write it missed',
  );
  t.equal(v.state_after, 'v2');
  const inv = (await c.get(`${V}/clusters/${d.id}/invariants`)).body;
  t.equal(inv.ok, false, 'the invariants fail');
  t.equal(inv.linearizable, false, 'because of linearizability');
  t.match(inv.violations.join('\n'), /linearizability: .*read -> "v1"/);
  await drop(d.id);
});

t.test('convergence lists diverged keys during a partition and converges after healing', async (t) => {
  const d = await cluster({ strategy: 'multi_leader', node_count: 3 });
  const p = await c.post(`${V}/clusters/${d.id}/network/partition`, { group_a: ['n1'], group_b: ['n2', 'n3'] });
  t.equal(p.status, 201, 'partition created');
  t.equal((await write(d.id, 'a', 'left', 'n1')).status, 200, 'a write on the minority side');
  t.equal((await write(d.id, 'b', 'right', 'n2')).status, 200, 'a write on the majority side');
  await sleep(100);
  const during = (await c.get(`${V}/clusters/${d.id}/convergence`)).body;
  t.match(during, { cluster_id: d.id, converged: false, keys: 2, diverged_total: 2 }, 'two keys diverged');
  const byKey = Object.fromEntries(during.diverged.map((x: any) => [x.key, x]));
  t.same(byKey.a.values, { n1: 'left', n2: null, n3: null }, "each node's value of a");
  t.same(byKey.a.states, { n1: 'value', n2: 'absent', n3: 'absent' });
  t.same(byKey.b.values, { n1: null, n2: 'right', n3: 'right' }, "each node's value of b");
  const inv = (await c.get(`${V}/clusters/${d.id}/invariants`)).body;
  t.match(inv, { ok: false, converged: false });
  t.match(inv.violations[0], /convergence: 2 of 2 keys differ/);
  t.equal((await c.del(`${V}/clusters/${d.id}/network/partition/${p.body.partition_id}`)).status, 204);
  const ae = (await c.post(`${V}/clusters/${d.id}/anti-entropy`)).body;
  t.match(
    ae,
    { total_keys: 2, converged_after: true, still_divergent: 0, method: 'merkle_exchange' },
    'an anti-entropy round brings the sides together',
  );
  t.equal(ae.reconciled, ae.divergent_keys, 'whatever still differed after the heal was reconciled');
  const healed = await eventually(async () => {
    const r = (await c.get(`${V}/clusters/${d.id}/convergence`)).body;
    return r.converged ? r : undefined;
  }, 5000);
  t.match(healed, { converged: true, keys: 2, diverged: [], replicas: ['n1', 'n2', 'n3'] }, 'converged after healing');
  await c.post(`${V}/clusters/${d.id}/nodes/n3/pause`);
  const paused = (await c.get(`${V}/clusters/${d.id}/convergence`)).body;
  t.same(paused.replicas, ['n1', 'n2'], 'a paused node is not compared');
  t.match(paused.note, /n3 \(paused\)/, 'and the note says so');
  await drop(d.id);
});

t.test('anti-entropy repairs corrupted leaderless replicas by exchanging only differing Merkle ranges', async (t) => {
  const d = await cluster({ strategy: 'leaderless', node_count: 5, quorum_n: 3, quorum_w: 2, quorum_r: 2 });
  const keys = Array.from({ length: 20 }, (_, i) => `item${i}`);
  for (const k of keys) t.equal((await write(d.id, k, `good-${k}`)).status, 200, `write ${k}`);
  const clean = await eventually(async () => {
    const r = (await c.get(`${V}/clusters/${d.id}/convergence`)).body;
    return r.converged && r.keys === keys.length ? r : undefined;
  }, 5000);
  t.match(
    clean.note,
    /N=3 preferred replicas that are online/,
    'leaderless convergence compares preference lists, and says so',
  );
  const bad = await c.post(`${V}/clusters/${d.id}/nodes/n9/corrupt`, { key: 'item0', value: 'x' });
  t.equal(bad.status, 404, 'an unknown node is 404');
  for (const k of keys) {
    const pl = (await c.get(`${V}/clusters/${d.id}/placement?key=${k}&n=3`)).body.preference_list as string[];
    const r = await c.post(`${V}/clusters/${d.id}/nodes/${pl[0]}/corrupt`, { key: k, value: `bad-${k}` });
    t.equal(r.status, 200, `corrupt ${k} on ${pl[0]}`);
    t.equal(text(r.body.entry.value), `bad-${k}`);
  }
  const ae = await c.post(`${V}/clusters/${d.id}/anti-entropy`);
  t.equal(ae.status, 200, 'the round answers');
  t.match(ae.body, {
    cluster_id: d.id,
    total_keys: keys.length,
    converged_after: true,
    still_divergent: 0,
    method: 'merkle_exchange',
  });
  t.ok(ae.body.divergent_keys >= 1, `divergent keys found (${ae.body.divergent_keys})`);
  t.equal(ae.body.reconciled, ae.body.divergent_keys, 'every divergent key reconciled');
  t.ok(
    ae.body.rounds >= 1 && ae.body.trees_compared > 0 && ae.body.divergent_leaves >= 1,
    'Merkle trees compared, differing leaves found',
  );
  t.ok(ae.body.divergent_leaves < ae.body.trees_compared * 64, 'only some leaf ranges differ');
  for (const k of keys) t.equal(await valueOf(d.id, k), `good-${k}`, `${k} reads its good value`);
  t.ok((await c.get(`${V}/clusters/${d.id}/convergence`)).body.converged, 'converged');
  await drop(d.id);
});

t.test('on single_leader anti-entropy reports the divergence and waits for the leader log to repair it', async (t) => {
  const d = await cluster({ strategy: 'single_leader', replication_mode: 'async', node_count: 3 });
  t.equal(
    (await c.post(`${V}/clusters/${d.id}/network/drop`, { from: 'n1', to: 'n3', rate: 1 })).status,
    200,
    'everything n1 sends n3 is dropped',
  );
  for (const k of ['x', 'y', 'z']) t.equal((await write(d.id, k, k)).status, 200, `write ${k}`);
  await sleep(100);
  const stuck = (await c.post(`${V}/clusters/${d.id}/anti-entropy?wait_ms=300`)).body;
  t.match(stuck, {
    total_keys: 3,
    divergent_keys: 3,
    reconciled: 0,
    converged_after: false,
    still_divergent: 3,
    method: 'log_repair',
    rounds: 0,
  });
  t.match(stuck.note, /still differ/);
  t.equal((await c.post(`${V}/clusters/${d.id}/anti-entropy?wait_ms=abc`)).status, 400, 'a bad wait_ms is 400');
  t.equal(
    (await c.post(`${V}/clusters/${d.id}/nodes/n1/corrupt`, { key: 'x', value: 'y' })).status,
    400,
    'corrupt is leaderless only',
  );
  await c.del(`${V}/clusters/${d.id}/network/faults`);
  const repaired = (await c.post(`${V}/clusters/${d.id}/anti-entropy`)).body;
  t.match(
    repaired,
    { total_keys: 3, converged_after: true, still_divergent: 0 },
    'the log repaired the follower once the link works',
  );
  await drop(d.id);
});

t.test(
  'add-node changes a leaderless cluster with no quorum gap: every acknowledged write stays readable',
  async (t) => {
    const other = await cluster({ strategy: 'raft', node_count: 3 });
    const refused = await c.post(`${V}/clusters/${other.id}/reconfigure/add-node`);
    t.equal(refused.status, 400, 'leaderless only');
    t.match(refused.body.error, /leaderless clusters only/);
    await drop(other.id);

    const d = await cluster({ strategy: 'leaderless', node_count: 5, quorum_n: 3, quorum_w: 2, quorum_r: 2 });
    const nodes = ['n1', 'n2', 'n3', 'n4', 'n5'];
    for (let i = 0; i < 30; i++)
      t.equal((await write(d.id, `pre${i}`, `p${i}`, nodes[i % 5])).status, 200, `preload pre${i}`);
    const acked = new Map<string, string>();
    const unreadable: string[] = [];
    let reads = 0;
    let running = true;
    const writer = (async () => {
      for (let i = 0; running; i++) {
        const key = `during${i}`;
        const w = await write(d.id, key, `d${i}`, nodes[i % 5]);
        if (w.status !== 200) continue;
        acked.set(key, `d${i}`);
        // Read it back at once through another coordinator: an acknowledged write must be visible.
        const r = await read(d.id, key, nodes[(i + 2) % 5]);
        if (r.status === 200 ? text(r.body.entry.value) !== `d${i}` : /key not found/.test(r.body.error))
          unreadable.push(`${key} (${r.status})`);
      }
    })();
    const reader = (async () => {
      for (let i = 0; running; i++) {
        const r = await read(d.id, `pre${i % 30}`, nodes[i % 5]);
        reads++;
        if (r.status === 200 ? text(r.body.entry.value) !== `p${i % 30}` : /key not found/.test(r.body.error))
          unreadable.push(`pre${i % 30} (${r.status})`);
      }
    })();
    const rep = await c.post(`${V}/clusters/${d.id}/reconfigure/add-node`);
    running = false;
    await Promise.all([writer, reader]);
    t.equal(rep.status, 200, rep.text);
    const b = rep.body;
    t.match(b, {
      cluster_id: d.id,
      added_node: 'n6',
      old_quorum: [3, 2, 2],
      new_quorum: [4, 2, 3],
      overlap_held: true,
    });
    t.same(
      b.phases.map((p: string) => p.split(':')[0]),
      ['widen', 'join', 'stream', 'narrow'],
      'four phases, in order',
    );
    t.ok(b.reconciled > 0, `the new node received its keys (${b.reconciled})`);
    t.ok(acked.size > 5 && reads > 5, `load ran during the change (${acked.size} writes acknowledged, ${reads} reads)`);
    t.same(unreadable, [], 'no acknowledged write was unreadable during the change');
    const expected: Array<[string, string, string]> = [...acked].map(([k, v], i) => [k, v, nodes[i % 5] as string]);
    for (let i = 0; i < 30; i++) expected.push([`pre${i}`, `p${i}`, 'n6']);
    const wrong: string[] = [];
    for (let i = 0; i < expected.length; i += 16) {
      await Promise.all(
        expected.slice(i, i + 16).map(async ([key, value, node]) => {
          const got = await valueOf(d.id, key, node);
          if (got !== value) wrong.push(`${key} at ${node}: ${got}`);
        }),
      );
    }
    t.same(
      wrong,
      [],
      `all ${expected.length} keys read back their acknowledged value afterwards, some through the new node`,
    );
    const st = (await c.get(`${V}/clusters/${d.id}/state`)).body;
    t.match(st.config, { quorum_n: 4, quorum_w: 2, quorum_r: 3 }, 'the cluster shows the new quorum');
    t.ok(st.node_ids.includes('n6'));
    const conv = await eventually(async () => {
      const r = (await c.get(`${V}/clusters/${d.id}/convergence`)).body;
      return r.converged ? r : undefined;
    }, 5000);
    t.match(conv.note, /N=4 preferred replicas/, 'convergence now compares four replicas per key');
    const inv = (await c.get(`${V}/clusters/${d.id}/invariants`)).body;
    t.match(inv.checks.quorum_overlap, { ok: true, applies: true });
    t.match(inv.checks.quorum_overlap.detail, /N=4 W=2 R=3/);
    await drop(d.id);
  },
);
