/**
 * Unit tests of the durable hand-off below the HTTP layer: for each strategy, the records a core
 * drains, stored by the front's DurableStore (checkpoints forgetting older records) and folded with
 * the strategy's DurableFold, rebuild a core whose store equals the original's; and the budget
 * refuses a write past it with storage_full (507). Pure cores, no workers.
 */
import t from 'tap';
import { effectiveConfig } from '../../src/replication/config.js';
import {
  defaultTimings,
  emptyOutput,
  type ClientOp,
  type CoreOptions,
  type NodeCore,
  type Strategy,
} from '../../src/replication/core.js';
import { loadStrategy } from '../../src/replication/cores/index.js';
import { DurableStore } from '../../src/replication/durable-store.js';
import {
  durableCheckpointFrameIndex,
  durableFrameIndex,
  encode,
  forEachDurableRecord,
  FrameWriter,
  leadingDurableFrame,
  readFrames,
  reservedFrameIndexMin,
} from '../../protocol/actor.js';
import { Fabric } from '../../src/fabric/fabric.js';
import { LiveFabricDriver, type WirePayload } from '../../src/fabric/live.js';
import { SeededRng } from '../../src/util/rng.js';

function options(strategy: Strategy, extra: Partial<CoreOptions> = {}): CoreOptions {
  const eff = effectiveConfig({ strategy, node_count: 1, quorum_n: 1, quorum_w: 1, quorum_r: 1 });
  if (!eff.ok) throw new Error(eff.error);
  return {
    id: 'n1',
    cluster_id: 'c',
    peers: ['n1'],
    config: eff.config,
    timings: defaultTimings,
    rng: new SeededRng(1),
    now: 1_000,
    ...extra,
  };
}

/** Runs `ops` through a core, storing each step's records as the front does (checkpoints honoured). */
async function run(
  strategy: Strategy,
  ops: ClientOp[],
  extra: Partial<CoreOptions> = {},
): Promise<{ core: NodeCore; store: DurableStore; codes: string[] }> {
  const { factory, fold } = await loadStrategy(strategy);
  const core = factory(options(strategy, extra));
  const store = new DurableStore();
  const codes: string[] = [];
  let now = 1_000;
  const step = (): void => {
    const out = emptyOutput();
    core.drain(out);
    const records = out.durable ?? [];
    if (records.length > 0) {
      let from = 0;
      for (let i = records.length - 1; i >= 0; i--)
        if (fold?.isCheckpoint(records[i])) {
          from = i;
          break;
        }
      store.append(encode(records.slice(from)).slice(), from > 0 || fold?.isCheckpoint(records[0]) === true);
    }
    for (const r of out.replies) codes.push(r.ok ? 'ok' : r.code);
  };
  step();
  ops.forEach((op, i) => {
    now += 5;
    core.onClient({ id: i + 1, op }, now);
    core.onTick(now);
    step();
  });
  return { core, store, codes };
}

const writes = (n: number, valueChars: number): ClientOp[] =>
  Array.from({ length: n }, (_, i) => ({ op: 'write', key: `k${i % 40}`, value: `${i}:`.padEnd(valueChars, 'x') }));

for (const strategy of ['single_leader', 'multi_leader', 'leaderless'] as const) {
  t.test(`${strategy}: folding the stored records rebuilds the store (with checkpoints)`, async (t) => {
    // 3,000 writes of 600 characters: well past the 1 MiB checkpoint threshold, so storage forgets.
    const ops: ClientOp[] = [
      ...writes(3000, 600),
      { op: 'delete', key: 'k3' },
      { op: 'write', key: 'late', value: 'v' },
    ];
    const { core, store, codes } = await run(strategy, ops);
    t.same([...new Set(codes)], ['ok'], 'every write was acknowledged');
    t.ok(store.bytes < 3000 * 600, `storage forgot what checkpoints superseded (${store.bytes} bytes held)`);
    const { factory, fold } = await loadStrategy(strategy);
    let persisted: unknown;
    forEachDurableRecord(store.contents(), (r) => {
      persisted = fold?.fold(persisted, r);
    });
    t.ok(persisted !== undefined, 'the records fold into a state');
    const restarted = factory(options(strategy, { persisted, now: 100_000 }));
    t.same(restarted.storeView(), core.storeView(), 'the restarted core has the same store');
    t.equal(restarted.storeView()['k3']?.tombstone, true, 'deletes survive as tombstones');
  });
}

t.test('a budget refuses the write that would pass it with storage_full (507), for every strategy', async (t) => {
  for (const strategy of ['single_leader', 'multi_leader', 'leaderless'] as const) {
    const { codes } = await run(
      strategy,
      writes(40, 10_000).map((op, i) => ({ ...op, key: `u${i}` }) as ClientOp),
      { storedBytesMax: 100_000 },
    );
    const firstRefused = codes.indexOf('storage_full');
    t.ok(firstRefused > 0, `${strategy}: writes fit until the budget (${firstRefused} did)`);
    t.same(
      [...new Set(codes.slice(firstRefused))],
      ['storage_full'],
      `${strategy}: every later growing write is refused`,
    );
  }
});

t.test('DurableStore: a checkpoint forgets older records; contents are copies in order', async (t) => {
  const s = new DurableStore();
  s.append(encode([['a', 1]]).slice(), false);
  s.append(encode([['b', 2]]).slice(), false);
  const seen: unknown[] = [];
  forEachDurableRecord(s.contents(), (r) => seen.push(r));
  t.same(
    seen,
    [
      ['a', 1],
      ['b', 2],
    ],
    'records in order',
  );
  s.append(encode([['c', 3]]).slice(), true);
  const after: unknown[] = [];
  forEachDurableRecord(s.contents(), (r) => after.push(r));
  t.same(after, [['c', 3]], 'only the checkpoint and after');
  const big = new Uint8Array(100_000).fill(7);
  s.append(encode([big]).slice(), false);
  const bigOut: unknown[] = [];
  forEachDurableRecord(s.contents(), (r) => bigOut.push(r));
  t.equal(bigOut.length, 2, 'a step larger than a chunk is kept whole');
  s.clear();
  t.equal(s.bytes, 0);
  t.same(s.contents(), [], 'cleared');
});

t.test('durable frames: the leading frame of a net buffer, skipped by the live fabric', async (t) => {
  const records = encode([['a', 1]]).slice();
  const send = encode({ kind: 'ack' }).slice();
  for (const checkpoint of [false, true]) {
    const w = new FrameWriter();
    w.add(checkpoint ? durableCheckpointFrameIndex : durableFrameIndex, records);
    w.add(2, send);
    const buf = w.finish();
    const lead = leadingDurableFrame(buf);
    t.ok(lead, 'found');
    t.same([...(lead?.bytes ?? [])], [...records], 'the records, byte for byte');
    t.equal(lead?.checkpoint, checkpoint, 'checkpoint flag');
    t.ok((lead?.end ?? 0) < buf.byteLength, 'sends follow');
    const fabric = new Fabric<WirePayload>({});
    fabric.addNode('n1');
    fabric.addNode('n2');
    const got: Array<[string, number]> = [];
    const driver = new LiveFabricDriver(fabric, (to, frames) => {
      readFrames(frames, (from, bytes) => got.push([to, from === 1 ? bytes.byteLength : -1]));
    });
    driver.submitFrames('n1', buf);
    await new Promise((r) => setImmediate(r));
    driver.close();
    t.same(got, [['n2', send.byteLength]], 'only the send reaches the fabric, from n1 to n2');
  }
  const plain = new FrameWriter();
  plain.add(2, send);
  t.equal(leadingDurableFrame(plain.finish()), undefined, 'a buffer of sends only has no durable frame');
  t.equal(leadingDurableFrame(new ArrayBuffer(3)), undefined, 'shorter than a header');
  t.ok(
    reservedFrameIndexMin > 64 && durableFrameIndex < 0x8000,
    'reserved indexes lie above every node index and below the traced flag',
  );
});
