/**
 * Per-link message aggregates for /ws `link_stats` frames: a cheap reader of a peer message's type
 * from its msgpack bytes (the first key/value of the top-level map, no decode), a bounded registry
 * of the type names seen, and a sampler that turns a fabric's cumulative per-link counters into
 * per-interval deltas. It does not schedule anything or talk to sockets: routes/ws-hub.ts runs the timer
 * and sends the frames; the fabric keeps the counters.
 */
import type { LinkView } from '../fabric/fabric.js';
import { invariant } from '../util/assert.js';
import { linkStatsKindsMax, linkStatsKindCharsMax } from './limits.js';

// ---- message kinds

/** Tag 0: a message whose type could not be read cheaply, or a new type past linkStatsKindsMax. */
export const otherKindTag = 0;
export const otherKindName = 'other';

const kindNames: string[] = [otherKindName];
const kindBytes: Uint8Array[] = [new Uint8Array(0)];
/**
 * Open-addressing table from a name's hash to its tag (0 = empty slot), probed linearly; a hit is
 * confirmed byte by byte, so a collision cannot mislabel. Four times linkStatsKindsMax slots keeps
 * probes short; typed, so a lookup allocates nothing (a Map keyed by 32-bit hashes cost 2-3x more:
 * hashes past 2^30 are heap numbers).
 */
const tagSlots = 256;
const tagTable = new Uint8Array(tagSlots);
invariant(
  linkStatsKindsMax * 4 <= tagSlots && linkStatsKindsMax < 256,
  'the kind table has room (and tags fit a byte)',
);

/** The type name a tag stands for ('other' for an unknown tag). */
export function kindName(tag: number): string {
  return kindNames[tag] ?? otherKindName;
}

/** Type names registered so far (tag order; index 0 is 'other'). */
export function kindCount(): number {
  return kindNames.length;
}

/**
 * Reads the type of one peer message from its msgpack bytes and returns a small integer tag (0 =
 * other). Every strategy tags its messages with the first field of an object (`kind`, or `t` /
 * `type`), and msgpack keeps field order, so the type is the first key/value pair of the top-level
 * map: a few byte reads, a 32-bit hash and one Map lookup, no allocation once the name is known.
 * Measured in benchmarks/ws-link-stats.ts's notes (about 40 ns per message on this machine).
 */
export function messageKindTag(bytes: Uint8Array): number {
  const b0 = bytes[0];
  let off: number;
  if (b0 === undefined) return otherKindTag;
  if (b0 >= 0x81 && b0 <= 0x8f)
    off = 1; // fixmap with at least one entry
  else if (b0 === 0xde)
    off = 3; // map16
  else if (b0 === 0xdf)
    off = 5; // map32
  else return otherKindTag;
  // The key: fixstr 'kind', 't' or 'type'.
  const k0 = bytes[off];
  if (k0 === 0xa4) {
    const a = bytes[off + 1],
      b = bytes[off + 2],
      c = bytes[off + 3],
      d = bytes[off + 4];
    const isKind = a === 0x6b && b === 0x69 && c === 0x6e && d === 0x64;
    const isType = a === 0x74 && b === 0x79 && c === 0x70 && d === 0x65;
    if (!isKind && !isType) return otherKindTag;
    off += 5;
  } else if (k0 === 0xa1 && bytes[off + 1] === 0x74) {
    off += 2;
  } else {
    return otherKindTag;
  }
  // The value: fixstr or str8, short.
  const v0 = bytes[off];
  let len: number;
  if (v0 === undefined) return otherKindTag;
  if (v0 >= 0xa1 && v0 <= 0xbf) {
    len = v0 & 0x1f;
    off += 1;
  } else if (v0 === 0xd9) {
    len = bytes[off + 1] ?? 0;
    off += 2;
  } else {
    return otherKindTag;
  }
  if (len === 0 || len > linkStatsKindCharsMax || off + len > bytes.length) return otherKindTag;
  let h = 0x811c9dc5;
  for (let i = off; i < off + len; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  for (let slot = (h ^ (h >>> 16)) & (tagSlots - 1); ; slot = (slot + 1) & (tagSlots - 1)) {
    const tag = tagTable[slot] as number;
    if (tag === 0) return register(slot, bytes, off, len);
    if (sameBytes(kindBytes[tag] as Uint8Array, bytes, off, len)) return tag;
  }
}

function sameBytes(name: Uint8Array, bytes: Uint8Array, off: number, len: number): boolean {
  if (name.length !== len) return false;
  for (let i = 0; i < len; i++) if (name[i] !== bytes[off + i]) return false;
  return true;
}

/** A new name into the free `slot`: printable ASCII only, at most linkStatsKindsMax names (then 'other'). */
function register(slot: number, bytes: Uint8Array, off: number, len: number): number {
  if (kindNames.length >= linkStatsKindsMax) return otherKindTag;
  let name = '';
  for (let i = off; i < off + len; i++) {
    const c = bytes[i] as number;
    if (c < 0x21 || c > 0x7e) return otherKindTag;
    name += String.fromCharCode(c);
  }
  const tag = kindNames.length;
  kindNames.push(name);
  kindBytes.push(bytes.slice(off, off + len));
  tagTable[slot] = tag;
  return tag;
}

// ---- sampling

/** Why messages on a link were lost in an interval (the fabric's causes, without the prefix). */
export type LinkDropCause = 'rate' | 'partition' | 'full';

/** One link's traffic over one interval (only links with some traffic are sent). */
export interface LinkStatsEntry {
  from: string;
  to: string;
  /** Messages submitted on the link in the interval (whatever became of them). */
  sent: number;
  /** Messages that arrived at the destination in the interval (handed to it, or held while paused). */
  delivered: number;
  /** Messages lost in the interval, by cause; absent when none. */
  dropped?: Partial<Record<LinkDropCause, number>>;
  /** Payload bytes submitted in the interval. */
  bytes: number;
  /** Messages submitted in the interval by type (`append`, `heartbeat`, `put`, ...); absent when not counted. */
  by_type?: Record<string, number>;
  /** Messages on the link at the end of the interval: sent - delivered - dropped = change of in_flight. */
  in_flight: number;
}

/** A cluster's client operations answered: cumulative (OpSource) or over an interval (a frame's `ops`). */
export interface OpCounts {
  /** Writes, deletes and batches that succeeded. */
  writes: number;
  /** Reads answered (a value or not found). */
  reads: number;
  /** Writes, deletes and batches that failed or timed out. */
  write_failures: number;
}

/** The `data` of a link_stats frame. */
export interface LinkStatsData {
  /** Measured length of the interval, ms (nominally linkStatsIntervalMs). */
  interval_ms: number;
  links: LinkStatsEntry[];
  /** Client operations answered in the interval (absent when none): throughput without a frame per write. */
  ops?: OpCounts;
}

interface Previous {
  sent: number;
  delivered: number;
  rate: number;
  partition: number;
  full: number;
  bytes: number;
  kinds: number[];
  seen: number;
}

/** Anything that can list its links (a Fabric). */
export interface LinkSource {
  forEachLink(visit: (link: Readonly<LinkView>) => void): void;
}

/**
 * Keeps the counters of the last sample per link and answers what changed since. Created when a
 * client starts watching a cluster's links, so the first interval starts then, not at the
 * cluster's creation. Links that disappear (a removed node) are forgotten.
 */
export class LinkStatsSampler {
  private readonly prev = new Map<string, Previous>();
  private round = 0;
  private lastAt: number;
  private lastOps: OpCounts = { writes: 0, reads: 0, write_failures: 0 };

  constructor(
    private readonly source: LinkSource,
    nowMs: number,
    /** The cluster's cumulative client-operation counters, when the frames should carry `ops`. */
    private readonly opSource?: () => OpCounts,
  ) {
    this.lastAt = nowMs;
    this.sample(nowMs);
  }

  /** The links with traffic since the last call (undefined when none had any). */
  sample(nowMs: number): LinkStatsData | undefined {
    const round = ++this.round;
    const links: LinkStatsEntry[] = [];
    this.source.forEachLink((l) => {
      const key = `${l.from}>${l.to}`;
      let p = this.prev.get(key);
      if (p === undefined) {
        p = { sent: 0, delivered: 0, rate: 0, partition: 0, full: 0, bytes: 0, kinds: [], seen: round };
        this.prev.set(key, p);
        // A link first seen after the sampler started: all its traffic is new, unless this is the
        // priming call, whose counts are the baseline.
        if (round === 1) copyInto(p, l);
      }
      p.seen = round;
      if (
        l.sent === p.sent &&
        l.delivered === p.delivered &&
        l.dropped_rate === p.rate &&
        l.dropped_partition === p.partition &&
        l.dropped_full === p.full
      )
        return;
      const entry: LinkStatsEntry = {
        from: l.from,
        to: l.to,
        sent: l.sent - p.sent,
        delivered: l.delivered - p.delivered,
        bytes: l.bytes - p.bytes,
        in_flight: l.inFlight,
      };
      const rate = l.dropped_rate - p.rate;
      const partition = l.dropped_partition - p.partition;
      const full = l.dropped_full - p.full;
      if (rate + partition + full > 0) {
        const dropped: Partial<Record<LinkDropCause, number>> = {};
        if (rate > 0) dropped.rate = rate;
        if (partition > 0) dropped.partition = partition;
        if (full > 0) dropped.full = full;
        entry.dropped = dropped;
      }
      let byType: Record<string, number> | undefined;
      for (let k = 0; k < l.kinds.length; k++) {
        const d = (l.kinds[k] as number) - (p.kinds[k] ?? 0);
        if (d > 0) (byType ??= {})[kindName(k)] = d;
      }
      if (byType !== undefined) entry.by_type = byType;
      links.push(entry);
      copyInto(p, l);
    });
    for (const [key, p] of this.prev) if (p.seen !== round) this.prev.delete(key);
    const interval = nowMs - this.lastAt;
    this.lastAt = nowMs;
    let ops: OpCounts | undefined;
    if (this.opSource !== undefined) {
      const now = this.opSource();
      const last = this.lastOps;
      this.lastOps = { writes: now.writes, reads: now.reads, write_failures: now.write_failures };
      const d = {
        writes: now.writes - last.writes,
        reads: now.reads - last.reads,
        write_failures: now.write_failures - last.write_failures,
      };
      if (d.writes + d.reads + d.write_failures > 0) ops = d;
    }
    if (round === 1 || (links.length === 0 && ops === undefined)) return undefined;
    const data: LinkStatsData = { interval_ms: Math.round(interval), links };
    if (ops !== undefined) data.ops = ops;
    return data;
  }
}

function copyInto(p: Previous, l: Readonly<LinkView>): void {
  p.sent = l.sent;
  p.delivered = l.delivered;
  p.rate = l.dropped_rate;
  p.partition = l.dropped_partition;
  p.full = l.dropped_full;
  p.bytes = l.bytes;
  for (let k = 0; k < l.kinds.length; k++) p.kinds[k] = l.kinds[k] as number;
}

/** A link's cumulative counters and settings, as the snapshot endpoint shows them. */
export interface LinkTotals {
  from: string;
  to: string;
  latency_ms: number;
  drop_rate: number;
  /** A partition separates the two ends. */
  blocked: boolean;
  in_flight: number;
  sent: number;
  delivered: number;
  dropped: Record<LinkDropCause, number>;
  bytes: number;
  by_type: Record<string, number>;
}

/** Every link of the source with its settings and counters since it was created. */
export function linkTotals(source: LinkSource): LinkTotals[] {
  const out: LinkTotals[] = [];
  source.forEachLink((l) => {
    const byType: Record<string, number> = {};
    for (let k = 0; k < l.kinds.length; k++) if ((l.kinds[k] as number) > 0) byType[kindName(k)] = l.kinds[k] as number;
    out.push({
      from: l.from,
      to: l.to,
      latency_ms: l.latencyMs,
      drop_rate: l.dropRate,
      blocked: l.blocked,
      in_flight: l.inFlight,
      sent: l.sent,
      delivered: l.delivered,
      dropped: { rate: l.dropped_rate, partition: l.dropped_partition, full: l.dropped_full },
      bytes: l.bytes,
      by_type: byType,
    });
  });
  return out;
}
