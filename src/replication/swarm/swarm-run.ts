/**
 * What every seeded swarm run shares (raft-swarm.ts, kv-swarm.ts): the options each run takes, the
 * cluster set-up (the seeded DetCluster handed to the observer before it runs, its base one-way
 * latencies kept for restoring after a clearFaults), the weighted draw of the next fault, and the
 * result's trace read only when somebody asks. It drives nothing by itself: the fault and client
 * loops, and the checks, are each swarm's own.
 */
import { DetCluster, type DetClusterOptions } from '../../fabric/deterministic.js';
import type { NodeId } from '../core.js';
import type { Rng } from '../../util/rng.js';

/** The options common to every swarm's run (each swarm adds its own). */
export interface SwarmRunOptions {
  /** Virtual ms of faults and client load. */
  faultMs: number;
  /** A client gives up on a request after this long (a write's outcome then stays unknown). */
  clientGiveUpMs: number;
  /** Client requests per run, at most (bounds the cost of the busiest profiles). */
  opsMax: number;
  /** Called once with the run's cluster, before it runs: it may watch (trace-file.ts), never drive it. */
  observe?: (c: DetCluster) => void;
}

/**
 * Each directed link's base latency, drawn once per run, set on the fabric as it is drawn and set
 * again by restore() (after a clearFaults, or once faults are healed), in the order first drawn.
 */
export class BaseLatencies {
  private readonly links = new Map<string, { from: NodeId; to: NodeId; ms: number }>();

  constructor(private readonly c: DetCluster) {}

  set(from: NodeId, to: NodeId, ms: number): void {
    const key = `${from}>${to}`;
    const link = this.links.get(key);
    if (link) link.ms = ms;
    else this.links.set(key, { from, to, ms });
    this.c.fabric.setLatency(from, to, ms);
  }

  restore(): void {
    for (const link of this.links.values()) this.c.fabric.setLatency(link.from, link.to, link.ms);
  }
}

/** One swarm run's cluster, its random source (the cluster's), its start time and base latencies. */
export interface SwarmRun {
  c: DetCluster;
  rng: Rng;
  /** Virtual time when the run began. */
  start: number;
  latencies: BaseLatencies;
  /** The run's kept trace lines, built when called (results hand it out as a lazy `trace`). */
  readTrace: () => string[];
}

/** Builds the run's cluster and shows it to the observer before anything runs. */
export function startSwarmRun(cluster: DetClusterOptions, observe: SwarmRunOptions['observe']): SwarmRun {
  const c = new DetCluster(cluster);
  observe?.(c);
  return { c, rng: c.rng, start: c.now, latencies: new BaseLatencies(c), readTrace: c.traceReader() };
}

/**
 * A fault kind drawn with probability proportional to its weight (one `rng.int` draw); undefined
 * when every weight is 0.
 */
export function pickWeighted<K extends string>(
  kinds: readonly K[],
  weights: Record<K, number>,
  rng: Rng,
): K | undefined {
  let total = 0;
  for (const k of kinds) total += weights[k];
  let x = rng.int(total);
  for (const k of kinds) {
    x -= weights[k];
    if (x < 0) return k;
  }
  return undefined;
}

/** Each result's reader of its kept trace lines, for the one `trace` getter every result shares. */
const traceReaders = new WeakMap<object, () => string[]>();

function readResultTrace(this: object): string[] {
  return (traceReaders.get(this) as () => string[])();
}

/**
 * `result` with a lazy `trace`: an own enumerable getter, as `get trace()` in the literal was, its
 * lines built when read (a window of seeds never reads them). One getter for every result: a getter
 * made per result in the literal (a closure over the run) kept the whole finished run alive through
 * every scavenge after the result was dropped, until the next full GC.
 */
export function withLazyTrace<T extends object>(
  result: T,
  readTrace: () => string[],
): T & { readonly trace: string[] } {
  traceReaders.set(result, readTrace);
  Object.defineProperty(result, 'trace', { get: readResultTrace, enumerable: true, configurable: true });
  return result as T & { readonly trace: string[] };
}
