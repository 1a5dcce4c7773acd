/**
 * Starts a real service as a child process (the built dist/ entry, as `make run` does) on a free
 * port and returns its base URL. Tests speak to it over real sockets only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Started {
  base: string;
  port: number;
  child: ChildProcess;
  stop: () => Promise<void>;
  output: () => string;
}

export async function startService(entry: string, env: Record<string, string>, portVar: string): Promise<Started> {
  const child = spawn(process.execPath, [path.join(repoRoot, entry)], {
    env: { ...process.env, LOGGING_FORMAT: 'json', LOGGING_LEVEL: 'warn', [portVar]: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${entry} did not start: ${out}${err}`)), 20_000);
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${entry} exited with ${code}: ${out}${err}`));
    });
  });
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    child,
    output: () => out + err,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
}

/**
 * Test servers keep a pool of 6 node actors unless a test asks otherwise: the default (64, enough
 * for the largest cluster) would start 64 threads in every test's server on CI's 2 cores.
 */
export const startReplSim = (env: Record<string, string> = {}) =>
  startService('dist/src/replication/main.js', { REPLSIM_WORKER_POOL: '6', ...env }, 'REPLSIM_PORT');
