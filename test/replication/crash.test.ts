/**
 * Black-box tests of node crashes as a first-class fault (issue 16): the crash and restart
 * endpoints for every strategy under writes, durable state surviving a crash (single-leader's
 * acknowledged writes), convergence after a restart, pending requests failing at once, the
 * sim_worker_exits_total counter and node_crashed event, and the aggregate endpoints answering
 * within their deadline while a node is stalled or crashed. The real server on a free port.
 */
import t from 'tap';
import { api, eventually, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';
/** limits.ts nodeCallDeadlineMs, and the slack a loaded 2-core machine gets on top of it. */
const deadlineMs = 2_000;
const slackMs = 1_500;

async function newCluster(body: Record<string, unknown>): Promise<any> {
  const r = await c.post(`${V}/clusters`, body);
  t.equal(r.status, 201, `cluster created (${JSON.stringify(body)})`);
  return r.body;
}

/** Waits for a raft leader (or returns the single-leader one). */
async function leaderOf(id: string): Promise<string> {
  return eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body.leader_id as string | undefined, 8000);
}

interface Acked {
  key: string;
  value: string;
}

/**
 * `writers` clients writing distinct keys to the cluster's default target (or a node each) until
 * `stop()`; the acknowledged ones (200) are kept, with every status seen.
 */
function startWriters(
  id: string,
  writers: number,
  target?: (w: number) => string | undefined,
): { stop: () => Promise<{ acked: Acked[]; statuses: Record<number, number> }> } {
  let running = true;
  const acked: Acked[] = [];
  const statuses: Record<number, number> = {};
  const loops = Array.from({ length: writers }, async (_, w) => {
    for (let j = 0; running; j++) {
      const key = `w${w}-${j}`;
      const value = `v${w}-${j}`;
      const body: Record<string, unknown> = { key, value, client_id: `writer-${w}` };
      const to = target?.(w);
      if (to !== undefined) body['target_node_id'] = to;
      const r = await c.post(`${V}/clusters/${id}/write`, body);
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      if (r.status === 200) acked.push({ key, value });
      else await sleep(20);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return { acked, statuses };
    },
  };
}

/** Polls convergence until the replicas agree; on timeout, fails with the last report. */
async function converged(id: string, ms = 15_000): Promise<any> {
  let last: any;
  try {
    return await eventually(
      async () => {
        const r = await c.get(`${V}/clusters/${id}/convergence`);
        last = r.body;
        return r.status === 200 && r.body.converged && r.body.replicas.length > 0 ? r.body : undefined;
      },
      ms,
      200,
    );
  } catch {
    throw new Error(`not converged within ${ms} ms: ${JSON.stringify(last).slice(0, 2000)}`);
  }
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

t.test('single_leader: a crashed follower restarts from its durable log and store and catches up', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
  const writers = startWriters(cl.id, 3);
  await sleep(300);
  const crash = await c.post(`${V}/clusters/${cl.id}/nodes/n2/crash`);
  t.equal(crash.status, 200, 'crash answers 200');
  t.same(crash.body, { status: 'crashed', node: 'n2' });
  const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
  t.equal(st.nodes.n2.state, 'crashed', 'the state shows it crashed');
  t.equal(st.nodes.n1.state, 'online');
  const store = await c.get(`${V}/clusters/${cl.id}/nodes/n2/store`);
  t.equal(store.status, 409, "a crashed node's store is a 409 at once");
  t.match(store.body.error, /crashed.*restart/, 'which says to restart it');
  await sleep(300);
  const restart = await c.post(`${V}/clusters/${cl.id}/nodes/n2/restart`);
  t.equal(restart.status, 200, 'restart answers 200');
  t.equal(restart.body.state, 'online', 'with the node online');
  t.ok(
    restart.body.last_applied > 0,
    `it came back with its durable log (last_applied ${restart.body.last_applied}), not empty`,
  );
  await sleep(300);
  const { acked, statuses } = await writers.stop();
  t.ok(acked.length > 20, `writes were acknowledged throughout (${JSON.stringify(statuses)})`);
  const conv = await converged(cl.id);
  t.same(conv.replicas, ['n1', 'n2', 'n3'], 'every replica compared');
  const n2 = (await c.get(`${V}/clusters/${cl.id}/nodes/n2/store`)).body;
  const missing = acked.filter((a) => n2[a.key]?.value !== b64(a.value));
  t.same(missing, [], 'the restarted follower holds every acknowledged write');
});

t.test(
  'single_leader semi_sync: a crashed leader is failed over, keeps serving, and no acknowledged write is lost',
  async (t) => {
    const cl = await newCluster({ strategy: 'single_leader', node_count: 3, replication_mode: 'semi_sync' });
    const ws = await wsCollect(`${srv.base.replace('http', 'ws')}/ws?cluster_id=${cl.id}`);
    t.teardown(() => ws.close());
    const writers = startWriters(cl.id, 3);
    await sleep(300);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n1/crash`)).status, 200, 'the leader is crashed');
    const crashed = await ws.waitFor((m) => m.type === 'node_crashed' && m.node_id === 'n1');
    t.equal(crashed.data.reason, 'killed', 'a node_crashed event names the reason');
    const elected = await ws.waitFor((m) => m.type === 'leader_elected' && m.data?.reason === 'failover');
    t.not(elected.node_id, 'n1', `a follower took over (${elected.node_id})`);
    await sleep(400);
    const restart = await c.post(`${V}/clusters/${cl.id}/nodes/n1/restart`);
    t.equal(restart.status, 200, 'the old leader restarts');
    t.equal(restart.body.role, 'follower', 'as a follower of the new leader');
    t.equal(restart.body.leader_id, elected.node_id);
    await sleep(300);
    const { acked, statuses } = await writers.stop();
    t.ok((statuses[200] ?? 0) > 20, `the cluster kept serving (${JSON.stringify(statuses)})`);
    t.notOk(statuses[500], 'never a 500');
    await converged(cl.id);
    const leader = await leaderOf(cl.id);
    const store = (await c.get(`${V}/clusters/${cl.id}/nodes/${leader}/store`)).body;
    const lost = acked.filter((a) => store[a.key]?.value !== b64(a.value));
    t.same(
      lost,
      [],
      `every acknowledged write (${acked.length}) is on the leader after the crash, failover and restart`,
    );
    const metrics = (await c.get('/metrics')).text;
    t.match(metrics, /sim_worker_exits_total\{reason="killed"\} [1-9]/, 'the exit is counted by reason');
  },
);

for (const strategy of ['multi_leader', 'leaderless'] as const) {
  t.test(`${strategy}: nodes crashed and restarted under writes converge again`, async (t) => {
    const cl = await newCluster({
      strategy,
      node_count: 3,
      ...(strategy === 'leaderless' ? { quorum_n: 3, quorum_w: 2, quorum_r: 2 } : {}),
    });
    // Each writer on its own node, so writes land on the nodes being crashed too.
    const writers = startWriters(cl.id, 3, (w) => `n${w + 1}`);
    await sleep(300);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n2/crash`)).status, 200, 'n2 crashed');
    await sleep(300);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n3/crash`)).status, 200, 'n3 crashed');
    await sleep(200);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n2/restart`)).status, 200, 'n2 restarted');
    await sleep(200);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n3/restart`)).status, 200, 'n3 restarted');
    await sleep(300);
    const { acked, statuses } = await writers.stop();
    t.ok(acked.length > 20, `writes were acknowledged (${JSON.stringify(statuses)})`);
    t.notOk(statuses[500], 'never a 500');
    const conv = await converged(cl.id, 20_000);
    t.same(conv.replicas, ['n1', 'n2', 'n3'], 'every replica is compared and they agree');
    // Acknowledged writes: on every replica (W=2 of 3 and multi-leader's local ack both survive a crash).
    const stores = await Promise.all(
      ['n1', 'n2', 'n3'].map(async (n) => (await c.get(`${V}/clusters/${cl.id}/nodes/${n}/store`)).body),
    );
    const lost = acked.filter((a) => stores.some((s) => s[a.key]?.value !== b64(a.value)));
    t.same(lost, [], `every acknowledged write (${acked.length}) is on every replica`);
  });
}

t.test(
  'raft: a crashed follower and a crashed leader restart from term, vote and log; the history stays linearizable',
  async (t) => {
    const cl = await newCluster({ strategy: 'raft', node_count: 3 });
    const leader = await leaderOf(cl.id);
    const follower = ['n1', 'n2', 'n3'].find((n) => n !== leader) as string;
    // Writers plus a reader on the same keys, so the linearizability check has reads to judge.
    const writers = startWriters(cl.id, 3);
    let reading = true;
    const reader = (async () => {
      for (let j = 0; reading; j++) {
        await c.get(`${V}/clusters/${cl.id}/read?key=w0-${Math.max(0, j - 1)}&client_id=reader`);
        await sleep(5);
      }
    })();
    await sleep(300);
    t.equal(
      (await c.post(`${V}/clusters/${cl.id}/nodes/${follower}/crash`)).status,
      200,
      `follower ${follower} crashed`,
    );
    await sleep(300);
    const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
    t.equal(st.nodes[follower].state, 'crashed');
    const r1 = await c.post(`${V}/clusters/${cl.id}/nodes/${follower}/restart`);
    t.equal(r1.status, 200, 'the follower restarts');
    t.ok(r1.body.commit_index > 0 || r1.body.last_applied > 0, 'from its durable log, not empty');
    await sleep(300);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/${leader}/crash`)).status, 200, `leader ${leader} crashed`);
    const next = await eventually(async () => {
      const l = (await c.get(`${V}/clusters/${cl.id}/state`)).body.leader_id as string | undefined;
      return l !== undefined && l !== leader ? l : undefined;
    }, 8000);
    t.not(next, leader, `a new leader is elected (${next})`);
    await sleep(300);
    t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/${leader}/restart`)).status, 200, 'the old leader restarts');
    await sleep(500);
    reading = false;
    await reader;
    const { acked, statuses } = await writers.stop();
    t.ok(acked.length > 20, `writes were committed throughout (${JSON.stringify(statuses)})`);
    t.notOk(statuses[500], 'never a 500');
    await converged(cl.id);
    const store = (await c.get(`${V}/clusters/${cl.id}/nodes/${leader}/store`)).body;
    const lost = acked.filter((a) => store[a.key]?.value !== b64(a.value));
    t.same(lost, [], `every committed write (${acked.length}) is on the restarted old leader`);
    const lin = (await c.get(`${V}/clusters/${cl.id}/linearizable?timeout_ms=20000`)).body;
    t.not(
      lin.verdict,
      'not-linearizable',
      `the recorded history is not refuted (${lin.verdict}, ${lin.checked_ops} ops)`,
    );
    t.equal(lin.verdict, 'linearizable', 'and is found linearizable');
  },
);

t.test('a request pending on a node fails at once when the node crashes', async (t) => {
  const cl = await newCluster({ strategy: 'multi_leader', node_count: 2 });
  t.equal(
    (await c.post(`${V}/clusters/${cl.id}/nodes/n2/stall`, { ms: 8000 })).status,
    202,
    'n2 stalls (its thread blocked)',
  );
  // The stall travels on the node's control channel, the write on its request channel: the write
  // could reach the worker first. A control call queued behind the stall (its store) that goes
  // unanswered until the call deadline shows the stall is in effect before the write is sent.
  const probe = await c.get(`${V}/clusters/${cl.id}/nodes/n2/store`);
  t.not(probe.status, 200, `n2 answers no control call while stalled (${probe.status})`);
  const started = Date.now();
  const pending = c.post(`${V}/clusters/${cl.id}/write`, { key: 'k', value: 'v', target_node_id: 'n2' });
  await sleep(300);
  t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n2/crash`)).status, 200, 'crash kills even a stalled worker');
  const r = await pending;
  t.equal(r.status, 409, 'the pending write answers 409');
  t.match(r.body.error, /n2 crashed.*indeterminate/, 'naming the crash and an unknown outcome');
  t.ok(Date.now() - started < 8000, 'before the stall (or the front timeout) would have ended');
  const after = await c.post(`${V}/clusters/${cl.id}/write`, { key: 'k', value: 'v', target_node_id: 'n2' });
  t.equal(after.status, 409, 'a write to the crashed node is refused at once');
  t.match(after.body.error, /crashed.*restart/);
});

t.test('aggregate endpoints answer within the deadline while a node is stalled or crashed', async (t) => {
  const cl = await newCluster({ strategy: 'leaderless', node_count: 3 });
  const other = await newCluster({ strategy: 'single_leader', node_count: 2 });
  t.equal(
    (await c.post(`${V}/clusters/${other.id}/nodes/n2/crash`)).status,
    200,
    'a node of another cluster is crashed',
  );
  t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n3/stall`, { ms: 12_000 })).status, 202, 'n3 stalls for 12 s');
  const paths = [
    `${V}/clusters/${cl.id}/state`,
    `${V}/clusters`,
    `${V}/simulation/state`,
    `${V}/simulation/metrics`,
    '/metrics',
    `${V}/clusters/${cl.id}/nodes/n3/store`,
  ];
  for (const p of paths) {
    const started = Date.now();
    const r = await c.get(p);
    const ms = Date.now() - started;
    t.ok(ms < deadlineMs + slackMs, `${p} answered in ${ms} ms`);
    t.ok(r.status === 200 || (p.endsWith('/store') && r.status === 409), `${p}: ${r.status}`);
  }
  const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
  t.equal(st.nodes.n3.state, 'unresponsive', 'the stalled node is reported unresponsive');
  t.equal(st.nodes.n1.state, 'online');
  const list = (await c.get(`${V}/clusters`)).body;
  t.equal(list.find((x: any) => x.id === other.id).nodes.n2.state, 'crashed', 'the crashed node is reported crashed');
  const store = await c.get(`${V}/clusters/${cl.id}/nodes/n3/store`);
  t.match(store.body.error, /did not answer within 2000 ms/, 'a single-node view names the deadline');
  await c.del(`${V}/clusters/${cl.id}`);
});

t.test('crash and restart refuse what makes no sense', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', node_count: 2 });
  const online = await c.post(`${V}/clusters/${cl.id}/nodes/n2/restart`);
  t.equal(online.status, 409, 'restarting a running node is a 409');
  t.match(online.body.error, /not crashed/);
  t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n9/crash`)).status, 404, 'an unknown node is a 404');
  t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n2/crash`)).status, 200);
  const again = await c.post(`${V}/clusters/${cl.id}/nodes/n2/crash`);
  t.equal(again.status, 409, 'crashing a crashed node is a 409');
  t.match(again.body.error, /already crashed/);
  t.equal((await c.post(`${V}/clusters/${cl.id}/nodes/n2/pause`)).status, 409, 'pausing a crashed node is a 409');
  t.equal(
    (await c.post(`${V}/clusters/${cl.id}/nodes/n2/resume`)).status,
    409,
    'resuming a crashed node is a 409 (restart it)',
  );
  const tooLong = await c.post(`${V}/clusters/${cl.id}/nodes/n1/stall`, { ms: 30_001 });
  t.equal(tooLong.status, 400, 'a stall past nodeStallMsMax is a 400');
  t.match(tooLong.body.error, /at most 30000/);
  t.equal((await c.del(`${V}/clusters/${cl.id}/nodes/n2`)).status, 204, 'a crashed node can be removed');
  const metrics = (await c.get('/metrics')).text;
  t.match(
    metrics,
    /sim_worker_exits_total\{reason="stopped"\} [1-9]/,
    'stopped workers are counted apart from crashes',
  );
});
