/**
 * Raft under the deterministic runtime, on one core: simulated raft steps (every input a core
 * handles: timer ticks, peer messages, client requests), timer ticks alone and messages per
 * wall-clock second, virtual seconds per wall second, and swarm seeds per second.
 * Baseline (1.00x): an idle 5-node cluster (heartbeats only) measured in the same run; the other
 * rows add client load, the msgpack wire encoding, and the full swarm (faults + checkers).
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/raft-detsim.js
 */
import { performance } from 'node:perf_hooks';
import { DetCluster } from '../src/fabric/deterministic.js';
import type { ClusterConfig, CoreFactory, NodeCore } from '../src/replication/core.js';
import { createRaftCore } from '../src/replication/cores/raft.js';
import { clusterConfig } from '../src/replication/config.js';
import { runRaftSwarm } from '../src/replication/swarm/raft-swarm.js';
import { recordResult } from './results.js';

const config: ClusterConfig = clusterConfig({ strategy: 'raft', node_count: 5 });
const ids = ['n1', 'n2', 'n3', 'n4', 'n5'];

const fmt = (n: number): string => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));

function table(header: string[], rows: Array<Array<string | number>>): void {
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i]).length)));
  for (const [k, r] of cells.entries()) {
    console.log(r.map((c, i) => String(c).padStart(widths[i] as number)).join('  '));
    if (k === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

/** Counts core inputs by wrapping every core the runtime builds. */
function countingFactory(counter: { ticks: number; steps: number }): CoreFactory {
  return (opts) => {
    const core = createRaftCore(opts);
    const wrapped: NodeCore = {
      id: core.id,
      onClient: (r, now) => {
        counter.steps++;
        core.onClient(r, now);
      },
      onMessage: (f, m, now) => {
        counter.steps++;
        core.onMessage(f, m, now);
      },
      onTick: (now) => {
        counter.steps++;
        counter.ticks++;
        core.onTick(now);
      },
      nextDeadline: () => core.nextDeadline(),
      drain: (out) => core.drain(out),
      control: (cmd, now) => core.control(cmd, now),
      status: (now) => core.status(now),
      logView: () => core.logView(),
      storeView: () => core.storeView(),
      persistentState: () => core.persistentState?.(),
    };
    return wrapped;
  };
}

interface SimRow {
  name: string;
  stepsPerSec: number;
  ticksPerSec: number;
  msgsPerSec: number;
  virtualPerWall: number;
  writesPerSec: number;
}

/** `virtualMs` of a 5-node cluster, idle or with 4 client writes per virtual ms. */
function simulate(name: string, virtualMs: number, opts: { load: boolean; encode: boolean }): SimRow {
  const counter = { ticks: 0, steps: 0 };
  const c = new DetCluster({ factory: countingFactory(counter), nodeIds: ids, config, seed: 1, encode: opts.encode });
  for (const a of ids) for (const b of ids) if (a !== b) c.fabric.setLatency(a, b, 2);
  c.runFor(1000); // elect a leader first
  const leader = ids.find((id) => c.core(id).status(c.now).role === 'leader') ?? 'n1';
  const ticks0 = counter.ticks;
  const steps0 = counter.steps;
  const msgs0 = c.fabric.stats().submitted;
  let writes = 0;
  const t0 = performance.now();
  const end = c.now + virtualMs;
  if (opts.load) {
    // 4 writes per virtual ms in flight at once, pipelined through the leader.
    let n = 0;
    while (c.now < end) {
      for (let k = 0; k < 4; k++) c.client(leader, { op: 'write', key: `k${n++ % 100}`, value: `v${n}` });
      writes += 4;
      c.runFor(1);
    }
  } else {
    c.runUntil(end);
  }
  const secs = (performance.now() - t0) / 1000;
  return {
    name,
    stepsPerSec: (counter.steps - steps0) / secs,
    ticksPerSec: (counter.ticks - ticks0) / secs,
    msgsPerSec: (c.fabric.stats().submitted - msgs0) / secs,
    virtualPerWall: virtualMs / 1000 / secs,
    writesPerSec: writes / secs,
  };
}

function swarm(seeds: number): { seedsPerSec: number; failed: number } {
  let failed = 0;
  const t0 = performance.now();
  for (let s = 1; s <= seeds; s++) if (!runRaftSwarm(s).ok) failed++;
  return { seedsPerSec: seeds / ((performance.now() - t0) / 1000), failed };
}

// Warm up the JIT on every path once.
simulate('warm-up', 2000, { load: true, encode: true });
swarm(10);

const idle = simulate('idle 5 nodes (baseline)', 60_000, { load: false, encode: false });
const loaded = simulate('5 nodes, 4 writes/virtual ms', 2_000, { load: true, encode: false });
const encoded = simulate('same, msgpack on the wire', 2_000, { load: true, encode: true });
const rows = [idle, loaded, encoded];

console.log('\nraft under DetCluster, one core (wall-clock rates)');
table(
  ['run', 'raft steps/s', 'ratio', 'timer ticks/s', 'messages/s', 'ratio', 'virtual s per wall s', 'client writes/s'],
  rows.map((r) => [
    r.name,
    r.stepsPerSec,
    `${(r.stepsPerSec / idle.stepsPerSec).toFixed(2)}x`,
    r.ticksPerSec,
    r.msgsPerSec,
    `${(r.msgsPerSec / idle.msgsPerSec).toFixed(2)}x`,
    r.virtualPerWall,
    r.writesPerSec,
  ]),
);

const seeds = Number(process.env.RAFT_DETSIM_SEEDS ?? 200);
const s = swarm(seeds);
const idleRunMs = 3000 / idle.virtualPerWall;
console.log(`\nswarm: ${seeds} seeds (5 nodes, ~3.1 s virtual each, faults, clients, all checkers)`);
table(
  ['run', 'seeds/s', 'ms/seed', 'ratio vs 3 s of idle sim'],
  [['swarm', s.seedsPerSec, 1000 / s.seedsPerSec, `${(1000 / s.seedsPerSec / idleRunMs).toFixed(2)}x`]],
);
const detMethod =
  'Wall-clock rate of one thread driving a 5-node raft DetCluster in virtual time (one ' +
  'run of each row after a JIT warm-up pass, so no range); a step is any input a core ' +
  'handles (timer tick, peer message, client request)';
for (const r of [loaded, encoded]) {
  recordResult({
    benchmark: 'raft-detsim',
    measure: r.name,
    subject: r.name,
    baseline: idle.name,
    unit: 'raft steps/s',
    runs: [r.stepsPerSec],
    baselineRuns: [idle.stepsPerSec],
    ratio: r.stepsPerSec / idle.stepsPerSec,
    method: `${detMethod}; ratio = this run ÷ the idle 5-node cluster in the same process.`,
  });
}
recordResult({
  benchmark: 'raft-detsim',
  measure: `swarm seeds (${seeds} seeds, faults, clients, all checkers)`,
  subject: 'one swarm seed (~3.1 s virtual)',
  baseline: '3 s of the idle 5-node simulation',
  unit: 'ms/seed',
  runs: [1000 / s.seedsPerSec],
  baselineRuns: [idleRunMs],
  ratio: 1000 / s.seedsPerSec / idleRunMs,
  method:
    'Wall time per swarm seed (runRaftSwarm: 5 nodes, ~3.1 s virtual, faults, clients and ' +
    `every checker), mean over ${seeds} seeds in one thread; ratio = ms per seed ÷ wall ms ` +
    'of 3 virtual seconds of the idle cluster.',
});
if (s.failed) console.log(`WARNING: ${s.failed} seeds failed their checks (run the swarm CLI on them)`);
