import t from 'tap';
import { kvReplayCommand, kvSwarmProfile, runKvSwarm } from '../../src/replication/swarm/kv-swarm.js';

/** Seeds per `make test`; KV_SWARM_SEEDS / KV_SWARM_FIRST_SEED widen or move the window. */
const seeds = Number(process.env.KV_SWARM_SEEDS ?? 500);
const firstSeed = Number(process.env.KV_SWARM_FIRST_SEED ?? 1);

t.test('one multi_leader seed replays exactly: same trace hash, same verdicts', async (t) => {
  const a = runKvSwarm('multi_leader', 7);
  const b = runKvSwarm('multi_leader', 7);
  t.equal(a.traceHash, b.traceHash);
  t.same(a.verdicts, b.verdicts);
  t.same(a.stats, b.stats);
  t.not(a.traceHash, runKvSwarm('multi_leader', 8).traceHash, 'another seed, another run');
});

const title = `multi_leader converges, loses no acknowledged write causally and keeps sane clocks, over ${seeds} seeds`;
t.test(title, async (t) => {
  let failed = 0;
  const totals = { ops: 0, crashes: 0, partitions: 0, pauses: 0, conflicts: 0, acked: 0 };
  const resolvers = new Map<string, number>();
  for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
    const r = runKvSwarm('multi_leader', seed);
    const resolver = kvSwarmProfile('multi_leader', seed).config.conflict_resolver;
    resolvers.set(resolver, (resolvers.get(resolver) ?? 0) + r.stats.conflicts);
    totals.ops += r.stats.ops;
    totals.crashes += r.stats.crashes;
    totals.partitions += r.stats.partitions;
    totals.pauses += r.stats.pauses;
    totals.conflicts += r.stats.conflicts;
    totals.acked += r.stats.ackedChecked;
    if (!r.ok) {
      failed++;
      t.fail(`seed ${seed}: ${r.violations.join(' | ')}\n  replay: ${kvReplayCommand('multi_leader', seed)}`);
      if (failed >= 5) break;
    }
  }
  const checks = 'convergence, no causally lost acked write, vector-clock sanity, durable fold = served, liveness';
  t.equal(failed, 0, `every seed passed (${checks})`);
  t.same([...resolvers.keys()].sort(), ['crdt', 'lww', 'vector_clock'], 'every resolver ran');
  for (const [resolver, n] of resolvers) {
    t.ok(n > seeds / 10, `${resolver}: concurrent writes conflicted (${n} detections)`);
  }
  t.ok(totals.crashes > seeds, `nodes crashed and restarted from their durable fold (${totals.crashes})`);
  t.ok(totals.partitions > seeds, `partitions (${totals.partitions})`);
  t.ok(totals.pauses > seeds / 10, `pauses (${totals.pauses})`);
  t.ok(totals.acked > seeds * 20, `acknowledged writes were checked on every node after the heal (${totals.acked})`);
  t.ok(totals.ops > seeds * 50, `clients did real work (${totals.ops} operations)`);
});
