// The WGL search, differentially: random small histories (a few processes, a few operations each,
// overlapping intervals with ties, ok/fail/info outcomes, typed values including vectors) for the
// register, cas-register and kv models, each checked by the checker and by the brute-force
// oracle (every order consistent with real-time, every subset of unknown-outcome operations).
// A failure prints fast-check's seed and the shrunk history; `FC_SEED=<seed>` replays it.
import t from 'tap';
import fc from 'fast-check';
import { checkHistory } from '../../src/checkers/lincheck/checker.js';
import type { HistoryOp, OpKind, OpStatus, Value } from '../../src/checkers/lincheck/history.js';
import { models, type ModelName } from '../../src/checkers/lincheck/models.js';
import { linearizableByBruteForce, oracleOpsMax, orderProblem } from './lincheck-oracle.js';

const runsPerModel = Number(process.env.LINCHECK_DIFF_RUNS ?? 300);
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);

/** Small value domains, so reads often match a write and both verdicts are common. */
const domains: Record<ModelName, { written: Value[]; read: Value[]; keys: string[] }> = {
  // 1 and "1" are different values; [1 2] exercises compound states in the search's interning.
  register: { written: [1, '1', [1, 2], null], read: [null, 1, '1', [1, 2]], keys: [''] },
  'cas-register': { written: [1, 2, '1', [1, 2]], read: [null, 1, 2, '1', [1, 2]], keys: [''] },
  kv: { written: ['a', 'b', 1, ''], read: [null, '', 'a', 'b', 'ab', 'ba', 1, [3], [3, 3]], keys: ['x', 'y'] },
};
const appended: Value[] = ['a', 'b', 3];

interface RawOp {
  kind: number;
  value: number;
  output: number;
  swapped: boolean;
  status: number;
  gap: number;
  duration: number;
  key: number;
}

const rawOp = fc.record({
  kind: fc.nat(10),
  value: fc.nat(10),
  output: fc.nat(10),
  swapped: fc.boolean(),
  // 0-5 ok, 6 fail, 7 info: outcomes skewed towards ok, as in real histories.
  status: fc.nat(7),
  gap: fc.nat(3),
  duration: fc.nat(6),
  key: fc.nat(1),
});

/** Processes of 1-3 sequential operations each; a process stops after an unknown outcome (Jepsen). */
const rawHistory = fc.array(fc.array(rawOp, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 3 });

function build(name: ModelName, processes: RawOp[][]): HistoryOp[] {
  const model = models[name];
  const domain = domains[name];
  const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;
  const history: HistoryOp[] = [];
  processes.forEach((ops, client) => {
    let time = 0;
    for (const raw of ops) {
      const kind = pick(model.kinds, raw.kind) as OpKind;
      const status: OpStatus = raw.status <= 5 ? 'ok' : raw.status === 6 ? 'fail' : 'info';
      const invokeTime = time + raw.gap;
      const completeTime = invokeTime + raw.duration;
      time = completeTime + 1;
      let input: Value = null;
      let output: Value = null;
      if (kind === 'write') input = pick(domain.written, raw.value);
      if (kind === 'append') input = pick(appended, raw.value);
      if (kind === 'cas') {
        input = [pick(domain.read, raw.value), pick(domain.written, raw.output)];
        output = raw.swapped || status !== 'ok';
      }
      if (kind === 'read' && status === 'ok') output = pick(domain.read, raw.output);
      history.push({
        client,
        key: pick(domain.keys, raw.key),
        kind,
        input,
        output,
        invokeTime,
        completeTime: status === 'ok' ? completeTime : undefined,
        status,
      });
      if (status === 'info') break;
    }
  });
  return history.filter((_, i) => i < oracleOpsMax);
}

for (const name of ['register', 'cas-register', 'kv'] as const) {
  t.test(`${name}: the checker agrees with the brute-force oracle on random small histories`, async (t) => {
    const counts = { linearizable: 0, 'not-linearizable': 0, unknown: 0 };
    const property = fc.property(rawHistory, (processes) => {
      const history = build(name, processes);
      const result = checkHistory(history, models[name]);
      counts[result.verdict]++;
      const truth = linearizableByBruteForce(history, models[name]);
      const shown = JSON.stringify(history);
      if (result.verdict === 'unknown') throw new Error(`undecided: ${result.note}: ${shown}`);
      if ((result.verdict === 'linearizable') !== truth) {
        throw new Error(`checker: ${result.verdict}, oracle: ${truth ? 'linearizable' : 'not linearizable'}: ${shown}`);
      }
      if (result.verdict === 'not-linearizable') {
        // The explanation's prefix must itself be a legal, real-time-respecting order.
        const v = result.violation;
        const problem = orderProblem(history, models[name], v.linearization, v.key);
        if (problem !== undefined) throw new Error(`bad explanation: ${problem}: ${shown}`);
        if (v.linearization.includes(v.opIndex)) throw new Error('the culprit is in its own prefix');
      }
    });
    fc.assert(property, { numRuns: runsPerModel, ...(seed === undefined ? {} : { seed }) });
    t.pass(`${runsPerModel} histories agree`);
    // Both verdicts must be common, or the comparison would prove little.
    t.ok(counts.linearizable >= runsPerModel / 10, `${counts.linearizable} linearizable`);
    t.ok(counts['not-linearizable'] >= runsPerModel / 10, `${counts['not-linearizable']} not linearizable`);
  });
}

t.test('the oracle itself gets hand-made verdicts right', async (t) => {
  const w = (client: number, v: Value, at: [number, number?], status: OpStatus = 'ok'): HistoryOp => ({
    client,
    key: '',
    kind: 'write',
    input: v,
    output: null,
    invokeTime: at[0],
    completeTime: at[1],
    status,
  });
  const r = (client: number, v: Value, at: [number, number?], status: OpStatus = 'ok'): HistoryOp => ({
    client,
    key: '',
    kind: 'read',
    input: null,
    output: v,
    invokeTime: at[0],
    completeTime: at[1],
    status,
  });
  const table: Array<{ name: string; history: HistoryOp[]; want: boolean }> = [
    { name: 'a stale read', history: [w(0, 1, [0, 1]), w(0, 2, [2, 3]), r(1, 1, [4, 5])], want: false },
    {
      name: 'a read concurrent with the overwrite',
      history: [w(0, 1, [0, 1]), w(0, 2, [2, 6]), r(1, 1, [4, 5])],
      want: true,
    },
    { name: 'touching intervals are concurrent', history: [w(0, 1, [0, 4]), r(1, null, [4, 5])], want: true },
    { name: 'an info write may take effect', history: [w(0, 1, [0], 'info'), r(1, 1, [4, 5])], want: true },
    { name: 'an info write may not take effect', history: [w(0, 1, [0], 'info'), r(1, null, [4, 5])], want: true },
    { name: 'a failed write never happened', history: [w(0, 1, [0, 1], 'fail'), r(1, 1, [4, 5])], want: false },
    {
      name: 'an info write cannot act before it was invoked',
      history: [r(1, 1, [0, 1]), w(0, 1, [4], 'info')],
      want: false,
    },
    { name: '1 and "1" are different values', history: [w(0, 1, [0, 1]), r(1, '1', [4, 5])], want: false },
  ];
  for (const c of table) t.equal(linearizableByBruteForce(c.history, models.register), c.want, c.name);
});
