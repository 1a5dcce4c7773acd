/**
 * Table-driven tests of the leaderless core's leaf modules (cores/leaderless/*): each is pure or owns
 * its data, so each is tested here apart from the core (leaderless.test.ts), caps at and past them.
 */
import t from 'tap';
import type { ClientReply, NodeId, Version } from '../../src/replication/core.js';
import { AuditLog } from '../../src/replication/cores/leaderless/audit.js';
import {
  answerControl,
  decodeCorrupt,
  decodePlacement,
  decodeSetQuorum,
  type ControlHost,
} from '../../src/replication/cores/leaderless/controls.js';
import { HintStore, TransferSet } from '../../src/replication/cores/leaderless/hints.js';
import { decodeLeaderlessMessage, type LeaderlessMessage } from '../../src/replication/cores/leaderless/messages.js';
import {
  assignHolders,
  groupCounts,
  plan,
  PlacementCache,
  quorumMet,
  quorumStillPossible,
  recruit,
  shortfall,
  slotOf,
  standIns,
  type Placement,
  type Walk,
} from '../../src/replication/cores/leaderless/placement.js';
import {
  digestMismatches,
  newestOf,
  newReadOp,
  readReply,
  readSettled,
  readTimedOut,
  silentDataFetches,
  staleResponders,
  unresolvedDigests,
  type ReadOp,
} from '../../src/replication/cores/leaderless/read-op.js';
import {
  foldBatchResult,
  writeRefused,
  writeSettled,
  writeTimedOut,
  type WriteOp,
} from '../../src/replication/cores/leaderless/write-op.js';
import { ringFor } from '../../src/replication/dynamo/ring.js';
import { versionDigest } from '../../src/replication/dynamo/version.js';
import { leaderlessPlacementControlNDefault } from '../../src/replication/limits.js';

const ver = (key: string, timestamp: number, node = 'n1', value = `v${timestamp}`, tombstone = false): Version => ({
  key,
  value,
  tombstone,
  timestamp,
  node_id: node,
  version: 1,
  vclock: { [node]: 1 },
});

const walkOf = (all: NodeId[], n: number): Walk => ({ all, n, intended: all.slice(0, n), rest: all.slice(n) });

function placementOf(
  all: NodeId[],
  n: number,
  quorum: number,
  regions?: Record<NodeId, number>,
  level: 'quorum' | 'local_quorum' | 'each_quorum' = 'quorum',
): Placement {
  const regionOf = (m: NodeId) => regions?.[m] ?? 0;
  const regionIds = [...new Set(all.map(regionOf))].sort((a, b) => a - b);
  const { groups, slots } = plan({
    walk: walkOf(all, n),
    level,
    regionIds,
    regionOf,
    coordinatorRegion: regionOf(all[0] as NodeId),
    quorum,
  });
  return { groups, slots, used: new Set(slots.map((s) => s.intended)) };
}

// ---------------------------------------------------------------- messages

t.test('messages: the decoder keeps well-formed messages and refuses the rest', async (t) => {
  const v = ver('k', 5);
  const good: LeaderlessMessage[] = [
    { kind: 'heartbeat', hlc: 12 },
    { kind: 'put', roundTripId: 1, version: v, hintFor: null, ack: true, repair: false },
    { kind: 'put', roundTripId: 2, version: v, hintFor: 'n3', ack: false, repair: true },
    { kind: 'put_ack', roundTripId: 1, key: 'k' },
    { kind: 'put_nack', roundTripId: 1, key: 'k' },
    { kind: 'get', roundTripId: 3, key: 'k', digestOnly: true },
    { kind: 'get_reply', roundTripId: 3, key: 'k', full: true, version: v, digest: 'd' },
    { kind: 'get_reply', roundTripId: 3, key: 'k', full: false, version: null, digest: 'd' },
    { kind: 'handoff', purpose: 'hint', versions: [v] },
    { kind: 'handoff_ack', purpose: 'transfer', items: [['k', 5]] },
    { kind: 'anti_entropy_root', root: 'r', leaves: ['a', 'b'] },
    { kind: 'anti_entropy_keys', buckets: [1, 2], entries: [['k', 'd']], truncated: false },
    { kind: 'anti_entropy_push', versions: [v] },
    { kind: 'anti_entropy_pull', keys: ['k'] },
  ];
  for (const m of good) t.same(decodeLeaderlessMessage(m), m, `${m.kind} decodes to itself`);
  const bad: Array<{ name: string; raw: unknown }> = [
    { name: 'not an object', raw: 'put' },
    { name: 'null', raw: null },
    { name: 'an unknown kind', raw: { kind: 'gossip' } },
    { name: 'the old tag `t`', raw: { t: 'hb', hlc: 1 } },
    { name: 'a heartbeat without hlc', raw: { kind: 'heartbeat' } },
    {
      name: 'a put whose version is not a version',
      raw: { kind: 'put', roundTripId: 1, version: {}, hintFor: null, ack: true, repair: false },
    },
    {
      name: 'a put with a numeric hintFor',
      raw: { kind: 'put', roundTripId: 1, version: v, hintFor: 3, ack: true, repair: false },
    },
    { name: 'a put_ack without its key', raw: { kind: 'put_ack', roundTripId: 1 } },
    { name: 'a get without digestOnly', raw: { kind: 'get', roundTripId: 1, key: 'k' } },
    {
      name: 'a get_reply with a string roundTripId',
      raw: { kind: 'get_reply', roundTripId: '1', key: 'k', full: true, version: null, digest: '' },
    },
    { name: 'a handoff with an unknown purpose', raw: { kind: 'handoff', purpose: 'gift', versions: [] } },
    { name: 'a handoff_ack with a malformed item', raw: { kind: 'handoff_ack', purpose: 'hint', items: [['k', 'x']] } },
    { name: 'anti_entropy_keys without truncated', raw: { kind: 'anti_entropy_keys', buckets: [], entries: [] } },
    { name: 'anti_entropy_pull with numbers', raw: { kind: 'anti_entropy_pull', keys: [1] } },
  ];
  for (const c of bad) t.equal(decodeLeaderlessMessage(c.raw), null, `${c.name} is refused`);
});

// ---------------------------------------------------------------- placement

t.test('placement: groups, slots and quorums', async (t) => {
  const all = ['a', 'b', 'c', 'd', 'e'];
  const regions = { a: 0, b: 1, c: 0, d: 1, e: 0 };
  const cases: Array<{
    name: string;
    p: Placement;
    slots: NodeId[];
    required: number[];
    walks: NodeId[][];
  }> = [
    {
      name: 'quorum: one group, the first N are intended, the rest stand by',
      p: placementOf(all, 3, 2),
      slots: ['a', 'b', 'c'],
      required: [2],
      walks: [['d', 'e']],
    },
    {
      name: 'N larger than the ring: every member intended',
      p: placementOf(['a', 'b'], 3, 2),
      slots: ['a', 'b'],
      required: [2],
      walks: [[]],
    },
    {
      name: 'quorum ignores regions',
      p: placementOf(all, 3, 2, regions, 'quorum'),
      slots: ['a', 'b', 'c'],
      required: [2],
      walks: [['d', 'e']],
    },
    {
      name: "local_quorum waits on the coordinator's region only, with ceil(W·m/N)",
      p: placementOf(all, 3, 2, regions, 'local_quorum'),
      slots: ['a', 'c', 'e', 'b', 'd'],
      required: [2, 0],
      walks: [[], []],
    },
    {
      name: "each_quorum waits on every region (two of region 1's two replicas: ceil(2·2/3))",
      p: placementOf(all, 3, 2, regions, 'each_quorum'),
      slots: ['a', 'c', 'e', 'b', 'd'],
      required: [2, 2],
      walks: [[], []],
    },
  ];
  for (const c of cases) {
    t.same(
      c.p.slots.map((s) => s.intended),
      c.slots,
      `${c.name}: intended replicas`,
    );
    t.same(
      c.p.groups.map((g) => g.required),
      c.required,
      `${c.name}: required`,
    );
    t.same(
      c.p.groups.map((g) => g.walk),
      c.walks,
      `${c.name}: stand-in walks`,
    );
  }
});

t.test('placement: holders, recruitment and the quorum arithmetic', async (t) => {
  const suspectedB = (n: NodeId) => n === 'b';
  const p = placementOf(['a', 'b', 'c', 'd', 'e'], 3, 2);
  assignHolders(p, true, suspectedB);
  t.same(
    p.slots.map((s) => s.holders),
    [['a'], ['d'], ['c']],
    'a suspected intended replica is replaced by the first stand-in',
  );
  t.same(standIns(p), [{ node: 'd', for: 'b' }], 'the stand-in is listed with whom it stands for');
  t.equal(recruit(p, p.slots[0]!, suspectedB), 'e', 'the next stand-in is the next unused node on the walk');
  t.equal(recruit(p, p.slots[0]!, suspectedB), null, 'no node is recruited twice');
  t.equal(slotOf(p, 'e'), p.slots[0], 'a stand-in answers for its slot');
  t.equal(slotOf(p, 'z'), undefined, 'a stranger answers for none');

  const strict = placementOf(['a', 'b', 'c', 'd', 'e'], 3, 2);
  assignHolders(strict, false, suspectedB);
  t.same(
    strict.slots.map((s) => s.holders),
    [['a'], ['b'], ['c']],
    'without a sloppy quorum the suspected replica is still asked',
  );

  const q = placementOf(['a', 'b', 'c'], 3, 2);
  const steps: Array<{
    name: string;
    act: () => void;
    met: boolean;
    short: { done: number; required: number };
    possible: boolean;
  }> = [
    { name: 'nothing acked', act: () => {}, met: false, short: { done: 0, required: 2 }, possible: true },
    {
      name: 'one ack of two',
      act: () => {
        q.slots[0]!.done = true;
      },
      met: false,
      short: { done: 1, required: 2 },
      possible: true,
    },
    {
      name: 'one refusal still leaves two',
      act: () => {
        q.slots[1]!.refused = true;
      },
      met: false,
      short: { done: 1, required: 2 },
      possible: true,
    },
    {
      name: 'a second refusal leaves one: the write cannot succeed',
      act: () => {
        q.slots[2]!.refused = true;
      },
      met: false,
      short: { done: 1, required: 2 },
      possible: false,
    },
  ];
  for (const s of steps) {
    s.act();
    t.equal(quorumMet(q), s.met, `${s.name}: quorum met`);
    t.same(shortfall(q), s.short, `${s.name}: shortfall`);
    t.equal(quorumStillPossible(q), s.possible, `${s.name}: still possible`);
  }
  const r = placementOf(['a', 'b', 'c'], 3, 2);
  r.slots[0]!.done = true;
  r.slots[2]!.done = true;
  t.ok(quorumMet(r), 'two acks of two: met');
  t.same(groupCounts(r), [{ done: 2, required: 2 }], 'group counts');
});

t.test('placement cache: walks per key, and a cap at and past which it starts over', async (t) => {
  const ring = ringFor(['n1', 'n2', 'n3', 'n4']);
  const cache = new PlacementCache(ring, 3);
  t.same(cache.preferenceList('k', 2), ring.preferenceList('k', 2), "the preference list is the ring's");
  t.same(cache.walk('k', 3).intended, ring.preferenceList('k', 3), 'a new N recomputes the split');
  t.same(cache.walk('k', 3).all, ring.walk('k'), 'the whole walk is kept');
  cache.walk('k2', 2);
  cache.walk('k3', 2);
  t.equal(cache.size, 3, 'at the cap: three keys kept');
  cache.walk('k4', 2);
  t.equal(cache.size, 1, 'past the cap: the cache starts over');
  t.same(
    cache.regionIds(['n1', 'n2', 'n3'], (m) => (m === 'n2' ? 4 : 1)),
    [1, 4],
    'region ids are distinct and sorted',
  );
});

// ---------------------------------------------------------------- hints and transfers

t.test('hint store: the count is the sum of held hints, and the cap refuses new keys at and past it', async (t) => {
  const hints = new HintStore(2);
  const steps: Array<{ name: string; owner: NodeId; v: Version; outcome: string; count: number }> = [
    { name: 'a first hint is stored', owner: 'o1', v: ver('a', 10), outcome: 'stored', count: 1 },
    { name: 'a newer version of the same key replaces it', owner: 'o1', v: ver('a', 11), outcome: 'stored', count: 1 },
    {
      name: 'an older version is not stored (a newer one is held)',
      owner: 'o1',
      v: ver('a', 9),
      outcome: 'already_newer',
      count: 1,
    },
    { name: 'a second key for another owner fills the cap', owner: 'o2', v: ver('b', 10), outcome: 'stored', count: 2 },
    { name: 'past the cap a new key is refused', owner: 'o2', v: ver('c', 10), outcome: 'full', count: 2 },
    { name: 'at the cap a held key may still be replaced', owner: 'o2', v: ver('b', 12), outcome: 'stored', count: 2 },
  ];
  for (const s of steps) {
    t.equal(hints.put(s.owner, s.v).outcome, s.outcome, `${s.name}: outcome`);
    t.equal(hints.count, s.count, `${s.name}: count`);
    hints.checkInvariants();
  }
  t.equal(hints.get('o1', 'a')?.timestamp, 11, 'the newest hint is held');
  t.equal(hints.newest('a')?.timestamp, 11, 'newest over owners');
  t.same(hints.keysByOwner(), { o1: ['a'], o2: ['b'] }, 'keys by owner');
  t.same(
    hints.batchFor('o1', 5).map((v) => v.key),
    ['a'],
    'a handoff batch',
  );
  t.equal(hints.settle('o1', 'a', 10), null, 'an ack of an older version settles nothing');
  t.equal(hints.settle('o1', 'a', 11)?.key, 'a', 'an ack of the version held settles it');
  t.equal(hints.count, 1, 'the count follows');
  t.same(
    [...hints.owners()].map(([o]) => o),
    ['o2'],
    'an owner with no hints left is forgotten',
  );
  t.same(
    hints.dropOwner('o2').map((v) => v.key),
    ['b'],
    "a departed owner's hints are dropped and returned",
  );
  t.equal(hints.count, 0, 'nothing held');
  hints.checkInvariants();
  const restored = new HintStore(5);
  restored.restore(
    'o',
    new Map([
      ['x', ver('x', 1)],
      ['y', ver('y', 2)],
    ]),
  );
  t.equal(restored.count, 2, 'a restored node counts its hints');
  t.throws(() => restored.restore('o', new Map()), 'restoring one owner twice is a bug');
});

t.test('transfer set: keys per node until acknowledged', async (t) => {
  const transfers = new TransferSet();
  transfers.add('n4', 'a');
  transfers.add('n4', 'b');
  transfers.add('n5', 'a');
  t.equal(transfers.count, 3, 'three keys wait');
  t.ok(transfers.pending('a'), 'a is pending');
  const store = new Map([['a', ver('a', 1)]]);
  t.same(
    transfers.batchFor('n4', 10, (k) => store.get(k)).map((v) => v.key),
    ['a'],
    'a key gone from the store is not sent',
  );
  t.equal(transfers.count, 2, 'and is forgotten');
  t.same(transfers.settle('n4', ['a', 'zzz']), ['a'], 'only waiting keys are settled');
  t.same(transfers.nodes(), ['n5'], 'a node with nothing left is forgotten');
  transfers.forget('n5');
  t.notOk(transfers.pending('a'), 'nothing waits');
  transfers.checkInvariants();
});

// ---------------------------------------------------------------- audit log

t.test('audit log: at and past its cap the oldest record goes and is counted', async (t) => {
  const log = new AuditLog(2);
  log.append('write', ver('a', 1), 'n1');
  log.append('hint', ver('b', 2), 'n2', 'n3');
  t.equal(log.length, 2, 'at the cap: both kept');
  t.equal(log.dropped, 0, 'none dropped');
  t.same(
    log.view()[1],
    { index: 2, kind: 'hint', key: 'b', node_id: 'n1', timestamp: 2, tombstone: false, from: 'n2', hint_for: 'n3' },
    'an audit record',
  );
  log.append('repair', ver('c', 3), 'n1');
  t.same(
    log.view().map((r) => r.index),
    [2, 3],
    'past the cap: the oldest goes',
  );
  t.equal(log.dropped, 1, 'and is counted');
});

// ---------------------------------------------------------------- write and read ops

function writeOp(slotsDone: boolean[], batch: WriteOp['batch'] = null): WriteOp {
  const p = placementOf(['a', 'b', 'c'], 3, 2);
  slotsDone.forEach((d, i) => {
    p.slots[i]!.done = d;
  });
  return {
    ...p,
    kind: 'write',
    roundTripId: 1,
    requestId: 7,
    key: 'k',
    startedAt: 0,
    deadline: 1000,
    probeAt: 250,
    version: ver('k', 5),
    replied: false,
    batch,
  };
}

t.test('write op: settled, timed out, refused', async (t) => {
  t.notOk(writeSettled(writeOp([true, true, false])), 'a slot without a copy: not settled');
  t.ok(writeSettled(writeOp([true, true, true])), 'every slot acked: settled');
  const timedOut = writeTimedOut(writeOp([true, false, false]), true);
  t.match(
    timedOut.reply,
    { id: 7, ok: false, code: 'quorum_not_met', error: 'write quorum not met: 1/2 acks', indeterminate: true },
    'an acked replica makes the outcome indeterminate',
  );
  t.match(writeTimedOut(writeOp([false, false, false]), false).reply, { indeterminate: false }, 'no ack: determinate');
  t.match(
    writeRefused(writeOp([false, false, false]), 'b', 100),
    { code: 'storage_full', error: /replica b would pass its stored-bytes budget of 100 bytes/ },
    'storage_full names the replica and budget',
  );
});

t.test('batch fan-in: one reply once every entry ended, the first failure wins', async (t) => {
  const ok = (key: string): ClientReply => ({
    id: 9,
    ok: true,
    result: { kind: 'entry', entry: ver(key, 1), node_id: 'n1' },
  });
  const fail: ClientReply = { id: 9, ok: false, code: 'quorum_not_met', error: 'no' };
  const cases: Array<{ name: string; results: Array<[number, ClientReply]>; want: ClientReply | null }> = [
    { name: 'one of two ended: no reply yet', results: [[0, ok('a')]], want: null },
    {
      name: 'both succeeded: every entry in index order',
      results: [
        [1, ok('b')],
        [0, ok('a')],
      ],
      want: { id: 3, ok: true, result: { kind: 'batch', entries: [ver('a', 1), ver('b', 1)] } },
    },
    {
      name: 'one failed: the failure, under the batch id',
      results: [
        [0, ok('a')],
        [1, fail],
      ],
      want: { ...fail, id: 3 },
    },
  ];
  for (const c of cases) {
    const batch = { requestId: 3, results: [null, null] as Array<ClientReply | null>, remaining: 2 };
    let last: ClientReply | null = null;
    for (const [i, r] of c.results) last = foldBatchResult(batch, i, r);
    t.same(last, c.want, c.name);
  }
});

function readOp(): ReadOp {
  const p = placementOf(['a', 'b', 'c'], 3, 2);
  return newReadOp(
    { ...p, roundTripId: 2, requestId: 8, key: 'k', startedAt: 0, deadline: 1000, probeAt: 250 },
    'digest',
  );
}

t.test('read op: newest wins, digests are fetched, the stale are repaired', async (t) => {
  const old = ver('k', 1, 'a', 'old');
  const newer = ver('k', 2, 'b', 'new');
  t.equal(newestOf([null, old, newer, null]), newer, 'the newest timestamp wins');
  t.equal(newestOf([ver('k', 2, 'a'), ver('k', 2, 'c')])?.node_id, 'c', 'a tie goes to the larger node id');
  t.equal(newestOf([null]), null, 'nothing known');

  const op = readOp();
  op.fullReplies.set('a', old);
  op.digestReplies.set('b', versionDigest(newer));
  op.digestReplies.set('c', versionDigest(old));
  t.same(digestMismatches(op, old), { waiting: 1, toAsk: ['b'] }, 'a digest that differs is fetched in full');
  t.same(digestMismatches(op, old), { waiting: 1, toAsk: [] }, 'once');
  op.fullReplies.set('b', newer);
  op.newest = newestOf(op.fullReplies.values());
  t.same(
    staleResponders(op),
    [
      { node: 'a', hintFor: null },
      { node: 'c', hintFor: null },
    ],
    'every responder behind the newest is repaired',
  );
  t.same(staleResponders(op), [], 'once per version');
  t.same(
    readReply(op, 'a'),
    { id: 8, ok: true, result: { kind: 'entry', entry: newer, node_id: 'a' } },
    'the answer is the newest',
  );
  op.newest = ver('k', 3, 'a', '', true);
  t.match(readReply(op, 'a'), { ok: false, code: 'not_found' }, 'a tombstone reads as not found');

  const timedOut = readOp();
  timedOut.fullReplies.set('a', old);
  timedOut.digestReplies.set('b', versionDigest(newer));
  timedOut.digestReplies.set('c', versionDigest(old));
  t.same(unresolvedDigests(timedOut, old), ['b'], 'a differing digest with no full value is unresolved');
  t.same(timedOut.fullAsked.size, 0, 'finding them asks nobody');
  t.match(
    readTimedOut(timedOut, ['b']).reply,
    { ok: false, code: 'quorum_not_met', error: /digest of b differs/ },
    'a read with an unresolved digest fails rather than answer what may be stale (seed 398)',
  );
  t.match(
    readTimedOut(readOp()).reply,
    { code: 'quorum_not_met', error: 'read quorum not met: 0/2 replies' },
    'no replies',
  );

  const silent = readOp();
  silent.digestReplies.set('b', 'x');
  t.same(silentDataFetches(silent), ['b'], 'no full value yet: digest responders are asked in full');
  t.same(silentDataFetches(silent), [], 'once');

  const done = readOp();
  t.notOk(readSettled(done), 'not answered: not settled');
  done.answered = true;
  for (const s of done.slots) s.done = true;
  t.ok(readSettled(done), 'answered and every slot replied: settled');
  done.fullAsked.add('c');
  t.notOk(readSettled(done), 'a full fetch outstanding: not settled');
  done.fullReplies.set('c', null);
  done.repairAcksAwaited.add('c');
  t.notOk(readSettled(done), 'a sync repair ack outstanding: not settled');
});

// ---------------------------------------------------------------- controls

t.test('controls: arguments decoded as values, bad ones a bad_request', async (t) => {
  const quorumCases: Array<{ name: string; args: unknown; want: unknown }> = [
    { name: 'a valid quorum', args: { n: 3, w: 2, r: 2 }, want: { n: 3, w: 2, r: 2 } },
    { name: 'no args', args: undefined, want: 'set_quorum needs {n, w, r}: positive integers' },
    { name: 'a fraction', args: { n: 3, w: 1.5, r: 2 }, want: 'set_quorum needs {n, w, r}: positive integers' },
    { name: 'w above n', args: { n: 3, w: 4, r: 2 }, want: 'set_quorum: w and r must be at most n (3)' },
    {
      name: 'quorums that do not overlap',
      args: { n: 4, w: 2, r: 2 },
      want: 'set_quorum: w + r must be greater than n (W + R > N), got 2 + 2 <= 4',
    },
  ];
  for (const c of quorumCases) t.same(decodeSetQuorum(c.args), c.want, `set_quorum: ${c.name}`);
  t.same(decodePlacement({ key: 'k' }), { key: 'k', n: leaderlessPlacementControlNDefault }, 'placement: n defaults');
  t.equal(
    decodePlacement({ key: 'k', n: 0 }),
    'placement n must be a positive integer',
    'placement: n must be positive',
  );
  t.equal(decodePlacement({}), 'placement needs a key (string)', 'placement: a key is needed');
  t.same(decodeCorrupt({ key: 'k', value: 'v' }), { key: 'k', value: 'v' }, 'corrupt: no timestamp');
  t.same(
    decodeCorrupt({ key: 'k', value: 'v', timestamp: 5 }),
    { key: 'k', value: 'v', timestamp: 5 },
    'corrupt: with one',
  );
  t.type(decodeCorrupt({ key: 'k' }), 'string', 'corrupt: a value is needed');

  const calls: string[] = [];
  const host: ControlHost = {
    suspicion: () => ({ threshold: 8, nodes: {} }),
    placementFor: (key, n) => [key, String(n)],
    corrupt: (a) => (a.timestamp === 'bad' ? 'timestamp out of bounds' : { entry: ver(a.key, 1) }),
    antiEntropyWithAll: () => ['n2'],
    storeDigest: () => ({ root: 'r', keys: 1 }),
    keyCount: () => 1,
    setQuorum: (q) => {
      calls.push(`set ${q.n}/${q.w}/${q.r}`);
      return 3;
    },
    quorum: () => ({ n: 3, w: 2, r: 2 }),
    hintKeysByOwner: () => ({ n9: ['k'] }),
  };
  const answers: Array<{ name: string; args?: unknown; want: unknown }> = [
    {
      name: 'placement',
      args: { key: 'k', n: 2 },
      want: { ok: true, data: { key: 'k', preference_list: ['k', '2'] } },
    },
    {
      name: 'placement',
      args: { key: 1 },
      want: { ok: false, code: 'bad_request', error: 'placement needs a key (string)' },
    },
    {
      name: 'corrupt',
      args: { key: 'k', value: 'v', timestamp: 'bad' },
      want: { ok: false, code: 'bad_request', error: 'timestamp out of bounds' },
    },
    { name: 'set_quorum', args: { n: 5, w: 3, r: 3 }, want: { ok: true, data: { n: 5, w: 3, r: 3, previous_n: 3 } } },
    {
      name: 'set_quorum',
      args: { n: 5, w: 2, r: 3 },
      want: {
        ok: false,
        code: 'bad_request',
        error: 'set_quorum: w + r must be greater than n (W + R > N), got 2 + 3 <= 5',
      },
    },
    { name: 'anti_entropy', want: { ok: true, data: { peers: ['n2'], keys: 1 } } },
    { name: 'hints', want: { ok: true, data: { n9: ['k'] } } },
    { name: 'quorum', want: { ok: true, data: { n: 3, w: 2, r: 2 } } },
    { name: 'gossip', want: { ok: false, code: 'unsupported', error: 'unknown leaderless command: gossip' } },
  ];
  for (const a of answers)
    t.same(answerControl(host, a.name, a.args), a.want, `${a.name} ${JSON.stringify(a.args ?? null)}`);
  t.same(calls, ['set 5/3/3'], 'a refused set_quorum changes nothing');
});
