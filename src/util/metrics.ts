/**
 * prom-client through its public API, plus the two shapes the services' hot paths need: counters
 * that mirror a tally kept elsewhere, and a histogram whose observations are plain array writes.
 * `collectProcessMetrics` is prom-client's own collectDefaultMetrics on a service's registry (same
 * names, prefix optional). prom-client's index loads @opentelemetry/api (for exemplars; a few ms at
 * start-up, nothing per request); the OpenTelemetry SDK itself is still only loaded when tracing
 * is on (src/tracing/tracing.ts). This module holds no metric of any service.
 */
import * as PromClient from 'prom-client';

export const { Registry, Counter, Gauge, Histogram } = PromClient;
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

/**
 * prom-client's default process and Node.js metrics (process_cpu_seconds_total,
 * process_resident_memory_bytes, nodejs_eventloop_lag_seconds, nodejs_heap_size_used_bytes,
 * nodejs_gc_duration_seconds, ...) on `registry`, names prefixed with `prefix`.
 */
export function collectProcessMetrics(registry: PromClient.Registry, prefix = ''): void {
  PromClient.collectDefaultMetrics({ register: registry, prefix });
}

/**
 * A counter mirroring a monotonically growing number owned elsewhere (a hub's or a store's own
 * tally): each scrape adds what the number grew by since the last one.
 */
export function mirroredCounter(registry: PromClient.Registry, name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = now;
    },
  });
}

/** One label set of a DeferredHistogram: its bucket counts (not cumulative), sum and count. */
export class HistogramSeries {
  /** counts[i] = observations in (bounds[i-1], bounds[i]]; the last slot is past every bound (+Inf). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Prometheus' rule: a value equal to a bucket's upper bound belongs to that bucket (le). */
  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    (this.counts as { [i: number]: number })[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

interface ExportedValue {
  labels: Record<string, string | number>;
  /** The series' own labels (prom-client writes them after `le`, as its Histogram does). */
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
}

/**
 * A Prometheus histogram whose series are looked up once and then observed with a few array
 * writes (about 10 ns, against about 400 ns for a memoised prom-client `histogram.labels(...)`
 * child, which still hashes its label set on every observe). It registers itself on the registry
 * as a metric (name, help, type, get, reset: the contract prom-client's Registry reads), and is
 * exported in the same text format as prom-client's Histogram.
 */
export class DeferredHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly bounds: readonly number[],
    registry: PromClient.Registry,
  ) {
    for (let i = 1; i < bounds.length; i++) {
      if (!((bounds[i] as number) > (bounds[i - 1] as number))) throw new Error(`${name}: buckets must increase`);
    }
    registry.registerMetric(this as unknown as PromClient.Metric);
  }

  /** The series of one label set (created on first use). Look it up once and keep it: this builds a key. */
  seriesFor(labels: Readonly<Record<L, string>>): HistogramSeries {
    let key = '';
    for (const n of this.labelNames) key += `${labels[n]}\u0000`;
    let s = this.series.get(key);
    if (s === undefined) {
      const own: Record<string, string> = {};
      for (const n of this.labelNames) own[n] = labels[n];
      s = new HistogramSeries(this.bounds, own);
      this.series.set(key, s);
    }
    return s;
  }

  /** prom-client's metric contract: the samples, as its Histogram's get() shapes them. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: ExportedValue[] }> {
    const values: ExportedValue[] = [];
    for (const s of this.series.values()) {
      let acc = 0;
      const sharedLabels = s.labels;
      const bucket = `${this.name}_bucket`;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i] as number;
        values.push({ labels: { le: this.bounds[i] as number }, sharedLabels, value: acc, metricName: bucket });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels, value: s.count, metricName: bucket });
      values.push({ labels: {}, sharedLabels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Zeroes every series in place (Registry.resetMetrics); holders of a series keep it. */
  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
