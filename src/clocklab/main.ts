/**
 * Standalone entry of the clock lab: `node dist/src/clocklab/main.js` starts the lab and its
 * browser-facing proxy from the environment (PORT, PROXY_PORT, CONFIG_PATH, ...) and prints their URLs.
 */
import { createLogger } from '../util/logger.js';
import { installProcessSafetyNet } from '../util/process-safety.js';
import { startClockLab } from './server.js';
import { shutdownTracing } from '../tracing/tracing.js';

const logger = createLogger('clocklab');
installProcessSafetyNet(logger); // a stray rejection or throw is logged and counted, never fatal
try {
  const lab = await startClockLab({ logger });
  // One JSON line first, like the other services' entries, so scripts and tests can read the ports.
  console.log(
    JSON.stringify({
      service: 'clocklab',
      port: lab.port,
      proxy_port: lab.proxyPort,
      url: `http://localhost:${lab.port}`,
    }),
  );
  console.log(
    `clock lab   http://localhost:${lab.port}  (REST under /api/v1, events on ws://localhost:${lab.port}/ws)`,
  );
  if (lab.proxyPort !== undefined) console.log(`clock lab UI http://localhost:${lab.proxyPort}  (proxy to the lab)`);
  const stop = (): void => {
    // The spans still batched are exported before exit (a no-op when tracing is off).
    void lab
      .close()
      .then(() => shutdownTracing())
      .then(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (err) {
  logger.error({ err }, 'clock lab failed to start');
  console.error(`clock lab failed to start: ${(err as Error).message}`);
  process.exit(1);
}
