/**
 * Standalone entry of the replication simulator: `node dist/src/replication/main.js`.
 * REPLSIM_PORT (default 8090), HOST (default 0.0.0.0).
 */
import { createLogger } from '../util/logger.js';
import { startReplicationSim } from './server.js';
import { initTracing, shutdownTracing } from '../tracing/tracing.js';

const logger = createLogger('replsim');
await initTracing('simlab-replsim');
const port = Number(process.env['REPLSIM_PORT'] ?? 8090);
const sim = await startReplicationSim({ port, host: process.env['HOST'] ?? '0.0.0.0', logger });
console.log(JSON.stringify({ service: 'replsim', port: sim.port, url: `http://localhost:${sim.port}` }));
const stop = async () => {
  await sim.close();
  await shutdownTracing();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
