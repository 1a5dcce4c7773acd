/**
 * `simlab-lincheck --model cas-register|kv|register [--timeout-ms N] [--explain] [--json] FILE...`
 * (also `npm run lincheck -- ...`): checks Jepsen history files and prints one line per file,
 * `FILE verdict MS`, or with --json one JSON object per file. Exit code 0 when every file is
 * linearizable; 1 when one is not, is undecided (unknown) or cannot be opened; 2 on a usage error
 * or a file that is not a history: a line it cannot read (the message names the file and line) or
 * no client operation at all (an empty history proves nothing, so it gets no verdict). The worst
 * file decides. This is plumbing around the pure checker: argument parsing (node:util parseArgs),
 * file reading, the wall clock; no checking logic lives here.
 */
import { readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseArgv } from 'node:util';
import { checkHistory, describeViolation, type CheckResult } from './checker.js';
import { isModelName, modelNames, models, type ModelName } from './models.js';
import { parseHistory } from './parse.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  now(): number;
}

export const usage =
  `usage: simlab-lincheck --model ${modelNames.join('|')} [--timeout-ms N] [--explain] [--json] FILE...\n` +
  '  checks Jepsen histories (EDN op maps, a vector of them, #jepsen.history.Op records, or jepsen.util logs)\n' +
  '  prints "FILE linearizable|not-linearizable|unknown MS" per file\n' +
  '  --model M       the model the history is checked against (required)\n' +
  '  --timeout-ms N  give up on a file after N ms (verdict unknown)\n' +
  '  --explain       say why a history is not linearizable or unknown\n' +
  '  --json          one JSON object per file on stdout: {"file", "verdict", "ms"} or {"file", "error", "exit"}\n' +
  '  --help          this text\n' +
  'exit codes: 0 every file is linearizable; 1 one is not, is unknown or cannot be opened;\n' +
  '  2 a usage error or a file that is not a history (a line it cannot read, named by file and line;\n' +
  '  no client operations). The worst file decides.';

interface CliArgs {
  model: ModelName;
  timeoutMs: number | undefined;
  explain: boolean;
  json: boolean;
  files: string[];
}

/** The command line (node:util parseArgs), or 'help', or a usage error. */
export function parseArgs(argv: readonly string[]): CliArgs | 'help' | string {
  let parsed;
  try {
    parsed = parseArgv({
      args: [...argv],
      options: {
        model: { type: 'string' },
        'timeout-ms': { type: 'string' },
        explain: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  let timeoutMs: number | undefined;
  const text = values['timeout-ms'];
  if (text !== undefined) {
    const ms = Number(text);
    if (text === '' || !Number.isFinite(ms) || ms <= 0)
      return `--timeout-ms takes a positive number of milliseconds, not ${text}`;
    timeoutMs = ms;
  }
  const model = values.model;
  if (model === undefined) return `--model is required (${modelNames.join(', ')})`;
  if (!isModelName(model)) return `unknown model ${model}: use one of ${modelNames.join(', ')}`;
  if (positionals.length === 0) return 'give at least one history file';
  return { model, timeoutMs, explain: values.explain, json: values.json, files: positionals };
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
  /** Reports a file that got no verdict: the message on stderr, with --json also an object on stdout. */
  const fail = (file: string, code: number, message: string, line?: number): void => {
    exitCode = Math.max(exitCode, code);
    io.err(`lincheck: ${message}`);
    if (args.json)
      io.out(JSON.stringify({ file, error: message, ...(line === undefined ? {} : { line }), exit: code }));
  };
  for (const file of args.files) {
    const started = io.now();
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      fail(file, 1, `cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    const parsed = parseHistory(text);
    if (!parsed.ok) {
      fail(file, 2, `${file}:${parsed.line}: cannot parse the history: ${parsed.reason}`, parsed.line);
      continue;
    }
    if (parsed.history.length === 0) {
      const skipped = parsed.skipped > 0 ? ` (${parsed.skipped} non-client operations or other lines skipped)` : '';
      fail(file, 2, `${file}: no client operations${skipped}: nothing to check, so no verdict`);
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
    if (result.verdict !== 'linearizable') exitCode = Math.max(exitCode, 1);
    const explanation =
      result.verdict === 'not-linearizable'
        ? describeViolation(parsed.history, result.violation)
        : result.verdict === 'unknown'
          ? [result.note]
          : [];
    if (args.json) {
      const o: Record<string, unknown> = { file, verdict: result.verdict, ms: Number(ms.toFixed(1)) };
      o['ops'] = parsed.history.length;
      if (args.explain && explanation.length > 0) o['explanation'] = explanation;
      io.out(JSON.stringify(o));
      continue;
    }
    io.out(`${file} ${result.verdict} ${ms.toFixed(1)}`);
    if (args.explain) for (const line of explanation) io.out(`  ${line}`);
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
