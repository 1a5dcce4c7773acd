import t from 'tap';
import { Fabric, type Delivery, type SubmitOutcome } from '../../src/fabric/fabric.js';
import { SeededRng } from '../../src/util/rng.js';

type Msg = { seq: number; from: string; earliest?: number };

function fabricOf(ids: string[], opts: { seed?: number; linkQueueMax?: number; inboxMax?: number } = {}): Fabric<Msg> {
  const f = new Fabric<Msg>({
    rng: new SeededRng(opts.seed ?? 1),
    linkQueueMax: opts.linkQueueMax,
    inboxMax: opts.inboxMax,
  });
  for (const id of ids) f.addNode(id);
  return f;
}

/** Delivers everything due at `now`, recording (to, batch) pairs in call order. */
function collect<P>(f: Fabric<P>, now: number): Array<{ to: string; batch: Array<Delivery<P>> }> {
  const calls: Array<{ to: string; batch: Array<Delivery<P>> }> = [];
  f.deliverDue(now, (to, batch) => calls.push({ to, batch }));
  return calls;
}

/** Runs the fabric to quiescence by jumping to nextDueAt; returns every delivery with its time. */
function drainAll<P>(f: Fabric<P>, from = 0): Array<{ at: number; to: string; d: Delivery<P> }> {
  const out: Array<{ at: number; to: string; d: Delivery<P> }> = [];
  let now = from;
  for (let guard = 0; guard < 1_000_000; guard++) {
    const due = f.nextDueAt();
    if (due === Infinity) break;
    now = Math.max(now, due);
    f.deliverDue(now, (to, batch) => {
      for (const d of batch) out.push({ at: now, to, d });
    });
  }
  return out;
}

t.test('node membership: addNode is idempotent, unknown nodes are refused and counted', async (t) => {
  const f = fabricOf(['a', 'b']);
  f.addNode('a');
  t.same(f.nodes(), ['a', 'b']);
  t.ok(f.hasNode('a'));
  t.notOk(f.hasNode('z'));
  t.equal(f.submit('a', 'z', { seq: 0, from: 'a' }, 0), 'dropped_unknown_node');
  t.equal(f.submit('z', 'a', { seq: 0, from: 'z' }, 0), 'dropped_unknown_node');
  t.equal(f.stats().dropped_unknown_node, 2);
  t.equal(f.stats().submitted, 2);
  t.equal(f.nextDueAt(), Infinity);
});

t.test('latency is honoured: nothing is delivered before its time, and it arrives exactly then', async (t) => {
  const f = fabricOf(['a', 'b', 'c']);
  const cases: Array<{ from: string; to: string; ms: number }> = [
    { from: 'a', to: 'b', ms: 0 },
    { from: 'a', to: 'c', ms: 25 },
    { from: 'b', to: 'a', ms: 100 },
    { from: 'c', to: 'b', ms: 7.5 },
  ];
  for (const c of cases) f.setLatency(c.from, c.to, c.ms);
  t.equal(f.latency('a', 'c'), 25, 'latency reads back');
  t.equal(f.latency('c', 'a'), 0, 'latency is one-way');
  for (const [i, c] of cases.entries()) t.equal(f.submit(c.from, c.to, { seq: i, from: c.from }, 10), 'queued');
  t.equal(f.nextDueAt(), 10);
  const got = drainAll(f, 10);
  t.equal(got.length, cases.length);
  for (const g of got) {
    const c = cases[g.d.payload.seq]!;
    t.equal(g.at, 10 + c.ms, `${c.from}->${c.to} arrives at submit time + ${c.ms}`);
    t.equal(g.to, c.to);
    t.equal(g.d.from, c.from);
  }
  // A delivery attempt just before the due time hands over nothing.
  f.submit('b', 'a', { seq: 99, from: 'b' }, 1000);
  t.equal(
    f.deliverDue(1099.9, () => t.fail('must not deliver early')),
    0,
  );
  t.equal(
    f.deliverDue(1100, () => undefined),
    1,
  );
});

t.test('per-link FIFO holds under random latency changes, for every link', async (t) => {
  const ids = ['n1', 'n2', 'n3', 'n4'];
  const f = fabricOf(ids);
  const rng = new SeededRng(7);
  const sent = new Map<string, number>();
  let now = 0;
  const lastSeen = new Map<string, number>();
  let violations = 0;
  let deliveredCount = 0;
  let queued = 0;
  let early = 0;
  const sink = (to: string, batch: Array<Delivery<Msg>>): void => {
    for (const d of batch) {
      const key = `${d.from}->${to}`;
      const prev = lastSeen.get(key) ?? -1;
      if (d.payload.seq !== prev + 1) violations++;
      if (d.payload.earliest !== undefined && now < d.payload.earliest) early++;
      lastSeen.set(key, d.payload.seq);
      deliveredCount++;
    }
  };
  for (let step = 0; step < 5000; step++) {
    const from = ids[rng.int(ids.length)]!;
    const to = ids[rng.int(ids.length)]!;
    if (rng.chance(0.2)) f.setLatency(from, to, rng.int(200));
    const key = `${from}->${to}`;
    const seq = sent.get(key) ?? 0;
    sent.set(key, seq + 1);
    if (f.submit(from, to, { seq, from, earliest: now + f.latency(from, to) }, now) === 'queued') queued++;
    now += rng.int(5);
    if (rng.chance(0.3)) f.deliverDue(now, sink);
  }
  for (const g of drainAll(f, now)) {
    now = g.at;
    sink(g.to, [g.d]);
  }
  t.equal(queued, 5000, 'every submit was queued');
  t.equal(early, 0, 'nothing arrived before submit time + latency');
  t.equal(violations, 0, 'every link delivered 0,1,2,... in order');
  t.equal(deliveredCount, 5000);
  t.equal(f.stats().delivered, 5000);
  t.equal(f.stats().in_flight, 0);
});

t.test('a message sent after a latency drop waits behind the slower message ahead of it', async (t) => {
  const f = fabricOf(['a', 'b']);
  f.setLatency('a', 'b', 100);
  f.submit('a', 'b', { seq: 0, from: 'a' }, 0);
  f.setLatency('a', 'b', 0);
  f.submit('a', 'b', { seq: 1, from: 'a' }, 10);
  t.equal(
    f.deliverDue(50, () => undefined),
    0,
    'the faster message does not overtake',
  );
  const calls = collect(f, 100);
  t.same(
    calls.map((c) => c.batch.map((d) => d.payload.seq)),
    [[0, 1]],
  );
});

t.test('deliverDue makes one sink call per destination, in slot order, with each link in FIFO order', async (t) => {
  const f = fabricOf(['a', 'b', 'c']);
  f.submit('c', 'b', { seq: 0, from: 'c' }, 0);
  f.submit('a', 'b', { seq: 0, from: 'a' }, 0);
  f.submit('b', 'a', { seq: 0, from: 'b' }, 0);
  f.submit('a', 'b', { seq: 1, from: 'a' }, 0);
  f.submit('c', 'b', { seq: 1, from: 'c' }, 0);
  const calls = collect(f, 0);
  t.same(
    calls.map((c) => c.to),
    ['a', 'b'],
    'destinations in the order nodes were added',
  );
  const toB = calls[1]!.batch.map((d) => `${d.from}${d.payload.seq}`);
  t.same(toB, ['a0', 'a1', 'c0', 'c1'], 'links in slot order, each in FIFO order');
  t.equal(f.stats().delivered, 5);
});

t.test('drop rates: 0 and 1 are exact, 0.3 over 10,000 messages is close to 0.3, and a seed replays', async (t) => {
  const cases: Array<{ rate: number; lo: number; hi: number }> = [
    { rate: 0, lo: 10_000, hi: 10_000 },
    { rate: 1, lo: 0, hi: 0 },
    // 0.7 * 10,000 = 7,000 delivered, standard deviation ~46: +-200 is more than 4 sigma.
    { rate: 0.3, lo: 6_800, hi: 7_200 },
  ];
  for (const c of cases) {
    const outcomes: SubmitOutcome[] = [];
    const run = (): number => {
      const f = fabricOf(['a', 'b'], { seed: 42, linkQueueMax: 20_000 });
      f.setDropRate('a', 'b', c.rate);
      for (let i = 0; i < 10_000; i++) outcomes.push(f.submit('a', 'b', { seq: i, from: 'a' }, 0));
      const delivered = f.deliverDue(0, () => undefined);
      t.equal(f.stats().dropped_rate, 10_000 - delivered, `rate ${c.rate}: drops counted as dropped_rate`);
      t.equal(f.stats().dropped_full, 0, `rate ${c.rate}: no back-pressure drops`);
      return delivered;
    };
    const first = run();
    const firstOutcomes = outcomes.splice(0);
    const second = run();
    t.ok(first >= c.lo && first <= c.hi, `rate ${c.rate}: ${first} delivered, expected ${c.lo}..${c.hi}`);
    t.equal(second, first, `rate ${c.rate}: the same seed drops the same messages`);
    t.same(outcomes, firstOutcomes);
  }
  const f = fabricOf(['a', 'b']);
  f.setDropRate('a', 'b', 1);
  t.equal(f.dropRate('a', 'b'), 1);
  t.equal(f.dropRate('b', 'a'), 0, 'drop rate is one-way');
  t.equal(f.submit('b', 'a', { seq: 0, from: 'b' }, 0), 'queued');
});

t.test('partitions block both ways, drop in-flight messages on arrival, and heal', async (t) => {
  const f = fabricOf(['n1', 'n2', 'n3']);
  const drops: string[] = [];
  f.onDrop = (from, to, outcome) => drops.push(`${from}->${to}:${outcome}`);
  f.setLatency('n1', 'n2', 50);
  t.equal(f.submit('n1', 'n2', { seq: 0, from: 'n1' }, 0), 'queued', 'in flight before the partition');
  const p = f.partition(['n1'], ['n2', 'n3']);
  t.equal(p, 'p1');
  t.equal(f.partition(['n2'], ['n3']), 'p2', 'ids count up');
  t.ok(f.heal('p2'));
  const blockCases: Array<{ from: string; to: string; blocked: boolean }> = [
    { from: 'n1', to: 'n2', blocked: true },
    { from: 'n2', to: 'n1', blocked: true },
    { from: 'n3', to: 'n1', blocked: true },
    { from: 'n2', to: 'n3', blocked: false },
    { from: 'n1', to: 'n1', blocked: false },
  ];
  for (const c of blockCases) {
    t.equal(f.isBlocked(c.from, c.to), c.blocked, `${c.from}->${c.to} blocked=${c.blocked}`);
    t.equal(f.submit(c.from, c.to, { seq: 1, from: c.from }, 0), c.blocked ? 'dropped_partition' : 'queued');
  }
  t.same([...f.partitions().entries()], [['p1', { groupA: ['n1'], groupB: ['n2', 'n3'] }]]);
  const got = drainAll(f, 0);
  t.same(got.map((g) => `${g.d.from}->${g.to}`).sort(), ['n1->n1', 'n2->n3'], 'only unblocked traffic arrives');
  t.equal(f.stats().dropped_partition, 4, 'three at submit and one in flight on arrival');
  t.ok(drops.includes('n1->n2:dropped_partition'));
  t.equal(f.heal('p1'), true);
  t.equal(f.heal('p1'), false, 'a healed partition is unknown');
  t.equal(f.heal('nope'), false);
  t.equal(f.isBlocked('n1', 'n2'), false);
  t.equal(f.submit('n2', 'n1', { seq: 2, from: 'n2' }, 100), 'queued', 'traffic flows after healing');
  t.equal(
    f.deliverDue(100, () => undefined),
    1,
  );
});

t.test('a link created after a partition is blocked from the start; clearFaults removes every override', async (t) => {
  const f = fabricOf(['a', 'b', 'c']);
  f.partition(['a'], ['b']);
  f.setLatency('c', 'a', 30);
  f.setDropRate('c', 'b', 1);
  t.equal(f.submit('b', 'a', { seq: 0, from: 'b' }, 0), 'dropped_partition');
  f.clearFaults();
  t.equal(f.partitions().size, 0);
  t.equal(f.latency('c', 'a'), 0);
  t.equal(f.dropRate('c', 'b'), 0);
  t.equal(f.submit('b', 'a', { seq: 1, from: 'b' }, 0), 'queued');
  t.equal(f.submit('c', 'b', { seq: 1, from: 'c' }, 0), 'queued');
  t.equal(
    f.deliverDue(0, () => undefined),
    2,
  );
});

t.test('a full link queue drops past linkQueueMax and counts it as back-pressure', async (t) => {
  const f = fabricOf(['a', 'b'], { linkQueueMax: 4 });
  f.setLatency('a', 'b', 10);
  const outcomes = Array.from({ length: 6 }, (_, i) => f.submit('a', 'b', { seq: i, from: 'a' }, 0));
  t.same(outcomes, ['queued', 'queued', 'queued', 'queued', 'dropped_full', 'dropped_full']);
  t.equal(f.submit('b', 'a', { seq: 0, from: 'b' }, 0), 'queued', 'the cap is per link');
  t.match(f.stats(), { dropped_full: 2, in_flight: 5, submitted: 7 });
  f.deliverDue(10, () => undefined);
  t.equal(f.submit('a', 'b', { seq: 6, from: 'a' }, 10), 'queued', 'room again once delivered');
});

t.test(
  'a paused node holds at most inboxMax messages, counts the overflow, and gets them in order on resume',
  async (t) => {
    const f = fabricOf(['a', 'b', 'c'], { inboxMax: 5 });
    f.setDeliverable('b', false);
    t.notOk(f.isDeliverable('b'));
    for (let i = 0; i < 4; i++) f.submit('a', 'b', { seq: i, from: 'a' }, i);
    for (let i = 0; i < 4; i++) f.submit('c', 'b', { seq: i, from: 'c' }, i);
    f.submit('a', 'c', { seq: 0, from: 'a' }, 0);
    const calls = collect(f, 10);
    t.same(
      calls.map((c) => c.to),
      ['c'],
      'only the running node gets messages',
    );
    t.match(f.stats(), { queued_in_inboxes: 5, dropped_full: 3, in_flight: 0 });
    t.equal(f.nextDueAt(), Infinity, 'nothing deliverable while paused');
    f.setDeliverable('b', true);
    t.equal(f.nextDueAt(), 0, 'held messages are due since the first became due');
    const resumed = collect(f, 20);
    t.equal(resumed.length, 1);
    t.same(
      resumed[0]!.batch.map((d) => `${d.from}${d.payload.seq}`),
      ['a0', 'a1', 'a2', 'a3', 'c0'],
      'held in arrival order',
    );
    t.match(f.stats(), { queued_in_inboxes: 0, delivered: 6 });
  },
);

t.test('removing a node discards its queues and links and takes it out of partitions', async (t) => {
  const f = fabricOf(['a', 'b', 'c']);
  f.setLatency('a', 'b', 10);
  f.setLatency('b', 'c', 10);
  f.submit('a', 'b', { seq: 0, from: 'a' }, 0);
  f.submit('b', 'c', { seq: 0, from: 'b' }, 0);
  f.submit('a', 'c', { seq: 0, from: 'a' }, 5);
  f.partition(['b'], ['a', 'c']);
  f.removeNode('b');
  f.removeNode('b');
  t.notOk(f.hasNode('b'));
  t.same([...f.partitions().values()], [{ groupA: [], groupB: ['a', 'c'] }]);
  t.match(f.stats(), { discarded_on_remove: 2, in_flight: 1 });
  t.equal(f.nextDueAt(), 5);
  t.same(
    drainAll(f).map((g) => `${g.d.from}->${g.to}`),
    ['a->c'],
  );
  f.addNode('b');
  t.same(f.nodes(), ['a', 'b', 'c'], 'a re-added node takes the free slot');
  t.equal(f.latency('a', 'b'), 0, 'link settings went with the node');
  t.equal(f.submit('a', 'b', { seq: 1, from: 'a' }, 20), 'queued');
  t.equal(
    f.deliverDue(20, () => undefined),
    1,
  );
});

t.test('a sink may submit while being called; zero-latency replies are due at the same time', async (t) => {
  const f = fabricOf(['a', 'b']);
  f.submit('a', 'b', { seq: 0, from: 'a' }, 0);
  let rounds = 0;
  let now = 0;
  while (f.nextDueAt() <= now && rounds < 10) {
    f.deliverDue(now, (to, batch) => {
      for (const d of batch) if (d.payload.seq < 5) f.submit(to, d.from, { seq: d.payload.seq + 1, from: to }, now);
    });
    rounds++;
  }
  t.equal(rounds, 6, 'ping-pong of 6 messages, one per round');
  t.equal(f.stats().delivered, 6);
  now = 1;
  t.equal(f.nextDueAt(), Infinity);
});

t.test(
  'counters balance under random operations: every submitted message is delivered, dropped, queued or discarded',
  async (t) => {
    for (const seed of [1, 2, 3]) {
      const rng = new SeededRng(seed);
      const ids = ['a', 'b', 'c', 'd'];
      const f = fabricOf(ids, { seed, linkQueueMax: 8, inboxMax: 4 });
      let now = 0;
      let handed = 0;
      let imbalanced = 0;
      for (let step = 0; step < 3000; step++) {
        const a = ids[rng.int(ids.length)]!;
        const b = ids[rng.int(ids.length)]!;
        switch (rng.int(12)) {
          case 0:
            f.setLatency(a, b, rng.int(30));
            break;
          case 1:
            f.setDropRate(a, b, rng.next());
            break;
          case 2:
            if (f.partitions().size > 1) f.clearFaults();
            else
              f.partition(
                [a],
                ids.filter((x) => x !== a),
              );
            break;
          case 3:
            f.setDeliverable(a, !f.isDeliverable(a));
            break;
          case 4:
            if (rng.chance(0.2)) f.removeNode(a);
            else f.addNode(a);
            break;
          case 5:
            now += rng.int(10);
            handed += f.deliverDue(now, () => undefined);
            break;
          default:
            f.submit(a, b, { seq: step, from: a }, now);
        }
        const s = f.stats();
        const accounted =
          s.delivered +
          s.dropped_full +
          s.dropped_rate +
          s.dropped_partition +
          s.dropped_unknown_node +
          s.discarded_on_remove +
          s.in_flight +
          s.queued_in_inboxes;
        if (accounted !== s.submitted) imbalanced++;
      }
      t.equal(imbalanced, 0, `seed ${seed}: submitted = delivered + drops + queued after every operation`);
      t.equal(f.stats().delivered, handed, `seed ${seed}: delivered counts what sinks received`);
      t.ok(
        f.stats().dropped_full > 0 && f.stats().dropped_partition > 0 && f.stats().dropped_rate > 0,
        `seed ${seed}: every drop cause occurred`,
      );
    }
  },
);

t.test('deliverDueLists hands what deliverDue hands, as parallel lists reused between calls', async (t) => {
  // Two fabrics driven alike (same seed, latencies, drops, a paused node made deliverable again).
  const drive = (f: Fabric<Msg>, deliver: (now: number) => void): void => {
    const ids = f.nodes();
    const r = new SeededRng(9);
    f.setDropRate('a', 'c', 0.3);
    for (let now = 0; now < 400; now++) {
      if (now === 50) f.setDeliverable('b', false);
      if (now === 120) f.setDeliverable('b', true);
      for (let k = 0; k < 3; k++) {
        const from = ids[r.int(ids.length)] as string;
        const to = ids[r.int(ids.length)] as string;
        if (r.chance(0.2)) f.setLatency(from, to, r.int(30));
        f.submit(from, to, { seq: now * 10 + k, from }, now);
      }
      deliver(now);
    }
  };
  const plain = fabricOf(['a', 'b', 'c'], { seed: 4, inboxMax: 8 });
  const lists = fabricOf(['a', 'b', 'c'], { seed: 4, inboxMax: 8 });
  const want: string[] = [];
  const got: string[] = [];
  const seen = new Set<readonly string[]>();
  drive(plain, (now) =>
    plain.deliverDue(now, (to, batch) => want.push(`${now} ${to} ${batch.map((d) => `${d.from}:${d.payload.seq}`)}`)),
  );
  drive(lists, (now) =>
    lists.deliverDueLists(now, (to, froms, payloads) => {
      seen.add(froms);
      got.push(`${now} ${to} ${froms.map((from, i) => `${from}:${payloads[i]?.seq}`)}`);
    }),
  );
  t.ok(want.length > 100, `${want.length} batches`);
  t.same(got, want, 'the same batches, in the same order');
  t.same(lists.stats(), plain.stats(), 'the same counters');
  t.ok(seen.size <= 6, `two lists per node, reused (${seen.size} seen)`);
});
