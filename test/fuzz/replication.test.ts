/**
 * Hostile-input fuzzing of every endpoint of the replication simulator (spec + ../shared/specs/DECISIONS.md), against
 * the real process (dist/src/replication/main.js). The fixture holds one cluster per strategy plus a
 * small "victim" cluster for the destructive endpoints; the state a refused request must not change
 * is the set of clusters, each fixture cluster's config, nodes, node states and partitions, and the
 * newest version of every key across its replicas (so background replication is not a change).
 * Properties and runner: harness.ts. Endpoints not built yet answer 404 and are fuzzed all the same.
 */
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { api } from '../helpers/http.js';
import { startReplSim, type Started } from '../helpers/server.js';
import type { Hostile } from './generators.js';
import {
  allowTime,
  fuzzOptions,
  fuzzService,
  parseJson,
  unknownMethodDropped,
  waitQuiet,
  type Endpoint,
  type KnownBug,
  type ServiceUnderTest,
  type Wire,
} from './harness.js';

type Role = 'sl' | 'll' | 'ml' | 'raft';
const roles: Role[] = ['sl', 'll', 'ml', 'raft'];

interface Fixture {
  ids: Record<Role, string>;
  /** Each fixture cluster's effective config when it was created. */
  configs: Partial<Record<Role, Record<string, unknown>>>;
  victim: string;
  victimOther: string;
  victimPartition: string;
  /** Round-robin over the fixture clusters for endpoints every strategy answers. */
  turn: number;
}

const clusterBodies: Record<Role, Record<string, unknown>> = {
  sl: { strategy: 'single_leader', node_count: 3 },
  ll: { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 },
  ml: { strategy: 'multi_leader', node_count: 3, conflict_resolver: 'manual' },
  raft: { strategy: 'raft', node_count: 3 },
};
const fixtureNodes = ['n1', 'n2', 'n3'];
const victimBody = { strategy: 'single_leader', node_count: 2 };

interface ClusterView {
  id: string;
  config: Record<string, unknown>;
  node_ids: string[];
  nodes: Record<string, { state: string }>;
  partitions: Record<string, unknown>;
}
interface EntryView {
  value: string;
  tombstone: boolean;
  timestamp: number;
  version: number;
}

async function must<T>(p: Promise<{ status: number; body: T; text: string }>, what: string): Promise<T> {
  const r = await p;
  if (r.status >= 300) throw new Error(`fixture: ${what} answered ${r.status} ${r.text}`);
  return r.body;
}

async function createCluster(srv: Started, body: Record<string, unknown>): Promise<ClusterView> {
  return must(api(srv.base).post<ClusterView>('/api/v1/clusters', body), `create ${JSON.stringify(body)}`);
}

/** The victim: a single_leader cluster of n1 (leader) and one other node, split by one partition. */
async function ensureVictim(srv: Started, fx: Fixture, clusters: ClusterView[]): Promise<void> {
  const c = api(srv.base);
  const v = clusters.find((x) => x.id === fx.victim);
  if (!v || !v.node_ids.includes('n1')) {
    if (v) await c.del(`/api/v1/clusters/${fx.victim}`);
    fx.victim = (await createCluster(srv, victimBody)).id;
    fx.victimOther = 'n2';
    fx.victimPartition = '';
  } else {
    // Node ids are never reused (n3, n4, ...): keep whichever other node is there, or add one.
    const others = v.node_ids.filter((id) => id !== 'n1');
    for (const id of others.slice(1)) await c.del(`/api/v1/clusters/${fx.victim}/nodes/${id}`);
    if (others[0] === undefined)
      fx.victimOther = (
        await must(c.post<{ id: string }>(`/api/v1/clusters/${fx.victim}/nodes`), 'victim add node')
      ).id;
    else fx.victimOther = others[0];
    for (const [id, n] of Object.entries(v.nodes))
      if (n.state !== 'online' && v.node_ids.includes(id))
        await c.post(`/api/v1/clusters/${fx.victim}/nodes/${id}/resume`);
  }
  const state = await must(c.get<ClusterView>(`/api/v1/clusters/${fx.victim}/state`), 'victim state');
  const parts = Object.keys(state.partitions);
  if (parts.length === 1 && parts[0] === fx.victimPartition) return;
  await c.del(`/api/v1/clusters/${fx.victim}/network/faults`);
  const p = await must(
    c.post<{ partition_id: string }>(`/api/v1/clusters/${fx.victim}/network/partition`, {
      group_a: ['n1'],
      group_b: [fx.victimOther],
    }),
    'victim partition',
  );
  fx.victimPartition = p.partition_id;
}

async function restore(srv: Started, fx: Fixture): Promise<void> {
  const c = api(srv.base);
  const clusters = await must(c.get<ClusterView[]>('/api/v1/clusters'), 'list clusters');
  const keep = new Set([...Object.values(fx.ids), fx.victim]);
  for (const cl of clusters) if (!keep.has(cl.id)) await c.del(`/api/v1/clusters/${cl.id}`);
  for (const role of roles) {
    const cl = clusters.find((x) => x.id === fx.ids[role]);
    const config = clusterBodies[role];
    // A changed config (reconfigure/add-node grows N, W, R) means a new cluster: see the BUG tests below.
    // (PATCH config may change single_leader's replication_mode: that one is patched back below.)
    const seen =
      cl && role === 'sl' ? { ...cl.config, replication_mode: fx.configs[role]?.['replication_mode'] } : cl?.config;
    if (!cl || !fixtureNodes.every((n) => cl.node_ids.includes(n)) || !isDeepStrictEqual(seen, fx.configs[role])) {
      if (cl) await c.del(`/api/v1/clusters/${cl.id}`);
      const created = await createCluster(srv, config);
      fx.ids[role] = created.id;
      fx.configs[role] = created.config;
      await c.post(
        `/api/v1/clusters/${fx.ids[role]}/write`,
        role === 'raft' ? { key: 'k1', value: 'v1' } : { key: 'k1', value: 'v1', target_node_id: 'n1' },
      );
      continue;
    }
    // A node added (POST nodes, reconfigure/add-node) is removed again; cheaper than a new cluster.
    for (const id of cl.node_ids) if (!fixtureNodes.includes(id)) await c.del(`/api/v1/clusters/${cl.id}/nodes/${id}`);
    for (const [id, n] of Object.entries(cl.nodes))
      if (n.state !== 'online' && fixtureNodes.includes(id))
        await c.post(`/api/v1/clusters/${cl.id}/nodes/${id}/resume`);
    await c.del(`/api/v1/clusters/${cl.id}/network/faults`);
    if (role === 'sl' && cl.config['replication_mode'] !== 'async')
      await c.patch(`/api/v1/clusters/${cl.id}/config`, { replication_mode: 'async' });
  }
  await ensureVictim(srv, fx, await must(c.get<ClusterView[]>('/api/v1/clusters'), 'list clusters'));
  await waitQuiet(() => snapshot(srv, fx));
}

async function setup(srv: Started): Promise<Fixture> {
  const fx: Fixture = {
    ids: { sl: '', ll: '', ml: '', raft: '' },
    configs: {},
    victim: '',
    victimOther: '',
    victimPartition: '',
    turn: 0,
  };
  await restore(srv, fx);
  return fx;
}

/** Newest entry per key across the replicas: replication, read repair and anti-entropy leave it alone. */
function newestPerKey(stores: Array<Record<string, EntryView>>): Record<string, EntryView> {
  const out: Record<string, EntryView> = {};
  for (const s of stores) {
    for (const [k, e] of Object.entries(s)) {
      const cur = out[k];
      if (!cur || e.timestamp > cur.timestamp || (e.timestamp === cur.timestamp && e.version > cur.version))
        out[k] = { value: e.value, tombstone: e.tombstone, timestamp: e.timestamp, version: e.version };
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

/**
 * Every cluster id; each fixture cluster's config, node states and partitions; and, for the cluster
 * in scope (the one the request names; all of them when scope is undefined), the newest entry per key.
 */
async function snapshot(srv: Started, fx: Fixture, scope?: string): Promise<unknown> {
  const c = api(srv.base);
  const clusters = (await c.get<ClusterView[]>('/api/v1/clusters')).body ?? [];
  const fixture: Record<string, unknown> = {};
  for (const id of [...Object.values(fx.ids), fx.victim]) {
    const cl = clusters.find((x) => x.id === id);
    if (!cl) {
      fixture[id] = 'missing';
      continue;
    }
    const view: Record<string, unknown> = {
      config: cl.config,
      nodes: Object.fromEntries(cl.node_ids.map((n) => [n, cl.nodes[n]?.state])),
      partitions: Object.keys(cl.partitions).sort(),
    };
    if (scope === undefined || scope === id) {
      const stores = await Promise.all(
        cl.node_ids.map(
          async (n) => (await c.get<Record<string, EntryView>>(`/api/v1/clusters/${id}/nodes/${n}/store`)).body ?? {},
        ),
      );
      view['data'] = newestPerKey(stores);
    }
    fixture[id] = view;
  }
  return { clusters: clusters.map((x) => x.id).sort(), fixture };
}

/** The cluster id a request names in its path ('' for none). */
const scopeOf = (wire: Wire): string => /^\/api\/v1\/clusters\/([^/?]+)/.exec(wire.path)?.[1] ?? '';

/** Deletes the cluster a successful creation (or scenario run) made, so they do not pile up. */
async function deleteCreated(srv: Started, _fx: Fixture, text: string): Promise<void> {
  const id = (parseJson(text) as { id?: unknown } | undefined)?.id;
  if (typeof id === 'string') await api(srv.base).del(`/api/v1/clusters/${encodeURIComponent(id)}`);
}

const any = (fx: Fixture): string => fx.ids[roles[fx.turn++ % roles.length] as Role];
const writeBody = (role: Role, key: string): Hostile =>
  role === 'raft' ? { key, value: 'v2', client_id: 'fz' } : { key, value: 'v2', client_id: 'fz', target_node_id: 'n1' };
const createBody: Hostile = {
  strategy: 'leaderless',
  node_count: 1,
  replication_mode: 'async',
  conflict_resolver: 'lww',
  quorum_n: 1,
  quorum_w: 1,
  quorum_r: 1,
  regions: 1,
  inter_region_latency_ms: 80,
  consistency_level: 'quorum',
  read_repair_mode: 'async',
  sloppy_quorum: true,
};

const C = '/api/v1/clusters/{id}';
const on =
  (role: Role) =>
  (fx: Fixture): Record<string, string> => ({ id: fx.ids[role] });
const node =
  (role: Role, nodeId: string) =>
  (fx: Fixture): Record<string, string> => ({ id: fx.ids[role], nodeId });

const endpoints: Array<Endpoint<Fixture>> = [
  { method: 'GET', path: '/healthz', fixtureFree: true },
  { method: 'GET', path: '/readyz', fixtureFree: true },
  { method: 'GET', path: '/metrics', fixtureFree: true },
  { method: 'GET', path: '/ws', query: () => [['cluster_id', 'x']], fixtureFree: true },
  { method: 'GET', path: '/api/v1/simulation/state' },
  { method: 'GET', path: '/api/v1/simulation/metrics' },
  { method: 'GET', path: '/api/v1/clusters' },
  { method: 'GET', path: `${C}/state`, params: (fx) => ({ id: any(fx) }) },
  { method: 'GET', path: `${C}/suspicion`, params: on('ll') },
  {
    method: 'GET',
    path: `${C}/placement`,
    params: on('ll'),
    query: () => [
      ['key', 'k1'],
      ['n', '2'],
    ],
  },
  { method: 'GET', path: `${C}/conflicts`, params: on('ml') },
  {
    method: 'POST',
    path: `${C}/conflicts/resolve`,
    params: on('ml'),
    body: () => ({ node_id: 'n1', key: 'k1', choice: 'local' }),
  },
  { method: 'PATCH', path: `${C}/config`, params: on('sl'), body: () => ({ replication_mode: 'semi_sync' }) },
  { method: 'GET', path: `${C}/convergence`, params: (fx) => ({ id: any(fx) }) },
  { method: 'GET', path: `${C}/linearizable`, params: (fx) => ({ id: any(fx) }) },
  { method: 'GET', path: `${C}/invariants`, params: (fx) => ({ id: any(fx) }) },
  { method: 'POST', path: `${C}/anti-entropy`, params: on('ll') },
  // Each success waits out the old quorum (~1 s) and costs a new fixture cluster: fewer random runs.
  { method: 'POST', path: `${C}/reconfigure/add-node`, params: on('ll'), runsFactor: 0.3 },
  { method: 'POST', path: `${C}/write`, label: 'single_leader', params: on('sl'), body: () => writeBody('sl', 'k1') },
  { method: 'POST', path: `${C}/write`, label: 'leaderless', params: on('ll'), body: () => writeBody('ll', 'k2') },
  { method: 'POST', path: `${C}/write`, label: 'multi_leader', params: on('ml'), body: () => writeBody('ml', 'k3') },
  { method: 'POST', path: `${C}/write`, label: 'raft', params: on('raft'), body: () => writeBody('raft', 'k4') },
  {
    method: 'GET',
    path: `${C}/read`,
    params: (fx) => ({ id: any(fx) }),
    query: () => [
      ['key', 'k1'],
      ['client_id', 'fz'],
      ['node_id', 'n1'],
    ],
  },
  {
    method: 'DELETE',
    path: `${C}/kv`,
    params: (fx) => ({ id: any(fx) }),
    query: () => [
      ['key', 'k5'],
      ['client_id', 'fz'],
      ['node_id', 'n1'],
    ],
  },
  {
    method: 'POST',
    path: `${C}/write-batch`,
    label: 'atomic, single_leader',
    params: on('sl'),
    body: () => ({
      entries: [
        { key: 'b1', value: 'x' },
        { key: 'b2', value: 'y', client_id: 'fz', target_node_id: 'n1' },
      ] as Hostile[],
      client_id: 'fz',
      atomic: true,
    }),
  },
  {
    method: 'POST',
    path: `${C}/write-batch`,
    label: 'leaderless',
    params: on('ll'),
    body: () => ({
      entries: [{ key: 'b1', value: 'x', target_node_id: 'n2' }, { key: 'b2' }] as Hostile[],
      atomic: false,
    }),
  },
  { method: 'POST', path: `${C}/nodes`, params: (fx) => ({ id: fx.victim }) },
  { method: 'DELETE', path: `${C}/nodes/{nodeId}`, params: (fx) => ({ id: fx.victim, nodeId: fx.victimOther }) },
  { method: 'POST', path: `${C}/nodes/{nodeId}/pause`, params: node('sl', 'n3') },
  { method: 'POST', path: `${C}/nodes/{nodeId}/resume`, params: node('sl', 'n3') },
  { method: 'POST', path: `${C}/nodes/{nodeId}/clock-skew`, params: node('ll', 'n2'), body: () => ({ ms: 100 }) },
  { method: 'GET', path: `${C}/nodes/{nodeId}/log`, params: (fx) => ({ id: any(fx), nodeId: 'n1' }) },
  { method: 'GET', path: `${C}/nodes/{nodeId}/store`, params: (fx) => ({ id: any(fx), nodeId: 'n2' }) },
  {
    method: 'POST',
    path: `${C}/network/partition`,
    params: on('ll'),
    body: () => ({ group_a: ['n1'], group_b: ['n2', 'n3'] }),
  },
  {
    method: 'DELETE',
    path: `${C}/network/partition/{partId}`,
    params: (fx) => ({ id: fx.victim, partId: fx.victimPartition }),
  },
  { method: 'POST', path: `${C}/network/latency`, params: on('ll'), body: () => ({ from: 'n1', to: 'n2', ms: 5 }) },
  { method: 'POST', path: `${C}/network/drop`, params: on('ml'), body: () => ({ from: 'n1', to: 'n2', rate: 0.1 }) },
  { method: 'DELETE', path: `${C}/network/faults`, params: on('sl') },
  { method: 'POST', path: `${C}/demo/read-your-writes`, params: on('sl') },
  { method: 'POST', path: `${C}/demo/monotonic-reads`, params: on('sl') },
  { method: 'POST', path: `${C}/demo/consistent-prefix`, params: on('sl') },
  { method: 'GET', path: '/api/v1/scenarios', fixtureFree: true },
  {
    method: 'POST',
    path: '/api/v1/scenarios/{name}/run',
    params: () => ({ name: 'ReadRepair' }),
    fixtureFree: true,
    runsFactor: 0.3,
    cleanup: deleteCreated,
  },
  { method: 'GET', path: '/api/v1/demos/2pc', query: () => [['crash', 'true']], fixtureFree: true },
  { method: 'GET', path: '/api/v1/demos/mvcc', fixtureFree: true },
  { method: 'GET', path: '/api/v1/demos/wal', query: () => [['mode', 'fsync']], fixtureFree: true },
  { method: 'GET', path: '/api/v1/demos/swim', fixtureFree: true },
  { method: 'GET', path: '/api/v1/demos/paxos', fixtureFree: true },
  { method: 'GET', path: '/api/v1/demos/detsim', query: () => [['seed', '7']], fixtureFree: true },
  // 64 nodes (the cap) are 64 worker threads: a leaderless one takes 7 s on a quiet 2-core machine, more under load.
  {
    method: 'POST',
    path: '/api/v1/clusters',
    body: () => createBody,
    fixtureFree: true,
    runsFactor: 0.5,
    cleanup: deleteCreated,
    timeoutMs: 60_000,
  },
  {
    method: 'POST',
    path: '/api/v1/simulation/start',
    body: () => ({ strategy: 'single_leader', node_count: 1, replication_mode: 'sync' }),
    fixtureFree: true,
    runsFactor: 0.5,
    cleanup: deleteCreated,
    timeoutMs: 60_000,
  },
  { method: 'DELETE', path: C, params: (fx) => ({ id: fx.victim }) },
  // Last: a successful reset removes every cluster, and nothing after it needs them.
  { method: 'POST', path: '/api/v1/simulation/reset', fixtureFree: true, runsFactor: 0.3 },
];

// HEAD bodies and lost 413s were fixed in src/http/app.ts; only uWS's parser limit remains.
const knownBugs: KnownBug[] = [unknownMethodDropped];

const svc: ServiceUnderTest<Fixture> = {
  name: 'replication simulator',
  // NODE_OPTIONS from tap (its process-info loader) would load into the service and every node worker.
  start: () => startReplSim({ NODE_OPTIONS: '' }),
  setup,
  snapshot,
  scopeOf,
  restore,
  endpoints,
  knownBugs,
  webSocket: { path: '/ws', query: [['cluster_id', 'any']] },
};

const opts = fuzzOptions(6);
allowTime(t, opts, endpoints.length);
await fuzzService(t, svc, opts);

// Fixed (regression test): (src/replication, leaderless membership): removing a node leaves quorum_n as it was (N=4 on
// 3 nodes after add-node then DELETE nodes/n4), and reconfigure/add-node then grows N again from the
// stale value until W + R <= N: the third round answers
//   POST /api/v1/clusters/{id}/reconfigure/add-node (no body) -> 500 {"error":"set_quorum N=6 W=3 R=3
//   failed on n1: set_quorum: w + r must be greater than n (W + R > N), got 3 + 3 <= 6; ..."}
// and the refused request still changed the cluster: its config reads N=6 W=3 R=3 on 3 nodes. The
// fuzz fixture recreates a cluster whose config moved, so the random runs do not walk into this;
// this test replays the exact sequence and is skipped until the fix.
t.test(
  'a leaderless cluster that loses an added node keeps a valid quorum, and add-node never answers 5xx',
  async (t) => {
    const srv = await startReplSim({ NODE_OPTIONS: '' });
    t.teardown(() => srv.stop());
    const c = api(srv.base);
    const cl = (await c.post<ClusterView>('/api/v1/clusters', clusterBodies.ll)).body;
    for (let round = 0; round < 3; round++) {
      const before = (await c.get<ClusterView>(`/api/v1/clusters/${cl.id}/state`)).body;
      const r = await c.post<{ added_node?: string; error?: string }>(`/api/v1/clusters/${cl.id}/reconfigure/add-node`);
      t.ok(r.status < 500, `round ${round}: add-node answers ${r.status} ${r.text.slice(0, 120)}`);
      const after = (await c.get<ClusterView>(`/api/v1/clusters/${cl.id}/state`)).body;
      if (r.status >= 400)
        t.same(after.config, before.config, `round ${round}: a refused add-node leaves the config alone`);
      if (r.body.added_node) await c.del(`/api/v1/clusters/${cl.id}/nodes/${r.body.added_node}`);
      const now = (await c.get<ClusterView>(`/api/v1/clusters/${cl.id}/state`)).body;
      t.ok(
        Number(now.config['quorum_n']) <= now.node_ids.length,
        `round ${round}: N=${String(now.config['quorum_n'])} is at most the ${now.node_ids.length} nodes`,
      );
    }
  },
);
