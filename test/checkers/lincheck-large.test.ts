// The checker at scale and its fast paths (issue 20 point 4): the large generated kv set keeps its
// verdicts (each history is linearizable by construction unless it carries its one stale read, as
// the old checker and Porcupine found); the one-line-per-map EDN fast path reads exactly what the
// general EDN reader reads; the CLI's threads (--jobs) print what one thread prints, in order.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkHistory } from '../../src/checkers/lincheck/checker.js';
import { lincheckCliJobsMax, runCli } from '../../src/checkers/lincheck/cli.js';
import { generateKvHistory, largeKvSet } from '../../src/checkers/lincheck/generate.js';
import { models } from '../../src/checkers/lincheck/models.js';
import { parseHistory } from '../../src/checkers/lincheck/parse.js';
import { repoRoot } from '../helpers/server.js';

const kvDir = path.join(repoRoot, '../shared/data/histories/kv');
const dir = mkdtempSync(path.join(tmpdir(), 'lincheck-large-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('the large generated set (20 x 20,000 ops, 10 keys, 10 clients): verdicts as constructed', async (t) => {
  const set = largeKvSet();
  t.equal(set.length, 20);
  t.equal(set.filter((h) => !h.linearizable).length, 6, 'every third history carries one stale read');
  for (const h of set) {
    const parsed = parseHistory(h.text);
    if (!parsed.ok) return t.fail(`${h.name}: ${parsed.error}`);
    t.equal(parsed.history.length, 20_000, `${h.name}: 20,000 operations`);
    t.equal(new Set(parsed.history.map((o) => o.key)).size, 10, `${h.name}: 10 keys`);
    const r = checkHistory(parsed.history, models.kv, { violation: 'verdict' });
    t.equal(r.verdict, h.linearizable ? 'linearizable' : 'not-linearizable', `${h.name}: ${r.verdict}`);
    if (r.verdict === 'not-linearizable') t.equal(r.violation.op.kind, 'read', `${h.name}: the culprit is a read`);
  }
});

t.test('a stale read is explained minimally: the culprit is the read that returned a replaced value', async (t) => {
  const text = generateKvHistory({ ops: 3000, clients: 10, keys: 3, seed: 7, corrupt: 'stale-read' });
  const parsed = parseHistory(text);
  if (!parsed.ok) return t.fail(parsed.error);
  const full = checkHistory(parsed.history, models.kv);
  const quick = checkHistory(parsed.history, models.kv, { violation: 'verdict' });
  if (full.verdict !== 'not-linearizable' || quick.verdict !== 'not-linearizable') return t.fail('not linearizable');
  t.equal(full.violation.minimal, true, 'confirmed minimal without a budget');
  t.equal(full.violation.op.kind, 'read');
  t.equal(quick.violation.key, full.violation.key, 'verdict-only mode blames the same key');
  const ok = generateKvHistory({ ops: 3000, clients: 10, keys: 3, seed: 7, corrupt: 'none' });
  const okParsed = parseHistory(ok);
  if (!okParsed.ok) return t.fail(okParsed.error);
  t.equal(checkHistory(okParsed.history, models.kv).verdict, 'linearizable', 'the same run without the stale read');
});

t.test('the EDN fast path reads what the general reader reads (a vector of the same maps)', async (t) => {
  const gen = generateKvHistory({ ops: 400, clients: 5, keys: 3, seed: 3, corrupt: 'never-written' });
  const cases: Array<{ name: string; text: string }> = [
    { name: 'generated kv', text: gen },
    {
      name: ':time on every record, extra fields, other order, odd spacing',
      text:
        '{:type :invoke, :process 0, :f :write, :value 5, :time 100, :index 0}\n' +
        '{:process 1,:type :invoke,:f :read,:value nil,:time 101}\r\n' +
        '  {:process 0 :type :ok :f :write :value 5 :time 140}  ,\n' +
        '\n' +
        '{:process 1, :type :ok, :f :read, :value 5, :time 150}\n',
    },
    {
      name: 'a nemesis record, negative and zero integers, keyword and boolean values',
      text:
        '{:process :nemesis, :type :info, :f :start, :value nil}\n' +
        '{:process 2, :type :invoke, :f :write, :key "a", :value -12}\n' +
        '{:process 2, :type :ok, :f :write, :key "a", :value -12}\n' +
        '{:process 3, :type :invoke, :f :write, :key "b", :value :x}\n' +
        '{:process 3, :type :info, :f :write, :key "b", :value :x}\n' +
        '{:process 4, :type :invoke, :f :write, :key "c", :value 0}\n' +
        '{:process 4, :type :fail, :f :write, :key "c", :value true}',
    },
    {
      name: 'times on some records only (line numbers then)',
      text:
        '{:process 0, :type :invoke, :f :read, :value nil, :time 5}\n' +
        '{:process 0, :type :ok, :f :read, :value nil}\n',
    },
    {
      name: 'shapes the fast path leaves to the general reader (escapes, a float, a vector)',
      text:
        '{:process 0, :type :invoke, :f :write, :key "q\\"", :value [1 2]}\n' +
        '{:process 0, :type :ok, :f :write, :key "q\\"", :value [1 2]}\n' +
        '{:process 1, :type :invoke, :f :write, :key "f", :value 1.5}\n',
    },
  ];
  for (const c of cases) {
    const fast = parseHistory(c.text);
    const general = parseHistory(`[${c.text}]`);
    if (!fast.ok || !general.ok) {
      t.fail(`${c.name}: ${fast.ok ? '' : fast.error} ${general.ok ? '' : general.error}`);
      continue;
    }
    t.ok(fast.history.length > 0, `${c.name}: operations read`);
    t.same(fast.history, general.history, `${c.name}: the same history`);
    t.equal(fast.skipped, general.skipped, `${c.name}: the same count of skipped records`);
  }
  // Errors keep the general reader's wording and line, whichever path met them first.
  const errors = [
    '{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :ok, :f :read, :value 1}\n',
    '{:process 0, :type :ok, :f :write, :value 1}\n',
    '{:process 0, :type :invoke, :f :write, :value 1}\n{:process 0, :type :invoke, :f :write}}\n',
    '{:process 0, :type :invoke, :f :write, :key 1, :value 1}\n{:process 1, :type :invoke, :f :write, :key "1"}\n',
  ];
  for (const text of errors) {
    const fast = parseHistory(text);
    t.equal(fast.ok, false, `refused: ${JSON.stringify(text.slice(0, 50))}`);
    const general = parseHistory(`[${text}]`);
    if (!fast.ok && !general.ok && !/unmatched/.test(fast.reason)) {
      t.equal(fast.line, general.line, 'the same line');
      t.equal(fast.reason, general.reason, 'the same reason');
    }
  }
});

/** Runs the CLI in-process; stdout lines without their timings. */
async function cli(argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, {
    out: (l) => out.push(l.replace(/ \d+\.\d$/, '').replace(/"ms":[\d.]+,/, '')),
    err: (l) => err.push(l),
    now: () => performance.now(),
  });
  return { code, out, err };
}

t.test('the CLI on threads (--jobs) prints what one thread prints, file by file in the order given', async (t) => {
  const files = ['c10-bad.txt', 'c01-ok.txt', 'c10-ok.txt', 'c01-bad.txt'].map((f) => path.join(kvDir, f));
  const unreadable = path.join(dir, 'bad.edn');
  writeFileSync(unreadable, '{:process 0, :type :invoke, :f :put, :key "k", :value "a"}\n{:process 0\n');
  const generated = path.join(dir, 'gen.edn');
  writeFileSync(generated, generateKvHistory({ ops: 2000, clients: 10, keys: 4, seed: 11, corrupt: 'none' }));
  const argv = [
    '--model',
    'kv',
    files[0] as string,
    unreadable,
    ...files.slice(1),
    path.join(dir, 'missing.edn'),
    generated,
  ];
  const one = await cli(['--jobs', '1', ...argv]);
  const two = await cli(['--jobs', '2', ...argv]);
  t.equal(one.code, 2, 'an unreadable file: exit 2');
  t.same(two.out, one.out, 'the same verdict lines in the same order');
  t.same(two.err, one.err, 'the same messages');
  t.equal(two.code, one.code, 'the same exit code');
  t.match(one.out.join('\n'), /c10-bad\.txt not-linearizable\n.*c01-ok\.txt linearizable/);
  const json = await cli(['--jobs', '3', '--json', ...argv]);
  t.equal(json.out.length, argv.length - 2, 'one JSON object per file');
  t.same(
    json.out.map((l) => (JSON.parse(l) as { file: string }).file),
    argv.slice(2),
    'in the order given',
  );
});

t.test('--jobs takes 1 to the named maximum of threads', async (t) => {
  const file = path.join(kvDir, 'c01-ok.txt');
  const table: Array<{ jobs: string; code: number }> = [
    { jobs: '1', code: 0 },
    { jobs: String(lincheckCliJobsMax), code: 0 },
    { jobs: String(lincheckCliJobsMax + 1), code: 2 },
    { jobs: '0', code: 2 },
    { jobs: '1.5', code: 2 },
    { jobs: 'two', code: 2 },
  ];
  for (const c of table) {
    const r = await cli(['--model', 'kv', '--jobs', c.jobs, file, file]);
    t.equal(r.code, c.code, `--jobs ${c.jobs}: exit ${c.code}`);
    if (c.code === 2) t.match(r.err[0], /--jobs takes a whole number of threads from 1 to 16/);
    else t.equal(r.out.length, 2, `--jobs ${c.jobs}: both files`);
  }
});
