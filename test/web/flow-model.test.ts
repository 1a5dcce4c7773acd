// The message flow's model and the load generator's schedule (web/replication/flow-model.ts)
// without a browser: dots spawned from link_stats counts, the caps per link and overall, colours
// per message type, drops marked at the break, idle links, dot positions, and the open-loop
// schedule of the load generator with its bounds.
import t from 'tap';
import {
  checkLoadSettings,
  colorOfType,
  decodeLinkStats,
  dotPosition,
  FlowModel,
  flowDotsMax,
  flowDotsPerLinkMax,
  flowDotsPerLinkPerSecondMax,
  flowDropFadeMs,
  flowIdleAfterMs,
  flowTravelMsBase,
  flowTravelMsMax,
  loadBurstMax,
  loadClientsMax,
  loadKeysMax,
  loadRatePerSecondMax,
  LoadSchedule,
  quantile,
  typeFamilies,
  type LinkStatsEntryWire,
  type LinkStatsWire,
} from '../../web/replication/flow-model.js';
import { mergeSteps, demoVerdict, scenarioVerdictLines } from '../../web/replication/scenarios-logic.js';

const link = (from: string, to: string, sent: number, extra: Partial<LinkStatsEntryWire> = {}): LinkStatsEntryWire => ({
  from,
  to,
  sent,
  delivered: sent,
  bytes: sent * 40,
  in_flight: 0,
  ...extra,
});
const frame = (links: LinkStatsEntryWire[], interval = 100): LinkStatsWire => ({ interval_ms: interval, links });

/** Steps the model by 16 ms frames from `from` to `to` (ms). */
function run(m: FlowModel, from: number, to: number): void {
  for (let now = from; now <= to; now += 16) m.step(now);
}

t.test('dots spawned follow the reported rate, up to the per-link rate cap', async (t) => {
  const cases = [
    { name: 'a quiet link (10 msg/s) spawns about 10 dots a second', sentPer100ms: 1, expectPerS: 10 },
    { name: 'a link at 30 msg/s spawns about 30', sentPer100ms: 3, expectPerS: 30 },
    {
      name: `a busy link (500 msg/s) is drawn at the cap (${flowDotsPerLinkPerSecondMax}/s)`,
      sentPer100ms: 50,
      expectPerS: flowDotsPerLinkPerSecondMax,
    },
  ];
  for (const c of cases) {
    const m = new FlowModel();
    m.step(0);
    // A frame every 100 ms for one second, as the server sends them.
    for (let k = 0; k < 10; k++) {
      m.ingest(frame([link('n1', 'n2', c.sentPer100ms)]), k * 100);
      run(m, k * 100, k * 100 + 99);
    }
    t.ok(Math.abs(m.spawned - c.expectPerS) <= 2, `${c.name}: ${m.spawned} spawned`);
    const l = m.links.get('n1 n2');
    t.equal(l?.ratePerS, c.sentPer100ms * 10, `${c.name}: the link's rate is the reported one`);
  }
});

t.test('dots in flight are capped per link and overall', async (t) => {
  const m = new FlowModel();
  m.step(0);
  // A long trip (latency) keeps dots in flight; a high rate for 4 s would put 240 on the link.
  for (let k = 0; k < 40; k++) {
    m.ingest(frame([link('a', 'b', 100)]), k * 100, () => 60_000);
    run(m, k * 100, k * 100 + 99);
  }
  t.equal(m.links.get('a b')?.travelMs, flowTravelMsMax, 'a trip never takes longer than the max');
  t.ok(m.count <= flowDotsPerLinkMax, `at most ${flowDotsPerLinkMax} dots on one link (${m.count})`);
  t.equal(m.links.get('a b')?.inFlight, m.count, 'the link counts its dots');
  t.ok(m.capped > 0, 'the dots not spawned are counted');

  // Overall: many links at the per-link cap exceed the pool, which holds.
  const big = new FlowModel();
  big.step(0);
  const links: LinkStatsEntryWire[] = [];
  for (let i = 0; i < 64; i++) for (let j = 0; j < 64; j++) if (i !== j) links.push(link(`n${i}`, `n${j}`, 100));
  for (let k = 0; k < 30; k++) {
    big.ingest(frame(links), k * 100, () => 60_000);
    run(big, k * 100, k * 100 + 99);
  }
  t.equal(big.count, flowDotsMax, `the pool holds at most ${flowDotsMax} dots`);
});

t.test('dots take the types of the interval in proportion, each type its colour', async (t) => {
  const m = new FlowModel();
  m.step(0);
  for (let k = 0; k < 10; k++) {
    m.ingest(frame([link('n1', 'n2', 4, { by_type: { append: 3, heartbeat: 1 } })]), k * 100);
    run(m, k * 100, k * 100 + 99);
  }
  const counts = new Map<string, number>();
  for (let i = 0; i < m.count; i++) {
    const name = m.typeNames[m.dotType[i] as number] as string;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const appends = counts.get('append') ?? 0;
  const beats = counts.get('heartbeat') ?? 0;
  t.ok(appends + beats === m.count, 'only the reported types');
  t.ok(Math.abs(appends / m.count - 0.75) < 0.1, `about 3 appends to 1 heartbeat (${appends}:${beats})`);
  t.equal(m.typeColors[m.typeNames.indexOf('append')], colorOfType('append'), 'a type is drawn in its colour');

  const colours = [
    { type: 'append', family: 'replication' },
    { type: 'put', family: 'replication' },
    { type: 'append_resp', family: 'acknowledgement' },
    { type: 'heartbeat', family: 'heartbeat' },
    { type: 'vote_req', family: 'election' },
    { type: 'get', family: 'read' },
    { type: 'anti_entropy_pull', family: 'anti-entropy' },
    { type: 'handoff', family: 'handoff' },
    { type: 'refuse', family: 'refusal' },
  ];
  for (const c of colours) {
    const fam = typeFamilies.find((f) => f.name === c.family);
    t.equal(colorOfType(c.type), fam?.color, `${c.type} is drawn in the ${c.family} colour`);
  }
  t.equal(colorOfType('some_new_kind'), colorOfType('some_new_kind'), 'an unknown type always gets the same colour');
  t.notOk(
    typeFamilies.some((f) => f.color === colorOfType('some_new_kind')),
    'and not a family colour (it would say the wrong thing)',
  );
  const noTypes = new FlowModel();
  noTypes.step(0);
  noTypes.ingest(frame([link('x', 'y', 5)]), 0);
  run(noTypes, 0, 99);
  t.ok(noTypes.count > 0 && noTypes.typeNames[noTypes.dotType[0] as number] === 'other', 'untyped counts are other');
});

t.test('a share of the dots is dropped at the break, as the interval reported', async (t) => {
  const cases = [
    { name: 'no drops', dropped: {}, share: 0 },
    { name: 'a quarter lost to the drop rate', dropped: { rate: 1 }, share: 0.25 },
    { name: 'all lost to a partition', dropped: { partition: 4 }, share: 1 },
  ];
  for (const c of cases) {
    const m = new FlowModel();
    m.step(0);
    for (let k = 0; k < 10; k++) {
      m.ingest(frame([link('n1', 'n2', 4, { dropped: c.dropped })]), k * 100);
      run(m, k * 100, k * 100 + 99);
    }
    t.ok(Math.abs(m.spawnedDropped / m.spawned - c.share) < 0.05, `${c.name}: ${m.spawnedDropped} of ${m.spawned}`);
  }
  // A dropped dot stops at the middle and fades out.
  const m = new FlowModel();
  m.step(0);
  m.ingest(frame([link('n1', 'n2', 10, { dropped: { rate: 10 } })]), 0);
  m.step(100);
  t.ok(m.count > 0, 'dots spawned');
  const out = { x: 0, y: 0, alpha: 1, stoppedAtDrop: false };
  const a = { x: 0, y: 0 };
  const b = { x: 100, y: 0 };
  const born = m.dotBorn[0] as number;
  const travel = m.dotTravel[0] as number;
  dotPosition(m, 0, born + travel * 0.25, a, b, 0, out);
  t.ok(Math.abs(out.x - 25) < 1e-6 && !out.stoppedAtDrop, 'on its way at a quarter of the trip');
  dotPosition(m, 0, born + travel * 0.9, a, b, 0, out);
  t.ok(Math.abs(out.x - 50) < 1e-6 && out.stoppedAtDrop, 'stopped at the break');
  t.ok(out.alpha > 0 && out.alpha < 1, 'fading');
  // Every dot of that step was born by 100 ms: all stopped at the middle, faded, and gone.
  m.ingest(frame([]), 100);
  m.step(100 + travel * 0.5 + flowDropFadeMs + 1);
  t.equal(m.count, 0, 'gone once faded');
});

t.test('a link with no frame is idle, and the animation stops when nothing moves', async (t) => {
  const m = new FlowModel();
  t.notOk(m.active(), 'nothing yet');
  m.step(0);
  m.ingest(frame([link('n1', 'n2', 5), link('n2', 'n3', 5)]), 0);
  run(m, 0, 99);
  t.ok(m.active(), 'moving');
  // The next frame lists only n1→n2: n2→n3 had no traffic.
  m.ingest(frame([link('n1', 'n2', 5)]), 100);
  t.equal(m.links.get('n2 n3')?.ratePerS, 0, 'a link missing from a frame had no traffic');
  // No frame at all for longer than the idle time: every link stops spawning.
  run(m, 100, 100 + flowIdleAfterMs + 50);
  t.equal(m.links.get('n1 n2')?.ratePerS, 0, `no frame for ${flowIdleAfterMs} ms: idle`);
  run(m, 500, 500 + flowTravelMsBase + 20_000);
  t.equal(m.count, 0, 'every dot arrived');
  t.notOk(m.active(), 'nothing moves: the loop may stop');
});

t.test('the rate labels: the busiest pairs, both directions summed', async (t) => {
  const m = new FlowModel();
  m.step(0);
  for (let k = 0; k < 40; k++) {
    m.ingest(frame([link('n1', 'n2', 10), link('n2', 'n1', 10), link('n1', 'n3', 2)]), k * 100);
    run(m, k * 100, k * 100 + 99);
  }
  const top = m.busiest(8);
  t.equal(top.length, 2, 'two pairs with traffic');
  t.same([top[0]?.a, top[0]?.b], ['n1', 'n2'], 'the busiest first');
  t.ok(Math.abs((top[0]?.ratePerS ?? 0) - 200) < 20, `n1↔n2 near 200 msg/s (${top[0]?.ratePerS.toFixed(1)})`);
  t.ok(Math.abs((top[1]?.ratePerS ?? 0) - 20) < 3, `n1↔n3 near 20 msg/s (${top[1]?.ratePerS.toFixed(1)})`);
  t.equal(m.busiest(1).length, 1, 'at most as many as asked');
});

t.test('decodeLinkStats takes a frame and refuses what is not one', async (t) => {
  t.ok(decodeLinkStats({ interval_ms: 100, links: [] }), 'a frame');
  for (const bad of [null, 3, {}, { interval_ms: '100', links: [] }, { interval_ms: 100 }]) {
    t.equal(decodeLinkStats(bad), null, `refused: ${JSON.stringify(bad)}`);
  }
});

t.test('the load schedule: the rate, bounded by the free clients, skips counted', async (t) => {
  const cases = [
    { name: '100 ops/s for 1 s with clients free', rate: 100, clients: 8, busy: 0, ms: 1000, started: 100, skipped: 0 },
    { name: 'every client busy: all skipped', rate: 100, clients: 4, busy: 4, ms: 1000, started: 0, skipped: 100 },
    { name: '10 ops/s for 0.5 s', rate: 10, clients: 1, busy: 0, ms: 500, started: 5, skipped: 0 },
  ];
  for (const c of cases) {
    const s = new LoadSchedule({ clients: c.clients, ratePerS: c.rate, keys: 10, readShare: 0.5 });
    s.tick(0, c.busy);
    for (let now = 20; now <= c.ms; now += 20) s.tick(now, c.busy);
    t.equal(s.started, c.started, `${c.name}: started`);
    t.equal(s.skipped, c.skipped, `${c.name}: skipped`);
  }
  // One client free per tick: at most that many start; a long pause does not release a burst past the cap.
  const s = new LoadSchedule({ clients: 2, ratePerS: 1000, keys: 10, readShare: 0 });
  s.tick(0, 0);
  t.equal(s.tick(20, 1), 1, 'due 20, one client free: one starts');
  const burst = new LoadSchedule({ clients: loadClientsMax, ratePerS: loadRatePerSecondMax, keys: 10, readShare: 0 });
  burst.tick(0, 0);
  t.ok(burst.tick(10_000, 0) <= loadBurstMax, `a 10-s pause starts at most ${loadBurstMax}`);
});

t.test('the load settings are checked at and past their bounds', async (t) => {
  const ok = { clients: 4, ratePerS: 50, keys: 100, readShare: 0.5 };
  const cases: Array<{ name: string; s: typeof ok; valid: boolean }> = [
    { name: 'the defaults', s: ok, valid: true },
    { name: `clients at ${loadClientsMax}`, s: { ...ok, clients: loadClientsMax }, valid: true },
    { name: `clients past ${loadClientsMax}`, s: { ...ok, clients: loadClientsMax + 1 }, valid: false },
    { name: 'no client', s: { ...ok, clients: 0 }, valid: false },
    { name: `rate at ${loadRatePerSecondMax}`, s: { ...ok, ratePerS: loadRatePerSecondMax }, valid: true },
    { name: `rate past ${loadRatePerSecondMax}`, s: { ...ok, ratePerS: loadRatePerSecondMax + 1 }, valid: false },
    { name: 'rate 0', s: { ...ok, ratePerS: 0 }, valid: false },
    { name: `keys at ${loadKeysMax}`, s: { ...ok, keys: loadKeysMax }, valid: true },
    { name: `keys past ${loadKeysMax}`, s: { ...ok, keys: loadKeysMax + 1 }, valid: false },
    { name: 'a fraction of a key', s: { ...ok, keys: 1.5 }, valid: false },
    { name: 'reads past 100%', s: { ...ok, readShare: 1.01 }, valid: false },
    { name: 'rate not a number', s: { ...ok, ratePerS: Number.NaN }, valid: false },
  ];
  for (const c of cases) t.equal(checkLoadSettings(c.s).ok, c.valid, c.name);
});

t.test('quantiles by nearest rank', async (t) => {
  const xs = () => [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
  t.equal(quantile(xs(), 0.5), 5, 'p50 of 1..10');
  t.equal(quantile(xs(), 0.99), 10, 'p99 of 1..10');
  t.equal(quantile(new Float64Array([3, 1, 2]), 0), 1, 'p0 is the least');
  t.ok(Number.isNaN(quantile([], 0.5)), 'none: NaN');
});

t.test('narration: steps merged by number, verdicts in words', async (t) => {
  const merged = mergeSteps(
    [
      { n: 2, text: 'b' },
      { n: 1, text: 'a' },
    ],
    [
      { n: 3, text: 'c' },
      { n: 2, text: 'b' },
    ],
  );
  t.same(
    merged.map((s) => s.n),
    [1, 2, 3],
    'an event and the report bring a step once, in order',
  );
  const v = scenarioVerdictLines({
    expected: 'lag shows',
    actual: '',
    passed: false,
    checks: [
      { name: 'lag', passed: true, detail: '3 entries' },
      { name: 'catch-up', passed: false, detail: 'not within 2 s' },
    ],
  });
  t.equal(v.passed, false);
  t.same(v.lines, ['Expected: lag shows', '✓ lag: 3 entries', '✗ catch-up: not within 2 s']);
  const cases = [
    { value: 'demo:2pc', body: { committed: true, blocked: false }, passed: true },
    { value: 'demo:2pc-crash', body: { committed: false, blocked: true }, passed: true },
    { value: 'demo:paxos', body: { safety_held: true, validity_held: false }, passed: false },
    { value: 'demo:swim', body: { detected: true, false_positives: 0 }, passed: true },
    { value: 'demo:wal', body: { lost: 3, acked: 10, recovered: 7 }, passed: null },
    { value: 'demo:wal-fsync', body: { lost: 0, acked: 10, recovered: 10 }, passed: true },
    {
      value: 'demo:mvcc',
      body: {
        snapshot_stable: true,
        new_reader_sees_new_values: true,
        write_conflict_detected: true,
        first_committer_wins: true,
      },
      passed: true,
    },
    { value: 'demo:detsim', body: { reproducible: true, different_seed_differs: true }, passed: true },
  ];
  for (const c of cases) t.equal(demoVerdict(c.value, c.body).passed, c.passed, `${c.value}: ${String(c.passed)}`);
});
