/**
 * Benchmark of the linearizability checker against Porcupine itself (../shared/tools, built into a
 * temp dir on first use), on the same files: the Jepsen etcd logs, the kv logs and large generated
 * kv histories. Whole process (start-up, reading, parsing, checking; alternating runs of both CLIs)
 * and in-process (the check alone, as Porcupine's CLI prints it); verdicts compared on every file,
 * any disagreement fails the benchmark. It is not a correctness test (test/checkers/ is).
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/lincheck.js [--runs N] [--gen-ops N]
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory } from '../src/checkers/lincheck/checker.js';
import type { History } from '../src/checkers/lincheck/history.js';
import { models, type ModelName } from '../src/checkers/lincheck/models.js';
import { parseHistory } from '../src/checkers/lincheck/parse.js';
import { median, recordResult } from './results.js';

// dist/benchmarks/lincheck.js -> repo root is two levels up from dist/benchmarks.
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');
const porcupineBuildScript = path.resolve(repoRoot, '../shared/tools/build-porcupine.sh');
const lincheckCli = path.join(repoRoot, 'dist/src/checkers/lincheck/cli.js');

const argv = process.argv.slice(2);
const numArg = (name: string, fallback: number): number => {
  const v = argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : fallback;
  return Number.isInteger(v) && v > 0 ? v : fallback;
};
/** Alternating whole-process runs of each CLI per set (and in-process passes of lincheck). */
const runs = numArg('--runs', Number(process.env['BENCH_RUNS'] ?? 5));
/** Operations per generated history (each an invoke and an ok line). */
const genOps = numArg('--gen-ops', 20_000);
/** Porcupine runs single-threaded (GOMAXPROCS=1), like lincheck's one-thread check. */
const porcupineEnv = { ...process.env, GOMAXPROCS: '1' };

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
// Generated histories: a kv store of string registers driven by concurrent clients; each operation
// takes effect at one instant between its invocation and its return, so the ok file is linearizable
// by construction; the bad file is the same with one late get returning a value never written.

/** A small deterministic PRNG (mulberry32), so the generated files are the same on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function generateKvHistory(opts: {
  ops: number;
  clients: number;
  keys: number;
  seed: number;
  corrupt: boolean;
}): string {
  const rand = rng(opts.seed);
  const store = new Map<string, string>();
  const lines: string[] = [];
  // Each client has at most one operation outstanding: invoke, take effect, return, at random steps.
  interface Pending {
    f: 'get' | 'put' | 'append';
    key: string;
    value: string;
    applied: boolean;
    result: string;
  }
  const pending: Array<Pending | undefined> = Array.from({ length: opts.clients }, () => undefined);
  let started = 0;
  let counter = 0;
  let corrupted = !opts.corrupt;
  const q = (s: string): string => `"${s}"`;
  while (started < opts.ops || pending.some((p) => p !== undefined)) {
    const c = Math.floor(rand() * opts.clients);
    const p = pending[c];
    if (p === undefined) {
      if (started >= opts.ops) continue;
      started++;
      const key = String(Math.floor(rand() * opts.keys));
      const r = rand();
      const f = r < 0.5 ? 'get' : r < 0.8 ? 'append' : 'put';
      const value = f === 'get' ? '' : `x${c}.${++counter} `;
      pending[c] = { f, key, value, applied: false, result: '' };
      lines.push(`{:process ${c}, :type :invoke, :f :${f}, :key ${q(key)}, :value ${f === 'get' ? 'nil' : q(value)}}`);
    } else if (!p.applied) {
      p.applied = true;
      const cur = store.get(p.key) ?? '';
      if (p.f === 'get') p.result = cur;
      else store.set(p.key, p.f === 'put' ? p.value : cur + p.value);
    } else {
      let value = p.f === 'get' ? p.result : p.value;
      if (!corrupted && p.f === 'get' && started > opts.ops * 0.9) {
        value = 'never-written';
        corrupted = true;
      }
      lines.push(`{:process ${c}, :type :ok, :f :${p.f}, :key ${q(p.key)}, :value ${q(value)}}`);
      pending[c] = undefined;
    }
  }
  return lines.join('\n') + '\n';
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
  verdicts: Map<string, string>;
  checkMs: number;
}

function runLincheckCli(set: BenchSet): CliRun {
  const started = performance.now();
  const r = spawnSync(process.execPath, [lincheckCli, '--model', set.lincheckModel, ...set.files], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const ms = performance.now() - started;
  if (r.status !== 0 && r.status !== 1) throw new Error(`lincheck CLI exited ${r.status}: ${r.stderr}`);
  const verdicts = new Map<string, string>();
  for (const line of r.stdout.trim().split('\n')) {
    const [file, verdict] = line.split(' ');
    if (file && verdict) verdicts.set(base(file), verdict);
  }
  return { ms, verdicts, checkMs: NaN };
}

function runPorcupineCli(bin: string, set: BenchSet): CliRun {
  const started = performance.now();
  const r = spawnSync(bin, ['--model', set.porcupineModel, ...set.files], {
    encoding: 'utf8',
    env: porcupineEnv,
    maxBuffer: 1 << 26,
  });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`porcupine-cli exited ${r.status}: ${r.stderr}`);
  const verdicts = new Map<string, string>();
  let checkMs = 0;
  for (const line of r.stdout.trim().split('\n')) {
    const [name, verdict, t] = line.split(' ');
    if (name === 'total' || !name || !verdict) continue;
    verdicts.set(name, verdict);
    checkMs += Number(t);
  }
  return { ms, verdicts, checkMs };
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
      const result = checkHistory(e.history, models[set.lincheckModel]);
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
if (!existsSync(lincheckCli)) {
  console.error(`${lincheckCli} missing: run npx tsc -p tsconfig.json first`);
  process.exit(1);
}

const genDir = mkdtempSync(path.join(tmpdir(), 'lincheck-gen-'));
const generated = [
  { name: `gen-c10-ok`, clients: 10, corrupt: false },
  { name: `gen-c10-bad`, clients: 10, corrupt: true },
  { name: `gen-c50-ok`, clients: 50, corrupt: false },
].map((g, i) => {
  const file = path.join(genDir, `${g.name}.txt`);
  writeFileSync(
    file,
    generateKvHistory({ ops: genOps, clients: g.clients, keys: 8, seed: 1000 + i, corrupt: g.corrupt }),
  );
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
    label: `generated kv histories (3 files × ${genOps.toLocaleString('en-US')} ops, 8 keys, 10/50 clients)`,
    files: generated,
    lincheckModel: 'kv',
    porcupineModel: 'kv',
  },
];

console.log(`lincheck vs Porcupine (${porcupine.bin}, GOMAXPROCS=1): ${runs} alternating whole-process runs per set`);
console.log(`data: ${historiesDir}; generated: ${genDir}`);
for (const f of etcdEmpty)
  console.log(
    `note: ${base(f)} holds no client operation: lincheck gives no verdict by design, so it is left out of both sides`,
  );

let disagreements = 0;
const methodWhole =
  'Wall time of one child process per CLI over every file of the set (process start-up, ' +
  'reading, parsing and checking; lincheck is `node dist/src/checkers/lincheck/cli.js`, ' +
  'Porcupine the Go CLI built from ../shared/tools with GOMAXPROCS=1), runs alternating ' +
  'lincheck/Porcupine; ratio = lincheck ÷ Porcupine per pair (> 1: lincheck slower).';
const methodIn =
  "Sum over the set of the check time alone, files already read and parsed: lincheck's checkHistory in the " +
  "benchmark's process, one pass after another with the first (cold JIT) pass included, against the " +
  "per-file CheckEventsTimeout time Porcupine's CLI prints in the whole-process runs; " +
  'ratio = lincheck ÷ Porcupine (> 1: lincheck slower).';

for (const set of sets) {
  const lin: CliRun[] = [];
  const por: CliRun[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so a slow stretch of the machine weighs on both.
    if (i % 2 === 0) {
      lin.push(runLincheckCli(set));
      por.push(runPorcupineCli(porcupine.bin, set));
    } else {
      por.push(runPorcupineCli(porcupine.bin, set));
      lin.push(runLincheckCli(set));
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
  const porCheck = por.map((r) => r.checkMs);
  const wholeRatios = linMs.map((ms, i) => ms / (porMs[i] as number));
  const inRatios = inProc.passMs.map((ms, i) => ms / (porCheck[i] as number));
  console.log(`\n${set.name}: ${set.label}; verdicts: ${verdictText}${bad.length ? '' : ', identical on every file'}`);
  console.log(
    `  whole process  lincheck ${fmt(median(linMs))} ms ` +
      `(${fmt(Math.min(...linMs))}–${fmt(Math.max(...linMs))})  Porcupine ` +
      `${fmt(median(porMs))} ms (${fmt(Math.min(...porMs))}–${fmt(Math.max(...porMs))})  ` +
      `ratio ${median(wholeRatios).toFixed(2)}`,
  );
  console.log(
    `  check only     lincheck ${fmt(median(inProc.passMs))} ms ` +
      `(${fmt(Math.min(...inProc.passMs))}–${fmt(Math.max(...inProc.passMs))})  Porcupine ` +
      `${fmt(median(porCheck))} ms ` +
      `(${fmt(Math.min(...porCheck))}–${fmt(Math.max(...porCheck))})  ratio ` +
      `${median(inRatios).toFixed(2)}`,
  );
  if (bad.length) {
    disagreements += bad.length;
    console.error(
      `  VERDICTS DISAGREE on ${bad.length} file(s), nothing recorded for this set:\n    ${bad.join('\n    ')}`,
    );
    continue;
  }
  recordResult({
    benchmark: 'lincheck',
    measure: `${set.label}, whole process`,
    subject: 'lincheck CLI',
    baseline: 'Porcupine CLI',
    unit: 'ms',
    runs: linMs,
    baselineRuns: porMs,
    ratio: median(wholeRatios),
    ratioRuns: wholeRatios,
    method: methodWhole,
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
console.log(`\npeak memory of this process: max RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
if (disagreements > 0) {
  console.error(`lincheck benchmark FAILED: ${disagreements} verdict disagreement(s) with Porcupine`);
  process.exit(1);
}
