/**
 * The one structured logger (pino). LOGGING_LEVEL: debug|info|warn|error (default info).
 * LOGGING_FORMAT: json|console (default console on a TTY, json otherwise).
 */
import { pino, type Logger } from 'pino';

export type { Logger };

const levels = new Set(['debug', 'info', 'warn', 'error']);

export function createLogger(name: string, env: NodeJS.ProcessEnv = process.env): Logger {
  const level = levels.has(env['LOGGING_LEVEL'] ?? '') ? (env['LOGGING_LEVEL'] as string) : 'info';
  const format =
    env['LOGGING_FORMAT'] === 'json' || env['LOGGING_FORMAT'] === 'console'
      ? env['LOGGING_FORMAT']
      : process.stdout.isTTY
        ? 'console'
        : 'json';
  if (format === 'console') {
    return pino({
      name,
      level,
      transport: { target: 'pino-pretty', options: { colorize: process.stdout.isTTY, destination: 2 } },
    });
  }
  return pino({ name, level }, pino.destination(2));
}

/** A logger that discards everything (tests, benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
