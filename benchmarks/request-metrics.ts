/**
 * What the edge's request-duration histogram costs per request, in server CPU: the same cheap route
 * (GET /api/v1/items/:id answering a small JSON object) served by three servers started side by
 * side from this file: without request metrics (off), with http_server_request_duration_seconds as
 * the adapter records it (on: a per-route memo and array writes), and, for comparison, with a
 * prom-client Histogram child memoised per method and status observed from the onResponse hook
 * (prom-client child). wrk drives each in turn in alternating slices; each server reports its own
 * process.cpuUsage(), so the measure is CPU microseconds per request, not a shared-machine rate.
 * Run as `node dist/benchmarks/request-metrics.js`; with REQUEST_METRICS_SERVE=<mode> it is the server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { HttpApp, healthRoutes } from '../src/http/index.js';
import { Histogram, Registry } from '../src/util/metrics.js';
import { silentLogger } from '../src/util/logger.js';
import { median, recordResult } from './results.js';
import { runWrk, table, wrkAvailable } from './lib.js';

type Mode = 'off' | 'on' | 'prom-client child';
const modes: readonly Mode[] = ['off', 'on', 'prom-client child'];
const serveMode = process.env['REQUEST_METRICS_SERVE'];

if (serveMode !== undefined) await serve(serveMode as Mode);
else await measure();

async function serve(mode: Mode): Promise<void> {
  const registry = new Registry();
  let onResponse: ((method: string, status: number) => void) | undefined;
  if (mode === 'prom-client child') {
    const h = new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'prom-client comparison',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
      registers: [registry],
    });
    const children = new Map<string, ReturnType<typeof h.labels>>();
    onResponse = (method, status) => {
      const key = `${method} ${status}`;
      let c = children.get(key);
      if (c === undefined) {
        c = h.labels(method, '/api/v1/items/{id}', String(status));
        children.set(key, c);
      }
      // The value does not change what observe costs; the real edge would time the request.
      c.observe(0.0003);
    };
  }
  const app = new HttpApp({ name: 'bench', logger: silentLogger(), ...(onResponse ? { onResponse } : {}) });
  app.get('/api/v1/items/:id', (req) => ({ status: 200, body: { id: req.params['id'], ok: true } }));
  app.get('/cpu', () => ({ status: 200, body: process.cpuUsage() }));
  if (mode === 'on') healthRoutes(app, registry);
  const port = await app.listen(0, '127.0.0.1');
  console.log(JSON.stringify({ port }));
}

async function measure(): Promise<void> {
  if (!wrkAvailable()) {
    console.error('wrk is not installed (make bench installs it with apt-get)');
    process.exit(2);
  }
  const seconds = Number(process.env['BENCH_SLICE_SECONDS'] ?? 2);
  const rounds = Math.max(1, Math.floor(Number(process.env['BENCH_ROUNDS'] ?? 5)));
  const children: Array<{ mode: Mode; port: number; proc: ChildProcess }> = [];
  for (const mode of modes) {
    const proc = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, REQUEST_METRICS_SERVE: mode },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`${mode} server did not start`)), 20_000);
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /"port":(\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      });
    });
    children.push({ mode, port, proc });
  }
  const cpuOf = async (port: number): Promise<number> => {
    const c = (await (await fetch(`http://127.0.0.1:${port}/cpu`)).json()) as { user: number; system: number };
    return c.user + c.system;
  };
  const usPerRequest: Record<Mode, number[]> = { off: [], on: [], 'prom-client child': [] };
  const rows: Array<Record<string, string | number>> = [];
  let failed = false;
  try {
    for (const c of children) runWrk(`http://127.0.0.1:${c.port}/api/v1/items/42`, { connections: 32, seconds: 1 });
    for (let round = 0; round < rounds; round++) {
      // Rotate which server goes first, so a slow stretch of the machine does not favour one.
      const order = children.map((_, i) => children[(i + round) % children.length] as (typeof children)[number]);
      for (const c of order) {
        const before = await cpuOf(c.port);
        const r = runWrk(`http://127.0.0.1:${c.port}/api/v1/items/42`, { connections: 32, seconds });
        const cpuUs = (await cpuOf(c.port)) - before;
        if (r.errors > 0 || !(r.rps > 0)) {
          failed = true;
          console.error(`${c.mode}: ${r.errors} errors or no rate`);
        }
        const perRequest = cpuUs / (r.rps * seconds);
        usPerRequest[c.mode].push(perRequest);
        rows.push({ round, metrics: c.mode, 'req/s': Math.round(r.rps), 'CPU µs/request': perRequest });
      }
    }
  } finally {
    for (const c of children) c.proc.kill('SIGTERM');
  }
  console.log(table(rows));
  const ratio = (m: Mode): number[] => usPerRequest[m].map((x, i) => x / (usPerRequest.off[i] as number));
  for (const m of ['on', 'prom-client child'] as const) {
    const rs = ratio(m);
    const extra = usPerRequest[m].map((x, i) => x - (usPerRequest.off[i] as number));
    console.log(
      `${m} ÷ off, CPU per request: median ${median(rs).toFixed(3)} ` +
        `(${Math.min(...rs).toFixed(3)}–${Math.max(...rs).toFixed(3)}); ` +
        `extra ${median(extra).toFixed(2)} µs/request`,
    );
  }
  if (failed) {
    console.error('a slice had errors: nothing recorded');
    process.exitCode = 1;
    return;
  }
  for (const m of ['on', 'prom-client child'] as const) {
    recordResult({
      benchmark: 'request-metrics',
      measure: 'server CPU per request, GET /api/v1/items/:id on the HTTP adapter, 32 connections',
      subject:
        m === 'on'
          ? 'http_server_request_duration_seconds recorded at the edge'
          : 'a memoised prom-client Histogram child observed per request',
      baseline: 'no request metrics',
      unit: 'CPU µs/request',
      runs: usPerRequest[m],
      baselineRuns: usPerRequest.off,
      ratio: median(ratio(m)),
      ratioRuns: ratio(m),
      method:
        `three servers side by side (one process each), wrk 2 threads 32 connections, ${rounds} rounds of ` +
        `${seconds}-s slices per server in rotating order after a 1-s warm-up; CPU = the server's own ` +
        'process.cpuUsage() across the slice ÷ (req/s × seconds); ratio = subject ÷ off per round.',
    });
  }
}
