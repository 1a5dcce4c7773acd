/**
 * A core's output waiting for its next drain (messages, replies, events, durable records), each
 * kind in a list that is never emptied by truncation: `length = 0` or a fresh array drops the
 * backing store, and the next step's first push allocates one again, on every step of every node
 * of a swarm run. Here entries are written by position and cleared when handed over, so a list
 * keeps its storage. The order and the objects handed over are exactly those pushed.
 */
import type { ClientReply, CoreEvent, CoreOutput, OutMessage } from '../../protocol/core.js';

/**
 * Empties a list that is pushed into again, keeping its storage: `length = 0` drops an array's
 * backing store and the next push allocates a new one, while popping the few entries leaves it.
 */
export function emptyKeepingStorage(list: unknown[]): void {
  while (list.length > 0) list.pop();
}

/** A list that only grows at its end and is handed over whole. */
export class OutList<T> {
  private readonly items: Array<T | undefined> = [];
  /** Entries pushed since the last hand-over. */
  size = 0;

  push(x: T): void {
    this.items[this.size++] = x;
  }

  /** Appends every entry to `to`, in order, and forgets them (their places are cleared). */
  drainInto(to: { push(x: T): number }): void {
    const items = this.items;
    const n = this.size;
    for (let i = 0; i < n; i++) {
      to.push(items[i] as T);
      items[i] = undefined;
    }
    this.size = 0;
  }
}

/** The four kinds of protocol/core.ts CoreOutput, pending; `R` is the core's durable record. */
export interface CoreOutbox<R = unknown> {
  messages: OutList<OutMessage>;
  replies: OutList<ClientReply>;
  events: OutList<CoreEvent>;
  durable: OutList<R>;
}

export function newCoreOutbox<R = unknown>(): CoreOutbox<R> {
  return { messages: new OutList(), replies: new OutList(), events: new OutList(), durable: new OutList() };
}

/** Hands everything pending over to `out` (durable records only when there are some), in order. */
export function drainOutbox<R>(box: CoreOutbox<R>, out: CoreOutput): void {
  box.messages.drainInto(out.messages);
  box.replies.drainInto(out.replies);
  box.events.drainInto(out.events);
  if (box.durable.size > 0) box.durable.drainInto((out.durable ??= []));
}
