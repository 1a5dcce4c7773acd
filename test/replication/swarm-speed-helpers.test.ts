/**
 * The swarm-speed helpers (issue 20, point 6) give what they replace: cloneData is structuredClone
 * for the data a durable fold holds (and falls back to it for anything else), the memoised digests
 * are the digests, and the allocation-free vector-clock compare and merge answer as before.
 */
import { hash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { cloneData } from '../../src/replication/swarm/kv-swarm.js';
import { hashText, merkleLeaves, merkleRoot } from '../../src/replication/dynamo/merkle.js';
import { ringPosition } from '../../src/replication/dynamo/ring.js';
import { compareClocks, mergeClocks, type VClock } from '../../src/replication/dynamo/vclock.js';

t.test('cloneData deep-copies plain data like structuredClone, shared references and cycles kept', async (t) => {
  const version = {
    key: 'k',
    value: 'v',
    tombstone: false,
    timestamp: 1,
    node_id: 'n1',
    version: 2,
    vclock: { n1: 2 },
  };
  const state = {
    epoch: 3,
    leader: 'n1',
    store: new Map([
      ['k', version],
      ['j', version],
    ]),
    log: [{ index: 1, ops: [{ key: 'k', value: null }], gone: undefined, neg: -0 }],
    big: 10n,
    nested: [[1, [2, [3]]], {}],
  };
  const copy = cloneData(state);
  t.ok(isDeepStrictEqual(copy, structuredClone(state)), 'equal to structuredClone');
  t.ok(isDeepStrictEqual(copy, state), 'equal to the original');
  t.not(copy.store, state.store, 'a new map');
  t.not(copy.store.get('k'), version, 'new values');
  t.equal(copy.store.get('k'), copy.store.get('j'), 'a shared value stays shared');
  t.ok(Object.is(copy.log[0]?.neg, -0), '-0 kept');
  t.ok('gone' in (copy.log[0] as object), 'an undefined property kept');
  t.same(Object.keys(copy.log[0] as object), Object.keys(state.log[0] as object), 'key order kept');
  const cyclic: { self?: unknown; list: unknown[] } = { list: [] };
  cyclic.self = cyclic;
  cyclic.list.push(cyclic);
  const c2 = cloneData(cyclic);
  t.equal(c2.self, c2, 'a cycle is a cycle in the copy');
  t.equal(c2.list[0], c2);
});

t.test('cloneData falls back to structuredClone for what is not plain data', async (t) => {
  class Point {
    constructor(public x: number) {}
  }
  const odd = [new Point(1), new Set([1]), new Uint8Array([1, 2]), [1, , 3], JSON.parse('{"__proto__": 1}')];
  for (const v of odd) {
    const wrapped = { v, m: new Map([[1, v]]) };
    t.ok(isDeepStrictEqual(cloneData(wrapped), structuredClone(wrapped)), `${Object.prototype.toString.call(v)}`);
  }
  t.throws(() => cloneData({ f: () => 1 }), 'a function cannot be cloned, as with structuredClone');
  t.equal(cloneData(5), 5);
  t.equal(cloneData(null), null);
});

t.test('hashText and ringPosition give the digest, remembered or not', async (t) => {
  const texts = [
    '',
    'a',
    'k1',
    'x'.repeat(159),
    'y'.repeat(161),
    'é😀',
    ...Array.from({ length: 700 }, (_, i) => `t${i}`),
  ];
  for (let round = 0; round < 2; round++) {
    for (const s of texts) {
      if (hashText(s) !== hash('md5', s, 'hex')) t.fail(`hashText(${s})`);
      if (ringPosition(s) !== hash('md5', s, 'buffer').readUInt32BE(0)) t.fail(`ringPosition(${s})`);
    }
  }
  t.pass('every digest matches');
  const entries: Array<[string, string]> = [
    ['a', '1'],
    ['b', '2'],
    ['c', '3'],
  ];
  const leaves = merkleLeaves(entries, 4);
  t.equal(leaves.length, 4);
  const byBucket: string[][] = [[], [], [], []];
  for (const [k, d] of entries) byBucket[ringPosition(k) % 4]?.push(`${k}\u0000${d}`);
  t.same(
    leaves,
    byBucket.map((ls) => (ls.length === 0 ? '' : hash('md5', ls.sort().join('\n'), 'hex'))),
    'leaves as defined',
  );
  t.equal(merkleRoot(merkleLeaves([])), '', 'an empty store has an empty root');
});

/** The definitions the fast paths must agree with (vclock.ts before issue 20 point 6). */
function compareRef(a: VClock, b: VClock): string {
  let aLess = false;
  let bLess = false;
  for (const id of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const x = a[id] ?? 0;
    const y = b[id] ?? 0;
    if (x < y) aLess = true;
    else if (y < x) bLess = true;
  }
  return aLess && bLess ? 'concurrent' : aLess ? 'before' : bLess ? 'after' : 'equal';
}

function mergeRef(a: VClock, b: VClock): Record<string, number> {
  const max = new Map<string, number>();
  for (const [id, n] of Object.entries(a)) if (n > 0) max.set(id, n);
  for (const [id, n] of Object.entries(b)) if (n > (max.get(id) ?? 0)) max.set(id, n);
  const out: Record<string, number> = {};
  for (const id of [...max.keys()].sort()) out[id] = max.get(id) as number;
  return out;
}

t.test('compareClocks and mergeClocks agree with their definitions on random clocks', async (t) => {
  let seed = 7;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const ids = ['n1', 'n2', 'n3', 'n10', 'b', '7'];
  const clock = (): VClock => {
    const c: Record<string, number> = {};
    const pick = [...ids].sort(() => next(3) - 1);
    for (const id of pick) if (next(3) > 0) c[id] = next(4);
    return c;
  };
  for (let i = 0; i < 3000; i++) {
    const a = clock();
    const b = clock();
    if (compareClocks(a, b) !== compareRef(a, b)) t.fail(`compare ${JSON.stringify(a)} ${JSON.stringify(b)}`);
    const m = mergeClocks(a, b);
    const want = mergeRef(a, b);
    if (JSON.stringify(m) !== JSON.stringify(want)) t.fail(`merge ${JSON.stringify(a)} ${JSON.stringify(b)}`);
    const ca = mergeRef(a, {});
    const cb = mergeRef(b, {});
    if (JSON.stringify(mergeClocks(ca, cb)) !== JSON.stringify(mergeRef(ca, cb))) t.fail('canonical merge');
  }
  t.pass('3000 random pairs agree');
});
