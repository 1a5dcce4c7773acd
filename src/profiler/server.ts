/**
 * The operator's profiling endpoint (`PROFILER_ADDR`): a small node:http server, separate from the
 * public uWebSockets.js API, that serves a CPU profile and a heap snapshot of this process's main
 * thread through `node:inspector`. It binds to a loopback address only and refuses any other at
 * start-up; it is not a general debug console (no eval, no worker-thread profiles).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Session } from 'node:inspector/promises';
import { isIP, type AddressInfo, type Socket } from 'node:net';
import type { Logger } from '../util/logger.js';

/** Bounds on `GET /debug/pprof/profile?seconds=N` (Go's pprof default is 30 s; ours is shorter). */
export const profileSecondsMin = 1;
export const profileSecondsMax = 60;
export const profileSecondsDefault = 5;

export interface ProfilerHandle {
  /** The bound port (useful when the address asked for port 0). */
  port: number;
  /** The bound host, always a loopback address. */
  host: string;
  close(): Promise<void>;
}

export type ProfilerAddr = { ok: true; host: string; port: number } | { ok: false; error: string };

/**
 * Loopback per RFC 1122 §3.2.1.3 (127.0.0.0/8) and RFC 4291 §2.5.3 (::1), plus the name
 * `localhost` (RFC 6761 §6.3), which we bind as 127.0.0.1 rather than trusting a resolver.
 */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const kind = isIP(host);
  if (kind === 4) return host.split('.')[0] === '127';
  if (kind === 6)
    return host === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(host) || /^::ffff:127\.\d+\.\d+\.\d+$/i.test(host);
  return false;
}

/** Decodes `host:port` or `[v6]:port`; the port may be 0 (a free one). Errors are values. */
export function parseProfilerAddr(addr: string): ProfilerAddr {
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(addr) ?? /^([^:[\]]+):(\d{1,5})$/.exec(addr);
  if (!m)
    return {
      ok: false,
      error: `PROFILER_ADDR must be host:port (for example 127.0.0.1:6060), got ${JSON.stringify(addr)}`,
    };
  const host = m[1] as string;
  const port = Number(m[2]);
  if (port > 65535) return { ok: false, error: `PROFILER_ADDR port must be 0..65535, got ${port}` };
  if (!isLoopbackHost(host)) {
    return {
      ok: false,
      error:
        'PROFILER_ADDR must be a loopback address (127.0.0.0/8, ::1 or localhost); refusing ' +
        `${JSON.stringify(host)} so profiles are never served beyond this machine`,
    };
  }
  return { ok: true, host: host.toLowerCase() === 'localhost' ? '127.0.0.1' : host, port };
}

/** `seconds` query value → a bounded integer, or an error message for a 400. */
export function parseProfileSeconds(raw: string | null): { ok: true; seconds: number } | { ok: false; error: string } {
  if (raw === null || raw === '') return { ok: true, seconds: profileSecondsDefault };
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isInteger(n) || n < profileSecondsMin || n > profileSecondsMax) {
    return {
      ok: false,
      error:
        `seconds must be an integer between ${profileSecondsMin} and ${profileSecondsMax}, got ` +
        `${JSON.stringify(raw)}`,
    };
  }
  return { ok: true, seconds: n };
}

const indexHtml = `<!doctype html>
<html><head><meta charset="utf-8"><title>simlab profiler</title></head>
<body><h1>simlab profiler (main thread)</h1>
<ul>
<li><a href="/debug/pprof/profile?seconds=${profileSecondsDefault}">/debug/pprof/profile?seconds=N</a>:
  CPU profile for N seconds (${profileSecondsMin}..${profileSecondsMax}, default ${profileSecondsDefault})
  as a <code>.cpuprofile</code> (open in Chrome DevTools or speedscope)</li>
<li><a href="/debug/pprof/heap">/debug/pprof/heap</a>: heap snapshot as a <code>.heapsnapshot</code>
  (open in Chrome DevTools, Memory tab); it pauses the process while it is taken</li>
</ul></body></html>
`;

function sendJsonError(res: ServerResponse, status: number, error: string): void {
  const body = JSON.stringify({ error });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function stamp(): string {
  return new Date().toISOString().replace(/[:.]/g, '-');
}

/**
 * Starts the profiler on `addr` (`host:port`, loopback only). Throws at start-up on a bad or
 * non-loopback address, and again if the bound socket is somehow not loopback.
 */
export async function startProfiler(addr: string, logger: Logger): Promise<ProfilerHandle> {
  const parsed = parseProfilerAddr(addr);
  if (!parsed.ok) throw new Error(parsed.error);

  // One CPU profile and one heap snapshot at a time: the inspector's profiler is process-wide.
  let profiling: { session: Session; timer: NodeJS.Timeout; finish: () => void } | undefined;
  let snapshotting = false;
  const sockets = new Set<Socket>();

  const profile = async (res: ServerResponse, url: URL): Promise<void> => {
    const s = parseProfileSeconds(url.searchParams.get('seconds'));
    if (!s.ok) return sendJsonError(res, 400, s.error);
    if (profiling) return sendJsonError(res, 409, 'a CPU profile is already running; try again when it finishes');
    const session = new Session();
    session.connect();
    let finish = (): void => {};
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const timer = setTimeout(() => finish(), s.seconds * 1000);
    profiling = { session, timer, finish };
    // A client that hangs up ends the profile early and frees the slot.
    const onGone = (): void => finish();
    res.on('close', onGone);
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
      logger.info({ seconds: s.seconds }, 'profiler: CPU profile started');
      await done;
      const { profile: cpu } = await session.post('Profiler.stop');
      if (res.destroyed) return;
      const body = JSON.stringify(cpu);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'content-disposition': `attachment; filename="cpu-${stamp()}.cpuprofile"`,
      });
      res.end(body);
      logger.info({ seconds: s.seconds, nodes: cpu.nodes.length }, 'profiler: CPU profile served');
    } finally {
      clearTimeout(timer);
      res.off('close', onGone);
      session.disconnect();
      profiling = undefined;
    }
  };

  const heap = async (res: ServerResponse): Promise<void> => {
    if (snapshotting)
      return sendJsonError(res, 409, 'a heap snapshot is already being taken; try again when it finishes');
    snapshotting = true;
    const session = new Session();
    session.connect();
    try {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-disposition': `attachment; filename="heap-${stamp()}.heapsnapshot"`,
      });
      // The snapshot arrives in chunks; each is written as it comes (res buffers what the socket cannot take yet).
      session.on('HeapProfiler.addHeapSnapshotChunk', (m) => {
        if (!res.destroyed) res.write(m.params.chunk);
      });
      await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      res.end();
      logger.info('profiler: heap snapshot served');
    } finally {
      session.disconnect();
      snapshotting = false;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://profiler.invalid');
    const route = url.pathname.replace(/\/+$/, '') || '/';
    const known =
      route === '/' || route === '/debug/pprof' || route === '/debug/pprof/profile' || route === '/debug/pprof/heap';
    if (!known) return sendJsonError(res, 404, `no such profiler endpoint ${url.pathname}; see / for the list`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return sendJsonError(res, 405, `method ${req.method ?? ''} not allowed; use GET`);
    }
    if (route === '/debug/pprof/profile') return profile(res, url);
    if (route === '/debug/pprof/heap') return heap(res);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(indexHtml) });
    res.end(req.method === 'HEAD' ? undefined : indexHtml);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.error({ err }, 'profiler: request failed');
      if (!res.headersSent) sendJsonError(res, 500, `profiler failed: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  server.on('connection', (sock) => {
    sockets.add(sock);
    sock.once('close', () => sockets.delete(sock));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(parsed.port, parsed.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  // Defence in depth: whatever the resolver or the OS did, never keep a non-loopback listener.
  if (!isLoopbackHost(bound.address)) {
    server.close();
    throw new Error(`profiler bound to ${bound.address}, which is not loopback; refusing to serve`);
  }
  logger.info(
    { host: bound.address, port: bound.port },
    'profiler: listening on ' +
      `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}/debug/pprof`,
  );

  return {
    port: bound.port,
    host: bound.address,
    close: () =>
      new Promise<void>((resolve) => {
        profiling?.finish();
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      }),
  };
}
