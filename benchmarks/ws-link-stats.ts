/**
 * What a watching page costs the simulator (issue 17): writes/s over HTTP (wrk, 64 connections, 1,000
 * rotating keys) to one cluster with one /ws client subscribed to it as the page does
 * (`/ws?cluster_id=...&batch_ms=50&link_stats=1&op_events=0`: the cluster's events and a link_stats
 * frame every 100 ms, no frame per client operation, sent as one array message per 50 ms), against no
 * /ws client, in alternating slices on the same process and cluster; a third slice measures a client
 * that also takes one write_received frame per write (`link_stats=1` alone). The client reads every
 * frame as a page would (parses link_stats frames, counts the rest). Besides writes/s, the server's
 * CPU time per write (all its threads, from /proc) is reported: on a shared machine it swings much
 * less than throughput. Target: page ÷ none ≥ 0.95 (writes/s). A run with any error records nothing.
 */
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { median, recordResult } from './results.js';
import { postJson, runWrk, startChild, table, wrkAvailable, writeLua } from './lib.js';

const seconds = Number(process.env['BENCH_SECONDS'] ?? 5);
const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 3)));
const target = 0.95;
type Mode = 'none' | 'page' | 'op_events';
/** The /ws query of each watched mode. */
const queries: Record<Exclude<Mode, 'none'>, string> = {
  page: 'batch_ms=50&link_stats=1&op_events=0',
  op_events: 'link_stats=1',
};
if (!wrkAvailable()) {
  console.error('wrk is not installed (make bench installs it with apt-get)');
  process.exit(2);
}

const strategies: Array<{ name: string; body: Record<string, string | number> }> = [
  { name: 'raft, 3 nodes', body: { strategy: 'raft', node_count: 3 } },
  {
    name: 'single_leader async, 3 nodes',
    body: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' },
  },
];

/**
 * CPU seconds the server process has used (all its threads: the front and every node worker), from
 * /proc. Throughput on a shared 2-core machine swings with other load; CPU per write does much less.
 */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime + stime, in clock ticks (USER_HZ 100)
}

interface Watcher {
  frames: number;
  linkStatsFrames: number;
  messagesDrawn: number;
  close(): Promise<void>;
}

/** A /ws client as a page holds it: link_stats frames parsed (their messages summed), other frames counted. */
async function watch(port: number, clusterId: string, query: string): Promise<Watcher> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?cluster_id=${clusterId}&${query}`);
  const w: Watcher = {
    frames: 0,
    linkStatsFrames: 0,
    messagesDrawn: 0,
    close: () =>
      new Promise((resolve) => {
        ws.once('close', () => resolve());
        ws.close();
      }),
  };
  ws.on('message', (data: Buffer) => {
    // batch_ms (the page's query): one JSON array per window, each element a frame; parsed whole.
    if (data[0] === 0x5b) {
      for (const f of JSON.parse(data.toString()) as Array<{
        type: string;
        data: { links: Array<{ sent: number }> };
      }>) {
        w.frames++;
        if (f.type !== 'link_stats') continue;
        w.linkStatsFrames++;
        for (const l of f.data.links) w.messagesDrawn += l.sent;
      }
      return;
    }
    w.frames++;
    // A link_stats frame starts with {"type":"link_stats"; only those are parsed.
    if (data.length > 20 && data.toString('latin1', 9, 19) === 'link_stats') {
      const f = JSON.parse(data.toString()) as { data: { links: Array<{ sent: number }> } };
      w.linkStatsFrames++;
      for (const l of f.data.links) w.messagesDrawn += l.sent;
    }
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return w;
}

const rows: Array<Record<string, string | number>> = [];
let failed = false;
const sim = await startChild('src/replication/main.js', {}, 'REPLSIM_PORT');
try {
  for (const s of strategies) {
    const url = `http://127.0.0.1:${sim.port}`;
    const cl = await postJson(url, '/api/v1/clusters', s.body);
    const p = `/api/v1/clusters/${cl.id}/write`;
    const lua = writeLua(p, 1000);
    await new Promise((r) => setTimeout(r, 1000)); // raft: an election first
    runWrk(url + p, { connections: 64, seconds: 2, lua });
    const runsBy: Record<Mode, number[]> = { none: [], page: [], op_events: [] };
    const cpuBy: Record<Mode, number[]> = { none: [], page: [], op_events: [] };
    const order: Mode[] = ['none', 'page', 'op_events'];
    for (let rep = 0; rep < reps; rep++) {
      // Rotate which mode goes first.
      for (let k = 0; k < order.length; k++) {
        const mode = order[(k + rep) % order.length] as Mode;
        const w = mode === 'none' ? undefined : await watch(sim.port, cl.id, queries[mode]);
        const cpu0 = cpuSeconds(sim.proc.pid as number);
        const r = runWrk(url + p, { connections: 64, seconds, lua });
        const cpuUsPerWrite = ((cpuSeconds(sim.proc.pid as number) - cpu0) * 1e6) / (r.rps * seconds);
        cpuBy[mode].push(cpuUsPerWrite);
        await new Promise((res) => setTimeout(res, 300));
        await w?.close();
        if (r.errors > 0) {
          failed = true;
          console.error(`${s.name}, ${mode}: ${r.errors} errors or non-2xx answers`);
        }
        runsBy[mode].push(r.rps);
        rows.push({
          cluster: s.name,
          '/ws client': mode === 'none' ? 'none' : queries[mode],
          'writes/s': Math.round(r.rps),
          'p50 ms': r.p50ms,
          'p99 ms': r.p99ms,
          errors: r.errors,
          'server CPU µs/write': Math.round(cpuUsPerWrite),
          'frames/s': w ? Math.round(w.frames / seconds) : 0,
          'link_stats frames/s': w ? Math.round(w.linkStatsFrames / seconds) : 0,
          'peer msgs/s in link_stats': w ? Math.round(w.messagesDrawn / seconds) : 0,
        });
      }
    }
    await fetch(`${url}/api/v1/clusters/${cl.id}`, { method: 'DELETE' });
    const span = (xs: number[]): string =>
      `median ${median(xs).toFixed(3)} (${Math.min(...xs).toFixed(3)}–${Math.max(...xs).toFixed(3)})`;
    const ratiosOf = (m: Mode): number[] => runsBy[m].map((x, i) => x / (runsBy.none[i] as number));
    const cpuRatiosOf = (m: Mode): number[] => cpuBy.none.map((x, i) => x / (cpuBy[m][i] as number));
    const ratios = ratiosOf('page');
    const ratio = median(ratios);
    console.log(`${s.name}: writes/s page ÷ none ${span(ratios)}; target ≥ ${target}`);
    console.log(`${s.name}: server CPU per write none ÷ page (a CPU-bound ratio) ${span(cpuRatiosOf('page'))}`);
    console.log(
      `${s.name}: with op events: writes/s ${span(ratiosOf('op_events'))}, CPU/write ${span(cpuRatiosOf('op_events'))}`,
    );
    if (!failed) {
      recordResult({
        benchmark: 'ws-link-stats',
        measure: `HTTP writes, ${s.name}, 64 connections`,
        subject: `one /ws client on the cluster with ${queries.page}`,
        baseline: 'no /ws client',
        unit: 'writes/s',
        runs: runsBy.page,
        baselineRuns: runsBy.none,
        ratio,
        ratioRuns: ratios,
        target: { op: '>=', value: target, met: ratio >= target },
        method:
          `wrk, 64 connections, 1000 rotating keys, ${reps} rounds of ${seconds}-s slices (none, page, page with op ` +
          'events; the order rotated each round) after a 2-s warm-up, one replication process and cluster for all ' +
          'slices; the watching client parses every link_stats frame and counts the others; ratio = page ÷ none ' +
          `per round. Server CPU per write none ÷ page: ${span(cpuRatiosOf('page'))}.`,
      });
      recordResult({
        benchmark: 'ws-link-stats',
        measure: `HTTP writes, ${s.name}, 64 connections`,
        subject: `one /ws client on the cluster with ${queries.op_events} (a write_received frame per write)`,
        baseline: 'no /ws client',
        unit: 'writes/s',
        runs: runsBy.op_events,
        baselineRuns: runsBy.none,
        ratio: median(ratiosOf('op_events')),
        ratioRuns: ratiosOf('op_events'),
        method:
          'as the page measure, the client also taking op events. Server CPU per write none ÷ this: ' +
          `${span(cpuRatiosOf('op_events'))}.`,
      });
    }
  }
} finally {
  await sim.stop();
}
console.log(table(rows));
if (failed) {
  console.error('a run had errors: nothing recorded');
  process.exitCode = 1;
}
