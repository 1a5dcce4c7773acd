/**
 * The flag service's interop surfaces against its own SDK endpoints, in the same run (issue 19,
 * target ratio >= 0.9): over real sockets with wrk, alternating slices of subject and baseline,
 * (1) OFREP single `POST /ofrep/v1/evaluate/flags/f0` vs `POST /sdk/v1/evaluate` with flagKeys [f0];
 * (2) OFREP bulk `POST /ofrep/v1/evaluate/flags` vs `POST /sdk/v1/evaluate` for all flags;
 * (3) the LaunchDarkly relay's polling payload `GET /ld/sdk/latest-all` vs `GET /sdk/v1/latest-all`.
 * The LaunchDarkly SDK evaluates locally (no request per evaluation), so its comparable figure is
 * (4) local evaluations/s of the official LD Node SDK fed by /ld vs simlab's own SDK (FlagsClient)
 * fed by /sdk/v1/stream, same flags and contexts, alternating in-process slices.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/flags-interop.js  (BENCH_SECONDS, default 5; BENCH_REPS, 3)
 */
import { init } from '@launchdarkly/node-server-sdk';
import { FlagsClient } from '../src/flags/sdk/client.js';
import { runWrk, table, wrkAvailable, type WrkResult } from './lib.js';
import { median, recordResult } from './results.js';
import { benchContext, benchFlagsCount, cpuSeconds, startFlagsService } from './flags-lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 3)));
const connections = 64;
const flagsCount = benchFlagsCount;
const target = 0.9;

interface Load {
  url: string;
  method: 'GET' | 'POST';
  body?: unknown;
  authorization: string;
}

function lua(load: Load): string {
  return (
    `wrk.method = ${JSON.stringify(load.method)}\n` +
    (load.body === undefined ? '' : `wrk.body = ${JSON.stringify(JSON.stringify(load.body))}\n`) +
    'wrk.headers["Content-Type"] = "application/json"\n' +
    `wrk.headers["Authorization"] = ${JSON.stringify(load.authorization)}\n`
  );
}

function measure(load: Load, secs: number): WrkResult {
  return runWrk(load.url, { connections, seconds: secs, lua: lua(load) });
}

interface Pair {
  subject: number[];
  baseline: number[];
  errors: number;
}

/** Alternating slices (which goes first swaps each rep), after a 1-s warm-up of each. */
async function alternate(subject: () => Promise<number>, baseline: () => Promise<number>): Promise<Pair> {
  const out: Pair = { subject: [], baseline: [], errors: 0 };
  for (let rep = 0; rep < reps; rep++) {
    if (rep % 2 === 0) {
      out.baseline.push(await baseline());
      out.subject.push(await subject());
    } else {
      out.subject.push(await subject());
      out.baseline.push(await baseline());
    }
  }
  return out;
}

const rows: Array<Record<string, string | number>> = [];
/** Server CPU per request of each HTTP pair (baseline ÷ subject: the ratio req/s tends to when server-bound). */
const cpuRows: Array<Record<string, string | number>> = [];
let failed = false;

function report(name: string, baselineName: string, unit: string, p: Pair, method: string, targeted = true): void {
  const ratios = p.subject.map((x, i) => x / (p.baseline[i] as number));
  const ratio = median(ratios);
  rows.push({
    'subject (vs baseline)': `${name} (vs ${baselineName})`,
    unit,
    subject: Math.round(median(p.subject)),
    baseline: Math.round(median(p.baseline)),
    ratio: Number(ratio.toFixed(3)),
    'target >= 0.9': !targeted ? 'n/a' : ratio >= target ? 'met' : 'MISSED',
    errors: p.errors,
  });
  if (p.errors > 0) {
    failed = true;
    console.error(`${name}: ${p.errors} errors or non-2xx answers; not recorded`);
    return;
  }
  recordResult({
    benchmark: 'flags-interop',
    measure: name,
    subject: name,
    baseline: baselineName,
    unit,
    runs: p.subject,
    baselineRuns: p.baseline,
    ratio,
    ratioRuns: ratios,
    ...(targeted ? { target: { op: '>=' as const, value: target, met: ratio >= target } } : {}),
    method,
  });
}

if (!wrkAvailable()) {
  console.error('flags-interop needs wrk');
  process.exit(2);
}
// The service and its 20 flags: the same set-up as flags-http (benchmarks/flags-lib.ts).
const service = await startFlagsService();
try {
  const { url, sdkKey } = service;
  const context = benchContext;
  const ofrepContext = { targetingKey: 'user-42', country: 'NL', version: '2.3.0' };

  const httpPairs: Array<[string, Load, string, Load]> = [
    [
      'OFREP single: POST /ofrep/v1/evaluate/flags/f0',
      {
        url: `${url}/ofrep/v1/evaluate/flags/f0`,
        method: 'POST',
        body: { context: ofrepContext },
        authorization: sdkKey,
      },
      'POST /sdk/v1/evaluate, flagKeys [f0]',
      { url: `${url}/sdk/v1/evaluate`, method: 'POST', body: { context, flagKeys: ['f0'] }, authorization: sdkKey },
    ],
    [
      `OFREP bulk: POST /ofrep/v1/evaluate/flags (${flagsCount} flags)`,
      { url: `${url}/ofrep/v1/evaluate/flags`, method: 'POST', body: { context: ofrepContext }, authorization: sdkKey },
      `POST /sdk/v1/evaluate, all ${flagsCount} flags`,
      { url: `${url}/sdk/v1/evaluate`, method: 'POST', body: { context }, authorization: sdkKey },
    ],
    [
      'LD relay polling: GET /ld/sdk/latest-all',
      { url: `${url}/ld/sdk/latest-all`, method: 'GET', authorization: sdkKey },
      'GET /sdk/v1/latest-all',
      { url: `${url}/sdk/v1/latest-all`, method: 'GET', authorization: sdkKey },
    ],
  ];
  /** POST /sdk/v1/evaluate (one flag) req/s per slice, for the LD SDK's comparison below. */
  let evaluateOneRps: number[] = [];
  for (const [name, load, baseName, base] of httpPairs) {
    measure(load, 1);
    measure(base, 1);
    let errors = 0;
    const cpuUs = new Map<Load, number[]>([
      [load, []],
      [base, []],
    ]);
    const run = (l: Load) => async () => {
      const before = cpuSeconds(service.child.proc.pid);
      const r = measure(l, seconds);
      cpuUs.get(l)?.push(((cpuSeconds(service.child.proc.pid) - before) * 1e6) / (r.rps * seconds));
      errors += r.errors;
      return r.rps;
    };
    const p = await alternate(run(load), run(base));
    p.errors = errors;
    const subjectCpu = cpuUs.get(load) ?? [];
    const baseCpu = cpuUs.get(base) ?? [];
    const cpuRatios = baseCpu.map((x, i) => x / (subjectCpu[i] as number));
    cpuRows.push({
      subject: name,
      'subject CPU µs/req': Number(median(subjectCpu).toFixed(2)),
      'baseline CPU µs/req': Number(median(baseCpu).toFixed(2)),
      'CPU ratio': Number(median(cpuRatios).toFixed(3)),
    });
    if (evaluateOneRps.length === 0) evaluateOneRps = p.baseline;
    report(
      name,
      baseName,
      'req/s',
      p,
      `wrk, ${connections} connections on loopback, one context, ${reps} alternating ${seconds}-s slices of ` +
        'subject and baseline after a 1-s warm-up of each; the flag service in its own process (SQLite ' +
        'in a temp dir); ratio = subject ÷ baseline per pair.',
    );
  }

  // (4) Local evaluation in this process: the LD SDK (fed by /ld/all) vs simlab's SDK (fed by /sdk/v1/stream).
  const silent = { debug() {}, info() {}, warn() {}, error() {} };
  const ld = init(sdkKey, {
    baseUri: `${url}/ld`,
    streamUri: `${url}/ld`,
    eventsUri: `${url}/ld`,
    logger: silent,
    sendEvents: false,
    diagnosticOptOut: true,
  });
  const own = new FlagsClient({ baseUrl: url, sdkKey });
  try {
    await ld.waitForInitialization({ timeout: 10 });
    await own.waitForInitialization();
    const contexts = Array.from({ length: 1000 }, (_, i) => ({
      key: `user-${i}`,
      country: i % 3 === 0 ? 'NL' : 'DE',
      version: i % 2 === 0 ? '2.3.0' : '1.0.0',
    }));
    const ldContexts = contexts.map((c) => ({ kind: 'user', ...c }));
    const flagKeys = Array.from({ length: flagsCount }, (_, i) => `f${i}`);
    // Sanity: both agree before being timed.
    for (const [i, c] of contexts.slice(0, 100).entries()) {
      for (const k of flagKeys) {
        const a = (await ld.variationDetail(k, ldContexts[i] as { kind: string; key: string }, 'x')).value;
        const b = own.evaluate(k, c)?.value;
        if (a !== b) throw new Error(`LD SDK and simlab SDK disagree on ${k} for ${JSON.stringify(c)}: ${a} vs ${b}`);
      }
    }
    const sliceMs = seconds * 1000;
    const ldSlice = async (): Promise<number> => {
      let n = 0;
      const end = performance.now() + sliceMs;
      const t0 = performance.now();
      while (performance.now() < end) {
        for (let i = 0; i < 100; i++, n++)
          await ld.variation(
            flagKeys[n % flagsCount] as string,
            ldContexts[n % 1000] as { kind: string; key: string },
            'x',
          );
      }
      return (n / (performance.now() - t0)) * 1000;
    };
    const ownSlice = async (): Promise<number> => {
      let n = 0;
      const end = performance.now() + sliceMs;
      const t0 = performance.now();
      while (performance.now() < end) {
        for (let i = 0; i < 100; i++, n++)
          own.evaluate(flagKeys[n % flagsCount] as string, contexts[n % 1000] as never);
      }
      return (n / (performance.now() - t0)) * 1000;
    };
    await ldSlice();
    await ownSlice();
    const p = await alternate(ldSlice, ownSlice);
    report(
      'LD Node SDK local evaluation (fed by /ld/all)',
      'simlab SDK local evaluation (fed by /sdk/v1/stream)',
      'evals/s',
      p,
      `in-process, one evaluation at a time over 1000 contexts and ${flagsCount} flags, ${reps} alternating ` +
        `${seconds}-s slices after a warm-up; LD's variation() is async (awaited each time), simlab's evaluate() ` +
        'is synchronous; events off. Information only (the target is against /sdk/v1/evaluate).',
      false,
    );
    // What an application gets per evaluation with the LD SDK vs asking /sdk/v1/evaluate each time:
    // the LD SDK's slices against the one-flag /sdk/v1/evaluate slices of this run (not interleaved
    // with them, and in-process vs over sockets: a like-for-like figure does not exist).
    report(
      'LD Node SDK local evaluation (fed by /ld/all)',
      'POST /sdk/v1/evaluate, flagKeys [f0] (this run)',
      'evals/s',
      { subject: p.subject, baseline: evaluateOneRps, errors: 0 },
      'LD SDK evaluations/s in this process (see the row above) ÷ the one-flag /sdk/v1/evaluate req/s of ' +
        'the first pair of this run (wrk, 64 connections), slice by slice; not interleaved with them.',
    );
  } finally {
    ld.close();
    own.close();
  }
} finally {
  await service.stop();
}
console.log(`flags interop, ${connections} connections (wrk), ${seconds}-s slices, ${reps} reps:\n`);
console.log(table(rows));
console.log('\nServer CPU per request (same runs; /proc user + system time ÷ requests answered):\n');
console.log(table(cpuRows));
if (failed) process.exitCode = 1;
