/**
 * `make run`: starts every simlab service in this one process and prints their URLs.
 * Replication simulator on REPLSIM_PORT (8090), feature flags on FLAGS_PORT (8070), clock lab on
 * PORT (8080) with its browser-facing proxy on PROXY_PORT (3001). Each can also run alone
 * (dist/src/<service>/main.js). A service whose module is missing or fails to start is reported
 * and the others keep running.
 */
import { createLogger } from './util/logger.js';
import { initTracing, shutdownTracing } from './tracing/tracing.js';
import { startProfiler } from './profiler/index.js';
import { installProcessSafetyNet } from './util/process-safety.js';

interface Running {
  name: string;
  close: () => Promise<void> | void;
}

const logger = createLogger('simlab');
// First, before anything can fail asynchronously: a stray rejection or throw anywhere is logged and
// counted (process_unhandled_rejections_total), never fatal to the three services in this process.
installProcessSafetyNet(logger);
const env = process.env;
const host = env['HOST'] ?? '0.0.0.0';
const running: Running[] = [];
// Spans started outside any request (the simulator's fabric deliveries) belong to the simulator;
// each service's requests use its own tracer and service.name (src/http/app.ts listen()).
await initTracing('simlab-replsim');
const profilerAddr = env['PROFILER_ADDR'];
if (profilerAddr) {
  try {
    const profiler = await startProfiler(profilerAddr, logger);
    running.push({ name: 'profiler', close: profiler.close });
    console.log(
      `${'profiler'.padEnd(22)} http://${profilerAddr.replace(/:0$/, `:${profiler.port}`)}/debug/pprof (loopback only)`,
    );
  } catch (err) {
    logger.error({ err }, 'profiler refused to start');
    process.exit(1);
  }
}

type Starter = (
  opts: Record<string, unknown>,
) => Promise<{ port: number; proxyPort?: number; close: () => Promise<void> | void }>;

async function tryStart(
  name: string,
  modulePath: string,
  exportName: string,
  opts: Record<string, unknown>,
  describe: (r: { port: number; proxyPort?: number }) => string,
): Promise<void> {
  try {
    const mod = (await import(modulePath)) as Record<string, Starter>;
    const start = mod[exportName];
    if (!start) throw new Error(`${modulePath} has no ${exportName}`);
    const r = await start(opts);
    running.push({ name, close: r.close });
    console.log(`${name.padEnd(22)} ${describe(r)}`);
  } catch (err) {
    logger.error({ err }, `${name} did not start`);
  }
}

await tryStart(
  'replication simulator',
  './replication/server.js',
  'startReplicationSim',
  { port: Number(env['REPLSIM_PORT'] ?? 8090), host, logger: logger.child({ service: 'replsim' }) },
  (r) =>
    `http://localhost:${r.port}/api/v1  (page: http://localhost:${r.port}/, ws://localhost:${r.port}/ws, /metrics)`,
);
await tryStart(
  'feature flags',
  './flags/server.js',
  'startFlags',
  { port: Number(env['FLAGS_PORT'] ?? 8070), host, env, logger: logger.child({ service: 'flags' }) },
  (r) => `http://localhost:${r.port}/api/v1  (page: http://localhost:${r.port}/, login: POST /auth/login)`,
);
await tryStart(
  'clock lab',
  './clocklab/server.js',
  'startClockLab',
  {
    port: Number(env['PORT'] ?? 8080),
    proxyPort: Number(env['PROXY_PORT'] ?? 3001),
    host,
    env,
    logger: logger.child({ service: 'clocklab' }),
  },
  (r) => `http://localhost:${r.port}/api/v1  (browser proxy and page: http://localhost:${r.proxyPort ?? 3001}/)`,
);

if (running.length === 0) {
  logger.error('no service started');
  process.exit(1);
}

const stop = async (): Promise<void> => {
  for (const r of running) await r.close();
  await shutdownTracing();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
