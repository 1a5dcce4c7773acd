/**
 * Small HTTP/WebSocket client helpers for black-box tests: JSON requests over real sockets
 * (node:http, so oversized bodies and early 413s are observable) and a WebSocket collector.
 */
import http from 'node:http';
import WebSocket from 'ws';

export interface Resp<T = any> {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: T;
  text: string;
}

export function request<T = any>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Resp<T>> {
  const url = new URL(path, base);
  const payload =
    body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        headers: {
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
            : {}),
          ...headers,
        },
        agent: keepAlive,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = undefined;
          if (text.length > 0 && String(res.headers['content-type'] ?? '').includes('json')) {
            try {
              parsed = JSON.parse(text);
            } catch {
              parsed = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed as T, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 32 });

export const api = (base: string) => ({
  get: <T = any>(p: string, h?: Record<string, string>) => request<T>(base, 'GET', p, undefined, h),
  post: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>(base, 'POST', p, b, h),
  put: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>(base, 'PUT', p, b, h),
  patch: <T = any>(p: string, b?: unknown, h?: Record<string, string>) => request<T>(base, 'PATCH', p, b, h),
  del: <T = any>(p: string, h?: Record<string, string>) => request<T>(base, 'DELETE', p, undefined, h),
});

/** Opens a WebSocket and collects parsed JSON messages. */
export async function wsCollect(
  url: string,
  headers: Record<string, string> = {},
): Promise<{
  ws: WebSocket;
  messages: any[];
  waitFor: (pred: (m: any) => boolean, ms?: number) => Promise<any>;
  close: () => void;
}> {
  const ws = new WebSocket(url, { headers });
  const messages: any[] = [];
  const waiters: Array<{ pred: (m: any) => boolean; resolve: (m: any) => void }> = [];
  ws.on('message', (data) => {
    let m: unknown;
    try {
      m = JSON.parse(data.toString());
    } catch {
      m = data.toString();
    }
    messages.push(m);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i]!;
      if (w.pred(m)) {
        waiters.splice(i, 1);
        w.resolve(m);
      }
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })),
    );
  });
  const waitFor = (pred: (m: any) => boolean, ms = 5000): Promise<any> => {
    const found = messages.find(pred);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no matching WebSocket message within ${ms} ms (got ${messages.length})`)),
        ms,
      );
      waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      });
    });
  };
  return { ws, messages, waitFor, close: () => ws.close() };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value or the time runs out. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms = 5000,
  every = 25,
): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
      last = v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`condition not met within ${ms} ms (last: ${String(last)})`);
    await sleep(every);
  }
}
