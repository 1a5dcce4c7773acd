/**
 * Black-box helpers for the flag service tests: start the real server on port 0 over a temp SQLite
 * file (or a given DATABASE_URL), speak HTTP with fetch over real sockets, log in, and read SDK
 * streams with the SDK's own SSE parser. Not a test file itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { silentLogger } from '../../src/util/logger.js';
import { startFlags, type FlagsServer } from '../../src/flags/server.js';
import { SseParser, type SseEvent } from '../../src/flags/sdk/sse.js';

export const adminEmail = 'admin@example.com';
export const adminPassword = 'correct horse battery staple';
export const jwtSecret = 'test-secret-test-secret-test-secret-0123456789';

export interface Reply {
  status: number;
  body: unknown;
  headers: Headers;
}

export interface Harness {
  base: string;
  server: FlagsServer;
  env: NodeJS.ProcessEnv;
  /** Close and start again on the same database (and port 0 again). */
  restart(): Promise<void>;
  call(method: string, path: string, opts?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> }): Promise<Reply>;
  login(email?: string, password?: string): Promise<string>;
}

export function tempDbFile(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'flags-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'flags.db');
}

export async function startHarness(t: Test, over: Record<string, string> = {}, opts: { now?: () => number } = {}): Promise<Harness> {
  const env: NodeJS.ProcessEnv = {
    FLAGS_DB: over['DATABASE_URL'] ? '' : tempDbFile(t),
    FLAGS_JWT_SECRET: jwtSecret,
    FLAGS_ADMIN_EMAIL: adminEmail,
    FLAGS_ADMIN_PASSWORD: adminPassword,
    FLAGS_LOGIN_ATTEMPTS_PER_MINUTE: '1000',
    ...over,
  };
  const start = (): Promise<FlagsServer> => startFlags({ port: 0, host: '127.0.0.1', env, logger: silentLogger(), ...(opts.now ? { now: opts.now } : {}) });
  const h: Harness = {
    base: '',
    server: await start(),
    env,
    async restart() {
      await h.server.close();
      h.server = await start();
      h.base = `http://127.0.0.1:${h.server.port}`;
    },
    async call(method, path, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.token !== undefined) headers['authorization'] = `Bearer ${o.token}`;
      let body: string | undefined;
      if (o.raw !== undefined) body = o.raw;
      else if (o.body !== undefined) body = JSON.stringify(o.body);
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await fetch(`${h.base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        // not JSON (metrics)
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async login(email = adminEmail, password = adminPassword) {
      const r = await h.call('POST', '/auth/login', { body: { email, password } });
      if (r.status !== 200) throw new Error(`login failed: ${r.status} ${JSON.stringify(r.body)}`);
      return (r.body as { accessToken: string }).accessToken;
    },
  };
  h.base = `http://127.0.0.1:${h.server.port}`;
  t.teardown(() => h.server.close());
  return h;
}

export interface StreamReader {
  status: number;
  events: SseEvent[];
  parser: SseParser;
  /** Resolves with the next event (after those already taken) matching `pred`. */
  next(pred?: (e: SseEvent) => boolean, timeoutMs?: number): Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openStream(base: string, authorization: string, headers: Record<string, string> = {}): Promise<StreamReader> {
  const ac = new AbortController();
  const res = await fetch(`${base}/sdk/v1/stream`, { headers: { authorization, accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let taken = 0;
  const waiters: Array<() => void> = [];
  const notify = (): void => {
    for (const w of waiters.splice(0)) w();
  };
  let finished = false;
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        for (const e of parser.push(decoder.decode(chunk, { stream: true }))) events.push(e);
        notify();
      }
    } catch {
      // aborted
    } finally {
      finished = true;
      notify();
    }
  })();
  return {
    status: res.status,
    events,
    parser,
    ended,
    async next(pred = () => true, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        while (taken < events.length) {
          const e = events[taken++] as SseEvent;
          if (pred(e)) return e;
        }
        if (finished) throw new Error('stream ended while waiting for an event');
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no matching event within ${timeoutMs} ms (have ${events.map((e) => e.event).join(',')})`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    close() {
      ac.abort();
    },
  };
}

export function boolFlag(key: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    key,
    name: key,
    type: 'boolean',
    enabled: true,
    defaultVariation: 'off',
    variations: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    ...over,
  };
}
