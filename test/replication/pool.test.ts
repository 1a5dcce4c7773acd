/**
 * The warm pool of node actors (node-handle.ts ActorPool), black box: real servers as child
 * processes, their worker threads counted from /proc (every node actor is one thread). Creating,
 * deleting and resetting clusters brings the count back to its idle figure (the pool, refilled);
 * the pool never holds more actors than REPLSIM_MAX_NODES leaves beside the live nodes, and creation
 * past the budget is still a 409. REPLSIM_WORKER_POOL is read at and past its limit (table below).
 */
import { readFileSync } from 'node:fs';
import t, { type Test } from 'tap';
import { api } from '../helpers/http.js';
import { startReplSim, type Started } from '../helpers/server.js';
import { workerPoolActorsDefault, workerPoolActorsFromEnv, workerPoolActorsMax } from '../../src/replication/limits.js';

const V = '/api/v1';

t.test('REPLSIM_WORKER_POOL: whole numbers from 0 to the limit, anything else is the default', async (t) => {
  const cases: Array<{ name: string; raw: string | undefined; want: number }> = [
    { name: 'unset', raw: undefined, want: workerPoolActorsDefault },
    { name: 'empty', raw: '', want: workerPoolActorsDefault },
    { name: 'zero turns the pool off', raw: '0', want: 0 },
    { name: 'a small pool', raw: '6', want: 6 },
    { name: 'at the limit', raw: String(workerPoolActorsMax), want: workerPoolActorsMax },
    { name: 'one past the limit', raw: String(workerPoolActorsMax + 1), want: workerPoolActorsDefault },
    { name: 'negative', raw: '-1', want: workerPoolActorsDefault },
    { name: 'fractional', raw: '2.5', want: workerPoolActorsDefault },
    { name: 'not a number', raw: 'many', want: workerPoolActorsDefault },
  ];
  for (const c of cases) t.equal(workerPoolActorsFromEnv({ REPLSIM_WORKER_POOL: c.raw }), c.want, c.name);
  t.equal(workerPoolActorsDefault, 64, 'the default pool holds the largest cluster (node_count 64)');
});

function threads(srv: Started): number {
  const m = /Threads:\s+(\d+)/.exec(readFileSync(`/proc/${srv.child.pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/**
 * The server's thread count once it has settled (the same for 600 ms running), or the last count
 * seen after `waitMs`: a count that overshoots and comes back is not taken for settled.
 */
async function settledThreads(srv: Started, waitMs = 30_000): Promise<number> {
  const until = Date.now() + waitMs;
  let last = threads(srv);
  let since = Date.now();
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    const now = threads(srv);
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= 600) return now;
  }
  return last;
}

/** Waits for the count to reach `want` (the pool refills in the background), then checks it stays. */
async function expectThreads(t: Test, srv: Started, want: number, msg: string): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until && threads(srv) !== want) await new Promise((r) => setTimeout(r, 100));
  t.equal(await settledThreads(srv), want, msg);
}

t.test('the pool is bounded by the memory budget and never leaks actors', async (t) => {
  // A server without a pool gives the process's own threads (main, libuv, V8 platform); a node is one more.
  const bare = await startReplSim({ REPLSIM_WORKER_POOL: '0', REPLSIM_MAX_NODES: '7' });
  t.teardown(() => bare.stop());
  const b = api(bare.base);
  const warm = await b.post(`${V}/clusters`, { strategy: 'raft', node_count: 3 });
  t.equal(warm.status, 201);
  t.equal((await b.del(`${V}/clusters/${warm.body.id}`)).status, 204);
  const base0 = await settledThreads(bare);
  const live3 = await b.post(`${V}/clusters`, { strategy: 'raft', node_count: 3 });
  // A node is one thread, plus one per worker for module hooks when tap's NODE_OPTIONS reach it
  // (tap puts its loader into every child process): counted, not assumed.
  const perNode = ((await settledThreads(bare)) - base0) / 3;
  t.ok(perNode === 1 || perNode === 2, `without a pool, a node adds its thread(s) (${perNode} each)`);
  t.equal((await b.del(`${V}/clusters/${live3.body.id}`)).status, 204);
  t.equal(await settledThreads(bare), base0, 'and deleting it takes them away');
  const base = (actors: number): number => base0 + perNode * actors;

  // Pool size 64 (the default) under a budget of 7 live nodes: the pool holds 7 minus the live nodes.
  const srv = await startReplSim({ REPLSIM_WORKER_POOL: '64', REPLSIM_MAX_NODES: '7' });
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  await expectThreads(t, srv, base(7), 'idle: the pool fills up to the budget (7), not to its size (64)');

  const a = await c.post(`${V}/clusters`, { strategy: 'raft', node_count: 3 });
  t.equal(a.status, 201);
  await expectThreads(t, srv, base(7), 'a 3-node cluster: 3 live + 4 pooled, still 7 in all');
  const past = await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 5 });
  t.equal(past.status, 409, 'creation past the budget is refused as before (3 + 5 > 7)');
  t.match(past.body.error, /REPLSIM_MAX_NODES \(7\)/, 'naming the limit');
  const full = await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 4 });
  t.equal(full.status, 201, 'up to the budget it is accepted (3 + 4 = 7)');
  await expectThreads(t, srv, base(7), '7 live nodes and an empty pool: never past the budget');

  t.equal((await c.del(`${V}/clusters/${full.body.id}`)).status, 204);
  await expectThreads(t, srv, base(7), 'delete: the pool refills to what the budget leaves (3 live + 4)');
  t.equal((await c.post(`${V}/clusters/${a.body.id}/nodes/n2/crash`)).status, 200);
  await expectThreads(t, srv, base(7), 'a crashed node ends its thread, and the pool takes the room (2 live + 5)');
  t.equal((await c.post(`${V}/clusters/${a.body.id}/nodes/n2/restart`)).status, 200);
  await expectThreads(t, srv, base(7), 'a restarted node takes a pooled actor and the pool refills');

  const more = await c.post(`${V}/clusters`, { strategy: 'leaderless', node_count: 2 });
  t.equal(more.status, 201);
  t.equal((await c.post(`${V}/simulation/reset`, {})).status, 200);
  await expectThreads(t, srv, base(7), 'reset: back to the idle figure');
  const st = (await c.get(`${V}/simulation/state`)).body;
  t.equal(st.limits.live_nodes, 0, 'no live node is left');
});

t.test('a small pool: create, delete and reset return to its size', async (t) => {
  const srv = await startReplSim({ REPLSIM_WORKER_POOL: '2' });
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  const idle = await settledThreads(srv);
  const bare = await startReplSim({ REPLSIM_WORKER_POOL: '0' });
  t.teardown(() => bare.stop());
  const base0 = await settledThreads(bare);
  const one = await api(bare.base).post(`${V}/clusters`, { strategy: 'raft', node_count: 1 });
  t.equal(one.status, 201);
  const perNode = (await settledThreads(bare)) - base0;
  t.equal(idle, base0 + 2 * perNode, 'idle: the pool holds its 2 actors');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await c.post(`${V}/clusters`, { strategy: 'raft', node_count: 3 });
    t.equal(r.status, 201, `cluster ${i + 1} (past the pool's 2 actors, fresh ones are started)`);
    ids.push(r.body.id);
  }
  await expectThreads(t, srv, idle + 9 * perNode, 'three 3-node clusters: 9 more threads, the pool back at 2');
  t.equal((await c.del(`${V}/clusters/${ids[0]}`)).status, 204);
  await expectThreads(t, srv, idle + 6 * perNode, 'delete: 3 fewer');
  t.equal((await c.post(`${V}/simulation/reset`, {})).status, 200);
  await expectThreads(t, srv, idle, 'reset: the idle figure again');
  const again = await c.post(`${V}/clusters`, { strategy: 'multi_leader', node_count: 3 });
  t.equal(again.status, 201, 'a cluster after the reset starts as before');
  t.equal((await c.del(`${V}/clusters/${again.body.id}`)).status, 204);
  await expectThreads(t, srv, idle, 'and its delete leaves the idle figure');
});
