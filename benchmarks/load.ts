/**
 * `make load`: drives each service at a fixed concurrency with wrk (loopback only, fixed duration per
 * scenario: LOAD_SECONDS, default 10; LOAD_CONNECTIONS, default 64) and prints throughput and latency
 * percentiles, with a bare uWebSockets.js hello-world measured in the same run as the ratio baseline.
 * It starts every service as a child process from dist/ and stops them itself; it asserts nothing
 * about speed (a scenario with non-2xx answers is reported in the errors column and fails the run).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  distRoot,
  postJson,
  runWrk,
  startChild,
  table,
  wrkAvailable,
  writeLua,
  type Child,
  type WrkResult,
} from './lib.js';

const seconds = Number(process.env['LOAD_SECONDS'] ?? 10);
const connections = Number(process.env['LOAD_CONNECTIONS'] ?? 64);
const warmupSeconds = Math.min(2, seconds);
const startTimeoutMs = 20_000;

if (!Number.isInteger(seconds) || seconds < 1 || seconds > 600)
  throw new Error(`LOAD_SECONDS must be an integer in 1..600 (got ${process.env['LOAD_SECONDS']})`);
if (!Number.isInteger(connections) || connections < 1 || connections > 1024)
  throw new Error(`LOAD_CONNECTIONS must be an integer in 1..1024 (got ${process.env['LOAD_CONNECTIONS']})`);
if (!wrkAvailable()) {
  console.error('wrk is not installed (make wrk installs it with apt-get)');
  process.exit(2);
}

/** A free loopback port (for the services whose entry points do not print theirs). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts a dist/ entry on given ports and waits until GET /healthz answers 200. */
async function startOnPort(entry: string, port: number, env: Record<string, string>): Promise<Child> {
  const proc: ChildProcess = spawn(process.execPath, [path.join(distRoot, entry)], {
    env: { ...process.env, LOGGING_FORMAT: 'json', LOGGING_LEVEL: 'error', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let exited: number | null = null;
  proc.once('exit', (c) => {
    exited = c ?? -1;
  });
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (exited !== null) throw new Error(`${entry} exited ${exited} before it was ready`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${entry} did not become healthy on port ${port} within ${startTimeoutMs} ms`);
    }
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    proc,
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
      }),
  };
}

async function call(
  base: string,
  method: string,
  p: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (token) headers['authorization'] = `Bearer ${token}`;
  const r = await fetch(base + p, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON
  }
  if (r.status >= 300) throw new Error(`${method} ${p} answered ${r.status}: ${text.slice(0, 200)}`);
  return { status: r.status, body: parsed };
}

/** A wrk script sending one fixed method/path/body, with optional extra headers. */
function fixedLua(
  method: 'GET' | 'POST',
  pathName: string,
  body?: unknown,
  headers: Record<string, string> = {},
): string {
  const hs = Object.entries({ ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers })
    .map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`)
    .join('\n');
  return `
wrk.method = "${method}"
wrk.path = ${JSON.stringify(pathName)}
${body !== undefined ? `wrk.body = ${JSON.stringify(JSON.stringify(body))}` : ''}
${hs}
`;
}

/** GET reads of k0..k(keys-1) in turn. */
function readLua(pathName: string, keys: number): string {
  return `
counter = 0
request = function()
  counter = counter + 1
  return wrk.format("GET", "${pathName}?key=k" .. (counter % ${keys}))
end
`;
}

/** Clock lab messages, alternating p1→p2 and p2→p1 so neither link's queue only grows. */
const messagesLua = `
counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  local from, to = "p1", "p2"
  if counter % 2 == 0 then from, to = "p2", "p1" end
  local body = '{"from":"' .. from .. '","to":"' .. to .. '","payload":"m' .. counter .. '"}'
  return wrk.format("POST", "/api/v1/messages", nil, body)
end
`;

interface Row extends Record<string, string | number> {
  service: string;
  scenario: string;
  'req/s': number;
  'p50 ms': number;
  'p99 ms': number;
  'vs hello': number;
  errors: number;
}

const rows: Row[] = [];
let baselineRps = NaN;
const measure = (service: string, scenario: string, url: string, lua?: string): WrkResult => {
  const opts = { connections, seconds, ...(lua ? { lua } : {}) };
  runWrk(url, { ...opts, seconds: warmupSeconds });
  const r = runWrk(url, opts);
  rows.push({
    service,
    scenario,
    'req/s': Math.round(r.rps),
    'p50 ms': r.p50ms,
    'p99 ms': r.p99ms,
    'vs hello': r.rps / baselineRps,
    errors: r.errors,
  });
  console.error(
    `  ${service}: ${scenario}: ${Math.round(r.rps)} req/s, p50 ${r.p50ms} ms, p99 ${r.p99ms} ms, ${r.errors} errors`,
  );
  return r;
};

console.error(
  `load: ${connections} connections, ${seconds} s per scenario (+${warmupSeconds} s warm-up), loopback only`,
);
// Every child still running; stopped ones leave the set (lib's stop() must not be awaited twice:
// a child killed by a signal has no exitCode, so a second stop() would wait for an exit that came).
const children = new Set<Child>();
const started = (c: Child): Child => {
  children.add(c);
  return c;
};
const stop = async (c: Child): Promise<void> => {
  children.delete(c);
  await c.stop();
};
const dbDir = mkdtempSync(path.join(tmpdir(), 'simlab-load-'));
try {
  // ---- baseline ----
  const hello = started(await startChild('benchmarks/hello-uws.js', {}, 'HELLO_PORT'));
  runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds: warmupSeconds });
  const base = runWrk(`http://127.0.0.1:${hello.port}/`, { connections, seconds });
  baselineRps = base.rps;
  rows.push({
    service: 'baseline',
    scenario: 'bare uWS hello-world GET',
    'req/s': Math.round(base.rps),
    'p50 ms': base.p50ms,
    'p99 ms': base.p99ms,
    'vs hello': 1,
    errors: base.errors,
  });
  await stop(hello);

  // ---- replication simulator ----
  const sim = started(await startChild('src/replication/main.js', { HOST: '127.0.0.1' }, 'REPLSIM_PORT'));
  const simBase = `http://127.0.0.1:${sim.port}`;
  const sl = (await postJson(simBase, '/api/v1/clusters', {
    strategy: 'single_leader',
    node_count: 3,
    replication_mode: 'async',
  })) as { id?: string };
  if (!sl.id) throw new Error(`single_leader cluster not created: ${JSON.stringify(sl)}`);
  const slWrite = `/api/v1/clusters/${sl.id}/write`;
  measure('replication', 'single_leader async 3 nodes: POST write', simBase + slWrite, writeLua(slWrite));
  const slRead = `/api/v1/clusters/${sl.id}/read`;
  measure('replication', 'single_leader async 3 nodes: GET read (leader)', simBase + slRead, readLua(slRead, 1000));
  const ll = (await postJson(simBase, '/api/v1/clusters', {
    strategy: 'leaderless',
    node_count: 3,
    quorum_n: 3,
    quorum_w: 2,
    quorum_r: 2,
  })) as { id?: string };
  if (!ll.id) throw new Error(`leaderless cluster not created: ${JSON.stringify(ll)}`);
  const llWrite = `/api/v1/clusters/${ll.id}/write`;
  measure('replication', 'leaderless N3 W2 R2: POST write', simBase + llWrite, writeLua(llWrite));
  await stop(sim);

  // ---- feature flags ----
  const flagsPort = await freePort();
  const password = 'load-test-password-0123';
  const flags = started(
    await startOnPort('src/flags/main.js', flagsPort, {
      FLAGS_PORT: String(flagsPort),
      FLAGS_DB: path.join(dbDir, 'flags.db'),
      FLAGS_JWT_SECRET: 'load-test-secret-load-test-secret-0123456789',
      FLAGS_ADMIN_EMAIL: 'load@example.com',
      FLAGS_ADMIN_PASSWORD: password,
    }),
  );
  const flagsBase = `http://127.0.0.1:${flagsPort}`;
  const login = await call(flagsBase, 'POST', '/auth/login', { email: 'load@example.com', password });
  const token = (login.body as { accessToken: string }).accessToken;
  const E = '/api/v1/projects/load/environments/prod';
  // A realistic flag: a targeted user, a rule on two clauses, and a percentage rollout on the rest.
  const flagCount = 10;
  for (let i = 0; i < flagCount; i++) {
    await call(
      flagsBase,
      'POST',
      `${E}/flags`,
      {
        key: `checkout-v${i}`,
        name: `checkout v${i}`,
        type: 'string',
        enabled: true,
        defaultVariation: 'control',
        variations: [
          { key: 'control', value: 'old' },
          { key: 'treatment', value: 'new' },
        ],
        targets: [{ variation: 'treatment', contextKeys: ['vip-1', 'vip-2'] }],
        rules: [
          {
            id: 'beta-eu',
            variation: 'treatment',
            clauses: [
              { attribute: 'country', op: 'in', values: ['de', 'fr'] },
              { attribute: 'plan', op: 'startsWith', values: ['beta'] },
            ],
          },
        ],
        rollout: [
          { variation: 'control', weight: 50000 },
          { variation: 'treatment', weight: 50000 },
        ],
      },
      token,
    );
  }
  const evalBody = { context: { key: 'user-42', country: 'us', plan: 'pro' } };
  const probe = await call(flagsBase, 'POST', `${E}/evaluate`, evalBody, token);
  const evaluated = Object.keys((probe.body as { flags?: Record<string, unknown> }).flags ?? {}).length;
  if (evaluated !== flagCount)
    throw new Error(
      `evaluate returned ${evaluated} flags, expected ${flagCount}: ${JSON.stringify(probe.body).slice(0, 300)}`,
    );
  const auth = { Authorization: `Bearer ${token}` };
  measure(
    'flags',
    `POST evaluate (${flagCount} flags, rules + rollout)`,
    flagsBase + `${E}/evaluate`,
    fixedLua('POST', `${E}/evaluate`, evalBody, auth),
  );
  measure(
    'flags',
    `GET flag list (${flagCount} flags)`,
    flagsBase + `${E}/flags`,
    fixedLua('GET', `${E}/flags`, undefined, auth),
  );
  await stop(flags);

  // ---- clock lab ----
  const labPort = await freePort();
  const proxyPort = await freePort();
  const lab = started(
    await startOnPort('src/clocklab/main.js', labPort, { PORT: String(labPort), PROXY_PORT: String(proxyPort) }),
  );
  const labBase = `http://127.0.0.1:${labPort}`;
  const procs = (await call(labBase, 'GET', '/api/v1/processes')).body as { processes?: Array<{ id: string }> };
  for (const id of ['p1', 'p2']) {
    if (!procs.processes?.some((p) => p.id === id))
      await call(labBase, 'POST', '/api/v1/processes', { id, clock_type: 'vector' });
  }
  measure('clock lab', 'POST messages p1<->p2', labBase + '/api/v1/messages', messagesLua);
  measure('clock lab', 'GET simulation/state', labBase + '/api/v1/simulation/state');
  await stop(lab);
} finally {
  for (const c of [...children]) await stop(c);
  rmSync(dbDir, { recursive: true, force: true });
}

console.log(table(rows));
console.log(
  `\n${connections} connections, ${seconds} s per scenario, wrk on loopback; "vs hello" ` +
    '= req/s over the bare uWS hello-world of this run.',
);
const failed = rows.filter((r) => r.errors > 0 || !Number.isFinite(r['req/s']) || r['req/s'] === 0);
if (failed.length > 0) {
  console.log(
    `\n${failed.length} scenario(s) had errors: ` +
      `${failed.map((r) => `${r.service}: ${r.scenario} (${r.errors})`).join('; ')}`,
  );
  process.exit(1);
}
