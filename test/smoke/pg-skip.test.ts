/**
 * The PostgreSQL tests' skip is visible and cannot pass CI: test/flags/store-postgres.test.ts run as
 * its own process (tap's TypeScript loader, as tap runs it) with FLAGS_SKIP_PG_TESTS=1 reports a tap
 * SKIP with its reason and exits 0 on a developer's machine, and fails (exit non-zero, a failed
 * assertion naming the reason) when CI is set. It never starts PostgreSQL: the skip comes first.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from '../helpers/server.js';
import { pgSkipReason, underCi } from '../flags/fixtures/pg-harness.js';

const loader = path.join(repoRoot, 'node_modules/@tapjs/typescript/dist/esm/import.mjs');
const file = path.join(repoRoot, 'test/flags/store-postgres.test.ts');
const runTimeoutMs = 60_000;

/** Runs the PostgreSQL test file as tap would, with FLAGS_SKIP_PG_TESTS=1 and the given CI. */
function run(ci: string | undefined): Promise<{ status: number | null; out: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, FLAGS_SKIP_PG_TESTS: '1' };
  if (ci === undefined) delete env['CI'];
  else env['CI'] = ci;
  delete env['DATABASE_URL'];
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--import=${loader}`, file], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), runTimeoutMs);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, out });
    });
  });
}

// Both runs at once: each is mostly TypeScript loading.
const outsideCi = run(undefined);
const underCiRun = run('true');

t.test('outside CI the skip is a tap SKIP with its reason, and the file passes', async (t) => {
  const r = await outsideCi;
  t.equal(r.status, 0, 'exit code 0', { out: r.out.slice(-2000) });
  t.match(r.out, /# SKIP FLAGS_SKIP_PG_TESTS=1 was set/, 'the skip names its reason in the TAP output');
  t.notMatch(r.out, /^\s*not ok/m, 'no failed assertion');
});

t.test('CI=true: the skip fails the run', async (t) => {
  const r = await underCiRun;
  t.not(r.status, 0, 'exit code non-zero', { out: r.out.slice(-2000) });
  t.match(
    r.out,
    /not ok \d+ - .*skipped under CI \(FLAGS_SKIP_PG_TESTS=1 was set\)/,
    'a failed assertion names the reason',
  );
});

t.test('what counts as CI, and what as a skip', async (t) => {
  const ciCases: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['', false],
    ['0', false],
    ['false', false],
    ['FALSE', false],
    ['true', true],
    ['1', true],
    ['yes', true],
  ];
  for (const [value, expected] of ciCases) {
    t.equal(
      underCi(value === undefined ? {} : { CI: value }),
      expected,
      `CI=${String(value)}: ${expected ? 'CI' : 'not CI'}`,
    );
  }
  t.equal(pgSkipReason({ FLAGS_SKIP_PG_TESTS: '1' }), 'FLAGS_SKIP_PG_TESTS=1 was set', 'FLAGS_SKIP_PG_TESTS=1 skips');
  t.equal(pgSkipReason({}), undefined, 'unset: the tests run');
  t.equal(pgSkipReason({ FLAGS_SKIP_PG_TESTS: '0' }), undefined, 'FLAGS_SKIP_PG_TESTS=0: the tests run');
});
