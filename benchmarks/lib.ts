/**
 * Benchmark helpers: start a built entry point as a child process on a free port, drive it with wrk
 * (loopback only, bounded duration) and parse throughput and latency percentiles. Benchmarks
 * report ratios against a baseline measured in the same run, because the machines are noisy.
 */
import { readFileSync } from 'node:fs';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The warm pool of every server a benchmark starts, unless it sets REPLSIM_WORKER_POOL itself. */
const benchmarkWorkerPool = '6';

export interface Child {
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `entry` (relative to a dist/ directory: this build's by default, or another build's). The
 * replication simulator's warm pool is 6 actors unless `env` says otherwise (the default of 64 would
 * boot in the background during the first measured seconds; cluster-ready and scale set their own).
 */
export async function startChild(
  entry: string,
  env: Record<string, string>,
  portVar: string,
  dist = distRoot,
): Promise<Child> {
  const proc = spawn(process.execPath, [path.join(dist, entry)], {
    env: {
      ...process.env,
      LOGGING_FORMAT: 'json',
      LOGGING_LEVEL: 'error',
      REPLSIM_WORKER_POOL: benchmarkWorkerPool,
      [portVar]: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise<number>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${entry} did not start`)), 20_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (c) => reject(new Error(`${entry} exited ${c}`)));
  });
  return {
    port,
    proc,
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
        setTimeout(() => proc.kill('SIGKILL'), 3000).unref();
      }),
  };
}

export interface WrkResult {
  rps: number;
  p50ms: number;
  p99ms: number;
  errors: number;
}

/** A wrk duration ("850.12us", "1.20ms", "2.01s") in milliseconds; NaN when unreadable. */
export function toMs(s: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(s);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

export function wrkAvailable(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    return (err as { status?: number }).status === 1;
  }
}

/** Runs wrk against a loopback URL. `lua` is an optional request script. */
export function runWrk(
  url: string,
  opts: { connections: number; seconds: number; threads?: number; lua?: string },
): WrkResult {
  if (!/^http:\/\/(127\.\d+\.\d+\.\d+|localhost)(:\d+)?\//.test(url))
    throw new Error('benchmarks target loopback only');
  const args = ['-t', String(opts.threads ?? 2), '-c', String(opts.connections), '-d', `${opts.seconds}s`, '--latency'];
  if (opts.lua) {
    const dir = mkdtempSync(path.join(tmpdir(), 'wrk-'));
    const file = path.join(dir, 'script.lua');
    writeFileSync(file, opts.lua);
    args.push('-s', file);
  }
  args.push(url);
  const out = execFileSync('wrk', args, { encoding: 'utf8' });
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const p50 = toMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? '');
  const p99 = toMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sockErr = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const errors =
    non2xx + (sockErr ? Number(sockErr[1]) + Number(sockErr[2]) + Number(sockErr[3]) + Number(sockErr[4]) : 0);
  return { rps, p50ms: p50, p99ms: p99, errors };
}

export async function postJson(base: string, p: string, body: unknown): Promise<any> {
  const r = await fetch(base + p, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  return r.json();
}

export function table(rows: Array<Record<string, string | number>>): string {
  const cols = Object.keys(rows[0] ?? {});
  const fmt = (v: string | number) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v);
  const lines = [`| ${cols.join(' | ')} |`, `|${cols.map(() => '---').join('|')}|`];
  for (const r of rows) lines.push(`| ${cols.map((c) => fmt(r[c] ?? '')).join(' | ')} |`);
  return lines.join('\n');
}

/** A static POST body for wrk (no per-request Lua, so wrk itself costs what it costs for a GET). */
export function staticPostLua(body: unknown): string {
  return (
    `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n` + `wrk.body = '${JSON.stringify(body)}'\n`
  );
}

/** A write body script for wrk: POST with a rotating key so the store grows like real traffic. */
export function writeLua(pathName: string, keys = 1000): string {
  return `
counter = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  local body = '{"key":"k' .. (counter % ${keys}) .. '","value":"value-' .. counter .. '"}'
  return wrk.format("POST", "${pathName}", nil, body)
end
`;
}

/** User plus system CPU of a child process, every thread, ms (/proc/PID/stat; clock ticks of 10 ms). */
export function childCpuMs(child: Child): number {
  const f = readFileSync(`/proc/${child.proc.pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * Waits until a server spends (almost) no CPU: less than `cpuMs` over each `windowMs` (its warm pool has
 * refilled, nothing else runs); throws after `waitMsMax`.
 */
export async function waitQuiet(child: Child, cpuMs: number, windowMs: number, waitMsMax: number): Promise<void> {
  const until = performance.now() + waitMsMax;
  let last = childCpuMs(child);
  while (performance.now() < until) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = childCpuMs(child);
    if (now - last < cpuMs) return;
    last = now;
  }
  throw new Error(`server ${child.port} did not go quiet within ${waitMsMax} ms`);
}
