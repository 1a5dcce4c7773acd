/**
 * The front process's handle on one node actor (a worker_thread): client requests are queued and
 * posted as one msgpack batch per event-loop turn; replies and events come back batched on the same
 * port; peer frames are handed to the cluster's fabric; durable records go to the node's
 * DurableStore before anything else of their post. Control calls (status, pause, clock skew, log,
 * store) go over comlink on a separate MessagePort, guarded: once the worker has exited every call
 * fails at once (comlink alone would wait forever). The worker's exit, whatever its cause, fails the
 * pending requests and is reported with a reason; it does not decide what the cluster does next.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import {
  decode,
  encodeTransferable,
  leadingDurableFrame,
  type ActorOut,
  type FromActor,
} from '../../protocol/actor.js';
import type { ActorApi, ActorInit } from '../../workers/node-actor.js';
import type { ClientOp, ClientReply, ControlResult, CoreEvent, CoreOptions } from './core.js';
import { DurableStore } from './durable-store.js';
import { nodeMemoryMbFromEnv, workerHeapMb } from './limits.js';
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

const actorUrl = new URL('../../workers/node-actor.js', import.meta.url);

/** The heap limit each actor was started with, so the pool never hands out one sized for another budget. */
const heapOf = new WeakMap<Worker, number>();

/** A fresh actor whose heap is sized from REPLSIM_NODE_MEMORY_MB as it is now (limits.ts workerHeapMb). */
function spawnActor(): Worker {
  const heapMb = workerHeapMb(nodeMemoryMbFromEnv());
  const w = new Worker(actorUrl, {
    workerData: { pooled: true },
    resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: heapMb },
    stdout: false,
    stderr: false,
  });
  heapOf.set(w, heapMb);
  return w;
}

/**
 * Booted node actors waiting to become a node: a worker thread costs tens of milliseconds to start
 * (isolate, Node bootstrap, modules), so a few are kept ready and cluster creation takes them at
 * once; the pool refills in the background. Size REPLSIM_WORKER_POOL (default 6, 0 disables).
 */
class ActorPool {
  private readonly idle: Worker[] = [];
  private refilling = false;

  constructor(private readonly size: number) {}

  take(): Worker {
    const heapMb = workerHeapMb(nodeMemoryMbFromEnv());
    let w = this.idle.shift();
    while (w !== undefined && heapOf.get(w) !== heapMb) {
      // Booted under another REPLSIM_NODE_MEMORY_MB (a test changed it): not this budget's heap.
      void w.terminate();
      w = this.idle.shift();
    }
    w ??= spawnActor();
    this.refill();
    return w;
  }

  /** Starts filling the pool (called when a server starts). */
  warm(): void {
    this.refill();
  }

  private refill(): void {
    if (this.refilling || this.idle.length >= this.size) return;
    this.refilling = true;
    setImmediate(() => {
      this.refilling = false;
      while (this.idle.length < this.size) {
        const w = spawnActor();
        w.unref();
        w.on('error', () => {
          // An idle actor that failed to boot: drop it; take() spawns a fresh one when needed.
        });
        w.once('exit', () => {
          const i = this.idle.indexOf(w);
          if (i >= 0) this.idle.splice(i, 1);
        });
        this.idle.push(w);
      }
    });
  }

  async drain(): Promise<void> {
    const ws = this.idle.splice(0);
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

const poolSize = Number(process.env['REPLSIM_WORKER_POOL'] ?? 6);
export const actorPool = new ActorPool(Number.isInteger(poolSize) && poolSize >= 0 ? poolSize : 6);

/**
 * Client requests per post to an actor: a turn's requests go in batches of at most this many.
 * Measured with 64 connections writing to a 3-node single-leader cluster (req/s, same machine,
 * interleaved runs): one batch per turn 33-35k; batches of 4: 30k; 8: 31-36k; 12: 32-34k;
 * 16: 33-40k; 24: 35-40k.
 */
const requestBatchMax = 16;

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
  ) {
    this.httpClientId = `http-${id}`;
    const { port1, port2 } = new MessageChannel();
    const init: ActorInit = { core: coreOpts, seed, control: port2, eventsEnabled: true, tracing: tracing.on };
    if (restore !== undefined) init.restore = restore;
    this.worker = actorPool.take();
    this.worker.ref();
    this.worker.postMessage({ init }, restore === undefined ? [port2] : [port2, ...restore]);
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
    this.worker.on('message', (m: FromActor) => this.onMessage(m));
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
      req = encodeTransferable(this.queue);
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

  private onMessage(m: FromActor): void {
    const out = m.out === undefined ? undefined : decode<ActorOut<ClientReply, CoreEvent>>(new Uint8Array(m.out));
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
