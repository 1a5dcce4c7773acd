/**
 * Assembles the feature-flag service: store (SQLite or PostgreSQL), auth, change feed → replica →
 * SSE hub, metrics, and the HTTP routes on the shared uWebSockets.js adapter. `startFlags` returns
 * the bound port and a `close()` that stops everything and closes the database, so a restart on the
 * same file works. Configuration comes from `env` (FLAGS_PORT, FLAGS_DB, DATABASE_URL, FLAGS_JWT_SECRET,
 * FLAGS_ADMIN_EMAIL, FLAGS_ADMIN_PASSWORD and the limits below); nothing is read from process.env here.
 */
import { readFileSync } from 'node:fs';
import { HttpApp, healthRoutes } from '../http/index.js';
import { builtPageDir, serveBuiltPage } from '../http/static.js';
import { packageVersion, serveOpenApi } from '../http/openapi.js';
import { createLogger, type Logger } from '../util/logger.js';
import { registerAuthRoutes } from './api/auth-routes.js';
import type { FlagsContext } from './api/context.js';
import { registerManagementRoutes } from './api/management-routes.js';
import { createMetrics } from './api/metrics.js';
import { registerSdkRoutes } from './api/sdk-routes.js';
import { registerOfrepRoutes } from './api/ofrep-routes.js';
import { LdRelay } from './ld/relay.js';
import { registerLdRoutes } from './ld/routes.js';
import { auditRecordsPerProjectMaxDefault, envBytesMin, sseClientBufferBytesDefault } from './limits.js';
import { defaultAccountRateLimit, defaultLoginRateLimit, type RateLimitConfig } from './auth/rate-limit.js';
import { AuthService } from './auth/service.js';
import { ChangeFeed } from './store/feed.js';
import { openStoreFromEnv } from './store/index.js';
import type { FlagStore } from './store/types.js';
import { defaultStreamLimits, StreamHub, type StreamLimits } from './stream/hub.js';
import { Replica } from './stream/replica.js';

export const flagsPortDefault = 8070;

export interface StartFlagsOptions {
  /** Port to listen on; 0 picks a free one. Default: FLAGS_PORT, else 8070. */
  port?: number;
  host?: string;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
  /** Wall clock in ms; injected so tests can move time (token expiry, rate limits). */
  now?: () => number;
  /** The built console page (default dist/web/flags of this checkout, from `make build`). */
  webDir?: string;
}

export interface FlagsServer {
  port: number;
  store: FlagStore;
  /** The HTTP app (its route table is what /openapi.json documents). */
  app: HttpApp;
  close(): Promise<void>;
}

function intFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min)
    throw new Error(`${name} must be an integer >= ${min} (got ${JSON.stringify(raw)})`);
  return n;
}

/**
 * Limits from the environment:
 * FLAGS_LOGIN_ATTEMPTS_PER_MINUTE (10 per address), FLAGS_LOGIN_ATTEMPTS_PER_ACCOUNT (20 per minute),
 * FLAGS_SSE_HEARTBEAT_MS (15000), FLAGS_SSE_DRAIN_TIMEOUT_MS (10000), FLAGS_SSE_CLIENTS_MAX (20000),
 * FLAGS_SSE_REPLAY_LOG_MAX (4096 changes), FLAGS_SSE_REPLAY_LOG_BYTES (32 MiB), FLAGS_SSE_CLIENT_BUFFER_BYTES (524288),
 * FLAGS_AUDIT_MAX_PER_PROJECT (100000).
 */
function limitsFromEnv(env: NodeJS.ProcessEnv): {
  login: RateLimitConfig;
  account: RateLimitConfig;
  stream: StreamLimits;
  sseBufferBytes: number;
  auditMax: number;
} {
  return {
    login: {
      ...defaultLoginRateLimit,
      attemptsMax: intFromEnv(env, 'FLAGS_LOGIN_ATTEMPTS_PER_MINUTE', defaultLoginRateLimit.attemptsMax, 1),
    },
    account: {
      ...defaultAccountRateLimit,
      attemptsMax: intFromEnv(env, 'FLAGS_LOGIN_ATTEMPTS_PER_ACCOUNT', defaultAccountRateLimit.attemptsMax, 1),
    },
    stream: {
      heartbeatMs: intFromEnv(env, 'FLAGS_SSE_HEARTBEAT_MS', defaultStreamLimits.heartbeatMs),
      drainTimeoutMs: intFromEnv(env, 'FLAGS_SSE_DRAIN_TIMEOUT_MS', defaultStreamLimits.drainTimeoutMs, 1),
      replayBytesMax: intFromEnv(env, 'FLAGS_SSE_CLIENT_BUFFER_BYTES', sseClientBufferBytesDefault, envBytesMin),
      clientsMax: intFromEnv(env, 'FLAGS_SSE_CLIENTS_MAX', defaultStreamLimits.clientsMax, 1),
      replayLogEntriesMax: intFromEnv(env, 'FLAGS_SSE_REPLAY_LOG_MAX', defaultStreamLimits.replayLogEntriesMax, 1),
      replayLogBytesMax: intFromEnv(
        env,
        'FLAGS_SSE_REPLAY_LOG_BYTES',
        defaultStreamLimits.replayLogBytesMax,
        envBytesMin,
      ),
    },
    sseBufferBytes: intFromEnv(env, 'FLAGS_SSE_CLIENT_BUFFER_BYTES', sseClientBufferBytesDefault, envBytesMin),
    auditMax: intFromEnv(env, 'FLAGS_AUDIT_MAX_PER_PROJECT', auditRecordsPerProjectMaxDefault, 1),
  };
}

/**
 * The kernel's share of a stalled stream client is outside the process's reach (uWebSockets.js
 * exposes no socket options): only `net.ipv4.tcp_notsent_lowat` bounds it, to about that many
 * bytes per socket instead of the send buffer's maximum (about 3.4 MiB measured with Linux
 * defaults). Said once at start-up when it is not set that low; Linux only, silent elsewhere.
 */
export function warnIfKernelBuffersUnbounded(logger: Logger, sseBufferBytes: number): void {
  let lowat: number;
  try {
    lowat = Number(readFileSync('/proc/sys/net/ipv4/tcp_notsent_lowat', 'utf8').trim());
  } catch {
    return;
  }
  if (Number.isFinite(lowat) && lowat > sseBufferBytes) {
    logger.warn(
      { tcpNotsentLowat: lowat, sseClientBufferBytes: sseBufferBytes },
      'flags: the kernel may hold up to its send buffer (net.ipv4.tcp_wmem max) for each ' +
        'stream client that stops reading, until FLAGS_SSE_DRAIN_TIMEOUT_MS cuts it off; ' +
        `sysctl net.ipv4.tcp_notsent_lowat=${sseBufferBytes} bounds it to the slow-client limit`,
    );
  }
}

export async function startFlags(opts: StartFlagsOptions = {}): Promise<FlagsServer> {
  const env = opts.env ?? process.env;
  const logger = opts.logger ?? createLogger('flags', env);
  const now = opts.now ?? Date.now;
  const limits = limitsFromEnv(env);
  const port = opts.port ?? intFromEnv(env, 'FLAGS_PORT', flagsPortDefault);

  const store = await openStoreFromEnv(env, logger, { auditRecordsPerProjectMax: limits.auditMax });
  let feed: ChangeFeed | undefined;
  let hub: StreamHub | undefined;
  let relay: LdRelay | undefined;
  let app: HttpApp | undefined;
  try {
    const auth = await AuthService.start({
      store,
      env,
      logger,
      now,
      loginRateLimit: limits.login,
      accountRateLimit: limits.account,
    });
    const from = await store.latestSeq();
    const replica = new Replica((p, e) => store.snapshot(p, e), from);
    const theHub = new StreamHub(
      replica,
      limits.stream,
      () => store.latestSeq(),
      (what, err) => {
        logger.error({ err }, `flags: ${what}: it cannot be serialised`);
      },
    );
    hub = theHub;
    // The LaunchDarkly relay's stream clients (/ld/all), beside the SDK hub's.
    const ldRelay = new LdRelay(limits.stream);
    relay = ldRelay;
    let feedHealthy = true;
    const theFeed = new ChangeFeed(store, {
      from,
      onChange: (c) => {
        feedHealthy = true;
        const affected = replica.apply(c);
        theHub.publish(c, affected);
        ldRelay.publish(affected);
      },
      onError: (err) => {
        feedHealthy = false;
        logger.error({ err }, 'flags: reading the change feed failed; retrying on the next notification or poll');
      },
      pollMs: store.kind === 'postgres' ? 2000 : 0,
    });
    feed = theFeed;
    const metrics = createMetrics({ store, hub: theHub, replica, auth, feedPosition: () => theFeed.position });
    const ctx: FlagsContext = {
      store,
      auth,
      replica,
      hub: theHub,
      metrics,
      logger,
      now,
      settled: () => theFeed.caughtUp(),
    };

    const theApp = new HttpApp({
      name: 'flags',
      logger,
      cors: { origins: '*' },
      onResponse: metrics.countResponse,
    });
    app = theApp;
    healthRoutes(theApp, metrics.registry, () => ({
      ready: feedHealthy,
      detail: { store: store.kind, feedPosition: theFeed.position },
    }));
    // GET /openapi.json and /docs: generated from the route table when first asked (src/http/openapi.ts).
    serveOpenApi(theApp, {
      title: 'simlab feature flags',
      version: packageVersion(),
      description: 'Flag management (JWT), SDK evaluation and streaming (SDK key), OFREP and LaunchDarkly relay.',
      securitySchemes: {
        bearerJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'from POST /auth/login' },
        sdkKey: {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: "the environment's SDK key, raw or as `Bearer <key>`",
        },
      },
    });
    registerAuthRoutes(theApp, ctx);
    registerManagementRoutes(theApp, ctx);
    registerSdkRoutes(theApp, ctx, limits.sseBufferBytes);
    registerOfrepRoutes(theApp, ctx);
    registerLdRoutes(theApp, ctx, ldRelay, limits.sseBufferBytes);
    // The flags console at GET / (src/http/static.ts; 503 naming `make build` until it is built).
    serveBuiltPage(theApp, { dir: opts.webDir ?? builtPageDir('flags'), page: 'flags' });
    const bound = await theApp.listen(port, opts.host ?? '0.0.0.0');
    logger.info({ port: bound, store: store.kind }, 'flags: listening');
    warnIfKernelBuffersUnbounded(logger, limits.sseBufferBytes);

    let closed = false;
    return {
      port: bound,
      store,
      app: theApp,
      async close() {
        if (closed) return;
        closed = true;
        theFeed.stop();
        theHub.close();
        ldRelay.close();
        theApp.close();
        await store.close();
      },
    };
  } catch (err) {
    feed?.stop();
    hub?.close();
    relay?.close();
    app?.close();
    await store.close().catch(() => undefined);
    throw err;
  }
}
