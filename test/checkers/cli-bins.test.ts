/**
 * The command lines as installed (issue 19 point 5): package.json `bin` entries simlab-lincheck
 * and simlab-swarm, each a shebang script running the build (dist/, which `make test` builds),
 * with --help, --json (one JSON object per file or run on stdout) and their documented exit codes.
 * lincheck's argument handling is also tested in-process through runCli.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from '../helpers/server.js';
import { runCli } from '../../src/checkers/lincheck/cli.js';

const historiesDir = path.join(repoRoot, '../shared/data/histories');
const kv = (f: string): string => path.join(historiesDir, 'kv', f);
const dir = mkdtempSync(path.join(tmpdir(), 'cli-bins-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const badLine = path.join(dir, 'bad.edn');
writeFileSync(
  badLine,
  '{:process 0, :type :invoke, :f :put, :key "k", :value "a"}\n{:process 0, :type :ok, :f :put, :key "k"\n',
);

const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> };

function run(bin: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // tap's hooks are for the test process only
  const r = spawnSync(path.join(repoRoot, pkg.bin[bin] as string), args, { env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const jsonLines = (s: string): Array<Record<string, unknown>> =>
  s
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

t.test('package.json declares both bins as shebang scripts', async (t) => {
  for (const name of ['simlab-lincheck', 'simlab-swarm']) {
    const file = pkg.bin[name];
    t.ok(file, `${name} is a bin`);
    t.match(readFileSync(path.join(repoRoot, file as string), 'utf8'), /^#!\/usr\/bin\/env node\n/, `${name}: shebang`);
  }
});

t.test('lincheck in-process: --help, --json, unreadable lines and usage errors', async (t) => {
  const call = async (argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), now: () => 0 });
    return { code, out, err };
  };
  const help = await call(['--help']);
  t.equal(help.code, 0, '--help exits 0');
  t.match(
    help.out.join('\n'),
    /exit codes: 0 every file is linearizable; 1 [\s\S]*2 a usage error/,
    '--help documents the exit codes',
  );
  t.match(help.out.join('\n'), /--json/, '--help names --json');

  const j = await call(['--model', 'kv', '--json', kv('c01-ok.txt'), kv('c01-bad.txt'), badLine]);
  t.equal(j.code, 2, 'the worst file decides: an unreadable line is 2');
  const objs = j.out.map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(objs.length, 3, 'one JSON object per file');
  t.match(objs[0], { file: kv('c01-ok.txt'), verdict: 'linearizable', ms: Number });
  t.match(objs[1], { file: kv('c01-bad.txt'), verdict: 'not-linearizable' });
  t.match(objs[2], { file: badLine, line: 2, exit: 2, error: /bad\.edn:2: cannot parse/ });
  t.match(j.err.join('\n'), /bad\.edn:2: cannot parse the history/, 'the error names file and line on stderr too');

  const cases: Array<[string[], RegExp]> = [
    [['--model', 'kv', '--bogus', 'x'], /Unknown option '--bogus'/],
    [['--model', 'kv'], /give at least one history file/],
    [['--model', 'kv', '--timeout-ms', '0', 'x'], /positive number/],
    [['--model', 'kv', '--json=yes', 'x'], /does not take an argument/],
  ];
  for (const [argv, msg] of cases) {
    const r = await call(argv);
    t.equal(r.code, 2, `${argv.join(' ')}: exit 2`);
    t.match(r.err.join('\n'), msg, `${argv.join(' ')}: says why`);
  }
});

t.test('simlab-lincheck from dist', async (t) => {
  const help = run('simlab-lincheck', ['--help']);
  t.equal(help.status, 0);
  t.match(help.stdout, /usage: simlab-lincheck/);
  const ok = run('simlab-lincheck', ['--model', 'kv', '--json', kv('c01-ok.txt'), kv('c10-ok.txt')]);
  t.equal(ok.status, 0, 'every file linearizable: exit 0');
  t.match(jsonLines(ok.stdout), [{ verdict: 'linearizable' }, { verdict: 'linearizable' }]);
  const bad = run('simlab-lincheck', ['--model', 'kv', kv('c01-bad.txt')]);
  t.equal(bad.status, 1, 'not linearizable: exit 1');
  const unreadable = run('simlab-lincheck', ['--model', 'kv', badLine]);
  t.equal(unreadable.status, 2, 'an unreadable line: exit 2');
  t.match(unreadable.stderr, /bad\.edn:2:/);
});

t.test('simlab-swarm from dist', async (t) => {
  const help = run('simlab-swarm', ['--help']);
  t.equal(help.status, 0, '--help exits 0');
  t.match(help.stdout, /usage: simlab-swarm[\s\S]*exit codes: 0 /, '--help documents the exit codes');
  const one = run('simlab-swarm', ['--seed', '3', '--strategy', 'raft', '--json']);
  t.equal(one.status, 0, 'a passing seed: exit 0');
  const runObj = jsonLines(one.stdout);
  t.equal(runObj.length, 1, 'one JSON object for the run');
  t.match(runObj[0], { seed: 3, strategy: 'raft', ok: true, trace_hash: /^[0-9a-f]{16,}$/, verdicts: Object });
  const text = run('simlab-swarm', ['--seed', '3', '--strategy', 'raft']);
  t.match(text.stdout, new RegExp(`^trace ${String(runObj[0]?.['trace_hash'])}$`, 'm'), 'the same trace hash as text');

  const win = run('simlab-swarm', [
    '--seed',
    '1',
    '--runs',
    '6',
    '--jobs',
    '2',
    '--strategy',
    'single_leader',
    '--json',
  ]);
  t.equal(win.status, 0);
  const w = jsonLines(win.stdout);
  t.equal(w.length, 1, 'one JSON object for the window');
  t.match(w[0], { strategy: 'single_leader', first_seed: 1, runs: 6, jobs: 2, failed: 0, ok: true, failures: [] });
  t.equal(win.stderr, '', 'no progress on stderr when it is not a terminal and --progress is not given');

  const usage = run('simlab-swarm', ['--runs', 'many']);
  t.equal(usage.status, 2, 'a usage error: exit 2');
  t.match(usage.stderr, /--runs must be an integer/);
});
