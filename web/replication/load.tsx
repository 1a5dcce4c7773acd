/**
 * The console's load generator and its charts: N clients (each at most one request in flight)
 * issue writes and reads with fetch() at the chosen rate over a key range, on the cluster shown;
 * every second a point is added to rolling 60-s charts of throughput (the page's answers and the
 * server's count from link_stats), latency p50/p99, replication lag (the nodes' statuses) and drops
 * (link_stats). The schedule's arithmetic is flow-model.ts's LoadSchedule; this file does the I/O.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../shared/api.js';
import { TimeChart, type SeriesSpec } from './charts.js';
import {
  checkLoadSettings,
  decodeLinkStats,
  LoadSchedule,
  loadClientsMax,
  loadKeysMax,
  loadRatePerSecondMax,
  quantile,
  type LoadSettings,
} from './flow-model.js';
import type { FrameWire, NodeView } from './model.js';
import type { ReplicationStore } from './store.js';
import { cpath } from './ui-state.js';

/** The charts' window, s (one point a second). */
export const chartWindowS = 60;
/** The generator looks at its schedule this often, ms. */
export const loadTickMs = 20;
/** Latencies kept per one-second bucket at most (the rate's bound: every answer of a second fits). */
const latenciesPerSecondMax = loadRatePerSecondMax;

interface Bucket {
  ok: number;
  failed: number;
  latencies: Float64Array;
  n: number;
  serverOps: number;
  dropped: number;
}

const emptyBucket = (): Bucket => ({
  ok: 0,
  failed: 0,
  latencies: new Float64Array(latenciesPerSecondMax),
  n: 0,
  serverOps: 0,
  dropped: 0,
});

/** The measures sampled once a second (each a column of the charts). */
type Measure = 'ok' | 'server' | 'p50' | 'p99' | 'lagMax' | 'dropped' | 'failed';

/** The charts' columns: xs in Unix seconds, one array per measure, aligned with xs (null: no value). */
interface Columns {
  xs: number[];
  ys: Record<Measure, Array<number | null>>;
}

const emptyColumns = (): Columns => ({
  xs: [],
  ys: { ok: [], server: [], p50: [], p99: [], lagMax: [], dropped: [], failed: [] },
});

/**
 * The columns with one more point, the oldest cut past `windowS` points (new arrays: the charts redraw
 * on a new xs).
 */
function appendPoint(old: Columns, x: number, point: Record<Measure, number | null>, windowS: number): Columns {
  const cut = old.xs.length >= windowS ? 1 : 0;
  const ys = {} as Record<Measure, Array<number | null>>;
  for (const k of Object.keys(old.ys) as Measure[]) ys[k] = [...old.ys[k].slice(cut), point[k]];
  return { xs: [...old.xs.slice(cut), x], ys };
}

/** The load view's charts: each a title and its series, one per measure it draws. */
const loadCharts: ReadonlyArray<{ title: string; series: ReadonlyArray<SeriesSpec & { measure: Measure }> }> = [
  {
    title: 'Throughput',
    series: [
      { measure: 'ok', label: 'page answers', color: '#2563eb', unit: 'ops/s' },
      { measure: 'server', label: 'server', color: '#16a34a', unit: 'ops/s' },
    ],
  },
  {
    title: 'Latency',
    series: [
      { measure: 'p50', label: 'p50', color: '#0891b2', unit: 'ms' },
      { measure: 'p99', label: 'p99', color: '#d97706', unit: 'ms' },
    ],
  },
  { title: 'Replication lag', series: [{ measure: 'lagMax', label: 'max lag', color: '#9333ea', unit: 'entries' }] },
  {
    title: 'Drops',
    series: [
      { measure: 'dropped', label: 'messages dropped', color: '#dc2626', unit: '/s' },
      { measure: 'failed', label: 'failed ops', color: '#64748b', unit: '/s' },
    ],
  },
];

/** The generator: its schedule, its clients' busy flags, and the keys it has written (reads go only there). */
class LoadRunner {
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly busy: boolean[];
  private busyCount = 0;
  private readonly written = new Set<number>();
  readonly schedule: LoadSchedule;

  constructor(
    private readonly clusterId: string,
    private readonly s: LoadSettings,
    private readonly bucket: () => Bucket,
  ) {
    this.busy = new Array<boolean>(s.clients).fill(false);
    this.schedule = new LoadSchedule(s);
  }

  start(): void {
    this.schedule.tick(performance.now(), 0);
    this.timer = setInterval(() => this.tick(), loadTickMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  private tick(): void {
    const go = this.schedule.tick(performance.now(), this.busyCount);
    for (let k = 0; k < go; k++) {
      const c = this.busy.indexOf(false);
      if (c < 0) break;
      void this.one(c);
    }
  }

  private async one(client: number): Promise<void> {
    this.busy[client] = true;
    this.busyCount++;
    const k = Math.floor(Math.random() * this.s.keys);
    const key = `load-${k}`;
    const clientId = `load-${client + 1}`;
    // A read of a key not written yet would answer 404 (logged by the browser as an error): write it first.
    const read = this.written.has(k) && Math.random() < this.s.readShare;
    const r = read
      ? await api.get(
          `${cpath(this.clusterId, '/read')}?${new URLSearchParams({ key, client_id: clientId }).toString()}`,
        )
      : await api.post(cpath(this.clusterId, '/write'), {
          key,
          value: `v${Date.now() % 1_000_000}`,
          client_id: clientId,
        });
    if (r.ok && !read) this.written.add(k);
    const b = this.bucket();
    if (r.ok) {
      b.ok++;
      if (b.n < b.latencies.length) b.latencies[b.n++] = r.ms;
    } else b.failed++;
    this.busy[client] = false;
    this.busyCount--;
  }
}

/** Props are the store and the cluster's id only: the panel does not redraw with every model update. */
export function LoadPanel({ store, clusterId }: { store: ReplicationStore; clusterId: string }): JSX.Element {
  const [clients, setClients] = useState('4');
  const [rate, setRate] = useState('50');
  const [keys, setKeys] = useState('100');
  const [reads, setReads] = useState('50');
  const [error, setError] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const [cols, setCols] = useState<Columns>(emptyColumns);
  const [started, setStarted] = useState({ started: 0, skipped: 0 });
  const runner = useRef<LoadRunner | null>(null);
  const bucket = useRef<Bucket>(emptyBucket());

  useEffect(() => {
    bucket.current = emptyBucket();
    setCols(emptyColumns());
    const onFrame = (f: FrameWire): void => {
      if (f.type !== 'link_stats' || f.cluster_id !== clusterId) return;
      const d = decodeLinkStats(f.data);
      if (d === null) return;
      const b = bucket.current;
      if (d.ops) b.serverOps += d.ops.writes + d.ops.reads + d.ops.write_failures;
      for (const l of d.links)
        b.dropped += (l.dropped?.rate ?? 0) + (l.dropped?.partition ?? 0) + (l.dropped?.full ?? 0);
    };
    store.listeners.add(onFrame);
    // One point a second: the bucket closes, the columns keep the last chartWindowS points.
    const sampler = setInterval(() => {
      const b = bucket.current;
      bucket.current = emptyBucket();
      const lat = b.latencies.subarray(0, b.n);
      let lagMax = 0;
      // The model as it is now (the store's book, not the last redraw's copy).
      const c = store.book.get(clusterId);
      if (c)
        for (const id of c.nodeIds) {
          const n = c.nodes[id] as NodeView;
          if (!n.removed && n.lag > lagMax) lagMax = n.lag;
        }
      const measuring = runner.current?.running === true;
      setCols((old) =>
        appendPoint(
          old,
          Math.round(Date.now() / 1000),
          {
            ok: measuring || b.ok > 0 ? b.ok : null,
            server: b.serverOps,
            p50: b.n > 0 ? quantile(lat, 0.5) : null,
            p99: b.n > 0 ? quantile(lat, 0.99) : null,
            lagMax,
            dropped: b.dropped,
            failed: measuring || b.failed > 0 ? b.failed : null,
          },
          chartWindowS,
        ),
      );
      if (runner.current)
        setStarted({ started: runner.current.schedule.started, skipped: runner.current.schedule.skipped });
    }, 1_000);
    return () => {
      store.listeners.delete(onFrame);
      clearInterval(sampler);
      runner.current?.stop();
      runner.current = null;
      setRunning(false);
    };
  }, [store, clusterId]);

  const start = (e: Event): void => {
    e.preventDefault();
    const s: LoadSettings = {
      clients: Number(clients),
      ratePerS: Number(rate),
      keys: Number(keys),
      readShare: Number(reads) / 100,
    };
    const ok = checkLoadSettings(s);
    if (!ok.ok) {
      setError(ok.error);
      return;
    }
    setError(null);
    runner.current?.stop();
    runner.current = new LoadRunner(clusterId, s, () => bucket.current);
    runner.current.start();
    setRunning(true);
  };
  const stop = (): void => {
    runner.current?.stop();
    setRunning(false);
  };

  return (
    <section class="panel" aria-labelledby="load-h">
      <h2 id="load-h">Load generator</h2>
      <form class="row" onSubmit={start}>
        <label>
          Clients
          <input
            type="number"
            min={1}
            max={loadClientsMax}
            value={clients}
            onInput={(e) => setClients((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          Rate (ops/s)
          <input
            type="number"
            min={1}
            max={loadRatePerSecondMax}
            value={rate}
            onInput={(e) => setRate((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          Keys
          <input
            type="number"
            min={1}
            max={loadKeysMax}
            value={keys}
            onInput={(e) => setKeys((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          Reads (%)
          <input
            type="number"
            min={0}
            max={100}
            value={reads}
            onInput={(e) => setReads((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={running}>
          Start load
        </button>
        <button type="button" class="secondary" disabled={!running} onClick={stop}>
          Stop load
        </button>
      </form>
      <p class={`status-line ${error !== null ? 'error' : ''}`} aria-live="polite">
        {error ??
          (running
            ? `running: ${started.started} operations started, ${started.skipped} skipped (every client busy)`
            : started.started > 0
              ? `stopped after ${started.started} operations (${started.skipped} skipped)`
              : 'Browsers open about six connections per server: past that, clients wait their turn.')}
      </p>
      <div class="charts">
        {loadCharts.map((c) => (
          <TimeChart
            key={c.title}
            title={c.title}
            series={c.series}
            windowS={chartWindowS}
            xs={cols.xs}
            ys={c.series.map((x) => cols.ys[x.measure])}
          />
        ))}
      </div>
    </section>
  );
}
