// The lincheck reader and its typed values: every Jepsen history shape (EDN maps per line, one
// vector or list of them, Jepsen 0.3's #jepsen.history.Op records, the jepsen.util log) gives the
// same history and verdict; what the EDN reader cannot read is an error naming the line; values
// compare as typed values in every model. Then the CLI as a black box (a child process), for the
// regressions of issue 16: Op records and one-vector histories were read as empty and judged
// linearizable, integer-valued kv histories were judged not linearizable.
import t from 'tap';
import fc from 'fast-check';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory, type CheckResult } from '../../src/checkers/lincheck/checker.js';
import type { HistoryOp } from '../../src/checkers/lincheck/history.js';
import { models, type ModelName } from '../../src/checkers/lincheck/models.js';
import { parseHistory, type ParseResult } from '../../src/checkers/lincheck/parse.js';
import { runCli } from '../../src/checkers/lincheck/cli.js';
import { ednNestingDepthMax } from '../../src/checkers/lincheck/edn.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');

function parsed(text: string): HistoryOp[] {
  const p = parseHistory(text);
  if (!p.ok) throw new Error(p.error);
  return [...p.history];
}

function verdict(text: string, model: ModelName): CheckResult['verdict'] {
  return checkHistory(parsed(text), models[model]).verdict;
}

/** A stale read: 1 then 2 written, one after the other, then 1 read. Not linearizable. */
const staleRead = [
  { process: 0, type: 'invoke', f: 'write', value: '1' },
  { process: 0, type: 'ok', f: 'write', value: '1' },
  { process: 1, type: 'invoke', f: 'write', value: '2' },
  { process: 1, type: 'ok', f: 'write', value: '2' },
  { process: 2, type: 'invoke', f: 'read', value: 'nil' },
  { process: 2, type: 'ok', f: 'read', value: '1' },
];
const nemesis = '{:type :info, :process :nemesis, :f :start-partition, :value :majority}';

const fieldsOf = (o: { process: number; type: string; f: string; value: string }, time?: number): string =>
  `${time === undefined ? '' : `:index ${time}, :time ${time * 1000}, `}:type ` +
  `:${o.type}, :process ${o.process}, :f :${o.f}, :value ${o.value}`;
const ednLines = staleRead.map((o) => `{${fieldsOf(o)}}`).join('\n');
const opLines = staleRead.map((o, i) => `#jepsen.history.Op{${fieldsOf(o, i)}}`).join('\n');

t.test('a non-linearizable history is not linearizable in every EDN shape', async (t) => {
  const shapes: Array<{ name: string; text: string }> = [
    { name: 'one map per line', text: ednLines },
    // Before issue 16 these two were read as empty histories and judged linearizable.
    { name: 'Jepsen 0.3 Op records, one per line', text: opLines },
    { name: 'one vector of maps over several lines', text: `[${ednLines}]` },
    { name: 'Jepsen 0.3 Op records with nemesis ops', text: `${nemesis}\n${opLines}\n#jepsen.history.Op${nemesis}` },
    { name: 'one vector of maps on one line', text: `[${ednLines.replaceAll('\n', ' ')}]` },
    { name: 'one list of Op records', text: `(${opLines}\n)` },
    { name: 'one vector of Op records on one line', text: `[${opLines.replaceAll('\n', ', ')}]` },
    {
      name: 'maps with comments, commas and a discarded form',
      text: `; recorded by hand\n${ednLines.replace('\n', ',\n#_ {:ignored true}\n')}`,
    },
  ];
  for (const shape of shapes) {
    const p = parseHistory(shape.text);
    if (!p.ok) {
      t.fail(`${shape.name}: ${p.error}`);
      continue;
    }
    const history = p.history;
    t.equal(
      checkHistory(history, models['cas-register']).verdict,
      'not-linearizable',
      `${shape.name}: not linearizable`,
    );
    t.equal(history.length, 3, `${shape.name}: three operations`);
    t.same(
      history.map((o) => [o.client, o.kind, o.status, o.input, o.output]),
      [
        [0, 'write', 'ok', 1, null],
        [1, 'write', 'ok', 2, null],
        [2, 'read', 'ok', null, 1],
      ],
      `${shape.name}: the operations`,
    );
  }
});

t.test('Jepsen 0.3 records: :time orders the operations, and non-client records are counted as skipped', async (t) => {
  const p = parseHistory(`${nemesis}\n${opLines}`);
  if (!p.ok) return t.fail(p.error);
  t.equal(p.skipped, 1, 'the nemesis op');
  t.same(
    p.history.map((o) => [o.invokeTime, o.completeTime]),
    [
      [0, 1000],
      [2000, 3000],
      [4000, 5000],
    ],
  );
});

t.test('recorded histories read the same in every EDN shape', async (t) => {
  // kv/c10-bad.txt as Op records and inside a vector: the same operations, times and verdict.
  const kv = readFileSync(path.join(historiesDir, 'kv/c10-bad.txt'), 'utf8');
  const base = parsed(kv);
  const asOps = kv
    .split('\n')
    .map((l) => (l.trim() === '' ? l : `#jepsen.history.Op${l}`))
    .join('\n');
  for (const [name, text] of [
    ['Op records', asOps],
    ['a vector', `[${kv}]`],
    ['a vector of Op records', `[${asOps}]`],
  ] as const) {
    t.same(parsed(text), base, `c10-bad as ${name}: the same history`);
  }
  t.equal(checkHistory(base, models.kv).verdict, 'not-linearizable');
  // etcd_000.log rewritten as EDN maps: the same history and verdict as the jepsen.util log.
  const log = readFileSync(path.join(historiesDir, 'jepsen-etcd/etcd_000.log'), 'utf8');
  const edn = log
    .split('\n')
    .map((l) => {
      const m = /jepsen\.util - (\d+)\s+(:\w+)\s+(:[\w-]+)\s*(.*?)\s*$/.exec(l);
      return m === null ? '' : `{:process ${m[1]}, :type ${m[2]}, :f ${m[3]}, :value ${m[4]}}`;
    })
    .join('\n');
  t.same(parsed(edn), parsed(log), 'etcd_000 as EDN maps: the same history');
  t.equal(verdict(edn, 'cas-register'), 'not-linearizable');
});

t.test('text the EDN reader cannot read is an error naming its line, never skipped', async (t) => {
  const ok = '{:process 0, :type :invoke, :f :read, :value nil}';
  const table: Array<{ name: string; text: string; line: number; reason: RegExp }> = [
    {
      name: 'a map with a key and no value',
      text: `${ok}\n{:process 0, :type :ok, :f :read :value}`,
      line: 2,
      reason: /key-value pairs/,
    },
    {
      name: 'a vector closed by )',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value [1 2)}`,
      line: 2,
      reason: /\) does not close the \[ opened at line 2/,
    },
    { name: 'a stray }', text: `${ok}}\n${ok}`, line: 1, reason: /unmatched \}/ },
    { name: 'a stray ) before more text', text: `${ok}\n)\n${ok}`, line: 2, reason: /unmatched \)/ },
    {
      name: 'an unterminated string',
      text: `${ok}\n${ok}\n{:process 0, :type :ok, :f :read, :value "x}`,
      line: 3,
      reason: /unterminated string/,
    },
    {
      name: 'an unknown string escape',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value "a\\qb"}`,
      line: 2,
      reason: /unknown string escape \\q/,
    },
    {
      name: 'a character literal edn-data cannot read',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value \\(}`,
      line: 2,
      reason: /character literal/,
    },
    {
      name: 'a number with a leading zero',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value 07}`,
      line: 2,
      reason: /cannot read "07"/,
    },
    {
      name: 'a token that is no EDN',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value 1.2.3}`,
      line: 2,
      reason: /cannot read "1\.2\.3"/,
    },
    {
      name: 'a symbolic number',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value ##NaN}`,
      line: 2,
      reason: /not supported/,
    },
    {
      name: 'a number out of range',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value 1e999}`,
      line: 2,
      reason: /out of range/,
    },
    {
      name: 'a control character',
      text: `${ok}\n{:process 0, :type :ok, :f :read, :value \u0007}`,
      line: 2,
      reason: /control character U\+0007/,
    },
    {
      name: 'a duplicate key',
      text: `${ok}\n{:process 0, :type :ok, :type :fail, :f :read, :value 1}`,
      line: 2,
      reason: /key :type twice/,
    },
    {
      name: 'a map never closed',
      text: `${ok}\n{:process 0, :type :ok,\n :f :read, :value 1\n`,
      line: 2,
      reason: /\{ opened at line 2 column 1 is never closed/,
    },
    {
      name: 'an unknown record tag',
      text: `${ok}\n#foo.Bar{:process 0, :type :ok, :f :read, :value 1}`,
      line: 2,
      reason: /not a #foo\.Bar value/,
    },
    {
      name: 'a vector element that is not an operation',
      text: `[${ok}\n 3]`,
      line: 2,
      reason: /expected an operation map/,
    },
    {
      name: 'a record without :type',
      text: `${ok}\n{:process 0, :f :read, :value 1}`,
      line: 2,
      reason: /missing :type/,
    },
    {
      name: 'a record whose :process is nil',
      text: `{:process nil, :type :invoke, :f :read, :value nil}`,
      line: 1,
      reason: /:process must be an integer/,
    },
    {
      name: 'a JSON line',
      text: '{"process": 0, "type": "invoke", "f": "read", "value": null}',
      line: 1,
      reason: /looks like JSON/,
    },
    {
      name: 'a jepsen.util line with an unreadable value',
      text: 'INFO  jepsen.util - 0\t:invoke\t:cas\t[1 2)',
      line: 1,
      reason: /does not close/,
    },
  ];
  for (const c of table) {
    const p: ParseResult = parseHistory(c.text);
    t.equal(p.ok, false, `${c.name}: refused`);
    if (p.ok) continue;
    t.equal(p.line, c.line, `${c.name}: line ${c.line}`);
    t.match(p.reason, c.reason, `${c.name}: ${p.reason}`);
    t.equal(p.error, `line ${p.line}: ${p.reason}`, `${c.name}: the error names the line`);
  }
});

t.test('nesting is bounded: at the limit a value is read, past it (and far past it) the line is refused', async (t) => {
  // The operation map is one level; its value adds `depth` more.
  const record = (depth: number): string =>
    `{:process 0, :type :invoke, :f :write, :value ${'['.repeat(depth)}1${']'.repeat(depth)}}\n` +
    '{:process 0, :type :ok, :f :write, :value 1}';
  const at = parseHistory(record(ednNestingDepthMax - 1));
  t.ok(at.ok, `a value nested ${ednNestingDepthMax - 1} deep in its record is read`);
  if (at.ok) t.equal(JSON.stringify(at.history[0]?.input).length, 2 * (ednNestingDepthMax - 1) + 1, 'the whole value');
  for (const depth of [ednNestingDepthMax, 100_000]) {
    const past = parseHistory(record(depth));
    t.equal(past.ok, false, `${depth} deep is refused`);
    if (!past.ok) t.match(past.error, new RegExp(`^line 1: nested deeper than ${ednNestingDepthMax} levels`));
  }
  const tags = parseHistory(`${'#t '.repeat(100_000)}{:process 0}`);
  t.equal(tags.ok, false, 'a tower of #tags is refused too');
});

t.test(
  'parsing is total: any text, and any one-character damage to a history, is a history or an error with its line',
  async (t) => {
    // EDN's syntax characters, with NUL, control characters and newlines, so the damage is often
    // at a delimiter; valid histories mutated at one place cover the near-misses.
    const alphabet = fc.constantFrom(...'{}[]()#_:;"\\ ,\n\t\u0000\u0007abNM.+-019eé'.split(''));
    const ednish = fc.array(alphabet, { maxLength: 80 }).map((cs) => cs.join(''));
    const damaged = fc
      .tuple(fc.constantFrom(ednLines, opLines, `[${ednLines}]`), fc.nat(), fc.option(alphabet, { nil: '' }))
      .map(([text, at, c]) => text.slice(0, at % text.length) + c + text.slice((at % text.length) + 1));
    let refused = 0;
    let read = 0;
    fc.assert(
      fc.property(fc.oneof(ednish, damaged), (text) => {
        const p = parseHistory(text);
        if (p.ok) {
          read++;
          return;
        }
        refused++;
        const lines = text.split('\n').length;
        if (!(p.line >= 1 && p.line <= lines)) throw new Error(`line ${p.line} of a ${lines}-line text: ${p.error}`);
      }),
      { numRuns: 3000 },
    );
    t.ok(refused > 100 && read > 100, `${read} read, ${refused} refused with their line`);
  },
);

/** One EDN history of sequential operations: [f, value, read result?] run one after another. */
function sequential(ops: Array<[f: string, value: string, result?: string]>, key?: string): string {
  const k = key === undefined ? '' : `, :key ${key}`;
  return ops
    .flatMap(([f, value, result], i) => [
      `{:process ${i}, :type :invoke, :f :${f}${k}, :value ${f === 'read' || f === 'get' ? 'nil' : value}}`,
      `{:process ${i}, :type :ok, :f :${f}${k}, :value ${result ?? value}}`,
    ])
    .join('\n');
}

t.test('values compare as typed values in every model', async (t) => {
  const table: Array<{ name: string; model: ModelName; text: string; want: CheckResult['verdict'] }> = [
    {
      name: 'register: 1 is read back as 1',
      model: 'register',
      text: sequential([
        ['write', '1'],
        ['read', '', '1'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: 1 is not "1"',
      model: 'register',
      text: sequential([
        ['write', '1'],
        ['read', '', '"1"'],
      ]),
      want: 'not-linearizable',
    },
    {
      name: 'register: :a is not "a"',
      model: 'register',
      text: sequential([
        ['write', ':a'],
        ['read', '', '"a"'],
      ]),
      want: 'not-linearizable',
    },
    {
      name: 'register: numbers compare by value, 1 = 1.0 (documented)',
      model: 'register',
      text: sequential([
        ['write', '1'],
        ['read', '', '1.0'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: 1N = 1, as in Clojure',
      model: 'register',
      text: sequential([
        ['write', '1N'],
        ['read', '', '1'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: integers beyond 2^53 stay exact',
      model: 'register',
      text: sequential([
        ['write', '9007199254740993'],
        ['read', '', '9007199254740992'],
      ]),
      want: 'not-linearizable',
    },
    {
      name: 'register: the same integer beyond 2^53, with and without N',
      model: 'register',
      text: sequential([
        ['write', '9007199254740993'],
        ['read', '', '9007199254740993N'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: a vector equals the list of its elements',
      model: 'register',
      text: sequential([
        ['write', '[1 "a"]'],
        ['read', '', '(1 "a")'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: vectors compare element by element',
      model: 'register',
      text: sequential([
        ['write', '[1 2]'],
        ['read', '', '[2 1]'],
      ]),
      want: 'not-linearizable',
    },
    {
      name: 'register: maps compare regardless of order',
      model: 'register',
      text: sequential([
        ['write', '{:a 1, :b [2]}'],
        ['read', '', '{:b [2] :a 1}'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: sets compare regardless of order',
      model: 'register',
      text: sequential([
        ['write', '#{1 2}'],
        ['read', '', '#{2 1}'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'register: a read of nil is a read of absent',
      model: 'register',
      text: sequential([
        ['read', '', 'nil'],
        ['write', '1'],
        ['write', 'nil'],
        ['read', '', 'nil'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'cas-register: a cas from 1 does not swap "1"',
      model: 'cas-register',
      text: sequential([
        ['write', '"1"'],
        ['cas', '[1 2]'],
      ]),
      want: 'not-linearizable',
    },
    {
      name: 'cas-register: a cas from [1 2] swaps (1 2)',
      model: 'cas-register',
      text: sequential([
        ['write', '(1 2)'],
        ['cas', '[[1 2] 3]'],
        ['read', '', '3'],
      ]),
      want: 'linearizable',
    },
    {
      name: 'kv: an integer put is read back as that integer',
      model: 'kv',
      text: sequential(
        [
          ['put', '1'],
          ['get', '', '1'],
        ],
        '"k"',
      ),
      want: 'linearizable',
    },
    {
      name: 'kv: an integer put is not read back as a string',
      model: 'kv',
      text: sequential(
        [
          ['put', '1'],
          ['get', '', '"1"'],
        ],
        '"k"',
      ),
      want: 'not-linearizable',
    },
    {
      name: 'kv: an absent key reads as nil',
      model: 'kv',
      text: sequential([['get', '', 'nil']], '"k"'),
      want: 'linearizable',
    },
    {
      name: 'kv: an absent key reads as "" (Porcupine)',
      model: 'kv',
      text: sequential(
        [
          ['get', '', '""'],
          ['put', '""'],
          ['get', '', 'nil'],
        ],
        '"k"',
      ),
      want: 'linearizable',
    },
    {
      name: 'kv: appends of strings concatenate',
      model: 'kv',
      text: sequential(
        [
          ['append', '"a"'],
          ['append', '"b"'],
          ['get', '', '"ab"'],
        ],
        '"k"',
      ),
      want: 'linearizable',
    },
    {
      name: 'kv: appends of other values build a list',
      model: 'kv',
      text: sequential(
        [
          ['append', '3'],
          ['append', '4'],
          ['get', '', '[3 4]'],
        ],
        '3',
      ),
      want: 'linearizable',
    },
    {
      name: 'kv: a list read in the wrong order',
      model: 'kv',
      text: sequential(
        [
          ['append', '3'],
          ['append', '4'],
          ['get', '', '[4 3]'],
        ],
        '3',
      ),
      want: 'not-linearizable',
    },
    {
      name: 'kv: integer keys and string keys are different keys',
      model: 'kv',
      text: `${sequential([['put', '1']], '1')}\n${sequential([['get', '', 'nil']], ':k')}`,
      want: 'linearizable',
    },
  ];
  for (const c of table) {
    const p = parseHistory(c.text);
    if (p.ok) t.equal(checkHistory(p.history, models[c.model]).verdict, c.want, c.name);
    else t.fail(`${c.name}: ${p.error}`);
  }
  // A string key and an integer key that print alike cannot both be one history's keys.
  const clash = parseHistory(`${sequential([['put', '1']], '1')}\n${sequential([['put', '2']], '"1"')}`);
  t.equal(clash.ok, false, 'keys 1 and "1" in one history are refused');
  if (!clash.ok) t.match(clash.reason, /two different keys/);
});

t.test('a keyword process in a jepsen.util log is the nemesis, skipped and counted', async (t) => {
  const p = parseHistory(
    'INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n' +
      'INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\t[1 {:a "b"}]',
  );
  if (!p.ok) return t.fail(p.error);
  t.equal(p.skipped, 1);
  t.same(p.history[0]?.output, [1, { map: [[{ keyword: 'a' }, 'b']] }], 'a compound value read from the log');
});

// ---------------------------------------------------------------------------------------------
// The CLI

/** Runs the CLI in a child process (tap's TypeScript loader, else the built dist/). */
function runCliProcess(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const loader = process.execArgv.find((a) => a.includes('@tapjs/typescript'));
  const argv =
    loader === undefined
      ? [path.join(repoRoot, 'dist/src/checkers/lincheck/cli.js'), ...args]
      : [loader, path.join(repoRoot, 'src/checkers/lincheck/cli.ts'), ...args];
  const env = { ...process.env };
  delete env.NODE_OPTIONS; // tap's process-info hooks are for the test process only
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, out, err }));
  });
}

t.test(
  'the CLI, as a child process: verdicts for every shape, exit 2 with file:line for an unreadable line',
  async (t) => {
    const dir = t.testdir({
      'ops.edn': opLines,
      'vector.edn': `[${ednLines}]`,
      'int-kv.edn': sequential(
        [
          ['put', '1'],
          ['get', '', '1'],
          ['put', '2'],
          ['get', '', '2'],
        ],
        '"k"',
      ),
      'bad-line.edn': `${ednLines.split('\n').slice(0, 2).join('\n')}\n{:process 1, :type :invoke :f :write, :value}\n`,
      'empty.edn': '',
    });
    const file = (name: string): string => path.join(dir, name);
    const [good, mixed] = await Promise.all([
      runCliProcess(['--model', 'kv', file('int-kv.edn')]),
      runCliProcess([
        '--model',
        'cas-register',
        file('ops.edn'),
        file('vector.edn'),
        file('bad-line.edn'),
        file('empty.edn'),
      ]),
    ]);
    t.equal(good.code, 0, `an integer-valued kv history is linearizable: ${good.err}`);
    t.match(good.out, /int-kv\.edn linearizable \d+\.\d\n/);
    t.equal(mixed.code, 2, 'an unreadable file makes the exit code 2');
    t.match(mixed.out, /ops\.edn not-linearizable /, 'Op records: not linearizable');
    t.match(mixed.out, /vector\.edn not-linearizable /, 'one vector: not linearizable');
    t.notMatch(mixed.out, /bad-line\.edn|empty\.edn/, 'no verdict line for a file that is not a history');
    t.match(
      mixed.err,
      new RegExp(
        `${file('bad-line.edn').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3: cannot parse the history: .*key-value pairs`,
      ),
      'the file and line of the unreadable form',
    );
    t.match(
      mixed.err,
      /empty\.edn: no client operations: nothing to check, so no verdict/,
      'an empty history gets no verdict',
    );
  },
);

t.test(
  'the CLI exit code is the worst file: 2 for not a history, 1 for not linearizable, 0 when all are',
  async (t) => {
    const dir = t.testdir({
      'ops.edn': opLines,
      'int-kv.edn': sequential(
        [
          ['put', '1'],
          ['get', '', '1'],
        ],
        '"k"',
      ),
      'bad.edn': '{:process 0}}',
      'nemesis-only.edn': `${nemesis}\n`,
    });
    const table: Array<{ name: string; argv: string[]; code: number; err?: RegExp }> = [
      { name: 'linearizable', argv: ['--model', 'kv', path.join(dir, 'int-kv.edn')], code: 0 },
      { name: 'not linearizable', argv: ['--model', 'register', path.join(dir, 'ops.edn')], code: 1 },
      {
        name: 'unreadable and not linearizable',
        argv: ['--model', 'register', path.join(dir, 'bad.edn'), path.join(dir, 'ops.edn')],
        code: 2,
        err: /bad\.edn:1: cannot parse the history: unmatched \}/,
      },
      {
        name: 'only nemesis operations',
        argv: ['--model', 'register', path.join(dir, 'nemesis-only.edn')],
        code: 2,
        err: /no client operations \(1 non-client operations or other lines skipped\)/,
      },
    ];
    for (const c of table) {
      const err: string[] = [];
      const code = await runCli(c.argv, { out: () => {}, err: (l) => err.push(l), now: () => 0 });
      t.equal(code, c.code, `${c.name}: exit ${c.code}`);
      if (c.err) t.match(err.join('\n'), c.err, `${c.name}: message`);
    }
  },
);
