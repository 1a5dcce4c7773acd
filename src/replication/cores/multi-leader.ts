/**
 * Multi-leader replication as a pure NodeCore: every node accepts writes (role `primary`), each key
 * carries a vector clock, writes are pushed to every other node in batches, and concurrent versions
 * are detected by vector-clock comparison and settled by the configured resolver (lww,
 * vector_clock siblings, crdt merge, manual parking). Periodic Merkle anti-entropy makes replicas
 * that diverged behind a partition converge with no further writes.
 * Not a consensus protocol: there is no global order, and reads answer from the local node.
 *
 * Receive rule (per key, for an incoming version v against what the node knows):
 *   v dominated by (or equal to) a known version -> ignored;  v dominates -> applied;
 *   v concurrent -> a conflict (`conflict_detected`, counted in status().extra.conflicts):
 *     lww          the LWW winner (HLC timestamp, then node id) is kept, its clock the merge of both;
 *     vector_clock both kept as siblings (storeView shows the LWW winner, extra/logView list them)
 *                  until a write whose clock dominates them all supersedes them;
 *     crdt         tagged CRDT values of one kind are joined (see ../dynamo/crdt.ts for the format);
 *                  anything else falls back to lww;
 *     manual       the remote version is parked beside the local one until a `resolve` control
 *                  (or a later dominating write) settles it.
 * Every node detects a conflict it sees, so one concurrent pair is counted once per replica that
 * received both sides: `conflicts` are detections at this node.
 *
 * Durable state (what survives a crash): each key's versions (siblings, a parked remote), which
 * carry the vector clocks, so a restarted node's next write still dominates what it wrote before.
 * Every key change is a durable record (the key's whole state), with a checkpoint of every key when
 * the records since the last one outweigh the store; multiLeaderDurableFold rebuilds it. Writes the
 * node accepted but had not yet pushed reach the others through anti-entropy after a restart.
 * A local write that would take the stored bytes past the node's budget is refused (storage_full,
 * 507); versions from peers are always applied (refusing them would keep replicas apart).
 */
import {
  emptyOutput,
  type DurableFold,
  type ClientReply,
  type ClientRequest,
  type ConflictResolver,
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
  type Version,
} from '../core.js';
import { HybridClock } from '../hlc.js';
import { durableCheckpointMinBytes, storedEntryOverheadBytes } from '../limits.js';
import { unreachable } from '../../util/assert.js';
import { aeAnswer, aePlan, aeRoot, type AeRoot } from '../dynamo/anti-entropy.js';
import { applyCrdtOp, encodeCrdt, mergeCrdt, parseCrdt, type CrdtState } from '../dynamo/crdt.js';
import { hashText } from '../dynamo/merkle.js';
import { versionOfTuple, versionTuple, type VersionTuple } from './durable-version.js';
import { clockKey, clockSum, compareClocks, descends, incrementClock, mergeClocks, type VClock } from '../dynamo/vclock.js';
import {
  isNumberArray,
  isObject,
  isPairArray,
  isStringArray,
  isVersionArray,
  lwwCompare,
  observeStrict,
  versionDigest,
} from '../dynamo/version.js';

/** Limits and periods of this core, with their units (STYLE.md). */
export const multiLeaderLimits = {
  /** Local writes are batched for this long before one replication message per peer. */
  flushDelayMs: 5,
  /** One anti-entropy exchange with the next peer (round robin) this often. */
  antiEntropyIntervalMs: 500,
  /** logView keeps this many recent entries; older ones are counted in log_dropped. */
  logEntriesMax: 1000,
  /** status().extra lists the siblings of at most this many keys. */
  siblingKeysShownMax: 20,
} as const;

// ---------------------------------------------------------------- wire messages

type MlMsg =
  | { t: 'rep'; vs: Version[] }
  | { t: 'ae_root'; root: string; leaves: string[] }
  | { t: 'ae_keys'; buckets: number[]; entries: Array<[string, string]>; truncated: boolean }
  | { t: 'ae_push'; vs: Version[] }
  | { t: 'ae_pull'; keys: string[] };

/** Decodes a peer message; null for anything malformed (counted, never thrown). */
function decodeMsg(x: unknown): MlMsg | null {
  if (!isObject(x)) return null;
  switch (x.t) {
    case 'rep':
    case 'ae_push':
      return isVersionArray(x.vs) ? { t: x.t, vs: x.vs } : null;
    case 'ae_root':
      return typeof x.root === 'string' && isStringArray(x.leaves) ? { t: 'ae_root', root: x.root, leaves: x.leaves } : null;
    case 'ae_keys':
      return isNumberArray(x.buckets) && isPairArray(x.entries) && typeof x.truncated === 'boolean'
        ? { t: 'ae_keys', buckets: x.buckets, entries: x.entries, truncated: x.truncated }
        : null;
    case 'ae_pull':
      return isStringArray(x.keys) ? { t: 'ae_pull', keys: x.keys } : null;
    default:
      return null;
  }
}

// ---------------------------------------------------------------- per-key state

interface KeyState {
  /** Mutually concurrent versions (one, except vector_clock siblings). */
  versions: Version[];
  /** manual: the remote side of a pending conflict. */
  parked: Version | null;
}

export interface PendingConflict {
  node_id: NodeId;
  key: string;
  local_value: string;
  remote_value: string;
}

type LogKind = 'write' | 'delete' | 'apply' | 'conflict' | 'merge' | 'sibling' | 'park' | 'resolve';

interface LogEntry {
  index: number;
  kind: LogKind;
  key: string;
  node_id: NodeId;
  timestamp: number;
  vclock: Record<NodeId, number>;
  tombstone: boolean;
  value: string;
  from?: NodeId;
  siblings?: Array<{ node_id: NodeId; value: string; vclock: Record<NodeId, number> }>;
}

// ---------------------------------------------------------------- durable records

/**
 * A key's whole state (its parked remote or null, then its versions, as flat tuples), or a
 * checkpoint of every key.
 */
type MlRecord = ['k', string, VersionTuple | null, ...VersionTuple[]] | ['c', Array<[string, Version[], Version | null]>];

function isMlRecord(r: unknown): r is MlRecord {
  return Array.isArray(r) && (r[0] === 'k' || r[0] === 'c');
}

/** What a restarted node starts from (CoreOptions.persisted): every key's state. */
type MlPersisted = Map<string, KeyState>;

export const multiLeaderDurableFold: DurableFold = {
  fold(state, record) {
    if (!isMlRecord(record)) return state;
    if (record[0] === 'c') return new Map(record[1].map(([key, versions, parked]) => [key, { versions, parked }]));
    const st: MlPersisted = state instanceof Map ? (state as MlPersisted) : new Map();
    const [, key, parked, ...versions] = record;
    st.set(key, { versions: versions.map(versionOfTuple), parked: parked === null ? null : versionOfTuple(parked) });
    return st;
  },
  isCheckpoint: (record) => isMlRecord(record) && record[0] === 'c',
};

function keyStateBytes(key: string, ks: KeyState): number {
  let b = 0;
  for (const v of ks.versions) b += key.length + v.value.length + storedEntryOverheadBytes;
  if (ks.parked) b += key.length + ks.parked.value.length + storedEntryOverheadBytes;
  return b;
}

function winnerOf(ks: KeyState): Version {
  let best = ks.versions[0] as Version;
  for (const v of ks.versions) if (lwwCompare(v, best) > 0) best = v;
  return best;
}

function knownVersions(ks: KeyState): Version[] {
  return ks.parked ? [...ks.versions, ks.parked] : ks.versions;
}

function joinClocks(vs: readonly Version[]): Record<NodeId, number> {
  let c: VClock = {};
  for (const v of vs) c = mergeClocks(c, v.vclock);
  return mergeClocks(c, {});
}

/** The LWW merge of two concurrent versions: the winner's content under the join of both clocks. */
function lwwMerge(a: Version, b: Version): Version {
  const w = lwwCompare(a, b) >= 0 ? a : b;
  const vclock = mergeClocks(a.vclock, b.vclock);
  return { ...w, vclock, version: clockSum(vclock) };
}

/** The crdt merge: tagged states of one kind are joined; otherwise LWW. Deterministic in (a, b). */
function crdtMerge(a: Version, b: Version): { merged: Version; joined: boolean } {
  const base = lwwMerge(a, b);
  if (a.tombstone || b.tombstone) return { merged: base, joined: false };
  const pa = parseCrdt(a.value);
  const pb = parseCrdt(b.value);
  if (pa?.kind !== 'state' || pb?.kind !== 'state') return { merged: base, joined: false };
  const joined = mergeCrdt(pa.state, pb.state);
  if (!joined) return { merged: base, joined: false };
  return { merged: { ...base, value: encodeCrdt(joined) }, joined: true };
}

function brief(v: Version): { node_id: NodeId; value: string; vclock: Record<NodeId, number> } {
  return { node_id: v.node_id, value: v.tombstone ? '' : v.value, vclock: { ...v.vclock } };
}

// ---------------------------------------------------------------- the core

class MultiLeaderCore implements NodeCore {
  readonly id: NodeId;
  private members: NodeId[];
  private readonly resolver: ConflictResolver;
  private readonly timings: CoreTimings;
  private readonly clock = new HybridClock();
  private readonly keys = new Map<string, KeyState>();
  /** Digest of each key's known versions, for anti-entropy; dropped when the key changes. */
  private readonly digests = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private flushAt = Infinity;
  private nextAntiEntropyAt: number;
  private aeCursor = 0;
  private readonly out: CoreOutput = emptyOutput();
  private readonly log: LogEntry[] = [];
  private logIndex = 0;
  /** Budget on storedBytes (Infinity when none); bytes of durable records since the last checkpoint. */
  private readonly storedBytesMax: number;
  private storedBytes = 0;
  private durableSinceCheckpoint = 0;
  private readonly stats = {
    refused_storage_full: 0,
    writes: 0,
    reads: 0,
    applied: 0,
    conflicts: 0,
    resolved: 0,
    ae_rounds: 0,
    ae_versions_sent: 0,
    replicated_versions_sent: 0,
    bad_messages: 0,
    log_dropped: 0,
  };

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.members = [...opts.peers];
    this.resolver = opts.config.conflict_resolver;
    this.timings = opts.timings;
    // Stagger anti-entropy across nodes so rounds do not all fire at the same instant.
    this.nextAntiEntropyAt = opts.now + opts.rng.range(1, multiLeaderLimits.antiEntropyIntervalMs);
    this.storedBytesMax = opts.storedBytesMax ?? Infinity;
    if (opts.persisted instanceof Map) {
      // A restarted node: its keys as they were; its clock past every timestamp it stored.
      for (const [key, ks] of opts.persisted as MlPersisted) {
        this.keys.set(key, ks);
        this.storedBytes += keyStateBytes(key, ks);
        for (const v of knownVersions(ks)) this.clock.observe(v.timestamp, opts.now);
      }
      // Anti-entropy at once: what it wrote but never pushed, and what it missed while down.
      this.nextAntiEntropyAt = opts.now;
    }
  }

  /** A local write of `value` to `key` would pass the budget: the 507 reply, else null. */
  private refuseIfFull(reqId: number, key: string, value: string): ClientReply | null {
    const ks = this.keys.get(key);
    const after = this.storedBytes - (ks ? keyStateBytes(key, ks) : 0) + key.length + value.length + storedEntryOverheadBytes;
    if (after <= this.storedBytes || after <= this.storedBytesMax) return null;
    this.stats.refused_storage_full++;
    return {
      id: reqId, ok: false, code: 'storage_full',
      error: `node ${this.id} would store ${after} bytes, past its budget of ${this.storedBytesMax} bytes (REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget`,
    };
  }

  // ------------------------------------------------------------ NodeCore

  onClient(req: ClientRequest, now: number): void {
    const op = req.op;
    switch (op.op) {
      case 'write': {
        const full = this.refuseIfFull(req.id, op.key, op.value);
        if (full) {
          this.reply(full);
          return;
        }
        this.reply({ id: req.id, ok: true, result: { kind: 'entry', entry: this.localWrite(op.key, op.value, false, now), node_id: this.id } });
        return;
      }
      case 'delete':
        this.reply({ id: req.id, ok: true, result: { kind: 'entry', entry: this.localWrite(op.key, '', true, now), node_id: this.id } });
        return;
      case 'read': {
        this.stats.reads++;
        const ks = this.keys.get(op.key);
        const w = ks ? winnerOf(ks) : undefined;
        if (!w || w.tombstone) {
          this.reply({ id: req.id, ok: false, code: 'not_found', error: 'key not found' });
        } else {
          this.reply({ id: req.id, ok: true, result: { kind: 'entry', entry: w, node_id: this.id } });
        }
        return;
      }
      case 'batch': {
        for (const e of op.entries) {
          const full = this.refuseIfFull(req.id, e.key, e.value);
          if (full) {
            this.reply(full);
            return;
          }
        }
        const entries = op.entries.map((e) => this.localWrite(e.key, e.value, false, now));
        this.reply({ id: req.id, ok: true, result: { kind: 'batch', entries } });
        return;
      }
      default:
        unreachable(op);
    }
  }

  onMessage(from: NodeId, raw: unknown, now: number): void {
    const msg = decodeMsg(raw);
    if (!msg) {
      this.stats.bad_messages++;
      return;
    }
    switch (msg.t) {
      case 'rep':
      case 'ae_push':
        for (const v of msg.vs) this.receive(v, from, now);
        return;
      case 'ae_root': {
        const answer = aeAnswer(this.allDigests(), msg, this.timings.maxEntriesPerMessage);
        if (answer) this.send(from, { t: 'ae_keys', ...answer });
        return;
      }
      case 'ae_keys': {
        const plan = aePlan(this.allDigests(), msg, this.timings.maxEntriesPerMessage);
        if (plan.push.length > 0) this.pushKeys(from, plan.push);
        if (plan.pull.length > 0) this.send(from, { t: 'ae_pull', keys: plan.pull });
        return;
      }
      case 'ae_pull':
        this.pushKeys(from, msg.keys.slice(0, this.timings.maxEntriesPerMessage));
        return;
      default:
        unreachable(msg);
    }
  }

  onTick(now: number): void {
    if (now >= this.flushAt) this.flush();
    if (now >= this.nextAntiEntropyAt) {
      this.nextAntiEntropyAt = now + multiLeaderLimits.antiEntropyIntervalMs;
      const peers = this.others();
      if (peers.length > 0) this.startAntiEntropy(peers[this.aeCursor++ % peers.length] as NodeId);
    }
  }

  nextDeadline(): number {
    return Math.min(this.flushAt, this.nextAntiEntropyAt);
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
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true, data: { skew_ms: cmd.ms } };
      case 'peers':
        this.members = [...cmd.peers];
        this.aeCursor = 0;
        return { ok: true };
      case 'replication_mode':
        return { ok: false, code: 'unsupported', error: 'replication_mode applies to single_leader clusters only' };
      case 'set_leader':
      case 'add_server':
      case 'remove_server':
        return { ok: false, code: 'unsupported', error: `${cmd.kind} is not supported by multi_leader clusters` };
      case 'custom':
        return this.custom(cmd.name, cmd.args, now);
      default:
        return unreachable(cmd);
    }
  }

  status(): CoreStatus {
    const siblings: Record<string, Array<ReturnType<typeof brief>>> = {};
    let siblingKeys = 0;
    let pending = 0;
    for (const [key, ks] of this.keys) {
      if (ks.parked) pending++;
      if (ks.versions.length > 1) {
        siblingKeys++;
        if (siblingKeys <= multiLeaderLimits.siblingKeysShownMax) siblings[key] = ks.versions.map(brief);
      }
    }
    return {
      role: 'primary',
      commit_index: this.stats.applied,
      last_applied: this.stats.applied,
      leader_id: '',
      lag: 0,
      extra: {
        resolver: this.resolver,
        conflicts: this.stats.conflicts,
        conflicts_resolved: this.stats.resolved,
        pending_conflicts: pending,
        sibling_keys: siblingKeys,
        siblings,
        keys: this.keys.size,
        writes: this.stats.writes,
        reads: this.stats.reads,
        anti_entropy_rounds: this.stats.ae_rounds,
        anti_entropy_versions_sent: this.stats.ae_versions_sent,
        replicated_versions_sent: this.stats.replicated_versions_sent,
        bad_messages: this.stats.bad_messages,
        log_dropped: this.stats.log_dropped,
        hlc_remote_refused: this.clock.remoteRefused,
        stored_bytes: this.storedBytes,
        stored_bytes_max: Number.isFinite(this.storedBytesMax) ? this.storedBytesMax : null,
        refused_storage_full: this.stats.refused_storage_full,
      },
    };
  }

  logView(): unknown[] {
    return this.log.map((e) => ({ ...e }));
  }

  storeView(): Record<string, Version> {
    const out: Record<string, Version> = {};
    for (const key of [...this.keys.keys()].sort()) out[key] = { ...winnerOf(this.keys.get(key) as KeyState) };
    return out;
  }

  // ------------------------------------------------------------ writes and the receive rule

  private localWrite(key: string, value: string, tombstone: boolean, now: number): Version {
    this.stats.writes++;
    const ks = this.keys.get(key);
    // A local write has seen every version this node knows of the key: its clock dominates them all.
    const vclock = incrementClock(ks ? joinClocks(knownVersions(ks)) : {}, this.id);
    const timestamp = this.clock.tick(now);
    let stored = value;
    if (this.resolver === 'crdt' && !tombstone) stored = this.crdtWriteValue(ks, value, timestamp);
    const v: Version = { key, value: stored, tombstone, timestamp, node_id: this.id, version: clockSum(vclock), vclock };
    if (ks?.parked) this.emit('conflict_resolved', { key, choice: 'superseded' });
    this.setKey(key, { versions: [v], parked: null });
    this.appendLog(tombstone ? 'delete' : 'write', v);
    this.markDirty(key, now);
    return v;
  }

  /** crdt resolver: an op is applied to the local state, a state is joined with it, others stay raw. */
  private crdtWriteValue(ks: KeyState | undefined, value: string, timestamp: number): string {
    const parsed = parseCrdt(value);
    if (!parsed) return value;
    const w = ks ? winnerOf(ks) : undefined;
    const cur = w && !w.tombstone ? parseCrdt(w.value) : null;
    const curState: CrdtState | null = cur?.kind === 'state' ? cur.state : null;
    if (parsed.kind === 'op') return encodeCrdt(applyCrdtOp(curState, parsed.op, this.id, timestamp));
    const joined = curState ? mergeCrdt(curState, parsed.state) : null;
    return encodeCrdt(joined ?? parsed.state);
  }

  /** The receive rule (file header): ignore dominated, apply dominating, resolve concurrent. */
  private receive(v: Version, from: NodeId, now: number): void {
    observeStrict(this.clock, v.timestamp, now);
    const ks = this.keys.get(v.key);
    if (!ks) {
      this.setKey(v.key, { versions: [v], parked: null });
      this.appendLog('apply', v, from);
      return;
    }
    // Already known: some version here has seen everything v has.
    if (knownVersions(ks).some((k) => descends(k.vclock, v.vclock))) return;
    switch (this.resolver) {
      case 'lww':
      case 'crdt': {
        const cur = ks.versions[0] as Version;
        if (compareClocks(v.vclock, cur.vclock) === 'after') {
          this.setKey(v.key, { versions: [v], parked: null });
          this.appendLog('apply', v, from);
          return;
        }
        const { merged, joined } = this.resolver === 'crdt' ? crdtMerge(cur, v) : { merged: lwwMerge(cur, v), joined: false };
        this.conflict(v.key, cur, v, joined ? 'merged' : merged.node_id === v.node_id ? 'remote_won' : 'local_won');
        this.setKey(v.key, { versions: [merged], parked: null });
        this.appendLog('merge', merged, from);
        return;
      }
      case 'vector_clock': {
        // Drop the siblings v supersedes; whatever is left is concurrent with v and stays beside it.
        const remaining = ks.versions.filter((s) => !descends(v.vclock, s.vclock));
        const versions = [...remaining, v].sort(lwwCompare);
        if (remaining.length > 0) {
          this.conflict(v.key, winnerOf(ks), v, 'siblings');
          this.appendLog('sibling', v, from, versions);
        } else {
          this.appendLog('apply', v, from);
        }
        this.setKey(v.key, { versions, parked: null });
        return;
      }
      case 'manual': {
        const local = ks.versions[0] as Version;
        if (compareClocks(v.vclock, local.vclock) === 'after') {
          // v supersedes the local version; a parked remote it has also seen is settled with it.
          const parked = ks.parked && !descends(v.vclock, ks.parked.vclock) ? ks.parked : null;
          if (ks.parked && !parked) {
            this.stats.resolved++;
            this.emit('conflict_resolved', { key: v.key, choice: 'superseded' });
          }
          this.setKey(v.key, { versions: [v], parked });
          this.appendLog('apply', v, from);
          return;
        }
        if (ks.parked) {
          // Another remote version concurrent with the local one: the parked side keeps the LWW merge.
          const parked = compareClocks(v.vclock, ks.parked.vclock) === 'after' ? v : lwwMerge(ks.parked, v);
          this.setKey(v.key, { versions: ks.versions, parked });
          this.appendLog('park', parked, from);
          return;
        }
        this.conflict(v.key, local, v, 'parked');
        this.setKey(v.key, { versions: ks.versions, parked: v });
        this.appendLog('park', v, from);
        return;
      }
      default:
        unreachable(this.resolver);
    }
  }

  private conflict(key: string, local: Version, remote: Version, outcome: string): void {
    this.stats.conflicts++;
    this.emit('conflict_detected', {
      key,
      resolver: this.resolver,
      outcome,
      local: { node_id: local.node_id, timestamp: local.timestamp, vclock: { ...local.vclock } },
      remote: { node_id: remote.node_id, timestamp: remote.timestamp, vclock: { ...remote.vclock } },
    });
  }

  /** Every change of a key's state goes through here: bytes counted, a durable record drained. */
  private setKey(key: string, ks: KeyState): void {
    const old = this.keys.get(key);
    const bytes = keyStateBytes(key, ks);
    this.storedBytes += bytes - (old ? keyStateBytes(key, old) : 0);
    this.keys.set(key, ks);
    this.digests.delete(key);
    this.stats.applied++;
    const r: MlRecord = ['k', key, ks.parked === null ? null : versionTuple(ks.parked)];
    for (const v of ks.versions) r.push(versionTuple(v));
    (this.out.durable as unknown[]).push(r);
    this.durableSinceCheckpoint += bytes;
  }

  /** Every key as one record, once the records since the last one outweigh the store (limits.ts). */
  private maybeCheckpoint(): void {
    if (this.durableSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.storedBytes)) return;
    const all: Array<[string, Version[], Version | null]> = [];
    for (const [key, ks] of this.keys) all.push([key, ks.versions, ks.parked]);
    (this.out.durable as unknown[]).push(['c', all] satisfies MlRecord);
    this.durableSinceCheckpoint = 0;
  }

  // ------------------------------------------------------------ manual resolution and controls

  private custom(name: string, args: unknown, now: number): ControlResult {
    switch (name) {
      case 'conflicts':
        return { ok: true, data: this.pendingConflicts() };
      case 'resolve':
        return this.resolve(args, now);
      case 'anti_entropy': {
        const peers = this.others();
        for (const p of peers) this.startAntiEntropy(p);
        return { ok: true, data: { peers, keys: this.keys.size } };
      }
      case 'digest': {
        const root = aeRoot(this.allDigests());
        return { ok: true, data: { root: root.root, keys: this.keys.size } };
      }
      default:
        return { ok: false, code: 'unsupported', error: `unknown multi_leader command: ${name}` };
    }
  }

  private pendingConflicts(): PendingConflict[] {
    const out: PendingConflict[] = [];
    for (const key of [...this.keys.keys()].sort()) {
      const ks = this.keys.get(key) as KeyState;
      if (!ks.parked) continue;
      const local = ks.versions[0] as Version;
      out.push({
        node_id: this.id,
        key,
        local_value: local.tombstone ? '' : local.value,
        remote_value: ks.parked.tombstone ? '' : ks.parked.value,
      });
    }
    return out;
  }

  /** Settles a parked conflict with a new write whose clock dominates both sides. */
  private resolve(args: unknown, now: number): ControlResult {
    if (!isObject(args) || typeof args.key !== 'string' || (args.choice !== 'local' && args.choice !== 'remote')) {
      return { ok: false, code: 'bad_request', error: 'resolve needs {key: string, choice: "local" | "remote"}' };
    }
    const key = args.key;
    const choice = args.choice;
    const ks = this.keys.get(key);
    if (!ks?.parked) return { ok: false, code: 'refused', error: `no pending conflict for key ${key} on node ${this.id}` };
    const chosen = choice === 'local' ? (ks.versions[0] as Version) : ks.parked;
    const vclock = incrementClock(joinClocks(knownVersions(ks)), this.id);
    const v: Version = {
      key,
      value: chosen.value,
      tombstone: chosen.tombstone,
      timestamp: this.clock.tick(now),
      node_id: this.id,
      version: clockSum(vclock),
      vclock,
    };
    this.setKey(key, { versions: [v], parked: null });
    this.stats.resolved++;
    this.appendLog('resolve', v);
    this.emit('conflict_resolved', { key, choice });
    this.markDirty(key, now);
    return { ok: true, data: { status: 'resolved', key, choice } };
  }

  // ------------------------------------------------------------ replication and anti-entropy

  private others(): NodeId[] {
    return this.members.filter((m) => m !== this.id);
  }

  private markDirty(key: string, now: number): void {
    this.dirty.add(key);
    if (this.flushAt === Infinity) this.flushAt = now + multiLeaderLimits.flushDelayMs;
  }

  /** One replication message per peer (chunked), carrying every version of each dirty key. */
  private flush(): void {
    this.flushAt = Infinity;
    const vs: Version[] = [];
    for (const key of this.dirty) {
      const ks = this.keys.get(key);
      if (ks) vs.push(...knownVersions(ks));
    }
    this.dirty.clear();
    if (vs.length === 0) return;
    const max = Math.max(1, this.timings.maxEntriesPerMessage);
    for (const peer of this.others()) {
      for (let i = 0; i < vs.length; i += max) {
        const chunk = vs.slice(i, i + max);
        this.stats.replicated_versions_sent += chunk.length;
        this.send(peer, { t: 'rep', vs: chunk });
      }
    }
  }

  /** A key's digest covers every version the node knows of it (siblings and a parked remote too). */
  private keyDigest(key: string, ks: KeyState): string {
    let d = this.digests.get(key);
    if (d === undefined) {
      d = hashText(
        knownVersions(ks)
          .map((v) => `${clockKey(v.vclock)}#${versionDigest(v)}`)
          .sort()
          .join(';'),
      );
      this.digests.set(key, d);
    }
    return d;
  }

  private allDigests(): Map<string, string> {
    const m = new Map<string, string>();
    for (const [key, ks] of this.keys) m.set(key, this.keyDigest(key, ks));
    return m;
  }

  private startAntiEntropy(peer: NodeId): void {
    this.stats.ae_rounds++;
    const root: AeRoot = aeRoot(this.allDigests());
    this.send(peer, { t: 'ae_root', root: root.root, leaves: root.leaves });
  }

  private pushKeys(to: NodeId, keys: readonly string[]): void {
    const vs: Version[] = [];
    for (const key of keys) {
      const ks = this.keys.get(key);
      if (ks) vs.push(...knownVersions(ks));
    }
    if (vs.length === 0) return;
    this.stats.ae_versions_sent += vs.length;
    this.send(to, { t: 'ae_push', vs });
  }

  // ------------------------------------------------------------ output

  private send(to: NodeId, msg: MlMsg): void {
    this.out.messages.push({ to, msg });
  }

  private reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  private emit(type: string, data: Record<string, unknown>): void {
    const ev: CoreEvent = { type, node_id: this.id, data };
    this.out.events.push(ev);
  }

  private appendLog(kind: LogKind, v: Version, from?: NodeId, siblings?: Version[]): void {
    const e: LogEntry = {
      index: ++this.logIndex,
      kind,
      key: v.key,
      node_id: v.node_id,
      timestamp: v.timestamp,
      vclock: { ...v.vclock },
      tombstone: v.tombstone,
      value: v.value,
    };
    if (from !== undefined) e.from = from;
    if (siblings) e.siblings = siblings.map(brief);
    this.log.push(e);
    if (this.log.length > multiLeaderLimits.logEntriesMax) {
      this.log.shift();
      this.stats.log_dropped++;
    }
  }
}

export const createMultiLeaderCore: CoreFactory = (opts) => new MultiLeaderCore(opts);
