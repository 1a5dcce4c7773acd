// The history view's pure rules (web/replication/history-model.ts) without a browser: the
// incremental merge of history pages, lanes, the window's virtualisation and fault rows, the words
// of operations and faults, and the witness of a linearizability violation. Every witness said to
// be proven is checked against the real checker (src/checkers/lincheck): the set is not
// linearizable, and taking out any one of its operations (with the reads of its value) makes it
// linearizable (it is minimal).
import t from 'tap';
import {
  clientLanes,
  divergedText,
  emptyHistory,
  faultRows,
  faultText,
  findReported,
  findWitness,
  mergePage,
  opShortText,
  opText,
  timeExtent,
  visibleOps,
  zoom,
  type FaultWire,
  type HistoryPageWire,
  type HistoryRecordWire,
} from '../../web/replication/history-model.js';
import { checkHistory } from '../../src/checkers/lincheck/checker.js';
import { registerModel } from '../../src/checkers/lincheck/models.js';
import type { HistoryOp } from '../../src/checkers/lincheck/history.js';

let nextIndex = 0;
function op(
  f: HistoryRecordWire['f'],
  key: string,
  value: string | null,
  invoke: number,
  complete: number,
  process = 'c1',
  type: HistoryRecordWire['type'] = 'ok',
): HistoryRecordWire {
  return { index: nextIndex++, process, f, key, value, type, invoke_ms: invoke, complete_ms: complete, node: 'n1' };
}

function page(ops: HistoryRecordWire[], faults: FaultWire[] = [], total?: number, dropped = 0): HistoryPageWire {
  const last = ops.length > 0 ? (ops[ops.length - 1] as HistoryRecordWire).index + 1 : 0;
  return {
    cluster_id: 'c',
    from_index: ops[0]?.index ?? last,
    next_since: last,
    total: total ?? last,
    ops_dropped: dropped,
    ops,
    faults,
    faults_dropped: 0,
  };
}

const fault = (
  index: number,
  kind: string,
  start: number,
  end: number | null,
  extra: Partial<FaultWire> = {},
): FaultWire => ({
  index,
  kind,
  start_ms: start,
  end_ms: end,
  ...extra,
});

t.test('history pages merge incrementally', async (t) => {
  nextIndex = 0;
  const a = op('write', 'x', '1', 0, 1);
  const b = op('read', 'x', '1', 2, 3);
  const c = op('write', 'x', '2', 4, 5);
  const b1 = mergePage(emptyHistory, page([a, b]));
  t.same(
    b1.ops.map((o) => o.index),
    [0, 1],
    'the first page',
  );
  t.equal(b1.nextSince, 2, 'next since');
  const b2 = mergePage(b1, page([b, c]));
  t.same(
    b2.ops.map((o) => o.index),
    [0, 1, 2],
    'an overlapping page adds only the new operation',
  );
  t.equal(mergePage(b2, page([c])), b2, 'a page with nothing new returns the same buffer (nothing redrawn)');
  const f = [fault(0, 'pause', 1, null, { node: 'n2' })];
  const b3 = mergePage(b2, page([], f, 3));
  t.not(b3, b2, 'a new fault is a change');
  t.same(b3.faults, f, 'faults replaced by the page');
  t.same(b3.ops, b2.ops, 'operations kept when the page has none');
  const b4 = mergePage(b3, page([], [fault(0, 'pause', 1, 6, { node: 'n2' })], 3));
  t.equal(b4.faults[0]?.end_ms, 6, 'a fault that ended is updated');
  const d = op('write', 'y', '3', 6, 7);
  const e = op('write', 'y', '4', 8, 9);
  const capped = mergePage(b4, page([d, e]), 3);
  t.same(
    capped.ops.map((o) => o.index),
    [2, 3, 4],
    'past the cap the oldest are forgotten',
  );
  t.equal(capped.missed, 2, 'and counted');
  const gap = mergePage(emptyHistory, page([e], [], 5, 4));
  t.equal(gap.missed, 4, 'operations the server dropped are counted');
});

t.test('lanes, extent, window and fault rows', async (t) => {
  nextIndex = 0;
  const ops = [
    op('write', 'x', '1', 0, 10, 'c2'),
    op('read', 'x', '1', 5, 20, 'c1'),
    op('write', 'x', '2', 30, 40, 'c2'),
  ];
  t.same(clientLanes(ops), ['c2', 'c1'], 'one lane per client, in order of first appearance');
  const faults = [
    fault(0, 'pause', 2, 12, { node: 'n1' }),
    fault(1, 'partition', 8, null, { partition_id: 'p1' }),
    fault(2, 'heal', 15, 15),
  ];
  t.same(timeExtent({ ...emptyHistory, ops, faults }, 50), { t0: 0, t1: 50 }, 'an open fault lasts until now');
  t.equal(timeExtent(emptyHistory), null, 'no extent for an empty history');
  const cases: Array<{
    name: string;
    win: { start: number; end: number };
    max: number;
    shown: number[];
    hidden: number;
  }> = [
    { name: 'all in the window', win: { start: 0, end: 50 }, max: 10, shown: [0, 1, 2], hidden: 0 },
    { name: 'only overlapping ones', win: { start: 21, end: 29 }, max: 10, shown: [], hidden: 0 },
    { name: 'a bar across the window edge', win: { start: 15, end: 35 }, max: 10, shown: [1, 2], hidden: 0 },
    { name: 'past the cap the newest are drawn', win: { start: 0, end: 50 }, max: 2, shown: [1, 2], hidden: 1 },
  ];
  for (const c of cases) {
    const v = visibleOps(ops, c.win, c.max);
    t.same(
      v.shown.map((o) => o.index),
      c.shown,
      `${c.name}: shown`,
    );
    t.equal(v.hidden, c.hidden, `${c.name}: hidden`);
  }
  const rows = faultRows(faults, { start: 0, end: 50 }, 60);
  t.same(
    rows.map((r) => [r.fault.index, r.row, r.end]),
    [
      [0, 0, 12],
      [1, 1, 60],
      [2, 0, 15],
    ],
    'overlapping faults get their own rows; an open one ends now',
  );
  t.same(
    faultRows(faults, { start: 13, end: 14 }, 60).map((r) => r.fault.index),
    [1],
    'faults outside the window are left out',
  );
  t.same(zoom({ start: 0, end: 100 }, 0.5), { start: 25, end: 75 }, 'zoom in about the centre');
  t.same(zoom({ start: 0, end: 100 }, 2, 0), { start: 0, end: 200 }, 'zoom out about a point');
  t.same(zoom({ start: 0, end: 4 }, 0.1, 2, 2), { start: 1, end: 3 }, 'no narrower than the minimum span');
});

t.test('operations and faults in words', async (t) => {
  nextIndex = 0;
  const cases: Array<{ name: string; op: HistoryRecordWire; short: string; text: string }> = [
    { name: 'write ok', op: op('write', 'x', '1', 0, 1), short: 'w x=1', text: 'c1 write x=1 ok on n1' },
    {
      name: 'read of nothing',
      op: op('read', 'x', null, 0, 1),
      short: 'r x=not found',
      text: 'c1 read x=not found ok on n1',
    },
    {
      name: 'indeterminate write',
      op: op('write', 'k', 'v', 0, 1, 'c9', 'info'),
      short: 'w k=v',
      text: 'c9 write k=v unknown on n1',
    },
    {
      name: 'failed delete',
      op: op('delete', 'k', null, 0, 1, 'c1', 'fail'),
      short: 'd k',
      text: 'c1 delete k fail on n1',
    },
  ];
  for (const c of cases) {
    t.equal(opShortText(c.op), c.short, `${c.name}: bar text`);
    t.equal(opText(c.op), c.text, `${c.name}: label`);
  }
  const faults: Array<[FaultWire, string]> = [
    [fault(0, 'pause', 0, null, { node: 'n2' }), 'pause n2'],
    [fault(0, 'crash', 0, null, { node: 'n3' }), 'crash n3'],
    [
      fault(0, 'partition', 0, null, { partition_id: 'p1', group_a: ['n1', 'n2'], group_b: ['n3'] }),
      'partition p1 n1 n2 | n3',
    ],
    [fault(0, 'latency', 0, null, { from: 'n1', to: 'n2', value: 40 }), 'latency n1>n2 40 ms'],
    [fault(0, 'drop', 0, null, { from: 'n1', to: 'n2', value: 0.25 }), 'drop n1>n2 25%'],
    [fault(0, 'clock_skew', 0, null, { node: 'n1', value: 500 }), 'skew n1 +500 ms'],
    [fault(0, 'clock_skew', 0, null, { node: 'n1', value: -20 }), 'skew n1 -20 ms'],
    [fault(0, 'stall', 0, null, { node: 'n1', value: 300 }), 'stall n1 300 ms'],
    [fault(0, 'heal', 0, 0), 'heal'],
  ];
  for (const [f, want] of faults) t.equal(faultText(f), want, want);
  t.equal(
    divergedText({
      key: 'x',
      states: { n1: 'value', n2: 'missing', n3: 'tombstone' },
      values: { n1: '1', n2: null, n3: null },
    }),
    'x: n1=1, n2 missing, n3 tombstone',
    'a diverged key in words',
  );
});

/** The witness as a lincheck history (register model), so the real checker can judge it. */
function asLincheck(ops: readonly HistoryRecordWire[]): HistoryOp[] {
  return ops.map((o) => ({
    client: o.process,
    key: o.key,
    kind: o.f,
    input: o.f === 'write' ? o.value : null,
    output: o.f === 'read' ? o.value : null,
    invokeTime: o.invoke_ms,
    completeTime: o.type === 'info' ? undefined : o.complete_ms,
    status: o.type,
  }));
}
const linearizable = (ops: readonly HistoryRecordWire[]): boolean =>
  checkHistory(asLincheck(ops), registerModel).verdict === 'linearizable';

t.test('the operations that cannot be ordered, and why', async (t) => {
  interface Case {
    name: string;
    build: () => { ops: HistoryRecordWire[]; culprit: HistoryRecordWire; want: HistoryRecordWire[] };
    reason: RegExp;
    proven: boolean;
  }
  const cases: Case[] = [
    {
      name: 'a stale read: the value was overwritten before the read began',
      build: () => {
        const w1 = op('write', 'x', '1', 0, 10, 'c1');
        const noise = op('read', 'y', '7', 1, 2, 'c3');
        const w2 = op('write', 'x', '2', 20, 30, 'c1');
        const r = op('read', 'x', '1', 40, 50, 'c2');
        return { ops: [w1, noise, w2, r], culprit: r, want: [w1, w2, r] };
      },
      reason: new RegExp(
        '^read of x=1 at \\[0\\.040 s, 0\\.050 s\\] saw a value overwritten before it began: ' +
          'the write of x=2 completed at 0\\.030 s, after the write of x=1 completed at 0\\.010 s$',
      ),
      proven: true,
    },
    {
      name: 'a read of a value nobody wrote',
      build: () => {
        const w1 = op('write', 'x', '1', 0, 10);
        const r = op('read', 'x', '9', 20, 30, 'c2');
        return { ops: [w1, r], culprit: r, want: [r] };
      },
      reason: /saw a value no operation wrote/,
      proven: true,
    },
    {
      name: 'a read from the future',
      build: () => {
        const r = op('read', 'x', '1', 0, 10, 'c2');
        const w1 = op('write', 'x', '1', 20, 30);
        return { ops: [r, w1], culprit: r, want: [r, w1] };
      },
      reason: /whose write began only later, at 0\.020 s/,
      proven: true,
    },
    {
      name: 'nothing found after a completed write',
      build: () => {
        const w1 = op('write', 'x', '1', 0, 10);
        const r = op('read', 'x', null, 20, 30, 'c2');
        return { ops: [w1, r], culprit: r, want: [w1, r] };
      },
      reason: /^read of x at .* found nothing, but the write of x=1 completed at 0\.010 s, before the read began$/,
      proven: true,
    },
    {
      name: 'a read that goes back in time after another read saw the newer value',
      build: () => {
        const w1 = op('write', 'x', '1', 0, 10);
        const w2 = op('write', 'x', '2', 20, 60, 'c3');
        const r0 = op('read', 'x', '2', 25, 30, 'c2');
        const r = op('read', 'x', '1', 40, 50, 'c4');
        return { ops: [w1, r0, r, w2], culprit: r, want: [w1, w2, r0, r] };
      },
      reason: /went back in time: an earlier read, completed at 0\.030 s, already saw the newer x=2/,
      proven: true,
    },
    {
      name: 'a failed write does not explain a read',
      build: () => {
        const w1 = op('write', 'x', '1', 0, 10, 'c1', 'fail');
        const r = op('read', 'x', '1', 20, 30, 'c2');
        return { ops: [w1, r], culprit: r, want: [r] };
      },
      reason: /no operation wrote/,
      proven: true,
    },
  ];
  for (const c of cases) {
    nextIndex = 0;
    const { ops, culprit, want } = c.build();
    const w = findWitness(ops, culprit, 0);
    t.same(
      w.indexes,
      want.map((o) => o.index),
      `${c.name}: the operations`,
    );
    t.match(w.reason, c.reason, `${c.name}: the reason`);
    t.equal(w.proven, c.proven, `${c.name}: proven`);
    t.notOk(linearizable(ops), `${c.name}: the whole history is not linearizable`);
    const chosen = ops.filter((o) => w.indexes.includes(o.index));
    t.notOk(linearizable(chosen), `${c.name}: the witness alone is not linearizable`);
    // Minimal: taking out any one operation (with the reads that saw its value, which would then
    // have read a value nobody wrote) leaves a linearizable set.
    for (const leftOut of chosen) {
      if (chosen.length === 1) break;
      const rest = chosen.filter(
        (o) => o !== leftOut && !(leftOut.f === 'write' && o.f === 'read' && o.value === leftOut.value),
      );
      t.ok(linearizable(rest), `${c.name}: without ${opText(leftOut)} it is linearizable (minimal)`);
    }
  }

  nextIndex = 0;
  const a = op('write', 'x', '1', 0, 10);
  const b = op('write', 'x', '2', 0, 10, 'c2');
  const r = op('read', 'x', '2', 20, 30);
  const weird = op('write', 'x', '3', 5, 40, 'c3');
  const w = findWitness([a, b, r, weird], weird, 0);
  t.equal(w.proven, false, 'a culprit no pattern fits: the culprit and its neighbours, not claimed minimal');
  t.same(w.indexes, [a.index, b.index, weird.index, r.index], 'the culprit and the last operations before it');
  t.match(w.reason, /^write of x=3 .* cannot be ordered after the operations before it/);
});

t.test("the checker's operation is found in the page's copy", async (t) => {
  nextIndex = 0;
  const ops = [op('write', 'x', '1', 100.1234567, 110), op('read', 'x', '1', 120.5, 130, 'c2')];
  const found = findReported(ops, {
    client: 'c2',
    node: 'n1',
    kind: 'read',
    key: 'x',
    value: '1',
    outcome: 'ok',
    invoke_ms: 120.5,
    complete_ms: 130,
  });
  t.equal(found, ops[1], 'matched on client, kind, key and invocation time');
  const rounded = findReported(ops, {
    client: 'c1',
    node: null,
    kind: 'write',
    key: 'x',
    value: '1',
    outcome: 'ok',
    invoke_ms: 100.123,
    complete_ms: 110,
  });
  t.equal(rounded, ops[0], 'the report rounds times to a microsecond');
  t.equal(
    findReported(ops, {
      client: 'c2',
      node: null,
      kind: 'read',
      key: 'x',
      value: '1',
      outcome: 'ok',
      invoke_ms: 99,
      complete_ms: 130,
    }),
    undefined,
    'not matched at another time',
  );
});
