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
 *
 * Every change of a key's state goes through setKey, which asserts it (multi-leader/key-state.ts:
 * the resolver's shape, and a key never goes back to an older clock); checkInvariants() runs after
 * every input. The wire is in multi-leader/messages.ts, the per-key rules in multi-leader/key-state.ts,
 * the durable records and their fold in multi-leader/durable.ts, the limits in ../limits.ts.
 */
import {
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
import {
  durableCheckpointMinBytes,
  multiLeaderAntiEntropyIntervalMs,
  multiLeaderAuditRecordsMax,
  multiLeaderFlushDelayMs,
  multiLeaderSiblingKeysShownMax,
  storedEntryOverheadBytes,
} from '../limits.js';
import { invariant, unreachable } from '../../util/assert.js';
import { drainOutbox, newCoreOutbox, type CoreOutbox } from '../../util/out-list.js';
import { aeAnswer, aePlan, aeRoot, type AeRoot } from '../dynamo/anti-entropy.js';
import { applyCrdtOp, encodeCrdt, mergeCrdt, parseCrdt, type CrdtState } from '../dynamo/crdt.js';
import { hashText } from '../dynamo/merkle.js';
import { clockKey, clockSum, compareClocks, descends, incrementClock } from '../dynamo/vclock.js';
import { isObject, lwwCompare, observeStrict, versionDigest } from '../dynamo/version.js';
import { checkpointRecord, keyRecord, type MultiLeaderPersisted } from './multi-leader/durable.js';
import {
  brief,
  checkKeyStateChange,
  crdtMerge,
  joinClocks,
  keyStateBytes,
  knownVersions,
  lwwMerge,
  winnerOf,
  type KeyState,
  type VersionBrief,
} from './multi-leader/key-state.js';
import { decodeMessage, type MultiLeaderMessage } from './multi-leader/messages.js';
import { clockSamples, type KeyClocks } from './multi-leader/clock-samples.js';
import { invariantBroken } from './invariant-broken.js';

export { multiLeaderDurableFold } from './multi-leader/durable.js';

export interface PendingConflict {
  node_id: NodeId;
  key: string;
  local_value: string;
  remote_value: string;
}

/** What happened to a key, as GET .../log lists it. */
type AuditKind = 'write' | 'delete' | 'apply' | 'conflict' | 'merge' | 'sibling' | 'park' | 'resolve';

/**
 * One record of the node's audit log (logView): not a replicated log entry (multi-leader has no
 * log order) but a history of what this node did to its keys, newest last, capped.
 */
interface AuditRecord {
  index: number;
  kind: AuditKind;
  key: string;
  node_id: NodeId;
  timestamp: number;
  vclock: Record<NodeId, number>;
  tombstone: boolean;
  value: string;
  from?: NodeId;
  siblings?: VersionBrief[];
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
  private antiEntropyCursor = 0;
  private readonly out: CoreOutbox = newCoreOutbox();
  private readonly auditLog: AuditRecord[] = [];
  private auditIndex = 0;
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
    anti_entropy_rounds: 0,
    anti_entropy_versions_sent: 0,
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
    this.nextAntiEntropyAt = opts.now + opts.rng.range(1, multiLeaderAntiEntropyIntervalMs);
    this.storedBytesMax = opts.storedBytesMax ?? Infinity;
    if (opts.persisted instanceof Map) {
      // A restarted node: its keys as they were; its clock past every timestamp it stored.
      for (const [key, keyState] of opts.persisted as MultiLeaderPersisted) {
        this.keys.set(key, keyState);
        this.storedBytes += keyStateBytes(key, keyState);
        for (const v of knownVersions(keyState)) this.clock.observe(v.timestamp, opts.now);
      }
      // Anti-entropy at once: what it wrote but never pushed, and what it missed while down.
      this.nextAntiEntropyAt = opts.now;
    }
  }

  /** A local write of `value` to `key` would pass the budget: the 507 reply, else null. */
  private refuseIfFull(requestId: number, key: string, value: string): ClientReply | null {
    const keyState = this.keys.get(key);
    const after =
      this.storedBytes -
      (keyState ? keyStateBytes(key, keyState) : 0) +
      key.length +
      value.length +
      storedEntryOverheadBytes;
    if (after <= this.storedBytes || after <= this.storedBytesMax) return null;
    this.stats.refused_storage_full++;
    return {
      id: requestId,
      ok: false,
      code: 'storage_full',
      error:
        `node ${this.id} would store ${after} bytes, past its budget of ${this.storedBytesMax} bytes ` +
        '(REPLSIM_NODE_MEMORY_MB); delete keys or raise the budget',
    };
  }

  // ------------------------------------------------------------ NodeCore

  onClient(req: ClientRequest, now: number): void {
    this.stepClient(req, now);
    this.checkInvariants();
  }

  onMessage(from: NodeId, raw: unknown, now: number): void {
    this.stepMessage(from, raw, now);
    this.checkInvariants();
  }

  onTick(now: number): void {
    this.stepTick(now);
    this.checkInvariants();
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    const result = this.stepControl(cmd, now);
    this.checkInvariants();
    return result;
  }

  private stepClient(req: ClientRequest, now: number): void {
    const op = req.op;
    switch (op.op) {
      case 'write': {
        const full = this.refuseIfFull(req.id, op.key, op.value);
        if (full) {
          this.reply(full);
          return;
        }
        this.reply({
          id: req.id,
          ok: true,
          result: { kind: 'entry', entry: this.localWrite(op.key, op.value, false, now), node_id: this.id },
        });
        return;
      }
      case 'delete':
        this.reply({
          id: req.id,
          ok: true,
          result: { kind: 'entry', entry: this.localWrite(op.key, '', true, now), node_id: this.id },
        });
        return;
      case 'read': {
        this.stats.reads++;
        const keyState = this.keys.get(op.key);
        const w = keyState ? winnerOf(keyState) : undefined;
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

  private stepMessage(from: NodeId, raw: unknown, now: number): void {
    const msg = decodeMessage(raw);
    if (!msg) {
      this.stats.bad_messages++;
      return;
    }
    switch (msg.kind) {
      case 'replicate':
      case 'anti_entropy_push':
        for (const v of msg.versions) this.receive(v, from, now);
        return;
      case 'anti_entropy_root': {
        const answer = aeAnswer(this.allDigests(), msg, this.timings.maxEntriesPerMessage);
        if (answer) this.send(from, { kind: 'anti_entropy_keys', ...answer });
        return;
      }
      case 'anti_entropy_keys': {
        const plan = aePlan(this.allDigests(), msg, this.timings.maxEntriesPerMessage);
        if (plan.push.length > 0) this.pushKeys(from, plan.push);
        if (plan.pull.length > 0) this.send(from, { kind: 'anti_entropy_pull', keys: plan.pull });
        return;
      }
      case 'anti_entropy_pull':
        this.pushKeys(from, msg.keys.slice(0, this.timings.maxEntriesPerMessage));
        return;
      default:
        unreachable(msg);
    }
  }

  private stepTick(now: number): void {
    if (now >= this.flushAt) this.flush();
    if (now >= this.nextAntiEntropyAt) {
      this.nextAntiEntropyAt = now + multiLeaderAntiEntropyIntervalMs;
      const peers = this.others();
      if (peers.length > 0) this.startAntiEntropy(peers[this.antiEntropyCursor++ % peers.length] as NodeId);
    }
  }

  nextDeadline(): number {
    return Math.min(this.flushAt, this.nextAntiEntropyAt);
  }

  drain(out: CoreOutput): void {
    this.maybeCheckpoint();
    // Handed over in place (util/out-list.ts): the lists keep their storage for the next step.
    drainOutbox(this.out, out);
  }

  private stepControl(cmd: ControlCommand, now: number): ControlResult {
    switch (cmd.kind) {
      case 'clock_skew':
        this.clock.skewMs = cmd.ms;
        return { ok: true, data: { skew_ms: cmd.ms } };
      case 'peers':
        this.members = [...cmd.peers];
        this.antiEntropyCursor = 0;
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
    for (const [key, keyState] of this.keys) {
      if (keyState.parked) pending++;
      if (keyState.versions.length > 1) {
        siblingKeys++;
        if (siblingKeys <= multiLeaderSiblingKeysShownMax) siblings[key] = keyState.versions.map(brief);
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
        anti_entropy_rounds: this.stats.anti_entropy_rounds,
        anti_entropy_versions_sent: this.stats.anti_entropy_versions_sent,
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
    return this.auditLog.map((e) => ({ ...e }));
  }

  /** Each key's clocks as storeView() and status() show them, without building either (clock-samples.ts). */
  clockSamples(): KeyClocks[] | undefined {
    return clockSamples(this.keys);
  }

  storeView(): Record<string, Version> {
    const out: Record<string, Version> = {};
    for (const key of [...this.keys.keys()].sort()) out[key] = { ...winnerOf(this.keys.get(key) as KeyState) };
    return out;
  }

  // ------------------------------------------------------------ writes and the receive rule

  private localWrite(key: string, value: string, tombstone: boolean, now: number): Version {
    this.stats.writes++;
    const keyState = this.keys.get(key);
    // A local write has seen every version this node knows of the key: its clock dominates them all.
    const vclock = incrementClock(keyState ? joinClocks(knownVersions(keyState)) : {}, this.id);
    const timestamp = this.clock.tick(now);
    let stored = value;
    if (this.resolver === 'crdt' && !tombstone) stored = this.crdtWriteValue(keyState, value, timestamp);
    const v: Version = {
      key,
      value: stored,
      tombstone,
      timestamp,
      node_id: this.id,
      version: clockSum(vclock),
      vclock,
    };
    if (keyState?.parked) this.emit('conflict_resolved', { key, choice: 'superseded' });
    this.setKey(key, { versions: [v], parked: null });
    this.audit(tombstone ? 'delete' : 'write', v);
    this.markDirty(key, now);
    return v;
  }

  /** crdt resolver: an op is applied to the local state, a state is joined with it, others stay raw. */
  private crdtWriteValue(keyState: KeyState | undefined, value: string, timestamp: number): string {
    const parsed = parseCrdt(value);
    if (!parsed) return value;
    const w = keyState ? winnerOf(keyState) : undefined;
    const cur = w && !w.tombstone ? parseCrdt(w.value) : null;
    const curState: CrdtState | null = cur?.kind === 'state' ? cur.state : null;
    if (parsed.kind === 'op') return encodeCrdt(applyCrdtOp(curState, parsed.op, this.id, timestamp));
    const joined = curState ? mergeCrdt(curState, parsed.state) : null;
    return encodeCrdt(joined ?? parsed.state);
  }

  /** The receive rule (file header): ignore dominated, apply dominating, resolve concurrent. */
  private receive(v: Version, from: NodeId, now: number): void {
    observeStrict(this.clock, v.timestamp, now);
    const keyState = this.keys.get(v.key);
    if (!keyState) {
      this.setKey(v.key, { versions: [v], parked: null });
      this.audit('apply', v, from);
      return;
    }
    // Already known: some version here has seen everything v has.
    if (knownVersions(keyState).some((k) => descends(k.vclock, v.vclock))) return;
    switch (this.resolver) {
      case 'lww':
      case 'crdt': {
        const cur = keyState.versions[0] as Version;
        if (compareClocks(v.vclock, cur.vclock) === 'after') {
          this.setKey(v.key, { versions: [v], parked: null });
          this.audit('apply', v, from);
          return;
        }
        const { merged, joined } =
          this.resolver === 'crdt' ? crdtMerge(cur, v) : { merged: lwwMerge(cur, v), joined: false };
        this.conflict(v.key, cur, v, joined ? 'merged' : merged.node_id === v.node_id ? 'remote_won' : 'local_won');
        this.setKey(v.key, { versions: [merged], parked: null });
        this.audit('merge', merged, from);
        return;
      }
      case 'vector_clock': {
        // Drop the siblings v supersedes; whatever is left is concurrent with v and stays beside it.
        const remaining = keyState.versions.filter((s) => !descends(v.vclock, s.vclock));
        const versions = [...remaining, v].sort(lwwCompare);
        if (remaining.length > 0) {
          this.conflict(v.key, winnerOf(keyState), v, 'siblings');
          this.audit('sibling', v, from, versions);
        } else {
          this.audit('apply', v, from);
        }
        this.setKey(v.key, { versions, parked: null });
        return;
      }
      case 'manual': {
        const local = keyState.versions[0] as Version;
        if (compareClocks(v.vclock, local.vclock) === 'after') {
          // v supersedes the local version; a parked remote it has also seen is settled with it.
          const parked = keyState.parked && !descends(v.vclock, keyState.parked.vclock) ? keyState.parked : null;
          if (keyState.parked && !parked) {
            this.stats.resolved++;
            this.emit('conflict_resolved', { key: v.key, choice: 'superseded' });
          }
          this.setKey(v.key, { versions: [v], parked });
          this.audit('apply', v, from);
          return;
        }
        if (keyState.parked) {
          // Another remote version concurrent with the local one: the parked side keeps the LWW merge.
          const parked = compareClocks(v.vclock, keyState.parked.vclock) === 'after' ? v : lwwMerge(keyState.parked, v);
          this.setKey(v.key, { versions: keyState.versions, parked });
          this.audit('park', parked, from);
          return;
        }
        this.conflict(v.key, local, v, 'parked');
        this.setKey(v.key, { versions: keyState.versions, parked: v });
        this.audit('park', v, from);
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
  private setKey(key: string, keyState: KeyState): void {
    const old = this.keys.get(key);
    checkKeyStateChange(this.resolver, key, old, keyState);
    const bytes = keyStateBytes(key, keyState);
    this.storedBytes += bytes - (old ? keyStateBytes(key, old) : 0);
    this.keys.set(key, keyState);
    this.digests.delete(key);
    this.stats.applied++;
    this.out.durable.push(keyRecord(key, keyState));
    this.durableSinceCheckpoint += bytes;
  }

  /** Every key as one record, once the records since the last one outweigh the store (limits.ts). */
  private maybeCheckpoint(): void {
    if (this.durableSinceCheckpoint <= Math.max(durableCheckpointMinBytes, this.storedBytes)) return;
    this.out.durable.push(checkpointRecord(this.keys));
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
      const keyState = this.keys.get(key) as KeyState;
      if (!keyState.parked) continue;
      const local = keyState.versions[0] as Version;
      out.push({
        node_id: this.id,
        key,
        local_value: local.tombstone ? '' : local.value,
        remote_value: keyState.parked.tombstone ? '' : keyState.parked.value,
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
    const keyState = this.keys.get(key);
    if (!keyState?.parked)
      return { ok: false, code: 'refused', error: `no pending conflict for key ${key} on node ${this.id}` };
    const chosen = choice === 'local' ? (keyState.versions[0] as Version) : keyState.parked;
    const vclock = incrementClock(joinClocks(knownVersions(keyState)), this.id);
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
    this.audit('resolve', v);
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
    if (this.flushAt === Infinity) this.flushAt = now + multiLeaderFlushDelayMs;
  }

  /** One replication message per peer (chunked), carrying every version of each dirty key. */
  private flush(): void {
    this.flushAt = Infinity;
    const versions: Version[] = [];
    for (const key of this.dirty) {
      const keyState = this.keys.get(key);
      if (keyState) versions.push(...knownVersions(keyState));
    }
    this.dirty.clear();
    if (versions.length === 0) return;
    const max = Math.max(1, this.timings.maxEntriesPerMessage);
    for (const peer of this.others()) {
      for (let i = 0; i < versions.length; i += max) {
        const chunk = versions.slice(i, i + max);
        this.stats.replicated_versions_sent += chunk.length;
        this.send(peer, { kind: 'replicate', versions: chunk });
      }
    }
  }

  /** A key's digest covers every version the node knows of it (siblings and a parked remote too). */
  private keyDigest(key: string, keyState: KeyState): string {
    let d = this.digests.get(key);
    if (d === undefined) {
      d = hashText(
        knownVersions(keyState)
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
    for (const [key, keyState] of this.keys) m.set(key, this.keyDigest(key, keyState));
    return m;
  }

  private startAntiEntropy(peer: NodeId): void {
    this.stats.anti_entropy_rounds++;
    const root: AeRoot = aeRoot(this.allDigests());
    this.send(peer, { kind: 'anti_entropy_root', root: root.root, leaves: root.leaves });
  }

  private pushKeys(to: NodeId, keys: readonly string[]): void {
    const versions: Version[] = [];
    for (const key of keys) {
      const keyState = this.keys.get(key);
      if (keyState) versions.push(...knownVersions(keyState));
    }
    if (versions.length === 0) return;
    this.stats.anti_entropy_versions_sent += versions.length;
    this.send(to, { kind: 'anti_entropy_push', versions });
  }

  /**
   * After every input (TigerBeetle's `invariants()`): cheap checks of what must hold between steps.
   * Each key's own rules are checked where it changes (setKey). A failure is a bug in this core.
   */
  private checkInvariants(): void {
    // A flush is scheduled exactly when some key waits to be pushed.
    if (this.dirty.size > 0 !== (this.flushAt !== Infinity))
      invariantBroken(`${this.id}: ${this.dirty.size} dirty keys, flush at ${this.flushAt}`);
    for (const key of this.dirty) if (!this.keys.has(key)) invariantBroken(`${this.id}: dirty key ${key} is not held`);
    invariant(Number.isFinite(this.nextAntiEntropyAt), 'an anti-entropy round is always scheduled');
    invariant(this.digests.size <= this.keys.size, 'digests are cached for held keys only');
    invariant(this.auditLog.length <= multiLeaderAuditRecordsMax, 'the audit log stays within its cap');
    if (this.storedBytes < 0) invariantBroken(`${this.id}: stored bytes ${this.storedBytes} below zero`);
  }

  // ------------------------------------------------------------ output

  private send(to: NodeId, msg: MultiLeaderMessage): void {
    this.out.messages.push({ to, msg });
  }

  private reply(r: ClientReply): void {
    this.out.replies.push(r);
  }

  private emit(type: string, data: Record<string, unknown>): void {
    const ev: CoreEvent = { type, node_id: this.id, data };
    this.out.events.push(ev);
  }

  private audit(kind: AuditKind, v: Version, from?: NodeId, siblings?: Version[]): void {
    const e: AuditRecord = {
      index: ++this.auditIndex,
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
    this.auditLog.push(e);
    if (this.auditLog.length > multiLeaderAuditRecordsMax) {
      this.auditLog.shift();
      this.stats.log_dropped++;
    }
  }
}

export const createMultiLeaderCore: CoreFactory = (opts) => new MultiLeaderCore(opts);
