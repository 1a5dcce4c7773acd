/**
 * The front process's handle on one node actor (a worker_thread): client requests are queued and
 * posted as one msgpack batch per event-loop turn; replies and events come back batched on the same
 * port; peer frames are handed to the cluster's fabric; durable records go to the node's
 * DurableStore before anything else of their post. Control calls (status, pause, clock skew, log,
 * store) go over comlink on a separate MessagePort, guarded: once the worker has exited every call
 * fails at once (comlink alone would wait forever). The worker's exit, whatever its cause, fails the
 * pending requests and is reported with a reason; it does not decide what the cluster does next.
 */
import os from 'node:os';
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import {
  decodeClient,
  encodeClientTransferable,
  leadingDurableFrame,
  type ActorOut,
  type FromActor,
} from '../../protocol/actor.js';
import type { ActorApi, ActorAssign, ActorBoot, ActorBooted, ActorInit } from '../../workers/node-actor.js';
import type { ClientOp, ClientReply, ControlResult, CoreEvent, CoreOptions, Strategy } from './core.js';
import { chooseActorFile } from './actor-file.js';
import { DurableStore } from './durable-store.js';
import {
  maxNodesFromEnv,
  nodeMemoryMbFromEnv,
  workerHeapMb,
  workerPoolActorsFromEnv,
  workerPoolBootsInFlightMax,
  workerPoolRefillQuietMs,
} from './limits.js';
import { activeTraceparent, tracing } from '../tracing/tracing.js';

/** offline: removed or stopped on purpose; crashed: the worker exited otherwise, until a restart. */
export type NodeState = 'online' | 'paused' | 'offline' | 'crashed';

/**
 * Why a node's worker exited: stopped (removed, cluster deleted), killed (the crash endpoint),
 * out_of_memory (ERR_WORKER_OUT_OF_MEMORY), error (an uncaught error in the worker), exited (it
 * ended by itself).
 */
export type ExitReason = 'stopped' | 'killed' | 'out_of_memory' | 'error' | 'exited';

export interface ExitInfo {
  reason: ExitReason;
  code: number;
  /** The worker's error message, when it died of one. */
  error?: string;
}

/** The actor's control API as the front calls it: every method answers a promise. */
export type ActorRemote = {
  [K in keyof ActorApi]: (...args: Parameters<ActorApi[K]>) => Promise<Awaited<ReturnType<ActorApi[K]>>>;
};

/** A control call to a node whose worker has exited. */
export class NodeDownError extends Error {
  constructor(
    readonly nodeId: string,
    readonly reason: ExitReason,
  ) {
    super(`node ${nodeId} is down (${reason})`);
  }
}

/** The actor's file: the one-file bundle when it is fresh (actor-file.ts), else the module. */
const actorUrl = chooseActorFile(new URL('../../workers/node-actor.js', import.meta.url)).url;

/** The heap limit each actor was started with, so the pool never hands out one sized for another budget. */
const heapOf = new WeakMap<Worker, number>();

/**
 * A new actor whose heap is sized from REPLSIM_NODE_MEMORY_MB as it is now (limits.ts workerHeapMb),
 * loading `preload`'s core as it starts (ActorBoot).
 */
function spawnActor(preload: Strategy | undefined): Worker {
  const heapMb = workerHeapMb(nodeMemoryMbFromEnv());
  const boot: ActorBoot = { preload };
  const w = new Worker(actorUrl, {
    workerData: boot,
    resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: heapMb },
    stdout: false,
    stderr: false,
  });
  heapOf.set(w, heapMb);
  return w;
}

/** Idle, booting and taken actors of the pool (tests and benchmarks read them; nothing decides on them). */
export interface ActorPoolStats {
  /** The pool's size (REPLSIM_WORKER_POOL) and its room under the memory budget now. */
  size: number;
  target: number;
  /** Started, modules loaded, waiting for a node. */
  warm: number;
  /** Started, still loading. */
  booting: number;
  /** Taken for a node (from the pool or started fresh when it was empty) and not exited. */
  live: number;
  /** Nodes served from the pool, and started fresh because it was empty (since the process started). */
  takenWarm: number;
  takenCold: number;
}

/**
 * Started node actors waiting to become a node. A worker thread costs tens of milliseconds of CPU
 * to start (isolate, Node's bootstrap, the actor's modules); a pool actor has paid that before a
 * cluster asks, and has loaded the core of the strategy asked for last (a strategy's modules cost
 * about as much again, and each held core about 1 MiB, so not all four: idle actors are told to
 * load a newly asked-for strategy while the pool is quiet). Taking one costs only its `{ init }`. Bounds:
 * REPLSIM_WORKER_POOL actors (limits.ts workerPoolActorsFromEnv), never more than the memory budget
 * leaves (REPLSIM_MAX_NODES minus the live nodes). It refills in the background, off the request
 * path: only after workerPoolRefillQuietMs without a take, at most workerPoolBootsInFlightMax boots
 * at a time. Taken actors are never given back: a node's worker ends with the node (terminated on
 * delete, reset, remove), and the pool refills with fresh ones, so no actor ever carries one
 * node's state into another.
 */
export class ActorPool {
  /** Not yet taken, oldest first: booted ones (in `warm`) and booting ones. */
  private readonly idle: Worker[] = [];
  private readonly warmSet = new WeakSet<Worker>();
  /** The strategies each idle actor has loaded or been told to load. */
  private readonly loaded = new WeakMap<Worker, Set<Strategy>>();
  /** The strategy of the last node taken: what new and idle actors load ahead. */
  private preload: Strategy | undefined;
  private readonly taken = new WeakSet<Worker>();
  private booting = 0;
  private live = 0;
  private takenWarm = 0;
  private takenCold = 0;
  private lastTakeMs = -Infinity;
  private refillTimer: NodeJS.Timeout | undefined;
  /** Set by warm(): the pool fills only in a server (a library caller spawning nodes gets fresh ones). */
  private filling = false;

  constructor(
    private size: number,
    private maxNodes: number,
  ) {}

  /** Actors the pool fills up to now: its size, within what the memory budget leaves beside the live nodes. */
  get target(): number {
    return Math.max(0, Math.min(this.size, this.maxNodes - this.live));
  }

  stats(): ActorPoolStats {
    const warm = this.idle.filter((w) => this.warmSet.has(w)).length;
    return {
      size: this.size,
      target: this.target,
      warm,
      booting: this.idle.length - warm,
      live: this.live,
      takenWarm: this.takenWarm,
      takenCold: this.takenCold,
    };
  }

  /**
   * An actor for a node, at once: a warm one if any, else one still booting (it takes its init as
   * soon as it listens), else a fresh one that loads only the node's own strategy.
   */
  take(strategy: Strategy): Worker {
    const heapMb = workerHeapMb(nodeMemoryMbFromEnv());
    // Booted under another REPLSIM_NODE_MEMORY_MB (a test changed it): not this budget's heap.
    for (const w of this.idle.filter((x) => heapOf.get(x) !== heapMb)) this.discard(w);
    this.preload = strategy;
    // Best first: warm with the core loaded, warm, booting with the core, booting.
    const rank = (w: Worker): number =>
      (this.warmSet.has(w) ? 0 : 2) + (this.loaded.get(w)?.has(strategy) === true ? 0 : 1);
    let i = -1;
    for (let j = 0; j < this.idle.length; j++) {
      if (i < 0 || rank(this.idle[j] as Worker) < rank(this.idle[i] as Worker)) i = j;
      if (rank(this.idle[i] as Worker) === 0) break;
    }
    let w: Worker;
    if (i >= 0) {
      w = this.idle.splice(i, 1)[0] as Worker;
      if (!this.warmSet.has(w)) this.booting--;
      this.takenWarm++;
    } else {
      w = spawnActor(strategy);
      w.once('exit', () => this.onExit(w));
      this.takenCold++;
    }
    this.taken.add(w);
    this.live++;
    this.lastTakeMs = performance.now();
    this.scheduleRefill();
    return w;
  }

  /** Starts filling the pool (a server calls it when it starts); re-reads the size and the budget. */
  warm(size: number = workerPoolActorsFromEnv(), maxNodes: number = maxNodesFromEnv(os.totalmem())): void {
    this.size = size;
    this.maxNodes = maxNodes;
    this.filling = true;
    this.trim();
    this.refill();
  }

  /** Ends every idle actor and stops filling until warm() again (a server closing). */
  async drain(): Promise<void> {
    this.filling = false;
    if (this.refillTimer !== undefined) clearTimeout(this.refillTimer);
    this.refillTimer = undefined;
    const ws = this.idle.splice(0);
    this.booting = 0;
    await Promise.all(ws.map((w) => w.terminate()));
  }

  private discard(w: Worker): void {
    const i = this.idle.indexOf(w);
    if (i < 0) return;
    this.idle.splice(i, 1);
    if (!this.warmSet.has(w)) this.booting--;
    void w.terminate();
  }

  /** Past the target (the budget shrank as nodes went live): the newest idle actors go. */
  private trim(): void {
    while (this.idle.length > this.target) this.discard(this.idle[this.idle.length - 1] as Worker);
  }

  private onExit(w: Worker): void {
    if (this.taken.has(w)) {
      this.live--;
      // A node ended: the budget has room for one more pool actor.
      this.scheduleRefill();
      return;
    }
    // An idle actor that died (failed to boot, or drained): forget it.
    const i = this.idle.indexOf(w);
    if (i >= 0) {
      this.idle.splice(i, 1);
      if (!this.warmSet.has(w)) this.booting--;
    }
  }

  private scheduleRefill(): void {
    if (!this.filling || this.refillTimer !== undefined) return;
    const wait = Math.max(0, this.lastTakeMs + workerPoolRefillQuietMs - performance.now());
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined;
      this.refill();
    }, wait);
    this.refillTimer.unref();
  }

  /** Boots actors up to the target, a few at a time; waits for quiet again if a node was taken meanwhile. */
  private refill(): void {
    if (!this.filling) return;
    if (performance.now() - this.lastTakeMs < workerPoolRefillQuietMs) {
      this.scheduleRefill();
      return;
    }
    this.trim();
    const preload = this.preload;
    if (preload !== undefined) {
      // Idle actors load the strategy asked for last, now that nobody waits (ActorAssign).
      for (const w of this.idle) {
        const set = this.loaded.get(w);
        if (set === undefined || set.has(preload)) continue;
        set.add(preload);
        const hint: ActorAssign = { preload };
        w.postMessage(hint);
      }
    }
    while (this.booting < workerPoolBootsInFlightMax && this.idle.length < this.target) {
      const w = spawnActor(preload);
      this.loaded.set(w, new Set(preload === undefined ? [] : [preload]));
      w.unref();
      w.on('error', () => {
        // An idle actor that failed to boot: its exit drops it; take() starts a fresh one if needed.
      });
      w.once('exit', () => this.onExit(w));
      w.once('message', (m: ActorBooted) => {
        if (!m.booted || this.taken.has(w) || !this.idle.includes(w)) return;
        this.warmSet.add(w);
        this.booting--;
        this.refill();
      });
      this.idle.push(w);
      this.booting++;
    }
  }
}

export const actorPool = new ActorPool(workerPoolActorsFromEnv(), maxNodesFromEnv(os.totalmem()));

/**
 * Client requests per post to an actor: a turn's requests go in batches of at most this many.
 * Measured with 64 connections writing to a 3-node single-leader cluster (req/s, same machine,
 * interleaved runs): one batch per turn 33-35k; batches of 4: 30k; 8: 31-36k; 12: 32-34k;
 * 16: 33-40k; 24: 35-40k. Later measured by CPU per write (the machine's 2 cores are the limit, and
 * req/s swings with the neighbours), 16 against 64 (the http-writes load, interleaved, /proc per
 * thread): posts to the actors 0.10 -> 0.07 per write for single_leader async and 0.20 -> 0.09-0.11 for
 * raft, posts back 0.20 -> 0.14 and 0.34 -> 0.16; whole-process CPU per write -6 to -11%
 * (single_leader async 53.1 -> 47.5 us, 44.3 -> 40.4, 47.6 -> 44.5; the front thread -1.2 to -2.4 us).
 * A post that wakes a sleeping actor costs the front 10-20 us, so fewer posts pay more than an
 * earlier start on part of the turn.
 */
const requestBatchMax = 64;

/** Front-side guard for a request the actor never answers (the worker died or was paused mid-request). */
export const frontRequestTimeoutMsExtra = 2000;

interface Pending {
  done: (r: ClientReply) => void;
  deadline: number;
}

export interface NodeHandleHooks {
  onNet: (fromId: string, buf: ArrayBuffer) => void;
  onEvents: (nodeId: string, events: CoreEvent[]) => void;
  onExit: (nodeId: string, exit: ExitInfo) => void;
}

export class NodeHandle {
  readonly worker: Worker;
  /** Control calls, failing at once (NodeDownError) when the worker has exited. */
  readonly remote: ActorRemote;
  state: NodeState = 'online';
  /** The history's client name for HTTP requests without a client_id. */
  readonly httpClientId: string;
  /** Set when the worker has exited. */
  exit: ExitInfo | undefined;
  /** Peer frames addressed to this node after its worker exited (lost, as to a dead host). */
  framesLostWhileDown = 0;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private queue: Array<{ id: number; op: ClientOp; tp?: string }> = [];
  private flushScheduled = false;
  private netQueue: ArrayBuffer[] = [];
  private exited = false;
  /** Set before we end the worker ourselves, so its exit is not taken for a crash. */
  private exitRequested: 'stopped' | 'killed' | undefined;
  private lastError: Error | undefined;
  /** Rejecters of control calls in flight: all fail when the worker exits. */
  private readonly callsInFlight = new Set<(e: Error) => void>();
  private readonly exitWaiters: Array<() => void> = [];

  constructor(
    readonly id: string,
    coreOpts: Omit<CoreOptions, 'rng' | 'now'>,
    seed: number,
    private readonly requestTimeoutMs: number,
    private readonly hooks: NodeHandleHooks,
    /** The node's durable storage (outlives this handle: a restart hands it to the next one). */
    readonly durable: DurableStore = new DurableStore(),
    restore?: ArrayBuffer[],
    /** Where its actor comes from (tests give a pool of their own). */
    pool: ActorPool = actorPool,
  ) {
    this.httpClientId = `http-${id}`;
    const { port1, port2 } = new MessageChannel();
    const init: ActorInit = { core: coreOpts, seed, control: port2, eventsEnabled: true, tracing: tracing.on };
    if (restore !== undefined) init.restore = restore;
    this.worker = pool.take(coreOpts.config.strategy);
    this.worker.ref();
    const assign: ActorAssign = { init };
    this.worker.postMessage(assign, restore === undefined ? [port2] : [port2, ...restore]);
    const raw = Comlink.wrap<ActorApi>(nodeEndpoint(port1));
    this.remote = {
      status: () => this.guard(() => raw.status()),
      log: () => this.guard(() => raw.log()),
      store: () => this.guard(() => raw.store()),
      control: (cmd) => this.guard<ControlResult>(() => raw.control(cmd)),
      pause: () => this.guard(() => raw.pause()),
      resume: () => this.guard(() => raw.resume()),
      setEvents: (on) => this.guard(() => raw.setEvents(on)),
      persistentState: () => this.guard(() => raw.persistentState()),
      stall: (ms) => this.guard(() => raw.stall(ms)),
    };
    this.worker.on('message', (m: FromActor | ActorBooted) => this.onMessage(m));
    this.worker.on('error', (err) => {
      // Reported with the exit that follows (ERR_WORKER_OUT_OF_MEMORY, an uncaught error).
      this.lastError = err;
    });
    this.worker.on('exit', (code) => {
      this.exited = true;
      const errCode = (this.lastError as { code?: unknown } | undefined)?.code;
      const reason: ExitReason =
        this.exitRequested ??
        (errCode === 'ERR_WORKER_OUT_OF_MEMORY' ? 'out_of_memory' : this.lastError ? 'error' : 'exited');
      this.exit = { reason, code };
      if (this.lastError !== undefined) this.exit.error = this.lastError.message;
      this.state = reason === 'stopped' ? 'offline' : 'crashed';
      this.failAll(reason);
      const down = new NodeDownError(this.id, reason);
      for (const fail of this.callsInFlight) fail(down);
      this.callsInFlight.clear();
      port1.close();
      for (const w of this.exitWaiters.splice(0)) w();
      this.hooks.onExit(this.id, this.exit);
    });
  }

  /** A control call that settles: with the actor's answer, or NodeDownError as soon as the worker is gone. */
  private guard<T>(call: () => Promise<T>): Promise<T> {
    if (this.exited) return Promise.reject(new NodeDownError(this.id, this.exit?.reason ?? 'exited'));
    return new Promise<T>((resolve, reject) => {
      this.callsInFlight.add(reject);
      call().then(
        (v) => {
          this.callsInFlight.delete(reject);
          resolve(v);
        },
        (e: unknown) => {
          this.callsInFlight.delete(reject);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  get isDown(): boolean {
    return this.exited;
  }

  /** Resolves once the actor has loaded its core and answers control calls (rejects if it dies first). */
  async ready(): Promise<void> {
    await this.remote.status();
  }

  /** Queues a client operation for this turn's batch; `done` gets the actor's reply (or a timeout/offline failure). */
  submit(op: ClientOp, done: (r: ClientReply) => void): void {
    const id = this.nextId++;
    if (this.exited) {
      done({ id, ok: false, code: 'node_crashed', error: this.downMessage() });
      return;
    }
    this.pending.set(id, { done, deadline: Date.now() + this.requestTimeoutMs + frontRequestTimeoutMsExtra });
    if (tracing.on) {
      const tp = activeTraceparent();
      this.queue.push(tp === undefined ? { id, op } : { id, op, tp });
    } else this.queue.push({ id, op });
    // A full batch goes at once: the actor starts on it while this thread is still reading the rest
    // of the turn's requests (one batch per turn left the actor idle until the turn ended, and this
    // thread idle while the actor worked). Whatever is left goes at the end of the turn.
    if (this.queue.length >= requestBatchMax) {
      this.flush();
      return;
    }
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushBound);
    }
  }

  private readonly flushBound = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /**
   * A control command whose outcome arrives later as a client reply (raft membership changes go
   * through the log): registers a pending reply under a fresh id and passes it as reqId.
   */
  async controlAwait(cmd: { kind: 'add_server' | 'remove_server'; node_id: string }): Promise<ClientReply> {
    const id = this.nextId++;
    const done = new Promise<ClientReply>((resolve) => {
      this.pending.set(id, {
        done: resolve,
        deadline: Date.now() + this.requestTimeoutMs + frontRequestTimeoutMsExtra,
      });
    });
    const r = await this.remote.control({ ...cmd, reqId: id });
    if (!r.ok) {
      this.pending.delete(id);
      return { id, ok: false, code: r.code, error: r.error };
    }
    return done;
  }

  /** Deliveries from the fabric (one frame buffer per destination per delivery pass). */
  deliverNet(buf: ArrayBuffer): void {
    if (this.exited) {
      this.framesLostWhileDown++;
      return;
    }
    // A client-request post is already due this turn: ride along with it (one postMessage instead
    // of two; posts are a good part of the front's CPU per write). Otherwise post at once: this runs
    // from the fabric's delivery pass, and waiting for another setImmediate would cost a loop
    // iteration per network hop.
    if (this.flushScheduled && this.queue.length > 0) {
      this.netQueue.push(buf);
      return;
    }
    this.worker.postMessage({ net: buf }, [buf]);
  }

  private flush(): void {
    if (this.exited) return;
    const nets = this.netQueue;
    this.netQueue = [];
    let req: ArrayBuffer | undefined;
    if (this.queue.length > 0) {
      req = encodeClientTransferable(this.queue);
      this.queue = [];
    }
    // Deliveries first (per-sender order), the last one in the same post as the requests.
    for (let i = 0; i < nets.length; i++) {
      const net = nets[i] as ArrayBuffer;
      if (i === nets.length - 1 && req) {
        this.worker.postMessage({ net, req }, [net, req]);
        req = undefined;
      } else this.worker.postMessage({ net }, [net]);
    }
    if (req) this.worker.postMessage({ req }, [req]);
  }

  private onMessage(m: FromActor | ActorBooted): void {
    // A pool actor taken while still booting says so once it listens: nothing for the node.
    if ('booted' in m) return;
    const out = m.out === undefined ? undefined : decodeClient<ActorOut<ClientReply, CoreEvent>>(new Uint8Array(m.out));
    // Durable first: storage has a step's records (the leading frame of its `net` buffer) before
    // any of its sends or replies go out. The fabric skips that frame (a reserved index).
    if (m.net) {
      const records = leadingDurableFrame(m.net);
      if (records === undefined) this.hooks.onNet(this.id, m.net);
      else {
        this.durable.append(records.bytes, records.checkpoint);
        if (records.end < m.net.byteLength) this.hooks.onNet(this.id, m.net);
      }
    }
    if (out !== undefined) {
      for (const r of out.replies) {
        const p = this.pending.get(r.id);
        if (p) {
          this.pending.delete(r.id);
          p.done(r);
        }
      }
      if (out.events.length > 0) this.hooks.onEvents(this.id, out.events);
    }
  }

  /** Fails requests past their front-side deadline (called periodically by the cluster). */
  sweep(now: number): void {
    for (const [id, p] of this.pending) {
      if (now > p.deadline) {
        this.pending.delete(id);
        p.done({
          id,
          ok: false,
          code: 'timeout',
          indeterminate: true,
          error:
            `node ${this.id} did not answer within ` +
            `${this.requestTimeoutMs + frontRequestTimeoutMsExtra} ms (paused or ` +
            'overloaded); the outcome is indeterminate',
        });
      }
    }
  }

  private downMessage(): string {
    const reason = this.exit?.reason ?? 'exited';
    return reason === 'stopped'
      ? `node ${this.id} is offline`
      : `node ${this.id} has crashed (${reason}); restart it with POST .../nodes/${this.id}/restart`;
  }

  /** The worker exited: what was pending fails at once, its outcome unknown (it may have been applied). */
  private failAll(reason: ExitReason): void {
    const error =
      reason === 'stopped'
        ? `node ${this.id} stopped before answering; the outcome is indeterminate`
        : `node ${this.id} crashed (${reason}) before answering; the outcome is indeterminate`;
    for (const [id, p] of this.pending) p.done({ id, ok: false, code: 'node_crashed', error, indeterminate: true });
    this.pending.clear();
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Resolves when the worker has exited (at once if it already has). */
  whenExited(): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  /** Kills the worker with no goodbye (a crash); resolves once its exit has been handled. */
  async crash(): Promise<void> {
    if (this.exited) return;
    this.exitRequested = 'killed';
    const gone = this.whenExited();
    await this.worker.terminate();
    await gone;
  }

  /** Stops the worker for good (node removed, cluster deleted). */
  async terminate(): Promise<void> {
    if (this.exited) return;
    this.exitRequested = 'stopped';
    this.state = 'offline';
    const gone = this.whenExited();
    await this.worker.terminate();
    await gone;
  }
}
