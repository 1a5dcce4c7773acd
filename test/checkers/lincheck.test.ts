// The linearizability checker: hand-written corner cases, the Jepsen parsers, the CLI, every
// recorded history in shared/data/histories against its expected verdict, and randomized
// histories cross-checked against a brute-force search.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory, describeViolation, type CheckResult } from '../../src/checkers/lincheck/checker.js';
import type { HistoryOp, ModelState, OpKind, OpStatus, Value } from '../../src/checkers/lincheck/history.js';
import { models, type Model, type ModelName } from '../../src/checkers/lincheck/models.js';
import { parseHistory } from '../../src/checkers/lincheck/parse.js';
import { runCli } from '../../src/checkers/lincheck/cli.js';
import { SeededRng, type Rng } from '../../src/util/rng.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');

/** A compact op constructor: `at` is [invoke, complete] (complete omitted for info/fail). */
function op(
  client: number,
  kind: OpKind,
  input: HistoryOp['input'],
  output: Value,
  at: [number, number?],
  status: OpStatus = 'ok',
  key = '',
): HistoryOp {
  return { client, key, kind, input, output, invokeTime: at[0], completeTime: at[1], status };
}
const w = (c: number, v: Value, at: [number, number?], status: OpStatus = 'ok', key = ''): HistoryOp =>
  op(c, 'write', v, null, at, status, key);
const r = (c: number, v: Value, at: [number, number?], status: OpStatus = 'ok', key = ''): HistoryOp =>
  op(c, 'read', null, v, at, status, key);
const cas = (
  c: number,
  e: Value,
  n: Value,
  swapped: boolean,
  at: [number, number?],
  status: OpStatus = 'ok',
): HistoryOp => op(c, 'cas', [e, n], swapped, at, status);
const app = (c: number, v: string, at: [number, number?], status: OpStatus = 'ok', key = ''): HistoryOp =>
  op(c, 'append', v, null, at, status, key);

interface Case {
  name: string;
  model: ModelName;
  history: HistoryOp[];
  verdict: CheckResult['verdict'];
  /** For violations: the index of the op that cannot be placed. */
  culprit?: number;
}

const cases: Case[] = [
  {
    name: 'an unknown-outcome write may take effect long after it was invoked',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [5], 'info'), r(2, 1, [20, 30]), r(2, 2, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'an unknown-outcome write may also never take effect',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [5], 'info'), r(2, 1, [20, 30]), r(2, 1, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'an unknown-outcome write cannot take effect before it was invoked',
    model: 'register',
    history: [w(0, 1, [0, 10]), r(2, 2, [20, 30]), w(1, 2, [40], 'info')],
    verdict: 'not-linearizable',
    culprit: 1,
  },
  {
    name: 'a read of a value never written is a violation',
    model: 'register',
    history: [w(0, 1, [0, 10]), r(1, 7, [20, 30])],
    verdict: 'not-linearizable',
    culprit: 1,
  },
  {
    name: 'a read before any write returns nil',
    model: 'register',
    history: [r(0, null, [0, 10]), w(1, 1, [20, 30]), r(0, 1, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'concurrent writes may take effect in one order',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [0, 10]), r(2, 2, [20, 30]), r(2, 2, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'concurrent writes may take effect in the other order',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [0, 10]), r(2, 1, [20, 30]), r(2, 1, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'concurrent writes cannot be seen in both orders once both completed',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [0, 10]), r(2, 1, [20, 30]), r(2, 2, [40, 50])],
    verdict: 'not-linearizable',
    culprit: 3,
  },
  {
    name: 'a read concurrent with two writes may see either and then the other',
    model: 'register',
    history: [w(0, 1, [0, 100]), w(1, 2, [0, 100]), r(2, 1, [20, 30]), r(2, 2, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'a failed write never happened',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [20, 30], 'fail'), r(2, 1, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'a value only a failed write wrote cannot be read',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(1, 2, [20, 30], 'fail'), r(2, 2, [40, 50])],
    verdict: 'not-linearizable',
    culprit: 2,
  },
  {
    name: 'a stale read after a completed overwrite is a violation',
    model: 'register',
    history: [w(0, 1, [0, 10]), w(0, 2, [20, 30]), r(1, 1, [40, 50])],
    verdict: 'not-linearizable',
    culprit: 2,
  },
  {
    name: 'operations that touch at the same instant count as concurrent',
    model: 'register',
    history: [w(0, 1, [0, 10]), r(1, null, [10, 20])],
    verdict: 'linearizable',
  },
  {
    name: 'a delete is a write of nil',
    model: 'register',
    history: [w(0, 1, [0, 10]), op(0, 'delete', null, null, [20, 30]), r(1, null, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'an unknown-outcome read is ignored',
    model: 'register',
    history: [w(0, 1, [0, 10]), r(1, 9, [20], 'info'), r(1, 1, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'a cas swaps only from the expected value',
    model: 'cas-register',
    history: [w(0, 1, [0, 10]), cas(1, 1, 2, true, [20, 30]), r(2, 2, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'a cas that reports success from a value the register never held is a violation',
    model: 'cas-register',
    history: [w(0, 1, [0, 10]), cas(1, 3, 2, true, [20, 30])],
    verdict: 'not-linearizable',
    culprit: 1,
  },
  {
    name: 'a cas that observed a failed compare while the value matched is a violation',
    model: 'cas-register',
    history: [w(0, 1, [0, 10]), cas(1, 1, 2, false, [20, 30])],
    verdict: 'not-linearizable',
    culprit: 1,
  },
  {
    name: 'an unknown-outcome cas may have swapped',
    model: 'cas-register',
    history: [w(0, 1, [0, 10]), cas(1, 1, 2, false, [20], 'info'), r(2, 2, [40, 50])],
    verdict: 'linearizable',
  },
  {
    name: 'an unknown-outcome cas cannot swap from the wrong value',
    model: 'cas-register',
    history: [w(0, 1, [0, 10]), cas(1, 3, 2, false, [20], 'info'), r(2, 2, [40, 50])],
    verdict: 'not-linearizable',
    culprit: 2,
  },
  {
    name: 'concurrent appends may be seen in either order',
    model: 'kv',
    history: [app(0, 'a', [0, 10]), app(1, 'b', [0, 10]), r(2, 'ba', [20, 30])],
    verdict: 'linearizable',
  },
  {
    name: 'an append seen before an append that completed before it began is a violation',
    model: 'kv',
    history: [app(0, 'a', [0, 10]), app(1, 'b', [20, 30]), r(2, 'ba', [40, 50])],
    verdict: 'not-linearizable',
    culprit: 2,
  },
  {
    name: 'a kv history is checked per key, and a put replaces the value',
    model: 'kv',
    history: [
      app(0, 'a', [0, 10], 'ok', 'x'),
      app(1, 'z', [0, 10], 'ok', 'y'),
      op(0, 'write', 'q', null, [20, 30], 'ok', 'x'),
      r(1, 'z', [40, 50], 'ok', 'y'),
      r(2, 'q', [40, 50], 'ok', 'x'),
    ],
    verdict: 'linearizable',
  },
  {
    name: 'one bad key makes a kv history not linearizable and is the one reported',
    model: 'kv',
    history: [
      app(0, 'a', [0, 10], 'ok', 'x'),
      app(1, 'z', [0, 10], 'ok', 'y'),
      r(1, 'zz', [40, 50], 'ok', 'y'),
      r(2, 'a', [40, 50], 'ok', 'x'),
    ],
    verdict: 'not-linearizable',
    culprit: 2,
  },
  {
    name: 'an empty history is linearizable',
    model: 'cas-register',
    history: [],
    verdict: 'linearizable',
  },
];

t.test('hand-written histories get the verdict their semantics demand', async (t) => {
  for (const c of cases) {
    const result = checkHistory(c.history, models[c.model]);
    t.equal(result.verdict, c.verdict, c.name);
    if (result.verdict === 'not-linearizable') {
      t.equal(result.violation.opIndex, c.culprit, `${c.name}: the op that cannot be placed`);
      t.equal(result.violation.op, c.history[c.culprit ?? -1], `${c.name}: the violation carries that op`);
    }
  }
});

t.test('a violation names the longest linearizable prefix and the op that cannot be placed', async (t) => {
  const history = [w(0, 1, [0, 10]), w(1, 2, [20, 30]), r(2, 2, [40, 50]), r(3, 1, [60, 70]), w(0, 3, [80, 90])];
  const result = checkHistory(history, models.register);
  if (result.verdict !== 'not-linearizable') return t.fail(`expected a violation, got ${result.verdict}`);
  const v = result.violation;
  t.equal(v.opIndex, 3, 'the stale read is the culprit');
  t.equal(v.prefixEndTime, 70, 'the prefix ends at its completion');
  t.same(v.linearization, [0, 1, 2], 'the three earlier operations, in their only legal order');
  t.equal(v.stateAfter, 2, 'leaving the register at 2');
  t.match(v.message, /client 3 read -> 1 \[60, 70\] cannot be linearized/);
  const lines = describeViolation(history, v);
  t.match(lines.at(-1) ?? '', /then: client 3 read -> 1 \[60, 70\] is impossible/);
  t.equal(lines.length, 5, 'message, three prefix ops, the impossible op');
});

t.test('histories a model cannot check are refused as invalid, not judged', async (t) => {
  const table: Array<{ name: string; model: ModelName; history: HistoryOp[]; problem: RegExp }> = [
    {
      name: 'a cas on a plain register',
      model: 'register',
      history: [cas(0, 1, 2, true, [0, 1])],
      problem: /no cas operation/,
    },
    { name: 'an ok op with no completion', model: 'register', history: [w(0, 1, [0])], problem: /finite completeTime/ },
    {
      name: 'a completion before the invocation',
      model: 'register',
      history: [w(0, 1, [5, 1])],
      problem: /before invokeTime/,
    },
    {
      name: 'a cas without [expected, new]',
      model: 'cas-register',
      history: [op(0, 'cas', 1, true, [0, 1])],
      problem: /\[expected, new\]/,
    },
  ];
  for (const c of table) {
    const result = checkHistory(c.history, models[c.model]);
    t.equal(result.verdict, 'unknown', c.name);
    if (result.verdict === 'unknown') {
      t.equal(result.reason, 'invalid-history', `${c.name}: reason`);
      t.match(result.note, c.problem, `${c.name}: says what is wrong`);
    }
  }
});

t.test('a history that outlasts its time budget or its memory cap is unknown', async (t) => {
  const text = readFileSync(path.join(historiesDir, 'kv/c50-ok.txt'), 'utf8');
  const parsed = parseHistory(text);
  if (!parsed.ok) return t.fail(parsed.error);
  let clock = 0;
  const timedOut = checkHistory(parsed.history, models.kv, { budget: { now: () => (clock += 10), deadline: 25 } });
  t.equal(timedOut.verdict, 'unknown');
  if (timedOut.verdict === 'unknown') {
    t.equal(timedOut.reason, 'timeout');
    t.match(timedOut.note, /time budget ran out with \d+ of 10 keys decided/);
  }
  const capped = checkHistory(parsed.history, models.kv, { configurationsMax: 1000 });
  t.equal(capped.verdict, 'unknown');
  if (capped.verdict === 'unknown') t.equal(capped.reason, 'limit');
});

// ---------------------------------------------------------------------------------------------
// Parsers

t.test('the jepsen.util log parser pairs invocations with completions per process', async (t) => {
  const log = [
    'INFO  jepsen.util - 0\t:invoke\t:read\tnil',
    'INFO  jepsen.util - 1\t:invoke\t:cas\t[3 0]',
    'INFO  jepsen.util - 2\t:invoke\t:write\t4',
    'INFO  jepsen.util - 0\t:ok\t:read\t3',
    'some other logger line',
    'INFO  jepsen.util - 1\t:fail\t:cas\t[3 0]',
    'INFO  jepsen.util - 2\t:info\t:write\t:timed-out',
    'INFO  jepsen.util - 3\t:invoke\t:cas\t[1 2]',
    'INFO  jepsen.util - 3\t:ok\t:cas\t[1 2]',
    'INFO  jepsen.util - 4\t:invoke\t:write\t1',
  ].join('\n');
  const parsed = parseHistory(log);
  if (!parsed.ok) return t.fail(parsed.error);
  t.same(parsed.history, [
    { client: 0, key: '', kind: 'read', input: null, output: 3, invokeTime: 0, completeTime: 3, status: 'ok' },
    {
      client: 1,
      key: '',
      kind: 'cas',
      input: [3, 0],
      output: null,
      invokeTime: 1,
      completeTime: undefined,
      status: 'fail',
    },
    {
      client: 2,
      key: '',
      kind: 'write',
      input: 4,
      output: null,
      invokeTime: 2,
      completeTime: undefined,
      status: 'info',
    },
    { client: 3, key: '', kind: 'cas', input: [1, 2], output: true, invokeTime: 7, completeTime: 8, status: 'ok' },
    {
      client: 4,
      key: '',
      kind: 'write',
      input: 1,
      output: null,
      invokeTime: 9,
      completeTime: undefined,
      status: 'info',
    },
  ]);
});

t.test('the EDN parser reads kv records, keys and escaped strings', async (t) => {
  const edn = [
    '{:process 9, :type :invoke, :f :append, :key "0", :value "x 9 0 y"}',
    '{:process 1, :type :invoke, :f :get, :key "9", :value nil}',
    '{:process 1, :type :ok, :f :get, :key "9", :value "a\\"b"}',
    '',
    '{:process 9, :type :ok, :f :append, :key "0", :value "x 9 0 y"}',
    '{:process 2, :type :invoke, :f :put, :key "0", :value "z"}',
  ].join('\n');
  const parsed = parseHistory(edn);
  if (!parsed.ok) return t.fail(parsed.error);
  t.same(parsed.history, [
    {
      client: 9,
      key: '0',
      kind: 'append',
      input: 'x 9 0 y',
      output: null,
      invokeTime: 0,
      completeTime: 4,
      status: 'ok',
    },
    { client: 1, key: '9', kind: 'read', input: null, output: 'a"b', invokeTime: 1, completeTime: 2, status: 'ok' },
    {
      client: 2,
      key: '0',
      kind: 'write',
      input: 'z',
      output: null,
      invokeTime: 5,
      completeTime: undefined,
      status: 'info',
    },
  ]);
});

t.test('malformed history files are refused with the line that is wrong', async (t) => {
  const table = [
    {
      name: 'an unknown operation',
      text: 'INFO  jepsen.util - 0 :invoke :frob nil',
      error: /^line 1: unknown operation :frob/,
    },
    { name: 'a completion nobody invoked', text: 'INFO  jepsen.util - 0 :ok :read 1', error: /never invoked/ },
    { name: 'a cas without a pair', text: 'INFO  jepsen.util - 0 :invoke :cas 3', error: /\[expected new\]/ },
    {
      name: 'a completion of another kind',
      text: 'INFO  jepsen.util - 0 :invoke :read nil\nINFO  jepsen.util - 0 :ok :write 1',
      error: /^line 2: .*invoked read but completes write/,
    },
    {
      name: 'an unterminated EDN string',
      text: '{:process 0, :type :invoke, :f :put, :key "k, :value nil}',
      error: /^line 1: unterminated string/,
    },
    {
      name: 'an EDN record without :type',
      text: '{:process 0, :f :get, :key "k", :value nil}',
      error: /missing :type/,
    },
  ];
  for (const c of table) {
    const parsed = parseHistory(c.text);
    t.equal(parsed.ok, false, c.name);
    if (!parsed.ok) t.match(parsed.error, c.error, `${c.name}: ${parsed.error}`);
  }
});

// ---------------------------------------------------------------------------------------------
// Every recorded history

/** The README's verdict table: `etcd_NNN linearizable|not-linearizable`. */
function readmeVerdicts(): Map<string, string> {
  const readme = readFileSync(path.join(historiesDir, 'README.md'), 'utf8');
  return new Map(
    [...readme.matchAll(/^(etcd_\d{3}) (linearizable|not-linearizable)\s*$/gm)].map((m) => [
      m[1] as string,
      m[2] as string,
    ]),
  );
}

t.test('every recorded history is decided, with the README verdict where it gives one', async (t) => {
  const expected = readmeVerdicts();
  t.ok(expected.size >= 50, `the README lists ${expected.size} etcd verdicts`);
  const sets: Array<{ dir: string; model: ModelName; count: number }> = [
    { dir: 'jepsen-etcd', model: 'cas-register', count: 103 },
    { dir: 'kv', model: 'kv', count: 6 },
  ];
  for (const set of sets) {
    const files = readdirSync(path.join(historiesDir, set.dir)).sort();
    t.equal(files.length, set.count, `${set.dir} holds ${set.count} histories`);
    let undecided = 0;
    let mismatched = 0;
    for (const file of files) {
      const name = file.replace(/\.\w+$/, '');
      const parsed = parseHistory(readFileSync(path.join(historiesDir, set.dir, file), 'utf8'));
      if (!parsed.ok) {
        t.fail(`${file}: ${parsed.error}`);
        continue;
      }
      const result = checkHistory(parsed.history, models[set.model]);
      if (result.verdict === 'unknown') undecided++;
      // kv files state their verdict in their name (cNN-ok / cNN-bad).
      const want = set.dir === 'kv' ? (name.endsWith('-ok') ? 'linearizable' : 'not-linearizable') : expected.get(name);
      if (want !== undefined && want !== result.verdict) {
        mismatched++;
        t.fail(`${file}: expected ${want}, got ${result.verdict}`);
      }
      if (result.verdict === 'not-linearizable') {
        // The explanation's prefix must itself be a legal, real-time-respecting order.
        const problem = checkPrefix(parsed.history, models[set.model], result.violation);
        if (problem !== undefined) t.fail(`${file}: ${problem}`);
      }
    }
    t.equal(undecided, 0, `every ${set.dir} history is decided`);
    t.equal(mismatched, 0, `every listed ${set.dir} verdict matches`);
  }
});

t.test('etcd_095, which holds no run, is linearizable', async (t) => {
  const parsed = parseHistory(readFileSync(path.join(historiesDir, 'jepsen-etcd/etcd_095.log'), 'utf8'));
  t.ok(parsed.ok);
  if (parsed.ok) t.equal(checkHistory(parsed.history, models['cas-register']).verdict, 'linearizable');
});

/**
 * Checks a violation's claim about its prefix: the linearization is legal from the initial state,
 * ends in `stateAfter`, respects real-time order, holds every op completed before the prefix
 * ends, and leaves out the culprit. Returns what is wrong, if anything.
 */
function checkPrefix(
  history: readonly HistoryOp[],
  model: Model,
  v: { linearization: readonly number[]; stateAfter: ModelState; opIndex: number; prefixEndTime: number; key: string },
): string | undefined {
  let state: ModelState | undefined = model.init();
  const placed = new Set(v.linearization);
  for (let k = 0; k < v.linearization.length; k++) {
    const a = history[v.linearization[k] as number] as HistoryOp;
    if (a.key !== v.key) return `prefix op ${k} is on another key`;
    state = model.step(state, a);
    if (state === undefined) return `prefix op ${k} is illegal where it is placed`;
    for (let m = k + 1; m < v.linearization.length; m++) {
      const b = history[v.linearization[m] as number] as HistoryOp;
      if (b.status === 'ok' && (b.completeTime as number) < a.invokeTime)
        return `prefix ops ${k} and ${m} are out of real-time order`;
    }
  }
  if (state !== v.stateAfter) return `the prefix ends in ${String(state)}, not ${String(v.stateAfter)}`;
  if (placed.has(v.opIndex)) return 'the culprit is in its own prefix';
  for (let i = 0; i < history.length; i++) {
    const o = history[i] as HistoryOp;
    if (o.key === v.key && o.status === 'ok' && (o.completeTime as number) < v.prefixEndTime && !placed.has(i)) {
      return `op ${i}, completed before the prefix ends, is missing from it`;
    }
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The CLI

t.test('the CLI prints one verdict line per file and exits 0 only when all are linearizable', async (t) => {
  const kv = (f: string): string => path.join(historiesDir, 'kv', f);
  const etcd = (f: string): string => path.join(historiesDir, 'jepsen-etcd', f);
  const table: Array<{ name: string; argv: string[]; code: number; lines: RegExp[]; errors?: RegExp }> = [
    {
      name: 'all linearizable',
      argv: ['--model', 'kv', kv('c01-ok.txt'), kv('c10-ok.txt')],
      code: 0,
      lines: [/^\S+c01-ok\.txt linearizable \d+\.\d$/, /^\S+c10-ok\.txt linearizable \d+\.\d$/],
    },
    {
      name: 'one violation',
      argv: ['--model=cas-register', etcd('etcd_002.log'), etcd('etcd_000.log')],
      code: 1,
      lines: [/etcd_002\.log linearizable /, /etcd_000\.log not-linearizable /],
    },
    {
      name: 'an explained violation',
      argv: ['--model', 'kv', '--explain', kv('c01-bad.txt')],
      code: 1,
      lines: [/c01-bad\.txt not-linearizable /, /cannot be linearized/],
    },
    {
      name: 'a spent time budget',
      argv: ['--model', 'kv', '--timeout-ms', '1', kv('c50-ok.txt')],
      code: 1,
      lines: [/c50-ok\.txt unknown \d+\.\d$/],
    },
    { name: 'a missing model', argv: [kv('c01-ok.txt')], code: 2, lines: [], errors: /--model is required/ },
    {
      name: 'an unknown model',
      argv: ['--model', 'queue', kv('c01-ok.txt')],
      code: 2,
      lines: [],
      errors: /unknown model queue/,
    },
    {
      name: 'a bad timeout',
      argv: ['--model', 'kv', '--timeout-ms', 'soon', 'x'],
      code: 2,
      lines: [],
      errors: /positive number/,
    },
    { name: 'a missing file', argv: ['--model', 'kv', kv('nope.txt')], code: 1, lines: [], errors: /cannot read/ },
  ];
  for (const c of table) {
    const out: string[] = [];
    const err: string[] = [];
    let clock = 0;
    // A fake clock: 5 ms pass per reading, so a 1 ms budget is spent at the first look.
    const code = await runCli(c.argv, { out: (l) => out.push(l), err: (l) => err.push(l), now: () => (clock += 5) });
    t.equal(code, c.code, `${c.name}: exit code`);
    for (let i = 0; i < c.lines.length; i++) t.match(out[i] ?? '', c.lines[i] as RegExp, `${c.name}: line ${i + 1}`);
    if (c.errors) t.match(err.join('\n'), c.errors, `${c.name}: error message`);
  }
});

// ---------------------------------------------------------------------------------------------
// Randomized: histories from real sequential executions, then corrupted ones, against brute force.

interface Generated {
  history: HistoryOp[];
  /** Indices of ok reads (or cas outcomes) whose output can be corrupted. */
  observations: number[];
}

const domain: Record<ModelName, Value[]> = {
  register: [null, 0, 1, 2],
  'cas-register': [null, 0, 1, 2],
  kv: ['a', 'b', 'c'],
};

/**
 * Runs `n` random operations on the model in sequence, at linearization points 10, 20, 30, ...
 * and wraps each in a random interval around its point (so neighbours overlap). Some ops get an
 * unknown outcome (applied or not, at random) and some fail (never applied).
 */
function generate(
  rng: Rng,
  modelName: ModelName,
  n: number,
  keys: number,
  spread: number,
  unknownRate = 0.12,
): Generated {
  const model = models[modelName];
  const values = domain[modelName];
  const states = new Map<string, ModelState>();
  const history: HistoryOp[] = [];
  const observations: number[] = [];
  const pick = (): Value => values[rng.int(values.length)] as Value;
  for (let i = 0; i < n; i++) {
    const key = keys === 1 ? '' : `k${rng.int(keys)}`;
    const state = states.has(key) ? (states.get(key) as ModelState) : model.init();
    const kind = model.kinds[rng.int(model.kinds.length)] as OpKind;
    const roll = rng.next();
    const status: OpStatus = roll < 0.1 ? 'fail' : roll < 0.1 + unknownRate ? 'info' : 'ok';
    const applied = status === 'ok' || (status === 'info' && rng.chance(0.5));
    let input: HistoryOp['input'] = null;
    let output: Value = null;
    if (kind === 'write' || kind === 'append') input = pick();
    if (kind === 'read') output = state;
    if (kind === 'cas') {
      const expected = rng.chance(0.5) ? state : pick();
      input = [expected, pick()];
      output = expected === state;
    }
    // Real-valued offsets: no two events share a time, so prefixes by time are unambiguous.
    const point = (i + 1) * 10;
    const invokeTime = point - rng.next() * spread;
    const completeTime = status === 'ok' ? point + rng.next() * spread : undefined;
    const o: HistoryOp = {
      client: i,
      key,
      kind,
      input,
      output: status === 'ok' ? output : null,
      invokeTime,
      completeTime,
      status,
    };
    if (applied) {
      const next = model.step(state, o);
      if (next === undefined) throw new Error('generator produced an illegal step');
      states.set(key, next);
    }
    if (status === 'ok' && (kind === 'read' || kind === 'cas')) observations.push(history.length);
    history.push(o);
  }
  return { history, observations };
}

/** Linearizability by definition: some order of the ok ops and any subset of the info ops. */
function bruteForce(history: readonly HistoryOp[], model: Model): boolean {
  const keys = [...new Set(history.map((o) => o.key))];
  return keys.every((key) => {
    const ops = history.filter((o) => o.key === key && o.status !== 'fail');
    const okTotal = ops.filter((o) => o.status === 'ok').length;
    const placed = ops.map(() => false);
    const search = (state: ModelState, okPlaced: number): boolean => {
      if (okPlaced === okTotal) return true;
      for (let i = 0; i < ops.length; i++) {
        if (placed[i]) continue;
        const candidate = ops[i] as HistoryOp;
        // Real-time order: every op that completed before this one began goes first.
        const blocked = ops.some(
          (o, j) => !placed[j] && o.status === 'ok' && (o.completeTime as number) < candidate.invokeTime,
        );
        if (blocked) continue;
        const next = model.step(state, candidate);
        if (next === undefined) continue;
        placed[i] = true;
        if (search(next, okPlaced + (candidate.status === 'ok' ? 1 : 0))) return true;
        placed[i] = false;
      }
      return false;
    };
    return search(model.init(), 0);
  });
}

function corrupt(rng: Rng, g: Generated, modelName: ModelName): HistoryOp[] | undefined {
  if (g.observations.length === 0) return undefined;
  const index = g.observations[rng.int(g.observations.length)] as number;
  const original = g.history[index] as HistoryOp;
  const values = domain[modelName];
  const output: Value =
    original.kind === 'cas'
      ? !original.output
      : ((values.filter((v) => v !== original.output)[rng.int(values.length - 1)] ?? 'zz') as Value);
  return g.history.map((o, i) => (i === index ? { ...o, output } : o));
}

t.test('histories of real sequential executions are always linearizable', async (t) => {
  const names: ModelName[] = ['register', 'cas-register', 'kv'];
  let checked = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const rng = new SeededRng(seed);
    const name = names[seed % names.length] as ModelName;
    const g = generate(rng, name, rng.range(1, 40), rng.range(1, 3), rng.range(5, 40), seed % 3 === 0 ? 0.4 : 0.12);
    const result = checkHistory(g.history, models[name]);
    if (result.verdict !== 'linearizable') {
      t.fail(
        `seed ${seed} (${name}): a real execution was judged ${result.verdict}; replay: ` +
          `generate(new SeededRng(${seed}), ...)`,
      );
    }
    checked++;
  }
  t.equal(checked, 300, 'every seed was checked');
});

/**
 * The history as seen just before time `end`: ops invoked before it; those not completed before
 * it are pending (unknown outcome), except `keep`, which completes as recorded.
 */
function prefixBefore(history: readonly HistoryOp[], end: number, keep?: HistoryOp): HistoryOp[] {
  return history
    .filter((o) => o.invokeTime < end)
    .map((o) =>
      o === keep || (o.status === 'ok' && (o.completeTime as number) < end)
        ? o
        : { ...o, status: o.status === 'fail' ? 'fail' : 'info', output: null, completeTime: undefined },
    );
}

t.test('corrupted small histories get the brute-force verdict, and their explanations hold', async (t) => {
  const names: ModelName[] = ['register', 'cas-register', 'kv'];
  let rejected = 0;
  let stillLinearizable = 0;
  let disagreements = 0;
  for (let seed = 1; seed <= 600; seed++) {
    const rng = new SeededRng(seed * 7919);
    const name = names[seed % names.length] as ModelName;
    // A third of the seeds are heavy with unknown outcomes, the case the pruning rules touch most.
    const g = generate(rng, name, rng.range(2, 8), rng.range(1, 2), rng.range(5, 30), seed % 3 === 0 ? 0.4 : 0.12);
    const history = corrupt(rng, g, name) ?? g.history;
    const result = checkHistory(history, models[name]);
    const truth = bruteForce(history, models[name]);
    if ((result.verdict === 'linearizable') !== truth || result.verdict === 'unknown') {
      disagreements++;
      t.fail(
        `seed ${seed} (${name}): checker says ${result.verdict}, brute force says ` +
          `${truth ? 'linearizable' : 'not'}: ${JSON.stringify(history)}`,
      );
    }
    if (result.verdict === 'not-linearizable') {
      rejected++;
      const v = result.violation;
      const problem = checkPrefix(history, models[name], v);
      if (problem !== undefined) t.fail(`seed ${seed} (${name}): ${problem}`);
      // Minimality, by brute force on the failing key: linearizable up to the culprit's
      // completion, and not once it completes.
      const keyOps = history.filter((o) => o.key === v.key);
      if (!bruteForce(prefixBefore(keyOps, v.prefixEndTime), models[name])) {
        t.fail(
          `seed ${seed} (${name}): the prefix before ${v.prefixEndTime} is not linearizable: a ` +
            'shorter explanation exists',
        );
      }
      if (bruteForce(prefixBefore(keyOps, v.prefixEndTime, v.op), models[name])) {
        t.fail(
          `seed ${seed} (${name}): the prefix up to the culprit's completion is linearizable: it is not the culprit`,
        );
      }
      if (!v.minimal) t.fail(`seed ${seed} (${name}): without a budget the explanation must be minimal`);
    } else {
      stillLinearizable++;
    }
  }
  t.equal(disagreements, 0, 'the checker agrees with brute force on every seed');
  t.ok(
    rejected > 150,
    `most corruptions are caught (${rejected} rejected, ${stillLinearizable} genuinely linearizable)`,
  );
});

t.test('growth pruning never changes a kv verdict or its explanation', async (t) => {
  // The kv model without its grows/canGrowInto hooks runs the plain search.
  const plain: Model = { ...models.kv, grows: undefined, canGrowInto: undefined };
  let differences = 0;
  let rejected = 0;
  for (let seed = 1; seed <= 150; seed++) {
    const rng = new SeededRng(seed * 104729);
    const g = generate(rng, 'kv', rng.range(10, 30), 1, rng.range(20, 60));
    const history = rng.chance(0.7) ? (corrupt(rng, g, 'kv') ?? g.history) : g.history;
    const pruned = checkHistory(history, models.kv);
    const reference = checkHistory(history, plain);
    const same =
      pruned.verdict === reference.verdict &&
      (pruned.verdict !== 'not-linearizable' ||
        reference.verdict !== 'not-linearizable' ||
        (pruned.violation.opIndex === reference.violation.opIndex &&
          pruned.violation.prefixEndTime === reference.violation.prefixEndTime));
    if (!same) {
      differences++;
      t.fail(
        `seed ${seed}: pruned ` +
          `${JSON.stringify(pruned.verdict === 'not-linearizable' ? pruned.violation.opIndex : pruned.verdict)}, ` +
          'plain ' +
          JSON.stringify(reference.verdict === 'not-linearizable' ? reference.violation.opIndex : reference.verdict),
      );
    }
    if (pruned.verdict === 'not-linearizable') rejected++;
  }
  // And on recorded data, where the pruned search's own frontier falls short on some keys.
  const parsed = parseHistory(readFileSync(path.join(historiesDir, 'kv/c10-bad.txt'), 'utf8'));
  if (!parsed.ok) return t.fail(parsed.error);
  for (const key of new Set(parsed.history.map((o) => o.key))) {
    const ops = parsed.history.filter((o) => o.key === key);
    const a = checkHistory(ops, models.kv);
    const b = checkHistory(ops, plain);
    const culprit = (r: CheckResult): string =>
      r.verdict === 'not-linearizable' ? `${r.violation.opIndex}@${r.violation.prefixEndTime}` : r.verdict;
    t.equal(culprit(a), culprit(b), `c10-bad key ${key}: same verdict and culprit`);
  }
  t.equal(differences, 0, 'pruned and plain search agree on every seed');
  t.ok(rejected > 30, `${rejected} of the histories were violations`);
});
