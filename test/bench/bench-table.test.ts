// The README table generator (scripts/bench-table.mjs): a fixture results file renders to the
// expected Markdown (median and range, never the best run; machine line; methods), the text
// between the markers is replaced and nothing else, a second run changes nothing, and missing
// markers or results are errors. The CLI is run as a child process on temp copies.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs script without type declarations
import * as tableModule from '../../scripts/bench-table.mjs';

interface TableApi {
  startMarker: string;
  endMarker: string;
  renderTable(results: unknown[]): string;
  replaceBetweenMarkers(readme: string, generated: string): { ok: true; text: string } | { ok: false; error: string };
  formatNumber(x: number): string;
  median(xs: number[]): number;
}
const { startMarker, endMarker, renderTable, replaceBetweenMarkers, formatNumber, median } = tableModule as TableApi;

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.resolve(here, '../../scripts/bench-table.mjs');
const fixtureFile = path.join(here, 'fixtures/results.json');
const fixture = JSON.parse(readFileSync(fixtureFile, 'utf8')) as Array<Record<string, unknown>>;
const expected = readFileSync(path.join(here, 'fixtures/expected-table.md'), 'utf8').trimEnd();

const readme = [
  '# Project',
  '',
  '## Benchmarks',
  '',
  'Prose about the method stays.',
  '',
  startMarker,
  '| old | table |',
  '|---|---|',
  '| 0.50 | best run |',
  endMarker,
  '',
  '## Next section',
  'unchanged',
  '',
].join('\n');

t.test('the fixture renders to the expected Markdown', async (t) => {
  t.equal(renderTable(fixture), expected);
});

t.test('the table quotes median and range, not the best run', async (t) => {
  const text = renderTable(fixture);
  t.match(text, /120 \(100–140\) ms/, 'median 120 with range 100–140');
  t.notMatch(text, /\| 100 ms/, 'the best run is never the headline');
  t.match(text, /\*\*2\*\* \(1\.50–2\.50\)/, 'ratio median and range');
  t.match(text, /60 \(50–70\) ms/, 'baseline runs of the same run');
  t.match(text, /2 CPUs \(nproc\), Test CPU @ 2\.00GHz, Node v20\.0\.0/, 'machine');
  t.match(
    text,
    /1\.50 \/ 2\.00 \/ 2\.25 at the start, 4\.50 \/ 3\.25 \/ 3\.00 at the end/,
    'load at start of first, end of last',
  );
  t.match(text, /\*\*missed\*\*/, 'a missed target is shown');
});

t.test('formatNumber and median', async (t) => {
  const cases: Array<[number, string]> = [
    [14_000_000, '14,000,000'],
    [1234.5, '1,235'],
    [120, '120'],
    [123.4, '123'],
    [12.34, '12.3'],
    [1.234, '1.23'],
    [0.0123, '0.012'],
    [0, '0'],
    [Number.NaN, '–'],
  ];
  for (const [x, want] of cases) t.equal(formatNumber(x), want, `formatNumber(${x})`);
  t.equal(median([4, 1, 3, 2]), 2.5);
});

t.test('replaceBetweenMarkers replaces the table only, and is idempotent', async (t) => {
  const once = replaceBetweenMarkers(readme, renderTable(fixture));
  if (!once.ok) return t.fail(once.error);
  t.notMatch(once.text, /best run \|/, 'old table gone');
  t.ok(once.text.includes(`${startMarker}\n${expected}\n${endMarker}`), 'new table between the markers');
  t.ok(once.text.startsWith('# Project\n\n## Benchmarks\n\nProse about the method stays.\n\n'), 'prose above kept');
  t.ok(once.text.endsWith(`${endMarker}\n\n## Next section\nunchanged\n`), 'text below kept');
  const twice = replaceBetweenMarkers(once.text, renderTable(fixture));
  t.ok(twice.ok);
  if (twice.ok) t.equal(twice.text, once.text, 'a second run changes nothing');
});

t.test('missing or reversed markers are an error value', async (t) => {
  const cases = ['no markers', `${startMarker} only`, `${endMarker}\n${startMarker}`];
  for (const text of cases) {
    const r = replaceBetweenMarkers(text, 'x');
    t.equal(r.ok, false, JSON.stringify(text));
    if (!r.ok) t.match(r.error, /bench-table:start/);
  }
});

t.test('the CLI rewrites a README from a results file, idempotently; --check', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-table-'));
  const readmeFile = path.join(dir, 'README.md');
  writeFileSync(readmeFile, readme);
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [script, '--results', fixtureFile, '--readme', readmeFile, ...args], {
      encoding: 'utf8',
    });

  const stale = run('--check');
  t.equal(stale.status, 1, '--check fails on a stale README');
  t.equal(readFileSync(readmeFile, 'utf8'), readme, '--check writes nothing');

  const first = run();
  t.equal(first.status, 0, first.stderr);
  const after = readFileSync(readmeFile, 'utf8');
  t.ok(after.includes(expected), 'table written');
  t.equal(run().status, 0);
  t.equal(readFileSync(readmeFile, 'utf8'), after, 'second run: byte for byte the same');
  t.equal(run('--check').status, 0, '--check passes when up to date');
});

t.test('the CLI refuses a missing results file, an empty one, and a README without markers', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-table-'));
  const readmeFile = path.join(dir, 'README.md');
  writeFileSync(readmeFile, readme);
  const missing = spawnSync(
    process.execPath,
    [script, '--results', path.join(dir, 'none.json'), '--readme', readmeFile],
    { encoding: 'utf8' },
  );
  t.equal(missing.status, 1);
  t.match(missing.stderr, /run make bench first/);

  const empty = path.join(dir, 'empty.json');
  writeFileSync(empty, '[]\n');
  const none = spawnSync(process.execPath, [script, '--results', empty, '--readme', readmeFile], { encoding: 'utf8' });
  t.equal(none.status, 1);
  t.match(none.stderr, /holds no results/);

  const bare = path.join(dir, 'BARE.md');
  writeFileSync(bare, '# no markers\n');
  const noMarkers = spawnSync(process.execPath, [script, '--results', fixtureFile, '--readme', bare], {
    encoding: 'utf8',
  });
  t.equal(noMarkers.status, 1);
  t.match(noMarkers.stderr, /needs <!-- bench-table:start -->/);
  t.equal(readFileSync(bare, 'utf8'), '# no markers\n', 'left untouched');
  t.equal(readFileSync(readmeFile, 'utf8'), readme, 'README untouched on error');
});
