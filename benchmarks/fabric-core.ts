/**
 * Messages per second through the fabric's submit + deliverDue, for 3 and 5 nodes, all-to-all, with
 * zero latency and with 5 ms latency (thousands of messages in flight), in bursts per link and
 * interleaved across links, against a baseline measured
 * in the same run: the same payloads pushed into plain per-destination arrays and handed over.
 * It measures the data structure alone, no worker threads and no encoding.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/fabric-core.js
 */
import { Fabric, type Delivery } from '../src/fabric/fabric.js';
import { SeededRng } from '../src/util/rng.js';

const perLinkPerRound = 100;
const rounds = 400;

interface Case {
  nodes: number;
  latencyMs: number;
  /** burst: 100 messages on one link, then the next; interleaved: one message per link in turn. */
  pattern: 'burst' | 'interleaved';
}

/** Calls send(from, to) perLinkPerRound times for every ordered pair, in the case's pattern. */
function eachMessage(c: Case, nodes: string[], send: (from: string, to: string) => void): void {
  if (c.pattern === 'burst') {
    for (const from of nodes)
      for (const to of nodes) if (from !== to) for (let k = 0; k < perLinkPerRound; k++) send(from, to);
  } else {
    for (let k = 0; k < perLinkPerRound; k++)
      for (const from of nodes) for (const to of nodes) if (from !== to) send(from, to);
  }
}

function ids(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `n${i + 1}`);
}

function runFabric(c: Case, payload: Uint8Array): { msgs: number; ms: number; maxInFlight: number } {
  const nodes = ids(c.nodes);
  const f = new Fabric<Uint8Array>({ rng: new SeededRng(1), linkQueueMax: 4096 });
  for (const id of nodes) f.addNode(id);
  for (const a of nodes) for (const b of nodes) if (a !== b) f.setLatency(a, b, c.latencyMs);
  let received = 0;
  const sink = (_to: string, batch: Array<Delivery<Uint8Array>>): void => {
    received += batch.length;
  };
  let maxInFlight = 0;
  const t0 = performance.now();
  let now = 0;
  for (let r = 0; r < rounds; r++) {
    eachMessage(c, nodes, (from, to) => f.submit(from, to, payload, now));
    const inFlight = f.stats().in_flight;
    if (inFlight > maxInFlight) maxInFlight = inFlight;
    f.deliverDue(now, sink);
    now += 1;
  }
  while (f.nextDueAt() !== Infinity) {
    now = Math.max(now, f.nextDueAt());
    f.deliverDue(now, sink);
  }
  const ms = performance.now() - t0;
  if (received !== rounds * perLinkPerRound * c.nodes * (c.nodes - 1)) throw new Error('fabric lost messages');
  return { msgs: received, ms, maxInFlight };
}

function runBaseline(c: Case, payload: Uint8Array): { msgs: number; ms: number } {
  const nodes = ids(c.nodes);
  const index = new Map(nodes.map((id, i) => [id, i] as const));
  let queues: Uint8Array[][] = nodes.map(() => []);
  let received = 0;
  const sink = (_to: string, batch: Uint8Array[]): void => {
    received += batch.length;
  };
  const t0 = performance.now();
  for (let r = 0; r < rounds; r++) {
    eachMessage(c, nodes, (_from, to) => (queues[index.get(to) as number] as Uint8Array[]).push(payload));
    const taken = queues;
    queues = nodes.map(() => []);
    for (let i = 0; i < nodes.length; i++) sink(nodes[i] as string, taken[i] as Uint8Array[]);
  }
  const ms = performance.now() - t0;
  return { msgs: received, ms };
}

import { median, recordResult } from './results.js';

const reps = Math.max(1, Math.floor(Number(process.env['BENCH_REPS'] ?? 5)));

function main(): void {
  const payload = new Uint8Array(48);
  const cases: Case[] = [];
  for (const nodes of [3, 5]) {
    for (const latencyMs of [0, 5])
      for (const pattern of ['burst', 'interleaved'] as const) cases.push({ nodes, latencyMs, pattern });
  }
  // Warm-up so both paths are optimised before measuring.
  for (const c of cases) {
    runFabric(c, payload);
    runBaseline(c, payload);
  }
  const rows: string[][] = [
    ['nodes', 'latency', 'pattern', 'max in flight', 'fabric msg/s', 'arrays msg/s', 'fabric/arrays'],
  ];
  for (const c of cases) {
    const fabricRuns: number[] = [];
    const baseRuns: number[] = [];
    let inFlight = 0;
    for (let rep = 0; rep < reps; rep++) {
      const f = runFabric(c, payload);
      const b = runBaseline(c, payload);
      fabricRuns.push(f.msgs / (f.ms / 1000));
      baseRuns.push(b.msgs / (b.ms / 1000));
      inFlight = f.maxInFlight;
    }
    const ratios = fabricRuns.map((x, i) => x / (baseRuns[i] as number));
    const best = { fabric: median(fabricRuns), base: median(baseRuns), inFlight };
    recordResult({
      benchmark: 'fabric-core',
      measure: `${c.nodes} nodes, ${c.latencyMs} ms latency, ${c.pattern}`,
      subject: 'Fabric submit + deliverDue',
      baseline: 'pushing into plain per-node arrays',
      unit: 'msgs/s',
      runs: fabricRuns,
      baselineRuns: baseRuns,
      ratio: median(ratios),
      ratioRuns: ratios,
      method:
        `The fabric data structure alone in one thread (no workers, no encoding): ${rounds} ` +
        `rounds × ${perLinkPerRound} 48-byte messages per link per round through submit + ` +
        `deliverDue, against the same messages pushed into plain arrays; ${reps} alternating ` +
        'repetitions after one warm-up pass; ratio = fabric ÷ arrays.',
    });
    rows.push([
      String(c.nodes),
      `${c.latencyMs} ms`,
      c.pattern,
      String(best.inFlight),
      Math.round(best.fabric).toLocaleString('en-US'),
      Math.round(best.base).toLocaleString('en-US'),
      (best.fabric / best.base).toFixed(2),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  for (const r of rows) console.log(r.map((cell, i) => cell.padStart(widths[i] as number)).join('  '));
  console.log(
    `(${rounds} rounds x ${perLinkPerRound} messages per link per round, median of ${reps}; node ${process.version})`,
  );
}

main();
