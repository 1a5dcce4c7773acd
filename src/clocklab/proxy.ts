/**
 * The browser-facing proxy of the clock lab: serves the small web page (web/clocklab/index.html)
 * and forwards every other HTTP request, Authorization header included, and every WebSocket
 * connection on /ws to the lab, relaying frames both ways. It holds no state of the lab and makes no
 * decisions: a refusal by the lab (401, 403, ...) reaches the browser unchanged.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { HttpApp, type HttpResult, type WsClient } from '../http/index.js';
import type { Logger } from '../util/logger.js';

export interface ProxyOptions {
  port: number;
  host?: string;
  target: { host: string; port: number };
  logger: Logger;
  /** Directory holding index.html; default: web/clocklab found above this module. */
  webDir?: string;
}

/** Request headers passed to the lab (hop-by-hop ones are not). */
const forwardedRequestHeaders = ['authorization', 'content-type', 'accept', 'origin', 'if-match', 'last-event-id', 'user-agent'];
/** Response headers passed back to the browser. */
const forwardedResponseHeaders = ['content-type', 'www-authenticate', 'allow', 'retry-after', 'access-control-allow-origin', 'vary'];
/** Frames buffered for a browser between the lab's accepting the upstream connection and the browser's socket opening. */
const pendingFramesMax = 4096;

export function findWebDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'web', 'clocklab');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    dir = dirname(dir);
  }
  return undefined;
}

interface Upstream {
  ws: WebSocket;
  pending: Array<{ data: WebSocket.RawData; isBinary: boolean }>;
  client: WsClient<Upstream> | undefined;
  lost: number;
}

export async function startProxy(opts: ProxyOptions): Promise<{ port: number; close(): void }> {
  const { target, logger } = opts;
  const webDir = opts.webDir ?? findWebDir();
  const app = new HttpApp({ name: 'clocklab-proxy', logger, cors: false });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const upstreams = new Set<Upstream>();

  const page = (): HttpResult => {
    const file = webDir ? join(webDir, 'index.html') : undefined;
    if (!file || !existsSync(file)) return { status: 404, body: { error: 'web page not found (web/clocklab/index.html)' } };
    return { status: 200, raw: readFileSync(file), headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' } };
  };
  app.get('/', page);
  app.get('/index.html', page);

  app.fallback((req) => new Promise<HttpResult>((resolve) => {
    const headers: Record<string, string> = {};
    for (const h of forwardedRequestHeaders) {
      const v = req.headers[h];
      if (v !== undefined) headers[h] = v;
    }
    if (req.rawBody.length > 0) headers['content-length'] = String(req.rawBody.length);
    const qs = req.query.toString();
    // A request target may carry raw non-ASCII bytes; http.request refuses those (and would throw
    // inside this executor), so percent-encode them. Unencodable input is the client's error.
    let path: string;
    try {
      path = req.path.replace(/[^\x21-\x7e]/g, (ch) => encodeURIComponent(ch));
    } catch {
      resolve({ status: 400, body: { error: 'request path is not valid text' } });
      return;
    }
    const upstream = http.request({ host: target.host, port: target.port, method: req.method, path: qs ? `${path}?${qs}` : path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out: Record<string, string> = {};
        for (const h of forwardedResponseHeaders) {
          const v = res.headers[h];
          if (typeof v === 'string') out[h] = v;
        }
        out['content-type'] ??= 'application/octet-stream';
        resolve({ status: res.statusCode ?? 502, raw: Buffer.concat(chunks), headers: out });
      });
      res.on('error', (err) => resolve({ status: 502, body: { error: `clock lab response failed: ${err.message}` } }));
    });
    upstream.on('error', (err) => resolve({ status: 502, body: { error: `clock lab unreachable at ${target.host}:${target.port}: ${err.message}` } }));
    if (req.rawBody.length > 0) upstream.write(req.rawBody);
    upstream.end();
  }));

  app.ws<Upstream>('/ws', {
    maxQueueBytes: 4 * 1024 * 1024,
    upgrade: (info) => new Promise((resolve) => {
      const headers: Record<string, string> = {};
      for (const h of ['authorization', 'origin', 'user-agent']) {
        const v = info.headers[h];
        if (v !== undefined) headers[h] = v;
      }
      const qs = info.query.toString();
      const ws = new WebSocket(`ws://${target.host}:${target.port}/ws${qs ? `?${qs}` : ''}`, { headers });
      const up: Upstream = { ws, pending: [], client: undefined, lost: 0 };
      let settled = false;
      ws.on('unexpected-response', (_req, res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          let error = `the clock lab refused the WebSocket (${res.statusCode})`;
          try {
            const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: unknown };
            if (typeof parsed.error === 'string') error = parsed.error;
          } catch {
            // keep the generic message
          }
          settled = true;
          resolve({ reject: { status: res.statusCode ?? 502, error } });
        });
      });
      ws.on('error', (err) => {
        if (!settled) {
          settled = true;
          resolve({ reject: { status: 502, error: `clock lab unreachable: ${err.message}` } });
        }
      });
      ws.on('open', () => {
        settled = true;
        upstreams.add(up);
        resolve({ data: up });
      });
      ws.on('message', (data, isBinary) => {
        if (up.client) {
          up.client.send(isBinary ? (data as Buffer) : data.toString(), isBinary);
        } else if (up.pending.length < pendingFramesMax) {
          up.pending.push({ data, isBinary });
        } else {
          up.lost++;
        }
      });
      ws.on('close', () => {
        upstreams.delete(up);
        up.client?.close(1000, 'clock lab closed the connection');
      });
    }),
    open: (client) => {
      const up = client.data;
      up.client = client;
      for (const f of up.pending) client.send(f.isBinary ? (f.data as Buffer) : f.data.toString(), f.isBinary);
      up.pending = [];
      if (up.lost > 0) logger.warn({ lost: up.lost }, 'proxy dropped frames buffered before the browser socket opened');
    },
    message: (client, message, isBinary) => {
      const up = client.data;
      if (up.ws.readyState === WebSocket.OPEN) up.ws.send(message, { binary: isBinary });
    },
    close: (client) => {
      const up = client.data;
      up.client = undefined;
      upstreams.delete(up);
      up.ws.close();
    },
  });

  const port = await app.listen(opts.port, opts.host ?? '0.0.0.0');
  return {
    port,
    close() {
      for (const up of upstreams) up.ws.terminate();
      upstreams.clear();
      app.close();
      agent.destroy();
    },
  };
}
