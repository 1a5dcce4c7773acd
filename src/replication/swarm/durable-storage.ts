/**
 * A node's storage outside its core, for the seeded swarm (kv-swarm.ts) and the conformance tests:
 * the durable records a core drains are folded as the live front folds them, a restart is built
 * from that fold alone, and the restarted core gets its own deep copy of it (cloneData).
 */
import type {
  ClientRequest,
  ControlCommand,
  ControlResult,
  CoreFactory,
  CoreOptions,
  CoreOutput,
  CoreStatus,
  DurableFold,
  NodeCore,
  NodeId,
  Version,
} from '../core.js';
import type { KeyClocks } from '../cores/multi-leader/clock-samples.js';
import { hasOwnProperty } from '../../util/own.js';

/** A core that shows its keys' clocks without building its views (the multi_leader core). */
export interface ClockSampled {
  clockSamples?: () => KeyClocks[] | undefined;
}

/**
 * The node's storage outside the core, as the live front keeps it: every durable record drained is
 * folded (across incarnations), and persistentState() hands that fold to DetCluster's crash(), so a
 * restart is built from the records alone (these cores have no persistentState() of their own).
 * The restarted core gets a deep copy, so it cannot alias what storage holds: `clone` (cloneData
 * unless the strategy has its own, see persistedCloneOf).
 *
 * The records are folded when persistentState() asks, in the order they were drained (the records
 * are the cores' own fresh lists, never changed once drained): the same state as folding each as it
 * comes, without folding what no crash reads. A checkpoint replaces the whole state
 * (DurableFold.isCheckpoint), so the records before it are let go unfolded. A swarm seed reads the
 * fold of about a quarter of the records it drains (a node that never crashes is never read).
 */
export function withDurableStorage(
  factory: CoreFactory,
  fold: DurableFold,
  clone: (persisted: unknown) => unknown = cloneData,
): CoreFactory {
  return (opts) =>
    new StoredCore(
      factory(opts.persisted === undefined ? opts : withPersisted(opts, clone(opts.persisted))),
      fold,
      opts.persisted,
    );
}

/**
 * A core and its storage (withDurableStorage). A class rather than an object literal of closures with
 * `term` and `clockSamples` stored into it afterwards: V8 kept such an object (and the core, its
 * records and the run around it) alive through young-generation GCs after the run dropped it, until
 * a full GC, so every finished swarm seed was promoted. `term` is undefined and clockSamples()
 * returns undefined for a core that has none (every reader treats both as absent).
 */
class StoredCore implements NodeCore, ClockSampled {
  readonly id: NodeId;
  /** Records drained and not folded yet, oldest first (from the last checkpoint on, when one came). */
  private readonly pending: unknown[] = [];

  constructor(
    private readonly core: NodeCore & ClockSampled & { readonly term?: number },
    private readonly fold: DurableFold,
    private stored: unknown,
  ) {
    this.id = core.id;
  }

  /** The single_leader core's `term` (status().term without building the status), passed on. */
  get term(): number | undefined {
    return this.core.term;
  }

  /** The multi_leader core's clockSamples() (what its views show of the clocks), passed on. */
  clockSamples(): KeyClocks[] | undefined {
    return this.core.clockSamples?.();
  }

  onClient(req: ClientRequest, now: number): void {
    this.core.onClient(req, now);
  }

  onMessage(from: NodeId, msg: unknown, now: number): void {
    this.core.onMessage(from, msg, now);
  }

  onTick(now: number): void {
    this.core.onTick(now);
  }

  nextDeadline(): number {
    return this.core.nextDeadline();
  }

  drain(out: CoreOutput): void {
    const from = out.durable?.length ?? 0;
    this.core.drain(out);
    const records = out.durable;
    if (records === undefined) return;
    for (let i = from; i < records.length; i++) {
      const record = records[i];
      if (this.fold.isCheckpoint(record)) this.pending.length = 0;
      this.pending.push(record);
    }
  }

  control(cmd: ControlCommand, now: number): ControlResult {
    return this.core.control(cmd, now);
  }

  status(now: number): CoreStatus {
    return this.core.status(now);
  }

  logView(): unknown[] {
    return this.core.logView();
  }

  storeView(): Record<string, Version> {
    return this.core.storeView();
  }

  persistentState(): unknown {
    for (let i = 0; i < this.pending.length; i++) this.stored = this.fold.fold(this.stored, this.pending[i]);
    this.pending.length = 0;
    return this.stored;
  }
}

/**
 * `opts` with `persisted` replaced, built without the spread's first copy of the field: `{ ...opts,
 * persisted }` stores the field twice, which makes it a mutable field of the options' hidden class in
 * V8 and throws away the optimised code of every core that relied on it (on most restarts of a run).
 */
function withPersisted(opts: CoreOptions, persisted: unknown): CoreOptions {
  const { persisted: _replaced, ...rest } = opts;
  return { ...rest, persisted };
}

/** Thrown inside clonePlain when a value is not plain data: cloneData falls back to structuredClone. */
const notPlain = new Error('not plain data');

/**
 * structuredClone(x), done in JavaScript for the plain data a durable fold holds: primitives, plain
 * objects, dense arrays and Maps, shared references and cycles kept as they are. Anything else (a
 * class instance, a Set, a typed array, a hole, a `__proto__` key) is left to structuredClone for the
 * whole value. The same result, several times cheaper on a node's log of a few hundred entries, and a
 * restart happens on most seeds.
 */
export function cloneData<T>(x: T): T {
  try {
    return clonePlain(x, new Map()) as T;
  } catch (err) {
    if (err !== notPlain) throw err;
    return structuredClone(x);
  }
}

function clonePlain(x: unknown, seen: Map<object, unknown>): unknown {
  if (typeof x !== 'object' || x === null) {
    if (typeof x === 'function' || typeof x === 'symbol') throw notPlain;
    return x;
  }
  const done = seen.get(x);
  if (done !== undefined) return done;
  const proto = Object.getPrototypeOf(x) as unknown;
  if (proto === Array.prototype) {
    const a = x as unknown[];
    const out: unknown[] = [];
    seen.set(x, out);
    for (let i = 0; i < a.length; i++) {
      if (!(i in a)) throw notPlain;
      out.push(clonePlain(a[i], seen));
    }
    return out;
  }
  if (proto === Map.prototype) {
    const out = new Map<unknown, unknown>();
    seen.set(x, out);
    for (const [k, v] of x as Map<unknown, unknown>) out.set(clonePlain(k, seen), clonePlain(v, seen));
    return out;
  }
  if (proto !== Object.prototype) throw notPlain;
  const o = x as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  seen.set(x, out);
  for (const k in o) {
    if (!hasOwnProperty.call(o, k)) continue;
    if (k === '__proto__') throw notPlain;
    out[k] = clonePlain(o[k], seen);
  }
  return out;
}
