/**
 * The front process's handle on one node actor (a worker_thread): client requests are queued and
 * posted as one msgpack batch per event-loop turn; replies and events come back batched on the same
 * port; peer frames are handed to the cluster's fabric. Control calls (status, pause, clock skew,
 * log, store) go over comlink on a separate MessagePort.
 */
import { MessageChannel, Worker } from 'node:worker_threads';
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { decode, encodeTransferable, type FromActor } from '../../protocol/actor.js';
import type { ActorApi, ActorInit } from '../../workers/node-actor.js';
import type { ClientOp, ClientReply, CoreEvent, CoreOptions } from './core.js';
import { activeTraceparent, tracing } from '../tracing/tracing.js';

export type NodeState = 'online' | 'paused' | 'offline';

const actorUrl = new URL('../../workers/node-actor.js', import.meta.url);

function spawnActor(): Worker {
  return new Worker(actorUrl, {
    workerData: { pooled: true },
    resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 256 },
    stdout: false,
    stderr: false,
  });
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
    const w = this.idle.shift() ?? spawnActor();
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
  onExit: (nodeId: string, code: number) => void;
}

export class NodeHandle {
  readonly worker: Worker;
  readonly remote: Comlink.Remote<ActorApi>;
  state: NodeState = 'online';
  /** The history's client name for HTTP requests without a client_id. */
  readonly httpClientId: string;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private queue: Array<{ id: number; op: ClientOp; tp?: string }> = [];
  private flushScheduled = false;
  private netQueue: ArrayBuffer[] = [];
  private exited = false;

  constructor(
    readonly id: string,
    coreOpts: Omit<CoreOptions, 'rng' | 'now'>,
    seed: number,
    private readonly requestTimeoutMs: number,
    private readonly hooks: NodeHandleHooks,
  ) {
    this.httpClientId = `http-${id}`;
    const { port1, port2 } = new MessageChannel();
    const init: ActorInit = { core: coreOpts, seed, control: port2, eventsEnabled: true, tracing: tracing.on };
    this.worker = actorPool.take();
    this.worker.ref();
    this.worker.postMessage({ init }, [port2]);
    this.remote = Comlink.wrap<ActorApi>(nodeEndpoint(port1));
    this.worker.on('message', (m: FromActor) => this.onMessage(m));
    this.worker.on('error', () => {
      // The exit handler below fails what was pending; the error itself is reported by the exit code.
    });
    this.worker.on('exit', (code) => {
      this.exited = true;
      this.state = 'offline';
      this.failAll(`node ${this.id} stopped`);
      port1.close();
      this.hooks.onExit(this.id, code);
    });
  }

  /** Resolves once the actor has loaded its core and answers control calls. */
  async ready(): Promise<void> {
    await this.remote.status();
  }

  /** Queues a client operation for this turn's batch; `done` gets the actor's reply (or a timeout/offline failure). */
  submit(op: ClientOp, done: (r: ClientReply) => void): void {
    const id = this.nextId++;
    if (this.exited) {
      done({ id, ok: false, code: 'paused', status: 409, error: `node ${this.id} is offline` });
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
      this.pending.set(id, { done: resolve, deadline: Date.now() + this.requestTimeoutMs + frontRequestTimeoutMsExtra });
    });
    const r = await this.remote.control({ ...cmd, reqId: id });
    if (!r.ok) {
      this.pending.delete(id);
      return { id, ok: false, code: 'bad_request', status: r.status ?? 409, error: r.error ?? 'refused' } as ClientReply;
    }
    return done;
  }

  /** Deliveries from the fabric (one frame buffer per destination per delivery pass). */
  deliverNet(buf: ArrayBuffer): void {
    if (this.exited) return;
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
    if (m.net) this.hooks.onNet(this.id, m.net);
    if (m.out) {
      const out = decode<{ replies: ClientReply[]; events: CoreEvent[] }>(new Uint8Array(m.out));
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
        p.done({ id, ok: false, code: 'timeout', status: 409, indeterminate: true, error: `node ${this.id} did not answer within ${this.requestTimeoutMs + frontRequestTimeoutMsExtra} ms (paused or overloaded); the outcome is indeterminate` });
      }
    }
  }

  private failAll(error: string): void {
    for (const [id, p] of this.pending) p.done({ id, ok: false, code: 'paused', status: 409, error, indeterminate: true });
    this.pending.clear();
  }

  get inFlight(): number {
    return this.pending.size;
  }

  async terminate(): Promise<void> {
    if (this.exited) return;
    this.state = 'offline';
    await this.worker.terminate();
  }
}
