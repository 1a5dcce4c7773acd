/**
 * The leaderless core's and Dynamo helpers' fast paths give what the plain computations give: the
 * phi detector's suspicion without phi, the Merkle root built in place, the anti-entropy summaries
 * remembered, the decoder handing a well-formed message back, responders without a Set, and the
 * lazily made `used` set of a placement.
 */
import t from 'tap';
import type { NodeId, Version } from '../../src/replication/core.js';
import { decodeLeaderlessMessage, type LeaderlessMessage } from '../../src/replication/cores/leaderless/messages.js';
import { assignHolders, plan, recruit, type Placement } from '../../src/replication/cores/leaderless/placement.js';
import { newReadOp, responders, type ReadOp } from '../../src/replication/cores/leaderless/read-op.js';
import { HintStore } from '../../src/replication/cores/leaderless/hints.js';
import { aeAnswer, aeRoot } from '../../src/replication/dynamo/anti-entropy.js';
import { hashText, merkleLeaves, merkleParents, merkleRoot } from '../../src/replication/dynamo/merkle.js';
import { PhiAccrualDetector, defaultPhiOptions } from '../../src/replication/dynamo/phi.js';
import { isVersion } from '../../src/replication/dynamo/version.js';

/** A small deterministic generator (a 32-bit LCG) for the tables below. */
function lcg(seed: number): (n: number) => number {
  let x = seed >>> 0;
  return (n) => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x % n;
  };
}

t.test('phi: suspected(now) is phi(now) >= threshold, at any threshold', async (t) => {
  let checked = 0;
  for (const threshold of [0.1, 0.3, 0.31, 0.5, 1, 3, 8, 16]) {
    const opts = { ...defaultPhiOptions, threshold };
    const rnd = lcg(threshold * 1000);
    const asked = new PhiAccrualDetector(1000, opts);
    const reference = new PhiAccrualDetector(1000, opts);
    let now = 1000;
    let mismatches = 0;
    for (let i = 0; i < 400; i++) {
      now += rnd(4) === 0 ? rnd(3000) : rnd(250);
      if (rnd(3) > 0) {
        asked.heartbeat(now);
        reference.heartbeat(now);
      }
      const at = now + rnd(2500);
      if (asked.suspected(at) !== reference.phi(at) >= threshold) mismatches++;
      checked++;
    }
    t.equal(mismatches, 0, `threshold ${threshold}: the same answer as phi`);
  }
  t.ok(checked > 3000, 'many points checked');
  const d = new PhiAccrualDetector(0);
  d.heartbeat(100);
  t.notOk(d.suspected(150), 'heard from within the mean: not suspected');
  t.ok(d.suspected(100_000), 'silent for long: suspected');
  const twin = new PhiAccrualDetector(0);
  twin.heartbeat(100);
  t.equal(d.phi(150), twin.phi(150), 'phi after the fast answer is the phi of a twin never asked');
});

/** The root as merkleParents level by level (the definition). */
function rootByLevels(leaves: readonly string[]): string {
  let level: readonly string[] = leaves;
  if (level.length === 0) return '';
  while (level.length > 1) level = merkleParents(level);
  return level[0] as string;
}

t.test('merkle: the root built in place is the root level by level', async (t) => {
  const rnd = lcg(7);
  for (const size of [0, 1, 2, 3, 5, 8, 63, 64, 65, 100]) {
    for (let round = 0; round < 5; round++) {
      const leaves: string[] = [];
      for (let i = 0; i < size; i++) leaves.push(rnd(3) === 0 ? hashText(`leaf ${size} ${round} ${i}`) : '');
      const copy = [...leaves];
      t.equal(merkleRoot(leaves), rootByLevels(leaves), `${size} leaves, round ${round}`);
      t.same(leaves, copy, 'the leaves are left as they were');
    }
  }
  const entries: Array<[string, string]> = [
    ['a', 'd1'],
    ['b', 'd2'],
    ['c', 'd3'],
    ['a2', 'd4'],
  ];
  const leaves = merkleLeaves(entries);
  t.equal(leaves.length, 64, 'one leaf per bucket');
  t.same(merkleLeaves(entries), leaves, 'the same entries give the same leaves (scratch lists reset)');
  t.same(merkleLeaves([]), new Array(64).fill(''), 'no entries: every leaf empty');
});

t.test('anti-entropy: remembered summaries answer what building them again gives', async (t) => {
  const rnd = lcg(11);
  const sets: Array<Map<string, string>> = [];
  for (let s = 0; s < 20; s++) {
    const m = new Map<string, string>();
    const keys = 1 + rnd(6);
    for (let k = 0; k < keys; k++) m.set(`k${rnd(8)}`, `d${rnd(4)}`);
    sets.push(m);
  }
  // Twice over more sets than are remembered, then each again: every answer as if built afresh.
  for (let pass = 0; pass < 3; pass++) {
    for (const m of sets) {
      const leaves = merkleLeaves(m.entries());
      const got = aeRoot(m);
      t.same(got.leaves, leaves, 'leaves');
      t.equal(got.root, rootByLevels(leaves), 'root');
    }
  }
  const a = new Map([
    ['x', '1'],
    ['y', '2'],
  ]);
  const reordered = new Map([
    ['y', '2'],
    ['x', '1'],
  ]);
  t.equal(aeRoot(reordered).root, aeRoot(a).root, 'the order of the pairs does not change the root');
  t.equal(aeAnswer(new Map(a), aeRoot(a), 10), null, 'equal sets: nothing to exchange');
  const b = new Map([
    ['x', '1'],
    ['y', '3'],
  ]);
  t.same(aeAnswer(b, aeRoot(a), 10)?.entries, [['y', '3']], 'a differing digest is listed');
});

const ver = (key: string, ts: number): Version => ({
  key,
  value: `v${ts}`,
  tombstone: false,
  timestamp: ts,
  node_id: 'n1',
  version: 1,
  vclock: { n1: 1 },
});

t.test('messages: a well-formed message is handed back as it came', async (t) => {
  const msgs: LeaderlessMessage[] = [
    { kind: 'heartbeat', hlc: 1 },
    { kind: 'put', roundTripId: 1, version: ver('k', 1), hintFor: null, ack: true, repair: false },
    { kind: 'get_reply', roundTripId: 1, key: 'k', full: false, version: null, digest: 'd' },
  ];
  for (const m of msgs) t.equal(decodeLeaderlessMessage(m), m, `${m.kind}: the same object`);
  const vclockInherited = Object.create({ n2: 'x' }) as Record<string, unknown>;
  vclockInherited.n1 = 1;
  t.ok(isVersion({ ...ver('k', 1), vclock: vclockInherited }), 'only own vclock entries are checked');
  t.notOk(isVersion({ ...ver('k', 1), vclock: { n1: '1' } }), 'a string clock entry is refused');
});

t.test('read op: responders are the full repliers, then the digest repliers not among them', async (t) => {
  const p = plan({
    walk: { all: ['a', 'b', 'c'], n: 3, intended: ['a', 'b', 'c'], rest: [] },
    level: 'quorum',
    regionIds: [0],
    regionOf: () => 0,
    coordinatorRegion: 0,
    quorum: 2,
  });
  const op: ReadOp = newReadOp(
    { ...p, used: null, roundTripId: 1, requestId: 1, key: 'k', startedAt: 0, deadline: 1, probeAt: 1 },
    'digest',
  );
  op.digestReplies.set('c', 'x');
  op.fullReplies.set('b', null);
  op.digestReplies.set('b', 'y');
  op.digestReplies.set('a', 'z');
  t.same(responders(op), [...new Set([...op.fullReplies.keys(), ...op.digestReplies.keys()])], 'as a Set gives');
  t.same(responders(op), ['b', 'c', 'a'], 'in that order');
});

t.test('placement: the used set is made at the first recruit, with every intended replica', async (t) => {
  const p: Placement = {
    ...plan({
      walk: { all: ['a', 'b', 'c', 'd', 'e'], n: 3, intended: ['a', 'b', 'c'], rest: ['d', 'e'] },
      level: 'quorum',
      regionIds: [0],
      regionOf: () => 0,
      coordinatorRegion: 0,
      quorum: 2,
    }),
    used: null,
  };
  const suspected = (n: NodeId) => n === 'a';
  assignHolders(p, true, suspected);
  t.same(
    p.slots.map((s) => s.holders),
    [['d'], ['b'], ['c']],
    'a suspected replica gets the first stand-in',
  );
  t.same([...(p.used ?? [])].sort(), ['a', 'b', 'c', 'd'], 'used: the intended replicas and the stand-in');
  t.equal(
    recruit(p, p.slots[1] as Placement['slots'][number], () => false),
    'e',
    'the next unused node',
  );
  t.equal(
    recruit(p, p.slots[2] as Placement['slots'][number], () => false),
    null,
    'none left',
  );
});

t.test('hints: the empty-store invariant check agrees with the full one', async (t) => {
  const h = new HintStore(2);
  h.checkInvariants();
  t.equal(h.ownerCount, 0, 'no owners');
  t.same(h.put('o', ver('k', 1)), { outcome: 'stored', replaced: undefined }, 'stored');
  t.equal(h.ownerCount, 1, 'one owner');
  h.checkInvariants();
  t.ok(h.settle('o', 'k', 1), 'settled');
  t.equal(h.ownerCount, 0, 'the owner left with its last hint');
  h.checkInvariants();
  t.pass('checks pass throughout');
});
