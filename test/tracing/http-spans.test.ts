/**
 * Server spans in OpenTelemetry's HTTP semantic conventions on all three services, hosted in this
 * one process as `make run` hosts them (each with its own service.name), exported over OTLP gRPC to
 * an in-process receiver: a request carrying a W3C `traceparent` continues the caller's trace (same
 * trace id, the caller's span as parent), spans started inside a request belong to its service, an
 * invalid traceparent starts a new trace, and log lines written while a span is active carry its
 * trace_id and span_id.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { HttpApp, healthRoutes } from '../../src/http/index.js';
import { Registry } from '../../src/util/metrics.js';
import { flushTracing, shutdownTracing, tracing } from '../../src/tracing/tracing.js';
import { createLogger, silentLogger } from '../../src/util/logger.js';
import { startReplicationSim } from '../../src/replication/server.js';
import { startClockLab } from '../../src/clocklab/server.js';
import { api, eventually, request } from '../helpers/http.js';
import { boolFlag, startHarness } from '../flags/fixtures/helpers.js';
import { startReceiver, type RecvSpan } from './receiver.js';

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** A caller's span context, as a traceparent header. */
function caller(): { traceId: string; spanId: string; header: string } {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: `00-${traceId}-${spanId}-01` };
}

const recv = await startReceiver();
process.env['TRACING_ENABLED'] = 'true';
process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = `http://127.0.0.1:${recv.port}`;
process.env['OTEL_BSP_SCHEDULE_DELAY'] = '50';
t.teardown(async () => {
  await shutdownTracing();
  await recv.close();
});

async function serverSpanOf(traceId: string, parentSpanId: string): Promise<RecvSpan> {
  return eventually(async () => {
    await flushTracing();
    return recv.spans.find((s) => s.traceId === traceId && s.parentSpanId === parentSpanId && s.kind === 2);
  }, 10_000);
}

t.test('a traceparent from the caller is continued by each service, in the HTTP semantic conventions', async (t) => {
  // Flags listens first, so the process default service is simlab-flags: the simulator's own spans
  // inside a request must still be the simulator's (each request carries its service).
  const flags = await startHarness(t);
  t.ok(tracing.on, 'tracing started when the first service listened (TRACING_ENABLED=true)');
  const sim = await startReplicationSim({ port: 0, host: '127.0.0.1', logger: silentLogger() });
  t.teardown(() => sim.close());
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '3' },
    logger: silentLogger(),
  });
  t.teardown(() => lab.close());

  const simBase = `http://127.0.0.1:${sim.port}`;
  const cl = await api(simBase).post('/api/v1/clusters', {
    strategy: 'single_leader',
    node_count: 3,
    replication_mode: 'async',
  });
  t.equal(cl.status, 201);
  t.equal((await api(`http://127.0.0.1:${lab.port}`).put('/api/v1/kv/seen', { value: 'x', writer: 'p1' })).status, 200);
  const tok = await flags.login();
  const E = '/api/v1/projects/web/environments/prod';
  t.equal((await flags.call('POST', `${E}/flags`, { token: tok, body: boolFlag('traced') })).status, 201);

  const cases: Array<{
    service: string;
    port: number;
    method: string;
    path: string;
    route: string;
    status: number;
    body?: unknown;
    headers?: Record<string, string>;
  }> = [
    {
      service: 'simlab-replsim',
      port: sim.port,
      method: 'POST',
      path: `/api/v1/clusters/${cl.body.id}/write`,
      route: '/api/v1/clusters/{id}/write',
      status: 200,
      body: { key: 'k', value: 'v' },
    },
    {
      service: 'simlab-flags',
      port: flags.server.port,
      method: 'POST',
      path: `${E}/evaluate`,
      route: '/api/v1/projects/{projectKey}/environments/{envKey}/evaluate',
      status: 200,
      body: { context: { key: 'u1' } },
      headers: { authorization: `Bearer ${tok}` },
    },
    {
      service: 'simlab-clocklab',
      port: lab.port,
      method: 'GET',
      path: '/api/v1/kv/seen?reader=p1',
      route: '/api/v1/kv/{key}',
      status: 200,
    },
    {
      service: 'simlab-replsim',
      port: sim.port,
      method: 'GET',
      path: '/api/v1/clusters/no-such-cluster/state',
      route: '/api/v1/clusters/{id}/state',
      status: 404,
    },
  ];
  for (const c of cases) {
    const from = caller();
    const r = await request(`http://127.0.0.1:${c.port}`, c.method, c.path, c.body, {
      traceparent: from.header,
      tracestate: 'vendor=abc',
      'user-agent': 'simlab-test',
      ...(c.headers ?? {}),
    });
    const status = c.status;
    t.equal(r.status, status, `${c.method} ${c.path} answered ${status}`);
    const span = await serverSpanOf(from.traceId, from.spanId);
    const [urlPath, query] = c.path.split('?') as [string, string | undefined];
    t.equal(span.name, `${c.method} ${c.route}`, `${c.service}: span named METHOD /route/template`);
    t.equal(span.service, c.service, `${c.service}: its own service.name`);
    t.equal(span.resource['service.namespace'], 'simlab', `${c.service}: service.namespace`);
    t.match(
      span.attributes,
      {
        'http.request.method': c.method,
        'http.route': c.route,
        'http.response.status_code': status,
        'url.path': urlPath,
        'url.scheme': 'http',
        'server.address': '127.0.0.1',
        'server.port': c.port,
        'network.protocol.version': '1.1',
        'user_agent.original': 'simlab-test',
      },
      `${c.service}: semantic-convention attributes`,
    );
    if (query !== undefined) t.equal(span.attributes['url.query'], query, `${c.service}: url.query`);
    t.ok(typeof span.attributes['client.address'] === 'string', `${c.service}: client.address`);
    t.equal(span.attributes['http.method'], undefined, `${c.service}: no deprecated http.method attribute`);
    t.equal(span.statusCode, 0, `${c.service}: a ${status} leaves a server span's status unset`);
  }

  // The simulator's orchestrator span inside the write belongs to the simulator, under the server span.
  const from = caller();
  const w = await request(
    simBase,
    'POST',
    `/api/v1/clusters/${cl.body.id}/write`,
    { key: 'k2', value: 'v' },
    { traceparent: from.header },
  );
  t.equal(w.status, 200);
  const root = await serverSpanOf(from.traceId, from.spanId);
  const inner = await eventually(async () => {
    await flushTracing();
    return recv.spans.find((s) => s.traceId === from.traceId && s.name === 'write' && s.parentSpanId === root.spanId);
  }, 10_000);
  t.equal(
    inner.service,
    'simlab-replsim',
    "a span started inside the request is its service's, not the process default",
  );

  // Through the clock lab's browser-facing proxy: the proxy's span continues the caller's trace and
  // the lab's span continues the proxy's, all under the clock lab's service.name.
  const viaProxy = caller();
  const proxied = await request(`http://127.0.0.1:${lab.proxyPort}`, 'GET', '/api/v1/kv/seen', undefined, {
    traceparent: viaProxy.header,
  });
  t.equal(proxied.status, 200, 'the proxy answered');
  const proxySpan = await serverSpanOf(viaProxy.traceId, viaProxy.spanId);
  t.equal(proxySpan.service, 'simlab-clocklab', "the proxy's span is the clock lab's");
  const labSpan = await serverSpanOf(viaProxy.traceId, proxySpan.spanId);
  t.equal(labSpan.name, 'GET /api/v1/kv/{key}', "the lab's span is a child of the proxy's");
  t.equal(labSpan.service, 'simlab-clocklab', 'in the same service');

  // An invalid traceparent (all-zero trace id) starts a new trace instead.
  const bad = `00-${'0'.repeat(32)}-${hex(8)}-01`;
  const before = recv.spans.length;
  t.equal((await request(simBase, 'GET', '/healthz', undefined, { traceparent: bad })).status, 200);
  const fresh = await eventually(async () => {
    await flushTracing();
    return recv.spans.slice(before).find((s) => s.name === 'GET /healthz' && s.kind === 2);
  }, 10_000);
  t.equal(fresh.parentSpanId, '', 'an invalid traceparent is not continued: the server span is a root');
  t.not(fresh.traceId, '0'.repeat(32), 'and has a trace id of its own');

  // A path no route matches: the span is named by the method alone and has no http.route.
  const miss = caller();
  t.equal((await request(simBase, 'GET', '/no/such/path', undefined, { traceparent: miss.header })).status, 404);
  const missSpan = await serverSpanOf(miss.traceId, miss.spanId);
  t.equal(missSpan.name, 'GET', 'an unmatched request is named by its method');
  t.equal(missSpan.attributes['http.route'], undefined, 'and carries no http.route');
});

t.test('log lines carry trace_id and span_id while a span is active, and not otherwise', async (t) => {
  const lines: string[] = [];
  const logger = createLogger('edge-test', { LOGGING_LEVEL: 'info' }, { write: (s: string) => void lines.push(s) });
  const app = new HttpApp({ name: 'logtest', logger });
  app.get('/logs/:n', async (req) => {
    await new Promise((r) => setTimeout(r, 5));
    req.params['n'] === 'fail'
      ? logger.warn('about to answer 500')
      : logger.info({ n: req.params['n'] }, 'in a handler');
    if (req.params['n'] === 'fail') throw new Error('planned failure');
    return { status: 200, body: { ok: true } };
  });
  app.stream('/events/:topic', (req, stream) => {
    logger.info({ topic: req.params['topic'] }, 'stream opened');
    stream.open(200, { 'content-type': 'text/event-stream' });
    stream.write('data: one\n\n');
    stream.end();
  });
  const registry = new Registry();
  healthRoutes(app, registry);
  const port = await app.listen(0, '127.0.0.1');
  t.teardown(() => app.close());
  const from = caller();
  t.equal(
    (await request(`http://127.0.0.1:${port}`, 'GET', '/logs/7', undefined, { traceparent: from.header })).status,
    200,
  );
  const span = await serverSpanOf(from.traceId, from.spanId);
  t.equal(span.service, 'simlab-logtest', 'an app without a serviceName is simlab-<name>');
  const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'in a handler');
  t.match(
    line,
    { n: '7', trace_id: from.traceId, span_id: span.spanId, trace_flags: '01' },
    'the handler’s line names its trace and span',
  );

  // The adapter's own line about a failed request is written in the request's span too.
  const failing = caller();
  t.equal(
    (await request(`http://127.0.0.1:${port}`, 'GET', '/logs/fail', undefined, { traceparent: failing.header })).status,
    500,
  );
  const failedSpan = await serverSpanOf(failing.traceId, failing.spanId);
  t.equal(failedSpan.statusCode, 2, 'a 500 marks the server span as an error');
  t.equal(failedSpan.attributes['error.type'], '500', 'with error.type');
  const adapterLine = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l['level'] === 50 && l['trace_id'] === failing.traceId);
  t.ok(adapterLine, "the adapter's error line for the failed request carries its trace_id");
  t.equal(adapterLine?.['span_id'], failedSpan.spanId, 'and its span_id');

  // A stream's span is named by its route, carries its status and ends when the stream closes.
  const streamCaller = caller();
  const sse = await request(`http://127.0.0.1:${port}`, 'GET', '/events/news', undefined, {
    traceparent: streamCaller.header,
  });
  t.equal(sse.text, 'data: one\n\n', 'the stream answered');
  const streamSpan = await serverSpanOf(streamCaller.traceId, streamCaller.spanId);
  t.equal(streamSpan.name, 'GET /events/{topic}', 'the stream span is named by its route template');
  t.equal(streamSpan.attributes['http.response.status_code'], 200, 'with the status it opened with');
  const streamLine = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l['msg'] === 'stream opened');
  t.equal(streamLine?.['span_id'], streamSpan.spanId, "the stream handler's line carries its span");
  const text = await registry.metrics();
  const streamSeries =
    'http_server_request_duration_seconds_count{http_request_method="GET",http_route="/events/{topic}",' +
    'http_response_status_code="200"} 1';
  t.ok(
    text.split('\n').includes(streamSeries),
    'the stream is counted once in the duration histogram, under its template',
  );

  logger.info('outside any request');
  const outside = JSON.parse(lines[lines.length - 1] as string) as Record<string, unknown>;
  t.equal(outside['msg'], 'outside any request');
  t.equal(outside['trace_id'], undefined, 'no trace_id outside a span');
  t.equal(outside['span_id'], undefined, 'no span_id outside a span');
});
