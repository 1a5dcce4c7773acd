/**
 * Drives a Fabric from the real clock in the front process (live mode): peer frames posted by node
 * workers are submitted message by message, and one delivery pass per event-loop turn (or at the
 * next due time, for latency) hands each destination one frame buffer with everything due for it.
 * The fabric itself stays a clock-free data structure; this is only its pump.
 */
import { FrameWriter, nodeIdOf, nodeIndex, readFrames, reservedFrameIndexMin } from '../../protocol/actor.js';

/** Node id strings by frame index, and back: per-message conversions cost nothing after the first. */
const idByIndex: string[] = [];
const indexById = new Map<string, number>();
function idOf(idx: number): string {
  let id = idByIndex[idx];
  if (id === undefined) {
    id = nodeIdOf(idx);
    idByIndex[idx] = id;
  }
  return id;
}
function indexOf(id: string): number {
  let idx = indexById.get(id);
  if (idx === undefined) {
    idx = nodeIndex(id);
    indexById.set(id, idx);
  }
  return idx;
}
import type { Fabric } from './fabric.js';
import { startSpan } from '../tracing/tracing.js';

/** A traced message: its bytes plus the traceparent of its fabric.send span (tracing on only). */
export interface TracedPayload {
  bytes: Uint8Array;
  tp: string;
}
export type WirePayload = Uint8Array | TracedPayload;

export class LiveFabricDriver {
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private closed = false;
  /**
   * Reads a message's kind tag from its bytes for the fabric's per-link counters (link-stats.ts's
   * messageKindTag); unset, messages are counted without a kind. Set only while someone watches.
   */
  kindOf: ((bytes: Uint8Array) => number) | undefined;

  constructor(
    readonly fabric: Fabric<WirePayload>,
    private readonly deliver: (to: string, frames: ArrayBuffer) => void,
    private readonly now: () => number = Date.now,
  ) {}

  /** A worker's outgoing frame buffer: [u16 destination index][u32 length][msgpack] repeated. */
  submitFrames(fromId: string, buf: ArrayBuffer): void {
    const now = this.now();
    readFrames(buf, (toIdx, bytes, tp) => {
      if (toIdx >= reservedFrameIndexMin) return; // the sender's durable records, stored by its handle
      const kind = this.kindOf === undefined ? -1 : this.kindOf(bytes);
      if (tp === undefined) {
        this.fabric.submit(fromId, idOf(toIdx), bytes, now, bytes.byteLength, kind);
        return;
      }
      const span = startSpan('fabric.send', tp, { from: fromId, to: idOf(toIdx), bytes: bytes.byteLength });
      const traced = { bytes, tp: span ? span.traceparent() : tp };
      const outcome = this.fabric.submit(fromId, idOf(toIdx), traced, now, bytes.byteLength, kind);
      span?.setAttribute('outcome', outcome);
      span?.end();
    });
    this.kick();
  }

  /** Schedules a delivery pass at the end of this turn (coalescing every submission of the turn). */
  kick(): void {
    if (this.scheduled || this.closed) return;
    this.scheduled = true;
    setImmediate(() => this.pass());
  }

  private pass(): void {
    this.scheduled = false;
    if (this.closed) return;
    const now = this.now();
    this.fabric.deliverDue(now, (to, batch) => {
      const w = new FrameWriter();
      for (const d of batch) {
        const p = d.payload;
        if (p instanceof Uint8Array) w.add(indexOf(d.from), p);
        else {
          const span = startSpan('fabric.deliver', p.tp, { from: d.from, to });
          w.add(indexOf(d.from), p.bytes, span ? span.traceparent() : p.tp);
          span?.end();
        }
      }
      this.deliver(to, w.finish());
    });
    const next = this.fabric.nextDueAt();
    if (next !== Infinity && next < this.timerAt) {
      if (this.timer) clearTimeout(this.timer);
      this.timerAt = next;
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.timerAt = Infinity;
          this.pass();
        },
        Math.max(1, next - now),
      );
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
