/**
 * The clock lab's event bus: every event is published once into a bounded buffer (4096, the spec's
 * publish buffer), stamped with a sequence number and the wall-clock time, then drained
 * asynchronously: serialized once, kept in a history for replay bounded in events and in characters
 * (events differ in size by orders of magnitude), and handed to every
 * subscriber (the WebSocket fan-out). A full buffer drops the event and counts it. Nothing here
 * knows about sockets or the simulation.
 */
import type { EventData, LabEvent, LabEventType } from './events.js';

export interface BusOptions {
  bufferMax: number;
  historyMax: number;
  /** Serialized characters the history may hold (events differ in size by orders of magnitude); default unbounded. */
  historyCharsMax?: number;
  /** Wall clock for `ts` (injected: plumbing, but still replaceable in tests). */
  now: () => number;
  /** Schedules a drain soon (default setImmediate). */
  schedule?: (fn: () => void) => void;
  onPublishDrop?: (type: LabEventType) => void;
  onHistoryEvict?: () => void;
}

export type Subscriber = (json: string, event: LabEvent) => void;

export class EventBus {
  private pending: LabEvent[] = [];
  /** Oldest first from historyHead; compacted when the dead prefix grows. */
  private history: string[] = [];
  private historyHead = 0;
  private historyChars = 0;
  private readonly subscribers = new Set<Subscriber>();
  private scheduled = false;
  private seq = 0;
  publishDrops = 0;
  historyEvicted = 0;
  delivered = 0;

  constructor(private readonly opts: BusOptions) {}

  /**
   * Publishes one event; false when the buffer was full and the event was dropped (its seq is skipped, so
   * clients see the gap).
   */
  publish(type: LabEventType, data: EventData): boolean {
    const seq = ++this.seq;
    if (this.pending.length >= this.opts.bufferMax) {
      this.publishDrops++;
      this.opts.onPublishDrop?.(type);
      return false;
    }
    this.pending.push({ type, seq, ts: this.opts.now(), data });
    if (!this.scheduled) {
      this.scheduled = true;
      (this.opts.schedule ?? setImmediate)(() => this.drain());
    }
    return true;
  }

  /** Fans out everything buffered, in order. */
  drain(): void {
    this.scheduled = false;
    const batch = this.pending;
    this.pending = [];
    for (const event of batch) {
      const json = JSON.stringify(event);
      this.remember(json);
      this.delivered++;
      for (const s of this.subscribers) s(json, event);
    }
  }

  subscribe(s: Subscriber): () => void {
    this.subscribers.add(s);
    return () => this.subscribers.delete(s);
  }

  /** The most recent drained events, oldest first, serialized (what a new client is sent on connect). */
  recent(): string[] {
    return this.history.slice(this.historyHead);
  }

  get buffered(): number {
    return this.pending.length;
  }

  get lastSeq(): number {
    return this.seq;
  }

  private remember(json: string): void {
    if (this.opts.historyMax <= 0) return;
    this.history.push(json);
    this.historyChars += json.length;
    const charsMax = this.opts.historyCharsMax ?? Infinity;
    while (
      this.history.length - this.historyHead > this.opts.historyMax ||
      (this.historyChars > charsMax && this.history.length - this.historyHead > 0)
    ) {
      this.historyChars -= (this.history[this.historyHead] as string).length;
      this.history[this.historyHead] = '';
      this.historyHead++;
      this.historyEvicted++;
      this.opts.onHistoryEvict?.();
    }
    if (this.historyHead > 1024 && this.historyHead * 2 > this.history.length) {
      this.history = this.history.slice(this.historyHead);
      this.historyHead = 0;
    }
  }
}
