/**
 * The one structured logger (pino). LOGGING_LEVEL: debug|info|warn|error (default info).
 * LOGGING_FORMAT: json|console (default console on a TTY, json otherwise). While a span is active
 * (tracing on), each line carries its `trace_id`, `span_id` and `trace_flags`, so a log line and
 * its trace can be found from each other. It does not decide what is logged.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

const levels = new Set(['debug', 'info', 'warn', 'error']);

/** The active span's ids as log fields; set by src/tracing/tracing.ts when tracing starts. */
let spanFields: (() => Record<string, string> | undefined) | undefined;

/** Tracing registers how a log line finds the active span (util knows no service or tracer). */
export function setLogSpanFields(read: () => Record<string, string> | undefined): void {
  spanFields = read;
}

/**
 * pino's mixin: the active span's ids, or nothing (one test and an empty object per line when
 * tracing is off). pino merges the line's own fields into what this returns, so it is always fresh.
 */
function traceFields(): Record<string, string> {
  return spanFields?.() ?? {};
}

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
