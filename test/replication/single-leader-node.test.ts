// createSingleLeaderCore's wrapper is a class (cores/single-leader/node.ts) instead of an object literal
// with a `get term()`, which V8 kept alive, with the core and everything it holds, through young-generation
// GCs after it was dropped. The class must behave exactly as the literal did: every input records its time
// for drain(), `term` is the epoch, and a run driven the same way writes the same trace.
import t from 'tap';
import { DetCluster } from '../../src/fabric/deterministic.js';
import { clusterConfig } from '../../src/replication/config.js';
import { coreTimingsDefault, type CoreOptions, type NodeCore } from '../../src/replication/core.js';
import { createSingleLeaderCore, SingleLeaderCore } from '../../src/replication/cores/single-leader.js';
import { SeededRng } from '../../src/util/rng.js';

/** The wrapper as it was before node.ts: an object literal of closures over the core. */
function literalWrapper(opts: CoreOptions): NodeCore & { readonly term: number } {
  const core = new SingleLeaderCore(opts);
  core.observeTime(opts.now);
  return {
    id: core.id,
    get term() {
      return core.term;
    },
    onClient: (req, now) => {
      core.observeTime(now);
      core.onClient(req, now);
    },
    onMessage: (from, msg, now) => {
      core.observeTime(now);
      core.onMessage(from, msg, now);
    },
    onTick: (now) => {
      core.observeTime(now);
      core.onTick(now);
    },
    nextDeadline: () => core.nextDeadline(),
    drain: (out) => core.drain(out),
    control: (cmd, now) => {
      core.observeTime(now);
      return core.control(cmd, now);
    },
    status: (now) => core.status(now),
    logView: () => core.logView(),
    storeView: () => core.storeView(),
  };
}

/** A run with writes, a partition, a failover and a lagging follower catching up; its trace and views. */
function drive(factory: (opts: CoreOptions) => NodeCore, mode: 'async' | 'sync' | 'semi_sync'): unknown[] {
  const ids = ['n1', 'n2', 'n3'];
  const c = new DetCluster({
    factory,
    nodeIds: ids,
    config: clusterConfig({ strategy: 'single_leader', node_count: 3, replication_mode: mode }),
    seed: 7,
  });
  const replies: unknown[] = [];
  for (let i = 0; i < 20; i++) {
    if (i === 5) c.fabric.partition(['n3'], ['n1', 'n2']);
    const id = c.client('n1', { op: i % 4 === 3 ? 'delete' : 'write', key: `k${i % 3}`, value: `v${i}` });
    replies.push(c.runUntilReply(id, 2000));
  }
  for (const n of ids) c.control(n, { kind: 'set_leader', leader_id: 'n2', epoch: 1 });
  c.fabric.heal([...c.fabric.partitions().keys()][0] as string);
  const w = c.client('n2', {
    op: 'batch',
    entries: [
      { key: 'a', value: '1' },
      { key: 'b', value: '2' },
    ],
  });
  replies.push(c.runUntilReply(w, 2000));
  c.runFor(1500);
  const terms = ids.map((n) => (c.core(n) as NodeCore & { readonly term: number }).term);
  const views = ids.map((n) => [c.core(n).status(c.now), c.core(n).storeView(), c.core(n).logView()]);
  return [c.traceHash(), c.trace, replies, terms, views];
}

t.test('the class wrapper runs exactly as the object literal did', async (t) => {
  for (const mode of ['async', 'sync', 'semi_sync'] as const) {
    t.same(drive(createSingleLeaderCore, mode), drive(literalWrapper, mode), `${mode}: same trace, replies and views`);
  }
});

t.test('term is the epoch, read through the class getter', async (t) => {
  const opts: CoreOptions = {
    id: 'n1',
    cluster_id: 'c',
    peers: ['n1', 'n2'],
    config: clusterConfig({ strategy: 'single_leader', node_count: 2 }),
    timings: coreTimingsDefault,
    rng: new SeededRng(1),
    now: 1000,
  };
  const core = createSingleLeaderCore(opts);
  t.equal(core.id, 'n1');
  t.ok('term' in core, 'term is there for the swarm storage to pass on');
  t.equal(Object.getOwnPropertyDescriptor(core, 'term'), undefined, 'term is the class getter, not an own accessor');
  t.equal(core.term, 0);
  core.control({ kind: 'set_leader', leader_id: 'n1', epoch: 3 }, 1500);
  t.equal(core.term, 3, 'term follows the epoch');
  t.equal(core.status(1500).term, 3);
});
