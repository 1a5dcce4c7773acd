/**
 * The benchmark results file: every benchmark records each measure here (one JSON object per
 * measure, in a JSON array at BENCH_RESULTS, default bench-results.json at the repo root), and
 * `make bench-table` renders the README table from it. It is not a benchmark harness: it does not
 * time anything, it only summarises runs (median, min, max) and stamps the machine they ran on.
 */
import { cpus, loadavg } from 'node:os';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The machine a result was measured on; load averages (1, 5, 15 min) at benchmark start and at recording. */
export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  node: string;
  date: string;
  loadStart: number[];
  loadEnd: number[];
}

export interface BenchResult {
  benchmark: string;
  measure: string;
  subject: string;
  baseline: string;
  unit: string;
  runs: number[];
  baselineRuns?: number[];
  median: number;
  min: number;
  max: number;
  ratio?: number;
  ratioRuns?: number[];
  method: string;
  target?: { op: '>=' | '<='; value: number; met: boolean };
  machine?: MachineInfo;
}

export type BenchResultInput = Omit<BenchResult, 'median' | 'min' | 'max'> &
  Partial<Pick<BenchResult, 'median' | 'min' | 'max'>>;

const repoRoot = (() => {
  // benchmarks/results.ts (run by tap) or dist/benchmarks/results.js (built): find the package root.
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    dir = path.dirname(dir);
  }
  return process.cwd();
})();

const loadAtStart = loadavg().map(round2);

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** The results file path: env BENCH_RESULTS (relative to the cwd) or bench-results.json at the repo root. */
export function resultsPath(): string {
  const env = process.env['BENCH_RESULTS'];
  return env ? path.resolve(env) : path.join(repoRoot, 'bench-results.json');
}

/** Median of a non-empty list (mean of the two middle values for an even count); NaN when empty. */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** CPU model from /proc/cpuinfo (first "model name"), falling back to os.cpus(). */
export function cpuModel(): string {
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) return m[1].trim();
  } catch {
    // not Linux: fall through
  }
  return cpus()[0]?.model ?? 'unknown';
}

export function machineInfo(): MachineInfo {
  return {
    nproc: cpus().length,
    cpuModel: cpuModel(),
    node: process.version,
    date: new Date().toISOString(),
    loadStart: loadAtStart,
    loadEnd: loadavg().map(round2),
  };
}

/** Reads the results file; a missing file is an empty list. */
export function readResults(file = resultsPath()): BenchResult[] {
  if (!existsSync(file)) return [];
  const parsed: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!Array.isArray(parsed)) throw new Error(`${file}: not a JSON array of results`);
  return parsed as BenchResult[];
}

/** Empties the results file (`make bench` does this before the first benchmark). */
export function clearResults(file = resultsPath()): void {
  writeFileSync(file, '[]\n');
}

/**
 * Summarises one measure (median/min/max from runs unless given), stamps the machine, appends it to
 * the results file (read-modify-write, atomic rename) and returns it.
 */
export function recordResult(r: BenchResultInput): BenchResult {
  const finite = r.runs.filter((x) => Number.isFinite(x));
  const result: BenchResult = {
    ...r,
    median: r.median ?? median(finite),
    min: r.min ?? (finite.length ? Math.min(...finite) : NaN),
    max: r.max ?? (finite.length ? Math.max(...finite) : NaN),
    machine: r.machine ?? machineInfo(),
  };
  const file = resultsPath();
  const all = readResults(file);
  all.push(result);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(all, null, 2) + '\n');
  renameSync(tmp, file);
  return result;
}
