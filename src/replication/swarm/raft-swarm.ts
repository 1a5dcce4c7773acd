/**
 * The raft swarm: one seeded run of a raft cluster under the deterministic runtime with random
 * partitions, drops, latency, pauses, crashes (down for a while, then restarted from the fold of
 * their durable records), bounces and membership changes while clients write, delete, batch and
 * read; then everything heals. Membership is driven as the live front does it: a new member is a
 * new node (n6, n7, ...) started and then added through the log, and a node that a committed
 * configuration dropped (membership_changed) is stopped and leaves the cluster. Each run is
 * checked for election safety, log matching, leader completeness, state-machine safety,
 * linearizability of the client history, liveness after the heal, membership (every live node
 * agrees on the configuration and is in it, removed nodes are gone) and convergence (equal
 * stores). Everything (faults, client choices, the cores' timers) comes from the seed, so a
 * failing seed replays exactly. It is a test driver, not part of the service.
 */
import type { DetCluster } from '../../fabric/deterministic.js';
import type { ClientOp, ClientReply, ClusterConfig, CoreTimings, NodeId } from '../core.js';
import { raftCoreFactory, raftDurableFold, RaftCore, type LogEntry, type RaftInspection } from '../cores/raft.js';
import { clusterConfig } from '../config.js';
import { AssertionFailure, unreachable } from '../../util/assert.js';
import { SeededRng } from '../../util/rng.js';
import { checkRegisterHistory, describeRegisterOp, type RegisterOp } from './register-lincheck.js';
import { applyNetworkFault } from './network-faults.js';
import { pickWeighted, startSwarmRun, withLazyTrace, type SwarmRunOptions } from './swarm-run.js';

/** A raft run's options: the shared ones (swarm-run.ts) and the cluster's size and liveness bounds. */
export interface SwarmOptions extends SwarmRunOptions {
  nodes: number;
  /** Virtual ms after the heal within which a leader must serve and every node catch up. */
  livenessMs: number;
  /** Most nodes down (paused or crashed) at once. */
  downMax: number;
  /** Most nodes at once, joining ones included (membership changes add new nodes). */
  nodesMax: number;
  /** Overrides the seed's drawn compaction policy (timings.snapshotCatchUpEntries; 0: the old 'interval'). */
  snapshotCatchUpEntries?: number;
}

export const defaultSwarmOptions: SwarmOptions = {
  nodes: 5,
  faultMs: 3000,
  livenessMs: 4000,
  downMax: 2,
  clientGiveUpMs: 2500,
  opsMax: 1000,
  nodesMax: 7,
};

/**
 * `crash`: the node's process dies and stays down until a `restart` (or the heal) builds it again
 * from the fold of the durable records it drained (DetCluster checks that fold against
 * persistentState() at the crash, so a record the core forgot fails the run). `bounce`: crash and
 * restart at once (what catches a term or vote that is not persisted). `reconfig`: the leader
 * removes a member (never below three) or a new node is started and added.
 */
export type FaultKind =
  | 'partition'
  | 'heal'
  | 'drop'
  | 'latency'
  | 'clear'
  | 'pause'
  | 'resume'
  | 'crash'
  | 'restart'
  | 'bounce'
  | 'reconfig';
const faultKinds: FaultKind[] = [
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
  'reconfig',
];

/**
 * Swarm testing (Groce et al., 2012): each seed draws its own mix of faults, load and timings, so
 * that some runs are dominated by crashes, others by partitions or lossy links, some with fast
 * timers and tiny compaction intervals. A bug that needs one fault kind often and another never is
 * found far sooner than under one fixed mix.
 */
export interface SwarmProfile {
  weights: Record<FaultKind, number>;
  faultGapMs: [number, number];
  /** Chance that a node-directed fault hits the current leader. */
  leaderBias: number;
  latencyMs: [number, number];
  clients: number;
  keys: number;
  thinkMs: number;
  readShare: number;
  /** Share of requests sent to a random node whatever the client believes about the leader. */
  strayShare: number;
  timings: Partial<CoreTimings>;
}

export function swarmProfile(seed: number): SwarmProfile {
  const r = new SeededRng(seed).fork().fork();
  const weights = {} as Record<FaultKind, number>;
  for (const k of faultKinds) weights[k] = r.chance(0.2) ? 0 : r.range(1, 10);
  // Timer profiles: the defaults; fast timers (more elections per virtual second); and tight,
  // barely randomized timeouts that make split votes and concurrent candidates common.
  // Base one-way latency stays well under the minimum election timeout (Raft's timing requirement,
  // broadcastTime << electionTimeout), or liveness after the heal could not be expected.
  const timerChoice = r.int(3);
  const timers = [
    {},
    { electionTimeoutMsMin: 40, electionTimeoutMsMax: 80, heartbeatMs: 15, retransmitMs: 30, requestTimeoutMs: 400 },
    { electionTimeoutMsMin: 40, electionTimeoutMsMax: 50, heartbeatMs: 15, retransmitMs: 30, requestTimeoutMs: 400 },
  ][timerChoice];
  const latencyMax = timerChoice === 0 ? 30 : 6;
  const lo = r.range(0, latencyMax / 3);
  const profile: SwarmProfile = {
    weights,
    faultGapMs: r.chance(0.5) ? [20, 120] : [50, 300],
    leaderBias: r.next() * 0.8,
    latencyMs: [lo, r.range(lo + 1, latencyMax)],
    clients: r.range(2, 5),
    keys: r.range(1, 4),
    thinkMs: r.range(3, 40),
    readShare: 0.2 + r.next() * 0.4,
    strayShare: r.next() * 0.3,
    timings: {
      snapshotEveryEntries: [3, 5, 10, 30][r.int(4)] as number,
      // Small batches expose commit-rule bugs that a whole-suffix append would mask (Figure 8).
      maxEntriesPerMessage: [1, 2, 4, 512][r.int(4)] as number,
      ...timers,
    },
  };
  // Drawn after every draw above, so the rest of a seed's profile is what it was before this draw
  // existed: half the seeds compact as before ('interval', 0), half keep entries for answering
  // followers ('acked', the HTTP default), with tails from one entry (the floor cuts nearly always)
  // to 1000 (the followers' matches decide).
  profile.timings.snapshotCatchUpEntries = r.chance(0.5) ? 0 : ([1, 4, 16, 1000][r.int(4)] as number);
  return profile;
}

export type VerdictName =
  | 'election_safety'
  | 'log_matching'
  | 'leader_completeness'
  | 'state_machine_safety'
  | 'linearizable'
  | 'liveness'
  | 'membership'
  | 'convergence';

export interface SwarmResult {
  seed: number;
  ok: boolean;
  traceHash: string;
  verdicts: Record<VerdictName, boolean>;
  violations: string[];
  stats: {
    virtualMs: number;
    ops: number;
    okOps: number;
    indeterminate: number;
    elections: number;
    maxTerm: number;
    faults: number;
    messages: number;
    snapshotsInstalled: number;
    configChanges: number;
    /** Nodes stopped because a committed configuration dropped them. */
    nodesRemoved: number;
    /** Nodes started and proposed as new members. */
    nodesAdded: number;
    livenessMs: number;
  };
  history: RegisterOp[];
  trace: string[];
}

const swarmConfig: ClusterConfig = clusterConfig({ strategy: 'raft', node_count: 5 });

/** What an applied entry said, comparable across nodes. */
function fingerprint(e: LogEntry): string {
  switch (e.type) {
    case 'put':
      return `${e.term}|put|${e.key}|${e.value}|${e.timestamp}`;
    case 'delete':
      return `${e.term}|del|${e.key}|${e.timestamp}`;
    case 'batch':
      return `${e.term}|batch|${e.entries.map((b) => `${b.key}=${b.value}`).join(',')}|${e.timestamp}`;
    case 'config':
      return `${e.term}|config|${e.voters.join(',')}|${e.timestamp}`;
    case 'noop':
      return `${e.term}|noop|${e.node_id}|${e.timestamp}`;
  }
}

interface ClientState {
  name: string;
  seq: number;
  /** Outstanding request: its id, what it was, when it was sent. */
  req: { id: number; op: ClientOp; invoke: number } | undefined;
  nextIssueAt: number;
  leaderGuess: NodeId | undefined;
}

/** The checks that watch a run as it happens (through RaftHooks) and at its end. */
class Checker {
  readonly violations: string[] = [];
  readonly failed = new Set<VerdictName>();
  private readonly leaders = new Map<number, NodeId>();
  /**
   * index -> what any node applied there (applied implies committed), with `by`: the lowest term a
   * node was in when applying it, an upper bound on the term in which the entry was committed.
   */
  private readonly committed = new Map<number, { term: number; fp: string; by: number }>();
  elections = 0;
  maxTerm = 0;
  /** Membership changes committed. */
  configChanges = 0;

  fail(v: VerdictName, msg: string): void {
    this.failed.add(v);
    if (this.violations.length < 50) this.violations.push(`${v}: ${msg}`);
  }

  applied(node: NodeId, e: LogEntry, nodeTerm: number): void {
    const fp = fingerprint(e);
    const prev = this.committed.get(e.index);
    if (!prev) {
      this.committed.set(e.index, { term: e.term, fp, by: nodeTerm });
      if (e.type === 'config') this.configChanges++;
    } else if (prev.fp === fp) {
      if (nodeTerm < prev.by) prev.by = nodeTerm;
    } else {
      this.fail('state_machine_safety', `${node} applied ${fp} at index ${e.index}, another node applied ${prev.fp}`);
    }
  }

  leaderElected(node: NodeId, term: number, core: RaftCore): void {
    this.elections++;
    if (term > this.maxTerm) this.maxTerm = term;
    const other = this.leaders.get(term);
    if (other !== undefined && other !== node)
      this.fail('election_safety', `${other} and ${node} both leaders of term ${term}`);
    this.leaders.set(term, node);
    // Leader completeness (§5.4): an entry committed in a term before `term` is in this leader's
    // log. (A leader of an older term may still be elected late, from delayed votes: not checked.)
    const s = core.inspect();
    const snapIndex = s.raftSnapshot.lastIncludedIndex;
    for (const [index, c] of this.committed) {
      if (c.by >= term) continue;
      if (index > s.lastIndex) {
        this.fail(
          'leader_completeness',
          `${node} leads term ${term} without committed index ${index} (last ${s.lastIndex})`,
        );
        return;
      }
      if (index < snapIndex) continue;
      const t = index === snapIndex ? s.raftSnapshot.lastIncludedTerm : s.entries[index - snapIndex - 1]?.term;
      if (t !== c.term) {
        this.fail(
          'leader_completeness',
          `${node} leads term ${term} with term ${t} at committed index ${index} (term ${c.term})`,
        );
        return;
      }
    }
  }

  /** Log matching (§5.3): equal (index, term) on two nodes implies equal entries up to there. */
  logMatching(cores: RaftCore[]): void {
    const views = cores.map((c) => c.inspect());
    for (let a = 0; a < views.length; a++) {
      for (let b = a + 1; b < views.length; b++) {
        const A = views[a];
        const B = views[b];
        if (!A || !B) continue;
        const lo = Math.max(A.raftSnapshot.lastIncludedIndex, B.raftSnapshot.lastIncludedIndex) + 1;
        const hi = Math.min(A.lastIndex, B.lastIndex);
        let matched = false;
        for (let i = hi; i >= lo; i--) {
          const ea = A.entries[i - A.raftSnapshot.lastIncludedIndex - 1];
          const eb = B.entries[i - B.raftSnapshot.lastIncludedIndex - 1];
          if (!ea || !eb) continue;
          if (!matched && ea.term === eb.term) matched = true;
          if (matched && fingerprint(ea) !== fingerprint(eb)) {
            this.fail(
              'log_matching',
              `${A.id} and ${B.id} share a later (index, term) but differ at ${i}: ` +
                `${fingerprint(ea)} vs ${fingerprint(eb)}`,
            );
            return;
          }
        }
      }
    }
  }
}

/** Runs one seed. Never throws for a protocol bug: assertions become violations. */
export function runRaftSwarm(seed: number, options: Partial<SwarmOptions> = {}): SwarmResult {
  const o: SwarmOptions = { ...defaultSwarmOptions, ...options };
  const profile = swarmProfile(seed);
  const initialIds = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
  const checker = new Checker();
  const history: RegisterOp[] = [];
  let faults = 0;
  let snapshotsInstalled = 0;
  let issued = 0;
  let livenessMs = -1;
  let nodesRemoved = 0;
  let nodesAdded = 0;
  let nextNodeNumber = o.nodes + 1;
  /** Started and proposed, not yet seen in a committed configuration. */
  const joining = new Set<NodeId>();
  /** Committed configurations reported (membership_changed), handled between steps. */
  const committedConfigs: Array<{ voters: NodeId[]; index: number }> = [];
  const removedIds = new Set<NodeId>();
  let configIndexSeen = 0;
  const factory = raftCoreFactory({
    applied: (node, e, term) => checker.applied(node, e, term),
    leaderElected: (node, term, core) => checker.leaderElected(node, term, core),
    snapshotInstalled: () => snapshotsInstalled++,
  });
  const run = startSwarmRun(
    {
      factory,
      nodeIds: initialIds,
      config: { ...swarmConfig, node_count: o.nodes },
      seed,
      timings:
        o.snapshotCatchUpEntries === undefined
          ? profile.timings
          : { ...profile.timings, snapshotCatchUpEntries: o.snapshotCatchUpEntries },
      durableFold: raftDurableFold,
      // Events are watched through onEvent only: none kept in memory.
      eventsMax: 0,
      onEventTypes: ['membership_changed'],
      onEvent: (e) => {
        if (e.type !== 'membership_changed') return;
        const voters = e.data?.['voters'];
        const index = e.data?.['index'];
        if (Array.isArray(voters) && typeof index === 'number')
          committedConfigs.push({ voters: voters as NodeId[], index });
      },
    },
    o.observe,
  );
  const { c, rng, start } = run;
  /** The nodes of the cluster now (members, joining ones, removed ones not yet stopped). */
  const nodes = (): NodeId[] => c.nodeIds();

  // Base one-way latencies, restored after clearFaults().
  const setBaseLatency = (a: NodeId, b: NodeId): void =>
    run.latencies.set(a, b, rng.range(profile.latencyMs[0], profile.latencyMs[1]));
  for (const a of initialIds) for (const b of initialIds) if (a !== b) setBaseLatency(a, b);
  const restoreLatency = (): void => run.latencies.restore();

  const clients: ClientState[] = Array.from({ length: profile.clients }, (_, i) => ({
    name: `c${i + 1}`,
    seq: 0,
    req: undefined,
    nextIssueAt: start + rng.range(0, 50),
    leaderGuess: undefined,
  }));

  const record = (cl: ClientState, reply: ClientReply | undefined, at: number): void => {
    const req = cl.req;
    if (!req) return;
    cl.req = undefined;
    cl.nextIssueAt = at + 1 + rng.range(0, profile.thinkMs);
    const op = req.op;
    const keysOf = (): string[] => (op.op === 'batch' ? op.entries.map((e) => e.key) : [op.key]);
    const writes = (complete: number): void => {
      if (op.op === 'batch') {
        for (const e of op.entries)
          history.push({ client: cl.name, key: e.key, kind: 'write', value: e.value, invoke: req.invoke, complete });
      } else if (op.op === 'write') {
        history.push({ client: cl.name, key: op.key, kind: 'write', value: op.value, invoke: req.invoke, complete });
      } else if (op.op === 'delete') {
        history.push({ client: cl.name, key: op.key, kind: 'write', value: null, invoke: req.invoke, complete });
      }
    };
    if (reply === undefined) {
      // Gave up: a write's outcome is unknown, a read has no effect.
      if (op.op !== 'read') writes(Infinity);
      cl.leaderGuess = undefined;
      return;
    }
    if (reply.ok) {
      if (op.op === 'read') {
        const v = reply.result.kind === 'entry' ? reply.result.entry.value : null;
        history.push({ client: cl.name, key: op.key, kind: 'read', value: v, invoke: req.invoke, complete: at });
      } else {
        writes(at);
      }
      return;
    }
    if (reply.code === 'not_found' && op.op === 'read') {
      history.push({
        client: cl.name,
        key: keysOf()[0] as string,
        kind: 'read',
        value: null,
        invoke: req.invoke,
        complete: at,
      });
      return;
    }
    if (reply.indeterminate && op.op !== 'read') writes(Infinity);
    cl.leaderGuess = reply.code === 'not_leader' ? reply.leader_id : undefined;
  };

  const issue = (cl: ClientState): void => {
    issued++;
    cl.seq++;
    const key = `k${rng.int(profile.keys)}`;
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
                  { key: `k${(Number(key.slice(1)) + 1) % profile.keys}`, value: `${value}b` },
                ],
              };
    const ids = nodes();
    const guess = cl.leaderGuess !== undefined && ids.includes(cl.leaderGuess) ? cl.leaderGuess : undefined;
    const target =
      guess !== undefined && !rng.chance(profile.strayShare) ? guess : (ids[rng.int(ids.length)] as NodeId);
    const id = c.client(target, op);
    cl.req = { id, op, invoke: c.now };
    const immediate = c.reply(id);
    if (immediate) record(cl, immediate, c.now);
  };

  const pollReplies = (): void => {
    for (const cl of clients) {
      if (!cl.req) continue;
      const r = c.reply(cl.req.id);
      if (r) record(cl, r, c.now);
    }
  };

  const running = (): RaftCore[] =>
    nodes()
      .filter((id) => c.state(id) !== 'offline')
      .map((id) => c.core(id) as RaftCore);
  const down = (): NodeId[] => nodes().filter((id) => c.state(id) !== 'online');

  /**
   * What the live front does on membership_changed: a node the committed configuration dropped is
   * stopped and leaves; a joining node in it has joined. Older configurations are ignored.
   */
  const applyCommittedConfigs = (): void => {
    for (const cfg of committedConfigs.splice(0)) {
      if (cfg.index <= configIndexSeen) continue;
      configIndexSeen = cfg.index;
      for (const v of cfg.voters) joining.delete(v);
      for (const id of nodes()) {
        if (cfg.voters.includes(id) || joining.has(id)) continue;
        c.removeNode(id, { notifyPeers: false });
        removedIds.add(id);
        nodesRemoved++;
      }
    }
  };

  /** POST nodes: a new node knowing the cluster, then add_server on the leader. */
  const startJoining = (leader: NodeId): void => {
    const id = `n${nextNodeNumber++}`;
    const others = nodes();
    c.addNode(id, { notifyPeers: false });
    for (const other of others) {
      setBaseLatency(id, other);
      setBaseLatency(other, id);
    }
    joining.add(id);
    nodesAdded++;
    const r = c.control(leader, { kind: 'add_server', node_id: id, reqId: c.nextRequestId() });
    if (!r.ok) {
      // Refused outright (another change in flight, a new leader): never proposed, so stopped.
      joining.delete(id);
      c.removeNode(id, { notifyPeers: false });
    }
  };

  const pickFault = (): FaultKind | undefined => pickWeighted(faultKinds, profile.weights, rng);

  const injectFault = (): void => {
    const kind = pickFault();
    if (!kind) return;
    faults++;
    const ids = nodes();
    const leader = ids.find((id) => c.state(id) === 'online' && (c.core(id) as RaftCore).inspect().role === 'leader');
    const node = leader !== undefined && rng.chance(profile.leaderBias) ? leader : (ids[rng.int(ids.length)] as NodeId);
    const other = ids[rng.int(ids.length)] as NodeId;
    switch (kind) {
      case 'partition':
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
        if (c.state(node) === 'online' && down().length < o.downMax) c.pause(node);
        return;
      case 'resume': {
        const paused = ids.filter((id) => c.state(id) === 'paused');
        const r = paused[rng.int(paused.length)];
        if (r) c.resume(r);
        return;
      }
      case 'crash':
        if (c.state(node) !== 'offline' && down().length < o.downMax + (c.state(node) === 'paused' ? 1 : 0))
          c.crash(node);
        return;
      case 'restart': {
        const crashed = ids.filter((id) => c.state(id) === 'offline');
        const r = crashed[rng.int(crashed.length)];
        if (r) c.restart(r);
        return;
      }
      case 'bounce':
        if (c.state(node) === 'online') {
          c.crash(node);
          c.restart(node);
        }
        return;
      case 'reconfig': {
        if (!leader) return;
        const voters = (c.core(leader) as RaftCore).inspect().voters;
        const add = (voters.length <= 3 || rng.chance(0.5)) && ids.length < o.nodesMax;
        if (add) {
          startJoining(leader);
          return;
        }
        if (voters.length <= 3) return;
        const target = voters.includes(node) ? node : (voters[rng.int(voters.length)] as NodeId);
        // One change at a time: a leader with a change in flight answers 409, which is fine here.
        c.control(leader, { kind: 'remove_server', node_id: target, reqId: c.nextRequestId() });
        return;
      }
      default:
        unreachable(kind);
    }
  };

  /**
   * Once healed and caught up: every node is a member of the leader's (committed) configuration and
   * holds that same configuration, no removed node came back, and every store is the same.
   */
  const checkHealed = (leader: NodeId | undefined): void => {
    if (!leader) {
      checker.fail('membership', 'no stable leader after the probe');
      return;
    }
    const lead = (c.core(leader) as RaftCore).inspect();
    const config = lead.voters.join(',');
    const here = nodes();
    const outside = here.filter((id) => !lead.voters.includes(id));
    if (outside.length > 0)
      checker.fail('membership', `${outside.join(',')} still run outside the configuration ${config}`);
    const absent = lead.voters.filter((id) => !here.includes(id));
    if (absent.length > 0) checker.fail('membership', `members ${absent.join(',')} of ${config} are not running`);
    for (const id of here) {
      const v = (c.core(id) as RaftCore).inspect().voters.join(',');
      if (v !== config) checker.fail('membership', `${id} holds configuration ${v}, the leader ${leader} ${config}`);
    }
    const back = [...removedIds].filter((id) => here.includes(id));
    if (back.length > 0) checker.fail('membership', `removed nodes ${back.join(',')} are back`);
    // Convergence: with no more writes, every node applies up to the leader's commit index.
    const target = (c.core(leader) as RaftCore).inspect().commitIndex;
    const until = c.now + 1000;
    while (c.now < until && !nodes().every((id) => (c.core(id) as RaftCore).inspect().lastApplied >= target)) {
      if (!c.step()) break;
    }
    const cores = nodes().map((id) => c.core(id) as RaftCore);
    const lagging = cores.filter((x) => x.inspect().lastApplied < target).map((x) => x.id);
    if (lagging.length > 0)
      checker.fail('convergence', `${lagging.join(',')} did not apply up to ${target} within 1000 ms`);
    const reference = JSON.stringify(sortKeys((c.core(leader) as RaftCore).storeView()));
    for (const x of cores) {
      if (JSON.stringify(sortKeys(x.storeView())) !== reference)
        checker.fail('convergence', `${x.id} holds a different store than ${leader}`);
    }
  };

  let verdictLiveness = true;
  try {
    // ---- fault phase: clients and faults until faultMs.
    const faultEnd = start + o.faultMs;
    let nextFaultAt = start + rng.range(100, 300);
    let nextLogCheckAt = start + 100;
    for (;;) {
      let driverAt = Math.min(nextFaultAt, nextLogCheckAt);
      for (const cl of clients) {
        const t = cl.req ? cl.req.invoke + o.clientGiveUpMs : cl.nextIssueAt;
        if (t < driverAt) driverAt = t;
      }
      const evAt = c.nextEventAt();
      if (Math.min(evAt, driverAt) > faultEnd) break;
      if (evAt <= driverAt) {
        c.stepAt(evAt);
        pollReplies();
        applyCommittedConfigs();
        continue;
      }
      c.runUntil(driverAt);
      applyCommittedConfigs();
      const now = c.now;
      if (now >= nextFaultAt) {
        injectFault();
        nextFaultAt = now + rng.range(profile.faultGapMs[0], profile.faultGapMs[1]);
      }
      if (now >= nextLogCheckAt) {
        checker.logMatching(running());
        nextLogCheckAt = now + 100;
      }
      for (const cl of clients) {
        if (cl.req && now >= cl.req.invoke + o.clientGiveUpMs) record(cl, undefined, now);
        else if (!cl.req && now >= cl.nextIssueAt) {
          if (issued < o.opsMax) issue(cl);
          else cl.nextIssueAt = Infinity; // this run's request budget is spent
        }
      }
    }
    c.runUntil(faultEnd);
    pollReplies();
    applyCommittedConfigs();

    // ---- heal: every fault cleared, every node back.
    const healAt = c.now;
    c.fabric.clearFaults();
    restoreLatency();
    for (const id of nodes()) {
      if (c.state(id) === 'paused') c.resume(id);
      else if (c.state(id) === 'offline') c.restart(id);
    }

    // ---- liveness: a leader followed by every member of its configuration, every joining node
    // added (or its addition repeated: the core waits on a pending one), every dropped node gone,
    // then a probe write committed and applied on every node.
    const deadline = healAt + o.livenessMs;
    let probe: { id: number; invoke: number; leader: NodeId } | undefined;
    let probeIndex = 0;
    let probeN = 0;
    let rejoin: { reqId: number; at: number } | undefined;
    const views = (): RaftInspection[] => nodes().map((id) => (c.core(id) as RaftCore).inspect());
    const stableLeader = (): NodeId | undefined => {
      const vs = views();
      let l: RaftInspection | undefined;
      for (const v of vs) if (v.role === 'leader' && (!l || v.term > l.term)) l = v;
      if (!l) return undefined;
      const lead = l;
      const follows = lead.voters.every((id) =>
        vs.some((v) => v.id === id && v.term === lead.term && v.leaderId === lead.id),
      );
      return follows ? lead.id : undefined;
    };
    /** The leader's configuration is committed and is exactly the cluster's nodes. */
    const membershipSettled = (l: NodeId): boolean => {
      const core = c.core(l) as RaftCore;
      const voters = core.inspect().voters;
      const committed = core.status(c.now).extra?.['config_committed'] === true;
      const waiting = nodes().filter((id) => !voters.includes(id) && joining.has(id));
      if (committed && waiting.length === 0) return nodes().every((id) => voters.includes(id));
      const idle = !rejoin || c.reply(rejoin.reqId) !== undefined || c.now - rejoin.at > 50;
      if (idle && waiting.length > 0) {
        const reqId = c.nextRequestId();
        c.control(l, { kind: 'add_server', node_id: waiting[0] as NodeId, reqId });
        rejoin = { reqId, at: c.now };
      }
      return false;
    };
    const appliedEverywhere = (index: number): boolean => views().every((v) => v.lastApplied >= index);
    while (c.now <= deadline) {
      pollReplies();
      applyCommittedConfigs();
      if (probe) {
        const r = c.reply(probe.id);
        if (r) {
          if (r.ok && r.result.kind === 'entry') {
            history.push({
              client: 'probe',
              key: 'k0',
              kind: 'write',
              value: `probe-${probeN}`,
              invoke: probe.invoke,
              complete: c.now,
            });
            probeIndex = r.result.entry.version;
          } else if (!r.ok && r.indeterminate) {
            history.push({
              client: 'probe',
              key: 'k0',
              kind: 'write',
              value: `probe-${probeN}`,
              invoke: probe.invoke,
              complete: Infinity,
            });
          }
          probe = undefined;
        }
      }
      if (probeIndex > 0 && appliedEverywhere(probeIndex)) break;
      if (!probe && probeIndex === 0) {
        const l = stableLeader();
        if (l && membershipSettled(l)) {
          probeN++;
          const id = c.client(l, { op: 'write', key: 'k0', value: `probe-${probeN}` });
          probe = { id, invoke: c.now, leader: l };
          continue;
        }
      }
      const at = c.nextEventAt();
      if (at > deadline) break;
      c.stepAt(at);
    }
    livenessMs = c.now - healAt;
    const caughtUp = probeIndex > 0 && appliedEverywhere(probeIndex);
    if (!caughtUp) {
      verdictLiveness = false;
      const st = views().map(
        (v) =>
          `${v.id}:${v.role}/t${v.term}/c${v.commitIndex}/a${v.lastApplied}/l${v.lastIndex}/v${v.voters.join(',')}`,
      );
      checker.fail(
        'liveness',
        `no leader served and replicated a write within ${o.livenessMs} ms of the heal (${st.join(' ')})`,
      );
    } else {
      // Final reads of every key through the leader join the history: acknowledged writes survived.
      const l = stableLeader();
      if (l) {
        for (let k = 0; k < profile.keys; k++) {
          const key = `k${k}`;
          const invoke = c.now;
          const r = c.runUntilReply(c.client(l, { op: 'read', key }), 1000);
          if (r?.ok && r.result.kind === 'entry')
            history.push({ client: 'final', key, kind: 'read', value: r.result.entry.value, invoke, complete: c.now });
          else if (r && !r.ok && r.code === 'not_found')
            history.push({ client: 'final', key, kind: 'read', value: null, invoke, complete: c.now });
        }
      }
      checkHealed(l);
    }
    checker.logMatching(running());
  } catch (err) {
    if (!(err instanceof AssertionFailure)) throw err;
    checker.fail('state_machine_safety', `assertion: ${err.message}`);
  }

  // Outstanding client writes at the end may or may not have happened.
  for (const cl of clients) if (cl.req) record(cl, undefined, c.now);

  const lin = checkRegisterHistory(history);
  if (!lin.ok && lin.violation) {
    const shown = lin.violation.ops.slice(0, 40).map(describeRegisterOp).join('; ');
    checker.fail('linearizable', `key ${lin.violation.key}: ${lin.violation.message} — ops: ${shown}`);
  }
  const verdicts: Record<VerdictName, boolean> = {
    election_safety: !checker.failed.has('election_safety'),
    log_matching: !checker.failed.has('log_matching'),
    leader_completeness: !checker.failed.has('leader_completeness'),
    state_machine_safety: !checker.failed.has('state_machine_safety'),
    linearizable: !checker.failed.has('linearizable'),
    liveness: verdictLiveness && !checker.failed.has('liveness'),
    membership: !checker.failed.has('membership'),
    convergence: !checker.failed.has('convergence'),
  };
  const stats = c.fabric.stats();
  const readTrace = run.readTrace;
  const result = {
    seed,
    ok: checker.failed.size === 0,
    traceHash: c.traceHash(),
    verdicts,
    violations: checker.violations,
    stats: {
      virtualMs: c.now - start,
      ops: history.length,
      okOps: history.filter((h) => h.complete !== Infinity).length,
      indeterminate: history.filter((h) => h.complete === Infinity).length,
      elections: checker.elections,
      maxTerm: checker.maxTerm,
      faults,
      messages: stats.submitted,
      snapshotsInstalled,
      configChanges: checker.configChanges,
      nodesRemoved,
      nodesAdded,
      livenessMs,
    },
    history,
  };
  // Built only when read: a window of seeds never reads it.
  return withLazyTrace(result, readTrace);
}

function sortKeys<T>(o: Record<string, T>): Array<[string, T]> {
  return Object.keys(o)
    .sort()
    .map((k) => [k, o[k] as T]);
}

/** The command that replays one seed. */
export function replayCommand(seed: number): string {
  return (
    `node dist/src/replication/swarm/cli.js --seed ${seed} --strategy raft --verbose   ` + `(or: make sim SEED=${seed})`
  );
}
