/**
 * Runs the feature-flag service alone: `node dist/src/flags/main.js` (FLAGS_PORT, default 8070).
 * Stops cleanly on SIGINT/SIGTERM. Everything else is in server.ts.
 */
import { createLogger } from '../util/logger.js';
import { installProcessSafetyNet } from '../util/process-safety.js';
import { startFlags } from './server.js';
import { shutdownTracing } from '../tracing/tracing.js';

const logger = createLogger('flags');
installProcessSafetyNet(logger); // a stray rejection or throw is logged and counted, never fatal
const server = await startFlags({ logger });
// One JSON line on stdout, like the other services' mains (scripts and benchmarks read the port from it).
console.log(JSON.stringify({ service: 'flags', port: server.port, url: `http://localhost:${server.port}` }));

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    // The spans still batched are exported before exit (shutdownTracing is a no-op when tracing is off).
    server
      .close()
      .then(() => shutdownTracing())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'flags: shutdown failed');
          process.exit(1);
        },
      );
  });
}
