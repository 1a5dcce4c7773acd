/**
 * The seeded swarm for the three non-raft strategies (single_leader, multi_leader, leaderless): the
 * real core under the deterministic runtime with random partitions, drops, latency, pauses and
 * crashes (restarted from the fold of the node's durable records, as the live front does) while
 * clients write, delete, batch and read; then everything heals and each strategy's own promises are
 * checked (kv-swarm-checks.ts). Everything comes from the seed, so a failing seed replays
 * exactly. It is a test driver, not part of the service; raft has its own (raft-swarm.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  ClientOp,
  ClientReply,
  ClusterConfig,
  CoreEvent,
  CoreFactory,
  DurableFold,
  NodeCore,
  NodeId,
  Version,
} from '../core.js';
import { clusterConfig } from '../config.js';
import { createSingleLeaderCore, singleLeaderDurableFold } from '../cores/single-leader.js';
import { createMultiLeaderCore, multiLeaderDurableFold } from '../cores/multi-leader.js';
import { createLeaderlessCore, leaderlessDurableFold } from '../cores/leaderless.js';
import { cloneSingleLeaderPersisted, isSingleLeaderPersisted } from '../cores/single-leader/durable.js';
import { cloneMultiLeaderPersisted, type MultiLeaderPersisted } from '../cores/multi-leader/durable.js';
import { cloneLeaderlessPersisted, isLeaderlessPersisted } from '../cores/leaderless/durable.js';
import { compareClocks, descends, mergeClocks, type VClock } from '../dynamo/vclock.js';
import { lwwCompare } from '../dynamo/version.js';
import { AssertionFailure, unreachable } from '../../util/assert.js';
import { SeededRng } from '../../util/rng.js';
import { applyNetworkFault } from './network-faults.js';
import { cloneData, withDurableStorage, type ClockSampled } from './durable-storage.js';
import { pickWeighted, startSwarmRun, withLazyTrace, type SwarmRunOptions } from './swarm-run.js';
import { kvSwarmTraceLinesMax } from '../limits.js';
import { lastEntryEpochOf } from '../core.js';
import {
  checkAcknowledged,
  checkQuorumOverlap,
  clockText,
  convergenceProblem,
  sortedJson,
  type KvOp,
} from './kv-swarm-checks.js';

export { cloneData, withDurableStorage };

export type KvStrategy = 'single_leader' | 'multi_leader' | 'leaderless';
export const kvStrategies: readonly KvStrategy[] = ['single_leader', 'multi_leader', 'leaderless'];

/** A key-value run's options: the shared ones (swarm-run.ts) and how long convergence may take. */
export interface KvSwarmOptions extends SwarmRunOptions {
  /** Virtual ms after the heal within which every replica must agree (anti-entropy, handoff, catch-up). */
  convergeMs: number;
}

export const defaultKvSwarmOptions: KvSwarmOptions = {
  faultMs: 3000,
  convergeMs: 8000,
  clientGiveUpMs: 1500,
  opsMax: 600,
};

/**
 * `crash`: the node dies and stays down until a `restart` (or the heal) rebuilds it from the fold of
 * the durable records it drained; for single_leader a crashed leader is failed over at once to the
 * online node that applied most (what cluster.ts failover() does), and a restarted node is told the
 * current leader. `bounce`: crash and restart at once.
 */
const kvFaults = [
  'partition',
  'heal',
  'drop',
  'latency',
  'clear',
  'pause',
  'resume',
  'crash',
  'restart',
  'bounce',
] as const;
export type KvFault = (typeof kvFaults)[number];

/** Each seed draws its own fault mix, load and configuration variant (swarm testing, as raft-swarm.ts). */
export interface KvSwarmProfile {
  nodes: number;
  /** Most nodes down (paused or crashed) at once. */
  downMax: number;
  weights: Record<KvFault, number>;
  faultGapMs: [number, number];
  /** Chance that a node-directed fault hits the single leader (or node n1). */
  leaderBias: number;
  latencyMs: [number, number];
  clients: number;
  keys: number;
  thinkMs: number;
  readShare: number;
  config: ClusterConfig;
}

export function kvSwarmProfile(strategy: KvStrategy, seed: number): KvSwarmProfile {
  const r = new SeededRng(seed).fork().fork();
  const weights = {} as Record<KvFault, number>;
  for (const k of kvFaults) weights[k] = r.chance(0.2) ? 0 : r.range(1, 10);
  let config: ClusterConfig;
  let nodes: number;
  let downMax: number;
  switch (strategy) {
    case 'single_leader': {
      // One node down at a time, so a failover always has every follower that acknowledged to choose from.
      nodes = 3;
      downMax = 1;
      const mode = (['async', 'sync', 'semi_sync'] as const)[r.int(3)] ?? 'async';
      config = clusterConfig({ strategy, node_count: nodes, replication_mode: mode });
      break;
    }
    case 'multi_leader': {
      nodes = r.range(2, 4);
      downMax = nodes - 1;
      const resolver = (['lww', 'vector_clock', 'crdt'] as const)[r.int(3)] ?? 'lww';
      config = clusterConfig({ strategy, node_count: nodes, conflict_resolver: resolver });
      break;
    }
    case 'leaderless': {
      nodes = 5;
      downMax = 2;
      const quorum = (
        [
          [3, 2, 2],
          [3, 3, 1],
          [3, 1, 3],
          [5, 3, 3],
        ] as const
      )[r.int(4)] ?? [3, 2, 2];
      const repair = (['async', 'sync', 'digest'] as const)[r.int(3)] ?? 'async';
      config = clusterConfig({
        strategy,
        node_count: nodes,
        quorum_n: quorum[0],
        quorum_w: quorum[1],
        quorum_r: quorum[2],
        read_repair_mode: repair,
        sloppy_quorum: r.chance(0.6),
      });
      break;
    }
    default:
      return unreachable(strategy);
  }
  const lo = r.range(0, 10);
  return {
    nodes,
    downMax,
    weights,
    faultGapMs: r.chance(0.5) ? [20, 120] : [50, 300],
    leaderBias: r.next() * 0.8,
    latencyMs: [lo, r.range(lo + 1, 30)],
    clients: r.range(2, 4),
    keys: r.range(1, 4),
    thinkMs: r.range(3, 40),
    readShare: 0.2 + r.next() * 0.4,
    config,
  };
}

/** core_invariant: a core's own assertion (util/assert) failed during the run. */
const kvVerdicts = [
  'convergence',
  'no_lost_ack_write',
  'quorum_overlap',
  'vclock_sanity',
  'durable_fold',
  'liveness',
  'core_invariant',
] as const;
export type KvVerdict = (typeof kvVerdicts)[number];

export interface KvSwarmResult {
  strategy: KvStrategy;
  seed: number;
  ok: boolean;
  traceHash: string;
  verdicts: Record<KvVerdict, boolean>;
  violations: string[];
  stats: {
    virtualMs: number;
    ops: number;
    okOps: number;
    indeterminate: number;
    faults: number;
    crashes: number;
    restarts: number;
    partitions: number;
    pauses: number;
    failovers: number;
    conflicts: number;
    hintedHandoffs: number;
    /** Acknowledged writes whose survival was checked after the heal. */
    ackedChecked: number;
    /** Reads checked against an earlier acknowledged write (leaderless quorum overlap). */
    overlapReadsChecked: number;
    messages: number;
    convergeMs: number;
  };
  trace: string[];
}

const foldOf: Record<KvStrategy, DurableFold> = {
  single_leader: singleLeaderDurableFold,
  multi_leader: multiLeaderDurableFold,
  leaderless: leaderlessDurableFold,
};
const factoryOf: Record<KvStrategy, CoreFactory> = {
  single_leader: createSingleLeaderCore,
  multi_leader: createMultiLeaderCore,
  leaderless: createLeaderlessCore,
};

/**
 * Each strategy's deep copy of its own fold (the same value as cloneData's, built without a generic
 * walk), cloneData for anything else.
 */
export const persistedCloneOf: Record<KvStrategy, (persisted: unknown) => unknown> = {
  single_leader: (p) => (isSingleLeaderPersisted(p) ? cloneSingleLeaderPersisted(p) : cloneData(p)),
  multi_leader: (p) => (p instanceof Map ? cloneMultiLeaderPersisted(p as MultiLeaderPersisted) : cloneData(p)),
  leaderless: (p) => (isLeaderlessPersisted(p) ? cloneLeaderlessPersisted(p) : cloneData(p)),
};

/** What a node restarted from `fold` would serve: key -> the version a read there returns (tombstones included). */
export function servedFromFold(strategy: KvStrategy, fold: unknown): Record<string, Version> {
  const out: Record<string, Version> = {};
  if (fold === undefined) return out;
  switch (strategy) {
    case 'single_leader':
    case 'leaderless': {
      const store = (fold as { store: Map<string, Version> }).store;
      for (const [k, v] of store) out[k] = v;
      return out;
    }
    case 'multi_leader': {
      for (const [k, ks] of fold as Map<string, { versions: Version[] }>) {
        let best: Version | undefined;
        for (const v of ks.versions) if (!best || lwwCompare(v, best) > 0) best = v;
        if (best) out[k] = best;
      }
      return out;
    }
    default:
      return unreachable(strategy);
  }
}

/** status().extra.siblings of a multi_leader node (vector_clock resolver). */
type SiblingsView = Record<string, Array<{ vclock: VClock }>>;

interface ClientState {
  name: string;
  seq: number;
  req: { id: number; op: ClientOp; invoke: number; node: NodeId } | undefined;
  nextIssueAt: number;
}

/** Runs one seed of one strategy. Never throws for a protocol bug: assertions become violations. */
export function runKvSwarm(strategy: KvStrategy, seed: number, options: Partial<KvSwarmOptions> = {}): KvSwarmResult {
  const o: KvSwarmOptions = { ...defaultKvSwarmOptions, ...options };
  const profile = kvSwarmProfile(strategy, seed);
  const ids = Array.from({ length: profile.nodes }, (_, i) => `n${i + 1}`);
  const violations: string[] = [];
  const failed = new Set<KvVerdict>();
  const fail = (v: KvVerdict, msg: string): void => {
    failed.add(v);
    if (violations.length < 50) violations.push(`${v}: ${msg}`);
  };
  const counts = {
    faults: 0,
    crashes: 0,
    restarts: 0,
    partitions: 0,
    pauses: 0,
    failovers: 0,
    conflicts: 0,
    hintedHandoffs: 0,
  };
  /** Events of this step, handled between steps (onEvent may not drive the cluster). */
  const conflictEvents: Array<{ node: NodeId; key: string; local: VClock; remote: VClock }> = [];
  /** leaderless: `${node}|${at}|${key}` -> whether the write quorum that answered then used a stand-in. */
  const writeQuorums = new Map<string, boolean>();
  const onEvent = (e: CoreEvent & { at: number }): void => {
    const type = e.type;
    if (type !== 'conflict_detected' && type !== 'hinted_handoff' && type !== 'quorum_achieved') return;
    const d = e.data ?? {};
    if (type === 'conflict_detected') {
      counts.conflicts++;
      const local = (d['local'] as { vclock?: VClock } | undefined)?.vclock;
      const remote = (d['remote'] as { vclock?: VClock } | undefined)?.vclock;
      if (local && remote && typeof d['key'] === 'string') {
        conflictEvents.push({ node: e.node_id ?? '', key: d['key'], local, remote });
      }
    } else if (e.type === 'hinted_handoff') {
      counts.hintedHandoffs++;
    } else if (e.type === 'quorum_achieved' && typeof d['key'] === 'string') {
      const k = `${e.node_id}|${e.at}|${d['key']}`;
      // Two quorums for one key at one node and instant cannot be told apart: count both as sloppy.
      writeQuorums.set(k, writeQuorums.has(k) ? true : d['sloppy'] === true);
    }
  };
  const run = startSwarmRun(
    {
      factory: withDurableStorage(factoryOf[strategy], foldOf[strategy], persistedCloneOf[strategy]),
      nodeIds: ids,
      config: profile.config,
      seed,
      onEvent,
      onEventTypes: ['conflict_detected', 'hinted_handoff', 'quorum_achieved'],
      // Events are watched through onEvent only: none kept in memory.
      eventsMax: 0,
      traceLinesMax: kvSwarmTraceLinesMax,
    },
    o.observe,
  );
  const { c, rng, start } = run;
  // Base one-way latencies, restored after clearFaults().
  for (const a of ids) {
    for (const b of ids) if (a !== b) run.latencies.set(a, b, rng.range(profile.latencyMs[0], profile.latencyMs[1]));
  }
  const restoreLatency = (): void => run.latencies.restore();

  // ---- single_leader orchestration (cluster.ts failover() and restart, in miniature)
  let leader: NodeId = ids[0] as NodeId;
  let epoch = 0;
  const failover = (): void => {
    const candidates = ids.filter((id) => c.state(id) === 'online');
    if (candidates.length === 0) return;
    const applied = (id: NodeId): number => c.core(id).status(c.now).last_applied;
    // As cluster.ts failover(): the epoch of the last log entry first, then last_applied.
    const lastEpoch = (id: NodeId): number => lastEntryEpochOf(c.core(id).status(c.now));
    candidates.sort(
      (a, b) => lastEpoch(b) - lastEpoch(a) || applied(b) - applied(a) || ids.indexOf(a) - ids.indexOf(b),
    );
    leader = candidates[0] as NodeId;
    epoch++;
    counts.failovers++;
    for (const id of ids) {
      if (c.state(id) !== 'offline') c.control(id, { kind: 'set_leader', leader_id: leader, epoch });
    }
  };
  const crash = (id: NodeId): void => {
    checkFoldAtCrash(id);
    c.crash(id);
    counts.crashes++;
    if (strategy === 'single_leader' && id === leader) failover();
  };
  const restart = (id: NodeId): void => {
    c.restart(id);
    counts.restarts++;
    if (strategy === 'single_leader') c.control(id, { kind: 'set_leader', leader_id: leader, epoch });
  };
  /** What storage holds must be what the node serves: a durable record the core forgot fails here. */
  const checkFoldAtCrash = (id: NodeId): void => {
    const served = c.core(id).storeView();
    const fromFold = servedFromFold(strategy, c.core(id).persistentState?.());
    if (!isDeepStrictEqual(served, fromFold)) {
      fail('durable_fold', `${id} at ${c.now - start} ms: the fold of its durable records differs from what it serves`);
    }
  };

  /** multi_leader: per node, then key, the join of the clocks the node knew at the last sample. */
  const lastJoins = new Map<NodeId, Map<string, VClock>>();
  const lastJoinsOf = (node: NodeId): Map<string, VClock> => {
    let joins = lastJoins.get(node);
    if (joins === undefined) lastJoins.set(node, (joins = new Map()));
    return joins;
  };
  /** A node's clocks of a key never go back: the join now descends the last one seen, which it replaces. */
  const observeJoin = (id: NodeId, joins: Map<string, VClock>, key: string, join: VClock): void => {
    const prev = joins.get(key);
    if (prev && !descends(join, prev)) {
      fail('vclock_sanity', `${id} ${key}: clock went from ${clockText(prev)} to ${clockText(join)}`);
    }
    joins.set(key, join);
  };

  // ---- clients
  const ops: KvOp[] = [];
  const clients: ClientState[] = Array.from({ length: profile.clients }, (_, i) => ({
    name: `c${i + 1}`,
    seq: 0,
    req: undefined,
    nextIssueAt: start + rng.range(0, 50),
  }));
  let issued = 0;
  /** The keys' names, k0, k1, ..., built once. */
  const keyNames = Array.from({ length: profile.keys }, (_, i) => `k${i}`);
  const finish = (cl: ClientState, reply: ClientReply | undefined, at: number): void => {
    const req = cl.req;
    if (!req) return;
    cl.req = undefined;
    cl.nextIssueAt = at + 1 + rng.range(0, profile.thinkMs);
    const rec: KvOp = { client: cl.name, node: req.node, op: req.op, invoke: req.invoke, complete: at, reply };
    if (reply === undefined || (!reply.ok && reply.indeterminate)) rec.complete = Infinity;
    if (reply?.ok && strategy === 'single_leader' && req.op.op !== 'read') {
      // The single_leader core's `term` accessor (its status().term, without building the status) when the
      // wrapper around it passes it on.
      const core = c.core(req.node) as NodeCore & { readonly term?: number };
      rec.epoch = core.term ?? core.status(at).term ?? 0;
    }
    if (reply?.ok && strategy === 'multi_leader' && req.op.op !== 'read') {
      // A local write has seen everything its node knew of the key: its clock dominates the last sample.
      const versions = reply.result.kind === 'entry' ? [reply.result.entry] : reply.result.entries;
      const joins = lastJoins.get(req.node);
      for (const v of versions) {
        const prev = joins?.get(v.key);
        if (prev && compareClocks(v.vclock, prev) !== 'after') {
          const what = `a local write's clock ${clockText(v.vclock)} does not dominate what it knew ${clockText(prev)}`;
          fail('vclock_sanity', `${req.node} ${v.key}: ${what}`);
        }
      }
    }
    if (reply?.ok && strategy === 'leaderless' && req.op.op !== 'read' && req.op.op !== 'batch') {
      const q = writeQuorums.get(`${req.node}|${at}|${req.op.key}`);
      rec.sloppy = q !== false;
    }
    ops.push(rec);
  };
  const issue = (cl: ClientState): void => {
    issued++;
    cl.seq++;
    const k = rng.int(profile.keys);
    const key = keyNames[k] as string;
    const value = `${cl.name}-${cl.seq}`;
    const roll = rng.next();
    const op: ClientOp =
      roll < profile.readShare
        ? { op: 'read', key }
        : roll < 0.85
          ? { op: 'write', key, value }
          : roll < 0.93
            ? { op: 'delete', key }
            : {
                op: 'batch',
                entries: [
                  { key, value },
                  { key: keyNames[(k + 1) % profile.keys] as string, value: `${value}b` },
                ],
              };
    // Writes go to the leader the client knows (single_leader); a stray share tests not_leader.
    const toLeader = strategy === 'single_leader' && op.op !== 'read' && !rng.chance(0.1);
    const node = toLeader ? leader : (ids[rng.int(ids.length)] as NodeId);
    const id = c.client(node, op);
    cl.req = { id, op, invoke: c.now, node };
    const immediate = c.reply(id);
    if (immediate) finish(cl, immediate, c.now);
  };
  // A call, not the store itself, in the run's loop: the first seed of a process that reaches opsMax
  // would otherwise throw away the loop's optimised code (a store the code had never seen).
  const stopIssuing = (cl: ClientState): void => {
    cl.nextIssueAt = Infinity;
  };
  const pollReplies = (): void => {
    for (const cl of clients) {
      if (!cl.req) continue;
      const r = c.reply(cl.req.id);
      if (r) finish(cl, r, c.now);
    }
  };

  // ---- vector-clock sanity (multi_leader): per node and key, the join of the clocks it knows never decreases;
  // after a conflict, the node's clock for the key dominates both sides.
  const checkClocks = (): void => {
    if (strategy !== 'multi_leader') return;
    for (const id of ids) {
      if (c.state(id) === 'offline') continue;
      const core = c.core(id);
      const joins = lastJoinsOf(id);
      const samples = (core as NodeCore & ClockSampled).clockSamples?.();
      if (samples !== undefined) {
        // The same clocks, in the same order, as the views below give.
        for (const { key, winner, siblings } of samples) {
          let join: VClock = winner;
          if (siblings !== undefined) for (const s of siblings) join = mergeClocks(join, s);
          observeJoin(id, joins, key, join);
        }
        continue;
      }
      const store = core.storeView();
      const siblings = (core.status(c.now).extra?.['siblings'] ?? {}) as SiblingsView;
      for (const [key, v] of Object.entries(store)) {
        let join: VClock = v.vclock;
        for (const s of siblings[key] ?? []) join = mergeClocks(join, s.vclock);
        observeJoin(id, joins, key, join);
      }
    }
    for (const e of conflictEvents.splice(0)) {
      if (c.state(e.node) === 'offline') continue;
      let join: VClock;
      const samples = (c.core(e.node) as NodeCore & ClockSampled).clockSamples?.();
      if (samples !== undefined) {
        const sample = samples.find((x) => x.key === e.key);
        join = sample?.winner ?? {};
        if (sample?.siblings !== undefined) for (const s of sample.siblings) join = mergeClocks(join, s);
      } else {
        const v = c.core(e.node).storeView()[e.key];
        const siblings = (c.core(e.node).status(c.now).extra?.['siblings'] ?? {}) as SiblingsView;
        join = v?.vclock ?? {};
        for (const s of siblings[e.key] ?? []) join = mergeClocks(join, s.vclock);
      }
      if (!descends(join, e.local) || !descends(join, e.remote)) {
        const sides = `${clockText(e.local)} ${clockText(e.remote)}`;
        const what = `after a conflict its clock ${clockText(join)} does not dominate both sides ${sides}`;
        fail('vclock_sanity', `${e.node} ${e.key}: ${what}`);
      }
    }
  };

  const pickFault = (): KvFault | undefined => pickWeighted(kvFaults, profile.weights, rng);
  const down = (): NodeId[] => ids.filter((id) => c.state(id) !== 'online');
  const injectFault = (): void => {
    const kind = pickFault();
    if (!kind) return;
    counts.faults++;
    const focus = strategy === 'single_leader' ? leader : (ids[0] as NodeId);
    const node = rng.chance(profile.leaderBias) ? focus : (ids[rng.int(ids.length)] as NodeId);
    const other = ids[rng.int(ids.length)] as NodeId;
    switch (kind) {
      case 'partition':
        applyNetworkFault(c, rng, kind, ids, node, other);
        counts.partitions++;
        return;
      case 'heal':
      case 'drop':
      case 'latency':
        applyNetworkFault(c, rng, kind, ids, node, other);
        return;
      case 'clear':
        c.fabric.clearFaults();
        restoreLatency();
        return;
      case 'pause':
        if (c.state(node) === 'online' && down().length < profile.downMax) {
          c.pause(node);
          counts.pauses++;
        }
        return;
      case 'resume': {
        const paused = ids.filter((id) => c.state(id) === 'paused');
        const r = paused[rng.int(paused.length)];
        if (r) c.resume(r);
        return;
      }
      case 'crash':
        if (c.state(node) === 'online' && down().length < profile.downMax) crash(node);
        return;
      case 'restart': {
        const crashed = ids.filter((id) => c.state(id) === 'offline');
        const r = crashed[rng.int(crashed.length)];
        if (r) restart(r);
        return;
      }
      case 'bounce':
        if (c.state(node) === 'online' && down().length < profile.downMax) {
          crash(node);
          restart(node);
        }
        return;
      default:
        unreachable(kind);
    }
  };

  let convergeMs = -1;
  let ackedChecked = 0;
  let overlapReadsChecked = 0;
  try {
    // ---- fault phase
    const faultEnd = start + o.faultMs;
    let nextFaultAt = start + rng.range(50, 200);
    let nextClockCheckAt = start + 50;
    for (;;) {
      let driverAt = Math.min(nextFaultAt, nextClockCheckAt);
      for (const cl of clients) {
        const at = cl.req ? cl.req.invoke + o.clientGiveUpMs : cl.nextIssueAt;
        if (at < driverAt) driverAt = at;
      }
      const evAt = c.nextEventAt();
      if (Math.min(evAt, driverAt) > faultEnd) break;
      if (evAt <= driverAt) {
        c.stepAt(evAt);
        pollReplies();
        continue;
      }
      c.runUntil(driverAt);
      const now = c.now;
      if (now >= nextFaultAt) {
        injectFault();
        nextFaultAt = now + rng.range(profile.faultGapMs[0], profile.faultGapMs[1]);
      }
      if (now >= nextClockCheckAt) {
        checkClocks();
        nextClockCheckAt = now + 50;
      }
      for (const cl of clients) {
        if (cl.req && now >= cl.req.invoke + o.clientGiveUpMs) finish(cl, undefined, now);
        else if (!cl.req && now >= cl.nextIssueAt) {
          if (issued < o.opsMax) issue(cl);
          else stopIssuing(cl);
        }
      }
    }
    c.runUntil(faultEnd);
    pollReplies();

    // ---- heal: faults cleared, every node back (a restarted single_leader node is told the leader).
    const healAt = c.now;
    c.fabric.clearFaults();
    restoreLatency();
    for (const id of ids) {
      if (c.state(id) === 'paused') c.resume(id);
      else if (c.state(id) === 'offline') restart(id);
    }
    // Requests still open finish (or time out) before the convergence clock starts.
    const settleUntil = c.now + o.clientGiveUpMs;
    for (let at = c.nextEventAt(); at <= settleUntil; at = c.nextEventAt()) {
      c.stepAt(at);
      pollReplies();
    }
    c.runUntil(settleUntil);
    for (const cl of clients) if (cl.req) finish(cl, undefined, c.now);

    // ---- convergence: every live replica agrees within convergeMs.
    const divergence = (): string | undefined => convergenceProblem(strategy, c, ids, profile.config, leader);
    const deadline = c.now + o.convergeMs;
    let problem = divergence();
    while (problem !== undefined && c.now < deadline) {
      c.runFor(100);
      checkClocks();
      problem = divergence();
    }
    convergeMs = c.now - healAt;
    if (problem !== undefined) fail('convergence', `${problem} (${o.convergeMs} ms after the heal)`);
    checkClocks();

    // ---- the strategy's promise about acknowledged writes
    const r = checkAcknowledged(strategy, c, ops, profile.config, leader, fail);
    ackedChecked = r.acked;
    overlapReadsChecked = strategy === 'leaderless' ? checkQuorumOverlap(ops, profile.config, fail) : 0;
    // Liveness: the healed cluster serves a write and a read.
    const writer = strategy === 'single_leader' ? leader : (ids[rng.int(ids.length)] as NodeId);
    const w = c.runUntilReply(c.client(writer, { op: 'write', key: 'probe', value: 'p' }), 3000);
    const rd = w?.ok ? c.runUntilReply(c.client(writer, { op: 'read', key: 'probe' }), 3000) : undefined;
    if (!w?.ok || !rd?.ok) {
      const why = w?.ok ? (rd?.ok === false ? rd.code : 'no read reply') : w?.ok === false ? w.code : 'no write reply';
      fail('liveness', `after the heal ${writer} did not serve a write and a read (${why})`);
    }
  } catch (err) {
    if (!(err instanceof AssertionFailure)) throw err;
    fail('core_invariant', `assertion: ${err.message}`);
  }

  const verdicts = {} as Record<KvVerdict, boolean>;
  for (const v of kvVerdicts) verdicts[v] = !failed.has(v);
  const readTrace = run.readTrace;
  const result = {
    strategy,
    seed,
    ok: failed.size === 0,
    traceHash: c.traceHash(),
    verdicts,
    violations,
    stats: {
      virtualMs: c.now - start,
      ops: ops.length,
      okOps: ops.filter((x) => x.reply?.ok).length,
      indeterminate: ops.filter((x) => x.complete === Infinity).length,
      ...counts,
      ackedChecked,
      overlapReadsChecked,
      messages: c.fabric.stats().submitted,
      convergeMs,
    },
  };
  // Built only when read: a window of seeds never reads it.
  return withLazyTrace(result, readTrace);
}

/** The command that replays one seed. */
export function kvReplayCommand(strategy: KvStrategy, seed: number): string {
  const cli = `node dist/src/replication/swarm/cli.js --seed ${seed} --strategy ${strategy} --verbose`;
  return `${cli}   (or: make sim STRATEGY=${strategy} SEED=${seed})`;
}
