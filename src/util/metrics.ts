/**
 * prom-client, minus the one piece that loads OpenTelemetry: prom-client's index requires its
 * default-metrics module, whose process-CPU metric requires @opentelemetry/api (for exemplars).
 * Tracing must cost nothing when off (not even an import), so services take prom-client's classes
 * from their own modules here and get the default process metrics from `collectProcessMetrics`,
 * which registers every prom-client default metric except that one and adds the same
 * process_cpu_*_seconds_total counters itself. Same names and types as prom-client's.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);
const lib = (name: string): unknown => require(`prom-client/lib/${name}`);

export const Registry = lib('registry') as typeof PromClient.Registry;
export const Counter = lib('counter') as typeof PromClient.Counter;
export const Gauge = lib('gauge') as typeof PromClient.Gauge;
export const Histogram = lib('histogram') as typeof PromClient.Histogram;
export type Registry = PromClient.Registry;
export type Counter<T extends string = string> = PromClient.Counter<T>;
export type Gauge<T extends string = string> = PromClient.Gauge<T>;
export type Histogram<T extends string = string> = PromClient.Histogram<T>;

type MetricModule = (registry: PromClient.Registry, config: Record<string, unknown>) => void;
const defaultMetricModules = [
  'processStartTime',
  'osMemoryHeap',
  'processOpenFileDescriptors',
  'processMaxFileDescriptors',
  'eventLoopLag',
  'processHandles',
  'processRequests',
  'processResources',
  'heapSizeAndUsed',
  'heapSpacesSizeAndUsed',
  'version',
  'gc',
];

/** prom-client's default process metrics on `registry`, names prefixed with `prefix` (process_cpu_* computed here). */
export function collectProcessMetrics(registry: PromClient.Registry, prefix = ''): void {
  for (const name of defaultMetricModules) (lib(`metrics/${name}`) as MetricModule)(registry, { prefix });
  let last = process.cpuUsage();
  // Metrics are read in registration order in one synchronous pass: the first counter's collect
  // refreshes all three before any of them is read.
  new Counter({
    name: `${prefix}process_cpu_user_seconds_total`,
    help: 'Total user CPU time spent in seconds.',
    registers: [registry],
    collect() {
      const now = process.cpuUsage();
      const du = (now.user - last.user) / 1e6;
      const ds = (now.system - last.system) / 1e6;
      last = now;
      this.inc(du);
      system.inc(ds);
      total.inc(du + ds);
    },
  });
  const system = new Counter({
    name: `${prefix}process_cpu_system_seconds_total`,
    help: 'Total system CPU time spent in seconds.',
    registers: [registry],
  });
  const total = new Counter({
    name: `${prefix}process_cpu_seconds_total`,
    help: 'Total user and system CPU time spent in seconds.',
    registers: [registry],
  });
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
