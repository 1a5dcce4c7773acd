/**
 * The TypeScript SDK's client: connects to `GET /sdk/v1/stream` with an environment's SDK key,
 * keeps a local copy of every flag and segment (put replaces it; patch and delete apply only when
 * their version is newer, so a late or replayed event never rolls a flag back), evaluates locally
 * with the service's own evaluator, and reconnects with capped exponential backoff and jitter,
 * resuming with Last-Event-ID. A stream silent for longer than `readTimeoutMs` (the server sends a
 * heartbeat every 15 s) is treated as dead. A 401/403 stops it for good (a wrong key never heals).
 * It is not the OpenFeature adapter (provider.ts) and has no server-side code.
 */
import { evaluate, type EvalResult, type EvalWarning } from '../eval/evaluate.js';
import type { EvalContext, Flag, Segment } from '../model/types.js';
import { SseParser, type SseEvent } from './sse.js';
import {
  sdkBackoffMsInitialDefault,
  sdkBackoffMsMaxDefault,
  sdkBackoffMsMin,
  sdkInitTimeoutMsDefault,
  sdkReadTimeoutMsDefault,
} from '../limits.js';

export interface FlagsClientOptions {
  /** e.g. `http://localhost:8070` */
  baseUrl: string;
  sdkKey: string;
  /** First reconnect delay; doubles per failed attempt up to maxBackoffMs (full jitter). */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Reconnect when no byte arrived for this long. */
  readTimeoutMs?: number;
  /** Uniform [0,1) source for backoff jitter (injectable for tests). */
  random?: () => number;
  fetch?: typeof fetch;
  onWarning?: (w: EvalWarning) => void;
  onError?: (err: unknown) => void;
}

export type ClientState = 'connecting' | 'ready' | 'failed' | 'closed';

export interface FlagChange {
  kind: 'flag' | 'segment';
  key: string;
}

interface PutData {
  flags?: Record<string, Flag>;
  segments?: Record<string, Segment>;
}

export class FlagsClient {
  private readonly flags = new Map<string, Flag>();
  private readonly segments = new Map<string, Segment>();
  /** Versions of deleted keys, so an older patch cannot resurrect them. */
  private readonly tombstones = new Map<string, number>();
  private readonly changeListeners = new Set<(c: FlagChange) => void>();
  private current: AbortController | undefined;
  private wake: (() => void) | undefined;
  private readyResolve!: () => void;
  private readyReject!: (err: Error) => void;
  private readonly ready: Promise<void>;
  state: ClientState = 'connecting';
  lastEventId: string | undefined;
  /** Completed connections (for tests and diagnostics). */
  connections = 0;

  private readonly store = {
    flag: (key: string): Flag | undefined => this.flags.get(key),
    segment: (key: string): Segment | undefined => this.segments.get(key),
  };

  constructor(private readonly opts: FlagsClientOptions) {
    this.ready = new Promise<void>((resolve, reject) => {
      this.readyResolve = resolve;
      this.readyReject = reject;
    });
    // An unobserved rejection must not crash the host process.
    this.ready.catch(() => undefined);
    void this.run();
  }

  /** Resolves after the first `put` (the local copy is complete); rejects on a refused key or timeout. */
  async waitForInitialization(timeoutMs = sdkInitTimeoutMsDefault): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`flags SDK not initialised within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.ready, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  get initialized(): boolean {
    return this.state === 'ready';
  }

  /** Local evaluation; undefined when the flag is unknown. */
  evaluate(flagKey: string, context: EvalContext): EvalResult | undefined {
    const flag = this.flags.get(flagKey);
    if (!flag) return undefined;
    return evaluate(flag, context, this.store, this.opts.onWarning ? { onWarning: this.opts.onWarning } : undefined);
  }

  allFlags(context: EvalContext): Record<string, EvalResult> {
    const out: Record<string, EvalResult> = {};
    for (const key of this.flags.keys()) {
      const r = this.evaluate(key, context);
      if (r) out[key] = r;
    }
    return out;
  }

  flag(key: string): Flag | undefined {
    return this.flags.get(key);
  }

  onChange(listener: (c: FlagChange) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  close(): void {
    if (this.state === 'closed') return;
    if (this.state === 'connecting') this.readyReject(new Error('flags SDK closed before it was initialised'));
    this.state = 'closed';
    this.current?.abort();
    this.wake?.();
  }

  /** Connect, read, and on any failure wait (backoff) and connect again, until closed. */
  private async run(): Promise<void> {
    const doFetch = this.opts.fetch ?? fetch;
    const random = this.opts.random ?? Math.random;
    const initial = this.opts.initialBackoffMs ?? sdkBackoffMsInitialDefault;
    const max = this.opts.maxBackoffMs ?? sdkBackoffMsMaxDefault;
    const readTimeout = this.opts.readTimeoutMs ?? sdkReadTimeoutMsDefault;
    let attempt = 0;
    while (!this.isClosed()) {
      const ac = new AbortController();
      this.current = ac;
      let timer: NodeJS.Timeout | undefined;
      const arm = (): void => {
        clearTimeout(timer);
        timer = setTimeout(() => ac.abort(new Error(`no data for ${readTimeout} ms`)), readTimeout);
      };
      try {
        const headers: Record<string, string> = { authorization: this.opts.sdkKey, accept: 'text/event-stream' };
        if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
        arm();
        const res = await doFetch(`${this.opts.baseUrl.replace(/\/$/, '')}/sdk/v1/stream`, {
          headers,
          signal: ac.signal,
        });
        if (res.status === 401 || res.status === 403) {
          this.fail(new Error(`the flag service refused the SDK key (${res.status})`));
          await res.body?.cancel().catch(() => undefined);
          return;
        }
        if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}`);
        this.connections++;
        const parser = new SseParser();
        const decoder = new TextDecoder();
        const reader = res.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          arm();
          for (const ev of parser.push(decoder.decode(value, { stream: true }))) {
            this.handle(ev);
            attempt = 0;
          }
        }
      } catch (err) {
        if (this.isClosed()) break;
        this.opts.onError?.(err);
      } finally {
        clearTimeout(timer);
      }
      if (this.isClosed()) break;
      // Capped exponential backoff with full jitter, so a restarted server is not stampeded.
      const ceiling = Math.min(max, initial * 2 ** Math.min(attempt, 20));
      attempt++;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(sdkBackoffMsMin, random() * ceiling));
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /** A method, not a field test, so the compiler does not narrow `state` across awaits. */
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private fail(err: Error): void {
    if (this.state === 'connecting') this.readyReject(err);
    this.state = 'failed';
    this.opts.onError?.(err);
  }

  private handle(ev: SseEvent): void {
    let payload: { path?: string; data?: unknown; version?: number };
    try {
      payload = JSON.parse(ev.data) as typeof payload;
    } catch (err) {
      this.opts.onError?.(new Error(`unparsable ${ev.event} event: ${String(err)}`));
      return;
    }
    switch (ev.event) {
      case 'put':
        this.applyPut((payload.data ?? {}) as PutData);
        break;
      case 'patch':
        this.applyOne(payload.path, payload.data as Flag | Segment | undefined, undefined);
        break;
      case 'delete':
        this.applyOne(payload.path, undefined, payload.version);
        break;
      default:
        // Unknown event types are ignored (forward compatibility).
        return;
    }
    if (ev.id !== undefined) this.lastEventId = ev.id;
  }

  private applyPut(data: PutData): void {
    const changed: FlagChange[] = [];
    const replace = <T extends { version: number }>(
      kind: FlagChange['kind'],
      map: Map<string, T>,
      next: Record<string, T>,
    ): void => {
      for (const k of map.keys()) if (!Object.hasOwn(next, k)) changed.push({ kind, key: k });
      for (const [k, v] of Object.entries(next)) if (map.get(k)?.version !== v.version) changed.push({ kind, key: k });
      map.clear();
      for (const [k, v] of Object.entries(next)) map.set(k, v);
    };
    replace('flag', this.flags, data.flags ?? {});
    replace('segment', this.segments, data.segments ?? {});
    this.tombstones.clear();
    if (this.state === 'connecting') {
      this.state = 'ready';
      this.readyResolve();
    }
    for (const c of changed) this.emit(c);
  }

  private applyOne(
    path: string | undefined,
    data: Flag | Segment | undefined,
    deleteVersion: number | undefined,
  ): void {
    const m = /^\/(flags|segments)\/(.+)$/.exec(path ?? '');
    if (!m?.[1] || m[2] === undefined) return;
    const kind: FlagChange['kind'] = m[1] === 'flags' ? 'flag' : 'segment';
    const key = m[2];
    const map = (kind === 'flag' ? this.flags : this.segments) as Map<string, Flag | Segment>;
    const tombKey = `${kind}:${key}`;
    const known = map.get(key)?.version ?? this.tombstones.get(tombKey) ?? 0;
    const incoming = data ? data.version : (deleteVersion ?? Number.MAX_SAFE_INTEGER);
    if (incoming <= known) return;
    if (data) {
      map.set(key, data);
      this.tombstones.delete(tombKey);
    } else {
      map.delete(key);
      this.tombstones.set(tombKey, incoming);
    }
    this.emit({ kind, key });
  }

  private emit(c: FlagChange): void {
    for (const l of [...this.changeListeners]) {
      try {
        l(c);
      } catch (err) {
        this.opts.onError?.(err);
      }
    }
  }
}
