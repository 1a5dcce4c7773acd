/**
 * Unit tests of the pieces behind /ws link_stats and GET .../history: the message-type reader
 * (messageKindTag) on real msgpack bytes, the sampler's per-interval deltas over a real Fabric
 * (counts that add up: sent = delivered + dropped + change of in_flight), the fabric's fault-change
 * notifications, the fault log, and HistoryRing's paging.
 */
import t from 'tap';
import { encode } from '../../protocol/actor.js';
import { Fabric, type FabricFaultChange } from '../../src/fabric/fabric.js';
import { SeededRng } from '../../src/util/rng.js';
import {
  kindName,
  LinkStatsSampler,
  linkTotals,
  messageKindTag,
  otherKindTag,
  type LinkStatsEntry,
} from '../../src/replication/link-stats.js';
import { FaultLog, HistoryRing, toHistoryRecord } from '../../src/replication/history.js';
import { faultIntervalsMax, linkStatsKindCharsMax } from '../../src/replication/limits.js';

t.test('messageKindTag reads the type from the first key of a msgpack map, and nothing else', async (t) => {
  const many: Record<string, number> = {};
  for (let i = 0; i < 20; i++) many[`f${i}`] = i;
  const cases: Array<{ name: string; bytes: Uint8Array; kind: string }> = [
    {
      name: 'raft append tagged kind',
      bytes: encode({ kind: 'append', term: 3, entries: [{ index: 1 }] }),
      kind: 'append',
    },
    { name: 'a one-letter tag t (older cores)', bytes: encode({ t: 'hb', hlc: 12 }), kind: 'hb' },
    { name: 'a tag called type', bytes: encode({ type: 'gossip', n: 1 }), kind: 'gossip' },
    { name: 'a map of more than 15 keys (map16)', bytes: encode({ kind: 'big_map', ...many }), kind: 'big_map' },
    {
      name: `a name of exactly ${linkStatsKindCharsMax} characters (str8)`,
      bytes: encode({ kind: 'k'.repeat(linkStatsKindCharsMax) }),
      kind: 'k'.repeat(linkStatsKindCharsMax),
    },
    {
      name: 'a name past the length cap',
      bytes: encode({ kind: 'k'.repeat(linkStatsKindCharsMax + 1) }),
      kind: 'other',
    },
    { name: 'the tag not first', bytes: encode({ term: 3, kind: 'append' }), kind: 'other' },
    { name: 'a non-string tag', bytes: encode({ kind: 7 }), kind: 'other' },
    { name: 'an empty name', bytes: encode({ kind: '' }), kind: 'other' },
    { name: 'a non-ASCII name', bytes: encode({ kind: 'héllo' }), kind: 'other' },
    { name: 'an array, not a map', bytes: encode(['append', 1]), kind: 'other' },
    { name: 'an empty map', bytes: encode({}), kind: 'other' },
    { name: 'no bytes', bytes: new Uint8Array(0), kind: 'other' },
    { name: 'bytes cut inside the name', bytes: encode({ kind: 'append_resp' }).slice(0, 9), kind: 'other' },
  ];
  for (const c of cases) t.equal(kindName(messageKindTag(c.bytes)), c.kind, c.name);
  const a = messageKindTag(encode({ kind: 'vote_req', term: 1 }));
  t.not(a, otherKindTag, 'a readable type gets its own tag');
  t.equal(
    messageKindTag(encode({ kind: 'vote_req', term: 99, extra: 'x' })),
    a,
    'the same type always gets the same tag',
  );
  t.not(messageKindTag(encode({ kind: 'vote_resp' })), a, 'another type gets another tag');
  t.equal(messageKindTag(encode({ t: 'vote_req' })), a, 'the name decides, not the key that carried it');
});

/** A 3-node fabric with no latency (messages are due at once). */
function fabric3(): Fabric<Uint8Array> {
  const f = new Fabric<Uint8Array>({ rng: new SeededRng(7) });
  for (const id of ['n1', 'n2', 'n3']) f.addNode(id);
  return f;
}
const msg = (kind: string): Uint8Array => encode({ kind, term: 1 });
function send(f: Fabric<Uint8Array>, from: string, to: string, kind: string, now: number): void {
  const b = msg(kind);
  f.submit(from, to, b, now, b.byteLength, messageKindTag(b));
}
const byLink = (links: LinkStatsEntry[] | undefined): Record<string, LinkStatsEntry> =>
  Object.fromEntries((links ?? []).map((l) => [`${l.from}>${l.to}`, l]));

t.test("the sampler reports each link's traffic over the interval, by type, with drops by cause", async (t) => {
  const f = fabric3();
  send(f, 'n1', 'n2', 'before', 0);
  const s = new LinkStatsSampler(f, 0);
  t.equal(s.sample(50), undefined, 'no traffic since the sampler started: nothing to send');
  f.deliverDue(60, () => undefined);
  const first = byLink(s.sample(100)?.links);
  t.same(
    first['n1>n2'],
    { from: 'n1', to: 'n2', sent: 0, delivered: 1, bytes: 0, in_flight: 0 },
    'traffic sent before the sampler started is not counted as sent; its delivery is',
  );

  for (let i = 0; i < 3; i++) send(f, 'n1', 'n2', 'append', 110);
  send(f, 'n1', 'n3', 'heartbeat', 110);
  f.setLatency('n2', 'n1', 1000);
  send(f, 'n2', 'n1', 'append_resp', 110);
  f.deliverDue(120, () => undefined);
  const d = s.sample(200);
  t.equal(d?.interval_ms, 100, 'interval_ms is the measured time since the last sample');
  const l = byLink(d?.links);
  const b = msg('append').byteLength;
  t.same(l['n1>n2'], {
    from: 'n1',
    to: 'n2',
    sent: 3,
    delivered: 3,
    bytes: 3 * b,
    by_type: { append: 3 },
    in_flight: 0,
  });
  t.same(l['n1>n3']?.by_type, { heartbeat: 1 });
  t.same(
    l['n2>n1'],
    {
      from: 'n2',
      to: 'n1',
      sent: 1,
      delivered: 0,
      bytes: msg('append_resp').byteLength,
      by_type: { append_resp: 1 },
      in_flight: 1,
    },
    'a message still in flight shows in in_flight',
  );
  t.notOk('n3>n1' in l, 'links without traffic are left out');

  const p = f.partition(['n1'], ['n2', 'n3']);
  send(f, 'n1', 'n2', 'append', 210);
  send(f, 'n1', 'n2', 'append', 210);
  f.deliverDue(2000, () => undefined); // n2>n1's message was in flight when the partition came
  f.heal(p);
  f.setDropRate('n3', 'n2', 1);
  send(f, 'n3', 'n2', 'get', 2100);
  const l2 = byLink(s.sample(2200)?.links);
  t.same(l2['n1>n2']?.dropped, { partition: 2 }, 'dropped at submit by the partition');
  t.same(l2['n2>n1']?.dropped, { partition: 1 }, 'dropped on arrival: the partition appeared while it was in flight');
  t.equal(l2['n2>n1']?.in_flight, 0);
  t.same(l2['n3>n2']?.dropped, { rate: 1 }, "dropped by the link's drop rate");
  t.equal(l2['n3>n2']?.delivered, 0);
});

t.test(
  'over many random intervals, sent - delivered - dropped equals the change of in_flight on every link',
  async (t) => {
    const f = fabric3();
    const rng = new SeededRng(42);
    const ids = ['n1', 'n2', 'n3'];
    const s = new LinkStatsSampler(f, 0);
    const inFlight = new Map<string, number>();
    let now = 0;
    let checked = 0;
    let dropped = 0;
    for (let round = 0; round < 200; round++) {
      for (let k = 0; k < 20; k++) {
        const from = ids[rng.int(3)] as string;
        const to = ids[rng.int(3)] as string;
        if (from === to) continue;
        if (rng.chance(0.05)) f.setLatency(from, to, rng.int(300));
        if (rng.chance(0.03)) f.setDropRate(from, to, rng.chance(0.5) ? 0 : 0.3);
        send(f, from, to, rng.chance(0.5) ? 'append' : 'heartbeat', now);
      }
      if (rng.chance(0.05)) f.partition(['n1'], ['n2', 'n3']);
      if (rng.chance(0.05)) f.clearFaults();
      if (rng.chance(0.1)) f.setDeliverable('n3', !f.isDeliverable('n3'));
      now += 1 + rng.int(100);
      f.deliverDue(now, () => undefined);
      for (const l of s.sample(now)?.links ?? []) {
        const key = `${l.from}>${l.to}`;
        const lost = (l.dropped?.rate ?? 0) + (l.dropped?.partition ?? 0) + (l.dropped?.full ?? 0);
        dropped += lost;
        t.equal(l.sent - l.delivered - lost, l.in_flight - (inFlight.get(key) ?? 0), `${key} at ${now}`, {
          diagnostic: false,
        });
        t.equal(
          Object.values(l.by_type ?? {}).reduce((a, b) => a + b, 0),
          l.sent,
          'by_type adds up to sent',
          { diagnostic: false },
        );
        inFlight.set(key, l.in_flight);
        checked++;
      }
    }
    t.ok(
      checked > 500 && dropped > 0,
      `the run exercised drops and deliveries (${checked} link intervals, ${dropped} drops)`,
    );
  },
);

t.test("a removed node's links are forgotten; linkTotals shows settings and counters since creation", async (t) => {
  const f = fabric3();
  const s = new LinkStatsSampler(f, 0);
  send(f, 'n1', 'n3', 'append', 0);
  f.setLatency('n1', 'n2', 25);
  f.setDropRate('n2', 'n1', 0.5);
  f.deliverDue(0, () => undefined);
  const totals = Object.fromEntries(linkTotals(f).map((l) => [`${l.from}>${l.to}`, l]));
  t.match(totals['n1>n3'], {
    sent: 1,
    delivered: 1,
    in_flight: 0,
    latency_ms: 0,
    blocked: false,
    by_type: { append: 1 },
    dropped: { rate: 0, partition: 0, full: 0 },
  });
  t.match(totals['n1>n2'], { latency_ms: 25, sent: 0 }, 'a link with a setting but no traffic is listed');
  t.match(totals['n2>n1'], { drop_rate: 0.5 });
  f.removeNode('n3');
  t.notOk(
    linkTotals(f).some((l) => l.from === 'n3' || l.to === 'n3'),
    'links of a removed node are gone',
  );
  send(f, 'n1', 'n2', 'append', 10);
  t.same(
    s.sample(100)?.links.map((l) => `${l.from}>${l.to}`),
    ['n1>n2'],
    'the sampler reports the remaining links only',
  );
});

t.test('the fabric tells a listener every change of latency, drop rate and partitions', async (t) => {
  const f = fabric3();
  const seen: FabricFaultChange[] = [];
  f.onFaultChange = (c) => seen.push(c);
  f.setLatency('n1', 'n2', 30);
  f.setDropRate('n2', 'n3', 0.25);
  const p = f.partition(['n1'], ['n2', 'n3']);
  f.heal(p);
  t.notOk(f.heal(p), 'healing twice changes nothing');
  f.setLatency('n1', 'nX', 5);
  f.clearFaults();
  t.same(
    seen,
    [
      { kind: 'latency', from: 'n1', to: 'n2', ms: 30 },
      { kind: 'drop', from: 'n2', to: 'n3', rate: 0.25 },
      { kind: 'partition', partitionId: p, groupA: ['n1'], groupB: ['n2', 'n3'] },
      { kind: 'heal', partitionId: p },
      { kind: 'clear' },
    ],
    'one notification per change; none for an unknown node or a second heal',
  );
});

t.test('the fault log opens, replaces, closes and forgets intervals', async (t) => {
  const log = new FaultLog(3);
  log.open('pause n1', { kind: 'pause', node: 'n1' }, 10);
  log.open('latency n1>n2', { kind: 'latency', from: 'n1', to: 'n2', value: 50 }, 20);
  log.open('latency n1>n2', { kind: 'latency', from: 'n1', to: 'n2', value: 80 }, 30);
  t.same(
    log.list().map((f) => [f.index, f.kind, f.value ?? null, f.start_ms, f.end_ms]),
    [
      [0, 'pause', null, 10, null],
      [1, 'latency', 50, 20, 30],
      [2, 'latency', 80, 30, null],
    ],
    'a new latency on the same link ends the previous one',
  );
  t.ok(log.close('pause n1', 40), 'closing an open fault');
  t.notOk(log.close('pause n1', 41), 'closing it again does nothing');
  t.same(
    log.active().map((f) => f.index),
    [2],
    'active() lists the faults in force',
  );
  log.instant({ kind: 'heal' }, 50);
  t.same(
    log.list().map((f) => f.index),
    [1, 2, 3],
    'past the capacity the oldest is forgotten',
  );
  t.equal(log.dropped, 1);
  t.same(log.list()[2], { index: 3, kind: 'heal', start_ms: 50, end_ms: 50 }, 'heal is an instant');
  log.closeWhere((k) => k.startsWith('latency '), 60);
  t.same(log.active(), [], 'closeWhere closes the matching keys');
  const copy = log.list();
  (copy[0] as { end_ms: number | null }).end_ms = 999;
  t.not(log.list()[0]?.end_ms, 999, 'list() hands out copies');
  t.throws(() => new FaultLog(0), 'a fault log keeps at least one interval');
  t.ok(faultIntervalsMax >= 100, 'the cluster keeps a useful number of faults');
});

t.test("HistoryRing.slice pages by absolute index, across the ring's wrap", async (t) => {
  const ring = new HistoryRing(4);
  t.same(ring.slice(0, 10), { first: 0, ops: [] }, 'an empty ring');
  for (let i = 0; i < 10; i++)
    ring.push(`c${i % 2}`, 'n1', i % 3 === 0 ? 'read' : 'write', `k${i}`, `v${i}`, i, i + 0.5, i === 9 ? 'info' : 'ok');
  t.equal(ring.nextIndex, 10);
  t.equal(ring.firstIndex, 6, 'indexes below firstIndex fell off');
  const cases: Array<{ since: number; limit: number; first: number; keys: string[] }> = [
    { since: 0, limit: 10, first: 6, keys: ['k6', 'k7', 'k8', 'k9'] },
    { since: 7, limit: 2, first: 7, keys: ['k7', 'k8'] },
    { since: 9, limit: 5, first: 9, keys: ['k9'] },
    { since: 10, limit: 5, first: 10, keys: [] },
    { since: 50, limit: 5, first: 10, keys: [] },
    { since: 6, limit: 0, first: 6, keys: [] },
  ];
  for (const c of cases) {
    const page = ring.slice(c.since, c.limit);
    t.same(
      { first: page.first, keys: page.ops.map((o) => o.key) },
      { first: c.first, keys: c.keys },
      `since ${c.since}, limit ${c.limit}`,
    );
  }
  const [read, , , last] = ring.slice(6, 4).ops;
  t.same(
    read && toHistoryRecord(read, 6),
    {
      index: 6,
      process: 'c0',
      f: 'read',
      key: 'k6',
      value: 'v6',
      type: 'ok',
      invoke_ms: 6,
      complete_ms: 6.5,
      node: 'n1',
    },
    'a read shows the value it read',
  );
  t.match(last && toHistoryRecord(last, 9), { f: 'read', type: 'info' });
  t.match(
    toHistoryRecord(
      { client: 'c', node: 'n2', kind: 'write', key: 'k', value: 'w', invokeMs: 1, completeMs: 2, outcome: 'fail' },
      0,
    ),
    { f: 'write', value: 'w', type: 'fail' },
  );
});
