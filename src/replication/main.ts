/**
 * Standalone entry of the replication simulator: `node dist/src/replication/main.js`.
 * REPLSIM_PORT (default 8090), HOST (default 0.0.0.0).
 */
import { createLogger } from '../util/logger.js';
import { installProcessSafetyNet } from '../util/process-safety.js';
import { startReplicationSim } from './server.js';
import { initTracing, shutdownTracing } from '../tracing/tracing.js';
import { startProfiler } from '../profiler/index.js';

const logger = createLogger('replsim');
installProcessSafetyNet(logger); // a stray rejection or throw is logged and counted, never fatal
await initTracing('simlab-replsim');
// PROFILER_ADDR: a loopback-only profiling server; a non-loopback address refuses to start.
const profilerAddr = process.env['PROFILER_ADDR'];
let profiler: { port: number; close: () => Promise<void> | void } | undefined;
try {
  profiler = profilerAddr ? await startProfiler(profilerAddr, logger) : undefined;
} catch (err) {
  logger.error({ err }, 'profiler refused to start');
  process.exit(1);
}
const port = Number(process.env['REPLSIM_PORT'] ?? 8090);
const sim = await startReplicationSim({ port, host: process.env['HOST'] ?? '0.0.0.0', logger });
console.log(
  JSON.stringify({
    service: 'replsim',
    port: sim.port,
    url: `http://localhost:${sim.port}`,
    ...(profiler ? { profiler_port: profiler.port } : {}),
  }),
);
const stop = async () => {
  await sim.close();
  await profiler?.close();
  await shutdownTracing();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
