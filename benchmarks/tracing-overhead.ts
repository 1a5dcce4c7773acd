/**
 * Tracing overhead: writes/s over HTTP to a 3-node async single-leader cluster with tracing off
 * and with tracing on (exporting over OTLP gRPC to an in-process receiver), in the same run.
 * The receiver is a real collector endpoint (@grpc/grpc-js with the OTLP protos of test/tracing).
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { distRoot, postJson, runWrk, startChild, staticPostLua, table, wrkAvailable } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 6);
if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const protoDir = path.resolve(distRoot, '..', 'test', 'tracing', 'proto');
const def = protoLoader.loadSync('trace_service.proto', { includeDirs: [protoDir], keepCase: true, longs: String, bytes: Buffer, defaults: true, oneofs: true });
const pkg = grpc.loadPackageDefinition(def) as unknown as { opentelemetry: { proto: { collector: { trace: { v1: { TraceService: { service: grpc.ServiceDefinition } } } } } } };
let spans = 0;
const server = new grpc.Server();
server.addService(pkg.opentelemetry.proto.collector.trace.v1.TraceService.service, {
  Export: (call: grpc.ServerUnaryCall<{ resource_spans?: Array<{ scope_spans?: Array<{ spans?: unknown[] }> }> }, object>, cb: grpc.sendUnaryData<object>) => {
    for (const rs of call.request.resource_spans ?? []) for (const ss of rs.scope_spans ?? []) spans += ss.spans?.length ?? 0;
    cb(null, {});
  },
});
const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));

const rows: Array<Record<string, string | number>> = [];
let off = NaN;
for (const mode of ['off', 'on'] as const) {
  const env: Record<string, string> = mode === 'on' ? { TRACING_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } : {};
  const sim = await startChild('src/replication/main.js', env, 'REPLSIM_PORT');
  const url = `http://127.0.0.1:${sim.port}`;
  const cl = await postJson(url, '/api/v1/clusters', { strategy: 'single_leader', node_count: 3 });
  const p = `/api/v1/clusters/${cl.id}/write`;
  const lua = staticPostLua({ key: 'bench', value: 'a-value-of-some-thirty-two-bytes' });
  runWrk(url + p, { connections: 64, seconds: 2, lua });
  const before = spans;
  const r = runWrk(url + p, { connections: 64, seconds, lua });
  await new Promise((res) => setTimeout(res, 1500));
  if (mode === 'off') off = r.rps;
  rows.push({ tracing: mode, 'writes/s': Math.round(r.rps), 'p50 ms': r.p50ms, 'p99 ms': r.p99ms, 'ratio to off': r.rps / off, 'spans received': spans - before });
  await sim.stop();
}
console.log(table(rows));
server.forceShutdown();
