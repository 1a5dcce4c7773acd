/**
 * Arguments of `simlab-swarm submit | worker | report` (the distributed mode): parsed with
 * util.parseArgs, checked against the limits, handed to commands.ts. The swarm's main command line
 * (../cli.ts) loads this module only for these three words, and it loads commands.ts (BullMQ, the
 * swarms) only once the arguments are good, so neither `make sim` nor a usage error pays for them.
 * Exit codes: 0 done as asked; 1 (report) a seed failed, its replay command printed; 2 a usage
 * error or Redis unreachable; 3 (report) no seed failed but seeds are not all done (pending or given up).
 */
import { parseArgs } from 'node:util';
import {
  distributedLockMsDefault,
  distributedLockMsMax,
  distributedLockMsMin,
  distributedRangeSeedsDefault,
  distributedRangeSeedsMax,
  distributedReportWaitSecsMax,
  distributedStalledCheckMsDefault,
} from '../../limits.js';
import { hostname } from 'node:os';
import type { Io } from './commands.js';
import { exitUsage } from './report.js';
import { distributedStrategies, isDistributedStrategy, parseSeedWindow } from './ranges.js';

export const distributedCommands = ['submit', 'worker', 'report'] as const;
export type DistributedCommand = (typeof distributedCommands)[number];

export function isDistributedCommand(s: string | undefined): s is DistributedCommand {
  return (distributedCommands as readonly string[]).includes(s ?? '');
}

/** Queue names: BullMQ refuses ':' in them, and they become part of Redis keys. */
const queueNamePattern = /^[A-Za-z0-9_.-]{1,64}$/;
const queueDefault = 'swarm';

export function distributedUsageText(): string {
  return (
    'distributed mode (BullMQ over Redis; any number of workers on any machines):\n' +
    '  simlab-swarm submit --redis URL --seeds A..B [--strategy S] [--range-size N] [--queue Q] [--json]\n' +
    `      queue seeds A..B (inclusive) as ranges of N seeds (default ${distributedRangeSeedsDefault}, ` +
    `at most ${distributedRangeSeedsMax}); S: ${distributedStrategies.join(' | ')} (default raft).\n` +
    '      Seeds already recorded on the queue are not queued again: re-run submit to retry anything not done.\n' +
    '  simlab-swarm worker --redis URL [--queue Q] [--exit-when-idle] [--verbose] [--name W]\n' +
    `      [--lock-ms MS (default ${distributedLockMsDefault})]` +
    ` [--stalled-check-ms MS (default ${distributedStalledCheckMsDefault})]\n` +
    '      take ranges and run each seed (one range at a time: start one worker per core); SIGINT/SIGTERM\n' +
    '      finish the range in hand and stop. A range whose worker died is retried after its lock expires,\n' +
    '      running only its seeds not recorded yet.\n' +
    '  simlab-swarm report --redis URL [--queue Q] [--json] [--wait SECS]\n' +
    '      seeds done, seeds/s, failing seeds with the command that replays each locally;\n' +
    '      --json: {seeds_total, seeds_done, seeds_per_s, failures: [{seed, strategy, replay}], queue,\n' +
    '      seeds_failed, ranges_pending, ranges_failed}; --wait: first wait up to SECS for the queue to empty.\n' +
    `  --queue Q  campaign name (default ${queueDefault}; letters, digits, . _ -)\n` +
    '  exit codes: 0 done as asked (report: every seed done and passed); 1 report: a seed failed;\n' +
    '    2 a usage error or Redis unreachable; 3 report: no failure, but seeds not all done\n'
  );
}

type ParseOutcome<T> = { ok: true; value: T } | { ok: false; error: string };

function intArg(name: string, v: string | undefined, dflt: number, min: number, max: number): ParseOutcome<number> {
  if (v === undefined) return { ok: true, value: dflt };
  if (!/^\d+$/.test(v))
    return { ok: false, error: `--${name} must be a non-negative integer, got ${JSON.stringify(v)}` };
  const n = Number(v);
  if (n < min || n > max) return { ok: false, error: `--${name} must be between ${min} and ${max}, got ${n}` };
  return { ok: true, value: n };
}

function redisUrlArg(v: string | undefined): ParseOutcome<string> {
  if (v === undefined) return { ok: false, error: '--redis URL is required (redis://host:port[/db])' };
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return { ok: false, error: `--redis must be a URL like redis://127.0.0.1:6379, got ${JSON.stringify(v)}` };
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    return { ok: false, error: `--redis must be a redis:// or rediss:// URL, got ${JSON.stringify(v)}` };
  }
  return { ok: true, value: v };
}

function queueArg(v: string | undefined): ParseOutcome<string> {
  const q = v ?? queueDefault;
  return queueNamePattern.test(q)
    ? { ok: true, value: q }
    : { ok: false, error: `--queue must be 1-64 letters, digits, '.', '_' or '-', got ${JSON.stringify(q)}` };
}

/** Runs one distributed subcommand with its arguments (after the word); resolves to the exit code. */
export async function runDistributedCli(command: DistributedCommand, argv: string[], io: Io): Promise<number> {
  const usage = (msg: string): number => {
    io.err(`${msg}\n${distributedUsageText()}`);
    return exitUsage;
  };
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: argv,
      options: {
        redis: { type: 'string' },
        queue: { type: 'string' },
        seeds: { type: 'string' },
        strategy: { type: 'string' },
        'range-size': { type: 'string' },
        json: { type: 'boolean', default: false },
        wait: { type: 'string' },
        'exit-when-idle': { type: 'boolean', default: false },
        verbose: { type: 'boolean', default: false },
        name: { type: 'string' },
        'lock-ms': { type: 'string' },
        'stalled-check-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    return usage((err as Error).message);
  }
  if (values.help === true) {
    io.out(distributedUsageText());
    return 0;
  }
  // Flags that belong to another subcommand are usage errors, not silently ignored.
  const allowed: Record<DistributedCommand, string[]> = {
    submit: ['redis', 'queue', 'seeds', 'strategy', 'range-size', 'json'],
    worker: ['redis', 'queue', 'exit-when-idle', 'verbose', 'name', 'lock-ms', 'stalled-check-ms'],
    report: ['redis', 'queue', 'json', 'wait'],
  };
  for (const [k, v] of Object.entries(values)) {
    if (k === 'help' || v === undefined || v === false) continue;
    if (!allowed[command].includes(k)) return usage(`--${k} is not an option of ${command}`);
  }
  const redis = redisUrlArg(values.redis as string | undefined);
  if (!redis.ok) return usage(redis.error);
  const queue = queueArg(values.queue as string | undefined);
  if (!queue.ok) return usage(queue.error);
  const target = { redisUrl: redis.value, queue: queue.value };

  switch (command) {
    case 'submit': {
      if (values.seeds === undefined) return usage('--seeds A..B is required');
      const window = parseSeedWindow(values.seeds as string);
      if (!window.ok) return usage(window.error);
      const strategy = (values.strategy as string | undefined) ?? 'raft';
      if (!isDistributedStrategy(strategy)) {
        return usage(`--strategy must be one of ${distributedStrategies.join(', ')} (got ${strategy})`);
      }
      const size = intArg(
        'range-size',
        values['range-size'] as string | undefined,
        distributedRangeSeedsDefault,
        1,
        distributedRangeSeedsMax,
      );
      if (!size.ok) return usage(size.error);
      const { submit } = await import('./commands.js');
      return submit({ ...target, strategy, ...window.value, rangeSeeds: size.value, json: values.json === true }, io);
    }
    case 'worker': {
      const lockMs = intArg(
        'lock-ms',
        values['lock-ms'] as string | undefined,
        distributedLockMsDefault,
        distributedLockMsMin,
        distributedLockMsMax,
      );
      if (!lockMs.ok) return usage(lockMs.error);
      const stalled = intArg(
        'stalled-check-ms',
        values['stalled-check-ms'] as string | undefined,
        distributedStalledCheckMsDefault,
        distributedLockMsMin,
        distributedLockMsMax,
      );
      if (!stalled.ok) return usage(stalled.error);
      const { work } = await import('./commands.js');
      return work(
        {
          ...target,
          lockMs: lockMs.value,
          stalledCheckMs: stalled.value,
          exitWhenIdle: values['exit-when-idle'] === true,
          verbose: values.verbose === true,
          // Host and pid: shown in BullMQ's job records as the worker that took a range.
          name: (values.name as string | undefined) ?? `${hostname()}:${process.pid}`,
        },
        io,
      );
    }
    case 'report': {
      const wait =
        values.wait === undefined ? null : intArg('wait', values.wait as string, 0, 0, distributedReportWaitSecsMax);
      if (wait !== null && !wait.ok) return usage(wait.error);
      const { report } = await import('./commands.js');
      return report({ ...target, json: values.json === true, waitSecs: wait === null ? null : wait.value }, io);
    }
  }
}
