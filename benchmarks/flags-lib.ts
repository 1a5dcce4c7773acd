/**
 * What the flag service's HTTP benchmarks share (flags-http.ts, flags-interop.ts): the service in
 * its own process on a temp SQLite file with an admin, the 20 benchmark flags (targets, a segment
 * rule, a two-clause rule, a rollout) and their segment, the SDK key, and the CPU time a child
 * process spends per request (from /proc, so a busy machine weighs less than on req/s). Not a
 * benchmark itself: it measures nothing on import.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startChild, type Child, type WrkResult } from './lib.js';

export const benchFlagsCount = 20;
export const benchEnvironmentPath = '/api/v1/projects/bench/environments/prod';
/** The context every evaluation request sends (matches rule `nl` of every flag). */
export const benchContext = { key: 'user-42', country: 'NL', version: '2.3.0' };

/** fetch, retried once: a pooled keep-alive connection may have been closed by the server while wrk ran. */
async function fetchRetry(input: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch {
    return fetch(input, init);
  }
}

/** One JSON call to the service; a status of 300 or more throws with the answer. */
export async function call(
  base: string,
  method: string,
  p: string,
  token: string | undefined,
  body?: unknown,
): Promise<unknown> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers['authorization'] = `Bearer ${token}`;
  const r = await fetchRetry(base + p, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${text}`);
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/** Benchmark flag `f{i}`: targets, a segment rule, a two-clause rule, a 50/50 rollout. */
export function flagBody(i: number): unknown {
  return {
    key: `f${i}`,
    type: 'string',
    enabled: true,
    variations: [
      { key: 'a', value: 'alpha' },
      { key: 'b', value: 'beta' },
      { key: 'c', value: 'gamma' },
    ],
    defaultVariation: 'a',
    targets: [{ contextKeys: ['vip-1', 'vip-2'], variation: 'c' }],
    rules: [
      { id: 'beta-users', clauses: [{ attribute: '', op: 'segmentMatch', values: ['bench'] }], variation: 'b' },
      {
        id: 'nl',
        clauses: [
          { attribute: 'country', op: 'in', values: ['NL', 'BE'] },
          { attribute: 'version', op: 'semverGte', values: ['2.1'] },
        ],
        variation: 'c',
      },
    ],
    rollout: [
      { variation: 'a', weight: 50000 },
      { variation: 'b', weight: 50000 },
    ],
  };
}

export interface FlagsService {
  child: Child;
  url: string;
  port: number;
  /** An admin's access token. */
  token: string;
  /** The SDK key of project bench, environment prod. */
  sdkKey: string;
  stop(): Promise<void>;
}

/**
 * Starts dist/src/flags/main.js (SQLite in a temp dir, removed by stop()), signs in, and creates
 * segment `bench` and the benchmark flags in bench/prod.
 */
export async function startFlagsService(
  env: Record<string, string> = {},
  flagsCount = benchFlagsCount,
): Promise<FlagsService> {
  const dir = mkdtempSync(path.join(tmpdir(), 'flags-bench-'));
  const child = await startChild(
    'src/flags/main.js',
    {
      FLAGS_DB: path.join(dir, 'flags.db'),
      FLAGS_ADMIN_EMAIL: 'bench@example.com',
      FLAGS_ADMIN_PASSWORD: 'bench-password',
      FLAGS_JWT_SECRET: 'bench-secret-bench-secret-bench-secret-0123',
      FLAGS_LOGIN_ATTEMPTS_PER_MINUTE: '1000',
      ...env,
    },
    'FLAGS_PORT',
  );
  const stop = async (): Promise<void> => {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const url = `http://127.0.0.1:${child.port}`;
    const { accessToken: token } = (await call(url, 'POST', '/auth/login', undefined, {
      email: 'bench@example.com',
      password: 'bench-password',
    })) as { accessToken: string };
    await call(url, 'POST', '/api/v1/projects/bench/segments', token, { key: 'bench', included: ['u-1'] });
    for (let i = 0; i < flagsCount; i++) await call(url, 'POST', `${benchEnvironmentPath}/flags`, token, flagBody(i));
    const envs = (await call(url, 'GET', '/api/v1/projects/bench/environments', token)) as Array<{ sdkKey: string }>;
    return { child, url, port: child.port, token, sdkKey: envs[0]?.sdkKey ?? '', stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc; NaN where /proc is missing. */
export function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}

export interface LoadResult extends WrkResult {
  /** CPU microseconds the server process spent per request answered during the run. */
  cpuUsPerRequest: number;
}

/** Runs `load` (wrk for `seconds`) and charges the server's CPU time to the requests it answered. */
export async function withServerCpu(
  pid: number | undefined,
  seconds: number,
  load: () => WrkResult | Promise<WrkResult>,
): Promise<LoadResult> {
  const before = cpuSeconds(pid);
  const r = await load();
  const used = cpuSeconds(pid) - before;
  return { ...r, cpuUsPerRequest: (used * 1e6) / (r.rps * seconds) };
}
