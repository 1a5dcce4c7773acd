/**
 * The console's connection to the flag service: the signed-in session (tokens held in memory only,
 * the access token refreshed a minute before it expires through `POST /auth/refresh`), calls with
 * the bearer token that return status, body and ETag as values, and the environment's live stream
 * read with fetch() (EventSource cannot send Authorization), resumed with Last-Event-ID.
 * It renders nothing and keeps no flag state (store.ts does).
 */
import { errorText } from '../shared/api.js';
import { SseParser } from '../../src/flags/sdk/sse.js';
import { refreshDelayMs } from './model.js';

export type Role = 'viewer' | 'editor' | 'admin';

export interface Tokens {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
}

export type CallResult<T> =
  | { ok: true; status: number; body: T; etag: string | undefined }
  | { ok: false; status: number; error: string; etag: string | undefined };

/** Longest the page waits for one API answer. */
export const callTimeoutMs = 15_000;
/** Wait before reopening a stream that ended, doubled per failure up to the maximum. */
export const streamRetryMsMin = 500;
export const streamRetryMsMax = 10_000;

async function rawCall<T>(
  method: string,
  path: string,
  token: string | undefined,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<CallResult<T>> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), callTimeoutMs);
  const h: Record<string, string> = { ...headers };
  if (token !== undefined) h['authorization'] = `Bearer ${token}`;
  if (body !== undefined) h['content-type'] = 'application/json';
  try {
    const res = await fetch(path, {
      method,
      headers: h,
      signal: ctl.signal,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const etag = res.headers.get('etag') ?? undefined;
    if (!res.ok) return { ok: false, status: res.status, error: errorText(res.status, text), etag };
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      return { ok: false, status: res.status, error: `the answer is not JSON: ${text.slice(0, 200)}`, etag };
    }
    return { ok: true, status: res.status, body: parsed as T, etag };
  } catch (err) {
    const aborted = err instanceof DOMException && err.name === 'AbortError';
    return {
      ok: false,
      status: 0,
      error: aborted ? `no answer within ${callTimeoutMs} ms` : `network error: ${String(err)}`,
      etag: undefined,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** A signed-in user: tokens in memory, refreshed on a timer, forgotten on sign-out. */
export class Session {
  private tokens: Tokens;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private refreshing: Promise<boolean> | undefined;
  private ended = false;

  constructor(
    tokens: Tokens,
    readonly email: string,
    readonly role: Role,
    private readonly onExpired: (why: string) => void,
  ) {
    this.tokens = tokens;
    this.schedule();
  }

  static async signIn(
    email: string,
    password: string,
    onExpired: (why: string) => void,
  ): Promise<{ ok: true; session: Session } | { ok: false; error: string }> {
    const r = await rawCall<Tokens>('POST', '/auth/login', undefined, { email, password });
    if (!r.ok) return { ok: false, error: r.error };
    const me = await rawCall<{ email: string; role: Role }>('GET', '/api/v1/me', r.body.accessToken);
    if (!me.ok) return { ok: false, error: me.error };
    return { ok: true, session: new Session(r.body, me.body.email, me.body.role, onExpired) };
  }

  get accessToken(): string {
    return this.tokens.accessToken;
  }

  get canEdit(): boolean {
    return this.role === 'editor' || this.role === 'admin';
  }

  private schedule(): void {
    clearTimeout(this.timer);
    if (this.ended) return;
    this.timer = setTimeout(() => void this.refresh(), refreshDelayMs(this.tokens.expiresIn));
  }

  /** Exchanges the refresh token (single use) for new tokens; false (and signed out) when refused. */
  refresh(): Promise<boolean> {
    this.refreshing ??= (async () => {
      const r = await rawCall<Tokens>('POST', '/auth/refresh', undefined, { refreshToken: this.tokens.refreshToken });
      this.refreshing = undefined;
      if (this.ended) return false;
      if (!r.ok) {
        if (r.status === 401) {
          this.end();
          this.onExpired(`your session ended (${r.error}); sign in again`);
        } else this.timer = setTimeout(() => void this.refresh(), 5_000);
        return false;
      }
      this.tokens = r.body;
      this.schedule();
      return true;
    })();
    return this.refreshing;
  }

  /** One call with the access token; a 401 triggers one refresh and one retry. */
  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<CallResult<T>> {
    const r = await rawCall<T>(method, path, this.tokens.accessToken, body, headers);
    if (r.ok || r.status !== 401 || this.ended) return r;
    if (!(await this.refresh())) return r;
    return rawCall<T>(method, path, this.tokens.accessToken, body, headers);
  }

  end(): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.tokens = { accessToken: '', refreshToken: '', expiresIn: 0 };
  }
}

export interface StreamHandlers {
  onEvent: (event: string, data: string) => void;
  onState: (state: 'connecting' | 'live' | 'retrying', detail?: string) => void;
}

/**
 * Follows one environment's stream until `stop()`: reopens after an end or error (backing off),
 * with the last event id so missed changes are replayed.
 */
export function followEnvironment(
  session: Session,
  project: string,
  env: string,
  h: StreamHandlers,
): { stop: () => void } {
  let stopped = false;
  let ctl: AbortController | undefined;
  let lastId: string | undefined;
  let retryMs = streamRetryMsMin;
  const path = `/api/v1/projects/${encodeURIComponent(project)}/environments/${encodeURIComponent(env)}/stream`;
  const run = async (): Promise<void> => {
    while (!stopped) {
      h.onState('connecting');
      ctl = new AbortController();
      let detail = 'the stream ended';
      try {
        const headers: Record<string, string> = {
          authorization: `Bearer ${session.accessToken}`,
          accept: 'text/event-stream',
        };
        if (lastId !== undefined) headers['last-event-id'] = lastId;
        const res = await fetch(path, { headers, signal: ctl.signal });
        if (res.status === 401) {
          await session.refresh();
          detail = 'token refreshed';
        } else if (!res.ok || !res.body) {
          detail = errorText(res.status, await res.text());
        } else {
          h.onState('live');
          retryMs = streamRetryMsMin;
          const parser = new SseParser();
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            for (const e of parser.push(dec.decode(value, { stream: true }))) {
              if (e.id !== undefined) lastId = e.id;
              h.onEvent(e.event, e.data);
            }
          }
        }
      } catch (err) {
        if (stopped) return;
        detail = String(err);
      }
      if (stopped) return;
      h.onState('retrying', detail);
      await new Promise((r) => setTimeout(r, retryMs));
      retryMs = Math.min(streamRetryMsMax, retryMs * 2);
    }
  };
  void run();
  return {
    stop: () => {
      stopped = true;
      ctl?.abort();
    },
  };
}
