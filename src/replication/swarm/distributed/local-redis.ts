/**
 * A throwaway redis-server for the distributed swarm's test and benchmark (and for trying the
 * distributed mode on one machine): Debian's `redis-server`, installed with apt-get on first use as
 * the browser tests install chromium, started on a free loopback port in a temp dir with no
 * persistence. It is not how a real campaign gets its Redis: `--redis URL` names any server.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** How long a started redis-server may take to say it accepts connections, ms. */
const redisStartMsMax = 10_000;
/** Free-port races (another process took the port between probe and bind) tolerated before giving up. */
const redisStartTriesMax = 3;

/** The redis-server binary on PATH, or null. */
export function redisServerPath(): string | null {
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const p = r.stdout.trim();
  return r.status === 0 && p !== '' ? p : null;
}

/**
 * The redis-server binary, installing Debian's package when it is missing (root, as in CI). Returns
 * a value, not an exception, when it cannot: callers (the benchmark) skip with the reason.
 */
export function ensureRedisServer(): { ok: true; path: string } | { ok: false; reason: string } {
  const found = redisServerPath();
  if (found) return { ok: true, path: found };
  // RUNLEVEL=1 keeps the package's init script from starting a system-wide server on 6379.
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive', RUNLEVEL: '1' };
  const install = (): number | null =>
    spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env }).status;
  if (install() !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    if (install() !== 0) return { ok: false, reason: '`apt-get install -y redis-server` failed' };
  }
  const installed = redisServerPath();
  return installed ? { ok: true, path: installed } : { ok: false, reason: 'redis-server installed but not on PATH' };
}

export interface LocalRedis {
  /** redis://127.0.0.1:<port> */
  url: string;
  port: number;
  child: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its temp dir. */
  stop: () => Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function startOnce(binary: string): Promise<LocalRedis | { failed: string }> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'simlab-redis-'));
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    '',
  ];
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), redisStartMsMax);
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (/Ready to accept connections/.test(out)) {
        clearTimeout(timer);
        resolve(true);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  if (!ready) {
    await stop();
    return { failed: out.slice(-2000) };
  }
  child.stdout?.removeAllListeners('data');
  child.stderr?.removeAllListeners('data');
  child.stdout?.resume();
  child.stderr?.resume();
  return { url: `redis://127.0.0.1:${port}`, port, child, stop };
}

/** Installs (if needed) and starts a private redis-server; throws with its output when it cannot start. */
export async function startLocalRedis(): Promise<LocalRedis> {
  const bin = ensureRedisServer();
  if (!bin.ok) throw new Error(bin.reason);
  let last = '';
  for (let i = 0; i < redisStartTriesMax; i++) {
    const r = await startOnce(bin.path);
    if (!('failed' in r)) return r;
    last = r.failed;
  }
  throw new Error(`redis-server did not start after ${redisStartTriesMax} tries:\n${last}`);
}
