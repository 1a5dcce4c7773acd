/**
 * Black-box tests of leaderless (Dynamo-style) and multi-leader clusters through the real server.
 */
import t from 'tap';
import { api, eventually, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

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
const storeOf = async (id: string, node: string) => (await c.get(`${V}/clusters/${id}/nodes/${node}/store`)).body;
const placement = async (id: string, key: string, n = 3): Promise<string[]> =>
  (await c.get(`${V}/clusters/${id}/placement?key=${encodeURIComponent(key)}&n=${n}`)).body.preference_list;

t.test('leaderless creation enforces W + R > N and fills quorum defaults', async (t) => {
  const d = await cluster({ strategy: 'leaderless' });
  t.equal(d.node_ids.length, 5, 'leaderless defaults to 5 nodes');
  t.match(d.config, {
    quorum_n: 3,
    quorum_w: 2,
    quorum_r: 2,
    sloppy_quorum: true,
    read_repair_mode: 'async',
    consistency_level: 'quorum',
  });
  t.equal(d.nodes.n1.role, 'replica');
  t.notOk('leader_id' in d, 'no leader on a leaderless cluster');
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ quorum_n: 3, quorum_w: 1, quorum_r: 2 }, /quorum_w \+ quorum_r must be greater than quorum_n/],
    [{ quorum_n: 6 }, /quorum_n must be between 1 and node_count \(5\)/],
    [{ quorum_n: 3, quorum_w: 4 }, /quorum_w must be between 1 and quorum_n \(3\)/],
    [{ quorum_n: 3, quorum_r: 0, quorum_w: 3 }, /quorum_r must be between 1 and quorum_n/],
    [{ consistency_level: 'all' }, /consistency_level: must be one of/],
    [{ read_repair_mode: 'eager' }, /read_repair_mode: must be one of/],
  ];
  for (const [extra, re] of bad) {
    const r = await c.post(`${V}/clusters`, { strategy: 'leaderless', ...extra });
    t.equal(r.status, 400, `${JSON.stringify(extra)} is refused`);
    t.match(r.body.error, re);
  }
});

t.test('placement returns a deterministic preference list of n distinct nodes', async (t) => {
  const d = await cluster({ strategy: 'leaderless', node_count: 6 });
  const a = await placement(d.id, 'user:42', 3);
  t.equal(a.length, 3);
  t.equal(new Set(a).size, 3, 'distinct nodes');
  t.same(await placement(d.id, 'user:42', 3), a, 'the same key gives the same list');
  t.same((await placement(d.id, 'user:42', 5)).slice(0, 3), a, 'a longer list extends the shorter one');
  const def = (await c.get(`${V}/clusters/${d.id}/placement?key=user:42`)).body;
  t.equal(def.preference_list.length, 3, 'n defaults to 3');
  t.equal(def.key, 'user:42');
  t.equal((await c.get(`${V}/clusters/${d.id}/placement?key=x&n=0`)).status, 400, 'n=0 is 400');
  t.equal((await c.get(`${V}/clusters/${d.id}/placement?key=x&n=abc`)).status, 400, 'a non-integer n is 400');
  t.equal((await c.get(`${V}/clusters/${d.id}/placement?key=x&n=7`)).status, 400, 'n above the node count is 400');
});

t.test('quorum writes succeed with W acks and fail, counted, without them', async (t) => {
  const d = await cluster({
    strategy: 'leaderless',
    node_count: 3,
    quorum_n: 3,
    quorum_w: 3,
    quorum_r: 1,
    sloppy_quorum: false,
  });
  const ok = await c.post(`${V}/clusters/${d.id}/write`, { key: 'q', value: 'v1' });
  t.equal(ok.status, 200, 'W=3 with every replica up');
  const coordinator = 'n1';
  const victim = (await placement(d.id, 'q')).find((n) => n !== coordinator) as string;
  await c.post(`${V}/clusters/${d.id}/nodes/${victim}/pause`);
  const fail = await c.post(`${V}/clusters/${d.id}/write`, { key: 'q', value: 'v2' });
  t.equal(fail.status, 409, 'W=3 with a replica paused fails');
  t.match(fail.body.error, /write quorum not met: 2\/3 acks/, 'the message says how many acks');
  const metrics = (await c.get('/metrics')).text;
  t.match(
    metrics,
    new RegExp(`sim_quorum_failures_total\\{cluster_id="${d.id}"\\} 1`),
    'counted in sim_quorum_failures_total',
  );
  const r = await c.get(`${V}/clusters/${d.id}/read?key=q`);
  t.equal(r.status, 200, 'R=1 reads still work');
  t.equal((await c.get(`${V}/clusters/${d.id}/read?key=nothing`)).status, 404, 'an unknown key is 404');
});

t.test(
  'sloppy quorum keeps writes going with a stand-in, and hinted handoff delivers to the resumed owner',
  async (t) => {
    for (const sloppy of [true, false]) {
      const d = await cluster({
        strategy: 'leaderless',
        node_count: 5,
        quorum_n: 3,
        quorum_w: 3,
        quorum_r: 1,
        sloppy_quorum: sloppy,
      });
      const key = 'hinted';
      const prefs = await placement(d.id, key);
      const coordinator = prefs[0] as string;
      const owner = prefs[2] as string;
      await c.post(`${V}/clusters/${d.id}/nodes/${owner}/pause`);
      const w = await c.post(`${V}/clusters/${d.id}/write`, { key, value: 'v', target_node_id: coordinator });
      if (!sloppy) {
        t.equal(w.status, 409, 'with sloppy_quorum false the same write fails');
        continue;
      }
      t.equal(w.status, 200, 'with sloppy quorum the write succeeds with a stand-in');
      t.equal((await storeOf(d.id, owner))[key], undefined, 'the paused owner does not have it yet');
      await c.post(`${V}/clusters/${d.id}/nodes/${owner}/resume`);
      await eventually(async () => (await storeOf(d.id, owner))[key] !== undefined, 5000);
      t.pass('hinted handoff delivered the value to the owner after it resumed');
    }
  },
);

t.test('read repair fixes stale replicas in async, sync and digest modes', async (t) => {
  for (const mode of ['async', 'sync', 'digest']) {
    const d = await cluster({
      strategy: 'leaderless',
      node_count: 3,
      quorum_n: 3,
      quorum_w: 2,
      quorum_r: 3,
      read_repair_mode: mode,
      sloppy_quorum: false,
    });
    const key = `rr-${mode}`;
    await c.post(`${V}/clusters/${d.id}/write`, { key, value: 'old', target_node_id: 'n1' });
    await eventually(async () => (await storeOf(d.id, 'n3'))[key] !== undefined);
    // n3 misses the overwrite (its inbound links drop everything), then rejoins.
    await c.post(`${V}/clusters/${d.id}/network/drop`, { from: 'n1', to: 'n3', rate: 1 });
    await c.post(`${V}/clusters/${d.id}/network/drop`, { from: 'n2', to: 'n3', rate: 1 });
    t.equal(
      (await c.post(`${V}/clusters/${d.id}/write`, { key, value: 'new', target_node_id: 'n1' })).status,
      200,
      `${mode}: overwrite with W=2`,
    );
    await sleep(150);
    t.equal(text((await storeOf(d.id, 'n3'))[key].value), 'old', `${mode}: n3 is stale`);
    await c.del(`${V}/clusters/${d.id}/network/faults`);
    const r = await c.get(`${V}/clusters/${d.id}/read?key=${key}&node_id=n1`);
    t.equal(text(r.body.entry.value), 'new', `${mode}: the read returns the newest version`);
    await eventually(async () => text((await storeOf(d.id, 'n3'))[key].value) === 'new', 3000);
    t.pass(`${mode}: read repair fixed the stale replica`);
  }
});

t.test('local_quorum succeeds across a region partition where quorum fails', async (t) => {
  const body = {
    strategy: 'leaderless',
    node_count: 6,
    regions: 2,
    quorum_n: 6,
    quorum_w: 4,
    quorum_r: 3,
    inter_region_latency_ms: 20,
    sloppy_quorum: false,
  };
  const q = await cluster({ ...body, consistency_level: 'quorum' });
  const l = await cluster({ ...body, consistency_level: 'local_quorum' });
  t.same(q.node_regions, { n1: 0, n2: 0, n3: 0, n4: 1, n5: 1, n6: 1 }, 'nodes are split across regions');
  for (const d of [q, l]) {
    const regions = d.node_regions as Record<string, number>;
    const a = Object.keys(regions).filter((n) => regions[n] === 0);
    const b = Object.keys(regions).filter((n) => regions[n] === 1);
    await c.post(`${V}/clusters/${d.id}/network/partition`, { group_a: a, group_b: b });
  }
  const wq = await c.post(`${V}/clusters/${q.id}/write`, { key: 'geo', value: 'v', target_node_id: 'n1' });
  t.equal(wq.status, 409, 'quorum (W=4 of 6) cannot be met inside one region');
  const wl = await c.post(`${V}/clusters/${l.id}/write`, { key: 'geo', value: 'v', target_node_id: 'n1' });
  t.equal(wl.status, 200, "local_quorum succeeds within the coordinator's region");
});

t.test('a paused node becomes suspected; healthy ones are not', async (t) => {
  const d = await cluster({ strategy: 'leaderless', node_count: 4 });
  await sleep(800);
  const before = (await c.get(`${V}/clusters/${d.id}/suspicion`)).body;
  t.type(before.threshold, 'number');
  t.ok(
    Object.values(before.nodes).every((n: any) => n.suspected === false),
    'nobody is suspected while healthy',
  );
  await c.post(`${V}/clusters/${d.id}/nodes/n3/pause`);
  const after = await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${d.id}/suspicion`)).body;
    return s.nodes.n3.suspected ? s : undefined;
  }, 5000);
  t.ok(after.nodes.n3.phi >= after.threshold, `phi ${after.nodes.n3.phi} passed the threshold`);
  t.notOk(after.nodes.n2.suspected, 'a healthy node stays unsuspected');
  const sl = await cluster({ strategy: 'single_leader' });
  t.equal(
    (await c.get(`${V}/clusters/${sl.id}/suspicion`)).status,
    400,
    'suspicion on a single_leader cluster says it does not apply',
  );
});

t.test('adding a node extends the ring and moves the right keys to it', async (t) => {
  const d = await cluster({ strategy: 'leaderless', node_count: 4, quorum_n: 2, quorum_w: 2, quorum_r: 1 });
  for (let i = 0; i < 40; i++) await c.post(`${V}/clusters/${d.id}/write`, { key: `ring${i}`, value: String(i) });
  const added = await c.post(`${V}/clusters/${d.id}/nodes`);
  t.equal(added.status, 201);
  const newId = added.body.id;
  const owned: string[] = [];
  for (let i = 0; i < 40; i++) if ((await placement(d.id, `ring${i}`, 2)).includes(newId)) owned.push(`ring${i}`);
  t.ok(owned.length > 0, `${owned.length} keys now belong to ${newId}`);
  await eventually(async () => {
    const s = await storeOf(d.id, newId);
    return owned.every((k) => s[k] !== undefined);
  }, 5000);
  t.pass('every key whose preference list now includes the new node was streamed to it');
});

t.test('multi-leader: concurrent writes are conflicts resolved by each resolver; causal pairs are not', async (t) => {
  const ws = await wsCollect(`ws://127.0.0.1:${srv.port}/ws`);
  t.teardown(() => ws.close());
  for (const resolver of ['lww', 'vector_clock', 'crdt'] as const) {
    const d = await cluster({ strategy: 'multi_leader', conflict_resolver: resolver });
    t.equal(d.nodes.n1.role, 'primary');
    const p = await c.post(`${V}/clusters/${d.id}/network/partition`, { group_a: ['n1'], group_b: ['n2', 'n3'] });
    const v1 = resolver === 'crdt' ? JSON.stringify({ crdt: 'g_counter', op: 'inc', by: 2 }) : 'from-n1';
    const v2 = resolver === 'crdt' ? JSON.stringify({ crdt: 'g_counter', op: 'inc', by: 3 }) : 'from-n2';
    t.equal((await c.post(`${V}/clusters/${d.id}/write`, { key: 'k', value: v1, target_node_id: 'n1' })).status, 200);
    t.equal((await c.post(`${V}/clusters/${d.id}/write`, { key: 'k', value: v2, target_node_id: 'n2' })).status, 200);
    await c.del(`${V}/clusters/${d.id}/network/partition/${p.body.partition_id}`);
    await ws.waitFor((m) => m.type === 'conflict_detected' && m.cluster_id === d.id, 5000);
    t.pass(`${resolver}: conflict_detected event`);
    const stores = await eventually(async () => {
      const all = await Promise.all(['n1', 'n2', 'n3'].map((n) => storeOf(d.id, n)));
      const vals = all.map((s) => s.k?.value);
      return vals.every((v) => v !== undefined && v === vals[0]) ? all : undefined;
    }, 5000);
    t.ok(stores, `${resolver}: every replica converged on one value`);
    if (resolver === 'lww')
      t.ok(['from-n1', 'from-n2'].includes(text(stores[0].k.value)), 'lww keeps one of the writes');
    if (resolver === 'crdt') t.match(text(stores[0].k.value), /"g_counter"/, 'crdt keeps a merged counter');
    const metrics = (await c.get('/metrics')).text;
    t.match(
      metrics,
      new RegExp(`sim_conflicts_total\\{cluster_id="${d.id}",resolver="${resolver}"\\} [1-9]`),
      `${resolver}: counted in sim_conflicts_total`,
    );
  }
  const seq = await cluster({ strategy: 'multi_leader', conflict_resolver: 'lww' });
  await c.post(`${V}/clusters/${seq.id}/write`, { key: 's', value: 'first', target_node_id: 'n1' });
  await eventually(async () => (await storeOf(seq.id, 'n2')).s !== undefined);
  await c.post(`${V}/clusters/${seq.id}/write`, { key: 's', value: 'second', target_node_id: 'n2' });
  await eventually(async () => text((await storeOf(seq.id, 'n3')).s?.value ?? '') === 'second');
  await sleep(200);
  t.notOk(
    ws.messages.some((m) => m.type === 'conflict_detected' && m.cluster_id === seq.id),
    'a causally ordered pair raises no conflict',
  );
});

t.test('multi-leader manual conflicts are listed and resolved; 409 when nothing is pending', async (t) => {
  const d = await cluster({ strategy: 'multi_leader', conflict_resolver: 'manual', node_count: 2 });
  const p = await c.post(`${V}/clusters/${d.id}/network/partition`, { group_a: ['n1'], group_b: ['n2'] });
  await c.post(`${V}/clusters/${d.id}/write`, { key: 'm', value: 'left', target_node_id: 'n1' });
  await c.post(`${V}/clusters/${d.id}/write`, { key: 'm', value: 'right', target_node_id: 'n2' });
  await c.del(`${V}/clusters/${d.id}/network/partition/${p.body.partition_id}`);
  const list = await eventually(async () => {
    const r = (await c.get(`${V}/clusters/${d.id}/conflicts`)).body;
    return r.conflicts.length > 0 ? r.conflicts : undefined;
  }, 5000);
  t.match(list[0], { key: 'm' }, 'the parked conflict is listed');
  t.ok(
    'local_value' in list[0] && 'remote_value' in list[0] && 'node_id' in list[0],
    'with node_id, local_value and remote_value',
  );
  const target = list[0].node_id;
  const res = await c.post(`${V}/clusters/${d.id}/conflicts/resolve`, { node_id: target, key: 'm', choice: 'remote' });
  t.equal(res.status, 200);
  t.match(res.body, { status: 'resolved', key: 'm', choice: 'remote' });
  const again = await c.post(`${V}/clusters/${d.id}/conflicts/resolve`, {
    node_id: target,
    key: 'nope',
    choice: 'local',
  });
  t.equal(again.status, 409, 'nothing pending is 409');
  t.equal(
    (await c.post(`${V}/clusters/${d.id}/conflicts/resolve`, { node_id: target, key: 'm', choice: 'both' })).status,
    400,
    'a bad choice is 400',
  );
});

t.test('multi-leader replicas converge after a partition heals with no further writes', async (t) => {
  const d = await cluster({ strategy: 'multi_leader', node_count: 4 });
  const p = await c.post(`${V}/clusters/${d.id}/network/partition`, { group_a: ['n1', 'n2'], group_b: ['n3', 'n4'] });
  for (let i = 0; i < 10; i++) {
    await c.post(`${V}/clusters/${d.id}/write`, { key: `a${i}`, value: 'left', target_node_id: 'n1' });
    await c.post(`${V}/clusters/${d.id}/write`, { key: `b${i}`, value: 'right', target_node_id: 'n4' });
  }
  await c.del(`${V}/clusters/${d.id}/network/partition/${p.body.partition_id}`);
  await eventually(async () => {
    const all = await Promise.all(['n1', 'n2', 'n3', 'n4'].map((n) => storeOf(d.id, n)));
    const sig = all.map((s) =>
      JSON.stringify(
        Object.keys(s)
          .sort()
          .map((k) => [k, s[k].value]),
      ),
    );
    return sig.every((x) => x === sig[0]) && Object.keys(all[0]).length === 20;
  }, 8000);
  t.pass('all four replicas hold the same 20 keys');
});
