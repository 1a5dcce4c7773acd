import t from 'tap';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// The short soak runs the built script (dist/, which `make test` builds first) as its own process:
// it starts the simulator as a child and reads that child's /proc status, as `make soak` does.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const script = path.join(root, 'dist', 'benchmarks', 'soak.js');
const durationS = 60; // the short soak of issue 8: 60 s of traffic and faults in make test

interface Summary {
  soak: 'pass' | 'fail';
  seed: number;
  failures: string[];
  clusters: Array<{
    cluster: string;
    'writes ok': number;
    unexpected: number;
    'keys compared': number;
    converged: string;
  }>;
  rssMb: { settled: number; limit: number };
  threads: { empty: number; steady: number; settled: number; final: number };
  churn: { created: number; deleted: number; leaks: number };
  faults: Record<string, number>;
}

t.test(
  `a ${durationS}-second soak under partitions, pauses and latency converges and leaks no threads`,
  { timeout: 240_000 },
  async (t) => {
    if (!existsSync(script)) {
      t.fail(`${script} is missing: build first (make test builds; or npx tsc -p tsconfig.json)`);
      return;
    }
    const child = spawn(process.execPath, [script], {
      cwd: root,
      env: { ...process.env, DURATION: String(durationS), SOAK_SETTLE_SECONDS: '45', LOGGING_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-8000);
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    const last = out.trim().split('\n').pop() ?? '';
    let summary: Summary | undefined;
    try {
      summary = JSON.parse(last) as Summary;
    } catch {
      summary = undefined;
    }
    if (code !== 0 || summary?.soak !== 'pass') t.comment(`soak report:\n${out}\nsoak progress:\n${err}`);
    t.equal(code, 0, 'the soak exits 0');
    if (!summary) {
      t.fail('the soak printed no JSON summary line');
      return;
    }
    t.same(
      summary.failures,
      [],
      `no failure is reported (replay: SOAK_SEED=${summary.seed} DURATION=${durationS} node dist/benchmarks/soak.js)`,
    );
    t.equal(summary.clusters.length, 5, 'five clusters were soaked');
    for (const c of summary.clusters) {
      t.ok(c['writes ok'] > 0, `${c.cluster}: writes succeeded during the soak (${c['writes ok']})`);
      t.equal(c.unexpected, 0, `${c.cluster}: every answer was 200, 404 or 409`);
      t.ok(c['keys compared'] >= 2, `${c.cluster}: replicas were compared on real data (${c['keys compared']} keys)`);
      t.match(c.converged, /^yes/, `${c.cluster}: every replica agrees after healing (${c.converged})`);
    }
    t.ok(
      (summary.faults['partition'] ?? 0) > 0 &&
        (summary.faults['pause'] ?? 0) > 0 &&
        (summary.faults['latency'] ?? 0) > 0,
      `faults were injected (${JSON.stringify(summary.faults)})`,
    );
    t.equal(
      summary.threads.settled,
      summary.threads.steady,
      `the thread count came back to steady state (${summary.threads.steady})`,
    );
    t.equal(
      summary.threads.final,
      summary.threads.empty,
      `deleting every cluster released every worker thread (${summary.threads.empty})`,
    );
    t.ok(
      summary.churn.created > 0 && summary.churn.created === summary.churn.deleted && summary.churn.leaks === 0,
      `throw-away clusters came and went without leaking threads (${summary.churn.created})`,
    );
    t.ok(
      summary.rssMb.settled <= summary.rssMb.limit,
      `RSS after healing (${summary.rssMb.settled.toFixed(0)} MB) is within the steady-state limit ` +
        `(${summary.rssMb.limit.toFixed(0)} MB)`,
    );
  },
);
