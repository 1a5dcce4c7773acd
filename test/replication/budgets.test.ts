/**
 * Black-box tests of the memory budgets (issue 16): a per-node budget on stored bytes
 * (REPLSIM_NODE_MEMORY_MB) refusing writes past it with 507 {error} before the worker's heap runs
 * out (the OOM reproduction: large values into a single-leader cluster), and the whole-process cap
 * on live nodes (REPLSIM_MAX_NODES) refusing cluster creation, add-node and restart with 409 {error}
 * naming it; both shown in GET /simulation/state. Two real servers, each with its own environment.
 */
import t from 'tap';
import { api } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const V = '/api/v1';
const budgetMb = 4;
const budgetBytes = budgetMb * 1024 * 1024;
/** limits.ts storedEntryOverheadBytes. */
const entryOverheadBytes = 64;

t.test('a small per-node budget: 507 at and past it, no crash, the process stays healthy', async (t) => {
  const srv = await startReplSim({ REPLSIM_NODE_MEMORY_MB: String(budgetMb) });
  t.teardown(() => srv.stop());
  const c = api(srv.base);

  const limits = (await c.get(`${V}/simulation/state`)).body.limits;
  t.equal(limits.node_memory_mb, budgetMb, 'the budget is shown');
  t.equal(limits.node_stored_bytes_max, budgetBytes);
  t.equal(limits.worker_heap_mb, 4 * budgetMb + 48, 'the worker heap is sized from it (4 x budget + 48 MiB)');

  t.test(
    'the OOM reproduction (512 KiB values into a 3-node single_leader cluster) gets 507s, not a dead node',
    async (t) => {
      const cl = (await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 3 })).body;
      const value = 'x'.repeat(512 * 1024);
      const statuses: Record<number, number> = {};
      let firstRefusal: any;
      for (let i = 0; i < 40; i++) {
        const r = await c.post(`${V}/clusters/${cl.id}/write`, { key: `big-${i}`, value });
        statuses[r.status] = (statuses[r.status] ?? 0) + 1;
        if (r.status === 507) firstRefusal ??= r.body;
      }
      t.ok((statuses[200] ?? 0) > 0, `some writes fit (${JSON.stringify(statuses)})`);
      t.equal((statuses[200] ?? 0) + (statuses[507] ?? 0), 40, 'every other write is a 507');
      t.match(
        firstRefusal,
        { error: /budget of 4194304 bytes \(REPLSIM_NODE_MEMORY_MB\)/ },
        'the 507 names the budget',
      );
      const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
      t.same(
        Object.values(st.nodes).map((n: any) => n.state),
        ['online', 'online', 'online'],
        'no node crashed',
      );
      t.ok(
        st.metrics.nodes.n1.stored_bytes <= budgetBytes,
        `the leader holds at most its budget (${st.metrics.nodes.n1.stored_bytes})`,
      );
      const del = await c.del(`${V}/clusters/${cl.id}/kv?key=big-0`);
      t.equal(del.status, 200, 'a delete is accepted at a full budget (it frees bytes)');
      const after = await c.post(`${V}/clusters/${cl.id}/write`, { key: 'small', value: 'fits again' });
      t.equal(after.status, 200, 'and a small write fits again');
      t.equal((await c.get('/healthz')).status, 200, 'the process is healthy');
      const metrics = (await c.get('/metrics')).text;
      t.notMatch(metrics, /sim_worker_exits_total\{reason="(out_of_memory|error|exited|killed)"\}/, 'no worker exited');
    },
  );

  t.test('multi_leader: a write landing exactly at the budget is accepted, one byte past it is a 507', async (t) => {
    const cl = (await c.post(`${V}/clusters`, { strategy: 'multi_leader', node_count: 2 })).body;
    const storedOn = async (node: string): Promise<number> =>
      (await c.get(`${V}/clusters/${cl.id}/state`)).body.metrics.nodes[node].stored_bytes;
    t.equal(
      (await c.post(`${V}/clusters/${cl.id}/write`, { key: 'a', value: 'y'.repeat(100_000), target_node_id: 'n1' }))
        .status,
      200,
    );
    t.equal(
      await storedOn('n1'),
      1 + 100_000 + entryOverheadBytes,
      'stored bytes are key + value + the per-entry overhead',
    );
    // Values are at most 512 Ki characters: fill most of the budget with several.
    for (let i = 0; i < 8; i++) {
      t.equal(
        (
          await c.post(`${V}/clusters/${cl.id}/write`, {
            key: `f${i}`,
            value: 'y'.repeat(500_000),
            target_node_id: 'n1',
          })
        ).status,
        200,
      );
    }
    const used = await storedOn('n1');
    const key = 'b';
    const fill = budgetBytes - used - key.length - entryOverheadBytes;
    const at = await c.post(`${V}/clusters/${cl.id}/write`, { key, value: 'z'.repeat(fill), target_node_id: 'n1' });
    t.equal(at.status, 200, 'a write that brings the node exactly to its budget is accepted');
    t.equal(await storedOn('n1'), budgetBytes, 'the node is at its budget');
    const past = await c.post(`${V}/clusters/${cl.id}/write`, { key: 'c', value: '', target_node_id: 'n1' });
    t.equal(past.status, 507, 'any write that would grow it is a 507');
    t.match(
      past.body.error,
      /would store 4194369 bytes, past its budget of 4194304 bytes/,
      'naming the bytes and the budget',
    );
    const same = await c.post(`${V}/clusters/${cl.id}/write`, { key, value: 'w'.repeat(fill), target_node_id: 'n1' });
    t.equal(same.status, 200, 'an overwrite of the same size stays at the budget and is accepted');
    const batch = await c.post(`${V}/clusters/${cl.id}/write-batch`, {
      entries: [{ key: 'd', value: 'v', target_node_id: 'n1' }],
    });
    t.equal(batch.status, 200, 'a batch answers per entry');
    t.match(batch.body.results[0].error, /past its budget/, 'with the refusal for the entry past the budget');
  });

  t.test('leaderless: replicas past their budget refuse with 507 once W cannot be met', async (t) => {
    const cl = (
      await c.post(`${V}/clusters`, { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 })
    ).body;
    const value = 'q'.repeat(256 * 1024);
    const statuses: Record<number, number> = {};
    let refusal: any;
    for (let i = 0; i < 24; i++) {
      const r = await c.post(`${V}/clusters/${cl.id}/write`, { key: `k${i}`, value });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 507) refusal ??= r.body;
    }
    t.ok((statuses[200] ?? 0) > 0 && (statuses[507] ?? 0) > 0, `fills, then 507 (${JSON.stringify(statuses)})`);
    t.match(refusal, { error: /budget/ }, 'the 507 names the budget');
    const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
    t.same(
      Object.values(st.nodes).map((n: any) => n.state),
      ['online', 'online', 'online'],
      'no node crashed',
    );
  });
});

t.test('REPLSIM_MAX_NODES: cluster creation, add-node and restart get 409 at and past the limit', async (t) => {
  const srv = await startReplSim({ REPLSIM_MAX_NODES: '7' });
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  const limits = (await c.get(`${V}/simulation/state`)).body.limits;
  t.equal(limits.max_nodes, 7, 'the limit is shown');
  t.equal(limits.live_nodes, 0);
  const a = await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 3 });
  t.equal(a.status, 201);
  const b = await c.post(`${V}/clusters`, { strategy: 'multi_leader', node_count: 3 });
  t.equal(b.status, 201, 'six live nodes');
  const over = await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 2 });
  t.equal(over.status, 409, 'a cluster that would pass the limit is a 409');
  t.match(over.body.error, /REPLSIM_MAX_NODES \(7\)/, 'naming the limit');
  const add = await c.post(`${V}/clusters/${a.body.id}/nodes`);
  t.equal(add.status, 201, 'add-node up to the limit (7 of 7)');
  t.equal((await c.get(`${V}/simulation/state`)).body.limits.live_nodes, 7, 'live nodes are shown');
  const addPast = await c.post(`${V}/clusters/${b.body.id}/nodes`);
  t.equal(addPast.status, 409, 'add-node at the limit is a 409');
  t.match(addPast.body.error, /REPLSIM_MAX_NODES/);
  t.equal((await c.post(`${V}/clusters/${b.body.id}/nodes/n3/crash`)).status, 200, 'a crashed node frees its place');
  t.equal((await c.post(`${V}/clusters/${b.body.id}/nodes`)).status, 201, 'which add-node takes');
  const restart = await c.post(`${V}/clusters/${b.body.id}/nodes/n3/restart`);
  t.equal(restart.status, 409, 'restarting past the limit is a 409');
  t.match(restart.body.error, /REPLSIM_MAX_NODES/);
  t.equal((await c.del(`${V}/clusters/${a.body.id}`)).status, 204);
  t.equal((await c.post(`${V}/clusters/${b.body.id}/nodes/n3/restart`)).status, 200, 'after a delete it fits again');
});
