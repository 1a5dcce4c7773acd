/**
 * Smoke test of `make run`: the built entry (node dist/src/main.js, what the Makefile target runs)
 * starts every service in one process on free ports, prints their URLs, and each of them answers
 * /healthz with 200 {"status":"ok"}; SIGTERM stops the process cleanly. Not a test of any service's
 * behaviour (their own suites do that): only that the whole thing comes up together.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from '../helpers/http.js';
import { repoRoot } from '../helpers/server.js';

const startTimeoutMs = 20_000;
/** The line main.ts prints for each service, and how to find its port(s) in it. */
const services = ['replication simulator', 'feature flags', 'clock lab'] as const;

const dir = mkdtempSync(path.join(tmpdir(), 'smoke-run-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const env: NodeJS.ProcessEnv = {
  ...process.env,
  REPLSIM_PORT: '0',
  FLAGS_PORT: '0',
  PORT: '0',
  PROXY_PORT: '0',
  HOST: '127.0.0.1',
  FLAGS_DB: path.join(dir, 'flags.db'),
  LOGGING_FORMAT: 'json',
  LOGGING_LEVEL: 'error',
};
delete env['DATABASE_URL'];
delete env['PROFILER_ADDR'];
const child = spawn(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
  cwd: dir,
  env,
  stdio: ['ignore', 'pipe', 'pipe'],
});
let out = '';
let err = '';
child.stderr.on('data', (d: Buffer) => (err += d.toString()));
const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
t.teardown(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
});

const allStarted = (): boolean =>
  services.every((s) => out.split('\n').some((l) => l.startsWith(s) && /localhost:\d+/.test(l)));
const started = await new Promise<boolean>((resolve) => {
  const timer = setTimeout(() => resolve(false), startTimeoutMs);
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (allStarted()) {
      clearTimeout(timer);
      resolve(true);
    }
  });
  child.once('exit', () => {
    clearTimeout(timer);
    resolve(false);
  });
});
t.ok(started, `every service printed its URL within ${startTimeoutMs} ms`, { stdout: out, stderr: err.slice(-2000) });

if (started) {
  t.test('every service answers /healthz', async (t) => {
    for (const name of services) {
      const line = out.split('\n').find((l) => l.startsWith(name)) ?? '';
      const ports = [...new Set([...line.matchAll(/localhost:(\d+)/g)].map((m) => Number(m[1])))];
      t.ok(ports.length >= 1 && ports.every((p) => p > 0), `${name}: a real port is printed`);
      for (const port of ports) {
        const r = await request(`http://127.0.0.1:${port}`, 'GET', '/healthz');
        t.equal(r.status, 200, `${name} on port ${port}: /healthz is 200`);
        t.same(r.body, { status: 'ok' }, `${name} on port ${port}: /healthz body`);
      }
    }
    // The clock lab line names its API port and its browser proxy: both must have answered.
    const clock = out.split('\n').find((l) => l.startsWith('clock lab')) ?? '';
    t.equal(
      new Set([...clock.matchAll(/localhost:(\d+)/g)].map((m) => m[1])).size,
      2,
      'clock lab API and proxy are two ports',
    );
  });

  t.test('SIGTERM stops every service and the process exits 0', async (t) => {
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('timeout'), 10_000))]);
    t.equal(code, 0, 'exit code 0 after SIGTERM');
  });
}
t.notMatch(err, /did not start|no service started/, 'no service reported a failed start');
