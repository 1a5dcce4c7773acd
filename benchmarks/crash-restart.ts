/**
 * Crash-to-caught-up time of a restarted follower (issue 16): a 3-node cluster with BEFORE writes
 * (default 1000) on every node, one follower crashed (its worker killed), ENTRIES writes committed
 * without it, then POST .../restart; the
 * clock runs from the restart request until the follower has applied everything the leader has.
 * It reports the restart call (a new worker folding its durable records) and the catch-up after
 * it (raft: AppendEntries or InstallSnapshot from the leader; single_leader: log retransmission or
 * a store snapshot). ENTRIES (default 10000), RUNS (default 3) per strategy; BENCH_STRATEGIES.
 */
import { postJson, startChild, table } from './lib.js';
import { recordResult } from './results.js';

const entries = Number(process.env['ENTRIES'] ?? 10_000);
const before = Number(process.env['BEFORE'] ?? 1_000);
const runs = Number(process.env['RUNS'] ?? 3);
const only = process.env['BENCH_STRATEGIES']?.split(',');
const writersMax = 64;
const strategies = ['raft', 'single_leader'].filter((s) => !only || only.some((o) => s.startsWith(o)));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function getJson(base: string, p: string): Promise<any> {
  const r = await fetch(base + p);
  return r.json();
}
async function post(base: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(base + p, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: await r.json().catch(() => undefined) };
}

const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
const base = `http://127.0.0.1:${sim.port}`;
const rows: Array<Record<string, string | number>> = [];
const results: Record<string, { caughtUp: number[]; writes: number[] }> = {};
for (const strategy of strategies) {
  for (let run = 0; run < runs; run++) {
    const cl = await postJson(base, '/api/v1/clusters', { strategy, node_count: 3 });
    let leader: string | undefined;
    while (!leader) {
      await sleep(50);
      leader = (await getJson(base, `/api/v1/clusters/${cl.id}/state`)).leader_id;
    }
    const follower = ['n1', 'n2', 'n3'].find((n) => n !== leader) as string;
    let next = 0;
    let ok = 0;
    const writeUpTo = (n: number): Promise<unknown> =>
      Promise.all(
        Array.from({ length: writersMax }, async () => {
          while (next < n) {
            const i = next++;
            const r = await post(base, `/api/v1/clusters/${cl.id}/write`, { key: `k${i % 1000}`, value: `value-${i}` });
            if (r.status === 200) ok++;
          }
        }),
      );
    await writeUpTo(before);
    await sleep(200);
    await post(base, `/api/v1/clusters/${cl.id}/nodes/${follower}/crash`);
    ok = 0;
    const tw = performance.now();
    await writeUpTo(before + entries);
    const writeMs = performance.now() - tw;
    const leaderNow = (await getJson(base, `/api/v1/clusters/${cl.id}/state`)).leader_id as string;
    const target = (await getJson(base, `/api/v1/clusters/${cl.id}/state`)).nodes[leaderNow].last_applied as number;
    const t0 = performance.now();
    const restart = await post(base, `/api/v1/clusters/${cl.id}/nodes/${follower}/restart`);
    const restartMs = performance.now() - t0;
    if (restart.status !== 200) throw new Error(`restart failed: ${JSON.stringify(restart.body)}`);
    const fromDurable = restart.body.last_applied as number;
    let applied = fromDurable;
    while (applied < target) {
      await sleep(5);
      applied = (await getJson(base, `/api/v1/clusters/${cl.id}/state`)).nodes[follower].last_applied;
    }
    const caughtUpMs = performance.now() - t0;
    rows.push({
      strategy,
      run: run + 1,
      'writes acked while down': ok,
      'leader last_applied': target,
      'follower last_applied at restart': fromDurable,
      'restart call ms': Math.round(restartMs),
      'restart to caught up ms': Math.round(caughtUpMs),
      'writing them took ms': Math.round(writeMs),
    });
    (results[strategy] ??= { caughtUp: [], writes: [] }).caughtUp.push(caughtUpMs);
    (results[strategy] as { writes: number[] }).writes.push(writeMs);
    await fetch(`${base}/api/v1/clusters/${cl.id}`, { method: 'DELETE' });
  }
}
await sim.stop();
console.log(table(rows));
for (const [strategy, r] of Object.entries(results)) {
  recordResult({
    benchmark: 'crash-restart',
    measure: `${strategy}, 3 nodes: restarted follower ${entries} entries behind`,
    subject: 'restart request to follower caught up',
    baseline: `writing those ${entries} entries through the HTTP API with the follower down (${writersMax} writers)`,
    unit: 'ms',
    runs: r.caughtUp,
    baselineRuns: r.writes,
    ratioRuns: r.caughtUp.map((x, i) => x / (r.writes[i] as number)),
    ratio: r.caughtUp.reduce((a, b) => a + b, 0) / r.writes.reduce((a, b) => a + b, 0),
    method:
      `a follower is crashed (worker killed), ${entries} writes are committed without it, ` +
      'then POST .../restart; timed from the restart request (a new worker folding its ' +
      `durable records) until the follower's last_applied reaches the leader's, polled every ` +
      '5 ms; the baseline is the time the same writes took',
  });
}
