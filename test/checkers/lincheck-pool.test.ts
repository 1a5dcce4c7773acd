// The checker's worker pool: same verdicts as the inline checker, off the event loop, within budget.
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkHistory } from '../../src/checkers/lincheck/checker.js';
import { models } from '../../src/checkers/lincheck/models.js';
import { parseHistory } from '../../src/checkers/lincheck/parse.js';
import { checkInPool, closeLincheckPool, lincheckPoolStats } from '../../src/checkers/lincheck/pool.js';
import type { History } from '../../src/checkers/lincheck/history.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const historiesDir = path.resolve(repoRoot, '../shared/data/histories');

function load(file: string): History {
  const parsed = parseHistory(readFileSync(path.join(historiesDir, file), 'utf8'));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.history;
}

t.teardown(closeLincheckPool);

t.test('the pool gives the inline verdict and explanation', async (t) => {
  const table = [
    { file: 'kv/c10-bad.txt', model: 'kv' as const },
    { file: 'jepsen-etcd/etcd_000.log', model: 'cas-register' as const },
    { file: 'jepsen-etcd/etcd_002.log', model: 'cas-register' as const },
  ];
  for (const c of table) {
    const history = load(c.file);
    const pooled = await checkInPool(history, c.model, { timeoutMs: 30_000 });
    const inline = checkHistory(history, models[c.model]);
    t.equal(pooled.verdict, inline.verdict, `${c.file}: verdict`);
    if (pooled.verdict === 'not-linearizable' && inline.verdict === 'not-linearizable') {
      t.same(pooled.violation, inline.violation, `${c.file}: the same violation, cloned across threads`);
    }
  }
  t.ok(lincheckPoolStats().completed >= 3, 'the checks ran in the pool');
});

t.test('typed and compound values cross to the worker intact', async (t) => {
  // Vectors, maps and keywords as register values: a write of {:a [1 2]} read back as (1 2) is a
  // violation, and 1 vs "1" too; the worker must judge the cloned values as the inline checker does.
  const ops = [
    ['write', '{:a [1 2], :b :k}', null],
    ['read', 'nil', '{:b :k, :a (1 2)}'],
    ['write', '[1 "1"]', null],
    ['read', 'nil', '[1 1]'],
  ] as const;
  const text = ops
    .flatMap(([f, value, result], i) => [
      `{:process ${i}, :type :invoke, :f :${f}, :value ${value}}`,
      `{:process ${i}, :type :ok, :f :${f}, :value ${result ?? value}}`,
    ])
    .join('\n');
  const parsed = parseHistory(text);
  if (!parsed.ok) return t.fail(parsed.error);
  const pooled = await checkInPool(parsed.history, 'register', { timeoutMs: 30_000 });
  const inline = checkHistory(parsed.history, models.register);
  t.equal(inline.verdict, 'not-linearizable', 'the read of [1 1] after [1 "1"] was written is a violation');
  t.equal(pooled.verdict, inline.verdict, 'the same verdict in the pool');
  if (pooled.verdict === 'not-linearizable' && inline.verdict === 'not-linearizable') {
    t.same(pooled.violation, inline.violation, 'the same violation');
    t.equal(pooled.violation.opIndex, 3, 'the culprit is the last read, not the map read');
  }
});

t.test('the event loop keeps turning while a large history is checked', async (t) => {
  const history = load('kv/c50-ok.txt');
  // Event-loop turns while the check runs (setImmediate re-arms itself once per turn). A check on
  // the loop itself would allow one turn at most before its result; on the pool, the loop keeps
  // turning however loaded the machine is (no wall-clock threshold).
  let turns = 0;
  let spinning = true;
  const spin = (): void => {
    turns++;
    if (spinning) setImmediate(spin);
  };
  setImmediate(spin);
  const result = await checkInPool(history, 'kv', { timeoutMs: 60_000 });
  spinning = false;
  t.equal(result.verdict, 'linearizable', 'c50-ok is linearizable');
  t.ok(turns >= 3, `${turns} event-loop turns during the check`);
});

t.test('a check that outlasts its budget answers unknown', async (t) => {
  const result = await checkInPool(load('kv/c50-ok.txt'), 'kv', { timeoutMs: 1 });
  t.equal(result.verdict, 'unknown', 'a 1 ms budget cannot decide c50-ok');
  if (result.verdict === 'unknown') t.equal(result.reason, 'timeout', 'because the time ran out');
});
