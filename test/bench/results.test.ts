// The results-file writer (benchmarks/results.ts): median/min/max computed from the runs when not
// given, one JSON object appended per measure (the file stays a JSON array), clearing, the machine
// stamp, and BENCH_RESULTS naming the file. Each test writes into its own temp directory.
import t from 'tap';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  clearResults,
  median,
  readResults,
  recordResult,
  resultsPath,
  type BenchResultInput,
} from '../../benchmarks/results.js';

function tempFile(): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'bench-results-')), 'bench-results.json');
}

function input(overrides: Partial<BenchResultInput> = {}): BenchResultInput {
  return {
    benchmark: 'demo',
    measure: 'writes',
    subject: 'simlab',
    baseline: 'bare uWS hello-world',
    unit: 'req/s',
    runs: [3, 1, 2],
    method: 'Times wrk slices of 2 s; start-up is not timed.',
    ...overrides,
  };
}

t.test('median of odd, even, single, unsorted and empty lists', async (t) => {
  const cases: Array<[number[], number]> = [
    [[5], 5],
    [[3, 1, 2], 2],
    [[4, 1, 3, 2], 2.5],
    [[10, -1], 4.5],
    [[7, 7, 7, 1], 7],
  ];
  for (const [xs, want] of cases) t.equal(median(xs), want, `median(${JSON.stringify(xs)})`);
  t.ok(Number.isNaN(median([])), 'empty list has no median');
  const xs = [3, 1, 2];
  median(xs);
  t.same(xs, [3, 1, 2], 'the input is not sorted in place');
});

t.test('recordResult computes median/min/max from the runs and appends', async (t) => {
  const file = tempFile();
  process.env['BENCH_RESULTS'] = file;
  t.teardown(() => delete process.env['BENCH_RESULTS']);
  t.equal(resultsPath(), file);
  t.same(readResults(), [], 'a missing file reads as empty');

  const first = recordResult(input({ runs: [30, 10, 20, 40], ratio: 0.5, ratioRuns: [0.4, 0.6] }));
  t.equal(first.median, 25);
  t.equal(first.min, 10);
  t.equal(first.max, 40);
  t.equal(first.ratio, 0.5);
  t.same(first.runs, [30, 10, 20, 40], 'runs are kept in their measured order');

  recordResult(input({ measure: 'reads', runs: [1, 2, 3], median: 9, min: 8, max: 10 }));
  const stored = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  t.ok(Array.isArray(stored), 'the file is one JSON array');
  const all = readResults();
  t.equal(all.length, 2, 'one object per measure, appended');
  t.same(
    all.map((r) => r.measure),
    ['writes', 'reads'],
  );
  t.same([all[1]?.median, all[1]?.min, all[1]?.max], [9, 8, 10], 'given summary values are kept');
  t.equal(all[0]?.baseline, 'bare uWS hello-world');
  t.match(all[0]?.method, /not timed/);
});

t.test('non-finite runs are left out of the summary', async (t) => {
  const file = tempFile();
  process.env['BENCH_RESULTS'] = file;
  t.teardown(() => delete process.env['BENCH_RESULTS']);
  const r = recordResult(input({ runs: [2, Number.NaN, 4] }));
  t.same([r.median, r.min, r.max], [3, 2, 4]);
});

t.test('every result carries the machine it ran on', async (t) => {
  const file = tempFile();
  process.env['BENCH_RESULTS'] = file;
  t.teardown(() => delete process.env['BENCH_RESULTS']);
  const r = recordResult(input());
  t.ok(r.machine, 'machine recorded');
  t.ok((r.machine?.nproc ?? 0) >= 1, 'nproc');
  t.type(r.machine?.cpuModel, 'string');
  t.ok((r.machine?.cpuModel ?? '').length > 0, 'cpu model');
  t.equal(r.machine?.node, process.version);
  t.equal(r.machine?.loadStart.length, 3, 'load average at the start (1, 5, 15 min)');
  t.equal(r.machine?.loadEnd.length, 3, 'load average at recording');
  t.ok(!Number.isNaN(Date.parse(r.machine?.date ?? '')), 'ISO date');
  t.same(readResults()[0]?.machine, r.machine, 'stored in the file too');
});

t.test('clearResults empties the file; a later record starts a new list', async (t) => {
  const file = tempFile();
  process.env['BENCH_RESULTS'] = file;
  t.teardown(() => delete process.env['BENCH_RESULTS']);
  recordResult(input());
  recordResult(input());
  t.equal(readResults().length, 2);
  clearResults();
  t.same(readResults(), []);
  t.equal(readFileSync(file, 'utf8').trim(), '[]');
  recordResult(input({ measure: 'after' }));
  t.same(
    readResults().map((r) => r.measure),
    ['after'],
  );
});

t.test('a results file that is not an array is an error, not silently replaced', async (t) => {
  const file = tempFile();
  writeFileSync(file, '{"not":"a list"}');
  process.env['BENCH_RESULTS'] = file;
  t.teardown(() => delete process.env['BENCH_RESULTS']);
  t.throws(() => recordResult(input()), /not a JSON array/);
  t.equal(readFileSync(file, 'utf8'), '{"not":"a list"}', 'file untouched');
});
