/**
 * `npm run lincheck -- --model cas-register|kv|register [--timeout-ms N] [--explain] FILE...`:
 * checks Jepsen history files and prints one line per file, `FILE verdict MS`. Exit code 0 when
 * every file is linearizable; 1 when one is not, is undecided (unknown) or cannot be opened; 2 on
 * a usage error or a file that is not a history: a line it cannot read (the message names the
 * file and line) or no client operation at all (an empty history proves nothing, so it gets no
 * verdict). The worst file decides. This is plumbing around the pure checker: argument parsing,
 * file reading, the wall clock; no checking logic lives here.
 */
import { readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkHistory, describeViolation, type CheckResult } from './checker.js';
import { isModelName, modelNames, models, type ModelName } from './models.js';
import { parseHistory } from './parse.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  now(): number;
}

export const usage =
  `usage: lincheck --model ${modelNames.join('|')} [--timeout-ms N] [--explain] FILE...\n` +
  '  prints "FILE linearizable|not-linearizable|unknown MS" per file;\n' +
  '  exit 0 when every file is linearizable, 1 when one is not (or is unknown, or cannot be opened),\n' +
  '  2 on a usage error or a file that is not a history (unreadable line, no client operations)';

interface CliArgs {
  model: ModelName;
  timeoutMs: number | undefined;
  explain: boolean;
  files: string[];
}

export function parseArgs(argv: readonly string[]): CliArgs | string {
  let model: string | undefined;
  let timeoutMs: number | undefined;
  let explain = false;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const value = (): string | undefined => inline ?? argv[++i];
    if (flag === '--model') {
      model = value();
    } else if (flag === '--timeout-ms') {
      const text = value();
      const ms = Number(text);
      if (text === undefined || !Number.isFinite(ms) || ms <= 0)
        return `--timeout-ms takes a positive number of milliseconds, not ${String(text)}`;
      timeoutMs = ms;
    } else if (flag === '--explain') {
      explain = true;
    } else if (flag === '--help' || flag === '-h') {
      return 'help';
    } else if (arg.startsWith('--')) {
      return `unknown option ${arg}`;
    } else {
      files.push(arg);
    }
  }
  if (model === undefined) return `--model is required (${modelNames.join(', ')})`;
  if (!isModelName(model)) return `unknown model ${model}: use one of ${modelNames.join(', ')}`;
  if (files.length === 0) return 'give at least one history file';
  return { model, timeoutMs, explain, files };
}

/** Runs the CLI; resolves to the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const args = parseArgs(argv);
  if (args === 'help') {
    io.out(usage);
    return 0;
  }
  if (typeof args === 'string') {
    io.err(`lincheck: ${args}`);
    io.err(usage);
    return 2;
  }
  const model = models[args.model];
  let exitCode = 0;
  const worst = (code: number): void => {
    exitCode = Math.max(exitCode, code);
  };
  for (const file of args.files) {
    const started = io.now();
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      io.err(`lincheck: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
      worst(1);
      continue;
    }
    const parsed = parseHistory(text);
    if (!parsed.ok) {
      io.err(`lincheck: ${file}:${parsed.line}: cannot parse the history: ${parsed.reason}`);
      worst(2);
      continue;
    }
    if (parsed.history.length === 0) {
      const skipped = parsed.skipped > 0 ? ` (${parsed.skipped} non-client operations or other lines skipped)` : '';
      io.err(`lincheck: ${file}: no client operations${skipped}: nothing to check, so no verdict`);
      worst(2);
      continue;
    }
    if (args.explain && parsed.skipped > 0) {
      io.err(
        `lincheck: note: ${file}: ${parsed.skipped} non-client operations (such as :nemesis) ` +
          'or other log lines skipped',
      );
    }
    const budget = args.timeoutMs === undefined ? undefined : { now: io.now, deadline: started + args.timeoutMs };
    const result: CheckResult = checkHistory(parsed.history, model, { budget });
    const ms = io.now() - started;
    io.out(`${file} ${result.verdict} ${ms.toFixed(1)}`);
    if (result.verdict !== 'linearizable') worst(1);
    if (args.explain) {
      if (result.verdict === 'not-linearizable') {
        for (const line of describeViolation(parsed.history, result.violation)) io.out(`  ${line}`);
      } else if (result.verdict === 'unknown') {
        io.out(`  ${result.note}`);
      }
    }
  }
  return exitCode;
}

function isMain(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  const io: CliIo = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    now: () => performance.now(),
  };
  process.exitCode = await runCli(process.argv.slice(2), io);
}
