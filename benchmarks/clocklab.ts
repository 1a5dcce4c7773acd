/**
 * Clock lab benchmarks, each against a baseline measured in the same run:
 *  1. events/s through the event bus to 1, 10 and 100 WebSocket clients (real server, real sockets,
 *     clients in this process), baseline: 1 client;
 *  2. application messages/s between processes through the lab core (clocks, RST/BSS metadata,
 *     hold-back check, fabric), baseline: the bare fabric moving the same number of messages;
 *  3. Chandy–Lamport snapshot completion for 10, 50 and 100 processes (core, virtual time:
 *     the wall time is the CPU cost of the marker rule), baseline: 10 processes.
 * Run: npx tsc -p tsconfig.json && node dist/benchmarks/clocklab.js
 */
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { Fabric } from '../src/fabric/fabric.js';
import { Lab } from '../src/clocklab/lab.js';
import { startClockLab } from '../src/clocklab/server.js';
import { silentLogger } from '../src/util/logger.js';
import { SeededRng } from '../src/util/rng.js';
import { recordResult } from './results.js';

const fmt = (n: number): string =>
  Number.isInteger(n) || n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2);

function table(title: string, header: string[], rows: Array<Array<string | number>>): void {
  console.log(`\n${title}`);
  const cells = [header, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : c)))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => String(r[i]).length)));
  for (const [k, r] of cells.entries()) {
    console.log(r.map((c, i) => String(c).padStart(widths[i] as number)).join('  '));
    if (k === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
}

// ---------------------------------------------------------------- 1. bus to WebSocket clients

/** The WebSocket clients live in a child process so that they do not share the server's event loop. */
const clientScript = `
import WebSocket from 'ws';
const [url, n] = [process.argv[1], Number(process.argv[2])];
const mark = Buffer.from('"label":"probe"');
let remaining = n;
let frames = 0;
const sockets = [];
for (let i = 0; i < n; i++) {
  const ws = new WebSocket(url);
  ws.on('message', (data) => {
    frames++;
    if (data.indexOf(mark) >= 0 && --remaining === 0) process.stdout.write('done ' + frames + '\\n');
  });
  await new Promise((r) => ws.once('open', r));
  sockets.push(ws);
}
process.stdout.write('ready\\n');
process.stdin.on('data', () => { for (const ws of sockets) ws.terminate(); process.exit(0); });
`;

async function busToClients(
  clients: number,
  events: number,
): Promise<{ eventsPerSec: number; framesPerSec: number; dropped: number }> {
  const handle = await startClockLab({
    port: 0,
    proxyPort: false,
    host: '127.0.0.1',
    env: { VC_SEED: '1', VC_WS_CLIENT_QUEUE_BYTES: String(64 * 1024 * 1024) },
    logger: silentLogger(),
  });
  const lab = handle.lab;
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', clientScript, `ws://127.0.0.1:${handle.port}/ws`, String(clients)],
    { cwd: process.cwd(), stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const waiters: Array<(line: string) => void> = [];
  child.stdout.on('data', (chunk: Buffer) => {
    for (const line of chunk
      .toString()
      .split('\n')
      .filter((l) => l !== '')) {
      const w = waiters.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  child.once('exit', (code) => {
    for (const w of waiters.splice(0)) w(`exit ${code}`);
  });
  const nextLine = async (): Promise<string> => {
    const line = lines.length > 0 ? (lines.shift() as string) : await new Promise<string>((r) => waiters.push(r));
    if (line.startsWith('exit')) throw new Error(`the client process ended early (${line})`);
    return line;
  };
  await nextLine(); // ready: every client connected (and got the short history)
  const t0 = performance.now();
  // Each internal event publishes two events; batches stay well under the 4096-event bus buffer.
  const batch = 1000;
  for (let sent = 0; sent < events; sent += batch * 2) {
    for (let k = 0; k < batch; k++) lab.internalEvent('p1');
    await new Promise((r) => setImmediate(r));
  }
  lab.internalEvent('p1', 'probe');
  await nextLine(); // done: the last client got the probe
  const ms = performance.now() - t0;
  const metrics = await (await fetch(`http://127.0.0.1:${handle.port}/metrics`)).text();
  const dropped =
    Number(/^vc_ws_events_dropped_total (\S+)$/m.exec(metrics)?.[1] ?? 0) +
    Number(/^vc_event_bus_publish_drops (\S+)$/m.exec(metrics)?.[1] ?? 0);
  child.stdin.write('bye\n');
  await new Promise((r) => child.once('exit', r));
  await handle.close();
  const total = events + 2;
  return { eventsPerSec: (total / ms) * 1000, framesPerSec: ((total * clients) / ms) * 1000, dropped };
}

// ---------------------------------------------------------------- 2. messages between processes

function fabricBaseline(n: number, messages: number): number {
  const f = new Fabric<number>({ rng: new SeededRng(1), linkQueueMax: 1 << 20 });
  const ids = Array.from({ length: n }, (_, i) => `p${i}`);
  for (const id of ids) f.addNode(id);
  const rng = new SeededRng(2);
  let received = 0;
  let now = 0;
  const t0 = performance.now();
  for (let i = 0; i < messages; i++) {
    const a = rng.int(n);
    let b = rng.int(n - 1);
    if (b >= a) b++;
    f.submit(ids[a] as string, ids[b] as string, i, now);
    if (i % 100 === 99) f.deliverDue(++now, (_to, batch) => (received += batch.length));
  }
  f.deliverDue(now + 1, (_to, batch) => (received += batch.length));
  const ms = performance.now() - t0;
  if (received !== messages) throw new Error('baseline lost messages');
  return (messages / ms) * 1000;
}

function labMessages(n: number, messages: number, clock: 'vector' | 'matrix', cast: 'unicast' | 'broadcast'): number {
  let delivered = 0;
  const lab = new Lab({
    rng: new SeededRng(1),
    emit: (type) => {
      if (type === 'message_delivered') delivered++;
    },
    config: { defaultDelayMs: 1, initialBalance: 0 },
  });
  for (let i = 0; i < n; i++) lab.spawn(`p${i}`, clock);
  const rng = new SeededRng(2);
  const t0 = performance.now();
  let sent = 0;
  let i = 0;
  while (sent < messages) {
    const a = rng.int(n);
    if (cast === 'broadcast') {
      lab.broadcast(`p${a}`, 'x');
      sent += n - 1;
    } else {
      let b = rng.int(n - 1);
      if (b >= a) b++;
      lab.send(`p${a}`, `p${b}`, 'x');
      sent++;
    }
    if (++i % 100 === 0) lab.advance(1);
  }
  lab.runUntilQuiet(1e9);
  const ms = performance.now() - t0;
  if (delivered !== sent) throw new Error(`lab delivered ${delivered} of ${sent}`);
  return (sent / ms) * 1000;
}

// ---------------------------------------------------------------- 3. snapshots

function snapshotTime(n: number, runs: number): { ms: number; virtualMs: number; markers: number } {
  let markers = 0;
  const lab = new Lab({
    rng: new SeededRng(1),
    emit: (type) => {
      if (type === 'marker_sent') markers++;
    },
    config: { defaultDelayMs: 1 },
  });
  for (let i = 0; i < n; i++) lab.spawn(`p${i}`, 'vector');
  // some traffic in flight so channel states are recorded
  for (let i = 0; i < n; i++) lab.send(`p${i}`, `p${(i + 1) % n}`, 'transfer', 1);
  let total = 0;
  let virtual = 0;
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    const v0 = lab.now;
    const s = lab.startSnapshot(`p${r % n}`);
    if (!s.ok) throw new Error(s.error.message);
    lab.runUntilQuiet(1e9);
    total += performance.now() - t0;
    virtual += lab.now - v0;
    const v = lab.verifySnapshot(s.value.id);
    if (!v.ok || !v.value.consistent) throw new Error('snapshot not consistent');
  }
  return { ms: total / runs, virtualMs: virtual / runs, markers: markers / runs };
}

async function main(): Promise<void> {
  console.log(`clock lab benchmarks (node ${process.version}, ${new Date().toISOString()})`);

  const busRows: Array<Array<string | number>> = [];
  let base = 0;
  for (const clients of [1, 10, 100]) {
    const events = 40_000;
    const r = await busToClients(clients, events);
    if (clients === 1) base = r.framesPerSec;
    busRows.push([
      clients,
      events,
      r.eventsPerSec,
      r.framesPerSec,
      `${(r.framesPerSec / base).toFixed(2)}x`,
      r.dropped,
    ]);
    if (clients > 1) {
      recordResult({
        benchmark: 'clocklab',
        measure: `event bus to ${clients} WebSocket clients`,
        subject: `${clients} clients`,
        baseline: '1 client',
        unit: 'frames/s',
        runs: [r.framesPerSec],
        baselineRuns: [base],
        ratio: r.framesPerSec / base,
        method:
          `Frames per second delivered from the clock lab's event bus to WebSocket clients (real ` +
          `server and sockets; clients in a child process) for ${events.toLocaleString('en-US')} ` +
          `events, one run per client count (no range), ${r.dropped} dropped; ratio = N clients ÷ 1 client.`,
      });
    }
  }
  table(
    '1. events through the bus to WebSocket clients (clients in a child process, both on this 2-core machine)',
    ['clients', 'events', 'events/s (all clients done)', 'frames/s delivered', 'frames vs 1 client', 'dropped'],
    busRows,
  );

  const msgRows: Array<Array<string | number>> = [];
  const baseline = fabricBaseline(10, 200_000);
  msgRows.push(['bare fabric (baseline)', 10, 'unicast', baseline, '1.00x']);
  for (const [n, clock, cast, count] of [
    [3, 'vector', 'unicast', 200_000],
    [10, 'vector', 'unicast', 200_000],
    [50, 'vector', 'unicast', 50_000],
    [10, 'matrix', 'unicast', 100_000],
    [10, 'vector', 'broadcast', 200_000],
  ] as const) {
    const r = labMessages(n, count, clock, cast);
    msgRows.push([`lab, ${clock} clocks`, n, cast, r, `${(r / baseline).toFixed(2)}x`]);
    recordResult({
      benchmark: 'clocklab',
      measure: `messages between ${n} processes, ${clock} clocks, ${cast}`,
      subject: 'lab core (clocks, metadata, hold-back, fabric)',
      baseline: 'bare fabric, 10 processes, unicast',
      unit: 'msgs/s',
      runs: [r],
      baselineRuns: [baseline],
      ratio: r / baseline,
      method:
        'Application messages per second sent and causally delivered in virtual time in one ' +
        'thread, one run each (no range), against the bare fabric moving 200,000 messages in ' +
        'the same process; ratio = lab ÷ bare fabric.',
    });
  }
  table(
    '2. messages/s between processes (send + causal delivery, virtual time)',
    ['path', 'processes', 'cast', 'messages/s', 'vs baseline'],
    msgRows,
  );

  const snapRows: Array<Array<string | number>> = [];
  let base10 = 0;
  for (const [n, runs] of [
    [10, 50],
    [50, 10],
    [100, 5],
  ] as const) {
    const r = snapshotTime(n, runs);
    if (n === 10) base10 = r.ms;
    snapRows.push([n, r.markers, r.ms, r.virtualMs, `${(r.ms / base10).toFixed(1)}x`]);
    if (n > 10) {
      recordResult({
        benchmark: 'clocklab',
        measure: `Chandy–Lamport snapshot, ${n} processes`,
        subject: `${n} processes`,
        baseline: '10 processes',
        unit: 'ms',
        runs: [r.ms],
        baselineRuns: [base10],
        ratio: r.ms / base10,
        method:
          'Wall (CPU) time of one snapshot to completion in virtual time with 1-ms channels, ' +
          `mean over ${runs} snapshots (no range); ratio = N processes ÷ 10 processes.`,
      });
    }
  }
  table(
    '3. Chandy–Lamport snapshot completion (1 ms channels; wall time is CPU cost)',
    ['processes', 'markers', 'wall ms', 'virtual ms', 'vs 10 processes'],
    snapRows,
  );
}

await main();
