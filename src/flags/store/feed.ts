/**
 * Reads the store's change feed in seq order and hands each change to one consumer, waking on the
 * store's commit notifications (local for SQLite, LISTEN/NOTIFY for PostgreSQL) and, as a safety net
 * against a lost notification, on a slow poll. One read runs at a time; a wake-up during a read
 * causes one more read. It does not interpret changes; the stream hub does.
 */
import type { Change, FlagStore } from './types.js';
import { changeFeedBatchRowsMaxDefault, changeFeedPollMsDefault } from '../limits.js';

export interface ChangeFeedOptions {
  /** Start after this seq (usually store.latestSeq() at start-up). */
  from: number;
  onChange: (change: Change) => void;
  onError: (err: unknown) => void;
  /** Rows fetched per read. */
  batchRowsMax?: number;
  /** Safety-net poll period; 0 disables it. */
  pollMs?: number;
}

export class ChangeFeed {
  private pos: number;
  private reading = false;
  private again = false;
  private stopped = false;
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout | undefined;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly store: FlagStore,
    private readonly opts: ChangeFeedOptions,
  ) {
    this.pos = opts.from;
    this.unsubscribe = store.onCommit(() => this.wake());
    const pollMs = opts.pollMs ?? changeFeedPollMsDefault;
    if (pollMs > 0) {
      this.timer = setInterval(() => this.wake(), pollMs);
      this.timer.unref();
    }
  }

  /** The seq of the last change handed to the consumer. */
  get position(): number {
    return this.pos;
  }

  wake(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    void this.drain();
  }

  /** Resolves once every change committed before the call has been handed over (tests, shutdown). */
  async caughtUp(): Promise<void> {
    this.wake();
    if (!this.reading) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private async drain(): Promise<void> {
    const batch = this.opts.batchRowsMax ?? changeFeedBatchRowsMaxDefault;
    try {
      for (;;) {
        this.again = false;
        const changes = await this.store.changesSince(this.pos, batch);
        for (const c of changes) {
          if (this.stopped) return;
          this.pos = c.seq;
          this.opts.onChange(c);
        }
        if (changes.length < batch && !this.again) break;
      }
    } catch (err) {
      if (!this.stopped) this.opts.onError(err);
    } finally {
      this.reading = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
  }
}
