/**
 * Black-box tests of the replication simulator with single_leader clusters: the real server
 * (dist/src/replication/main.js) on a free port, spoken to over real sockets.
 */
import t from 'tap';
import { api, eventually, request, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';

async function newCluster(body: Record<string, unknown> = { strategy: 'single_leader' }): Promise<any> {
  const r = await c.post(`${V}/clusters`, body);
  t.equal(r.status, 201, 'cluster created');
  return r.body;
}
const b64 = (s: string) => Buffer.from(s).toString('base64');
const storeOf = async (id: string, node: string) => (await c.get(`${V}/clusters/${id}/nodes/${node}/store`)).body;

t.test('creating a cluster returns its state with every default filled in', async (t) => {
  const cl = await newCluster();
  t.match(cl.id, /^[0-9a-f-]{36}$/, 'the id is a UUID');
  t.same(cl.node_ids, ['n1', 'n2', 'n3'], 'three nodes by default, named n1..n3');
  t.same(
    cl.config,
    {
      strategy: 'single_leader',
      node_count: 3,
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
    },
    'effective config',
  );
  t.equal(cl.leader_id, 'n1', 'the first node leads');
  t.equal(cl.nodes.n1.role, 'leader');
  t.equal(cl.nodes.n2.role, 'follower');
  t.equal(cl.nodes.n2.state, 'online');
  t.same(cl.nodes.n2.peers, ['n1', 'n3'], 'peers exclude the node itself');
  t.same(cl.partitions, {}, 'no partitions');
  t.equal(cl.dropped_messages, 0);
  t.match(cl.created, /^\d{4}-\d\d-\d\dT/, 'created is a date-time');
  const zero = await newCluster({ strategy: 'single_leader', node_count: 0 });
  t.equal(zero.node_ids.length, 3, 'node_count below 1 becomes the default');
  const started = await c.post(`${V}/simulation/start`, {
    strategy: 'single_leader',
    node_count: 2,
    replication_mode: 'sync',
  });
  t.equal(started.status, 201, 'simulation/start creates a cluster too');
  t.equal(started.body.config.replication_mode, 'sync');
  const list = await c.get(`${V}/clusters`);
  t.ok(
    list.body.some((x: any) => x.id === cl.id),
    'the list has it',
  );
  const sim = await c.get(`${V}/simulation/state`);
  t.ok(
    sim.body.clusters.some((x: any) => x.id === cl.id),
    'simulation state has it',
  );
  const m = await c.get(`${V}/simulation/metrics`);
  t.type(m.body[cl.id], 'object', 'simulation metrics per cluster');
  t.equal((await c.del(`${V}/clusters/${zero.id}`)).status, 204, 'delete answers 204');
  t.equal((await c.del(`${V}/clusters/${zero.id}`)).status, 404, 'a second delete is 404');
});

t.test('bad requests are refused with a 400 that names the field, and change nothing', async (t) => {
  const before = (await c.get(`${V}/clusters`)).body.length;
  const cases: Array<[string, unknown, RegExp]> = [
    ['malformed JSON', '{"strategy":', /malformed JSON/],
    ['a missing strategy', {}, /strategy: is required/],
    ['an unknown strategy', { strategy: 'paxos' }, /strategy: must be one of/],
    ['a wrong type', { strategy: 'single_leader', node_count: 'three' }, /node_count: must be integer/],
    [
      'an unknown replication mode',
      { strategy: 'single_leader', replication_mode: 'eventual' },
      /replication_mode: must be one of/,
    ],
    ['too many nodes', { strategy: 'single_leader', node_count: 65 }, /node_count must be between 1 and 64/],
    ['a fractional node count', { strategy: 'single_leader', node_count: 2.5 }, /node_count: must be integer/],
    [
      'too many regions',
      { strategy: 'single_leader', node_count: 3, regions: 4 },
      /regions must be between 1 and node_count/,
    ],
    ['a JSON array', [1], /body: must be object/],
  ];
  for (const [name, body, re] of cases) {
    const r = await c.post(`${V}/clusters`, body);
    t.equal(r.status, 400, `${name}: 400`);
    t.match(r.body.error, re, `${name}: message`);
  }
  // Only a 413 passes: a reset connection (the server cutting the upload without answering) is a
  // failure, status -1. The server answers at once from the declared content-length and discards
  // the rest of the upload instead of closing, so the client reads the 413 while still sending.
  // Three times: the refused upload must not leave the next request a reset either.
  for (let i = 1; i <= 3; i++) {
    const big = await request(srv.base, 'POST', `${V}/clusters`, Buffer.alloc(2 * 1024 * 1024, 'x')).catch(
      (e: Error) => ({ status: -1, body: { error: e.message } }),
    );
    t.equal(big.status, 413, `a 2 MiB body is 413 (try ${i})`, { body: big.body });
    t.match(big.body, { error: /exceeds/ }, `the 413 says why (try ${i})`);
  }
  t.equal((await c.get(`${V}/clusters`)).body.length, before, 'no cluster was created by any refused request');

  const cl = await newCluster();
  const id = cl.id;
  const writeCases: Array<[string, unknown, number, RegExp]> = [
    ['a missing key', { value: 'v' }, 400, /key: is required/],
    ['an empty key', { key: '', value: 'v' }, 400, /key: must not have fewer than 1/],
    ['a numeric value', { key: 'k', value: 5 }, 400, /value: must be string/],
    ['an unknown target node', { key: 'k', value: 'v', target_node_id: 'n99' }, 404, /node n99 not found/],
    ['a follower target', { key: 'k', value: 'v', target_node_id: 'n2' }, 409, /not the leader; the leader is n1/],
  ];
  for (const [name, body, status, re] of writeCases) {
    const r = await c.post(`${V}/clusters/${id}/write`, body);
    t.equal(r.status, status, `write with ${name}: ${status}`);
    t.match(r.body.error, re, `write with ${name}: message`);
  }
  t.same(await storeOf(id, 'n1'), {}, 'no refused write changed the store');
  const bad = [
    [
      'partition with overlapping groups',
      `${V}/clusters/${id}/network/partition`,
      { group_a: ['n1', 'n2'], group_b: ['n2', 'n3'] },
      400,
      /disjoint/,
    ],
    [
      'partition with an unknown node',
      `${V}/clusters/${id}/network/partition`,
      { group_a: ['n1'], group_b: ['n9'] },
      400,
      /node n9 is not in cluster/,
    ],
    [
      'partition with an empty group',
      `${V}/clusters/${id}/network/partition`,
      { group_a: [], group_b: ['n2'] },
      400,
      /group_a/,
    ],
    [
      'latency with a negative value',
      `${V}/clusters/${id}/network/latency`,
      { from: 'n1', to: 'n2', ms: -1 },
      400,
      /ms: must be >= 0/,
    ],
    [
      'latency to an unknown node',
      `${V}/clusters/${id}/network/latency`,
      { from: 'n1', to: 'n7', ms: 10 },
      404,
      /node n7 not found/,
    ],
    [
      'drop rate above 1',
      `${V}/clusters/${id}/network/drop`,
      { from: 'n1', to: 'n2', rate: 1.5 },
      400,
      /rate: must be <= 1/,
    ],
    ['clock skew without ms', `${V}/clusters/${id}/nodes/n2/clock-skew`, {}, 400, /ms: is required/],
    ['a batch with no entries', `${V}/clusters/${id}/write-batch`, { entries: [] }, 400, /entries/],
  ] as const;
  for (const [name, path, body, status, re] of bad) {
    const r = await c.post(path, body);
    t.equal(r.status, status, `${name}: ${status}`);
    t.match(r.body.error, re, `${name}: message`);
  }
  t.equal(
    (await c.get(`${V}/clusters/${id}/state`)).body.partitions &&
      Object.keys((await c.get(`${V}/clusters/${id}/state`)).body.partitions).length,
    0,
    'no partition was created',
  );
});

t.test('unknown clusters and nodes answer 404 on every cluster-scoped endpoint', async (t) => {
  const ghost = '00000000-0000-0000-0000-000000000000';
  const cl = await newCluster();
  const calls: Array<[string, string, unknown?]> = [
    ['GET', `${V}/clusters/${ghost}/state`],
    ['DELETE', `${V}/clusters/${ghost}`],
    ['PATCH', `${V}/clusters/${ghost}/config`, { replication_mode: 'sync' }],
    ['POST', `${V}/clusters/${ghost}/write`, { key: 'k', value: 'v' }],
    ['GET', `${V}/clusters/${ghost}/read?key=k`],
    ['DELETE', `${V}/clusters/${ghost}/kv?key=k`],
    ['POST', `${V}/clusters/${ghost}/write-batch`, { entries: [{ key: 'k' }] }],
    ['POST', `${V}/clusters/${ghost}/nodes`],
    ['POST', `${V}/clusters/${ghost}/network/partition`, { group_a: ['n1'], group_b: ['n2'] }],
    ['DELETE', `${V}/clusters/${ghost}/network/faults`],
    ['POST', `${V}/clusters/${ghost}/network/latency`, { from: 'n1', to: 'n2', ms: 1 }],
    ['POST', `${V}/clusters/${ghost}/network/drop`, { from: 'n1', to: 'n2', rate: 0.1 }],
    ['DELETE', `${V}/clusters/${cl.id}/nodes/n9`],
    ['POST', `${V}/clusters/${cl.id}/nodes/n9/pause`],
    ['POST', `${V}/clusters/${cl.id}/nodes/n9/resume`],
    ['POST', `${V}/clusters/${cl.id}/nodes/n9/clock-skew`, { ms: 5 }],
    ['GET', `${V}/clusters/${cl.id}/nodes/n9/log`],
    ['GET', `${V}/clusters/${cl.id}/nodes/n9/store`],
    ['GET', `${V}/clusters/${cl.id}/read?key=k&node_id=n9`],
    ['GET', `${V}/clusters/${cl.id}/read?key=never-written`],
    ['DELETE', `${V}/clusters/${cl.id}/network/partition/p404`],
  ];
  for (const [method, path, body] of calls) {
    const r = await request(srv.base, method, path, body);
    t.equal(r.status, 404, `${method} ${path}: 404`);
    t.type(r.body?.error, 'string', `${method} ${path}: has an error message`);
  }
  t.equal((await c.get('/api/v1/nope')).status, 404, 'an unknown route is 404');
  t.equal((await c.put(`${V}/clusters`, {})).status, 405, 'a wrong method is 405');
});

t.test('async replication reaches every follower; reads, deletes, logs and stores', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', node_count: 4 });
  const id = cl.id;
  const w = await c.post(`${V}/clusters/${id}/write`, { key: 'color', value: 'blue', client_id: 'alice' });
  t.equal(w.status, 200);
  t.equal(w.body.node_id, 'n1', 'the write was handled by the leader');
  t.equal(w.body.entry.value, b64('blue'), 'values are base64 in KVEntry');
  t.equal(w.body.entry.tombstone, false);
  t.equal(w.body.entry.version, 1);
  t.ok(Math.abs(w.body.entry.timestamp / 1e6 - Date.now()) < 60_000, 'timestamp is Unix nanoseconds');
  for (const n of ['n2', 'n3', 'n4']) {
    const r = await eventually(async () => {
      const x = await c.get(`${V}/clusters/${id}/read?key=color&node_id=${n}`);
      return x.status === 200 ? x : undefined;
    });
    t.equal(r.body.entry.value, b64('blue'), `${n} has the value`);
    t.equal(r.body.node_id, n, `${n} answered the read`);
  }
  for (let i = 0; i < 20; i++) await c.post(`${V}/clusters/${id}/write`, { key: `k${i}`, value: `v${i}` });
  const del = await c.del(`${V}/clusters/${id}/kv?key=color`);
  t.same(del.body, { status: 'deleted', key: 'color' }, 'delete answers status and key');
  for (const n of ['n1', 'n2', 'n3', 'n4']) {
    await eventually(async () => (await storeOf(id, n)).color?.tombstone === true, 5000);
    t.equal(
      (await c.get(`${V}/clusters/${id}/read?key=color&node_id=${n}`)).status,
      404,
      `${n} reads the deleted key as not found`,
    );
  }
  const store = await storeOf(id, 'n3');
  t.equal(Object.keys(store).length, 21, 'the follower store has every key (and the tombstone)');
  const log = (await c.get(`${V}/clusters/${id}/nodes/n1/log`)).body;
  t.equal(log.length, 22, 'the leader log has every entry');
  t.match(
    log[0],
    { index: 1, type: 'put', ops: [{ key: 'color', value: 'blue' }] },
    'log entries describe the operation',
  );
  t.match(log[21], { index: 22, type: 'delete' }, 'deletes are log entries');
  const st = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.equal(st.nodes.n1.commit_index, 22, 'leader commit index is live');
  await eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body.nodes.n4.last_applied === 22);
  t.pass('followers report last_applied 22');
  const metrics = (await c.get('/metrics')).text;
  t.match(
    metrics,
    new RegExp(`sim_writes_total\\{cluster_id="${id}",node_id="n1",strategy="single_leader"\\} 22`),
    'sim_writes_total counts the writes',
  );
  t.match(
    metrics,
    new RegExp(`sim_reads_total\\{cluster_id="${id}",node_id="n2"\\} 1\n`),
    'sim_reads_total counts the successful reads',
  );
  // The counters are handed to prom-client when /metrics is read: a second read sees only what came since added on.
  for (let i = 0; i < 3; i++) await c.post(`${V}/clusters/${id}/write`, { key: `m${i}`, value: 'x' });
  for (let i = 0; i < 2; i++) await c.get(`${V}/clusters/${id}/read?key=k1&node_id=n1`);
  const again = (await c.get('/metrics')).text;
  t.match(
    again,
    new RegExp(`sim_writes_total\\{cluster_id="${id}",node_id="n1",strategy="single_leader"\\} 25\n`),
    'sim_writes_total keeps counting across scrapes',
  );
  t.match(
    again,
    new RegExp(`sim_reads_total\\{cluster_id="${id}",node_id="n1"\\} 2\n`),
    'sim_reads_total keeps counting across scrapes',
  );
  for (const name of [
    'sim_replication_lag_ms',
    'sim_dropped_messages_total',
    'sim_partition_active',
    'process_cpu_seconds_total',
  ])
    t.match(metrics, name, `metrics include ${name}`);
});

t.test('a paused follower catches up after resume; a paused leader refuses writes', async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  t.same((await c.post(`${V}/clusters/${id}/nodes/n3/pause`)).body, { status: 'paused', node: 'n3' });
  t.equal((await c.get(`${V}/clusters/${id}/state`)).body.nodes.n3.state, 'paused', 'state shows paused');
  for (let i = 0; i < 50; i++)
    t.equal((await c.post(`${V}/clusters/${id}/write`, { key: `p${i}`, value: String(i) })).status, 200);
  await sleep(150);
  const st = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.equal(st.nodes.n3.last_applied, 0, 'the paused follower applied nothing');
  t.equal(st.nodes.n3.lag, 50, 'its lag is 50 entries');
  t.equal((await c.get(`${V}/clusters/${id}/read?key=p1&node_id=n3`)).status, 404, 'reading from a paused node is 404');
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'x', value: 'y', target_node_id: 'n3' })).status,
    409,
    'writing to a paused node is 409',
  );
  await c.post(`${V}/clusters/${id}/nodes/n3/resume`);
  await eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body.nodes.n3.last_applied === 50, 5000);
  t.equal((await c.get(`${V}/clusters/${id}/state`)).body.nodes.n3.lag, 0, 'caught up: lag 0');
  await c.post(`${V}/clusters/${id}/nodes/n1/pause`);
  const r = await c.post(`${V}/clusters/${id}/write`, { key: 'z', value: 'z' });
  t.equal(r.status, 409, 'a write to a paused leader is 409');
  t.match(r.body.error, /paused/);
});

t.test('a follower paused past the retained log catches up from a snapshot', async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  await c.post(`${V}/clusters/${id}/nodes/n3/pause`);
  // 1,400 entries (more than the 1,000-1,250 a leader keeps), over 300 keys so some are overwritten.
  for (let b = 0; b < 14; b++) {
    const entries = Array.from({ length: 100 }, (_, i) => ({
      key: `s${(b * 100 + i) % 300}`,
      value: `v${b * 100 + i}`,
    }));
    t.equal((await c.post(`${V}/clusters/${id}/write-batch`, { entries })).status, 200);
  }
  const leaderLog = (await c.get(`${V}/clusters/${id}/nodes/n1/log`)).body;
  t.ok(
    leaderLog.length <= 1250 && leaderLog[0].index > 1,
    `the leader kept only the recent log (${leaderLog.length} entries from ${leaderLog[0].index})`,
  );
  await c.post(`${V}/clusters/${id}/nodes/n3/resume`);
  await eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body.nodes.n3.last_applied === 1400, 8000);
  const [leader, follower] = [await storeOf(id, 'n1'), await storeOf(id, 'n3')];
  t.equal(Object.keys(follower).length, 300, 'the follower has every key');
  t.same(follower, leader, 'the follower store equals the leader store');
  t.equal(follower.s99.value, b64('v1299'), 'with the latest value of each key');
});

t.test('sync writes time out with 409 when a follower is paused; semi_sync needs only one', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', replication_mode: 'sync' });
  const id = cl.id;
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '1' })).status,
    200,
    'sync write with every follower up',
  );
  await c.post(`${V}/clusters/${id}/nodes/n2/pause`);
  const r = await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '2' });
  t.equal(r.status, 409, 'sync write with a paused follower is 409');
  t.match(
    r.body.error,
    /sync replication timed out .* applied on leader n1 .* indeterminate/,
    'the message says applied on the leader but not confirmed',
  );
  const patched = await c.patch(`${V}/clusters/${id}/config`, { replication_mode: 'semi_sync' });
  t.equal(patched.status, 200);
  t.equal(patched.body.config.replication_mode, 'semi_sync', 'PATCH config switches the mode');
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '3' })).status,
    200,
    'semi_sync succeeds with one follower up',
  );
  await c.post(`${V}/clusters/${id}/nodes/n3/pause`);
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '4' })).status,
    409,
    'semi_sync fails with no follower up',
  );
  await c.patch(`${V}/clusters/${id}/config`, { replication_mode: 'async', quorum_n: 9 });
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '5' })).status,
    200,
    'async succeeds regardless',
  );
});

t.test('a partition separating a follower stalls it and healing lets it converge', async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  const p = await c.post(`${V}/clusters/${id}/network/partition`, { group_a: ['n1', 'n2'], group_b: ['n3'] });
  t.equal(p.status, 201);
  const pid = p.body.partition_id;
  t.type(pid, 'string');
  const st = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.same(
    st.partitions[pid],
    { id: pid, group_a: { n1: true, n2: true }, group_b: { n3: true } },
    'the partition is in the cluster state',
  );
  t.match(
    (await c.get('/metrics')).text,
    new RegExp(`sim_partition_active\\{cluster_id="${id}"\\} 1`),
    'sim_partition_active is 1',
  );
  for (let i = 0; i < 10; i++) await c.post(`${V}/clusters/${id}/write`, { key: `q${i}`, value: 'v' });
  await eventually(async () => (await storeOf(id, 'n2')).q9 !== undefined);
  await sleep(200);
  t.equal(Object.keys(await storeOf(id, 'n3')).length, 0, 'the isolated follower has nothing');
  t.equal((await c.del(`${V}/clusters/${id}/network/partition/${pid}`)).status, 204, 'heal answers 204');
  await eventually(async () => Object.keys(await storeOf(id, 'n3')).length === 10, 5000);
  t.pass('after healing the follower converged');
  t.match(
    (await c.get('/metrics')).text,
    new RegExp(`sim_partition_active\\{cluster_id="${id}"\\} 0`),
    'sim_partition_active back to 0',
  );
});

t.test('latency and drop rate shape replication; clearing faults restores it', async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  t.equal((await c.post(`${V}/clusters/${id}/network/latency`, { from: 'n1', to: 'n2', ms: 400 })).status, 200);
  t.equal((await c.post(`${V}/clusters/${id}/network/drop`, { from: 'n1', to: 'n3', rate: 1 })).status, 200);
  await c.post(`${V}/clusters/${id}/write`, { key: 'slow', value: 'v' });
  await sleep(150);
  t.equal((await storeOf(id, 'n2')).slow, undefined, 'not yet on the follower behind 400 ms of latency');
  await eventually(async () => (await storeOf(id, 'n2')).slow !== undefined, 3000);
  t.pass('the value arrives after the latency');
  await sleep(200);
  t.equal((await storeOf(id, 'n3')).slow, undefined, 'nothing reaches the follower whose link drops everything');
  const cleared = await c.del(`${V}/clusters/${id}/network/faults`);
  t.same(cleared.body, { status: 'faults cleared' });
  await eventually(async () => (await storeOf(id, 'n3')).slow !== undefined, 5000);
  t.pass('after clearing faults the retransmit brings the follower up to date');
});

t.test('atomic batches are all-or-nothing, non-atomic batches answer per entry', async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  const ok = await c.post(`${V}/clusters/${id}/write-batch`, {
    atomic: true,
    entries: [
      { key: 'a', value: '1' },
      { key: 'b', value: '2' },
    ],
  });
  t.equal(ok.status, 200);
  t.equal(ok.body.atomic, true);
  t.same(
    ok.body.entries.map((e: any) => [e.key, e.value, e.version]),
    [
      ['a', b64('1'), 1],
      ['b', b64('2'), 1],
    ],
    'both entries applied in one log entry',
  );
  const refused = await c.post(`${V}/clusters/${id}/write-batch`, {
    atomic: true,
    entries: [
      { key: 'c', value: '3' },
      { key: 'd', value: '4', target_node_id: 'n2' },
    ],
  });
  t.equal(refused.status, 409, 'an atomic batch with an entry aimed at a follower is refused');
  const s = await storeOf(id, 'n1');
  t.equal(s.c, undefined, 'and none of its entries was applied');
  await eventually(async () => (await storeOf(id, 'n3')).b !== undefined);
  t.equal((await storeOf(id, 'n3')).a.version, 1, 'the atomic batch replicated as one entry');
  const mixed = await c.post(`${V}/clusters/${id}/write-batch`, {
    entries: [
      { key: 'e', value: '5' },
      { key: 'f', value: '6', target_node_id: 'n2' },
      { key: 'g', value: '7', target_node_id: 'n8' },
    ],
  });
  t.equal(mixed.status, 200);
  t.equal(mixed.body.results[0].entry.key, 'e', 'first entry written');
  t.match(mixed.body.results[1], { key: 'f', error: /not the leader/ }, 'second entry has its own error');
  t.match(mixed.body.results[2], { key: 'g', error: /not found/ }, 'third entry has its own error');
});

t.test("clock skew shifts a node's timestamps; adding and removing nodes; failover", async (t) => {
  const cl = await newCluster();
  const id = cl.id;
  const skew = await c.post(`${V}/clusters/${id}/nodes/n1/clock-skew`, { ms: 3_600_000 });
  t.same(skew.body, { status: 'skewed', node: 'n1', skew_ms: 3_600_000 });
  const w = await c.post(`${V}/clusters/${id}/write`, { key: 'k', value: 'v' });
  t.ok(w.body.entry.timestamp / 1e6 - Date.now() > 3_500_000, 'the leader stamps writes an hour ahead');
  const added = await c.post(`${V}/clusters/${id}/nodes`);
  t.equal(added.status, 201);
  t.equal(added.body.id, 'n4', 'the new node takes the next number');
  t.equal(added.body.role, 'follower');
  await c.post(`${V}/clusters/${id}/write`, { key: 'k2', value: 'v2' });
  await eventually(async () => (await storeOf(id, 'n4')).k2 !== undefined, 5000);
  t.ok((await storeOf(id, 'n4')).k, 'the new node received earlier writes too');
  t.equal((await c.del(`${V}/clusters/${id}/nodes/n1`)).status, 204, 'removing the leader');
  const st = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.not(st.leader_id, 'n1', 'a follower was promoted');
  t.same(st.node_ids.sort(), ['n2', 'n3', 'n4']);
  t.equal(st.nodes[st.leader_id].role, 'leader');
  t.equal(
    (await c.post(`${V}/clusters/${id}/write`, { key: 'k3', value: 'v3' })).status,
    200,
    'writes work after failover',
  );
});

t.test('the /ws stream shows the events of a write', async (t) => {
  const cl = await newCluster();
  const ws = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${cl.id}`);
  t.teardown(() => ws.close());
  await c.post(`${V}/clusters/${cl.id}/write`, { key: 'evt', value: 'v' });
  const recv = await ws.waitFor((m) => m.type === 'write_received');
  t.match(
    recv,
    { type: 'write_received', cluster_id: cl.id, node_id: 'n1', data: { key: 'evt' } },
    'write_received envelope',
  );
  t.match(recv.timestamp, /^\d{4}-/, 'events carry a timestamp');
  const rep = await ws.waitFor((m) => m.type === 'entry_replicated');
  t.equal(rep.cluster_id, cl.id, 'entry_replicated for this cluster');
  const other = await newCluster();
  await c.post(`${V}/clusters/${other.id}/write`, { key: 'x', value: 'y' });
  await sleep(100);
  t.notOk(
    ws.messages.some((m) => m.cluster_id === other.id),
    'the cluster_id filter keeps other clusters out',
  );
});

t.test('health, readiness and reset', async (t) => {
  t.same((await c.get('/healthz')).body, { status: 'ok' });
  t.equal((await c.get('/readyz')).status, 200);
  const r = await c.post(`${V}/simulation/reset`);
  t.same(r.body, { status: 'reset' });
  t.same((await c.get(`${V}/clusters`)).body, [], 'reset removed every cluster');
});
