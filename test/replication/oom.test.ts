/**
 * A node worker that really runs out of heap (issue 16): the stored-bytes budget is set far above
 * what the worker's heap can hold (REPLSIM_NODE_HEAP_MB overrides the heap sized from it), and large
 * values are written until V8 stops the worker. Its exit must be handled like any crash: counted as
 * out_of_memory, published as node_crashed, shown as crashed, its pending requests failed at once,
 * and every aggregating endpoint must keep answering.
 */
import t from 'tap';
import { api, eventually, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const V = '/api/v1';

t.test('a worker that runs out of heap is a crashed node, not a hung cluster', async (t) => {
  const srv = await startReplSim({ REPLSIM_NODE_MEMORY_MB: '1024', REPLSIM_NODE_HEAP_MB: '32' });
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  const cl = (await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 3 })).body;
  const events = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${cl.id}`);
  t.teardown(() => events.close());

  const value = 'x'.repeat(512 * 1024);
  const statuses: Record<number, number> = {};
  let refused: { status: number; body: { error?: string } } | undefined;
  for (let i = 0; i < 400 && !refused; i++) {
    const started = performance.now();
    const r = await c.post(`${V}/clusters/${cl.id}/write`, { key: `big-${i}`, value });
    statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    t.ok(performance.now() - started < 10_000, 'no write hangs') || t.bailout('a write hung');
    if (r.status !== 200) refused = r;
  }
  t.ok((statuses[200] ?? 0) > 0, `writes were accepted before the heap ran out (${JSON.stringify(statuses)})`);
  t.ok(refused, 'a write was refused once a node died');
  t.equal(refused?.status, 409, 'the refusal is a 409 (its node crashed), not a 5xx');
  t.type(refused?.body.error, 'string', 'with an {error} saying why');

  const crashed = await events.waitFor((m) => m.type === 'node_crashed', 15_000);
  t.equal(crashed.data?.reason, 'out_of_memory', 'node_crashed names the reason: out_of_memory');

  const metrics = await eventually(async () => {
    const text = (await c.get('/metrics')).text as string;
    return /sim_worker_exits_total\{reason="out_of_memory"\} [1-9]/.test(text) ? text : undefined;
  }, 10_000);
  t.match(metrics, /sim_worker_exits_total\{reason="out_of_memory"\} [1-9]/, 'the exit is counted by reason');

  for (const path of [
    '/api/v1/clusters',
    `/api/v1/clusters/${cl.id}/state`,
    '/api/v1/simulation/state',
    '/api/v1/simulation/metrics',
    '/metrics',
    '/healthz',
  ]) {
    const started = performance.now();
    const r = await c.get(path);
    t.equal(r.status, 200, `${path} answers`);
    t.ok(performance.now() - started < 5_000, `${path} answers within the deadline`);
  }
  const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
  t.ok(
    Object.values(st.nodes).some((n: any) => n.state === 'crashed'),
    'the dead node shows as crashed',
  );
  t.equal((await c.del(`${V}/clusters/${cl.id}`)).status, 204, 'the cluster can still be deleted');
  t.equal((await c.get('/healthz')).status, 200, 'the process is healthy');
});
