/**
 * The clock lab service: wires the simulation (lab.ts) to the HTTP adapter (routes, auth, /ws
 * fan-out with replay, ping/pong), the event bus, the metrics and the live driver that advances
 * virtual time with the real clock; then starts the browser-facing proxy. Thin by design: every
 * decision about clocks, delivery, snapshots or the KV store is made in the lab and returned as a value.
 */
import Type from 'typebox';
import { timingSafeEqual } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  HttpApp,
  HttpError,
  WsHub,
  healthRoutes,
  type HttpRequest,
  type HttpResult,
  type WsClient,
} from '../http/index.js';
import { packageVersion, serveOpenApi } from '../http/openapi.js';
import { createLogger, type Logger } from '../util/logger.js';
import { SeededRng, liveRng } from '../util/rng.js';
import { EventBus } from './bus.js';
import { loadSettings, processIdRe, type ClockLabSettings } from './config.js';
import type { EventData, LabEventType } from './events.js';
import { Lab } from './lab.js';
import type { LabErrorCode, Outcome } from './outcome.js';
import {
  busBufferMax,
  busHistoryCharsMax,
  busHistoryMax,
  kvKeyCharsMax,
  liveTickMs,
  partitionIdCharsMax,
  processIdCharsMax,
  scenarioNameCharsMax,
  snapshotIdCharsMax,
} from './limits.js';
import { LabMetrics } from './metrics.js';
import { startProxy } from './proxy.js';
import { hasScenario, runScenario, scenarioList } from './scenarios.js';
import { ShiVizRecorder, formatShiViz, parseShiViz } from './shiviz.js';
import {
  BroadcastBody,
  DeliveryBody,
  EventBody,
  FaultsBody,
  KvWriteBody,
  MessageBody,
  PartitionBody,
  ProcessBody,
  type BroadcastBodyT,
  type DeliveryBodyT,
  type EventBodyT,
  type FaultsBodyT,
  type KvWriteBodyT,
  type MessageBodyT,
  type PartitionBodyT,
  type ProcessBodyT,
} from './schemas.js';

export interface StartOptions {
  /** Overrides PORT; 0 picks a free port. */
  port?: number;
  /** Overrides PROXY_PORT; 0 picks a free port; false starts no proxy. */
  proxyPort?: number | false;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Listen address (default 0.0.0.0). */
  host?: string;
}

export interface ClockLabHandle {
  port: number;
  /** undefined when the proxy was not started. */
  proxyPort: number | undefined;
  settings: ClockLabSettings;
  /** The running simulation, for in-process drivers (benchmarks); HTTP clients never need it. */
  lab: Lab;
  /** The lab's HTTP app (its route table is what /openapi.json documents). */
  app: HttpApp;
  close(): Promise<void>;
}

const statusOf: Record<LabErrorCode, number> = { invalid: 400, not_found: 404, conflict: 409 };

function answer<T>(r: Outcome<T>, status = 200): HttpResult {
  return r.ok ? { status, body: r.value } : { status: statusOf[r.error.code], body: { error: r.error.message } };
}

/** Characters as the body schemas count them: Unicode code points. */
function charCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** A value for an error message: quoted, and cut short (errors never echo a whole hostile input). */
function shown(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

function processIdProblem(field: string, id: string): string | undefined {
  if (charCount(id) > processIdCharsMax) return `${field}: must not have more than ${processIdCharsMax} characters`;
  if (!processIdRe.test(id))
    return (
      `${field}: ${shown(id)} is not a valid process id (letters, digits, '_', '.', '-', ` +
      'starting with a letter or digit)'
    );
  return undefined;
}

function processParam(req: HttpRequest<unknown>, name = 'id'): string {
  const id = req.params[name] ?? '';
  const problem = processIdProblem(name, id);
  if (problem) throw new HttpError(400, problem);
  return id;
}

/**
 * A path parameter that names something (a snapshot, a partition, a scenario): bounded before it is looked up
 * or echoed.
 */
function nameParam(req: HttpRequest<unknown>, name: string, field: string, charsMax: number): string {
  const v = req.params[name] ?? '';
  if (v.length === 0) throw new HttpError(400, `${field}: must not be empty`);
  if (charCount(v) > charsMax) throw new HttpError(400, `${field}: must not have more than ${charsMax} characters`);
  return v;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `Bearer name:secret` against VC_API_TOKENS; undefined when allowed, else the 401 message. */
function authProblem(
  tokens: string[] | undefined,
  authorization: string | undefined,
  queryToken?: string | null,
): string | undefined {
  if (!tokens) return undefined;
  let presented: string | undefined;
  if (authorization) {
    const m = /^Bearer\s+(.+)$/i.exec(authorization.trim());
    if (!m) return 'the Authorization header must be "Bearer name:secret"';
    presented = (m[1] as string).trim();
  } else if (queryToken) {
    presented = queryToken;
  }
  if (presented === undefined) return 'missing bearer token (Authorization: Bearer name:secret)';
  let okToken = false;
  for (const t of tokens) if (sameSecret(t, presented)) okToken = true;
  return okToken ? undefined : 'invalid token';
}

export async function startClockLab(opts: StartOptions = {}): Promise<ClockLabHandle> {
  const env = opts.env ?? process.env;
  const logger = opts.logger ?? createLogger('clocklab', env);
  const settings = loadSettings(env);
  const seed = settings.seed;
  const rng = seed === undefined ? liveRng() : new SeededRng(seed);

  let lab: Lab | undefined;
  const bus = new EventBus({
    bufferMax: busBufferMax,
    historyMax: busHistoryMax,
    historyCharsMax: busHistoryCharsMax,
    now: () => Date.now(),
    onPublishDrop: () => metrics.busDrops.inc(),
    onHistoryEvict: () => metrics.historyEvicted.inc(),
  });
  const metrics: LabMetrics = new LabMetrics({
    processes: () => {
      const c = lab?.counts();
      return { alive: c?.alive ?? 0, killed: c?.killed ?? 0 };
    },
    inFlight: () => lab?.counts().inFlight ?? 0,
    held: () => lab?.counts().held ?? 0,
    snapshotsRunning: () => lab?.counts().snapshotsRunning ?? 0,
    kvKeys: () => lab?.counts().kvKeys ?? 0,
    busBuffered: () => bus.buffered,
  });
  const emit = (type: LabEventType, data: EventData): void => {
    metrics.observe(type, data);
    bus.publish(type, data);
  };
  lab = new Lab({ rng, emit, config: settings.lab });
  const theLab = lab;

  // ---- live driver: virtual time follows the real clock
  // (whole milliseconds, the fraction carried over, so virtual times stay integers)
  let last = performance.now();
  const driver = setInterval(() => {
    const elapsed = Math.floor(performance.now() - last);
    if (elapsed <= 0) return;
    last += elapsed;
    try {
      theLab.advance(elapsed);
    } catch (err) {
      logger.error({ err }, 'clock lab simulation step failed');
    }
  }, liveTickMs);

  // ---- HTTP
  // Authentication runs before a body is read or parsed (the adapter's `before` hook): a request
  // without a valid token is a 401 whatever its body, and costs no body buffering.
  const publicPaths = new Set(['/healthz', '/readyz', '/metrics', '/openapi.json', '/docs']);
  const app = new HttpApp({
    name: 'clocklab',
    logger,
    cors: { origins: settings.allowedOrigins ?? '*' },
    onResponse: (method, status) => metrics.httpRequests.inc({ method, status: String(status) }),
    before: (req) => {
      if (publicPaths.has(req.path)) return undefined;
      const problem = authProblem(settings.apiTokens, req.headers['authorization']);
      return problem ? { status: 401, body: { error: problem }, headers: { 'www-authenticate': 'Bearer' } } : undefined;
    },
  });
  healthRoutes(app, metrics.registry, () => ({ ready: true, detail: { processes: theLab.counts().alive } }));

  const routes = (prefix: string): void => {
    app.post<undefined>(
      `${prefix}/processes/:id/snapshot`,
      (req) => {
        const r = theLab.startSnapshot(processParam(req));
        return r.ok
          ? {
              status: 201,
              body: {
                id: r.value.id,
                snapshot_id: r.value.id,
                initiator: r.value.initiator,
                participants: r.value.participants,
              },
            }
          : answer(r);
      },
      { summary: 'Start a Chandy-Lamport snapshot from a process', successStatus: 201 },
    );
    app.get(
      `${prefix}/snapshots/:id`,
      (req) => answer(theLab.snapshot(nameParam(req, 'id', 'snapshot id', snapshotIdCharsMax))),
      { summary: 'A snapshot: recorded process states and channel states' },
    );
    app.get(
      `${prefix}/snapshots/:id/verify`,
      (req) => answer(theLab.verifySnapshot(nameParam(req, 'id', 'snapshot id', snapshotIdCharsMax))),
      { summary: 'Check a snapshot is a consistent cut' },
    );
  };
  routes('/api/v1');
  routes(''); // the spec writes the snapshot endpoints without the prefix; both answer

  app.get('/api/v1/snapshots', () => ({ status: 200, body: { snapshots: theLab.snapshotList() } }), {
    summary: 'List snapshots',
  });
  app.get('/api/v1/processes', () => ({ status: 200, body: { processes: theLab.processes() } }), {
    summary: 'List processes with their clocks',
  });
  app.post<ProcessBodyT>(
    '/api/v1/processes',
    (req) => answer(theLab.spawn(req.body.id, req.body.clock_type ?? 'vector'), 201),
    { summary: 'Add a process', successStatus: 201, body: ProcessBody },
  );
  app.get('/api/v1/processes/:id', (req) => answer(theLab.process(processParam(req))), {
    summary: 'A process and its clocks',
  });
  app.delete(
    '/api/v1/processes/:id',
    (req) => {
      const r = theLab.kill(processParam(req));
      return r.ok ? { status: 204 } : answer(r);
    },
    { summary: 'Kill a process', successStatus: 204 },
  );
  app.post<EventBodyT | undefined>(
    '/api/v1/processes/:id/event',
    (req) => answer(theLab.internalEvent(processParam(req), req.body?.label ?? '')),
    { summary: 'A local event on a process (ticks its clocks)', body: EventBody, bodyOptional: true },
  );

  app.post<MessageBodyT>(
    '/api/v1/messages',
    (req) => answer(theLab.send(req.body.from, req.body.to, req.body.payload, req.body.amount ?? 0), 202),
    { summary: 'Send a message from one process to another', body: MessageBody },
  );
  app.post<BroadcastBodyT>(
    '/api/v1/broadcast',
    (req) => answer(theLab.broadcast(req.body.from, req.body.payload), 202),
    { summary: 'Broadcast a message from a process to every other', body: BroadcastBody },
  );

  app.get('/api/v1/channels', () => ({ status: 200, body: { channels: theLab.channels() } }), {
    summary: 'Channels with their faults and messages in flight',
  });
  app.post<FaultsBodyT>(
    '/api/v1/channels/:from/:to/faults',
    (req) => {
      const b = req.body;
      if (
        b.delay_ms === undefined &&
        b.drop_rate === undefined &&
        b.reorder === undefined &&
        b.reorder_window_ms === undefined
      ) {
        throw new HttpError(400, 'body: give at least one of delay_ms, drop_rate, reorder, reorder_window_ms');
      }
      return answer(theLab.setChannelFaults(processParam(req, 'from'), processParam(req, 'to'), b));
    },
    { summary: "Set a channel's faults (delay, drop, duplicate, reorder)", body: FaultsBody },
  );
  app.post<PartitionBodyT>(
    '/api/v1/partition',
    (req) => answer(theLab.partition(req.body.side_a, req.body.side_b), 201),
    { summary: 'Partition processes into groups', successStatus: 201, body: PartitionBody },
  );
  app.delete(
    '/api/v1/partition/:id',
    (req) => {
      const r = theLab.heal(nameParam(req, 'id', 'partition id', partitionIdCharsMax));
      return r.ok ? { status: 204 } : answer(r);
    },
    { summary: 'Heal a partition', successStatus: 204 },
  );
  app.delete('/api/v1/faults', () => ({ status: 200, body: theLab.clearFaults() }), {
    summary: 'Clear every fault and partition',
  });

  app.get('/api/v1/delivery', () => ({ status: 200, body: { mode: theLab.deliveryMode } }), {
    summary: 'The delivery mode (e.g. causal, FIFO, any order)',
  });
  app.put<DeliveryBodyT>('/api/v1/delivery', (req) => ({ status: 200, body: theLab.setDeliveryMode(req.body.mode) }), {
    summary: 'Set the delivery mode',
    body: DeliveryBody,
  });

  const keyParam = (req: HttpRequest<unknown>): string => {
    const key = req.params['key'] ?? '';
    if (key.length === 0 || charCount(key) > kvKeyCharsMax)
      throw new HttpError(400, `key: must be 1 to ${kvKeyCharsMax} characters`);
    // URL clients resolve these as path steps (GET /api/v1/kv/.. becomes GET /api/v1/): a key
    // nobody could read back through an ordinary client is not accepted.
    if (key === '.' || key === '..')
      throw new HttpError(400, `key: ${shown(key)} is not a valid key (URLs resolve it as a path step)`);
    return key;
  };
  app.get(
    '/api/v1/kv',
    () => ({
      status: 200,
      body: { keys: theLab.kvKeys(), conflict_strategy: theLab.conflictStrategy },
    }),
    { summary: 'The multi-version KV store: keys, siblings and version vectors' },
  );
  app.put<KvWriteBodyT>(
    '/api/v1/kv/:key',
    (req) => answer(theLab.kvWrite(keyParam(req), req.body.value, req.body.writer, req.body.version)),
    { summary: 'Write a key (with the version vector read, for a causal overwrite)', body: KvWriteBody },
  );
  app.get(
    '/api/v1/kv/:key',
    (req) => {
      const reader = req.query.get('reader');
      const problem = reader === null ? undefined : processIdProblem('reader', reader);
      if (problem) throw new HttpError(400, problem);
      return answer(theLab.kvRead(keyParam(req), reader ?? undefined));
    },
    {
      summary: "Read a key's versions (siblings) as a process sees them",
      query: Type.Object({ reader: Type.Optional(Type.String({ description: 'the reading process id' })) }),
    },
  );

  app.get('/api/v1/scenarios', () => ({ status: 200, body: { scenarios: scenarioList() } }), {
    summary: 'List the built-in scenarios',
  });
  app.post<undefined>(
    '/api/v1/scenarios/:name/run',
    (req) => {
      const name = nameParam(req, 'name', 'scenario name', scenarioNameCharsMax);
      if (!hasScenario(name))
        throw new HttpError(
          404,
          `scenario ${name} not found; known: ${scenarioList()
            .map((s) => s.name)
            .join(', ')}`,
        );
      const report = runScenario(theLab, name, emit);
      return { status: 200, body: report };
    },
    { summary: 'Run a scenario step by step and report its outcome' },
  );

  app.get('/api/v1/simulation/state', () => ({ status: 200, body: theLab.state() }), {
    summary: 'The whole lab: processes, channels, snapshots, KV',
  });

  // ShiViz interchange (../shared/specs/interop.md): the run as ShiViz's default log, and a log checked and
  // read back as a run (the page draws it read-only; bodies are capped like every other body).
  const shiviz = new ShiVizRecorder();
  theLab.observe((type, data) => shiviz.onEvent(type, data));
  app.get(
    '/api/v1/export/shiviz',
    () => ({
      status: 200,
      raw: Buffer.from(formatShiViz(shiviz.log())),
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        'content-disposition': 'attachment; filename="clocklab-run.log"',
        'x-shiviz-events-forgotten': String(shiviz.forgotten),
      },
    }),
    { summary: 'The run as a ShiViz log (text)', responseType: 'text/plain' },
  );
  app.post<undefined>(
    '/api/v1/import/shiviz',
    (req) => {
      const parsed = parseShiViz(req.rawBody.toString('utf8'));
      if (!parsed.ok) throw new HttpError(400, `line ${parsed.line}: ${parsed.error}`);
      const hosts = [...new Set(parsed.events.map((e) => e.host))];
      return { status: 200, body: { read_only: true, hosts, events: parsed.events } };
    },
    { summary: 'Read a ShiViz log (text/plain body) back as a read-only run', rawBody: true },
  );
  app.post<undefined>('/api/v1/simulation/reset', () => ({ status: 200, body: theLab.reset(true) }), {
    summary: 'Reset the lab to its initial processes',
  });
  // GET /openapi.json and /docs (public; the proxy passes both through): src/http/openapi.ts.
  serveOpenApi(app, {
    title: 'simlab clock lab',
    version: packageVersion(),
    description: 'Processes with logical clocks, channels, snapshots and a multi-version KV store.',
    securitySchemes: {
      token: { type: 'http', scheme: 'bearer', description: '`name:secret` from VC_API_TOKENS, when it is set' },
    },
    defaultSecurity: ['token'],
    defaultSecurityOptional: true,
  });

  // ---- /ws: origin check (403), auth (401), history replay, fan-out, ping/pong
  const hub = new WsHub<Record<string, never>>();
  const fanOut = (json: string): void => {
    const before = hub.droppedTotal;
    hub.publish(json);
    if (hub.droppedTotal > before) metrics.wsDropped.inc(hub.droppedTotal - before);
  };
  const unsubscribe = bus.subscribe(fanOut);
  app.ws<Record<string, never>>(
    '/ws',
    {
      maxQueueBytes: settings.wsClientQueueBytes,
      upgrade: (info) => {
        if (settings.allowedOrigins) {
          const origin = info.headers['origin'];
          if (!origin)
            return { reject: { status: 403, error: 'an Origin header is required (VC_ALLOWED_ORIGINS is set)' } };
          if (!settings.allowedOrigins.includes(origin))
            return { reject: { status: 403, error: `origin ${origin} is not allowed` } };
        }
        const problem = authProblem(settings.apiTokens, info.headers['authorization'], info.query.get('token'));
        if (problem) return { reject: { status: 401, error: problem } };
        if (hub.size >= settings.wsClientsMax)
          return {
            reject: {
              status: 503,
              error: `${settings.wsClientsMax} WebSocket clients are connected, the maximum (VC_WS_CLIENTS_MAX)`,
            },
          };
        return { data: {} };
      },
      open: (client: WsClient<Record<string, never>>) => {
        metrics.wsClients.inc();
        let dropped = 0;
        for (const json of bus.recent()) if (client.send(json) === 'dropped') dropped++;
        if (dropped > 0) metrics.wsDropped.inc(dropped);
        hub.add(client);
      },
      close: (client) => {
        hub.remove(client);
        metrics.wsClients.dec();
      },
    },
    {
      summary: 'Live lab events (WebSocket; replay, then the live stream)',
      query: Type.Object({
        token: Type.Optional(Type.String({ description: 'name:secret, for browsers that cannot set a header' })),
      }),
    },
  );
  const pinger = setInterval(() => {
    const now = Date.now();
    for (const c of hub.clients) {
      if (now - c.lastPongAt > settings.wsPongDeadlineMs) {
        metrics.wsTimeouts.inc();
        c.terminate();
      } else {
        c.ping();
      }
    }
  }, settings.wsPingIntervalMs);

  const host = opts.host ?? '0.0.0.0';
  let port: number;
  try {
    port = await app.listen(opts.port ?? settings.port, host);
  } catch (err) {
    clearInterval(driver);
    clearInterval(pinger);
    throw err;
  }
  let proxy: { port: number; close(): void } | undefined;
  const proxyPort = opts.proxyPort === undefined ? settings.proxyPort : opts.proxyPort;
  if (proxyPort !== false) {
    try {
      proxy = await startProxy({
        port: proxyPort,
        host,
        target: { host: '127.0.0.1', port },
        logger,
        clientQueueBytes: settings.wsClientQueueBytes,
        pingIntervalMs: settings.wsPingIntervalMs,
        pongDeadlineMs: settings.wsPongDeadlineMs,
        onDropped: (n) => metrics.proxyWsDropped.inc(n),
        onClients: (d) => metrics.proxyWsClients.inc(d),
        onPongTimeout: () => metrics.wsTimeouts.inc(),
        registry: metrics.registry,
      });
    } catch (err) {
      clearInterval(driver);
      clearInterval(pinger);
      app.close();
      throw err;
    }
  }
  logger.info(
    { port, proxyPort: proxy?.port, seed, config: settings.configPath, strategy: settings.lab.conflictStrategy },
    'clock lab listening',
  );

  return {
    port,
    proxyPort: proxy?.port,
    settings,
    lab: theLab,
    app,
    async close() {
      clearInterval(driver);
      clearInterval(pinger);
      unsubscribe();
      proxy?.close();
      app.close();
    },
  };
}
