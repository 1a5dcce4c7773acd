/**
 * Benchmark of the linearizability checker on every recorded history (102 Jepsen etcd logs plus
 * the empty etcd_095, and the six kv logs), single-threaded: per-file and total check times,
 * parse times, peak memory, against a naive Wing–Gong–Lowe baseline measured in the same run and
 * against the targets set from Porcupine (Go): 2.0 s for the etcd logs, 1.0 s for the kv logs.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/lincheck.js [--runs N] [--no-baseline]
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory, partitionByKey } from '../src/checkers/lincheck/checker.js';
import type { History, HistoryOp, ModelState } from '../src/checkers/lincheck/history.js';
import { models, type Model, type ModelName } from '../src/checkers/lincheck/models.js';
import { parseHistory } from '../src/checkers/lincheck/parse.js';

// dist/benchmarks/lincheck.js -> repo root is two levels up from dist/benchmarks.
const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../..' : '..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');

const argv = process.argv.slice(2);
const runsArg = argv.includes('--runs') ? Number(argv[argv.indexOf('--runs') + 1]) : 5;
const runs = Number.isInteger(runsArg) && runsArg > 0 ? runsArg : 5;
const withBaseline = !argv.includes('--no-baseline');
/** The baseline gets this long per file; slower files are reported as capped. */
const baselineCapMs = 3_000;

interface Entry {
  set: 'etcd' | 'kv';
  name: string;
  model: ModelName;
  history: History;
  parseMs: number;
}

function loadSet(set: 'etcd' | 'kv', dir: string, model: ModelName): Entry[] {
  return readdirSync(path.join(historiesDir, dir)).sort().map((file) => {
    const text = readFileSync(path.join(historiesDir, dir, file), 'utf8');
    const started = performance.now();
    const parsed = parseHistory(text);
    const parseMs = performance.now() - started;
    if (!parsed.ok) throw new Error(`${file}: ${parsed.error}`);
    return { set, name: file.replace(/\.\w+$/, ''), model, history: parsed.history, parseMs };
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : (s[(s.length - 1) >> 1] as number + (s[s.length >> 1] as number)) / 2;
};
const fmt = (ms: number): string => (ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0));

// ---------------------------------------------------------------------------------------------
// Baseline: a plain WGL search as commonly written (Porcupine's shape without its tuning): the
// entry list, a bitset, a cache of (bitset, state) keyed by a string, the model stepped at every
// try, unknown-outcome ops returning at the end of the history, keys checked one after another.

function baselineCheck(history: History, model: Model, deadline: number): boolean | 'capped' {
  for (const { indices } of partitionByKey(history)) {
    const ops = indices.map((i) => history[i] as HistoryOp).filter((o) => o.status !== 'fail');
    const verdict = baselineKey(ops, model, deadline);
    if (verdict !== true) return verdict;
  }
  return true;
}

function baselineKey(ops: HistoryOp[], model: Model, deadline: number): boolean | 'capped' {
  interface Node { op: number; isCall: boolean; time: number; match: Node | undefined; prev: Node | undefined; next: Node | undefined }
  const nodes: Node[] = [];
  ops.forEach((o, i) => {
    const call: Node = { op: i, isCall: true, time: o.invokeTime, match: undefined, prev: undefined, next: undefined };
    const ret: Node = { op: i, isCall: false, time: o.status === 'ok' ? (o.completeTime as number) : Infinity, match: call, prev: undefined, next: undefined };
    call.match = ret;
    nodes.push(call, ret);
  });
  nodes.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? a.op - b.op : a.isCall ? -1 : 1));
  const head: Node = { op: -1, isCall: false, time: -Infinity, match: undefined, prev: undefined, next: nodes[0] };
  nodes.forEach((n, k) => {
    n.prev = k === 0 ? head : nodes[k - 1];
    n.next = nodes[k + 1];
  });
  if (nodes[0]) nodes[0].prev = head;
  const lift = (c: Node): void => {
    (c.prev as Node).next = c.next;
    if (c.next) c.next.prev = c.prev;
    const r = c.match as Node;
    (r.prev as Node).next = r.next;
    if (r.next) r.next.prev = r.prev;
  };
  const unlift = (c: Node): void => {
    const r = c.match as Node;
    (r.prev as Node).next = r;
    if (r.next) r.next.prev = r;
    (c.prev as Node).next = c;
    if (c.next) c.next.prev = c;
  };
  const bits = new Uint32Array((ops.length + 31) >>> 5);
  const cache = new Set<string>();
  const stack: Array<{ call: Node; state: ModelState }> = [];
  let state: ModelState = model.init();
  let entry = head.next;
  let steps = 0;
  while (head.next !== undefined) {
    if ((++steps & 4095) === 0 && performance.now() > deadline) return 'capped';
    const e = entry as Node;
    if (e.isCall) {
      const next = model.step(state, ops[e.op] as HistoryOp);
      if (next !== undefined) {
        bits[e.op >>> 5] = (bits[e.op >>> 5] as number) | (1 << (e.op & 31));
        const key = `${bits.join(',')}|${typeof next}:${String(next)}`;
        if (!cache.has(key)) {
          cache.add(key);
          stack.push({ call: e, state });
          state = next;
          lift(e);
          entry = head.next;
          continue;
        }
        bits[e.op >>> 5] = (bits[e.op >>> 5] as number) & ~(1 << (e.op & 31));
      }
      entry = e.next;
    } else {
      const top = stack.pop();
      if (top === undefined) return false;
      state = top.state;
      bits[top.call.op >>> 5] = (bits[top.call.op >>> 5] as number) & ~(1 << (top.call.op & 31));
      unlift(top.call);
      entry = top.call.next;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------

const entries = [...loadSet('etcd', 'jepsen-etcd', 'cas-register'), ...loadSet('kv', 'kv', 'kv')];
const rssBefore = process.memoryUsage().rss;

// One warm-up pass (JIT), then `runs` measured passes; per file the median, per set each pass's sum.
const times = new Map<string, number[]>();
const verdicts = new Map<string, string>();
const configs = new Map<string, number>();
let heapPeak = 0;
for (let pass = 0; pass <= runs; pass++) {
  for (const e of entries) {
    const started = performance.now();
    const result = checkHistory(e.history, models[e.model]);
    const ms = performance.now() - started;
    if (pass > 0) times.set(e.name, [...(times.get(e.name) ?? []), ms]);
    verdicts.set(e.name, result.verdict);
    configs.set(e.name, result.stats.configurations);
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
  }
}
const maxRssOursMb = process.resourceUsage().maxRSS / 1024;

const baseline = new Map<string, { ms: number; verdict: string }>();
if (withBaseline) {
  for (const e of entries) {
    const started = performance.now();
    const verdict = baselineCheck(e.history, models[e.model], started + baselineCapMs);
    const ms = performance.now() - started;
    baseline.set(e.name, { ms, verdict: verdict === 'capped' ? 'capped' : verdict ? 'linearizable' : 'not-linearizable' });
  }
}

console.log(`lincheck benchmark: ${entries.length} histories, ${runs} measured passes after one warm-up, single thread`);
console.log(`data: ${historiesDir}\n`);
console.log('file        model         ops  verdict            configs   median ms  baseline ms');
for (const e of entries) {
  const b = baseline.get(e.name);
  const base = b === undefined ? '-' : b.verdict === 'capped' ? `>${baselineCapMs} (capped)` : fmt(b.ms);
  const mismatch = b !== undefined && b.verdict !== 'capped' && b.verdict !== verdicts.get(e.name) ? '  (baseline disagrees!)' : '';
  console.log(
    `${e.name.padEnd(11)} ${e.model.padEnd(13)} ${String(e.history.length).padStart(4)}  ${String(verdicts.get(e.name)).padEnd(17)}` +
      ` ${String(configs.get(e.name)).padStart(8)}  ${fmt(median(times.get(e.name) ?? [])).padStart(9)}  ${base.padStart(11)}${mismatch}`,
  );
}

const targets = { etcd: 2000, kv: 1000 } as const;
console.log('\nset    files  parse ms  check ms (min / median of passes)  target ms  vs target  baseline ms  speedup vs baseline');
for (const set of ['etcd', 'kv'] as const) {
  const inSet = entries.filter((e) => e.set === set);
  const passTotals = Array.from({ length: runs }, (_, pass) => inSet.reduce((sum, e) => sum + ((times.get(e.name) ?? [])[pass] ?? 0), 0));
  const best = Math.min(...passTotals);
  const med = median(passTotals);
  const parse = inSet.reduce((sum, e) => sum + e.parseMs, 0);
  const capped = inSet.filter((e) => baseline.get(e.name)?.verdict === 'capped').length;
  const baseTotal = inSet.reduce((sum, e) => sum + (baseline.get(e.name)?.ms ?? 0), 0);
  const baseText = withBaseline ? `${capped > 0 ? '>' : ''}${fmt(baseTotal)}` : '-';
  const speedup = withBaseline ? `${capped > 0 ? '>' : ''}${(baseTotal / med).toFixed(1)}x` : '-';
  console.log(
    `${set.padEnd(6)} ${String(inSet.length).padStart(5)}  ${fmt(parse).padStart(8)}  ${`${fmt(best)} / ${fmt(med)}`.padStart(33)}  ${String(targets[set]).padStart(9)}` +
      `  ${(med / targets[set]).toFixed(2).padStart(9)}  ${baseText.padStart(11)}  ${speedup.padStart(19)}` +
      (capped > 0 ? `  (${capped} baseline files capped at ${baselineCapMs} ms)` : ''),
  );
}
console.log(
  `\npeak memory: max RSS ${maxRssOursMb.toFixed(0)} MB during our passes (${(rssBefore / 2 ** 20).toFixed(0)} MB after loading),` +
    ` peak heap used ${(heapPeak / 2 ** 20).toFixed(0)} MB`,
);
if (withBaseline) console.log(`max RSS after the baseline too: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
