/**
 * Tracing overhead: writes/s over HTTP to a 3-node async single-leader cluster with tracing off
 * and with tracing on (exporting over OTLP gRPC to an in-process receiver), in the same run,
 * alternating off/on pairs with 1,000 rotating keys; a run with any error records nothing.
 * The receiver is a real collector endpoint (@grpc/grpc-js with the OTLP protos of test/tracing).
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { median, recordResult } from './results.js';
import { distRoot, postJson, runWrk, startChild, table, wrkAvailable, writeLua } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 6);
if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const protoDir = path.resolve(distRoot, '..', 'test', 'tracing', 'proto');
const def = protoLoader.loadSync('trace_service.proto', {
  includeDirs: [protoDir],
  keepCase: true,
  longs: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
});
const pkg = grpc.loadPackageDefinition(def) as unknown as {
  opentelemetry: { proto: { collector: { trace: { v1: { TraceService: { service: grpc.ServiceDefinition } } } } } };
};
let spans = 0;
const server = new grpc.Server();
server.addService(pkg.opentelemetry.proto.collector.trace.v1.TraceService.service, {
  Export: (
    call: grpc.ServerUnaryCall<{ resource_spans?: Array<{ scope_spans?: Array<{ spans?: unknown[] }> }> }, object>,
    cb: grpc.sendUnaryData<object>,
  ) => {
    for (const rs of call.request.resource_spans ?? [])
      for (const ss of rs.scope_spans ?? []) spans += ss.spans?.length ?? 0;
    cb(null, {});
  },
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
);

const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 3)));
const keys = 1000;
const rows: Array<Record<string, string | number>> = [];
const runsBy: Record<'off' | 'on', number[]> = { off: [], on: [] };
let failed = false;

async function measureMode(mode: 'off' | 'on'): Promise<void> {
  const env: Record<string, string> =
    mode === 'on' ? { TRACING_ENABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` } : {};
  const sim = await startChild('src/replication/main.js', env, 'REPLSIM_PORT');
  try {
    const url = `http://127.0.0.1:${sim.port}`;
    const cl = await postJson(url, '/api/v1/clusters', { strategy: 'single_leader', node_count: 3 });
    const p = `/api/v1/clusters/${cl.id}/write`;
    const lua = writeLua(p, keys);
    runWrk(url + p, { connections: 64, seconds: 2, lua });
    const before = spans;
    const r = runWrk(url + p, { connections: 64, seconds, lua });
    await new Promise((res) => setTimeout(res, 1500));
    if (r.errors > 0) {
      failed = true;
      console.error(`tracing ${mode}: ${r.errors} errors or non-2xx answers`);
    }
    runsBy[mode].push(r.rps);
    rows.push({
      tracing: mode,
      'writes/s': Math.round(r.rps),
      'p50 ms': r.p50ms,
      'p99 ms': r.p99ms,
      errors: r.errors,
      'spans received': spans - before,
    });
  } finally {
    await sim.stop();
  }
}

for (let rep = 0; rep < reps; rep++) {
  // Alternate which mode goes first.
  for (const mode of rep % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const)) await measureMode(mode);
}
console.log(table(rows));
const ratios = runsBy.on.map((x, i) => x / (runsBy.off[i] as number));
console.log(
  `\ntracing on ÷ off: median ${median(ratios).toFixed(2)} ` +
    `(${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
);
if (failed) {
  console.error('a run had errors: nothing recorded');
  process.exitCode = 1;
} else {
  recordResult({
    benchmark: 'tracing-overhead',
    measure: 'HTTP writes, 3-node async single-leader, 64 connections',
    subject: 'tracing on (OTLP gRPC to an in-process receiver)',
    baseline: 'tracing off',
    unit: 'writes/s',
    runs: runsBy.on,
    baselineRuns: runsBy.off,
    ratio: median(ratios),
    ratioRuns: ratios,
    method:
      `wrk, 64 connections, ${keys} rotating keys with values 'value-<n>' (up to 13 bytes), ` +
      `one ${seconds}-s run per mode after a 2-s warm-up, ${reps} alternating off/on pairs, ` +
      'a fresh replication process and cluster per run (start-up not timed), every run free ' +
      'of errors and non-2xx answers; ratio = on ÷ off per pair.',
  });
}
server.forceShutdown();
