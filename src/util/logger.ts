/**
 * The one structured logger (pino). LOGGING_LEVEL: debug|info|warn|error (default info).
 * LOGGING_FORMAT: json|console (default console on a TTY, json otherwise). While a span is active
 * (tracing on), each line carries its `trace_id`, `span_id` and `trace_flags`, so a log line and
 * its trace can be found from each other. It does not decide what is logged.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { traceFields } from './log-span-fields.js';

export { setLogSpanFields } from './log-span-fields.js';

export type { Logger };

const levels = new Set(['debug', 'info', 'warn', 'error']);

/** `destination` replaces stderr (tests read the lines; json format only). */
export function createLogger(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
  destination?: DestinationStream,
): Logger {
  const level = levels.has(env['LOGGING_LEVEL'] ?? '') ? (env['LOGGING_LEVEL'] as string) : 'info';
  const asked = env['LOGGING_FORMAT'];
  const format =
    destination !== undefined
      ? 'json'
      : asked === 'json' || asked === 'console'
        ? asked
        : process.stdout.isTTY
          ? 'console'
          : 'json';
  if (format === 'console') {
    return pino({
      name,
      level,
      mixin: traceFields,
      transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY, destination: 2 } },
    });
  }
  return pino({ name, level, mixin: traceFields }, destination ?? pino.destination(2));
}

/** A logger that discards everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
