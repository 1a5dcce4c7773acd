/**
 * `make soak DURATION=600` (seconds): a soak of the replication simulator as a child process on
 * loopback. Mixed writes, reads and deletes run on five clusters (single_leader async and sync,
 * raft, leaderless N3 W2 R2, multi_leader lww) while partitions, pauses and link latency are
 * toggled every few seconds and throw-away clusters are created and deleted; then every fault is
 * healed and the run checks convergence (every replica agrees), that RSS and the thread count came
 * back to steady state, and that no worker thread leaked. It prints a report and exits 1 on failure.
 * It is not a benchmark (no speed is asserted) and not a linearizability check.
 *
 * Environment: DURATION (seconds of traffic, default 600), SOAK_SEED (fault/traffic schedule),
 * SOAK_CLIENTS (concurrent client loops, default 12), SOAK_FAULT_MS (fault period, default 2000),
 * SOAK_CHURN_MS (throw-away cluster period, default 4000), SOAK_SETTLE_SECONDS (convergence
 * deadline after healing, default 60), SOAK_WORKER_POOL (the server's REPLSIM_WORKER_POOL, default 0:
 * pooled idle actors would count as threads in the leak checks). The last stdout line is a JSON summary.
 */
import { readFileSync } from 'node:fs';
import { unreachable } from '../src/util/assert.js';
import { SeededRng, type Rng } from '../src/util/rng.js';
import { startChild, table } from './lib.js';

// ---- configuration (bounded) ----
function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be an integer in ${min}..${max} (got ${JSON.stringify(raw)})`);
  return n;
}
const durationArg = process.argv.indexOf('--duration');
if (durationArg > 0 && process.argv[durationArg + 1]) process.env['DURATION'] = process.argv[durationArg + 1];
const durationS = intEnv('DURATION', 600, 10, 24 * 3600);
const seed = intEnv('SOAK_SEED', Math.floor(Math.random() * 1_000_000), 0, Number.MAX_SAFE_INTEGER);
const clientLoops = intEnv('SOAK_CLIENTS', 12, 1, 64);
const faultEveryMs = intEnv('SOAK_FAULT_MS', 2000, 100, 600_000);
const churnEveryMs = intEnv('SOAK_CHURN_MS', 4000, 100, 600_000);
const settleMaxMs = intEnv('SOAK_SETTLE_SECONDS', 60, 5, 3600) * 1000;
const requestTimeoutMs = 15_000;
const keysPerCluster = 48;
/** Warm-up: the first fifth of the run (at least 10 s, at most 60 s) fills logs, histories and caches. */
const warmupMs = Math.min(60_000, Math.max(10_000, durationS * 200));
/**
 * Steady-state RSS rule: after healing, RSS may exceed the largest warm-up sample by at most this
 * factor plus slack. A leak proportional to traffic grows past it over a 10-minute run.
 */
const rssGrowthFactorMax = 1.5;
const rssSlackMb = 96;

const rng: Rng = new SeededRng(seed);
// The warm pool is off unless asked for (SOAK_WORKER_POOL): idle pooled actors are threads too, and
// the leak checks below compare thread counts with the empty process's (cluster-ready and test/replication/pool*
// cover the pool's own accounting).
const sim = await startChild(
  'src/replication/main.js',
  { HOST: '127.0.0.1', REPLSIM_WORKER_POOL: process.env['SOAK_WORKER_POOL'] ?? '0' },
  'REPLSIM_PORT',
);
const pid = sim.proc.pid as number;
const base = `http://127.0.0.1:${sim.port}`;
const startedAt = Date.now();
const elapsed = (): string => `${((Date.now() - startedAt) / 1000).toFixed(1)}s`;
const say = (msg: string): void => {
  console.error(`[soak ${elapsed()}] ${msg}`);
};

// ---- process observation (/proc/<pid>/status of the server process) ----
interface ProcStat {
  rssMb: number;
  threads: number;
}
function procStat(): ProcStat {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    rssMb: Number(/VmRSS:\s+(\d+) kB/.exec(s)?.[1] ?? NaN) / 1024,
    threads: Number(/Threads:\s+(\d+)/.exec(s)?.[1] ?? NaN),
  };
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Polls the thread count until it is at most `target` (worker exit is asynchronous) or time runs out. */
async function threadsSettleTo(target: number, withinMs: number): Promise<number> {
  const until = Date.now() + withinMs;
  let t = procStat().threads;
  while (t > target && Date.now() < until) {
    await sleep(100);
    t = procStat().threads;
  }
  return t;
}

// ---- HTTP ----
interface Reply {
  status: number; // 0: no answer (connection error or timeout)
  body: unknown;
  error?: string;
}
async function call(method: string, path: string, body?: unknown): Promise<Reply> {
  try {
    const r = await fetch(base + path, {
      method,
      signal: AbortSignal.timeout(requestTimeoutMs),
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    const text = await r.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON
    }
    return { status: r.status, body: parsed };
  } catch (err) {
    return { status: 0, body: undefined, error: (err as Error).message };
  }
}
async function must(method: string, path: string, body?: unknown, expect: number[] = [200, 201, 204]): Promise<Reply> {
  const r = await call(method, path, body);
  if (!expect.includes(r.status))
    throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body ?? r.error).slice(0, 300)}`);
  return r;
}

// ---- clusters under test ----
type Kind = 'single_leader async' | 'single_leader sync' | 'raft' | 'leaderless N3W2R2' | 'multi_leader lww';
const kinds: Array<{ kind: Kind; config: Record<string, unknown> }> = [
  { kind: 'single_leader async', config: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' } },
  { kind: 'single_leader sync', config: { strategy: 'single_leader', node_count: 3, replication_mode: 'sync' } },
  { kind: 'raft', config: { strategy: 'raft', node_count: 3 } },
  {
    kind: 'leaderless N3W2R2',
    config: { strategy: 'leaderless', node_count: 5, quorum_n: 3, quorum_w: 2, quorum_r: 2 },
  },
  { kind: 'multi_leader lww', config: { strategy: 'multi_leader', node_count: 3, conflict_resolver: 'lww' } },
];

interface Counts {
  ok: number;
  refused: number; // 404/409: the service said no for a stated reason (quorum, paused, partition)
  unexpected: number; // anything else: 400, 5xx, no answer
}
interface Tracked {
  kind: Kind;
  id: string;
  nodes: string[];
  quorumN: number;
  partition: string | undefined;
  paused: Set<string>;
  latencyLinks: number;
  ops: Record<'write' | 'read' | 'delete', Counts>;
}
const zero = (): Counts => ({ ok: 0, refused: 0, unexpected: 0 });
const unexpectedSamples: string[] = [];
const noteUnexpected = (what: string): void => {
  if (unexpectedSamples.length < 20) unexpectedSamples.push(`${elapsed()} ${what}`);
};

async function createCluster(config: Record<string, unknown>): Promise<{ id: string; nodes: string[] }> {
  const r = await must('POST', '/api/v1/clusters', config, [201]);
  const st = r.body as { id: string; node_ids: string[] };
  return { id: st.id, nodes: st.node_ids };
}

// The empty process, after one throw-away cluster so lazily started threads (libuv pool) exist.
{
  const warm = await createCluster({ strategy: 'single_leader', node_count: 1 });
  await must('DELETE', `/api/v1/clusters/${warm.id}`, undefined, [204]);
  await sleep(300);
}
const empty = procStat();
say(
  `server pid ${pid} on ${base}; seed ${seed}; ${durationS} s of traffic, ${clientLoops} ` +
    `clients; empty process: ${empty.rssMb.toFixed(0)} MB RSS, ${empty.threads} threads`,
);

const tracked: Tracked[] = [];
for (const k of kinds) {
  const c = await createCluster(k.config);
  tracked.push({
    kind: k.kind,
    id: c.id,
    nodes: c.nodes,
    quorumN: Number(k.config['quorum_n'] ?? c.nodes.length),
    partition: undefined,
    paused: new Set(),
    latencyLinks: 0,
    ops: { write: zero(), read: zero(), delete: zero() },
  });
}
await sleep(1000); // raft elects a leader
const withClusters = procStat();
const workerThreads = tracked.reduce((n, c) => n + c.nodes.length, 0);
say(
  `${tracked.length} clusters, ${workerThreads} nodes: ${withClusters.rssMb.toFixed(0)} ` +
    `MB RSS, ${withClusters.threads} threads (+${withClusters.threads - empty.threads})`,
);

const trafficEnds = Date.now() + durationS * 1000;
const running = (): boolean => Date.now() < trafficEnds;
const pick = <T>(xs: readonly T[]): T => xs[rng.int(xs.length)] as T;

// ---- client loops: mixed writes (60%), reads (30%), deletes (10%) ----
async function clientLoop(n: number): Promise<void> {
  let seq = 0;
  while (running()) {
    const c = pick(tracked);
    const key = `k${rng.int(keysPerCluster)}`;
    const roll = rng.next();
    const anyNode = c.kind === 'leaderless N3W2R2' || c.kind === 'multi_leader lww';
    const target = anyNode ? pick(c.nodes) : undefined;
    let op: 'write' | 'read' | 'delete';
    let r: Reply;
    if (roll < 0.6) {
      op = 'write';
      r = await call('POST', `/api/v1/clusters/${c.id}/write`, {
        key,
        value: `c${n}-${++seq}`,
        client_id: `soak-${n}`,
        ...(target ? { target_node_id: target } : {}),
      });
    } else if (roll < 0.9) {
      op = 'read';
      r = await call('GET', `/api/v1/clusters/${c.id}/read?key=${key}&client_id=soak-${n}&node_id=${pick(c.nodes)}`);
    } else {
      op = 'delete';
      r = await call(
        'DELETE',
        `/api/v1/clusters/${c.id}/kv?key=${key}&client_id=soak-${n}${target ? `&node_id=${target}` : ''}`,
      );
    }
    const counts = c.ops[op];
    if (r.status === 200) counts.ok++;
    else if (r.status === 404 || r.status === 409) counts.refused++;
    else {
      counts.unexpected++;
      noteUnexpected(`${c.kind} ${op} ${key}: ${r.status} ${JSON.stringify(r.body ?? r.error).slice(0, 160)}`);
    }
  }
}

// ---- fault loop: partitions, pauses/resumes and latency, toggled every few seconds ----
type FaultAction = 'partition' | 'heal' | 'pause' | 'resume' | 'latency' | 'clear';
const faultCounts: Record<FaultAction, number> = { partition: 0, heal: 0, pause: 0, resume: 0, latency: 0, clear: 0 };
async function faultStep(c: Tracked): Promise<void> {
  const actions: FaultAction[] = [];
  if (c.partition === undefined) actions.push('partition', 'partition');
  else actions.push('heal', 'heal');
  // At most one paused node per cluster, so quorums come and go rather than stay lost.
  if (c.paused.size === 0) actions.push('pause');
  else actions.push('resume', 'resume');
  actions.push('latency');
  if (c.latencyLinks > 0 || c.partition !== undefined) actions.push('clear');
  const action = pick(actions);
  let r: Reply;
  switch (action) {
    case 'partition': {
      const shuffled = [...c.nodes].sort(() => rng.next() - 0.5);
      const cut = rng.range(1, shuffled.length - 1);
      r = await call('POST', `/api/v1/clusters/${c.id}/network/partition`, {
        group_a: shuffled.slice(0, cut),
        group_b: shuffled.slice(cut),
      });
      if (r.status === 201) c.partition = (r.body as { partition_id: string }).partition_id;
      break;
    }
    case 'heal':
      r = await call('DELETE', `/api/v1/clusters/${c.id}/network/partition/${c.partition ?? ''}`);
      if (r.status === 204) c.partition = undefined;
      break;
    case 'pause': {
      const node = pick(c.nodes);
      r = await call('POST', `/api/v1/clusters/${c.id}/nodes/${node}/pause`);
      if (r.status === 200) c.paused.add(node);
      break;
    }
    case 'resume': {
      const node = pick([...c.paused]);
      r = await call('POST', `/api/v1/clusters/${c.id}/nodes/${node}/resume`);
      if (r.status === 200) c.paused.delete(node);
      break;
    }
    case 'latency': {
      const from = pick(c.nodes);
      const to = pick(c.nodes.filter((x) => x !== from));
      r = await call('POST', `/api/v1/clusters/${c.id}/network/latency`, { from, to, ms: rng.range(20, 300) });
      if (r.status === 200) c.latencyLinks++;
      break;
    }
    case 'clear':
      r = await call('DELETE', `/api/v1/clusters/${c.id}/network/faults`);
      if (r.status === 200) {
        c.partition = undefined;
        c.latencyLinks = 0;
      }
      break;
    default:
      unreachable(action);
  }
  if (r.status >= 200 && r.status < 300) faultCounts[action]++;
  else noteUnexpected(`${c.kind} fault ${action}: ${r.status} ${JSON.stringify(r.body ?? r.error).slice(0, 160)}`);
}
async function faultLoop(): Promise<void> {
  while (running()) {
    await sleep(Math.min(faultEveryMs, Math.max(0, trafficEnds - Date.now())));
    if (!running()) break;
    // One or two clusters each period.
    const n = rng.range(1, 2);
    for (let i = 0; i < n; i++) await faultStep(pick(tracked));
  }
}

// ---- churn loop: throw-away clusters, each checked for worker-thread release ----
const churn = { created: 0, deleted: 0, leaks: [] as string[], failures: [] as string[] };
async function churnLoop(): Promise<void> {
  while (running()) {
    await sleep(Math.min(churnEveryMs, Math.max(0, trafficEnds - Date.now())));
    if (!running()) break;
    const k = pick(kinds);
    const config = { ...k.config, node_count: 3, ...(k.kind === 'leaderless N3W2R2' ? { quorum_n: 3 } : {}) };
    const before = await threadsSettleTo(withClusters.threads, 2000);
    const created = await call('POST', '/api/v1/clusters', config);
    if (created.status !== 201) {
      churn.failures.push(
        `${elapsed()} create ${k.kind}: ${created.status} ` +
          `${JSON.stringify(created.body ?? created.error).slice(0, 160)}`,
      );
      continue;
    }
    churn.created++;
    const id = (created.body as { id: string }).id;
    const during = procStat().threads;
    if (during < before + 3)
      churn.failures.push(`${elapsed()} ${k.kind}: 3 nodes but the thread count went ${before} -> ${during}`);
    for (let i = 0; i < 5; i++) await call('POST', `/api/v1/clusters/${id}/write`, { key: `t${i}`, value: 'x' });
    const del = await call('DELETE', `/api/v1/clusters/${id}`);
    if (del.status !== 204) {
      churn.failures.push(`${elapsed()} delete ${k.kind}: ${del.status}`);
      continue;
    }
    churn.deleted++;
    const after = await threadsSettleTo(before, 10_000);
    if (after > before)
      churn.leaks.push(`${elapsed()} ${k.kind}: threads ${before} before create, ${after} 10 s after delete`);
  }
}

// ---- sampling: RSS and threads over time, progress lines ----
const samples: Array<{ atMs: number } & ProcStat> = [];
async function sampleLoop(): Promise<void> {
  let lastLog = 0;
  while (running()) {
    samples.push({ atMs: Date.now() - startedAt, ...procStat() });
    if (Date.now() - lastLog >= 10_000) {
      lastLog = Date.now();
      const s = samples[samples.length - 1] as ProcStat;
      const total = tracked.reduce((n, c) => n + c.ops.write.ok + c.ops.read.ok + c.ops.delete.ok, 0);
      say(
        `${total} ok ops; RSS ${s.rssMb.toFixed(0)} MB, ${s.threads} threads; faults ` +
          `${JSON.stringify(faultCounts)}; churn ${churn.created}/${churn.deleted}`,
      );
    }
    await sleep(Math.min(1000, Math.max(0, trafficEnds - Date.now())));
  }
}

await Promise.all([
  ...Array.from({ length: clientLoops }, (_, i) => clientLoop(i)),
  faultLoop(),
  churnLoop(),
  sampleLoop(),
]);
say('traffic stopped; healing every cluster');

// ---- heal: clear network faults, resume every paused node (asking the server, not our notes) ----
for (const c of tracked) {
  await must('DELETE', `/api/v1/clusters/${c.id}/network/faults`);
  const st = (await must('GET', `/api/v1/clusters/${c.id}/state`)).body as { nodes: Record<string, { state: string }> };
  for (const [node, s] of Object.entries(st.nodes))
    if (s.state !== 'online') await must('POST', `/api/v1/clusters/${c.id}/nodes/${node}/resume`);
  c.paused.clear();
  c.partition = undefined;
}

// ---- convergence ----
interface StoreEntry {
  value: string;
  tombstone: boolean;
}
type Store = Record<string, StoreEntry>;
const show = (e: StoreEntry | undefined): string =>
  e === undefined
    ? 'absent'
    : e.tombstone
      ? 'tombstone'
      : JSON.stringify(Buffer.from(e.value, 'base64').toString('utf8'));
const placementCache = new Map<string, string[]>();

/**
 * Divergent keys of one cluster (empty: converged). Leaderless replicas are compared over each key's
 * preference list only.
 */
async function divergence(c: Tracked): Promise<{ keys: number; diverged: string[] }> {
  const stores = new Map<string, Store>();
  for (const node of c.nodes)
    stores.set(node, (await must('GET', `/api/v1/clusters/${c.id}/nodes/${node}/store`)).body as Store);
  const keys = new Set<string>();
  for (const s of stores.values()) for (const k of Object.keys(s)) keys.add(k);
  const out: string[] = [];
  for (const key of [...keys].sort()) {
    let replicas = c.nodes;
    if (c.kind === 'leaderless N3W2R2') {
      const cacheKey = `${c.id}/${key}`;
      let pl = placementCache.get(cacheKey);
      if (!pl) {
        pl = (
          (await must('GET', `/api/v1/clusters/${c.id}/placement?key=${encodeURIComponent(key)}&n=${c.quorumN}`))
            .body as { preference_list: string[] }
        ).preference_list;
        placementCache.set(cacheKey, pl);
      }
      replicas = pl;
    }
    const seen = replicas.map((n) => show(stores.get(n)?.[key]));
    if (new Set(seen).size > 1) out.push(`${key}: ${replicas.map((n, i) => `${n}=${seen[i]}`).join(' ')}`);
  }
  return { keys: keys.size, diverged: out };
}

// A write after healing must succeed on every cluster (liveness), and then be everywhere.
const healedAt = Date.now();
const settleDeadline = healedAt + settleMaxMs;
const probeOk = new Map<string, boolean>();
for (const c of tracked) {
  let ok = false;
  while (!ok && Date.now() < settleDeadline) {
    const r = await call('POST', `/api/v1/clusters/${c.id}/write`, { key: 'soak-probe', value: `healed-${seed}` });
    ok = r.status === 200;
    if (!ok) await sleep(250);
  }
  probeOk.set(c.id, ok);
}
const converged = new Map<string, { ok: boolean; afterMs: number; keys: number; diverged: string[] }>();
let pendingClusters = [...tracked];
while (pendingClusters.length > 0) {
  const still: Tracked[] = [];
  for (const c of pendingClusters) {
    const d = await divergence(c);
    if (d.diverged.length === 0)
      converged.set(c.id, { ok: true, afterMs: Date.now() - healedAt, keys: d.keys, diverged: [] });
    else {
      converged.set(c.id, { ok: false, afterMs: Date.now() - healedAt, keys: d.keys, diverged: d.diverged });
      still.push(c);
    }
  }
  pendingClusters = still;
  if (pendingClusters.length === 0 || Date.now() > settleDeadline) break;
  await sleep(500);
}
say(`convergence checked ${((Date.now() - healedAt) / 1000).toFixed(1)} s after healing`);

// ---- resources: back to steady state ----
await sleep(2000);
const settledSamples: ProcStat[] = [];
for (let i = 0; i < 3; i++) {
  settledSamples.push(procStat());
  await sleep(500);
}
const settledRss = Math.min(...settledSamples.map((s) => s.rssMb));
const settledThreads = await threadsSettleTo(withClusters.threads, 5000);
const warmupSamples = samples.filter((s) => s.atMs <= warmupMs);
const steadyRss = Math.max(withClusters.rssMb, ...warmupSamples.map((s) => s.rssMb));
const peakRss = Math.max(...samples.map((s) => s.rssMb), settledRss);
const rssLimit = steadyRss * rssGrowthFactorMax + rssSlackMb;
/**
 * Least-squares slope of RSS over the last third of the traffic phase, MB per minute (reported, not judged:
 * it is noisy).
 */
function rssSlopeMbPerMin(): number {
  const tail = samples.slice(Math.floor((samples.length * 2) / 3));
  if (tail.length < 3) return NaN;
  const mx = tail.reduce((a, s) => a + s.atMs, 0) / tail.length;
  const my = tail.reduce((a, s) => a + s.rssMb, 0) / tail.length;
  const sxy = tail.reduce((a, s) => a + (s.atMs - mx) * (s.rssMb - my), 0);
  const sxx = tail.reduce((a, s) => a + (s.atMs - mx) ** 2, 0);
  return sxx === 0 ? NaN : (sxy / sxx) * 60_000;
}
const rssSlope = rssSlopeMbPerMin();
for (const c of tracked) await must('DELETE', `/api/v1/clusters/${c.id}`, undefined, [204]);
const finalThreads = await threadsSettleTo(empty.threads, 5000);
await sleep(500);
const final = procStat();
const health = await call('GET', '/healthz');
await sim.stop();

// ---- report ----
const failures: string[] = [];
const rows = tracked.map((c) => {
  const conv = converged.get(c.id);
  const ok = c.ops.write.ok + c.ops.read.ok + c.ops.delete.ok;
  const refused = c.ops.write.refused + c.ops.read.refused + c.ops.delete.refused;
  const unexpected = c.ops.write.unexpected + c.ops.read.unexpected + c.ops.delete.unexpected;
  if (c.ops.write.ok === 0) failures.push(`${c.kind}: no write succeeded during the soak`);
  if (unexpected > 0) failures.push(`${c.kind}: ${unexpected} answers other than 200/404/409`);
  if (!probeOk.get(c.id))
    failures.push(`${c.kind}: a write after healing did not succeed within ${settleMaxMs / 1000} s`);
  if ((conv?.keys ?? 0) < 2)
    failures.push(`${c.kind}: the stores hold ${conv?.keys ?? 0} key(s), so convergence was not really tested`);
  if (!conv?.ok)
    failures.push(
      `${c.kind}: replicas still disagree ${settleMaxMs / 1000} s after healing on ` +
        `${conv?.diverged.length ?? '?'} key(s): ${(conv?.diverged ?? []).slice(0, 3).join('; ')}`,
    );
  return {
    cluster: c.kind,
    'writes ok': c.ops.write.ok,
    'reads ok': c.ops.read.ok,
    'deletes ok': c.ops.delete.ok,
    'refused (404/409)': refused,
    unexpected,
    'refused %': (100 * refused) / Math.max(1, ok + refused + unexpected),
    'keys compared': conv?.keys ?? 0,
    converged: conv?.ok ? `yes, ${(conv.afterMs / 1000).toFixed(1)} s` : 'NO',
  };
});
if (settledRss > rssLimit)
  failures.push(
    `RSS did not return to steady state: ${settledRss.toFixed(0)} MB after healing > ` +
      `${rssLimit.toFixed(0)} MB (${rssGrowthFactorMax} x the warm-up peak ` +
      `${steadyRss.toFixed(0)} MB + ${rssSlackMb} MB)`,
  );
if (settledThreads !== withClusters.threads)
  failures.push(
    `threads after healing: ${settledThreads}, steady state with the same clusters: ${withClusters.threads}`,
  );
if (finalThreads > empty.threads)
  failures.push(
    `worker threads leaked: ${finalThreads} threads after deleting every cluster, ` +
      `${empty.threads} in the empty process`,
  );
if (churn.leaks.length > 0) failures.push(`throw-away clusters leaked threads: ${churn.leaks.slice(0, 3).join('; ')}`);
if (churn.failures.length > 0) failures.push(`throw-away clusters failed: ${churn.failures.slice(0, 3).join('; ')}`);
if (churn.created === 0 && durationS * 1000 > churnEveryMs * 2) failures.push('no throw-away cluster was created');
if (health.status !== 200) failures.push(`the server stopped answering /healthz (${health.status})`);

console.log(`\n## soak: ${durationS} s, seed ${seed}, ${clientLoops} clients, faults every ${faultEveryMs} ms\n`);
console.log(table(rows));
console.log('');
console.log(
  table([
    { measure: 'RSS, empty process (MB)', value: empty.rssMb },
    { measure: `RSS, ${tracked.length} clusters idle (MB)`, value: withClusters.rssMb },
    { measure: 'RSS, warm-up peak (MB)', value: steadyRss },
    { measure: 'RSS, peak during soak (MB)', value: peakRss },
    { measure: 'RSS trend, last third of the traffic (MB/min)', value: rssSlope },
    { measure: 'RSS, after healing (MB)', value: settledRss },
    { measure: 'RSS limit after healing (MB)', value: rssLimit },
    { measure: 'RSS, every cluster deleted (MB)', value: final.rssMb },
    { measure: 'threads, empty process', value: empty.threads },
    { measure: `threads, ${tracked.length} clusters (${workerThreads} nodes)`, value: withClusters.threads },
    { measure: 'threads, after healing', value: settledThreads },
    { measure: 'threads, every cluster deleted', value: finalThreads },
    { measure: 'throw-away clusters created / deleted', value: `${churn.created} / ${churn.deleted}` },
    {
      measure: 'faults applied',
      value: Object.entries(faultCounts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
    },
  ]),
);
if (unexpectedSamples.length > 0)
  console.log(`\nunexpected answers (first ${unexpectedSamples.length}):\n  ${unexpectedSamples.join('\n  ')}`);
console.log(
  failures.length === 0
    ? '\nsoak: PASS'
    : `\nsoak: FAIL\n  ${failures.join('\n  ')}\n  replay the schedule with SOAK_SEED=${seed} DURATION=${durationS}`,
);
console.log(
  JSON.stringify({
    soak: failures.length === 0 ? 'pass' : 'fail',
    seed,
    durationS,
    failures,
    clusters: rows,
    rssMb: {
      empty: empty.rssMb,
      steady: steadyRss,
      peak: peakRss,
      settled: settledRss,
      limit: rssLimit,
      final: final.rssMb,
      slopeLastThirdMbPerMin: rssSlope,
    },
    threads: { empty: empty.threads, steady: withClusters.threads, settled: settledThreads, final: finalThreads },
    churn: { created: churn.created, deleted: churn.deleted, leaks: churn.leaks.length },
    faults: faultCounts,
  }),
);
process.exit(failures.length === 0 ? 0 : 1);
