/**
 * Benchmark of the linearizability checker against Porcupine itself (../shared/tools, built into a
 * temp dir on first use), on the same files: the Jepsen etcd logs, the kv logs and a large
 * generated kv set (20 histories of 20,000 operations over 10 keys and 10 clients, every third
 * with one stale read; src/checkers/lincheck/generate.ts). Whole process (start-up, reading,
 * parsing, checking; alternating runs of both CLIs, each free to use every core, and Porcupine
 * also on one core as before) and in-process (the check alone, as Porcupine's CLI prints it);
 * verdicts compared on every file, any disagreement fails the benchmark. With /usr/bin/time it
 * also records each side's CPU time (user + system), the figure to trust on a loaded machine.
 * It is not a correctness test (test/checkers/ is).
 * Run: make bench-lincheck, or npx tsc -p tsconfig.json && node scripts/build-cli.mjs &&
 * node dist/benchmarks/lincheck.js [--runs N] [--gen-ops N] [--gen-files N]
 */
import { spawnSync } from 'node:child_process';
import nodeModule from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory } from '../src/checkers/lincheck/checker.js';
import { largeKvSet } from '../src/checkers/lincheck/generate.js';
import type { History } from '../src/checkers/lincheck/history.js';
import { models, type ModelName } from '../src/checkers/lincheck/models.js';
import { parseHistory } from '../src/checkers/lincheck/parse.js';
import { median, recordResult } from './results.js';

// dist/benchmarks/lincheck.js -> repo root is two levels up from dist/benchmarks.
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');
const porcupineBuildScript = path.resolve(repoRoot, '../shared/tools/build-porcupine.sh');
/** What users run: the bin, which takes the one-file bundle when it is built (scripts/build-cli.mjs). */
const lincheckBin = path.join(repoRoot, 'bin/simlab-lincheck.mjs');
const lincheckBundle = path.join(repoRoot, 'dist/cli/simlab-lincheck.mjs');
const lincheckModules = path.join(repoRoot, 'dist/src/checkers/lincheck/cli.js');
const timeBin = '/usr/bin/time';
const haveTime = existsSync(timeBin);

const argv = process.argv.slice(2);
const numArg = (name: string, fallback: number): number => {
  const v = argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback;
  return Number.isInteger(v) && v > 0 ? v : fallback;
};
/** Alternating whole-process runs of each CLI per set (and in-process passes of lincheck). */
const runs = numArg('--runs', Number(process.env['BENCH_RUNS'] ?? 5));
/** Operations per generated history (each an invoke and an ok line), and how many histories. */
const genOps = numArg('--gen-ops', 20_000);
const genFiles = numArg('--gen-files', 20);
/** Porcupine on one core (GOMAXPROCS=1, the figure recorded before lincheck used threads). */
const porcupineOneCoreEnv = { ...process.env, GOMAXPROCS: '1' };
const porcupineEnv: NodeJS.ProcessEnv = { ...process.env };
delete porcupineEnv['GOMAXPROCS'];

// ---------------------------------------------------------------------------------------------
// Porcupine: the CLI built from ../shared/tools into a temp dir (PORCUPINE_BIN overrides).

function porcupineBinary(): { ok: true; bin: string } | { ok: false; reason: string } {
  const given = process.env['PORCUPINE_BIN'];
  if (given)
    return existsSync(given)
      ? { ok: true, bin: given }
      : { ok: false, reason: `PORCUPINE_BIN=${given} does not exist` };
  const dir = path.join(tmpdir(), 'simlab-porcupine');
  const bin = path.join(dir, 'porcupine-cli');
  if (existsSync(bin)) return { ok: true, bin };
  if (!existsSync(porcupineBuildScript)) return { ok: false, reason: `${porcupineBuildScript} not found` };
  mkdirSync(dir, { recursive: true });
  console.log(`building Porcupine into ${dir} (installs Debian's golang-go if go is missing) ...`);
  const r = spawnSync('bash', [porcupineBuildScript], {
    env: { ...process.env, PORCUPINE_BIN_DIR: dir },
    encoding: 'utf8',
  });
  if (r.status !== 0 || !existsSync(bin))
    return {
      ok: false,
      reason:
        `build-porcupine.sh failed (exit ${r.status}): ` +
        `${(r.stderr ?? '').trim().split('\n').slice(-3).join(' / ')}`,
    };
  return { ok: true, bin };
}

// ---------------------------------------------------------------------------------------------

interface BenchSet {
  name: string;
  label: string;
  files: string[];
  lincheckModel: ModelName;
  porcupineModel: 'etcd' | 'kv';
}

function setFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .map((f) => path.join(dir, f));
}

const base = (file: string): string => path.basename(file).replace(/\.\w+$/, '');

/** Files lincheck refuses by design (no client operations: nothing to check, so no verdict). */
function emptyHistories(files: string[]): string[] {
  return files.filter((f) => {
    const parsed = parseHistory(readFileSync(f, 'utf8'));
    return parsed.ok && parsed.history.length === 0;
  });
}

interface CliRun {
  ms: number;
  /** User + system CPU seconds of the child, in ms (NaN without /usr/bin/time). */
  cpuMs: number;
  verdicts: Map<string, string>;
  checkMs: number;
}

/** Runs `cmd args` as a child, timed (wall, and CPU through /usr/bin/time when it is there). */
function timedRun(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): { ms: number; cpuMs: number; status: number | null; stdout: string; stderr: string } {
  const cpuFile = path.join(genDir, 'cpu.txt');
  const started = performance.now();
  const r = haveTime
    ? spawnSync(timeBin, ['-f', '%U %S', '-o', cpuFile, cmd, ...args], { encoding: 'utf8', env, maxBuffer: 1 << 26 })
    : spawnSync(cmd, args, { encoding: 'utf8', env, maxBuffer: 1 << 26 });
  const ms = performance.now() - started;
  let cpuMs = NaN;
  if (haveTime && existsSync(cpuFile)) {
    const last = readFileSync(cpuFile, 'utf8').trim().split('\n').pop() ?? '';
    const [user, sys] = last.split(' ').map(Number);
    if (Number.isFinite(user) && Number.isFinite(sys)) cpuMs = ((user as number) + (sys as number)) * 1000;
    rmSync(cpuFile, { force: true });
  }
  return { ms, cpuMs, status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function runLincheckCli(entry: string, set: BenchSet): CliRun {
  const r = timedRun(process.execPath, [entry, '--model', set.lincheckModel, ...set.files], process.env);
  if (r.status !== 0 && r.status !== 1) throw new Error(`lincheck CLI exited ${r.status}: ${r.stderr}`);
  const verdicts = new Map<string, string>();
  for (const line of r.stdout.trim().split('\n')) {
    const [file, verdict] = line.split(' ');
    if (file && verdict) verdicts.set(base(file), verdict);
  }
  return { ms: r.ms, cpuMs: r.cpuMs, verdicts, checkMs: NaN };
}

function runPorcupineCli(bin: string, set: BenchSet, env: NodeJS.ProcessEnv): CliRun {
  const r = timedRun(bin, ['--model', set.porcupineModel, ...set.files], env);
  if (r.status !== 0) throw new Error(`porcupine-cli exited ${r.status}: ${r.stderr}`);
  const verdicts = new Map<string, string>();
  let checkMs = 0;
  for (const line of r.stdout.trim().split('\n')) {
    const [name, verdict, t] = line.split(' ');
    if (name === 'total' || !name || !verdict) continue;
    verdicts.set(name, verdict);
    checkMs += Number(t);
  }
  return { ms: r.ms, cpuMs: r.cpuMs, verdicts, checkMs };
}

/** lincheck in this process: read and parse every file once, then check each file per pass. */
function lincheckInProcess(set: BenchSet, passes: number): { passMs: number[]; verdicts: Map<string, string> } {
  const parsed: Array<{ name: string; history: History }> = set.files.map((f) => {
    const p = parseHistory(readFileSync(f, 'utf8'));
    if (!p.ok) throw new Error(`${f}: ${p.reason}`);
    return { name: base(f), history: p.history };
  });
  const passMs: number[] = [];
  const verdicts = new Map<string, string>();
  for (let pass = 0; pass < passes; pass++) {
    let sum = 0;
    for (const e of parsed) {
      const started = performance.now();
      // Verdict only, as the CLI without --explain and as Porcupine's CLI (no linearization info).
      const result = checkHistory(e.history, models[set.lincheckModel], { violation: 'verdict' });
      sum += performance.now() - started;
      verdicts.set(e.name, result.verdict);
    }
    passMs.push(sum);
  }
  return { passMs, verdicts };
}

const fmt = (ms: number): string => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));

// ---------------------------------------------------------------------------------------------

const porcupine = porcupineBinary();
if (!porcupine.ok) {
  console.log(`lincheck benchmark SKIPPED: Porcupine cannot be built here (${porcupine.reason}).`);
  console.log('Nothing is recorded: lincheck is only ever reported beside Porcupine measured in the same run.');
  process.exit(0);
}
if (!existsSync(lincheckModules)) {
  console.error(`${lincheckModules} missing: run npx tsc -p tsconfig.json first`);
  process.exit(1);
}
const bundled = existsSync(lincheckBundle);

const genDir = mkdtempSync(path.join(tmpdir(), 'lincheck-gen-'));
const generated = largeKvSet(genFiles, genOps).map((g) => {
  const file = path.join(genDir, `${g.name}.txt`);
  writeFileSync(file, g.text);
  return file;
});

const etcdAll = setFiles(path.join(historiesDir, 'jepsen-etcd'));
const etcdEmpty = emptyHistories(etcdAll);
const sets: BenchSet[] = [
  {
    name: 'etcd',
    label: `Jepsen etcd logs (${etcdAll.length - etcdEmpty.length} files)`,
    files: etcdAll.filter((f) => !etcdEmpty.includes(f)),
    lincheckModel: 'cas-register',
    porcupineModel: 'etcd',
  },
  {
    name: 'kv',
    label: 'kv logs (6 files, 1–50 clients)',
    files: setFiles(path.join(historiesDir, 'kv')),
    lincheckModel: 'kv',
    porcupineModel: 'kv',
  },
  {
    name: 'generated',
    label:
      `generated kv histories (${genFiles} files × ${genOps.toLocaleString('en-US')} ops, 10 keys, ` +
      '10 clients, every third with one stale read)',
    files: generated,
    lincheckModel: 'kv',
    porcupineModel: 'kv',
  },
];
/** The targets: ahead of Porcupine everywhere, at most half its time on the large set. */
const targetRatio: Record<string, number> = { etcd: 1, kv: 1, generated: 0.5 };

console.log(
  `lincheck (${bundled ? 'one-file bundle' : 'compiled modules'} via bin/simlab-lincheck.mjs) vs Porcupine ` +
    `(${porcupine.bin}; every core, and GOMAXPROCS=1): ${runs} alternating whole-process runs per set` +
    (haveTime ? '; CPU time through /usr/bin/time' : ''),
);
console.log(`data: ${historiesDir}; generated: ${genDir}`);
for (const f of etcdEmpty)
  console.log(
    `note: ${base(f)} holds no client operation: lincheck gives no verdict by design, so it is left out of both sides`,
  );

let disagreements = 0;
const methodWhole = (porcupineCores: string): string =>
  'Wall time of one child process per CLI over every file of the set (process start-up, ' +
  'reading, parsing and checking; lincheck is `bin/simlab-lincheck.mjs` (the one-file bundle of ' +
  'scripts/build-cli.mjs when built; files spread over worker threads once they add up to 2 MiB), ' +
  `Porcupine the Go CLI built from ../shared/tools ${porcupineCores}), runs alternating ` +
  'lincheck/Porcupine; ratio = lincheck ÷ Porcupine per pair (> 1: lincheck slower).';
const methodCpu =
  'User + system CPU time of the same child processes (/usr/bin/time), every thread counted ' +
  '(lincheck: JIT and GC threads and its workers; Porcupine on every core); ratio = lincheck ÷ ' +
  'Porcupine per pair. Less disturbed by other load than wall time.';
const methodIn =
  "Sum over the set of the check time alone, files already read and parsed: lincheck's checkHistory " +
  "(verdict only, one thread) in the benchmark's process, one pass after another with the first (cold JIT) " +
  "pass included, against the per-file CheckEventsTimeout time Porcupine's CLI prints in the one-core " +
  'whole-process runs; ratio = lincheck ÷ Porcupine (> 1: lincheck slower).';

const spread = (xs: number[]): string => `${fmt(median(xs))} ms (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;

for (const set of sets) {
  const lin: CliRun[] = [];
  const por: CliRun[] = [];
  const por1: CliRun[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so a slow stretch of the machine weighs on both.
    if (i % 2 === 0) {
      lin.push(runLincheckCli(lincheckBin, set));
      por.push(runPorcupineCli(porcupine.bin, set, porcupineEnv));
      por1.push(runPorcupineCli(porcupine.bin, set, porcupineOneCoreEnv));
    } else {
      por1.push(runPorcupineCli(porcupine.bin, set, porcupineOneCoreEnv));
      por.push(runPorcupineCli(porcupine.bin, set, porcupineEnv));
      lin.push(runLincheckCli(lincheckBin, set));
    }
  }
  const inProc = lincheckInProcess(set, runs);

  // Verdicts: every file, every run, both tools (and lincheck's in-process check) must agree.
  const bad: string[] = [];
  for (const f of set.files) {
    const name = base(f);
    const seen = new Set([
      ...lin.map((r) => r.verdicts.get(name)),
      ...por.map((r) => r.verdicts.get(name)),
      ...por1.map((r) => r.verdicts.get(name)),
      inProc.verdicts.get(name),
    ]);
    if (seen.size !== 1 || seen.has(undefined))
      bad.push(`${name}: lincheck ${lin[0]?.verdicts.get(name)} / Porcupine ${por[0]?.verdicts.get(name)}`);
  }
  const counts = new Map<string, number>();
  for (const v of por[0]?.verdicts.values() ?? []) counts.set(v, (counts.get(v) ?? 0) + 1);
  const verdictText = [...counts].map(([v, n]) => `${n} ${v}`).join(', ');

  const linMs = lin.map((r) => r.ms);
  const porMs = por.map((r) => r.ms);
  const por1Ms = por1.map((r) => r.ms);
  const porCheck = por1.map((r) => r.checkMs);
  const wholeRatios = linMs.map((ms, i) => ms / (porMs[i] as number));
  const oneCoreRatios = linMs.map((ms, i) => ms / (por1Ms[i] as number));
  const inRatios = inProc.passMs.map((ms, i) => ms / (porCheck[i] as number));
  const linCpu = lin.map((r) => r.cpuMs);
  const porCpu = por.map((r) => r.cpuMs);
  const cpuRatios = linCpu.map((ms, i) => ms / (porCpu[i] as number));
  const target = targetRatio[set.name] ?? 1;
  console.log(`\n${set.name}: ${set.label}; verdicts: ${verdictText}${bad.length ? '' : ', identical on every file'}`);
  console.log(
    `  whole process   lincheck ${spread(linMs)}  Porcupine ${spread(porMs)}  ratio ${median(wholeRatios).toFixed(2)}` +
      ` (target <= ${target})`,
  );
  console.log(
    `  Porcupine 1 core                        Porcupine ${spread(por1Ms)}  ratio ${median(oneCoreRatios).toFixed(2)}`,
  );
  if (haveTime)
    console.log(
      `  CPU time        lincheck ${spread(linCpu)}  Porcupine ${spread(porCpu)}  ` +
        `ratio ${median(cpuRatios).toFixed(2)}`,
    );
  console.log(
    `  check only      lincheck ${spread(inProc.passMs)}  Porcupine ${spread(porCheck)}  ratio ` +
      `${median(inRatios).toFixed(2)}`,
  );
  if (bad.length) {
    disagreements += bad.length;
    console.error(
      `  VERDICTS DISAGREE on ${bad.length} file(s), nothing recorded for this set:\n    ${bad.join('\n    ')}`,
    );
    continue;
  }
  const wholeRatio = median(wholeRatios);
  recordResult({
    benchmark: 'lincheck',
    measure: `${set.label}, whole process`,
    subject: 'lincheck CLI',
    baseline: 'Porcupine CLI',
    unit: 'ms',
    runs: linMs,
    baselineRuns: porMs,
    ratio: wholeRatio,
    ratioRuns: wholeRatios,
    method: methodWhole('on every core'),
    target: { op: '<=', value: target, met: wholeRatio <= target },
  });
  recordResult({
    benchmark: 'lincheck',
    measure: `${set.label}, whole process, Porcupine on one core`,
    subject: 'lincheck CLI',
    baseline: 'Porcupine CLI, GOMAXPROCS=1',
    unit: 'ms',
    runs: linMs,
    baselineRuns: por1Ms,
    ratio: median(oneCoreRatios),
    ratioRuns: oneCoreRatios,
    method: methodWhole('with GOMAXPROCS=1'),
  });
  if (haveTime)
    recordResult({
      benchmark: 'lincheck',
      measure: `${set.label}, CPU time`,
      subject: 'lincheck CLI',
      baseline: 'Porcupine CLI',
      unit: 'ms',
      runs: linCpu,
      baselineRuns: porCpu,
      ratio: median(cpuRatios),
      ratioRuns: cpuRatios,
      method: methodCpu,
    });
  recordResult({
    benchmark: 'lincheck',
    measure: `${set.label}, check only`,
    subject: 'lincheck checkHistory',
    baseline: 'Porcupine CheckEventsTimeout',
    unit: 'ms',
    runs: inProc.passMs,
    baselineRuns: porCheck,
    ratio: median(inRatios),
    ratioRuns: inRatios,
    method: methodIn,
  });
}

// Start-up: the one-file bundle against the compiled modules, on the kv logs (small files, where
// start-up weighs most). Node 20 has no module.enableCompileCache (Node 22.1), so V8's code cache
// is not measured here.
const kvSet = sets.find((s) => s.name === 'kv');
if (bundled && kvSet !== undefined) {
  const b: number[] = [];
  const m: number[] = [];
  for (let i = 0; i < runs; i++) {
    b.push(runLincheckCli(lincheckBundle, kvSet).ms);
    m.push(runLincheckCli(lincheckModules, kvSet).ms);
  }
  const ratios = b.map((ms, i) => ms / (m[i] as number));
  console.log(
    `\nstart-up (kv logs): bundle ${spread(b)}  compiled modules ${spread(m)}  ratio ${median(ratios).toFixed(2)}`,
  );
  recordResult({
    benchmark: 'lincheck',
    measure: 'kv logs, whole process: one-file bundle vs compiled modules',
    subject: 'dist/cli/simlab-lincheck.mjs',
    baseline: 'dist/src/checkers/lincheck/cli.js',
    unit: 'ms',
    runs: b,
    baselineRuns: m,
    ratio: median(ratios),
    ratioRuns: ratios,
    method:
      'Wall time of the same CLI run from its esbuild bundle and from the tsc output, alternating; ' +
      'ratio = bundle ÷ modules.',
  });
}
const compileCache = (nodeModule as { enableCompileCache?: unknown }).enableCompileCache;
console.log(
  `module.enableCompileCache on Node ${process.versions.node}: ${typeof compileCache}` +
    (typeof compileCache === 'function' ? '' : ' (it came in Node 22.1: no V8 compile cache to measure here)'),
);
rmSync(genDir, { recursive: true, force: true });
console.log(`\npeak memory of this process: max RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
if (disagreements > 0) {
  console.error(`lincheck benchmark FAILED: ${disagreements} verdict disagreement(s) with Porcupine`);
  process.exit(1);
}
