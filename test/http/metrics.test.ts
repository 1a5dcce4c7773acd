/**
 * The metrics every service exports: the edge's request-duration histogram
 * (http_server_request_duration_seconds by method, route template and status; its exposition
 * checked against prom-client's own Histogram), prom-client's default process metrics, the names
 * each spec gives; and the Grafana dashboards in docs/grafana/, which must parse and name only
 * metrics the service's /metrics declares. The three services run in this process, as `make run`
 * hosts them, on port 0.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Histogram, Registry } from 'prom-client';
import { DeferredHistogram } from '../../src/util/metrics.js';
import { requestDurationBucketsSeconds } from '../../src/http/request-metrics.js';
import { startReplicationSim } from '../../src/replication/server.js';
import { startClockLab } from '../../src/clocklab/server.js';
import { silentLogger } from '../../src/util/logger.js';
import { api } from '../helpers/http.js';
import { repoRoot } from '../helpers/server.js';
import { boolFlag, startHarness } from '../flags/fixtures/helpers.js';

const H = 'http_server_request_duration_seconds';
/** The flag service's environment routes, as templates. */
const FE = '/api/v1/projects/{projectKey}/environments/{envKey}';
/** The histogram's own labels of one series, in the order the exposition writes them. */
const L = (method: string, route: string, status: string): string =>
  `http_request_method="${method}",http_route="${route}",http_response_status_code="${status}"`;

/** The metric families a scrape declares (`# TYPE name type`). */
function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) out.set(m[1] as string, m[2] as string);
  return out;
}

/** Every sample name a family can produce (a histogram's _bucket, _sum and _count). */
function sampleNames(fams: Map<string, string>): Set<string> {
  const out = new Set<string>();
  for (const [name, type] of fams) {
    out.add(name);
    if (type === 'histogram' || type === 'summary') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
  }
  return out;
}

/** The value of one sample line, NaN when absent. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

/** Every http_route label value of the histogram's series. */
function routesSeen(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(new RegExp(`^${H}_count\\{[^}]*http_route="([^"]*)"`, 'gm'))) out.add(m[1] as string);
  return out;
}

const defaultMetrics = [
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_resident_memory_bytes',
  'process_open_fds',
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_p99_seconds',
  'nodejs_active_handles_total',
  'nodejs_heap_size_used_bytes',
  'nodejs_heap_space_size_used_bytes',
  'nodejs_version_info',
  'nodejs_gc_duration_seconds',
];

t.test('the deferred histogram exports exactly what prom-client’s Histogram exports for the same values', async (t) => {
  const cases: Array<{ name: string; values: number[] }> = [
    { name: 'a value equal to a bound is counted in that bound’s bucket (le)', values: [0.005, 0.01, 10] },
    { name: 'a value just past a bound goes to the next bucket', values: [0.0050001, 0.0100001] },
    { name: 'a value past every bound is only in +Inf', values: [10.5, 60] },
    { name: 'zero and tiny values land in the first bucket', values: [0, 1e-9] },
    { name: 'a mix across series', values: [0.2, 0.3, 0.9, 1, 2, 4] },
  ];
  for (const c of cases) {
    const ours = new Registry();
    const theirs = new Registry();
    const d = new DeferredHistogram('x_seconds', 'help', ['method', 'route'], requestDurationBucketsSeconds, ours);
    const h = new Histogram({
      name: 'x_seconds',
      help: 'help',
      labelNames: ['method', 'route'],
      buckets: [...requestDurationBucketsSeconds],
      registers: [theirs],
    });
    c.values.forEach((v, i) => {
      const labels = { method: i % 2 ? 'GET' : 'POST', route: '/a/{id}' };
      d.seriesFor(labels).observe(v);
      h.observe(labels, v);
    });
    t.equal(await ours.metrics(), await theirs.metrics(), c.name);
  }
  const r = new Registry();
  t.throws(() => new DeferredHistogram('y', 'help', ['a'], [1, 1], r), /buckets must increase/, 'equal bounds refused');
});

t.test('every service: request durations by route template, default metrics, spec names, dashboards', async (t) => {
  const scrapes = new Map<string, string>();

  // Replication simulator.
  const sim = await startReplicationSim({ port: 0, host: '127.0.0.1', logger: silentLogger() });
  t.teardown(() => sim.close());
  const rs = api(`http://127.0.0.1:${sim.port}`);
  const cl = await rs.post('/api/v1/clusters', { strategy: 'single_leader', node_count: 3 });
  t.equal(cl.status, 201);
  const id = String(cl.body.id);
  for (let i = 0; i < 3; i++)
    t.equal((await rs.post(`/api/v1/clusters/${id}/write`, { key: `k${i}`, value: 'v' })).status, 200);
  t.equal((await rs.get('/api/v1/clusters/no-such-cluster/state')).status, 404);
  t.equal((await rs.get('/no/such/path')).status, 404);
  const simText = (await rs.get('/metrics')).text;
  scrapes.set('replication', simText);
  t.match(simText, new RegExp(`^# TYPE ${H} histogram$`, 'm'), 'the simulator declares the histogram');
  t.equal(
    sample(simText, `${H}_count`, L('POST', '/api/v1/clusters/{id}/write', '200')),
    3,
    'three writes under one route template, by method and status',
  );
  t.equal(sample(simText, `${H}_count`, L('POST', '/api/v1/clusters', '201')), 1, 'the cluster creation');
  t.equal(
    sample(simText, `${H}_count`, L('GET', '/api/v1/clusters/{id}/state', '404')),
    1,
    'a 404 on a matched route keeps its template',
  );
  t.equal(
    sample(simText, `${H}_count`, L('GET', '', '404')),
    1,
    'a path no route matches is recorded with an empty route (never the raw path)',
  );
  const writeBuckets = requestDurationBucketsSeconds.map((le) =>
    sample(simText, `${H}_bucket`, `le="${le}",${L('POST', '/api/v1/clusters/{id}/write', '200')}`),
  );
  t.ok(
    writeBuckets.every((v, i) => Number.isFinite(v) && (i === 0 || v >= (writeBuckets[i - 1] as number))),
    `buckets at OpenTelemetry's bounds, cumulative (${writeBuckets.join(' ')})`,
  );
  t.ok(
    sample(simText, `${H}_sum`, L('POST', '/api/v1/clusters/{id}/write', '200')) > 0,
    'the sum of durations is positive',
  );
  t.notMatch(simText, new RegExp(`http_route="[^"]*${id}`), 'no cluster id appears as a route');
  for (const name of [
    'sim_writes_total',
    'sim_reads_total',
    'sim_replication_lag_ms',
    'sim_conflicts_total',
    'sim_quorum_failures_total',
    'sim_dropped_messages_total',
    'sim_partition_active',
    'http_handler_errors_total',
  ])
    t.ok(families(simText).has(name), `the simulator still exports ${name}`);

  // Feature flags (its default metrics have carried the flags_ prefix since the service began).
  const h = await startHarness(t);
  const tok = await h.login();
  const E = '/api/v1/projects/web/environments/prod';
  t.equal((await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag('m') })).status, 201);
  for (let i = 0; i < 2; i++)
    t.equal((await h.call('POST', `${E}/evaluate`, { token: tok, body: { context: { key: `u${i}` } } })).status, 200);
  t.equal((await h.call('GET', `${E}/flags/nope`, { token: tok })).status, 404);
  const flagsText = String((await h.call('GET', '/metrics')).body);
  scrapes.set('flags', flagsText);
  t.equal(
    sample(flagsText, `${H}_count`, L('POST', `${FE}/evaluate`, '200')),
    2,
    'flags: two evaluations under their template',
  );
  t.equal(sample(flagsText, `${H}_count`, L('GET', `${FE}/flags/{flagKey}`, '404')), 1, 'flags: the missing flag');
  t.equal(sample(flagsText, `${H}_count`, L('POST', '/auth/login', '200')), 1, 'flags: the login');
  for (const name of [
    'flags_http_requests_total',
    'flags_evaluations_total',
    'flags_sse_clients',
    'flags_logins_total',
  ])
    t.ok(families(flagsText).has(name), `flags still exports ${name}`);

  // Clock lab.
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '7' },
    logger: silentLogger(),
  });
  t.teardown(() => lab.close());
  const cs = api(`http://127.0.0.1:${lab.port}`);
  t.equal((await cs.put('/api/v1/kv/alpha', { value: 'x', writer: 'p1' })).status < 300, true, 'a KV write');
  t.equal((await cs.get('/api/v1/kv/alpha')).status, 200);
  t.equal((await cs.get('/api/v1/processes')).status, 200);
  const labText = (await cs.get('/metrics')).text;
  scrapes.set('clocklab', labText);
  t.equal(
    sample(labText, `${H}_count`, L('GET', '/api/v1/kv/{key}', '200')),
    1,
    'clock lab: the read under /api/v1/kv/{key}',
  );
  for (const name of ['vc_ws_clients_connected', 'vc_ws_events_dropped_total', 'vc_event_bus_publish_drops'])
    t.ok(families(labText).has(name), `the clock lab still exports ${name}`);

  // Default metrics (prom-client's collectDefaultMetrics) on every service.
  for (const [service, text, prefix] of [
    ['replication', simText, ''],
    ['flags', flagsText, 'flags_'],
    ['clocklab', labText, ''],
  ] as const) {
    const fams = families(text);
    const missing = defaultMetrics.filter((n) => !fams.has(prefix + n));
    t.same(missing, [], `${service}: prom-client's default metrics are exported (${prefix || 'no'} prefix)`);
    t.equal(fams.get(H), 'histogram', `${service}: ${H} is a histogram`);
  }

  // Every route label is a path of the service's own OpenAPI document (route templates, OpenAPI's spelling).
  for (const [service, base] of [
    ['replication', `http://127.0.0.1:${sim.port}`],
    ['flags', h.base],
    ['clocklab', `http://127.0.0.1:${lab.port}`],
  ] as const) {
    const doc = (await api(base).get('/openapi.json')).body as { paths: Record<string, unknown> };
    const routes = [...routesSeen(scrapes.get(service) as string)].filter((r) => r !== '');
    t.ok(routes.length >= 2, `${service}: several routes recorded (${routes.join(', ')})`);
    t.same(
      routes.filter((r) => !(r in doc.paths)),
      [],
      `${service}: every http_route is a path of its OpenAPI document`,
    );
  }

  // The dashboards name only metrics their service declares.
  for (const service of ['replication', 'flags', 'clocklab']) {
    const file = path.join(repoRoot, 'docs/grafana', `${service}.json`);
    const dash = JSON.parse(readFileSync(file, 'utf8')) as Dashboard;
    const exprs = dashboardExprs(dash);
    t.ok(exprs.length >= 6, `${service}: the dashboard has queries (${exprs.length})`);
    t.ok(
      typeof dash.title === 'string' && dash.title.length > 0 && typeof dash.uid === 'string',
      `${service}: titled, with a uid`,
    );
    const ids = panelsOf(dash).map((p) => p.id);
    t.equal(new Set(ids).size, ids.length, `${service}: panel ids are unique`);
    const known = sampleNames(families(scrapes.get(service) as string));
    const used = new Set(exprs.flatMap(metricNamesIn));
    t.ok(used.has(`${H}_bucket`) && used.has(`${H}_count`), `${service}: the dashboard is built on ${H}`);
    t.same(
      [...used].filter((n) => !known.has(n)),
      [],
      `${service}: every metric its dashboard queries is declared by its /metrics (${used.size} names)`,
    );
  }
});

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ expr?: string }>;
  panels?: Panel[];
}
interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating?: { list: Array<{ query?: string | { query?: string } }> };
}

function panelsOf(d: { panels?: Panel[] }): Panel[] {
  return (d.panels ?? []).flatMap((p) => [p, ...panelsOf(p)]);
}

function dashboardExprs(d: Dashboard): string[] {
  const out = panelsOf(d).flatMap((p) => (p.targets ?? []).map((x) => x.expr ?? ''));
  for (const v of d.templating?.list ?? []) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (q && /label_values\(/.test(q)) out.push(q.replace(/^label_values\((.*),\s*\w+\)$/, '$1'));
  }
  return out;
}

/** The metric names a PromQL expression reads: identifiers that are not functions, keywords, labels or variables. */
function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\$\w+|\$\{[^}]*\}/g, '');
  const keywords = new Set([
    'by',
    'without',
    'on',
    'ignoring',
    'bool',
    'and',
    'or',
    'unless',
    'offset',
    'group_left',
    'group_right',
    'inf',
    'nan',
  ]);
  const names: string[] = [];
  for (const m of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\()?)/g)) {
    if (m[1] === '(') continue; // a function
    const word = m[0];
    if (keywords.has(word.toLowerCase())) continue;
    names.push(word);
  }
  return names;
}
