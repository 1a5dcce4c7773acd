// The clock lab page's pure modules without a browser: happened-before from vector clocks
// (web/clocklab/causality.ts), the run built from the lab's real event stream (model.ts: lanes,
// kinds, messages, hold-back, drops, cuts, replays, the event cap) and the virtualised window
// (viewport.ts). The frames come from the real Lab class, driven on virtual time.
import t from 'tap';
import { Lab } from '../../src/clocklab/lab.js';
import { SeededRng } from '../../src/util/rng.js';
import {
  clockText,
  compareClocks,
  cutViolations,
  messageIdsIn,
  relationTo,
  vectorText,
} from '../../web/clocklab/causality.js';
import { type DiagramEvent, RunModel } from '../../web/clocklab/model.js';
import {
  laneWidth,
  laneWidthPxMin,
  overscanRows,
  rowHeightPxMax,
  rowHeightPxMin,
  visibleEvents,
  visibleMessages,
  visibleRows,
  zoomAt,
} from '../../web/clocklab/viewport.js';

interface Frame {
  type: string;
  seq: number;
  data: Record<string, unknown>;
}

/** A lab on virtual time whose events become `/ws`-shaped frames (the envelope the bus adds). */
function recordedLab(seed = 7): { lab: Lab; frames: Frame[] } {
  const frames: Frame[] = [];
  let seq = 0;
  const lab = new Lab({
    rng: new SeededRng(seed),
    config: { initialProcesses: ['p1', 'p2', 'p3'].map((id) => ({ id, clock_type: 'vector' as const })) },
    // A JSON round trip, as the frames cross the WebSocket.
    emit: (type, data) => frames.push(JSON.parse(JSON.stringify({ type, seq: ++seq, data })) as Frame),
  });
  return { lab, frames };
}

function modelOf(frames: Frame[], max?: number): RunModel {
  const m = new RunModel(max);
  for (const f of frames) m.apply(f);
  return m;
}

const ok = <T>(r: { ok: true; value: T } | { ok: false; error: { message: string } }): T => {
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
};

t.test('compareClocks: the version-vector rules, missing entries as 0', async (t) => {
  const cases: Array<[Record<string, number>, Record<string, number>, string]> = [
    [{ p1: 1 }, { p1: 1 }, 'equal'],
    [{ p1: 1, p2: 0 }, { p1: 1 }, 'equal'],
    [{ p1: 1 }, { p1: 2 }, 'before'],
    [{ p1: 1 }, { p1: 1, p2: 1 }, 'before'],
    [{ p1: 2, p2: 1 }, { p1: 1, p2: 1 }, 'after'],
    [{ p1: 2 }, { p2: 1 }, 'concurrent'],
    [{ p1: 2, p2: 0 }, { p1: 1, p2: 3 }, 'concurrent'],
    [{}, {}, 'equal'],
    [{}, { p3: 1 }, 'before'],
  ];
  for (const [a, b, want] of cases) t.equal(compareClocks(a, b), want, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
});

t.test('labels: vectors as nonzero entries, scalars as numbers, matrices as rows', async (t) => {
  t.equal(vectorText({ p1: 3, p2: 0, p3: 1 }), 'p1:3 p3:1');
  t.equal(vectorText({ p1: 0 }), '0', 'an all-zero clock is written 0');
  t.equal(clockText(7), '7');
  t.equal(clockText({ p1: 3, p2: 1 }), 'p1:3 p2:1');
  t.equal(clockText({ p1: { p1: 2, p2: 0 }, p2: { p1: 1, p2: 1 } }), 'p1[p1:2] p2[p1:1 p2:1]');
  t.equal(clockText(null), '');
});

t.test('cutViolations: a receive inside the cut whose send is outside', async (t) => {
  const cut = new Map([
    ['p1', 2],
    ['p2', 5],
  ]);
  const cases: Array<{ name: string; sendRow: number; receiveRow: number | undefined; bad: boolean }> = [
    { name: 'sent and received inside', sendRow: 1, receiveRow: 4, bad: false },
    { name: 'sent inside, received outside (in transit)', sendRow: 2, receiveRow: 6, bad: false },
    { name: 'sent and received outside', sendRow: 3, receiveRow: 7, bad: false },
    { name: 'sent outside, received inside', sendRow: 3, receiveRow: 4, bad: true },
    { name: 'not received yet', sendRow: 3, receiveRow: undefined, bad: false },
  ];
  for (const k of cases) {
    const got = cutViolations(cut, [{ id: 'm', from: 'p1', to: 'p2', sendRow: k.sendRow, receiveRow: k.receiveRow }]);
    t.same(got, k.bad ? ['m'] : [], k.name);
  }
  t.same(
    cutViolations(new Map([['p1', 2]]), [{ id: 'm', from: 'p1', to: 'p2', sendRow: 3, receiveRow: 1 }]),
    [],
    'a process outside the cut is not checked',
  );
  t.same(messageIdsIn(['m12 on p1→p2 was sent before the cut', 'p2 had received message #3', 'm12 and m4']), [
    'm12',
    'm4',
  ]);
});

t.test('the live run: lanes, kinds, labels, arrows from send to receive', async (t) => {
  const { lab, frames } = recordedLab();
  ok(lab.send('p1', 'p2', 'a'));
  ok(lab.internalEvent('p3', 'work'));
  lab.runUntilQuiet(1000);
  ok(lab.send('p2', 'p3', 'b'));
  ok(lab.broadcast('p3', 'all'));
  lab.runUntilQuiet(1000);
  ok(lab.kvWrite('x', 'v1', 'p1'));
  ok(lab.kvRead('x', 'p2'));
  const m = modelOf(frames);
  t.same(
    m.lanes.map((l) => l.id),
    ['p1', 'p2', 'p3'],
  );
  const byHost = (h: string) => m.events.filter((e) => e.host === h).map((e) => `${e.kind} [${e.clock}] ${e.text}`);
  t.same(byHost('p1'), [
    'send [p1:1] send m1 to p2',
    'receive [p1:2 p3:2] receive m3 from p3',
    'kv_write [p1:3 p3:2] kv_write x=v1',
  ]);
  t.same(byHost('p3'), [
    'internal [p3:1] internal work',
    'send [p3:2] send m3 to p1, m4 to p2',
    'receive [p1:1 p2:2 p3:3] receive m2 from p2',
  ]);
  t.equal(byHost('p2').at(-1), 'kv_read [p1:3 p2:4 p3:2] kv_read x', 'a read absorbs the version into the reader');
  t.equal(m.messages.size, 4, 'a broadcast is one arrow per copy');
  for (const msg of m.messages.values()) {
    t.equal(msg.state, 'delivered', `${msg.id} delivered`);
    const s = m.events[msg.send] as DiagramEvent;
    const e = m.events[msg.end] as DiagramEvent;
    t.ok(e.row > s.row, `${msg.id}: the receive is drawn below its send`);
    t.same([s.host, e.host], [msg.from, msg.to]);
  }
  for (const lane of m.lanes) {
    const rows = lane.events.map((i) => (m.events[i] as DiagramEvent).row);
    t.same(
      rows,
      [...rows].sort((a, b) => a - b),
      `${lane.id}: rows grow down the lane`,
    );
    t.equal(new Set(rows).size, rows.length, `${lane.id}: one event per row`);
  }
});

t.test('held messages wait in the hold-back band; dropped ones end in a drop event', async (t) => {
  const { lab, frames } = recordedLab();
  ok(lab.setChannelFaults('p1', 'p3', { delay_ms: 500 }));
  ok(lab.send('p1', 'p3', 'slow'));
  ok(lab.send('p1', 'p2', 'fast'));
  lab.advance(20);
  ok(lab.send('p2', 'p3', 'overtakes'));
  lab.advance(50);
  const mid = modelOf(frames);
  const m3 = mid.messages.get('m3');
  t.equal(m3?.state, 'held', 'm3 waits for m1 (causal delivery)');
  t.equal(mid.events[m3?.held ?? -1]?.kind, 'held');
  lab.runUntilQuiet(2000);
  ok(lab.setChannelFaults('p1', 'p2', { drop_rate: 1 }));
  ok(lab.send('p1', 'p2', 'lost'));
  lab.runUntilQuiet(1000);
  const m = modelOf(frames);
  const held = m.messages.get('m3');
  t.equal(held?.state, 'delivered');
  const deliver = m.events[held?.end ?? -1] as DiagramEvent;
  t.equal(deliver.kind, 'deliver', 'a delivery out of the hold-back queue is a deliver event');
  t.ok(deliver.row > (m.events[held?.held ?? -1] as DiagramEvent).row, 'delivered after it was held');
  const lost = m.messages.get('m4');
  t.same([lost?.state, lost?.reason], ['dropped', 'drop_rate']);
  const drop = m.events[lost?.end ?? -1] as DiagramEvent;
  t.same(
    [drop.kind, drop.host, drop.causal],
    ['dropped', 'p2', false],
    'the drop is drawn at the receiver, outside the cones',
  );
});

t.test('snapshots become cuts with the verifier’s answer and the offending messages', async (t) => {
  const { lab, frames } = recordedLab();
  ok(lab.send('p1', 'p2', 'a', 10));
  const s = ok(lab.startSnapshot('p1'));
  ok(lab.send('p2', 'p3', 'b'));
  lab.runUntilQuiet(1000);
  const m = modelOf(frames);
  const cut = m.cuts.get(s.id);
  t.ok(cut, 'the snapshot is a cut');
  t.equal(cut?.status, 'complete');
  t.equal(cut?.consistent, true);
  t.same([...(cut?.rows.keys() ?? [])].sort(), ['p1', 'p2', 'p3'], 'every process recorded its state');
  t.ok((cut?.markers.length ?? 0) >= 6, 'markers are kept with their rows');
  t.equal(cut?.balances['p1'], 90, 'the recorded balance');
  m.applyVerify(
    s.id,
    { consistent: false, reasons: ['m1 on p1→p2 was sent before the cut but arrived after the marker'], in_transit: 1 },
    { total_balance: 300, channels: [{ from: 'p1', to: 'p2', messages: [{ id: 'm1', amount: 10, payload: 'a' }] }] },
  );
  t.same([cut?.consistent, cut?.offending, cut?.totalBalance, cut?.channels.length], [false, ['m1'], 300, 1]);
});

t.test('replays after a reconnect are skipped, gaps counted, reset clears', async (t) => {
  const { lab, frames } = recordedLab();
  ok(lab.send('p1', 'p2', 'a'));
  lab.runUntilQuiet(1000);
  const m = modelOf(frames);
  const n = m.events.length;
  for (const f of frames) t.equal(m.apply(f), false, `replayed ${f.type} #${f.seq} changes nothing`);
  t.equal(m.events.length, n);
  m.apply({
    type: 'clock_tick',
    seq: (frames.at(-1)?.seq ?? 0) + 5,
    data: { process: 'p1', cause: 'internal', clock: { p1: 9 } },
  });
  t.equal(m.gaps, 4, 'four frames lost between the lab and the page');
  t.equal(m.apply({ type: 'nonsense' }), false, 'a frame without data is ignored');
  t.equal(m.apply('not an object'), false);
  lab.reset(true);
  const reset = frames.find((f) => f.type === 'simulation_reset') as Frame;
  m.apply({ ...reset, seq: m.lastSeq + 1 });
  t.same([m.events.length, m.messages.size, m.lanes.length], [0, 0, 0], 'a reset clears the diagram');
});

t.test('the event cap: at it nothing is forgotten, past it the oldest quarter is', async (t) => {
  const { lab, frames } = recordedLab();
  for (let i = 0; i < 10; i++) ok(lab.internalEvent('p1', `e${i}`));
  const at = modelOf(frames, 10);
  t.same([at.events.length, at.forgotten], [10, 0], 'exactly at the cap');
  ok(lab.internalEvent('p1', 'e10'));
  const past = modelOf(frames, 10);
  t.ok(
    past.events.length <= 10 && past.forgotten > 0,
    `past the cap: ${past.events.length} kept, ${past.forgotten} forgotten`,
  );
  t.equal(past.events.at(-1)?.text, 'internal e10', 'the newest is kept');
  t.equal(past.events[0]?.row, 0, 'the rest is laid out again from the top');
});

t.test('forgetting the oldest keeps arrows and cuts in place on the events that stay', async (t) => {
  const { lab, frames } = recordedLab(9);
  for (let i = 0; i < 12; i++) {
    ok(lab.send('p1', 'p2', `a${i}`));
    ok(lab.send('p2', 'p3', `b${i}`));
    lab.advance(4);
    if (i === 6) ok(lab.startSnapshot('p2'));
  }
  lab.runUntilQuiet(2000);
  const full = modelOf(frames);
  const small = modelOf(frames, Math.floor(full.events.length * 0.8));
  t.ok(small.forgotten > 0, `${small.forgotten} of ${full.events.length} forgotten`);
  const shift = full.events.length - small.events.length;
  for (const e of small.events) {
    const was = full.events[e.index + shift] as DiagramEvent;
    t.same(
      [e.host, e.kind, e.clock, e.text],
      [was.host, was.kind, was.clock, was.text],
      `event ${e.index} is the same`,
    );
    const dep = e.dep >= 0 ? small.events[e.dep] : undefined;
    if (dep) t.ok(e.row > dep.row, `event ${e.index}: below its send`);
  }
  for (const lane of small.lanes) {
    const rows = lane.events.map((i) => (small.events[i] as DiagramEvent).row);
    t.same(
      rows,
      [...rows].sort((a, b) => a - b),
      `${lane.id}: rows still grow down the lane`,
    );
  }
  for (const m of small.messages.values()) {
    const wasM = full.messages.get(m.id);
    const same = (now: number, was: number | undefined): boolean =>
      now < 0 ? (was ?? -1) < shift : now + shift === was;
    t.ok(same(m.send, wasM?.send) && same(m.end, wasM?.end), `${m.id}: its ends moved with the events`);
  }
  const cut = [...small.cuts.values()][0];
  const cutFull = [...full.cuts.values()][0];
  t.ok(cut && cutFull, 'the cut is kept');
  for (const [p, r] of cut?.rows ?? []) {
    // The last event of the lane at or above the cut is the same event in both layouts.
    const lane = small.lanes[small.laneIndex(p) ?? -1];
    const lastAbove = lane?.events.filter((i) => (small.events[i] as DiagramEvent).row <= r).at(-1);
    const laneFull = full.lanes[full.laneIndex(p) ?? -1];
    const rFull = cutFull?.rows.get(p) ?? -1;
    const lastAboveFull = laneFull?.events.filter((i) => (full.events[i] as DiagramEvent).row <= rFull).at(-1);
    t.equal(
      lastAbove === undefined ? undefined : lastAbove + shift,
      lastAboveFull !== undefined && lastAboveFull >= shift ? lastAboveFull : undefined,
      `${p}: the cut passes below the same event`,
    );
  }
});

t.test('relationTo agrees with comparing whole clocks on random runs', async (t) => {
  for (const seed of [1, 2, 3]) {
    const { lab, frames } = recordedLab(seed);
    const rng = new SeededRng(seed + 100);
    const ids = ['p1', 'p2', 'p3'];
    ok(lab.spawn('p4', 'scalar'));
    ids.push('p4');
    for (let i = 0; i < 60; i++) {
      const a = ids[Math.floor(rng.next() * ids.length)] as string;
      const b = ids[Math.floor(rng.next() * ids.length)] as string;
      if (a === b || rng.next() < 0.2) ok(lab.internalEvent(a));
      else ok(lab.send(a, b, `x${i}`));
      lab.advance(Math.floor(rng.next() * 15));
    }
    lab.runUntilQuiet(5000);
    const m = modelOf(frames);
    const evs = m.events.filter((e) => e.causal);
    let mismatches = 0;
    const seen = { past: 0, future: 0, concurrent: 0 };
    for (const a of evs) {
      for (const b of evs) {
        if (a === b) continue;
        const o = compareClocks(b.vector, a.vector);
        const want = o === 'before' ? 'past' : o === 'after' ? 'future' : 'concurrent';
        const got = relationTo(a, b);
        if (got !== want) mismatches++;
        if (got !== 'self') seen[got]++;
      }
    }
    t.equal(mismatches, 0, `seed ${seed}: ${evs.length} events, every pair agrees`);
    t.ok(seen.past > 0 && seen.future > 0 && seen.concurrent > 0, `seed ${seed}: all three relations occur`);
  }
});

/** A synthetic run of `lanes` × `perLane` events, every fifth one a message to the next lane. */
function bigRun(lanes: number, perLane: number): RunModel {
  const m = new RunModel();
  const ids = Array.from({ length: lanes }, (_, i) => `p${i + 1}`);
  for (const id of ids) m.lane(id);
  for (let k = 0; k < perLane; k++) {
    for (let l = 0; l < lanes; l++) {
      const host = ids[l] as string;
      const e = m.addEvent(host, 'internal', `${host}:${k + 1}`, { [host]: k + 1 }, 'internal');
      if (k % 5 === 0) {
        const to = ids[(l + 1) % lanes] as string;
        const r = m.addEvent(to, 'receive', '', { [to]: 0 }, 'receive', e);
        m.messages.set(`m${k}-${l}`, {
          id: `m${k}-${l}`,
          from: host,
          to,
          send: e,
          end: r,
          held: -1,
          state: 'delivered',
        });
      }
    }
  }
  return m;
}

t.test('the virtual window: only the rows in view, found by binary search', async (t) => {
  const m = bigRun(20, 5000);
  t.ok(m.events.length >= 100_000, `${m.events.length} events`);
  const rows = m.rows;
  const cases = [
    { rowHeightPx: 28, scrollTopPx: 0, heightPx: 520 },
    { rowHeightPx: 28, scrollTopPx: 28 * 3000 + 7, heightPx: 520 },
    { rowHeightPx: 2, scrollTopPx: 2 * (rows - 100), heightPx: 520 },
    { rowHeightPx: 28, scrollTopPx: 28 * rows + 1000, heightPx: 520 },
  ];
  for (const w of cases) {
    const r = visibleRows(w, rows);
    const got = visibleEvents(m, r).sort((a, b) => a - b);
    const want = m.events.filter((e) => e.row >= r.from && e.row <= r.to).map((e) => e.index);
    t.same(got, want, `rows ${r.from}..${r.to} at ${w.rowHeightPx} px: ${got.length} events, as a full scan finds`);
    const msgs = visibleMessages(m, r);
    const wantMsgs = [...m.messages.values()].filter((x) => {
      const a = m.events[x.send]?.row ?? 0;
      const b = m.events[x.end]?.row ?? 0;
      return b >= r.from && a <= r.to;
    });
    t.equal(msgs.total, wantMsgs.length, 'messages crossing the window');
  }
  const first = visibleRows({ rowHeightPx: 28, scrollTopPx: 0, heightPx: 520 }, rows);
  t.same(first, { from: 0, to: Math.ceil(520 / 28) + overscanRows }, 'the first screen plus overscan');
  t.ok(visibleEvents(m, first).length < 1000, 'one screen draws hundreds of events, not 100,000');
  t.same(visibleMessages(m, { from: 0, to: rows }, 10).messages.length, 10, 'drawn messages are capped');
});

t.test('zoom keeps the row under the pointer in place, within its bounds', async (t) => {
  const rows = 10_000;
  const w = { rowHeightPx: 20, scrollTopPx: 20 * 5000, heightPx: 500 };
  const anchor = 123;
  const rowAt = (x: typeof w) => (x.scrollTopPx + anchor) / x.rowHeightPx;
  for (const f of [2, 0.5, 1.4, 1 / 1.4]) {
    const z = zoomAt(w, f, anchor, rows);
    t.ok(Math.abs(rowAt(z) - rowAt(w)) < 1e-6, `factor ${f}: the anchored row stays`);
  }
  t.equal(zoomAt(w, 1e9, anchor, rows).rowHeightPx, rowHeightPxMax, 'zoom in stops at the maximum');
  t.equal(zoomAt(w, 1e-9, anchor, rows).rowHeightPx, rowHeightPxMin, 'zoom out stops at the minimum');
  t.equal(zoomAt({ ...w, scrollTopPx: 0 }, 0.5, 0, rows).scrollTopPx, 0, 'never scrolls above the top');
  t.equal(laneWidth(1000, 20), laneWidthPxMin, 'lanes keep their minimum width');
  t.equal(laneWidth(1000, 4), 250);
});

t.test('picking a channel on the diagram: the sender first, then the receiver', async (t) => {
  const { channelFrom, channelTo, nextEnd, pickLane } = await import('../../web/clocklab/selection.js');
  const steps: Array<[string, string, string, string]> = [
    ['p1', 'p1', '', 'to'],
    ['p1', 'p1', '', 'to'],
    ['p3', 'p1', 'p3', 'from'],
    ['p2', 'p2', 'p3', 'to'],
    ['p3', 'p2', 'p3', 'from'],
    ['p3', 'p3', '', 'to'],
  ];
  for (const [click, from, to, next] of steps) {
    pickLane(click);
    t.same([channelFrom.value, channelTo.value, nextEnd.value], [from, to, next], `click ${click}`);
  }
});
