/**
 * Leaderless (Dynamo-style) replication as a pure NodeCore. The node that receives a client request
 * coordinates it: the key's N preferred replicas come from a consistent-hash ring (128 virtual
 * nodes per member), a write succeeds after W acks and a read after R replies (newest version by
 * HLC timestamp, ties by node id; tombstones win over older values and are repaired like values).
 * Around that: sloppy quorums with hinted handoff, read repair (async, sync, digest), region-aware
 * consistency levels, a phi-accrual failure detector fed by heartbeats, Merkle anti-entropy between
 * replicas, and key streaming when membership changes. N/W/R can be changed at run time
 * (custom control `set_quorum`), which the checkers' safe add-node uses to widen and narrow quorums.
 * Not a consensus protocol: concurrent writes are settled by last-writer-wins, not ordered.
 *
 * Replica groups (one per region for local_quorum/each_quorum, else one): in region r the key's
 * replicas are the first min(N, |r|) members of r met walking the ring from the key, and a quorum
 * there is ceil(W·|replicas|/N) acks (ceil(R·|replicas|/N) replies). W + R > N gives
 * ceil(W·m/N) + ceil(R·m/N) > m, so a region's read and write quorums still overlap.
 * local_quorum waits on the coordinator's region only, each_quorum on every region; `quorum`
 * uses the plain preference list and W/R whatever the regions.
 *
 * Durable state (what survives a crash): the store and the hints held for others (versions carry
 * their vector clocks and HLC timestamps). Each change is a durable record, with a checkpoint of
 * both when the records since the last one outweigh them; leaderlessDurableFold rebuilds them. A
 * restarted node catches up by hinted handoff (its stand-ins hand back), anti-entropy (started at
 * once) and read repair; in-flight requests it coordinated are lost (their clients saw them fail).
 * A replica refuses a client write (put) that would take its stored bytes (store + hints) past its
 * budget with put_nack; the coordinator answers storage_full (507) as soon as the refusals leave
 * too few replicas for W. Repairs, handoffs and anti-entropy are always applied (convergence).
 */
import {
  emptyOutput,
  type DurableFold,
  type ClientReply,
  type ClientRequest,
  type ClusterConfig,
  type ControlCommand,
  type ControlResult,
  type CoreEvent,
  type CoreFactory,
  type CoreOptions,
  type CoreOutput,
  type CoreStatus,
  type CoreTimings,
  type NodeCore,
  type NodeId,
  type ReadRepairMode,
  type Version,
} from '../core.js';
import { externalTimestampProblem, HybridClock } from '../hlc.js';
import { corruptTimestampAheadMsMax, durableCheckpointMinBytes, repairOverBudgetFactorMax, storedEntryOverheadBytes } from '../limits.js';
import { invariant, unreachable } from '../../util/assert.js';
import { aeAnswer, aePlan, aeRoot } from '../dynamo/anti-entropy.js';
import { PhiAccrualDetector, defaultPhiOptions } from '../dynamo/phi.js';
import { ringFor, type HashRing } from '../dynamo/ring.js';
import { clockSum, incrementClock } from '../dynamo/vclock.js';
import { versionOfTuple, versionTuple, type VersionTuple } from './durable-version.js';
import {
  isNumberArray,
  isObject,
  isPairArray,
  isStringArray,
  isVersion,
  isVersionArray,
  lwwNewer,
  observeStrict,
  versionDigest,
} from '../dynamo/version.js';

/** Keys whose placement (preference list, ring walk) is remembered; the caches start over past this. */
const placementCacheMax = 10_000;

/** Limits and periods of this core, with their units (STYLE.md). */
export const leaderlessLimits = {
  /**
   * Heartbeats to every peer this often (they feed the peers' phi-accrual detectors); large
   * clusters stretch it by heartbeatMsPerMember up to heartbeatIntervalMsMax so all-to-all
   * heartbeats stay near members^2 / (members * 10 ms) messages per second.
   */
  heartbeatIntervalMs: 100,
  heartbeatMsPerMember: 10,
  heartbeatIntervalMsMax: 500,
  /** A peer this node suspects gets heartbeats this often instead (a paused inbox is not flooded). */
  suspectedHeartbeatIntervalMs: 1000,
  /** Hints and membership transfers are (re)sent this often until acknowledged. */
  handoffIntervalMs: 200,
  /** One anti-entropy exchange with the next peer (round robin) this often. */
  antiEntropyIntervalMs: 1000,
  /** Most hinted versions a stand-in holds; past it, it refuses (no ack) and counts. */
  hintsMax: 10_000,
  /** Most requests a coordinator has in flight; past it, new ones are refused with 409. */
  pendingOpsMax: 10_000,
  /** A sloppy quorum recruits a stand-in when a replica has not answered within this share of the timeout. */
  probeFractionOfTimeout: 0.25,
  probeMsMin: 50,
  /** logView keeps this many recent entries; older ones are counted in log_dropped. */
  logEntriesMax: 1000,
} as const;

// ---------------------------------------------------------------- wire messages

type HandoffKind = 'hint' | 'transfer';

type LlMsg =
  | { t: 'hb'; hlc: number }
  /** Store v (as a hint for `hint` when set); acknowledge with put_ack when `ack`; `repair` marks read repair. */
  | { t: 'put'; rid: number; v: Version; hint: NodeId | null; ack: boolean; repair: boolean }
  | { t: 'put_ack'; rid: number; key: string }
  /** The replica refused the put: it would pass its stored-bytes budget. */
  | { t: 'put_nack'; rid: number; key: string }
  | { t: 'get'; rid: number; key: string; digest: boolean }
  | { t: 'got'; rid: number; key: string; full: boolean; v: Version | null; digest: string }
  | { t: 'handoff'; kind: HandoffKind; vs: Version[] }
  | { t: 'handoff_ack'; kind: HandoffKind; items: Array<[string, number]> }
  | { t: 'ae_root'; root: string; leaves: string[] }
  | { t: 'ae_keys'; buckets: number[]; entries: Array<[string, string]>; truncated: boolean }
  | { t: 'ae_push'; vs: Version[] }
  | { t: 'ae_pull'; keys: string[] };

function isHandoffKind(x: unknown): x is HandoffKind {
  return x === 'hint' || x === 'transfer';
}

/** Decodes a peer message; null for anything malformed (counted, never thrown). */
function decodeMsg(x: unknown): LlMsg | null {
  if (!isObject(x)) return null;
  switch (x.t) {
    case 'hb':
      return typeof x.hlc === 'number' ? { t: 'hb', hlc: x.hlc } : null;
    case 'put':
      return typeof x.rid === 'number' &&
        isVersion(x.v) &&
        (x.hint === null || typeof x.hint === 'string') &&
        typeof x.ack === 'boolean' &&
        typeof x.repair === 'boolean'
        ? { t: 'put', rid: x.rid, v: x.v, hint: x.hint, ack: x.ack, repair: x.repair }
        : null;
    case 'put_ack':
    case 'put_nack':
      return typeof x.rid === 'number' && typeof x.key === 'string' ? { t: x.t, rid: x.rid, key: x.key } : null;
    case 'get':
      return typeof x.rid === 'number' && typeof x.key === 'string' && typeof x.digest === 'boolean'
        ? { t: 'get', rid: x.rid, key: x.key, digest: x.digest }
        : null;
    case 'got':
      return typeof x.rid === 'number' &&
        typeof x.key === 'string' &&
        typeof x.full === 'boolean' &&
        (x.v === null || isVersion(x.v)) &&
        typeof x.digest === 'string'
        ? { t: 'got', rid: x.rid, key: x.key, full: x.full, v: x.v, digest: x.digest }
        : null;
    case 'handoff':
      return isHandoffKind(x.kind) && isVersionArray(x.vs) ? { t: 'handoff', kind: x.kind, vs: x.vs } : null;
    case 'handoff_ack':
      return isHandoffKind(x.kind) &&
        Array.isArray(x.items) &&
        x.items.every((i) => Array.isArray(i) && typeof i[0] === 'string' && typeof i[1] === 'number')
        ? { t: 'handoff_ack', kind: x.kind, items: x.items as Array<[string, number]> }
        : null;
    case 'ae_root':
      return typeof x.root === 'string' && isStringArray(x.leaves) ? { t: 'ae_root', root: x.root, leaves: x.leaves } : null;
    case 'ae_keys':
      return isNumberArray(x.buckets) && isPairArray(x.entries) && typeof x.truncated === 'boolean'
        ? { t: 'ae_keys', buckets: x.buckets, entries: x.entries, truncated: x.truncated }
        : null;
    case 'ae_push':
      return isVersionArray(x.vs) ? { t: 'ae_push', vs: x.vs } : null;
    case 'ae_pull':
      return isStringArray(x.keys) ? { t: 'ae_pull', keys: x.keys } : null;
    default:
      return null;
  }
}

// ---------------------------------------------------------------- coordinated requests

/** A key's ring walk, and (for N = n) its first n nodes and the rest: read-only, cached per key. */
interface Walk {
  all: NodeId[];
  n: number;
  intended: NodeId[];
  rest: NodeId[];
}

/** One replica position of a request: its intended replica and whoever stands in for it. */
interface Slot {
  intended: NodeId;
  group: number;
  /** Nodes asked for this slot: the intended replica (unless skipped as suspected), then stand-ins. */
  holders: NodeId[];
  /** Acked (write) or replied (read) by any holder. */
  done: boolean;
  /** A holder refused the write for its storage budget (put_nack). */
  refused?: boolean;
}

interface Group {
  region: number;
  /** Acks or replies this group needs (0: informed, not waited on). */
  required: number;
  /** Stand-in candidates in ring order (sloppy quorum). */
  walk: NodeId[];
}

interface OpBase {
  rid: number;
  reqId: number;
  key: string;
  startedAt: number;
  deadline: number;
  probeAt: number;
  groups: Group[];
  slots: Slot[];
  /** Every node this request has involved (a stand-in is never recruited twice). */
  used: Set<NodeId>;
}

interface WriteOp extends OpBase {
  kind: 'write';
  v: Version;
  replied: boolean;
  /** Part of a batch: the batch's request id and this entry's index. */
  batch: { id: number; index: number } | null;
}

interface ReadOp extends OpBase {
  kind: 'read';
  mode: ReadRepairMode;
  answered: boolean;
  /** Digest mode: the replica asked for the full value first. */
  dataNode: NodeId | null;
  full: Map<NodeId, Version | null>;
  digests: Map<NodeId, string>;
  /** Nodes asked for their full value after a digest mismatch (or a silent data replica). */
  fullAsked: Set<NodeId>;
  newest: Version | null;
  /** Sync mode: stale replicas whose repair ack the answer waits for. */
  repairAwait: Set<NodeId>;
  syncRepairSent: boolean;
  /** Digest of the version each node was last repaired with. */
  repairedWith: Map<NodeId, string>;
}

type Op = WriteOp | ReadOp;

interface BatchOp {
  reqId: number;
  results: Array<ClientReply | null>;
  remaining: number;
}

type LogKind = 'write' | 'apply' | 'hint' | 'repair' | 'handoff' | 'transfer' | 'anti_entropy' | 'corrupt' | 'moved';

interface LogEntry {
  index: number;
  kind: LogKind;
  key: string;
  node_id: NodeId;
  timestamp: number;
  tombstone: boolean;
  from?: NodeId;
  hint_for?: NodeId;
}

type ApplyCause = 'write' | 'apply' | 'repair' | 'handoff' | 'transfer' | 'anti_entropy';

// ---------------------------------------------------------------- durable records

/** Store set / delete, hint set / delete, or a checkpoint of both (versions as flat tuples). */
type LlRecord =
  | ['s', VersionTuple]
  | ['d', string]
  | ['h', NodeId, VersionTuple]
  | ['x', NodeId, string]
  | ['c', Version[], Array<[NodeId, Version[]]>];

/** What a restarted node starts from (CoreOptions.persisted). */
interface LlPersisted {
  store: Map<string, Version>;
  hints: Map<NodeId, Map<string, Version>>;
}

function isLlRecord(r: unknown): r is LlRecord {
  return Array.isArray(r) && typeof r[0] === 'string';
}

function isLlPersisted(p: unknown): p is LlPersisted {
  return typeof p === 'object' && p !== null && (p as LlPersisted).store instanceof Map && (p as LlPersisted).hints instanceof Map;
}

export const leaderlessDurableFold: DurableFold = {
  fold(state, record) {
    if (!isLlRecord(record)) return state;
    if (record[0] === 'c') {
      return { store: new Map(record[1].map((v) => [v.key, v])), hints: new Map(record[2].map(([owner, vs]) => [owner, new Map(vs.map((v) => [v.key, v]))])) };
    }
    const st: LlPersisted = isLlPersisted(state) ? state : { store: new Map(), hints: new Map() };
    switch (record[0]) {
      case 's': {
        const v = versionOfTuple(record[1]);
        st.store.set(v.key, v);
        break;
      }
      case 'd':
        st.store.delete(record[1]);
        break;
      case 'h': {
        let held = st.hints.get(record[1]);
        if (!held) {
          held = new Map();
          st.hints.set(record[1], held);
        }
        const v = versionOfTuple(record[2]);
        held.set(v.key, v);
        break;
      }
      case 'x': {
        const held = st.hints.get(record[1]);
        held?.delete(record[2]);
        if (held?.size === 0) st.hints.delete(record[1]);
        break;
      }
      default:
        unreachable(record);
    }
    return st;
  },
  isCheckpoint: (record) => isLlRecord(record) && record[0] === 'c',
};

function versionBytes(v: Version): number {
  return v.key.length + v.value.length + storedEntryOverheadBytes;
}

function newestOf(vs: Iterable<Version | null>): Version | null {
  let best: Version | null = null;
  for (const v of vs) if (v && (!best || lwwNewer(v, best))) best = v;
  return best;
}

// ---------------------------------------------------------------- the core

class LeaderlessCore implements NodeCore {
  readonly id: NodeId;
  private members: NodeId[];
  private ring: HashRing;
  private readonly config: ClusterConfig;
  private readonly timings: CoreTimings;
  private readonly regions: Record<NodeId, number>;
  private readonly probeMs: number;
  private readonly clock = new HybridClock();
  private readonly store = new Map<string, Version>();
  /** Stand-in duty: versions held for an unreachable owner, keyed by owner then key. */
  private readonly hints = new Map<NodeId, Map<string, Version>>();
  private hintCount = 0;
  /** Keys to stream to nodes that joined their preference list (membership change). */
  private readonly transfers = new Map<NodeId, Set<string>>();
  private readonly detectors = new Map<NodeId, PhiAccrualDetector>();
  private readonly lastHeartbeatSent = new Map<NodeId, number>();
  private readonly plCache = new Map<string, NodeId[]>();
  /** Ring walks by key and the members' regions: both change only with membership (cleared there). */
  private readonly walkCache = new Map<string, Walk>();
  private regionIdsCache: number[] | undefined;
  private readonly ops = new Map<number, Op>();
  private readonly batches = new Map<number, BatchOp>();
  private ridSeq = 0;
  private now: number;
  private nextHeartbeatAt: number;
  private nextHandoffAt: number;
  private nextAntiEntropyAt: number;
  private aeCursor = 0;
  private readonly out: CoreOutput = emptyOutput();
  private readonly log: LogEntry[] = [];
  private logIndex = 0;
  /** Budget on storedBytes (store + hints; Infinity when none); durable bytes since the last checkpoint. */
  private readonly storedBytesMax: number;
  private storedBytes = 0;
  private durableSinceCheckpoint = 0;
  private readonly stats = {
    refused_storage_full: 0,
    writes: 0,
    reads: 0,
    applied: 0,
    quorum_achieved: 0,
    quorum_failed: 0,
    read_quorum_failed: 0,
    read_repairs: 0,
    hints_stored: 0,
    hints_delivered: 0,
    hints_refused: 0,
    hints_dropped: 0,
    keys_transferred: 0,
    keys_moved_out: 0,
    ae_rounds: 0,
    ae_versions_sent: 0,
    bad_messages: 0,
    overloaded: 0,
    log_dropped: 0,
  };

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.members = [...opts.peers];
    this.ring = ringFor(this.members);
    // A private copy: set_quorum changes N/W/R on this node only (cores in one test may share a config object).
    this.config = { ...opts.config };
    this.timings = opts.timings;
    this.regions = { ...(opts.regions ?? {}) };
    this.probeMs = Math.max(
      leaderlessLimits.probeMsMin,
      Math.floor(opts.timings.requestTimeoutMs * leaderlessLimits.probeFractionOfTimeout),
    );
    this.now = opts.now;
    for (const m of this.members) if (m !== this.id) this.detectors.set(m, this.newDetector());
    // Periodic duties start at staggered offsets so nodes do not all fire at one instant.
    this.nextHeartbeatAt = opts.now + opts.rng.range(0, this.heartbeatIntervalMs() - 1);
    this.nextHandoffAt = opts.now + opts.rng.range(1, leaderlessLimits.handoffIntervalMs);
    this.nextAntiEntropyAt = opts.now + opts.rng.range(1, leaderlessLimits.antiEntropyIntervalMs);
    this.storedBytesMax = opts.storedBytesMax ?? Infinity;
    if (isLlPersisted(opts.persisted)) this.restore(opts.persisted, opts.now);
  }

  /** A restarted node: store and hints as they were, its clock past them, catch-up duties at once. */
  private restore(p: LlPersisted, now: number): void {
    for (const v of p.store.values()) {
      this.store.set(v.key, v);
      this.storedBytes += versionBytes(v);
      this.clock.observe(v.timestamp, now);
    }
    for (const [owner, held] of p.hints) {
      this.hints.set(owner, held);
      this.hintCount += held.size;
      for (const v of held.values()) {
        this.storedBytes += versionBytes(v);
        this.clock.observe(v.timestamp, now);
      }
    }
    this.nextAntiEntropyAt = now;
    this.nextHandoffAt = now;
  }

  private durable(r: LlRecord, bytes: number): void {
    (this.out.durable as unknown[]).push(r);
    this.durableSinceCheckpoint += bytes;
  }

  /** Store and hints as one record, once the records since the last one outweigh them (limits.ts). */
  private maybeCheckpoint(): void {
    if (this.durableSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.storedBytes)) return;
    const hints: Array<[NodeId, Version[]]> = [];
    for (const [owner, held] of this.hints) hints.push([owner, [...held.values()]]);
    (this.out.durable as unknown[]).push(['c', [...this.store.values()], hints] satisfies LlRecord);
    this.durableSinceCheckpoint = 0;
  }

  private storeSet(v: Version): void {
    const cur = this.store.get(v.key);
    this.storedBytes += versionBytes(v) - (cur ? versionBytes(cur) : 0);
    this.store.set(v.key, v);
    this.durable(['s', versionTuple(v)], versionBytes(v));
  }

  private storeDelete(key: string): void {
    const cur = this.store.get(key);
    if (!cur) return;
    this.storedBytes -= versionBytes(cur);
    this.store.delete(key);
    this.durable(['d', key], storedEntryOverheadBytes);
  }

  /** Storing `v` over `cur` would take the stored bytes past `max` (and make them grow). */
  private wouldOverflow(v: Version, cur: Version | undefined, max = this.storedBytesMax): boolean {
    const after = this.storedBytes + versionBytes(v) - (cur ? versionBytes(cur) : 0);
    return after > this.storedBytes && after > max;
  }

  // ------------------------------------------------------------ NodeCore

  onClient(req: ClientRequest, now: number): void {
    this.now = now;
    const op = req.op;
    if (this.ops.size >= leaderlessLimits.pendingOpsMax) {
      this.stats.overloaded++;
      this.reply({ id: req.id, ok: false, code: 'timeout', error: `coordinator ${this.id} overloaded: too many requests in flight` });
      return;
    }
    switch (op.op) {
      case 'write':
        this.startWrite(req.id, op.key, op.value, false, null);
        return;
      case 'delete':
        this.startWrite(req.id, op.key, '', true, null);
        return;
      case 'read':
        this.startRead(req.id, op.key);
        return;
      case 'batch': {
        if (op.entries.length === 0) {
          this.reply({ id: req.id, ok: true, result: { kind: 'batch', entries: [] } });
          return;
        }
        this.batches.set(req.id, { reqId: req.id, results: op.entries.map(() => null), remaining: op.entries.length });
        op.entries.forEach((e, index) => this.startWrite(req.id, e.key, e.value, false, { id: req.id, index }));
        return;
      }
      default:
        unreachable(op);
    }
  }

  onMessage(from: NodeId, raw: unknown, now: number): void {
    this.now = now;
    const msg = decodeMsg(raw);
    if (!msg) {
      this.stats.bad_messages++;
      return;
    }
    this.handle(from, msg);
  }

  onTick(now: number): void {
    this.now = now;
    if (now >= this.nextHeartbeatAt) {
      this.nextHeartbeatAt = now + this.heartbeatIntervalMs();
      this.sendHeartbeats();
    }
    for (const op of [...this.ops.values()]) {
      if (now >= op.deadline) this.expire(op);
      else if (now >= op.probeAt) {
        op.probeAt = now + this.probeMs;
        this.probe(op);
      }
    }
    if (now >= this.nextHandoffAt) {
      this.nextHandoffAt = now + leaderlessLimits.handoffIntervalMs;
      this.handoffTick();
    }
    if (now >= this.nextAntiEntropyAt) {
      this.nextAntiEntropyAt = now + leaderlessLimits.antiEntropyIntervalMs;
      const peers = this.others().filter((p) => !this.suspected(p));
      if (peers.length > 0) this.startAntiEntropy(peers[this.aeCursor++ % peers.length] as NodeId);
    }
  }

  nextDeadline(): number {
    let at = Math.min(this.nextHeartbeatAt, this.nextHandoffAt, this.nextAntiEntropyAt);
    for (const op of this.ops.values()) at = Math.min(at, op.deadline, op.probeAt);
    return at;
  }

  drain(out: CoreOutput): void {
    this.maybeCheckpoint();
    out.messages.push(...this.out.messages);
    out.replies.push(...this.out.replies);
    out.events.push(...this.out.events);
    const durable = this.out.durable as unknown[];
    if (durable.length > 0) {
      if (out.durable === undefined) out.durable = [];
      for (const r of durable) out.durable.push(r);
      durable.length = 0;
    }
    this.out.messages.length = 0;
    this.out.replies.length = 0;
    this.out.events.length = 0;
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    this.now = now;
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true, data: { skew_ms: cmd.ms } };
      case 'peers':
        this.changeMembership(cmd.peers);
        return { ok: true, data: { members: [...this.members] } };
      case 'replication_mode':
        return { ok: false, code: 'unsupported', error: 'replication_mode applies to single_leader clusters only' };
      case 'set_leader':
      case 'add_server':
      case 'remove_server':
        return { ok: false, code: 'unsupported', error: `${cmd.kind} is not supported by leaderless clusters` };
      case 'custom':
        return this.custom(cmd.name, cmd.args);
      default:
        return unreachable(cmd);
    }
  }

  status(now: number): CoreStatus {
    this.now = Math.max(this.now, now);
    return {
      role: 'replica',
      commit_index: this.stats.applied,
      last_applied: this.stats.applied,
      leader_id: '',
      lag: 0,
      extra: {
        keys: this.store.size,
        hints_held: this.hintCount,
        pending_transfers: [...this.transfers.values()].reduce((s, k) => s + k.size, 0),
        in_flight: this.ops.size,
        suspected: this.others().filter((p) => this.suspected(p)),
        hlc_remote_refused: this.clock.remoteRefused,
        stored_bytes: this.storedBytes,
        stored_bytes_max: Number.isFinite(this.storedBytesMax) ? this.storedBytesMax : null,
        ...this.stats,
      },
    };
  }

  logView(): unknown[] {
    return this.log.map((e) => ({ ...e }));
  }

  storeView(): Record<string, Version> {
    const out: Record<string, Version> = {};
    for (const key of [...this.store.keys()].sort()) out[key] = { ...(this.store.get(key) as Version) };
    return out;
  }

  // ------------------------------------------------------------ message handling

  private handle(from: NodeId, msg: LlMsg): void {
    switch (msg.t) {
      case 'hb':
        this.detectors.get(from)?.heartbeat(this.now);
        observeStrict(this.clock, msg.hlc, this.now);
        return;
      case 'put': {
        const asHint = msg.hint !== null && msg.hint !== this.id;
        if (!msg.repair && this.wouldOverflow(msg.v, asHint ? this.hints.get(msg.hint as NodeId)?.get(msg.v.key) : this.store.get(msg.v.key))) {
          // Client writes only: repairs keep replicas converging whatever the budget.
          this.stats.refused_storage_full++;
          if (msg.ack) this.deliver(from, { t: 'put_nack', rid: msg.rid, key: msg.v.key });
          return;
        }
        let stored: boolean;
        if (asHint) stored = this.storeHint(msg.hint as NodeId, msg.v, from);
        else {
          this.applyVersion(msg.v, msg.repair ? 'repair' : from === this.id ? 'write' : 'apply', from);
          stored = true;
        }
        if (stored && msg.ack) this.deliver(from, { t: 'put_ack', rid: msg.rid, key: msg.v.key });
        return;
      }
      case 'put_ack':
        this.onAck(from, msg.rid);
        return;
      case 'put_nack':
        this.onNack(from, msg.rid);
        return;
      case 'get': {
        const v = this.localVersion(msg.key);
        this.deliver(from, { t: 'got', rid: msg.rid, key: msg.key, full: !msg.digest, v: msg.digest ? null : v, digest: versionDigest(v) });
        return;
      }
      case 'got':
        this.onGot(from, msg);
        return;
      case 'handoff': {
        const cause: ApplyCause = msg.kind === 'hint' ? 'handoff' : 'transfer';
        for (const v of msg.vs) this.applyVersion(v, cause, from);
        this.deliver(from, { t: 'handoff_ack', kind: msg.kind, items: msg.vs.map((v) => [v.key, v.timestamp]) });
        return;
      }
      case 'handoff_ack':
        this.onHandoffAck(from, msg.kind, msg.items);
        return;
      case 'ae_root': {
        const answer = aeAnswer(this.pairDigests(from), msg, this.timings.maxEntriesPerMessage);
        if (answer) this.deliver(from, { t: 'ae_keys', ...answer });
        return;
      }
      case 'ae_keys': {
        const plan = aePlan(this.pairDigests(from), msg, this.timings.maxEntriesPerMessage);
        if (plan.push.length > 0) this.pushKeys(from, plan.push);
        if (plan.pull.length > 0) this.deliver(from, { t: 'ae_pull', keys: plan.pull });
        return;
      }
      case 'ae_pull':
        this.pushKeys(from, msg.keys.slice(0, this.timings.maxEntriesPerMessage));
        return;
      case 'ae_push':
        for (const v of msg.vs) this.applyVersion(v, 'anti_entropy', from);
        return;
      default:
        unreachable(msg);
    }
  }

  /** Sends through the fabric, or handles at once when the destination is this node. */
  private deliver(to: NodeId, msg: LlMsg): void {
    if (to === this.id) this.handle(this.id, msg);
    else this.out.messages.push({ to, msg });
  }

  // ------------------------------------------------------------ placement and suspicion

  private others(): NodeId[] {
    return this.members.filter((m) => m !== this.id);
  }

  private regionOf(node: NodeId): number {
    return this.regions[node] ?? 0;
  }

  private suspected(node: NodeId): boolean {
    if (node === this.id) return false;
    return this.detectors.get(node)?.suspected(this.now) ?? false;
  }

  private preferenceList(key: string): NodeId[] {
    let pl = this.plCache.get(key);
    if (!pl) {
      pl = this.ring.preferenceList(key, this.config.quorum_n);
      if (this.plCache.size >= placementCacheMax) this.plCache.clear();
      this.plCache.set(key, pl);
    }
    return pl;
  }

  /** The replica groups of a request (file header): intended replicas, stand-in walk, quorum. */
  private plan(key: string, quorum: number): { groups: Group[]; slots: Slot[] } {
    const n = this.config.quorum_n;
    // An md5 of the key and a walk of the ring per request otherwise.
    let cached = this.walkCache.get(key);
    if (cached === undefined || cached.n !== n) {
      const all = this.ring.walk(key);
      cached = { all, n, intended: all.slice(0, n), rest: all.slice(n) };
      if (this.walkCache.size >= placementCacheMax) this.walkCache.clear();
      this.walkCache.set(key, cached);
    }
    const walk = cached.all;
    const regionIds = (this.regionIdsCache ??= [...new Set(this.members.map((m) => this.regionOf(m)))].sort((a, b) => a - b));
    const level = this.config.consistency_level;
    if (level === 'quorum' || regionIds.length <= 1) {
      // The common case, on every request: the walk's slices are shared (read-only), only the slots
      // (which record holders and acks) are the request's own.
      const intended = cached.intended;
      const slots: Slot[] = new Array(intended.length);
      for (let i = 0; i < intended.length; i++) slots[i] = { intended: intended[i] as NodeId, group: 0, holders: [], done: false };
      return { groups: [{ region: -1, required: quorum, walk: cached.rest }], slots };
    }
    const mine = this.regionOf(this.id);
    const groups: Group[] = [];
    const slots: Slot[] = [];
    for (const region of regionIds) {
      const inRegion = walk.filter((m) => this.regionOf(m) === region);
      const intended = inRegion.slice(0, n);
      const waited = level === 'each_quorum' || region === mine;
      const required = waited ? Math.ceil((quorum * intended.length) / n) : 0;
      for (const node of intended) slots.push({ intended: node, group: groups.length, holders: [], done: false });
      groups.push({ region, required, walk: inRegion.slice(n) });
    }
    return { groups, slots };
  }

  /** The next stand-in for a slot: further along its group's walk, unused and not suspected. */
  private recruit(op: Op, slot: Slot): NodeId | null {
    const group = op.groups[slot.group] as Group;
    for (const candidate of group.walk) {
      if (op.used.has(candidate) || this.suspected(candidate)) continue;
      op.used.add(candidate);
      slot.holders.push(candidate);
      return candidate;
    }
    return null;
  }

  /** Chooses each slot's first holder: the intended replica, or a stand-in when it is suspected. */
  private assignHolders(op: Op): void {
    for (const slot of op.slots) {
      const waited = (op.groups[slot.group] as Group).required > 0;
      if (this.config.sloppy_quorum && waited && this.suspected(slot.intended) && this.recruit(op, slot)) continue;
      slot.holders.push(slot.intended);
    }
  }

  private groupCounts(op: Op): Array<{ done: number; required: number }> {
    const counts = op.groups.map((g) => ({ done: 0, required: g.required }));
    for (const s of op.slots) if (s.done) (counts[s.group] as { done: number }).done++;
    return counts;
  }

  private quorumMet(op: Op): boolean {
    // groupCounts without its arrays: this runs on every ack.
    for (let g = 0; g < op.groups.length; g++) {
      let done = 0;
      for (const s of op.slots) if (s.done && s.group === g) done++;
      if (done < (op.groups[g] as Group).required) return false;
    }
    return true;
  }

  /** "a/Q": the first group short of its quorum (or the first group). */
  private shortfall(op: Op): { done: number; required: number } {
    const counts = this.groupCounts(op);
    return counts.find((c) => c.done < c.required) ?? counts[0] ?? { done: 0, required: 0 };
  }

  private slotOf(op: Op, node: NodeId): Slot | undefined {
    for (const s of op.slots) if (s.holders.includes(node)) return s;
    return undefined;
  }

  /**
   * A coordinated request: the fields every request has, then its kind's own (`rest`, spread last).
   * One object: spreading a finished base into the kind's literal instead cost ~1.5 KB more per
   * write (heap sampling), on every write.
   */
  private newOp<O extends Op>(key: string, reqId: number, quorum: number, rest: Omit<O, keyof OpBase>): O {
    const rid = ++this.ridSeq;
    const { groups, slots } = this.plan(key, quorum);
    const used = new Set<NodeId>();
    for (const s of slots) used.add(s.intended);
    return {
      rid,
      reqId,
      key,
      startedAt: this.now,
      deadline: this.now + this.timings.requestTimeoutMs,
      probeAt: this.now + this.probeMs,
      groups,
      slots,
      used,
      ...rest,
    } as O;
  }

  // ------------------------------------------------------------ writes

  private startWrite(reqId: number, key: string, value: string, tombstone: boolean, batch: WriteOp['batch']): void {
    this.stats.writes++;
    const local = this.localVersion(key);
    const vclock = incrementClock(local?.vclock ?? {}, this.id);
    const v: Version = {
      key,
      value,
      tombstone,
      timestamp: this.clock.tick(this.now),
      node_id: this.id,
      version: clockSum(vclock),
      vclock,
    };
    const op = this.newOp<WriteOp>(key, reqId, this.config.quorum_w, { kind: 'write', v, replied: false, batch });
    this.ops.set(op.rid, op);
    this.assignHolders(op);
    // One message object for every intended replica (the actor encodes it once).
    let direct: LlMsg | undefined;
    for (const slot of op.slots) {
      const to = slot.holders[0] as NodeId;
      if (to !== slot.intended) this.sendPut(op, slot, to);
      else this.deliver(to, (direct ??= { t: 'put', rid: op.rid, v: op.v, hint: null, ack: true, repair: false }));
    }
    this.checkWrite(op);
  }

  private sendPut(op: WriteOp, slot: Slot, to: NodeId): void {
    const hint = to === slot.intended ? null : slot.intended;
    this.deliver(to, { t: 'put', rid: op.rid, v: op.v, hint, ack: true, repair: false });
  }

  private onAck(from: NodeId, rid: number): void {
    const op = this.ops.get(rid);
    if (!op) return;
    if (op.kind === 'read') {
      // Sync read repair: a stale replica confirmed it took the newest version.
      if (op.repairAwait.delete(from) && op.repairAwait.size === 0 && !op.answered) this.answerRead(op);
      this.closeReadIfDone(op);
      return;
    }
    const slot = this.slotOf(op, from);
    if (!slot || slot.done) return;
    slot.done = true;
    this.checkWrite(op);
  }

  /**
   * A replica refused the write for its budget: once the refusals leave a group fewer replicas than
   * its quorum needs, the write fails with storage_full (507) at once.
   */
  private onNack(from: NodeId, rid: number): void {
    const op = this.ops.get(rid);
    if (!op || op.kind !== 'write' || op.replied) return;
    const slot = this.slotOf(op, from);
    if (!slot || slot.done) return;
    slot.refused = true;
    for (let g = 0; g < op.groups.length; g++) {
      let possible = 0;
      for (const s of op.slots) if (s.group === g && (s.done || !s.refused)) possible++;
      if (possible >= (op.groups[g] as Group).required) continue;
      op.replied = true;
      this.ops.delete(op.rid);
      this.finishWrite(op, {
        id: op.reqId, ok: false, code: 'storage_full',
        error: `write refused: replica ${from} would pass its stored-bytes budget of ${this.storedBytesMax === Infinity ? 'its configured' : this.storedBytesMax} bytes (REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget`,
        indeterminate: op.slots.some((s) => s.done),
      });
      return;
    }
  }

  private checkWrite(op: WriteOp): void {
    if (!op.replied && this.quorumMet(op)) {
      op.replied = true;
      this.stats.quorum_achieved++;
      const standIns: Array<{ node: NodeId; for: NodeId }> = [];
      let acks = 0;
      for (const s of op.slots) {
        if (s.done) acks++;
        for (const h of s.holders) if (h !== s.intended) standIns.push({ node: h, for: s.intended });
      }
      let required = 0;
      for (const g of op.groups) required += g.required;
      this.emit('quorum_achieved', {
        key: op.key,
        op: op.v.tombstone ? 'delete' : 'write',
        acks,
        required,
        latency_ms: this.now - op.startedAt,
        sloppy: standIns.length > 0,
        stand_ins: standIns,
      });
      this.finishWrite(op, { id: op.reqId, ok: true, result: { kind: 'entry', entry: op.v, node_id: this.id } });
    }
    // Keep recruiting until every slot holds a copy (N copies, as Dynamo's sloppy quorum aims for).
    for (const s of op.slots) if (!s.done) return;
    this.ops.delete(op.rid);
  }

  private failWrite(op: WriteOp): void {
    const { done, required } = this.shortfall(op);
    this.stats.quorum_failed++;
    this.emit('quorum_failed', {
      key: op.key,
      op: op.v.tombstone ? 'delete' : 'write',
      acks: done,
      required,
      sloppy_quorum: this.config.sloppy_quorum,
    });
    this.finishWrite(op, {
      id: op.reqId,
      ok: false,
      code: 'quorum_not_met',
      error: `write quorum not met: ${done}/${required} acks`,
      // Replicas that acked keep the version: the write may still become visible.
      indeterminate: op.slots.some((s) => s.done),
    });
  }

  private finishWrite(op: WriteOp, r: ClientReply): void {
    if (!op.batch) {
      this.reply(r);
      return;
    }
    const b = this.batches.get(op.batch.id);
    if (!b) return;
    b.results[op.batch.index] = r;
    if (--b.remaining > 0) return;
    this.batches.delete(b.reqId);
    const failed = b.results.find((x) => x && !x.ok);
    if (failed) {
      this.reply({ ...failed, id: b.reqId });
      return;
    }
    const entries = b.results.flatMap((x) => (x && x.ok && x.result.kind === 'entry' ? [x.result.entry] : []));
    this.reply({ id: b.reqId, ok: true, result: { kind: 'batch', entries } });
  }

  // ------------------------------------------------------------ reads and read repair

  private startRead(reqId: number, key: string): void {
    this.stats.reads++;
    const op = this.newOp<ReadOp>(key, reqId, this.config.quorum_r, {
      kind: 'read',
      mode: this.config.read_repair_mode,
      answered: false,
      dataNode: null,
      full: new Map(),
      digests: new Map(),
      fullAsked: new Set(),
      newest: null,
      repairAwait: new Set(),
      syncRepairSent: false,
      repairedWith: new Map(),
    });
    this.ops.set(op.rid, op);
    this.assignHolders(op);
    const first = op.slots.map((s) => s.holders[0] as NodeId);
    // Digest reads (Cassandra-style): one replica, this node when it is one, sends the full value.
    if (op.mode === 'digest') op.dataNode = first.includes(this.id) ? this.id : (first[0] ?? null);
    for (const node of first) this.sendGet(op, node, op.mode === 'digest' && node !== op.dataNode);
  }

  private sendGet(op: ReadOp, to: NodeId, digest: boolean): void {
    this.deliver(to, { t: 'get', rid: op.rid, key: op.key, digest });
  }

  private onGot(from: NodeId, msg: Extract<LlMsg, { t: 'got' }>): void {
    const op = this.ops.get(msg.rid);
    if (!op || op.kind !== 'read') return;
    if (msg.v) observeStrict(this.clock, msg.v.timestamp, this.now);
    const slot = this.slotOf(op, from);
    if (slot) slot.done = true;
    if (msg.full) op.full.set(from, msg.v);
    else op.digests.set(from, msg.digest);
    this.evaluateRead(op);
  }

  /** Digest responders whose digest differs from the newest full value seen, not yet asked for theirs. */
  private fetchMismatched(op: ReadOp, newest: Version | null): number {
    const nd = versionDigest(newest);
    let waiting = 0;
    for (const [node, d] of op.digests) {
      if (d === nd || op.full.has(node)) continue;
      waiting++;
      if (!op.fullAsked.has(node)) {
        op.fullAsked.add(node);
        this.sendGet(op, node, false);
      }
    }
    return waiting;
  }

  private evaluateRead(op: ReadOp): void {
    if (op.answered) {
      // Late replies (the N-R replicas beyond the quorum): fold in what they know, repair the stale.
      const newest = newestOf([op.newest, ...op.full.values()]);
      op.newest = newest;
      if (op.mode === 'digest') this.fetchMismatched(op, newest);
      this.repairStale(op);
      this.closeReadIfDone(op);
      return;
    }
    if (!this.quorumMet(op) || op.full.size === 0) return;
    const newest = newestOf(op.full.values());
    // Digest mode: a replica whose digest differs may hold something newer; fetch before answering.
    if (op.mode === 'digest' && this.fetchMismatched(op, newest) > 0) return;
    op.newest = newest;
    if (op.mode === 'sync') {
      if (!op.syncRepairSent) {
        op.syncRepairSent = true;
        const stale = this.repairStale(op, true);
        for (const node of stale) if (node !== this.id) op.repairAwait.add(node);
      }
      if (op.repairAwait.size > 0) return;
      this.answerRead(op);
      return;
    }
    this.answerRead(op);
    this.repairStale(op);
    this.closeReadIfDone(op);
  }

  private answerRead(op: ReadOp): void {
    op.answered = true;
    const v = op.newest;
    if (!v || v.tombstone) {
      this.reply({ id: op.reqId, ok: false, code: 'not_found', error: 'key not found' });
    } else {
      this.reply({ id: op.reqId, ok: true, result: { kind: 'entry', entry: v, node_id: this.id } });
    }
  }

  /** The version a responder is known to hold relative to the newest: 'current', 'stale' or 'unknown'. */
  private responderState(op: ReadOp, node: NodeId, nd: string): 'current' | 'stale' {
    if (op.full.has(node)) {
      const v = op.full.get(node) ?? null;
      return versionDigest(v) === nd || (v !== null && op.newest !== null && !lwwNewer(op.newest, v)) ? 'current' : 'stale';
    }
    return op.digests.get(node) === nd ? 'current' : 'stale';
  }

  /**
   * Read repair: every responder holding an older version (or none) gets the newest, tombstones
   * included, so a delete never resurrects. The coordinator's own stale copy is repaired too.
   * Returns the nodes repaired now; `withAck` asks them to acknowledge (sync mode).
   */
  private repairStale(op: ReadOp, withAck = false): NodeId[] {
    const newest = op.newest;
    if (!newest) return [];
    const nd = versionDigest(newest);
    const repaired: NodeId[] = [];
    const responders = [...new Set([...op.full.keys(), ...op.digests.keys()])];
    for (const node of responders) {
      if (op.repairedWith.get(node) === nd || this.responderState(op, node, nd) === 'current') continue;
      op.repairedWith.set(node, nd);
      const slot = this.slotOf(op, node);
      const hint = slot && slot.intended !== node ? slot.intended : null;
      repaired.push(node);
      this.deliver(node, { t: 'put', rid: withAck ? op.rid : -1, v: newest, hint, ack: withAck && node !== this.id, repair: true });
    }
    const own = this.store.get(op.key);
    if (own && lwwNewer(newest, own) && !responders.includes(this.id)) {
      this.applyVersion(newest, 'repair', this.id);
      repaired.push(this.id);
    }
    if (repaired.length > 0) {
      this.stats.read_repairs += repaired.length;
      this.emit('read_repair', {
        key: op.key,
        mode: op.mode,
        repaired,
        timestamp: newest.timestamp,
        tombstone: newest.tombstone,
      });
    }
    return repaired;
  }

  private closeReadIfDone(op: ReadOp): void {
    const waitingFull = [...op.fullAsked].some((n) => !op.full.has(n));
    if (op.answered && op.repairAwait.size === 0 && !waitingFull && op.slots.every((s) => s.done)) this.ops.delete(op.rid);
  }

  // ------------------------------------------------------------ timers: probe and expiry

  /** A slot still silent after the probe: walk further along the ring (sloppy quorum). */
  private probe(op: Op): void {
    if (op.kind === 'read') {
      if (op.answered) return;
      // Digest mode with no full value yet (the data replica is silent): ask the others for theirs.
      if (op.full.size === 0) for (const node of op.digests.keys()) if (!op.fullAsked.has(node)) {
        op.fullAsked.add(node);
        this.sendGet(op, node, false);
      }
    }
    if (!this.config.sloppy_quorum) return;
    if (op.kind === 'write' && op.replied && !op.slots.some((s) => !s.done)) return;
    for (const slot of op.slots) {
      if (slot.done || slot.refused || (op.groups[slot.group] as Group).required === 0) continue;
      const standIn = this.recruit(op, slot);
      if (!standIn) continue;
      if (op.kind === 'write') this.sendPut(op, slot, standIn);
      else this.sendGet(op, standIn, false);
    }
  }

  private expire(op: Op): void {
    this.ops.delete(op.rid);
    if (op.kind === 'write') {
      if (!op.replied) this.failWrite(op);
      return;
    }
    if (op.answered) return;
    if (op.newest !== null || (this.quorumMet(op) && op.full.size > 0)) {
      // Quorum met but a sync repair (or a digest fetch) never completed: answer with what is known.
      op.newest = newestOf([op.newest, ...op.full.values()]);
      this.answerRead(op);
      return;
    }
    const { done, required } = this.shortfall(op);
    this.stats.read_quorum_failed++;
    this.emit('quorum_failed', { key: op.key, op: 'read', replies: done, required });
    this.reply({ id: op.reqId, ok: false, code: 'quorum_not_met', error: `read quorum not met: ${done}/${required} replies` });
  }

  // ------------------------------------------------------------ local storage, hints, transfers

  /** The newest version this node holds for a key, as a replica or as a stand-in. */
  private localVersion(key: string): Version | null {
    let v = this.store.get(key) ?? null;
    for (const held of this.hints.values()) {
      const h = held.get(key);
      if (h && (!v || lwwNewer(h, v))) v = h;
    }
    return v;
  }

  /** Newer wins (HLC timestamp, then node id): an older value never overwrites a newer tombstone. */
  private applyVersion(v: Version, cause: ApplyCause, from: NodeId): boolean {
    observeStrict(this.clock, v.timestamp, this.now);
    const cur = this.store.get(v.key);
    if (cur && !lwwNewer(v, cur)) return false;
    if (this.wouldOverflow(v, cur, this.storedBytesMax * repairOverBudgetFactorMax)) {
      this.stats.refused_storage_full++;
      return false;
    }
    this.storeSet(v);
    this.stats.applied++;
    this.appendLog(cause, v, from);
    return true;
  }

  private storeHint(owner: NodeId, v: Version, from: NodeId): boolean {
    observeStrict(this.clock, v.timestamp, this.now);
    let held = this.hints.get(owner);
    const cur = held?.get(v.key);
    if (cur && !lwwNewer(v, cur)) return true;
    if (!cur && this.hintCount >= leaderlessLimits.hintsMax) {
      this.stats.hints_refused++;
      return false;
    }
    if (!held) {
      held = new Map();
      this.hints.set(owner, held);
    }
    if (!cur) this.hintCount++;
    held.set(v.key, v);
    this.storedBytes += versionBytes(v) - (cur ? versionBytes(cur) : 0);
    this.durable(['h', owner, versionTuple(v)], versionBytes(v));
    this.stats.hints_stored++;
    this.appendLog('hint', v, from, owner);
    return true;
  }

  /** Hinted handoff and membership transfers: (re)send to reachable owners until acknowledged. */
  private handoffTick(): void {
    const max = Math.max(1, this.timings.maxEntriesPerMessage);
    for (const [owner, held] of this.hints) {
      if (!this.members.includes(owner)) {
        // The owner left the cluster: its hints have nowhere to go.
        this.stats.hints_dropped += held.size;
        this.hintCount -= held.size;
        for (const [key, v] of held) {
          this.storedBytes -= versionBytes(v);
          this.durable(['x', owner, key], storedEntryOverheadBytes);
        }
        this.hints.delete(owner);
        continue;
      }
      if (this.suspected(owner) || held.size === 0) continue;
      this.deliver(owner, { t: 'handoff', kind: 'hint', vs: [...held.values()].slice(0, max) });
    }
    for (const [to, keys] of this.transfers) {
      if (!this.members.includes(to)) {
        this.transfers.delete(to);
        continue;
      }
      if (this.suspected(to)) continue;
      const vs: Version[] = [];
      for (const key of keys) {
        const v = this.store.get(key);
        if (!v) keys.delete(key);
        else if (vs.length < max) vs.push(v);
      }
      if (keys.size === 0) this.transfers.delete(to);
      if (vs.length > 0) this.deliver(to, { t: 'handoff', kind: 'transfer', vs });
    }
  }

  private onHandoffAck(from: NodeId, kind: HandoffKind, items: Array<[string, number]>): void {
    if (kind === 'hint') {
      const held = this.hints.get(from);
      if (!held) return;
      const delivered: string[] = [];
      for (const [key, ts] of items) {
        // Only the version that was sent is settled; a newer hint for the key waits for the next round.
        const h = held.get(key);
        if (h?.timestamp === ts) {
          held.delete(key);
          this.hintCount--;
          this.storedBytes -= versionBytes(h);
          this.durable(['x', from, key], storedEntryOverheadBytes);
          delivered.push(key);
        }
      }
      if (held.size === 0) this.hints.delete(from);
      if (delivered.length > 0) {
        this.stats.hints_delivered += delivered.length;
        this.emit('hinted_handoff', { to: from, keys: delivered.slice(0, 50), count: delivered.length });
      }
      return;
    }
    const keys = this.transfers.get(from);
    if (!keys) return;
    for (const [key] of items) {
      if (!keys.delete(key)) continue;
      this.stats.keys_transferred++;
      this.dropIfMovedOut(key);
    }
    if (keys.size === 0) this.transfers.delete(from);
  }

  /** After its new owners have it, a key this node no longer replicates leaves its store. */
  private dropIfMovedOut(key: string): void {
    if (this.preferenceList(key).includes(this.id)) return;
    for (const keys of this.transfers.values()) if (keys.has(key)) return;
    const v = this.store.get(key);
    if (!v) return;
    this.storeDelete(key);
    this.stats.keys_moved_out++;
    this.appendLog('moved', v, this.id);
  }

  /** A node joined or left: new ring; keys whose preference list gained a node are streamed to it. */
  private changeMembership(peers: readonly NodeId[]): void {
    const oldRing = this.ring;
    this.members = [...new Set(peers)];
    if (!this.members.includes(this.id)) this.members.push(this.id);
    this.ring = ringFor(this.members);
    this.plCache.clear();
    this.walkCache.clear();
    this.regionIdsCache = undefined;
    for (const m of this.members) {
      if (m !== this.id && !this.detectors.has(m)) this.detectors.set(m, this.newDetector());
    }
    for (const m of [...this.detectors.keys()]) if (!this.members.includes(m)) this.detectors.delete(m);
    this.scheduleTransfers(oldRing, this.config.quorum_n);
    this.aeCursor = 0;
  }

  /**
   * Keys whose preference list gained a node (against `oldRing` with `oldN` replicas) are streamed
   * to it by the handoff timer, which starts at once.
   */
  private scheduleTransfers(oldRing: HashRing, oldN: number): void {
    for (const [key] of this.store) {
      const before = oldRing.preferenceList(key, oldN);
      for (const node of this.preferenceList(key)) {
        if (node === this.id || before.includes(node)) continue;
        let keys = this.transfers.get(node);
        if (!keys) {
          keys = new Set();
          this.transfers.set(node, keys);
        }
        keys.add(key);
      }
    }
    this.nextHandoffAt = Math.min(this.nextHandoffAt, this.now);
  }

  /**
   * set_quorum: this node coordinates with new N/W/R from now on (requests already in flight keep
   * the plan they started with). The caller sequences the nodes so that every pair of quorums that
   * can be in use at once still overlaps (checkers/quorum.ts); this node only refuses a quorum that
   * does not overlap itself (W + R > N). A larger N streams keys to the replicas it adds.
   */
  private setQuorum(args: unknown): ControlResult {
    const a = isObject(args) ? args : {};
    const { n, w, r } = a;
    const int = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 1;
    if (!int(n) || !int(w) || !int(r)) return { ok: false, code: 'bad_request', error: 'set_quorum needs {n, w, r}: positive integers' };
    if (w > n || r > n) return { ok: false, code: 'bad_request', error: `set_quorum: w and r must be at most n (${n})` };
    if (w + r <= n) return { ok: false, code: 'bad_request', error: `set_quorum: w + r must be greater than n (W + R > N), got ${w} + ${r} <= ${n}` };
    const oldN = this.config.quorum_n;
    this.config.quorum_n = n;
    this.config.quorum_w = w;
    this.config.quorum_r = r;
    this.plCache.clear();
    if (n > oldN) this.scheduleTransfers(this.ring, oldN);
    return { ok: true, data: { n, w, r, previous_n: oldN } };
  }

  // ------------------------------------------------------------ heartbeats and anti-entropy

  private heartbeatIntervalMs(): number {
    const l = leaderlessLimits;
    return Math.min(l.heartbeatIntervalMsMax, Math.max(l.heartbeatIntervalMs, this.members.length * l.heartbeatMsPerMember));
  }

  /** A detector for a peer, seeded with the heartbeat interval it is expected to keep. */
  private newDetector(): PhiAccrualDetector {
    return new PhiAccrualDetector(this.now, { ...defaultPhiOptions, firstIntervalMs: this.heartbeatIntervalMs() });
  }

  private sendHeartbeats(): void {
    const hlc = this.clock.peek();
    for (const peer of this.others()) {
      const last = this.lastHeartbeatSent.get(peer) ?? -Infinity;
      if (this.suspected(peer) && this.now - last < leaderlessLimits.suspectedHeartbeatIntervalMs) continue;
      this.lastHeartbeatSent.set(peer, this.now);
      this.deliver(peer, { t: 'hb', hlc });
    }
  }

  /** (key, digest) of the keys this node and `peer` both replicate: what an exchange compares. */
  private pairDigests(peer: NodeId): Map<string, string> {
    const out = new Map<string, string>();
    for (const [key, v] of this.store) {
      const pl = this.preferenceList(key);
      if (pl.includes(peer) && pl.includes(this.id)) out.set(key, versionDigest(v));
    }
    return out;
  }

  private startAntiEntropy(peer: NodeId): void {
    this.stats.ae_rounds++;
    const root = aeRoot(this.pairDigests(peer));
    this.deliver(peer, { t: 'ae_root', root: root.root, leaves: root.leaves });
  }

  private pushKeys(to: NodeId, keys: readonly string[]): void {
    const vs = keys.flatMap((k) => {
      const v = this.store.get(k);
      return v ? [v] : [];
    });
    if (vs.length === 0) return;
    this.stats.ae_versions_sent += vs.length;
    this.deliver(to, { t: 'ae_push', vs });
  }

  // ------------------------------------------------------------ custom controls

  private custom(name: string, args: unknown): ControlResult {
    switch (name) {
      case 'suspicion': {
        const nodes: Record<NodeId, { phi: number; suspected: boolean }> = {};
        for (const m of [...this.members].sort()) {
          const d = this.detectors.get(m);
          const phi = d ? d.phi(this.now) : 0;
          nodes[m] = { phi: Math.round(phi * 1000) / 1000, suspected: m !== this.id && phi >= defaultPhiOptions.threshold };
        }
        return { ok: true, data: { threshold: defaultPhiOptions.threshold, nodes } };
      }
      case 'placement': {
        const a = isObject(args) ? args : {};
        const key = a.key;
        const n = a.n ?? 3;
        if (typeof key !== 'string') return { ok: false, code: 'bad_request', error: 'placement needs a key (string)' };
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
          return { ok: false, code: 'bad_request', error: 'placement n must be a positive integer' };
        }
        return { ok: true, data: { key, preference_list: this.ring.preferenceList(key, n) } };
      }
      case 'corrupt': {
        if (!isObject(args) || typeof args.key !== 'string' || typeof args.value !== 'string') {
          return { ok: false, code: 'bad_request', error: 'corrupt needs {key: string, value: string, timestamp?: number}' };
        }
        // An outside timestamp is bounded (a day ahead at most) so the bad copy cannot pin anything.
        const tsProblem = args.timestamp === undefined
          ? null
          : externalTimestampProblem(args.timestamp, this.clock.ceiling(this.now), corruptTimestampAheadMsMax);
        if (tsProblem !== null) return { ok: false, code: 'bad_request', error: tsProblem };
        const cur = this.store.get(args.key);
        // Older than the copy it replaces, so every correct replica's version beats it.
        const timestamp = typeof args.timestamp === 'number' ? args.timestamp : (cur?.timestamp ?? this.clock.peek()) - 1_000_000;
        const v: Version = {
          key: args.key,
          value: args.value,
          tombstone: false,
          timestamp,
          node_id: cur?.node_id ?? this.id,
          version: cur?.version ?? 1,
          vclock: { ...(cur?.vclock ?? {}) },
        };
        this.storeSet(v);
        this.appendLog('corrupt', v, this.id);
        return { ok: true, data: { key: args.key, entry: v } };
      }
      case 'anti_entropy': {
        const peers = this.others().filter((p) => !this.suspected(p));
        for (const p of peers) this.startAntiEntropy(p);
        return { ok: true, data: { peers, keys: this.store.size } };
      }
      case 'digest': {
        const all = new Map<string, string>();
        for (const [k, v] of this.store) all.set(k, versionDigest(v));
        return { ok: true, data: { root: aeRoot(all).root, keys: this.store.size } };
      }
      case 'set_quorum':
        return this.setQuorum(args);
      case 'quorum':
        return { ok: true, data: { n: this.config.quorum_n, w: this.config.quorum_w, r: this.config.quorum_r } };
      case 'hints': {
        const data: Record<NodeId, string[]> = {};
        for (const [owner, held] of this.hints) data[owner] = [...held.keys()].sort();
        return { ok: true, data };
      }
      default:
        return { ok: false, code: 'unsupported', error: `unknown leaderless command: ${name}` };
    }
  }

  // ------------------------------------------------------------ output

  private reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  private emit(type: string, data: Record<string, unknown>): void {
    const ev: CoreEvent = { type, node_id: this.id, data };
    this.out.events.push(ev);
  }

  private appendLog(kind: LogKind, v: Version, from: NodeId, hintFor?: NodeId): void {
    const e: LogEntry = {
      index: ++this.logIndex,
      kind,
      key: v.key,
      node_id: v.node_id,
      timestamp: v.timestamp,
      tombstone: v.tombstone,
      from,
    };
    if (hintFor !== undefined) e.hint_for = hintFor;
    this.log.push(e);
    if (this.log.length > leaderlessLimits.logEntriesMax) {
      this.log.shift();
      this.stats.log_dropped++;
    }
  }
}

export const createLeaderlessCore: CoreFactory = (opts) => {
  invariant(opts.config.quorum_n >= 1, 'quorum_n is at least 1 (the front validates it)');
  return new LeaderlessCore(opts);
};
