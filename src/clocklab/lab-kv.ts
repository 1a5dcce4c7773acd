/**
 * KV writes and reads as events of a process: a write ticks the writer's clocks and its vector
 * becomes the version's; a read by a process merges every version's clocks into the reader's.
 * kv.ts stays the store (dominance, siblings, conflict strategies); this module only turns its
 * answers into the lab's events and views. The caller has checked the process is alive.
 */
import { unreachable } from '../util/assert.js';
import { compactVersionVector, lamportReceive, vectorTick, vectorToMap } from './clocks.js';
import type { EmitFn } from './events.js';
import type { ConflictStrategy, KvStore, StoredVersion } from './kv.js';
import { fail, ok, type Outcome } from './outcome.js';
import { tick, type Proc } from './process.js';
import { versionView, type KvReadView, type KvWriteView } from './views.js';

export interface KvContext {
  kv: KvStore;
  /** Slot → process id. */
  ids: readonly string[];
  /** Process id → slot. */
  slots: ReadonlyMap<string, number>;
  emit: EmitFn;
  /** Reports the process's clocks after an event (the clock_tick event). */
  emitClock: (p: Proc, cause: 'kv_write' | 'kv_read') => void;
}

const shortId = (id: string): string => (id.length > 80 ? `${id.slice(0, 80)}…` : id);

/**
 * The spec's write semantics: the write is an event of the writer (its own entry goes up by one,
 * IR1 for its Lamport clock), and the writer's vector clock after it is the new version's vector,
 * so "the writer's clock dominates the stored vector" is exactly "the writer has seen the stored
 * write". The dot (writer, own entry) names the write. With `version`, a write made earlier (a
 * replayed or late replica write) is applied with that vector instead and no clock moves.
 */
export function kvWrite(
  ctx: KvContext,
  key: string,
  value: string,
  w: Proc,
  version?: Record<string, number>,
): Outcome<KvWriteView> {
  const writerId = w.id;
  let candidate: StoredVersion;
  if (version) {
    for (const id of Object.keys(version)) {
      if (!ctx.slots.has(id)) return fail('invalid', `version: names unknown process ${shortId(id)}`);
    }
    const own = version[writerId] ?? 0;
    if (own < 1) {
      return fail('invalid', `version: must count the write itself in the writer's entry (${writerId} >= 1)`);
    }
    candidate = {
      value,
      vector: compactVersionVector(version),
      lamport: w.lamport,
      writer: writerId,
      dot: { replica: writerId, counter: own },
    };
  } else {
    tick(w);
    w.eventCount++;
    candidate = {
      value,
      vector: compactVersionVector(vectorToMap(w.vector, ctx.ids)),
      lamport: w.lamport,
      writer: writerId,
      dot: { replica: writerId, counter: w.vector[w.slot] ?? 0 },
    };
    ctx.emitClock(w, 'kv_write');
  }
  const res = ctx.kv.write(key, candidate);
  switch (res.outcome) {
    case 'refused':
      return fail('conflict', res.reason);
    case 'stale':
      ctx.emit('kv_stale_write', {
        key,
        value,
        writer: writerId,
        version: candidate.vector,
        dominated_by: versionView(res.dominatedBy),
      });
      return fail(
        'conflict',
        `stale write dropped: version ${JSON.stringify(candidate.vector)} is dominated by the stored version ` +
          `${JSON.stringify(res.dominatedBy.vector)} written by ${res.dominatedBy.writer}`,
      );
    case 'created':
    case 'replaced':
    case 'conflict': {
      const replaced = res.outcome === 'created' ? [] : res.replaced.map(versionView);
      ctx.emit('kv_write', {
        key,
        value,
        writer: writerId,
        version: candidate.vector,
        dot: candidate.dot,
        timestamp: candidate.lamport,
        outcome: res.outcome,
        replaced,
      });
      let resolvedBy: Exclude<ConflictStrategy, 'keep_all'> | undefined;
      if (res.outcome === 'conflict') {
        const siblings = res.resolution ? res.resolution.siblings : res.versions;
        ctx.emit('kv_conflict', { key, strategy: ctx.kv.strategy, versions: siblings.map(versionView) });
        if (res.resolution) {
          resolvedBy = res.resolution.strategy;
          ctx.emit('kv_resolved', {
            key,
            strategy: res.resolution.strategy,
            result: versionView(res.resolution.result),
            siblings: siblings.map(versionView),
          });
        }
      }
      const versions = res.versions.map(versionView);
      const out: KvWriteView = {
        key,
        versions,
        conflict: versions.length > 1,
        outcome: res.outcome,
        written: versionView(candidate),
      };
      if (resolvedBy) out.resolved_by = resolvedBy;
      return ok(out);
    }
    default:
      return unreachable(res);
  }
}

/** Reads a key; with a reader, the read is a receive event of that process: its clocks absorb every version's. */
export function kvRead(ctx: KvContext, key: string, reader: Proc | undefined): Outcome<KvReadView> {
  const versions = ctx.kv.read(key);
  if (!versions) return fail('not_found', `key ${key} not found`);
  if (reader) {
    let lamport = 0;
    for (const v of versions) {
      if (v.lamport > lamport) lamport = v.lamport;
      for (const [id, n] of Object.entries(v.vector)) {
        const slot = ctx.slots.get(id);
        if (slot !== undefined && n > (reader.vector[slot] ?? 0)) reader.vector[slot] = n;
      }
    }
    reader.lamport = lamportReceive(reader.lamport, lamport);
    vectorTick(reader.vector, reader.slot);
    reader.eventCount++;
    ctx.emit('kv_read', { key, reader: reader.id, versions: versions.length });
    ctx.emitClock(reader, 'kv_read');
  }
  const view = versions.map(versionView);
  return ok({ key, versions: view, conflict: view.length > 1 });
}
