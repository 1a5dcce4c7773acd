/**
 * `simlab-lincheck --model cas-register|kv|register [--timeout-ms N] [--jobs N] [--explain] [--json] FILE...`
 * (also `npm run lincheck -- ...`): checks Jepsen history files and prints one line per file,
 * `FILE verdict MS`, or with --json one JSON object per file. Exit code 0 when every file is
 * linearizable; 1 when one is not, is undecided (unknown) or cannot be opened; 2 on a usage error
 * or a file that is not a history: a line it cannot read (the message names the file and line) or
 * no client operation at all (an empty history proves nothing, so it gets no verdict). The worst
 * file decides. Many large files are spread over worker threads (this same module, started again
 * as a worker), the output staying in the order given. This is plumbing around the pure checker:
 * argument parsing (node:util parseArgs), file reading, threads, the wall clock; no checking logic.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseArgv } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { checkHistory, describeViolation, type CheckResult } from './checker.js';
import { isModelName, modelNames, models, type ModelName } from './models.js';
import { parseHistory } from './parse.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  now(): number;
}

/** Most threads `--jobs` may ask for. */
export const lincheckCliJobsMax = 16;
/**
 * Below this much history text in all, the files are checked on the main thread alone: a worker
 * thread's start-up and its own JIT warm-up cost more than they save on small files.
 */
export const lincheckCliParallelBytesMin = 2 * 1024 * 1024;

export const usage =
  `usage: simlab-lincheck --model ${modelNames.join('|')} [--timeout-ms N] [--jobs N] [--explain] [--json] FILE...\n` +
  '  checks Jepsen histories (EDN op maps, a vector of them, #jepsen.history.Op records, or jepsen.util logs)\n' +
  '  prints "FILE linearizable|not-linearizable|unknown MS" per file\n' +
  '  --model M       the model the history is checked against (required)\n' +
  '  --timeout-ms N  give up on a file after N ms (verdict unknown)\n' +
  `  --jobs N        threads checking files side by side (1-${lincheckCliJobsMax}; default: one per core\n` +
  `                  once the files add up to ${lincheckCliParallelBytesMin / (1024 * 1024)} MiB, else 1)\n` +
  '  --explain       say why a history is not linearizable or unknown\n' +
  '  --json          one JSON object per file on stdout: {"file", "verdict", "ms"} or {"file", "error", "exit"}\n' +
  '  --help          this text\n' +
  'exit codes: 0 every file is linearizable; 1 one is not, is unknown or cannot be opened;\n' +
  '  2 a usage error or a file that is not a history (a line it cannot read, named by file and line;\n' +
  '  no client operations). The worst file decides.';

interface CliArgs {
  model: ModelName;
  timeoutMs: number | undefined;
  /** Threads asked for with --jobs; undefined: decided from the files' size. */
  jobs: number | undefined;
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
        jobs: { type: 'string' },
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
  let jobs: number | undefined;
  const jobsText = values.jobs;
  if (jobsText !== undefined) {
    const n = Number(jobsText);
    if (!/^\d+$/.test(jobsText) || n < 1 || n > lincheckCliJobsMax)
      return `--jobs takes a whole number of threads from 1 to ${lincheckCliJobsMax}, not ${jobsText}`;
    jobs = n;
  }
  const model = values.model;
  if (model === undefined) return `--model is required (${modelNames.join(', ')})`;
  if (!isModelName(model)) return `unknown model ${model}: use one of ${modelNames.join(', ')}`;
  if (positionals.length === 0) return 'give at least one history file';
  return { model, timeoutMs, jobs, explain: values.explain, json: values.json, files: positionals };
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
  const files = args.files;
  const threads = threadsFor(args);
  if (threads <= 1) {
    let exitCode = 0;
    for (const file of files) exitCode = Math.max(exitCode, emit(checkFile(file, args, io.now), io));
    return exitCode;
  }
  return runParallel(args, threads, io);
}

/** What one file gave: its stdout and stderr lines, and its exit code. */
interface FileReport {
  readonly out: string[];
  readonly err: string[];
  readonly exit: number;
}

function emit(report: FileReport, io: CliIo): number {
  for (const line of report.err) io.err(line);
  for (const line of report.out) io.out(line);
  return report.exit;
}

/** Reads, parses and checks one file. */
function checkFile(file: string, args: CliArgs, now: () => number): FileReport {
  const out: string[] = [];
  const err: string[] = [];
  const model = models[args.model];
  /** A file that got no verdict: the message on stderr, with --json also an object on stdout. */
  const fail = (code: number, message: string, line?: number): FileReport => {
    err.push(`lincheck: ${message}`);
    if (args.json)
      out.push(JSON.stringify({ file, error: message, ...(line === undefined ? {} : { line }), exit: code }));
    return { out, err, exit: code };
  };
  const started = now();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return fail(1, `cannot read ${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const parsed = parseHistory(text);
  if (!parsed.ok) return fail(2, `${file}:${parsed.line}: cannot parse the history: ${parsed.reason}`, parsed.line);
  if (parsed.history.length === 0) {
    const skipped = parsed.skipped > 0 ? ` (${parsed.skipped} non-client operations or other lines skipped)` : '';
    return fail(2, `${file}: no client operations${skipped}: nothing to check, so no verdict`);
  }
  if (args.explain && parsed.skipped > 0) {
    err.push(
      `lincheck: note: ${file}: ${parsed.skipped} non-client operations (such as :nemesis) ` +
        'or other log lines skipped',
    );
  }
  const budget = args.timeoutMs === undefined ? undefined : { now, deadline: started + args.timeoutMs };
  // Without --explain only the verdict is printed: no need to confirm the violation minimal.
  const violation = args.explain ? 'minimal' : 'verdict';
  const result: CheckResult = checkHistory(parsed.history, model, { budget, violation });
  const ms = now() - started;
  const exit = result.verdict === 'linearizable' ? 0 : 1;
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
    out.push(JSON.stringify(o));
    return { out, err, exit };
  }
  out.push(`${file} ${result.verdict} ${ms.toFixed(1)}`);
  if (args.explain) for (const line of explanation) out.push(`  ${line}`);
  return { out, err, exit };
}

/** Threads for this run: --jobs, else one per core once the files are large enough to repay them. */
function threadsFor(args: CliArgs): number {
  const cap = Math.min(args.files.length, lincheckCliJobsMax);
  if (args.jobs !== undefined) return Math.min(args.jobs, cap);
  if (args.files.length < 2) return 1;
  let bytes = 0;
  for (const file of args.files) {
    try {
      bytes += statSync(file).size;
    } catch {
      // unreadable: reported when its turn comes
    }
  }
  return bytes >= lincheckCliParallelBytesMin ? Math.min(availableParallelism(), cap) : 1;
}

/** What the main thread hands each worker: the arguments, the files and the shared turn counter. */
interface WorkerInput {
  readonly lincheckCli: true;
  readonly args: CliArgs;
  /** Indices into args.files, largest file first: each thread takes the next one when free. */
  readonly order: readonly number[];
  readonly next: SharedArrayBuffer;
}

interface WorkerReport {
  readonly index: number;
  readonly report: FileReport;
}

/** Takes files in turn off the shared counter until none is left; `done` gets each report. */
function takeTurns(input: WorkerInput, now: () => number, done: (r: WorkerReport) => void, one = false): boolean {
  const next = new Int32Array(input.next);
  for (;;) {
    const k = Atomics.add(next, 0, 1);
    if (k >= input.order.length) return false;
    const index = input.order[k] as number;
    done({ index, report: checkFile(input.args.files[index] as string, input.args, now) });
    if (one) return true;
  }
}

/**
 * The files over `threads` threads (this one and threads - 1 workers running this module), each
 * taking the next largest file when it is free; reports are printed in the order given as soon
 * as every earlier file's is in. A worker that dies leaves its files to this thread.
 */
async function runParallel(args: CliArgs, threads: number, io: CliIo): Promise<number> {
  const files = args.files;
  const sizes = files.map((f) => {
    try {
      return statSync(f).size;
    } catch {
      return 0;
    }
  });
  const order = files.map((_, i) => i).sort((a, b) => (sizes[b] as number) - (sizes[a] as number) || a - b);
  const input: WorkerInput = { lincheckCli: true, args, order, next: new SharedArrayBuffer(4) };
  const reports: Array<FileReport | undefined> = files.map(() => undefined);
  let printed = 0;
  let exitCode = 0;
  const flush = (): void => {
    while (printed < files.length && reports[printed] !== undefined) {
      exitCode = Math.max(exitCode, emit(reports[printed] as FileReport, io));
      printed++;
    }
  };
  const take = (r: WorkerReport): void => {
    reports[r.index] = r.report;
  };
  const exited: Array<Promise<void>> = [];
  for (let t = 1; t < threads; t++) {
    const worker = new Worker(new URL(import.meta.url), { workerData: input });
    exited.push(
      new Promise((resolve) => {
        worker.on('message', (m: WorkerReport) => {
          take(m);
          flush();
        });
        worker.on('error', (e: Error) =>
          io.err(`lincheck: note: a worker thread failed (${e.message}); its files are checked again`),
        );
        worker.once('exit', () => resolve());
      }),
    );
  }
  // This thread takes its turns too, letting the workers' reports in between files.
  while (takeTurns(input, io.now, take, true)) {
    flush();
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  await Promise.all(exited);
  for (let i = 0; i < files.length; i++) reports[i] ??= checkFile(files[i] as string, args, io.now);
  flush();
  return exitCode;
}

/** A worker thread of runParallel: takes files until none is left, posting each report. */
function runWorker(input: WorkerInput): void {
  const port = parentPort;
  if (port === null) return;
  takeTurns(
    input,
    () => performance.now(),
    (r) => port.postMessage(r),
  );
}

function isMain(): boolean {
  if (!isMainThread) return false;
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (!isMainThread && (workerData as Partial<WorkerInput> | null)?.lincheckCli === true) {
  runWorker(workerData as WorkerInput);
} else if (isMain()) {
  const io: CliIo = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    now: () => performance.now(),
  };
  void runCli(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}
