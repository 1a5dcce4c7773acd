/**
 * A pooled node actor is indistinguishable from a fresh one: two raft nodes with the same seed and
 * the same configuration, one taken warm from an ActorPool (booted ahead, told to load raft while
 * idle) and one started fresh, run the same: their election timeout is the one the seed draws
 * (SeededRng replayed here), their first campaign is the same messages and durable records, their
 * state and heap limit are the same. In-process (NodeHandle, real worker threads under tap's loader);
 * the peers never answer, so each node's run is driven by its seed and its clock alone.
 */
import t from 'tap';
import { ActorPool, NodeHandle } from '../../src/replication/node-handle.js';
import { clusterConfig } from '../../src/replication/config.js';
import { defaultTimings, type CoreTimings } from '../../src/replication/core.js';
import { SeededRng } from '../../src/util/rng.js';
import { decode, readFrames } from '../../protocol/actor.js';

/**
 * Election timeouts drawn from 200 ms to 120 s: a node whose random source were not its seed's would
 * campaign at a time far from the one replayed here (a window of 3 s in 120 s).
 */
const timings: CoreTimings = { ...defaultTimings, electionTimeoutMsMin: 200, electionTimeoutMsMax: 120_000 };
const toleranceMs = 1_500;
/** The first seed whose drawn timeout is 2-3 s: long enough to tell apart, short enough to wait for. */
let seed = 1;
while (!(draw(seed) >= 2_000 && draw(seed) <= 3_000)) seed++;
function draw(s: number): number {
  return new SeededRng(s).range(timings.electionTimeoutMsMin, timings.electionTimeoutMsMax);
}

const peers = ['n1', 'n2', 'n3'];
const coreOpts = (id: string, clusterId: string) => ({
  id,
  cluster_id: clusterId,
  peers,
  config: clusterConfig({ strategy: 'raft', node_count: 3 }),
  timings,
  regions: { n1: 0, n2: 0, n3: 0 },
});

interface Run {
  handle: NodeHandle;
  readyAt: number;
  firstNetAt: Promise<{ at: number; frames: Array<{ to: number; msg: unknown }> }>;
}

function start(pool: ActorPool, id: string): Run {
  let resolveNet!: (x: { at: number; frames: Array<{ to: number; msg: unknown }> }) => void;
  const firstNetAt = new Promise<{ at: number; frames: Array<{ to: number; msg: unknown }> }>((r) => {
    resolveNet = r;
  });
  let seen = false;
  const handle = new NodeHandle(
    id,
    coreOpts(id, 'same-cluster'),
    seed,
    timings.requestTimeoutMs,
    {
      onNet: (_from, buf) => {
        if (seen) return;
        seen = true;
        const frames: Array<{ to: number; msg: unknown }> = [];
        readFrames(buf, (to, bytes) => frames.push({ to, msg: decode(bytes) }));
        resolveNet({ at: performance.now(), frames });
      },
      onEvents: () => {},
      onExit: () => {},
    },
    undefined,
    undefined,
    pool,
  );
  return { handle, readyAt: NaN, firstNetAt };
}

async function until(cond: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('a pooled raft node runs as a fresh one with the same seed', async (t) => {
  const warm = new ActorPool(2, 100);
  const cold = new ActorPool(0, 100);
  t.teardown(() => warm.drain());
  warm.warm(2, 100);
  await until(() => warm.stats().warm === 2, 'the pool to boot');
  // A first raft node teaches the pool its strategy: the idle actor is told to load raft, a new one boots with it.
  const primer = start(warm, 'n3');
  await primer.handle.ready();
  await until(() => warm.stats().warm === 2 && warm.stats().booting === 0, 'the pool to refill');
  t.equal(warm.stats().live, 1, 'the pool counts its live actor');

  const pooled = start(warm, 'n1');
  const fresh = start(cold, 'n1');
  t.equal(warm.stats().takenWarm, 2, 'one node from the pool');
  t.equal(cold.stats().takenCold, 1, 'one started fresh');
  // Each one's state as soon as it answers (the fresh one boots later: its clock starts later too).
  const [pStart, fStart] = await Promise.all(
    [pooled, fresh].map(async (r) => {
      await r.handle.ready();
      r.readyAt = performance.now();
      return r.handle.remote.status();
    }),
  );
  t.same(pooled.handle.worker.resourceLimits, fresh.handle.worker.resourceLimits, 'the same heap limits');
  t.same(pStart, fStart, 'the same state once started');
  t.equal(pStart?.role, 'follower', 'a follower, not yet timed out');

  const [p, f] = await Promise.all([pooled.firstNetAt, fresh.firstNetAt]);
  const expected = draw(seed);
  const pMs = p.at - pooled.readyAt;
  const fMs = f.at - fresh.readyAt;
  t.ok(
    Math.abs(pMs - expected) <= toleranceMs,
    `the pooled node campaigns at its seed's timeout (${pMs.toFixed(0)} ms, drawn ${expected})`,
  );
  t.ok(Math.abs(fMs - expected) <= toleranceMs, `and so does the fresh one (${fMs.toFixed(0)} ms)`);
  t.same(p.frames, f.frames, 'with the same messages');
  t.ok(p.frames.length >= 2, `to both peers (${p.frames.length} frames)`);
  t.same(await pooled.handle.remote.status(), await fresh.handle.remote.status(), 'and the same state after');
  t.same(
    await pooled.handle.remote.persistentState(),
    await fresh.handle.remote.persistentState(),
    'and the same persistent state (term, vote)',
  );
  t.same(
    pooled.handle.durable.contents().map((b) => Buffer.from(b).toString('hex')),
    fresh.handle.durable.contents().map((b) => Buffer.from(b).toString('hex')),
    'and the same durable records',
  );

  await Promise.all([primer, pooled, fresh].map((r) => r.handle.terminate()));
  await until(() => warm.stats().live === 0 && cold.stats().live === 0, 'the nodes to exit', 10_000);
  t.pass('every taken actor ended with its node');
});
