/**
 * /metrics values after the scrape stopped asking every node (issue 20 point 2): per-cluster series
 * read from the front's own counters and the leaders' statuses must still match what each cluster
 * reports of itself (GET .../state), and a deleted cluster's series must all go without listing the
 * registry. Black-box: the real server on a free port. The DeferredCounts bookkeeping that the
 * removal relies on is checked as a pure unit first.
 */
import t from 'tap';
import { DeferredCounts } from '../../src/replication/metrics.js';
import { api, eventually } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

t.test('DeferredCounts remembers which node series it handed over, per cluster, until forgotten', (t) => {
  const cases: Array<{ name: string; adds: Array<[string, string]>; forget?: string; want: Record<string, string[]> }> =
    [
      { name: 'nothing drained: no series', adds: [], want: { a: [] } },
      {
        name: 'each node drained at least once is a series',
        adds: [
          ['a', 'n1'],
          ['a', 'n1'],
          ['a', 'n2'],
          ['b', 'n3'],
        ],
        want: { a: ['n1', 'n2'], b: ['n3'] },
      },
      {
        name: 'a forgotten cluster has no series left; the others keep theirs',
        adds: [
          ['a', 'n1'],
          ['b', 'n2'],
        ],
        forget: 'a',
        want: { a: [], b: ['n2'] },
      },
    ];
  for (const c of cases) {
    const counts = new DeferredCounts();
    for (const [cid, nid] of c.adds) counts.add(cid, nid);
    const handed: Record<string, number> = {};
    counts.drain((cid, nid, n) => {
      handed[`${cid}/${nid}`] = n;
    });
    if (c.forget !== undefined) counts.forget(c.forget);
    for (const [cid, nodes] of Object.entries(c.want)) t.same([...counts.drainedNodes(cid)].sort(), nodes, c.name);
    const total = Object.values(handed).reduce((a, b) => a + b, 0);
    t.equal(total, c.adds.length, `${c.name}: every increment handed over once`);
  }
  t.end();
});

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function series(text: string, name: string, labels: string): number | undefined {
  const escaped = labels.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const m = new RegExp(`^${name}\\{${escaped}\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

/** Sum of every series of `name` for one cluster. */
function clusterSum(text: string, name: string, clusterId: string): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}\\{cluster_id="${clusterId}"[^}]*\\} (\\S+)$`, 'gm')))
    sum += Number(m[1]);
  return sum;
}

t.test('a scrape after writes to two clusters reports what each cluster reports of itself', async (t) => {
  const a = (await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 3 })).body;
  const b = (await c.post(`${V}/clusters`, { strategy: 'leaderless', node_count: 3 })).body;
  t.type(a.id, 'string', 'single_leader cluster created');
  t.type(b.id, 'string', 'leaderless cluster created');
  // Cluster a: 7 writes through its leader, 3 reads on a follower. Cluster b (no leader): writes
  // coordinated by n1 and n2, so the per-node write series differ.
  for (let i = 0; i < 7; i++)
    t.equal((await c.post(`${V}/clusters/${a.id}/write`, { key: `k${i}`, value: 'v' })).status, 200);
  for (let i = 0; i < 3; i++) t.equal((await c.get(`${V}/clusters/${a.id}/read?key=k1&node_id=n2`)).status, 200);
  const toB: Record<string, number> = { n1: 4, n2: 2 };
  for (const [node, n] of Object.entries(toB)) {
    for (let i = 0; i < n; i++) {
      const r = await c.post(`${V}/clusters/${b.id}/write`, { key: `${node}-${i}`, value: 'v', target_node_id: node });
      t.equal(r.status, 200, `write ${i} to b through ${node}`);
    }
  }
  // Replication settles: the leader reports no lag for either follower.
  await eventually(async () => {
    const lag = (await c.get(`${V}/clusters/${a.id}/state`)).body.metrics.replication_lag_ms;
    return lag.n2 === 0 && lag.n3 === 0;
  });
  const text = (await c.get('/metrics')).text;
  for (const cl of [a, b]) {
    const st = (await c.get(`${V}/clusters/${cl.id}/state`)).body;
    t.equal(
      clusterSum(text, 'sim_writes_total', cl.id),
      st.metrics.writes,
      `writes of ${cl.config.strategy} match its state`,
    );
    t.equal(
      clusterSum(text, 'sim_reads_total', cl.id),
      st.metrics.reads,
      `reads of ${cl.config.strategy} match its state`,
    );
    t.equal(
      series(text, 'sim_dropped_messages_total', `cluster_id="${cl.id}"`),
      st.dropped_messages,
      `dropped messages of ${cl.config.strategy} match its state`,
    );
    t.equal(series(text, 'sim_partition_active', `cluster_id="${cl.id}"`), 0, 'no partition');
  }
  t.equal(series(text, 'sim_writes_total', `cluster_id="${a.id}",node_id="n1",strategy="single_leader"`), 7);
  t.equal(series(text, 'sim_reads_total', `cluster_id="${a.id}",node_id="n2"`), 3);
  for (const [node, n] of Object.entries(toB))
    t.equal(series(text, 'sim_writes_total', `cluster_id="${b.id}",node_id="${node}",strategy="leaderless"`), n);
  for (const f of ['n2', 'n3'])
    t.equal(series(text, 'sim_replication_lag_ms', `cluster_id="${a.id}",follower_id="${f}"`), 0, `lag of ${f} is 0`);
  t.notMatch(text, new RegExp(`sim_replication_lag_ms\\{cluster_id="${b.id}"`), 'no lag series without a leader');

  // A partition shows in the gauge at the next scrape, the leader's lag with it.
  const p = await c.post(`${V}/clusters/${a.id}/network/partition`, { group_a: ['n1', 'n2'], group_b: ['n3'] });
  t.equal(p.status, 201, 'partition');
  t.equal((await c.post(`${V}/clusters/${a.id}/write`, { key: 'cut', value: 'v' })).status, 200, 'write while cut');
  const lagged = await eventually(async () => {
    const m = (await c.get('/metrics')).text;
    const lag = series(m, 'sim_replication_lag_ms', `cluster_id="${a.id}",follower_id="n3"`);
    return lag !== undefined && lag > 0 ? m : undefined;
  });
  t.equal(series(lagged, 'sim_partition_active', `cluster_id="${a.id}"`), 1, 'partition gauge is 1');
  t.equal(series(lagged, 'sim_writes_total', `cluster_id="${a.id}",node_id="n1",strategy="single_leader"`), 8);

  // Deleting a cluster removes every one of its series; the other cluster's stay as they were.
  t.equal((await c.del(`${V}/clusters/${a.id}`)).status, 204, 'cluster a deleted');
  const after = (await c.get('/metrics')).text;
  t.notMatch(after, new RegExp(`cluster_id="${a.id}"`), 'no series of the deleted cluster');
  t.equal(series(after, 'sim_writes_total', `cluster_id="${b.id}",node_id="n1",strategy="leaderless"`), 4);
  t.equal(clusterSum(after, 'sim_writes_total', b.id), 6, 'the other cluster keeps its counts');
  t.equal((await c.post(`${V}/clusters/${b.id}/write`, { key: 'more', value: 'v', target_node_id: 'n2' })).status, 200);
  const last = (await c.get('/metrics')).text;
  t.equal(
    series(last, 'sim_writes_total', `cluster_id="${b.id}",node_id="n2",strategy="leaderless"`),
    3,
    'counts go on',
  );
  t.equal(clusterSum(last, 'sim_writes_total', b.id), (await c.get(`${V}/clusters/${b.id}/state`)).body.metrics.writes);
});
