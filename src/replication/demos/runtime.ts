/**
 * The small runtime every primitive demo runs on: a set of pure actors (2PC coordinator, Paxos
 * acceptor, SWIM member, ...) wired through the seeded `Fabric` under a virtual clock, each message
 * taking a random one-way latency drawn from a seeded rng. It also holds the narrator that turns a
 * run into numbered sentences stamped with virtual time.
 * It is not `DetCluster`: demo actors are not replication NodeCores (no client data API), so this
 * driver is the same step loop (next fabric delivery or actor deadline, deliver, tick) without it.
 */
import { Fabric } from '../../fabric/fabric.js';
import { invariant } from '../../util/assert.js';
import { SeededRng, type Rng } from '../../util/rng.js';
import { demoStepsPerInstantMax, narrativeSentencesMax } from '../limits.js';

export interface Outgoing<M> {
  to: string;
  msg: M;
}

/** A demo protocol role in the Step/Ready shape: inputs with the time injected, outputs drained. */
export interface DemoActor<M> {
  readonly id: string;
  onMessage(from: string, msg: M, now: number): void;
  onTick(now: number): void;
  /** Absolute virtual time (ms) at which onTick must next run; Infinity when nothing is pending. */
  nextDeadline(): number;
  /** Moves pending outgoing messages into `out` and clears them. */
  drain(out: Array<Outgoing<M>>): void;
}

export interface LatencyRange {
  minMs: number;
  maxMs: number;
}

export interface DemoNetOptions {
  seed: number;
  /** One-way latency of each message, drawn uniformly per message (integer ms). */
  latency: LatencyRange;
}

export class DemoNet<M> {
  readonly fabric: Fabric<M>;
  /** Left for the demo's own choices (fault times, client jitter); forked after the fabric's and latency's. */
  readonly rng: Rng;
  /** Messages that reached a crashed actor and were lost. */
  lostToCrashed = 0;
  /** Observer of every message handed to a running actor (narration, safety checkers). */
  onDeliver?: (from: string, to: string, msg: M, now: number) => void;

  private clock = 0;
  private readonly latencyRng: Rng;
  private readonly latency: LatencyRange;
  private readonly actors = new Map<string, DemoActor<M> | undefined>();
  private readonly order: string[] = [];
  private readonly outbox: Array<Outgoing<M>> = [];
  private instant = -Infinity;
  private stepsAtInstant = 0;

  constructor(opts: DemoNetOptions) {
    invariant(
      opts.latency.minMs >= 0 && opts.latency.maxMs >= opts.latency.minMs,
      'latency range must satisfy 0 <= min <= max',
    );
    const root = new SeededRng(opts.seed);
    this.fabric = new Fabric<M>({ rng: root.fork() });
    this.latencyRng = root.fork();
    this.rng = root.fork();
    this.latency = opts.latency;
  }

  get now(): number {
    return this.clock;
  }

  /** Adds an actor (a new node on the fabric), or replaces a crashed one by its restarted incarnation. */
  add(actor: DemoActor<M>): void {
    if (!this.actors.has(actor.id)) {
      this.order.push(actor.id);
      this.fabric.addNode(actor.id);
    }
    this.actors.set(actor.id, actor);
    this.flush(actor);
  }

  actor(id: string): DemoActor<M> | undefined {
    return this.actors.get(id);
  }

  isUp(id: string): boolean {
    return this.actors.get(id) !== undefined;
  }

  /** The actor stops: no ticks, and what reaches it is lost (its node stays on the fabric). */
  crash(id: string): void {
    invariant(this.actors.has(id), () => `unknown actor ${id}`);
    this.actors.set(id, undefined);
  }

  /**
   * Sends on behalf of `from` at the current time. The latency is drawn per message and set on the
   * link just before the submit; the fabric still keeps per-link FIFO (a fast message never
   * overtakes a slow one on the same link), so reordering happens only across links.
   */
  send(from: string, to: string, msg: M): void {
    this.fabric.setLatency(from, to, this.latencyRng.range(this.latency.minMs, this.latency.maxMs));
    this.fabric.submit(from, to, msg, this.clock);
  }

  nextEventAt(): number {
    let at = this.fabric.nextDueAt();
    for (const id of this.order) {
      const a = this.actors.get(id);
      if (!a) continue;
      const d = a.nextDeadline();
      if (d < at) at = d;
    }
    return at;
  }

  /** Jumps to the next event, delivers what is due, ticks due actors; false when nothing is pending. */
  step(): boolean {
    const at = this.nextEventAt();
    if (at === Infinity) return false;
    if (at > this.clock) this.clock = at;
    if (this.clock !== this.instant) {
      this.instant = this.clock;
      this.stepsAtInstant = 0;
    }
    invariant(++this.stepsAtInstant <= demoStepsPerInstantMax, () => `livelock at virtual time ${this.clock}`);
    this.fabric.deliverDue(this.clock, (to, batch) => {
      for (const d of batch) {
        const a = this.actors.get(to);
        if (!a) {
          this.lostToCrashed++;
          continue;
        }
        this.onDeliver?.(d.from, to, d.payload, this.clock);
        a.onMessage(d.from, d.payload, this.clock);
        this.flush(a);
      }
    });
    for (const id of this.order) {
      const a = this.actors.get(id);
      if (!a || a.nextDeadline() > this.clock) continue;
      a.onTick(this.clock);
      this.flush(a);
    }
    return true;
  }

  /** Processes every event up to and including `timeMs`, then sets the clock to it. */
  runUntil(timeMs: number): void {
    while (this.nextEventAt() <= timeMs) this.step();
    if (timeMs > this.clock) this.clock = timeMs;
  }

  /** Steps until `done()` holds (true) or the clock would pass `timeMs` (false). */
  runUntilOr(done: () => boolean, timeMs: number): boolean {
    while (!done()) {
      if (this.nextEventAt() > timeMs) {
        if (timeMs > this.clock) this.clock = timeMs;
        return false;
      }
      this.step();
    }
    return true;
  }

  private flush(a: DemoActor<M>): void {
    a.drain(this.outbox);
    for (const o of this.outbox) this.send(a.id, o.to, o.msg);
    this.outbox.length = 0;
  }
}

/** Collects the learner-facing story of a run: one sentence per step, stamped with virtual time. */
export class Narrator {
  private readonly lines: string[] = [];
  private omitted = 0;

  say(now: number, text: string): void {
    if (this.lines.length >= narrativeSentencesMax) {
      this.omitted++;
      return;
    }
    this.lines.push(`t=${formatMs(now)} ms: ${text}`);
  }

  /** A sentence that is not tied to a moment (setup, conclusion). */
  note(text: string): void {
    if (this.lines.length >= narrativeSentencesMax) {
      this.omitted++;
      return;
    }
    this.lines.push(text);
  }

  sentences(): string[] {
    return this.omitted > 0 ? [...this.lines, `(${this.omitted} further steps not shown.)`] : [...this.lines];
  }
}

function formatMs(ms: number): string {
  return Number.isInteger(ms) ? String(ms) : ms.toFixed(1);
}
