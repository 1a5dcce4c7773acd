/**
 * Tracing end to end: a real OTLP gRPC receiver (the collector protocol, @grpc/grpc-js with the
 * OTLP protos) in this test process, the real server with TRACING_ENABLED=true, one write, and the
 * span tree it produces across the front process, the leader's worker, the fabric and each
 * follower's worker. Also: with tracing off, the OpenTelemetry SDK is never loaded and no span is
 * recorded (only @opentelemetry/api, which prom-client's public index requires, is in memory).
 */
import t from 'tap';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { api, eventually } from '../helpers/http.js';
import { repoRoot, startReplSim } from '../helpers/server.js';
import { startReceiver, type RecvSpan } from './receiver.js';

t.test('one write is one trace across the front process, the leader, the fabric and every follower', async (t) => {
  const recv = await startReceiver();
  t.teardown(() => recv.close());
  const srv = await startReplSim({
    TRACING_ENABLED: 'true',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${recv.port}`,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  // async: the client is answered once the leader applied; the followers' work still joins the trace
  // (sync would add a 1 s ack deadline that a loaded CI machine with tracing on can miss).
  const cl = (await c.post('/api/v1/clusters', { strategy: 'single_leader', node_count: 3, replication_mode: 'async' }))
    .body;
  const w = await c.post(`/api/v1/clusters/${cl.id}/write`, { key: 'traced', value: 'v' });
  t.equal(w.status, 200);
  const root = await eventually(
    () =>
      recv.spans.find(
        (s) =>
          s.name === 'POST /api/v1/clusters/{id}/write' &&
          s.attributes['url.path'] === `/api/v1/clusters/${cl.id}/write`,
      ),
    10_000,
  );
  const inTrace = () => recv.spans.filter((s) => s.traceId === root.traceId);
  // Wait until both followers' apply spans (children of the fabric deliveries of the leader's
  // replicate span) have arrived; acks flowing back produce other node.apply spans too.
  await eventually(() => {
    const all = inTrace();
    const ids = new Map(all.map((s) => [s.spanId, s]));
    const underDelivery = all.filter(
      (s) =>
        s.name === 'node.apply' &&
        ids.get(s.parentSpanId)?.name === 'fabric.deliver' &&
        ids.get(ids.get(s.parentSpanId)!.parentSpanId)?.name === 'fabric.send' &&
        ids.get(ids.get(ids.get(s.parentSpanId)!.parentSpanId)!.parentSpanId)?.name === 'node.replicate' &&
        ids.get(ids.get(ids.get(ids.get(s.parentSpanId)!.parentSpanId)!.parentSpanId)!.parentSpanId)?.name ===
          'node.write',
    );
    return underDelivery.length >= 2 && all.some((s) => s.name === 'await_acks');
  }, 10_000);
  const spans = inTrace();
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const parentName = (s: RecvSpan) => byId.get(s.parentSpanId)?.name;
  const one = (name: string) => spans.filter((s) => s.name === name);
  t.equal(root.parentSpanId, '', 'the HTTP request span is the root');
  t.equal(one('write').length, 1, 'one orchestrator write span');
  t.equal(parentName(one('write')[0]!), root.name, 'write is a child of the request span');
  const nodeWrite = one('node.write');
  t.equal(nodeWrite.length, 1, 'one node.write span');
  t.equal(parentName(nodeWrite[0]!), 'write', 'node.write (leader worker) is a child of write');
  t.equal(nodeWrite[0]!.service, 'simlab-replsim', "node.write belongs to the simulator's service");
  t.equal(nodeWrite[0]!.resource['service.instance.id'], 'node-n1', "node.write comes from the leader's worker");
  t.equal(parentName(one('await_acks')[0]!), 'node.write', 'await_acks follows node.write');
  const replicate = one('node.replicate').filter((s) => parentName(s) === 'node.write');
  t.equal(replicate.length, 1, "the leader's node.replicate is a child of node.write");
  const sends = one('fabric.send').filter((s) => s.parentSpanId === replicate[0]!.spanId);
  t.equal(sends.length, 2, 'one fabric.send per follower');
  t.ok(
    sends.every((s) => s.service === 'simlab-replsim'),
    'fabric spans come from the front process',
  );
  const delivers = one('fabric.deliver').filter((s) => sends.some((x) => x.spanId === s.parentSpanId));
  t.equal(delivers.length, 2, 'each send is delivered');
  const applies = one('node.apply').filter((s) => delivers.some((d) => d.spanId === s.parentSpanId));
  t.equal(applies.length, 2, 'each follower applies under the delivery span');
  t.same(
    applies.map((s) => s.resource['service.instance.id']).sort(),
    ['node-n2', 'node-n3'],
    "in each follower's worker",
  );
  t.same(new Set(spans.map((s) => s.traceId)).size, 1, 'all of it is one trace');
});

t.test(
  'with tracing off no OpenTelemetry SDK module is loaded and nothing records, even through a write',
  async (t) => {
    // OpenTelemetry's packages are CommonJS: anything that loads them (even via import) lands in the
    // CommonJS module cache, which the probe inspects after creating a cluster, writing to it and
    // scraping /metrics. prom-client's public index requires @opentelemetry/api (its exemplars), so
    // the API is there; without a registered provider every API call is a no-op (checked below).
    const probe = (env: Record<string, string>) => {
      const dist = (file: string) => JSON.stringify(path.join(repoRoot, 'dist/src', file));
      const script = `
      import { createRequire } from 'node:module';
      const { initTracing } = await import(${dist('tracing/tracing.js')});
      await initTracing('probe');
      const { startReplicationSim } = await import(${dist('replication/server.js')});
      const { silentLogger } = await import(${dist('util/logger.js')});
      const sim = await startReplicationSim({ port: 0, host: '127.0.0.1', logger: silentLogger() });
      const base = 'http://127.0.0.1:' + sim.port;
      const post = (url, body) => fetch(base + url, { method: 'POST', body: JSON.stringify(body) });
      const cl = await (await post('/api/v1/clusters', { strategy: 'single_leader' })).json();
      const w = await post('/api/v1/clusters/' + cl.id + '/write', { key: 'k', value: 'v' });
      await (await fetch(base + '/metrics')).text();
      const cache = Object.keys(createRequire(import.meta.url).cache);
      const otel = cache.filter((k) => k.includes('@opentelemetry'));
      const packageOf = new RegExp('@opentelemetry/[^/]+');
      const packages = [...new Set(otel.map((k) => packageOf.exec(k)[0]))].sort();
      const sdk = otel.some((k) => k.includes('sdk-node'));
      const promClient = cache.some((k) => k.includes('prom-client'));
      // The same module instance prom-client loaded (required from the checkout, as it was).
      const { trace } = createRequire(${JSON.stringify(path.join(repoRoot, 'package.json'))})('@opentelemetry/api');
      const recording = trace.getTracer('probe').startSpan('probe').isRecording();
      const result = { status: w.status, cjs: cache.length, otel: otel.length, packages, sdk, promClient, recording };
      console.log(JSON.stringify(result));
      process.exit(0);
    `;
      return new Promise<{
        status: number;
        cjs: number;
        otel: number;
        packages: string[];
        sdk: boolean;
        promClient: boolean;
        recording: boolean;
      }>((resolve, reject) => {
        // A file, not `-e`: workers inherit execArgv, and `--input-type=module` breaks their start-up.
        const file = path.join(mkdtempSync(path.join(tmpdir(), 'otel-probe-')), 'probe.mjs');
        writeFileSync(file, script);
        const child = spawn(process.execPath, [file], {
          cwd: repoRoot,
          env: { ...process.env, TRACING_ENABLED: '', ...env },
        });
        let s = '';
        child.stdout.on('data', (d: Buffer) => (s += d.toString()));
        child.stderr.on('data', (d: Buffer) => (s += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.on('exit', () => {
          clearTimeout(timer);
          const line = s.split('\n').find((l) => l.startsWith('{"status"'));
          if (!line) reject(new Error(`probe printed no result: ${s.slice(0, 500)}`));
          else resolve(JSON.parse(line));
        });
      });
    };
    const off = await probe({});
    t.equal(off.status, 200, 'tracing off: the write succeeded');
    t.ok(off.cjs > 5, `the probe sees CommonJS modules (${off.cjs})`);
    t.ok(off.promClient, 'prom-client (/metrics) is loaded');
    t.same(
      off.packages,
      ['@opentelemetry/api'],
      'tracing off: of OpenTelemetry only the API (prom-client requires it) is loaded',
    );
    t.equal(off.sdk, false, 'tracing off: @opentelemetry/sdk-node was not loaded');
    t.equal(off.recording, false, 'tracing off: no tracer provider is registered, so a span records nothing');
    const on = await probe({ TRACING_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    t.ok(
      on.otel > 0 && on.sdk,
      `control: with tracing on the same probe sees the SDK and exporter (${on.otel} modules)`,
    );
    t.ok(on.packages.length > 3 && on.recording, 'control: with tracing on, spans record');
  },
);
