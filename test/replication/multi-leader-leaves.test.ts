// Unit tests of the multi-leader core's leaves (cores/multi-leader/*): the wire decoder, the per-key
// rules (LWW winner and merges, the CRDT join, byte counts, the assertions on a key's state change)
// and the durable records with their fold.
import t from 'tap';
import type { ConflictResolver, Version } from '../../src/replication/core.js';
import {
  checkpointRecord,
  isMultiLeaderRecord,
  keyRecord,
  multiLeaderDurableFold,
  type MultiLeaderPersisted,
} from '../../src/replication/cores/multi-leader/durable.js';
import {
  checkKeyStateChange,
  crdtMerge,
  joinClocks,
  keyStateBytes,
  knownVersions,
  lwwMerge,
  winnerOf,
  type KeyState,
} from '../../src/replication/cores/multi-leader/key-state.js';
import { decodeMessage } from '../../src/replication/cores/multi-leader/messages.js';
import { storedEntryOverheadBytes } from '../../src/replication/limits.js';
import { AssertionFailure } from '../../src/util/assert.js';

function version(node: string, vclock: Record<string, number>, over: Partial<Version> = {}): Version {
  const sum = Object.values(vclock).reduce((a, b) => a + b, 0);
  return {
    key: 'k',
    value: `from-${node}`,
    tombstone: false,
    timestamp: 100,
    node_id: node,
    version: sum,
    vclock,
    ...over,
  };
}

t.test('decodeMessage accepts each kind well formed, and nothing else', async (t) => {
  const v = version('n1', { n1: 1 });
  const good: unknown[] = [
    { kind: 'replicate', versions: [v] },
    { kind: 'anti_entropy_root', root: 'r', leaves: ['a', 'b'] },
    { kind: 'anti_entropy_keys', buckets: [1], entries: [['k', 'd']], truncated: false },
    { kind: 'anti_entropy_push', versions: [] },
    { kind: 'anti_entropy_pull', keys: ['k'] },
  ];
  for (const m of good) t.same(decodeMessage(m), m, `a well-formed ${(m as { kind: string }).kind}`);
  t.same(
    decodeMessage({ kind: 'replicate', versions: [v], extra: 1 }),
    { kind: 'replicate', versions: [v] },
    'unknown fields are dropped',
  );
  const bad: Array<[string, unknown]> = [
    ['the old `t` tag', { t: 'rep', vs: [v] }],
    ['the old field name', { kind: 'replicate', vs: [v] }],
    ['a version that is not one', { kind: 'anti_entropy_push', versions: [{ key: 'k' }] }],
    ['a root without leaves', { kind: 'anti_entropy_root', root: 'r' }],
    ['keys without truncated', { kind: 'anti_entropy_keys', buckets: [1], entries: [] }],
    ['a pull of numbers', { kind: 'anti_entropy_pull', keys: [1] }],
    ['an unknown kind', { kind: 'gossip' }],
    ['null', null],
  ];
  for (const [name, m] of bad) t.equal(decodeMessage(m), null, name);
});

t.test('the LWW winner and merge: the later timestamp wins, ties by node id, clocks joined', async (t) => {
  const a = version('n1', { n1: 2 }, { timestamp: 200 });
  const b = version('n2', { n2: 1 }, { timestamp: 100 });
  t.equal(winnerOf({ versions: [b, a], parked: null }), a, 'the later timestamp');
  const tie = version('n3', { n3: 1 }, { timestamp: 200 });
  t.equal(winnerOf({ versions: [a, tie], parked: null }), tie, 'a tie goes to the larger node id');
  const m = lwwMerge(a, b);
  t.same([m.value, m.vclock, m.version], ['from-n1', { n1: 2, n2: 1 }, 3], "winner's content under both clocks");
  t.same(lwwMerge(b, a), m, 'symmetric');
  t.same(joinClocks([a, b, tie]), { n1: 2, n2: 1, n3: 1 });
  t.same(joinClocks([]), {});
});

t.test('the crdt merge joins states of one kind and falls back to LWW otherwise', async (t) => {
  const counter = (state: Record<string, number>): string => JSON.stringify({ crdt: 'g_counter', state });
  const a = version('n1', { n1: 1 }, { value: counter({ n1: 3 }), timestamp: 200 });
  const b = version('n2', { n2: 1 }, { value: counter({ n2: 4 }), timestamp: 100 });
  const joined = crdtMerge(a, b);
  t.equal(joined.joined, true);
  t.match(JSON.parse(joined.merged.value), { crdt: 'g_counter', state: { n1: 3, n2: 4 }, value: 7 });
  t.same(joined.merged.vclock, { n1: 1, n2: 1 });
  const plain = version('n2', { n2: 1 }, { value: 'raw', timestamp: 100 });
  t.same(crdtMerge(a, plain), { merged: lwwMerge(a, plain), joined: false }, 'an untagged value: LWW');
  const deleted = version('n2', { n2: 1 }, { tombstone: true, value: '', timestamp: 300 });
  t.same(crdtMerge(a, deleted), { merged: lwwMerge(a, deleted), joined: false }, 'a tombstone: LWW');
});

t.test("a key's bytes count every version it holds, parked included", async (t) => {
  const one = 'k'.length + 'from-n1'.length + storedEntryOverheadBytes;
  const ks: KeyState = { versions: [version('n1', { n1: 1 })], parked: null };
  t.equal(keyStateBytes('k', ks), one);
  t.equal(keyStateBytes('k', { ...ks, parked: version('n1', { n1: 2 }) }), 2 * one);
  t.equal(knownVersions({ ...ks, parked: version('n2', { n2: 1 }) }).length, 2);
});

t.test("every change of a key's state is asserted", async (t) => {
  const a = version('n1', { n1: 1 });
  const b = version('n2', { n2: 1 });
  const ab = version('n1', { n1: 2, n2: 1 });
  const ok: Array<[string, ConflictResolver, KeyState | undefined, KeyState]> = [
    ['a first version', 'lww', undefined, { versions: [a], parked: null }],
    [
      'a dominating version replaces the old one',
      'lww',
      { versions: [a], parked: null },
      { versions: [ab], parked: null },
    ],
    [
      'concurrent siblings under vector_clock',
      'vector_clock',
      { versions: [a], parked: null },
      { versions: [a, b], parked: null },
    ],
    [
      'siblings superseded by one write',
      'vector_clock',
      { versions: [a, b], parked: null },
      { versions: [ab], parked: null },
    ],
    ['a parked remote under manual', 'manual', { versions: [a], parked: null }, { versions: [a], parked: b }],
    ['a resolution dominating both sides', 'manual', { versions: [a], parked: b }, { versions: [ab], parked: null }],
  ];
  for (const [name, resolver, before, after] of ok)
    t.doesNotThrow(() => checkKeyStateChange(resolver, 'k', before, after), name);
  const bad: Array<[string, ConflictResolver, KeyState | undefined, KeyState]> = [
    ['no version at all', 'lww', undefined, { versions: [], parked: null }],
    ['siblings under lww', 'lww', undefined, { versions: [a, b], parked: null }],
    ['a parked version under crdt', 'crdt', undefined, { versions: [a], parked: b }],
    ['a version of another key', 'lww', undefined, { versions: [{ ...a, key: 'other' }], parked: null }],
    ['siblings that are not concurrent', 'vector_clock', undefined, { versions: [a, ab], parked: null }],
    ['going back to an older clock', 'lww', { versions: [ab], parked: null }, { versions: [a], parked: null }],
    [
      'a concurrent version replacing one it has not seen',
      'lww',
      { versions: [a], parked: null },
      { versions: [b], parked: null },
    ],
    ['a parked remote dropped unsettled', 'manual', { versions: [a], parked: b }, { versions: [a], parked: null }],
  ];
  for (const [name, resolver, before, after] of bad) {
    t.throws(() => checkKeyStateChange(resolver, 'k', before, after), AssertionFailure, name);
  }
});

t.test("durable records: a key's state and a checkpoint fold back into the same keys", async (t) => {
  const a = version('n1', { n1: 1 });
  const b = version('n2', { n2: 1 });
  const fold = (records: unknown[]): MultiLeaderPersisted => {
    let st: unknown;
    for (const r of records) st = multiLeaderDurableFold.fold(st, r);
    return st as MultiLeaderPersisted;
  };
  const parked: KeyState = { versions: [a], parked: b };
  const siblings: KeyState = { versions: [a, b].map((v) => ({ ...v, key: 's' })), parked: null };
  const st = fold([keyRecord('k', parked), keyRecord('s', siblings)]);
  t.same(st.get('k'), parked);
  t.same(st.get('s'), siblings);
  const keys = new Map([['k', parked]]);
  const cp = checkpointRecord(keys);
  t.ok(multiLeaderDurableFold.isCheckpoint(cp));
  t.notOk(multiLeaderDurableFold.isCheckpoint(keyRecord('k', parked)));
  t.same(fold([keyRecord('s', siblings), cp]), keys, 'a checkpoint replaces every record before it');
  t.ok(isMultiLeaderRecord(cp));
  t.equal(multiLeaderDurableFold.fold('same', ['x']), 'same', 'a foreign record is ignored');
});
