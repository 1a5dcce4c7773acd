/**
 * The browser-facing proxy of the clock lab: serves the clock lab's built web page (web/clocklab,
 * bundled by scripts/build-web.mjs into dist/web/clocklab; src/http/static.ts serves it with caching
 * and gzip) and forwards every other HTTP request, Authorization header included, and WebSocket connections
 * on /ws to the lab. It holds no state of the lab and makes no decisions: a refusal by the lab
 * (401, 403, 503 ...) reaches the browser unchanged.
 *
 * WebSockets: browsers presenting the same credentials (Authorization, Origin, `?token=`) share one
 * upstream connection to the lab, whose frames the proxy fans out like the lab's own hub: each
 * browser has a send queue bounded in bytes (the lab's VC_WS_CLIENT_QUEUE_BYTES); past it frames to
 * that browser are dropped and counted (vc_proxy_ws_events_dropped_total). So a slow browser costs
 * the lab nothing (one connection per credential set, read at the proxy's pace, never paused for a
 * browser), and a newly connected browser gets the last frames (the lab's replay and what followed,
 * as bounded as the lab's own history) before the live stream.
 */
import http from 'node:http';
import WebSocket from 'ws';
import { HttpApp, faultMetrics, type HttpResult, type UpgradeDecision, type WsClient } from '../http/index.js';
import { builtPageDir, serveBuiltPage } from '../http/static.js';
import type { Logger } from '../util/logger.js';
import type { Registry } from '../util/metrics.js';
import { activeTraceparent } from '../tracing/tracing.js';
import {
  busHistoryCharsMax,
  busHistoryMax,
  proxyIdleUpstreamMs,
  proxyRefusalBytesMax,
  proxyRequestTimeoutMs,
  proxyResponseBytesMax,
  proxyUpstreamsMax,
  wsClientQueueBytesDefault,
  wsPingIntervalMsDefault,
  wsPongDeadlineMsDefault,
} from './limits.js';

export interface ProxyOptions {
  port: number;
  host?: string;
  target: { host: string; port: number };
  logger: Logger;
  /** The built page (index.html and assets/); default dist/web/clocklab of this checkout (scripts/build-web.mjs). */
  webDir?: string;
  /** Bytes a browser may have queued before frames to it are dropped (the lab's VC_WS_CLIENT_QUEUE_BYTES). */
  clientQueueBytes?: number;
  /**
   * The proxy pings each browser this often and closes one silent for longer than the deadline (the lab's
   * settings).
   */
  pingIntervalMs?: number;
  pongDeadlineMs?: number;
  /** Frames dropped for a browser whose queue was full (vc_proxy_ws_events_dropped_total). */
  onDropped?: (frames: number) => void;
  /** Browser WebSockets opened (+1) and closed (-1) (vc_proxy_ws_clients_connected). */
  onClients?: (delta: number) => void;
  /** A browser closed for missing the pong deadline. */
  onPongTimeout?: () => void;
  /** The lab's registry: the proxy's handler errors join its http_handler_errors_total. */
  registry?: Registry;
}

/** Request headers passed to the lab (hop-by-hop ones are not). */
const forwardedRequestHeaders = [
  'authorization',
  'content-type',
  'accept',
  'origin',
  'if-match',
  'last-event-id',
  'user-agent',
  // W3C trace context: the lab's span continues the caller's trace (the proxy's own span when tracing is on).
  'traceparent',
  'tracestate',
];
/** Response headers passed back to the browser. */
const forwardedResponseHeaders = [
  'content-type',
  'www-authenticate',
  'allow',
  'retry-after',
  'access-control-allow-origin',
  'vary',
];

interface Frame {
  data: Buffer;
  isBinary: boolean;
}

/** One upstream connection to the lab, shared by every browser presenting the same credentials. */
interface Upstream {
  key: string;
  ws: WebSocket;
  /** Settles when the lab accepted (or refused) the connection. */
  ready: Promise<UpgradeDecision<Upstream>>;
  clients: Set<WsClient<Upstream>>;
  /**
   * The last frames, replayed to a browser that joins (bounded like the lab's own history; bytes of JSON text
   * count as its characters, near enough).
   */
  history: Frame[];
  historyBytes: number;
  /**
   * Closes the upstream when it has had no browser for a while (a browser that went away during its upgrade
   * never attaches).
   */
  idle: NodeJS.Timeout | undefined;
}

export async function startProxy(opts: ProxyOptions): Promise<{ port: number; close(): void }> {
  const { target, logger } = opts;
  const app = new HttpApp({ name: 'clocklab-proxy', serviceName: 'simlab-clocklab', logger, cors: false });
  if (opts.registry) faultMetrics(app, opts.registry);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const upstreams = new Map<string, Upstream>();
  const queueBytes = opts.clientQueueBytes ?? wsClientQueueBytesDefault;
  const pongDeadlineMs = opts.pongDeadlineMs ?? wsPongDeadlineMsDefault;

  // The page at GET / (and its hashed assets, favicon): 503 naming `make build` until it is built.
  serveBuiltPage(app, { dir: opts.webDir ?? builtPageDir('clocklab'), page: 'clocklab' });

  app.fallback(
    (req) =>
      new Promise<HttpResult>((resolve) => {
        const headers: Record<string, string> = {};
        for (const h of forwardedRequestHeaders) {
          const v = req.headers[h];
          if (v !== undefined) headers[h] = v;
        }
        if (req.rawBody.length > 0) headers['content-length'] = String(req.rawBody.length);
        const traceparent = activeTraceparent();
        if (traceparent !== undefined) headers['traceparent'] = traceparent;
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
        const upstream = http.request(
          {
            host: target.host,
            port: target.port,
            method: req.method,
            path: qs ? `${path}?${qs}` : path,
            headers,
            agent,
            timeout: proxyRequestTimeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            let size = 0;
            res.on('data', (c: Buffer) => {
              size += c.length;
              if (size <= proxyResponseBytesMax) {
                chunks.push(c);
                return;
              }
              res.destroy();
              resolve({ status: 502, body: { error: `clock lab response exceeds ${proxyResponseBytesMax} bytes` } });
            });
            res.on('end', () => {
              const out: Record<string, string> = {};
              for (const h of forwardedResponseHeaders) {
                const v = res.headers[h];
                if (typeof v === 'string') out[h] = v;
              }
              out['content-type'] ??= 'application/octet-stream';
              resolve({ status: res.statusCode ?? 502, raw: Buffer.concat(chunks), headers: out });
            });
            res.on('error', (err) =>
              resolve({ status: 502, body: { error: `clock lab response failed: ${err.message}` } }),
            );
          },
        );
        upstream.on('timeout', () => {
          upstream.destroy();
          resolve({ status: 504, body: { error: `clock lab did not answer within ${proxyRequestTimeoutMs} ms` } });
        });
        upstream.on('error', (err) =>
          resolve({
            status: 502,
            body: { error: `clock lab unreachable at ${target.host}:${target.port}: ${err.message}` },
          }),
        );
        if (req.rawBody.length > 0) upstream.write(req.rawBody);
        upstream.end();
      }),
  );

  const closeUpstream = (up: Upstream): void => {
    if (up.idle) clearTimeout(up.idle);
    up.idle = undefined;
    if (upstreams.get(up.key) === up) upstreams.delete(up.key);
    up.ws.terminate();
  };
  const idleCheck = (up: Upstream): void => {
    if (up.idle) clearTimeout(up.idle);
    up.idle = setTimeout(() => {
      up.idle = undefined;
      if (up.clients.size === 0) closeUpstream(up);
    }, proxyIdleUpstreamMs);
  };

  /** One frame to one browser: past its queue cap the frame is dropped and counted (WsClient.send). */
  const deliver = (client: WsClient<Upstream>, f: Frame): void => {
    if (client.send(f.data, f.isBinary) === 'dropped') opts.onDropped?.(1);
  };

  const openUpstream = (key: string, headers: Record<string, string>, token: string | null): Upstream => {
    // skipUTF8Validation: frames go on to browsers as they came; the lab only sends JSON text.
    const ws = new WebSocket(
      `ws://${target.host}:${target.port}/ws${token !== null ? `?token=${encodeURIComponent(token)}` : ''}`,
      { headers, skipUTF8Validation: true, handshakeTimeout: proxyRequestTimeoutMs },
    );
    let decide!: (d: UpgradeDecision<Upstream>) => void;
    const ready = new Promise<UpgradeDecision<Upstream>>((resolve) => {
      decide = resolve;
    });
    const up: Upstream = { key, ws, ready, clients: new Set(), history: [], historyBytes: 0, idle: undefined };
    let settled = false;
    const settle = (d: UpgradeDecision<Upstream>): void => {
      if (settled) return;
      settled = true;
      if (d.reject && upstreams.get(key) === up) upstreams.delete(key);
      decide(d);
    };
    ws.on('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size <= proxyRefusalBytesMax) chunks.push(c);
      });
      res.on('end', () => {
        let error = `the clock lab refused the WebSocket (${res.statusCode})`;
        try {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: unknown };
          if (typeof parsed.error === 'string') error = parsed.error;
        } catch {
          // keep the generic message
        }
        settle({ reject: { status: res.statusCode ?? 502, error } });
      });
    });
    ws.on('error', (err) => settle({ reject: { status: 502, error: `clock lab unreachable: ${err.message}` } }));
    ws.on('open', () => {
      idleCheck(up);
      settle({ data: up });
    });
    ws.on('message', (data, isBinary) => {
      // A copy: ws hands out views of the socket's chunk, which the history must not keep alive.
      const f: Frame = { data: Buffer.from(data as Buffer), isBinary };
      up.history.push(f);
      up.historyBytes += f.data.length;
      while (up.history.length > busHistoryMax || up.historyBytes > busHistoryCharsMax)
        up.historyBytes -= (up.history.shift() as Frame).data.length;
      for (const c of up.clients) deliver(c, f);
    });
    ws.on('close', () => {
      if (upstreams.get(key) === up) upstreams.delete(key);
      if (up.idle) clearTimeout(up.idle);
      for (const c of [...up.clients]) c.close(1000, 'clock lab closed the connection');
    });
    upstreams.set(key, up);
    return up;
  };

  app.ws<Upstream>('/ws', {
    maxQueueBytes: queueBytes,
    upgrade: async (info) => {
      const headers: Record<string, string> = {};
      for (const h of ['authorization', 'origin', 'user-agent']) {
        const v = info.headers[h];
        if (v !== undefined) headers[h] = v;
      }
      // The lab decides on the Authorization header, the Origin and `?token=` only: those name the upstream.
      const token = info.query.get('token');
      const key = JSON.stringify([headers['authorization'] ?? null, headers['origin'] ?? null, token]);
      let up = upstreams.get(key);
      if (!up) {
        if (upstreams.size >= proxyUpstreamsMax) {
          return {
            reject: {
              status: 503,
              error:
                `the proxy already holds ${proxyUpstreamsMax} upstream connections (one per distinct ` +
                'credentials), its maximum',
            },
          };
        }
        try {
          up = openUpstream(key, headers, token);
        } catch (err) {
          // Node refuses some header bytes uWS lets through (characters outside Latin-1, controls).
          return {
            reject: {
              status: 400,
              error: `the request cannot be forwarded to the clock lab: ${(err as Error).message}`,
            },
          };
        }
      }
      return up.ready;
    },
    open: (client) => {
      const up = client.data;
      if (up.ws.readyState !== WebSocket.OPEN) {
        client.close(1011, 'clock lab closed the connection');
        return;
      }
      if (up.idle) clearTimeout(up.idle);
      up.idle = undefined;
      opts.onClients?.(1);
      for (const f of up.history) deliver(client, f);
      up.clients.add(client);
    },
    // The lab reads nothing from its clients: frames from browsers are not forwarded.
    close: (client) => {
      const up = client.data;
      if (!up.clients.delete(client)) return;
      opts.onClients?.(-1);
      if (up.clients.size === 0) idleCheck(up);
    },
  });

  // Browsers that stopped answering pings are closed (the lab cannot see them behind the shared upstream).
  const pinger = setInterval(() => {
    const now = Date.now();
    for (const up of upstreams.values()) {
      for (const c of up.clients) {
        if (now - c.lastPongAt > pongDeadlineMs) {
          opts.onPongTimeout?.();
          c.terminate();
        } else {
          c.ping();
        }
      }
    }
  }, opts.pingIntervalMs ?? wsPingIntervalMsDefault);
  pinger.unref();

  const port = await app.listen(opts.port, opts.host ?? '0.0.0.0');
  return {
    port,
    close() {
      clearInterval(pinger);
      for (const up of [...upstreams.values()]) closeUpstream(up);
      app.close();
      agent.destroy();
    },
  };
}
