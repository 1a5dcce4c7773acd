/**
 * The simulated network between the nodes of one cluster, as a plain data structure driven by a
 * caller-supplied clock: submit a message at `now`, ask when the next one is due, take what is due.
 * It implements per-link FIFO, one-way latency and drop rate, two-sided partitions, a bounded queue
 * per link and per held inbox, and counts every drop by cause (DECISIONS.md, "The fabric").
 * It is not a scheduler: it never reads the wall clock, never sets a timer and never looks inside a
 * payload. Live mode drives it from the real clock, the deterministic runtime from a virtual one.
 */
import type { Rng } from '../util/rng.js';
import { invariant, unreachable } from '../util/assert.js';

/** Most messages in flight on one link; past it, submit answers 'dropped_full'. */
export const defaultLinkQueueMax = 1024;
/** Most messages a non-deliverable (paused or busy) node's inbox holds; past it they are dropped. */
export const defaultInboxMax = 256;

export interface FabricOptions {
  /** Decides drop-rate losses; seeded in tests so a run replays. */
  rng: Rng;
  linkQueueMax?: number;
  inboxMax?: number;
}

export type SubmitOutcome = 'queued' | 'dropped_rate' | 'dropped_partition' | 'dropped_full' | 'dropped_unknown_node';

export interface Delivery<P> {
  from: string;
  payload: P;
}

export interface FabricStats {
  /** Every submit call, whatever its outcome. */
  submitted: number;
  /** Messages handed to a sink. */
  delivered: number;
  /** Back-pressure drops (full link queue or full held inbox): the spec's dropped_messages. */
  dropped_full: number;
  dropped_rate: number;
  /** At submit, or at delivery when a partition appeared while the message was in flight. */
  dropped_partition: number;
  /** Submitted from or to a node the fabric does not know. */
  dropped_unknown_node: number;
  /** In flight or held for a node when that node was removed. */
  discarded_on_remove: number;
  in_flight: number;
  queued_in_inboxes: number;
}

/**
 * What one link has carried since it was created: plain integers bumped on the submit and delivery
 * paths (no allocation per message). `kinds[k]` counts messages submitted with kind tag k (the
 * caller's small integer for a message type; the fabric never learns what it means).
 */
export interface LinkCounters {
  /** Every submit on the link, whatever its outcome. */
  sent: number;
  /** Arrived at the destination: handed to it, or held in its inbox while it is not deliverable. */
  delivered: number;
  dropped_rate: number;
  /** At submit, or on arrival when a partition appeared while the message was in flight. */
  dropped_partition: number;
  /** The link queue was full at submit, or the destination's held inbox was full on arrival. */
  dropped_full: number;
  /** Payload bytes submitted, as the caller sized them (0 when it does not say). */
  bytes: number;
  /** Submitted messages by kind tag; holes and absent tags are 0. */
  kinds: readonly number[];
}

/** A link as `forEachLink` shows it: its ends, its settings, its queue and its counters. */
export interface LinkView extends LinkCounters {
  from: string;
  to: string;
  latencyMs: number;
  dropRate: number;
  blocked: boolean;
  inFlight: number;
}

/** A change of the fabric's fault settings, for a listener that records when faults start and end. */
export type FabricFaultChange =
  | { kind: 'latency'; from: string; to: string; ms: number }
  | { kind: 'drop'; from: string; to: string; rate: number }
  | { kind: 'partition'; partitionId: string; groupA: string[]; groupB: string[] }
  | { kind: 'heal'; partitionId: string }
  | { kind: 'clear' };

/** One direction between two nodes: its fault settings and its in-flight queue (a ring buffer). */
class Link<P> implements LinkCounters {
  latencyMs = 0;
  dropRate = 0;
  sent = 0;
  delivered = 0;
  dropped_rate = 0;
  dropped_partition = 0;
  dropped_full = 0;
  bytes = 0;
  kinds: number[] = [];
  /** Any active partition separates the two ends (recomputed when partitions or nodes change). */
  blocked = false;
  /** deliverAt of the newest message: the next one is never due earlier (per-link FIFO). */
  lastDeliverAt = -Infinity;
  inHeap = false;
  size = 0;
  private head = 0;
  private mask = 7;
  private payloads: Array<P | undefined> = new Array<P | undefined>(8);
  private times = new Float64Array(8);

  constructor(
    readonly from: number,
    readonly to: number,
  ) {}

  headAt(): number {
    return this.size > 0 ? (this.times[this.head] as number) : Infinity;
  }

  push(payload: P, at: number): void {
    if (this.size > this.mask) this.grow();
    const i = (this.head + this.size) & this.mask;
    this.payloads[i] = payload;
    this.times[i] = at;
    this.size++;
  }

  /** Removes the head; the caller has checked size > 0. */
  shift(): P {
    const i = this.head;
    const p = this.payloads[i] as P;
    this.payloads[i] = undefined;
    this.head = (i + 1) & this.mask;
    this.size--;
    return p;
  }

  clear(): number {
    const n = this.size;
    this.payloads = new Array<P | undefined>(8);
    this.times = new Float64Array(8);
    this.mask = 7;
    this.head = 0;
    this.size = 0;
    return n;
  }

  private grow(): void {
    const cap = (this.mask + 1) * 2;
    const payloads = new Array<P | undefined>(cap);
    const times = new Float64Array(cap);
    for (let k = 0; k < this.size; k++) {
      const i = (this.head + k) & this.mask;
      payloads[k] = this.payloads[i];
      times[k] = this.times[i] as number;
    }
    this.payloads = payloads;
    this.times = times;
    this.head = 0;
    this.mask = cap - 1;
  }
}

interface NodeSlot<P> {
  id: string;
  index: number;
  deliverable: boolean;
  /**
   * Due messages not yet handed to a sink, as two parallel lists (sender, payload): no object per
   * message. Capped at inboxMax while not deliverable. The first `inboxCount` entries are the inbox:
   * the lists are never emptied (`length = 0` drops an array's backing store, and the next push
   * allocates a new one): a handed-over payload is cleared to undefined, the next batch overwrites.
   */
  inboxFrom: string[];
  inboxPayload: Array<P | undefined>;
  inboxCount: number;
  /** Emptied lists swapped in when the inbox is handed over (the next hand-off reuses them). */
  spareFrom: string[];
  sparePayload: Array<P | undefined>;
  /** When the oldest held message became due. */
  inboxFirstAt: number;
  /** Outgoing links indexed by destination slot, created on first use. */
  out: Array<Link<P> | undefined>;
}

interface PartitionSets {
  groupA: Set<string>;
  groupB: Set<string>;
}

/** Heap order: earliest head first, ties by (from, to) slot so delivery order is deterministic. */
function before<P>(a: Link<P>, b: Link<P>): boolean {
  const ta = a.headAt();
  const tb = b.headAt();
  if (ta !== tb) return ta < tb;
  if (a.from !== b.from) return a.from < b.from;
  return a.to < b.to;
}

export class Fabric<P> {
  /**
   * Called for every drop, at submit or in flight, with the payload that was lost (the fabric never
   * looks inside it; a listener that needs to know which message went can read it).
   */
  onDrop?: (from: string, to: string, outcome: SubmitOutcome, payload: P) => void;
  /** Called after every change of latency, drop rate or partitions (a recorder of fault intervals). */
  onFaultChange?: (change: FabricFaultChange) => void;

  private readonly rng: Rng;
  private readonly linkQueueMax: number;
  private readonly inboxMax: number;
  private readonly ids = new Map<string, number>();
  private readonly slots: Array<NodeSlot<P> | undefined> = [];
  private readonly parts = new Map<string, PartitionSets>();
  private partitionSeq = 0;
  /** Min-heap of links with messages in flight, keyed by their head's deliverAt. */
  private heap: Array<Link<P>> = [];
  /** Earliest due time among held messages of nodes made deliverable again; Infinity when none. */
  private readyAt = Infinity;
  /** One-entry cache of the last submit's link: bursts on one link skip the two Map lookups. */
  private lastFrom = '';
  private lastTo = '';
  private lastLink: Link<P> | undefined;

  private submitted = 0;
  private delivered = 0;
  private droppedFull = 0;
  private droppedRate = 0;
  private droppedPartition = 0;
  private droppedUnknown = 0;
  private discarded = 0;
  private inFlight = 0;
  private inInboxes = 0;

  constructor(opts: FabricOptions) {
    this.rng = opts.rng;
    this.linkQueueMax = opts.linkQueueMax ?? defaultLinkQueueMax;
    this.inboxMax = opts.inboxMax ?? defaultInboxMax;
    invariant(this.linkQueueMax >= 1, 'linkQueueMax must be at least 1');
    invariant(this.inboxMax >= 0, 'inboxMax must not be negative');
  }

  /** Idempotent. A new node takes the lowest free slot; slot order is the delivery order. */
  addNode(id: string): void {
    if (this.ids.has(id)) return;
    let index = this.slots.indexOf(undefined);
    if (index < 0) index = this.slots.length;
    this.slots[index] = {
      id,
      index,
      deliverable: true,
      inboxFrom: [],
      inboxPayload: [],
      inboxCount: 0,
      spareFrom: [],
      sparePayload: [],
      inboxFirstAt: Infinity,
      out: [],
    };
    this.ids.set(id, index);
  }

  /** Discards the node's held inbox and every link touching it (settings included); leaves partitions. */
  removeNode(id: string): void {
    const index = this.ids.get(id);
    if (index === undefined) return;
    const slot = this.slots[index] as NodeSlot<P>;
    let lost = 0;
    for (const link of slot.out) if (link) lost += link.clear();
    for (const other of this.slots) {
      if (!other || other === slot) continue;
      const link = other.out[index];
      if (link) {
        lost += link.clear();
        other.out[index] = undefined;
      }
    }
    this.inFlight -= lost;
    this.inInboxes -= slot.inboxCount;
    this.discarded += lost + slot.inboxCount;
    this.heap = this.heap.filter((l) => l.size > 0);
    this.rebuildHeap();
    for (const p of this.parts.values()) {
      p.groupA.delete(id);
      p.groupB.delete(id);
    }
    this.slots[index] = undefined;
    this.ids.delete(id);
    this.lastLink = undefined;
    this.lastFrom = this.lastTo = '';
  }

  hasNode(id: string): boolean {
    return this.ids.has(id);
  }

  /** Node ids in slot (delivery) order. */
  nodes(): string[] {
    const out: string[] = [];
    for (const s of this.slots) if (s) out.push(s.id);
    return out;
  }

  /** One-way; applies to messages submitted from now on. Ignored when either node is unknown. */
  setLatency(from: string, to: string, ms: number): void {
    invariant(Number.isFinite(ms) && ms >= 0, () => `latency must be a finite number >= 0, got ${ms}`);
    const link = this.linkByName(from, to);
    if (!link) return;
    link.latencyMs = ms;
    this.onFaultChange?.({ kind: 'latency', from, to, ms });
  }

  latency(from: string, to: string): number {
    return this.existingLink(from, to)?.latencyMs ?? 0;
  }

  /** One-way, 0..1; the loss is decided at submit with the injected rng. Ignored for unknown nodes. */
  setDropRate(from: string, to: string, rate: number): void {
    invariant(rate >= 0 && rate <= 1, () => `drop rate must lie in [0, 1], got ${rate}`);
    const link = this.linkByName(from, to);
    if (!link) return;
    link.dropRate = rate;
    this.onFaultChange?.({ kind: 'drop', from, to, rate });
  }

  dropRate(from: string, to: string): number {
    return this.existingLink(from, to)?.dropRate ?? 0;
  }

  /** Blocks both ways between the groups until healed; returns "p1", "p2", ... (never reused). */
  partition(groupA: string[], groupB: string[]): string {
    const id = `p${++this.partitionSeq}`;
    this.parts.set(id, { groupA: new Set(groupA), groupB: new Set(groupB) });
    this.recomputeBlocked();
    this.onFaultChange?.({ kind: 'partition', partitionId: id, groupA: [...groupA], groupB: [...groupB] });
    return id;
  }

  heal(partitionId: string): boolean {
    if (!this.parts.delete(partitionId)) return false;
    this.recomputeBlocked();
    this.onFaultChange?.({ kind: 'heal', partitionId });
    return true;
  }

  partitions(): Map<string, { groupA: string[]; groupB: string[] }> {
    const out = new Map<string, { groupA: string[]; groupB: string[] }>();
    for (const [id, p] of this.parts) out.set(id, { groupA: [...p.groupA], groupB: [...p.groupB] });
    return out;
  }

  isBlocked(from: string, to: string): boolean {
    for (const p of this.parts.values()) {
      if ((p.groupA.has(from) && p.groupB.has(to)) || (p.groupA.has(to) && p.groupB.has(from))) return true;
    }
    return false;
  }

  /** DELETE network/faults: every latency, drop-rate and partition override goes; queues stay. */
  clearFaults(): void {
    this.parts.clear();
    for (const s of this.slots) {
      if (!s) continue;
      for (const link of s.out) {
        if (!link) continue;
        link.latencyMs = 0;
        link.dropRate = 0;
        link.blocked = false;
      }
    }
    this.onFaultChange?.({ kind: 'clear' });
  }

  /**
   * false while a node is paused or busy: its due messages wait in its inbox (at most inboxMax).
   * Made deliverable again, what it holds goes out on the next deliverDue, in arrival order.
   */
  setDeliverable(id: string, deliverable: boolean): void {
    const index = this.ids.get(id);
    if (index === undefined) return;
    const slot = this.slots[index] as NodeSlot<P>;
    slot.deliverable = deliverable;
    if (deliverable && slot.inboxCount > 0 && slot.inboxFirstAt < this.readyAt) this.readyAt = slot.inboxFirstAt;
  }

  isDeliverable(id: string): boolean {
    const index = this.ids.get(id);
    return index !== undefined && (this.slots[index] as NodeSlot<P>).deliverable;
  }

  /**
   * `bytes` (the payload's size as the caller counts it) and `kind` (a small integer tag for the
   * message's type, -1 for none) only feed the link's counters; the fabric never reads the payload.
   */
  submit(from: string, to: string, payload: P, now: number, bytes = 0, kind = -1): SubmitOutcome {
    this.submitted++;
    let link: Link<P> | undefined;
    if (from === this.lastFrom && to === this.lastTo && this.lastLink) {
      link = this.lastLink;
    } else {
      link = this.linkByName(from, to);
      if (!link) return this.drop(from, to, 'dropped_unknown_node', payload);
      this.lastFrom = from;
      this.lastTo = to;
      this.lastLink = link;
    }
    link.sent++;
    link.bytes += bytes;
    if (kind >= 0) {
      const kinds = link.kinds;
      while (kinds.length <= kind) kinds.push(0);
      kinds[kind] = (kinds[kind] as number) + 1;
    }
    // Order of checks: a partition costs no randomness, so adding one does not shift the drop stream.
    if (link.blocked) {
      link.dropped_partition++;
      return this.drop(from, to, 'dropped_partition', payload);
    }
    if (link.dropRate > 0 && this.rng.chance(link.dropRate)) {
      link.dropped_rate++;
      return this.drop(from, to, 'dropped_rate', payload);
    }
    if (link.size >= this.linkQueueMax) {
      link.dropped_full++;
      return this.drop(from, to, 'dropped_full', payload);
    }
    // Per-link FIFO even when latency shrinks: never due before the message ahead of it.
    let at = now + link.latencyMs;
    if (at < link.lastDeliverAt) at = link.lastDeliverAt;
    link.lastDeliverAt = at;
    link.push(payload, at);
    this.inFlight++;
    if (!link.inHeap) this.heapPush(link);
    return 'queued';
  }

  /** Earliest time something can be delivered (possibly in the past); Infinity when nothing can. */
  nextDueAt(): number {
    const top = this.heap[0];
    const linkAt = top ? top.headAt() : Infinity;
    return linkAt < this.readyAt ? linkAt : this.readyAt;
  }

  /**
   * Moves every message due at `now` into its destination's inbox (dropping it if a partition now
   * separates the ends, or if the destination is not deliverable and its inbox is full), then hands
   * each deliverable node its whole inbox: one sink call per destination, in slot order, each batch
   * in arrival order (per-link FIFO kept; links in (due time, from slot) order). A message already in
   * an inbox has arrived: a later partition does not take it back. The sink owns the batch array and
   * may call submit (what it submits waits for the next call). Returns the messages handed to sinks.
   */
  deliverDue(now: number, sink: (to: string, batch: Array<Delivery<P>>) => void): number {
    return this.deliverDueLists(now, (to, froms, payloads, count) => {
      const batch: Array<Delivery<P>> = [];
      for (let i = 0; i < count; i++) batch.push({ from: froms[i] as string, payload: payloads[i] as P });
      sink(to, batch);
    });
  }

  /**
   * deliverDue, the batch handed as two parallel lists (senders, payloads) instead of an object per
   * message: what the deterministic runtime calls for every message of a run. The lists hold the
   * batch (`count` entries each); they are the fabric's, reused for a later batch: read them during
   * the call, keep nothing. The sink may call submit (what it submits waits for the next call), not
   * deliverDue.
   */
  deliverDueLists(
    now: number,
    sink: (to: string, froms: readonly string[], payloads: readonly P[], count: number) => void,
  ): number {
    const heap = this.heap;
    while (heap.length > 0) {
      const link = heap[0] as Link<P>;
      if (link.headAt() > now) break;
      this.heapPopTop();
      const dst = this.slots[link.to] as NodeSlot<P>;
      const fromId = (this.slots[link.from] as NodeSlot<P>).id;
      while (link.size > 0) {
        const at = link.headAt();
        if (at > now) break;
        const payload = link.shift();
        this.inFlight--;
        // A partition created while the message was in flight drops it on arrival.
        if (link.blocked) {
          this.dropOnArrival(link, fromId, dst.id, 'dropped_partition', payload);
          continue;
        }
        if (!dst.deliverable && dst.inboxCount >= this.inboxMax) {
          this.dropOnArrival(link, fromId, dst.id, 'dropped_full', payload);
          continue;
        }
        const k = dst.inboxCount++;
        if (k === 0) dst.inboxFirstAt = at;
        // An overwrite of a cleared entry, or one past the end (which grows the list as push does).
        dst.inboxFrom[k] = fromId;
        dst.inboxPayload[k] = payload;
        this.inInboxes++;
        link.delivered++;
      }
      if (link.size > 0) this.heapPush(link);
    }
    this.readyAt = Infinity;
    let handed = 0;
    const slots = this.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (!s || !s.deliverable || s.inboxCount === 0) continue;
      const froms = s.inboxFrom;
      const payloads = s.inboxPayload;
      const n = s.inboxCount;
      s.inboxFrom = s.spareFrom;
      s.inboxPayload = s.sparePayload;
      s.inboxCount = 0;
      s.inboxFirstAt = Infinity;
      // The batch is the whole of each list: cut to n (never to 0, which would drop their storage).
      if (froms.length !== n) {
        froms.length = n;
        payloads.length = n;
      }
      this.inInboxes -= n;
      this.delivered += n;
      handed += n;
      try {
        sink(s.id, froms, payloads as readonly P[], n);
      } finally {
        // The payloads are not held past the hand-off (the senders' ids are the nodes', kept anyway).
        for (let k = 0; k < n; k++) payloads[k] = undefined;
        s.spareFrom = froms;
        s.sparePayload = payloads;
      }
    }
    return handed;
  }

  stats(): FabricStats {
    return {
      submitted: this.submitted,
      delivered: this.delivered,
      dropped_full: this.droppedFull,
      dropped_rate: this.droppedRate,
      dropped_partition: this.droppedPartition,
      dropped_unknown_node: this.droppedUnknown,
      discarded_on_remove: this.discarded,
      in_flight: this.inFlight,
      queued_in_inboxes: this.inInboxes,
    };
  }

  /**
   * Visits every link that exists (created by traffic or a setting), in slot order. The view object
   * is reused between calls of `visit`: copy what must outlive the call. Links of a removed node
   * are gone with their counters.
   */
  forEachLink(visit: (link: Readonly<LinkView>) => void): void {
    const view: LinkView = {
      from: '',
      to: '',
      latencyMs: 0,
      dropRate: 0,
      blocked: false,
      inFlight: 0,
      sent: 0,
      delivered: 0,
      dropped_rate: 0,
      dropped_partition: 0,
      dropped_full: 0,
      bytes: 0,
      kinds: [],
    };
    for (const s of this.slots) {
      if (!s) continue;
      view.from = s.id;
      for (const link of s.out) {
        if (!link) continue;
        view.to = (this.slots[link.to] as NodeSlot<P>).id;
        view.latencyMs = link.latencyMs;
        view.dropRate = link.dropRate;
        view.blocked = link.blocked;
        view.inFlight = link.size;
        view.sent = link.sent;
        view.delivered = link.delivered;
        view.dropped_rate = link.dropped_rate;
        view.dropped_partition = link.dropped_partition;
        view.dropped_full = link.dropped_full;
        view.bytes = link.bytes;
        view.kinds = link.kinds;
        visit(view);
      }
    }
  }

  /**
   * A message lost on arrival, counted and reported. A method of its own: the delivery loop, the
   * hottest code of a run, meets it first on some later seed and would otherwise be thrown away and
   * compiled again there.
   */
  private dropOnArrival(
    link: Link<P>,
    from: string,
    to: string,
    outcome: 'dropped_partition' | 'dropped_full',
    payload: P,
  ): void {
    if (outcome === 'dropped_partition') {
      this.droppedPartition++;
      link.dropped_partition++;
    } else {
      this.droppedFull++;
      link.dropped_full++;
    }
    this.onDrop?.(from, to, outcome, payload);
  }

  private drop(from: string, to: string, outcome: Exclude<SubmitOutcome, 'queued'>, payload: P): SubmitOutcome {
    switch (outcome) {
      case 'dropped_full':
        this.droppedFull++;
        break;
      case 'dropped_rate':
        this.droppedRate++;
        break;
      case 'dropped_partition':
        this.droppedPartition++;
        break;
      case 'dropped_unknown_node':
        this.droppedUnknown++;
        break;
      default:
        return unreachable(outcome);
    }
    this.onDrop?.(from, to, outcome, payload);
    return outcome;
  }

  private existingLink(from: string, to: string): Link<P> | undefined {
    const f = this.ids.get(from);
    const t = this.ids.get(to);
    if (f === undefined || t === undefined) return undefined;
    return (this.slots[f] as NodeSlot<P>).out[t];
  }

  /** The link between two known nodes, created on first use; undefined when either is unknown. */
  private linkByName(from: string, to: string): Link<P> | undefined {
    const f = this.ids.get(from);
    const t = this.ids.get(to);
    if (f === undefined || t === undefined) return undefined;
    const slot = this.slots[f] as NodeSlot<P>;
    let link = slot.out[t];
    if (!link) {
      link = new Link<P>(f, t);
      link.blocked = this.isBlocked(from, to);
      slot.out[t] = link;
    }
    return link;
  }

  private recomputeBlocked(): void {
    for (const s of this.slots) {
      if (!s) continue;
      for (const link of s.out) {
        if (link) link.blocked = this.isBlocked(s.id, (this.slots[link.to] as NodeSlot<P>).id);
      }
    }
  }

  private heapPush(link: Link<P>): void {
    const heap = this.heap;
    link.inHeap = true;
    let i = heap.length;
    heap.push(link);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as Link<P>;
      if (!before(link, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = link;
  }

  private heapPopTop(): void {
    const heap = this.heap;
    const top = heap[0] as Link<P>;
    top.inHeap = false;
    const last = heap.pop() as Link<P>;
    if (heap.length === 0) return;
    this.siftDown(last, 0);
  }

  private siftDown(item: Link<P>, start: number): void {
    const heap = this.heap;
    const n = heap.length;
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && before(heap[right] as Link<P>, heap[child] as Link<P>)) child = right;
      const c = heap[child] as Link<P>;
      if (!before(c, item)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = item;
  }

  private rebuildHeap(): void {
    const heap = this.heap;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) this.siftDown(heap[i] as Link<P>, i);
  }
}
