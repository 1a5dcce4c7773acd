/**
 * The node actor: one simulated node in its own worker_thread. A thin shell around a pure core:
 * decode what arrives (peer frames from the fabric, client request batches), step the core with
 * the current time, drain its output, encode, post. A step's durable records go in the same post
 * as its sends and replies, as the first frame of its `net` buffer (etcd raft's Ready contract); a restarted
 * node folds the records it is handed into its core's `persisted` state. Control calls arrive over comlink.
 * It holds no protocol logic and never talks to another worker directly: every peer message goes to the front
 * process's fabric.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
// comlink's ES module build: the package's main entry is a UMD file that goes through the CommonJS
// loader, a cost paid by every one of hundreds of node threads at start-up (see protocol/actor.ts).
import * as Comlink from 'comlink/dist/esm/comlink.mjs';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { isImplemented, loadStrategy } from '../src/replication/cores/index.js';
import type { ClientRequest, ControlCommand, CoreOptions, CoreOutput, Strategy } from '../src/replication/core.js';
import { SeededRng } from '../src/util/rng.js';
import {
  decode,
  decodeClient,
  durableCheckpointFrameIndex,
  durableFrameIndex,
  encode,
  encodeClientTransferable,
  encodeCompact,
  encodeDurable,
  forEachDurableRecord,
  FrameWriter,
  nodeIdOf,
  nodeIndex,
  readFrames,
  type ActorOut,
  type FromActor,
  type ToActor,
} from '../protocol/actor.js';
import { initTracing, startSpan, tracing, type SpanHandle } from '../src/tracing/tracing.js';

export interface ActorInit {
  core: Omit<CoreOptions, 'rng' | 'now'>;
  seed: number;
  control: MessagePort;
  eventsEnabled: boolean;
  /** Tracing is on in the front process: load OpenTelemetry here too and continue its traces. */
  tracing?: boolean;
  /** A restarted node: the durable storage its previous incarnation wrote, to fold into `persisted`. */
  restore?: ArrayBuffer[];
}

/**
 * How an actor starts (workerData). Every actor is told the node it is to be by one `{ init }`
 * message, taken from the pool or not, so a pooled node and a fresh one run the same code from the
 * same state. `preload`: a strategy whose core it loads before it is needed (the pool guesses the
 * next node's strategy from the last one asked for; a fresh actor is told its own).
 */
export interface ActorBoot {
  preload: Strategy | undefined;
}

/** Posted once an actor has loaded its modules and listens for its `{ init }`: the pool counts it warm. */
export interface ActorBooted {
  booted: true;
}

/** What a waiting actor is sent: its node, or (pool) another strategy's core to load meanwhile. */
export type ActorAssign = { init: ActorInit } | { preload: Strategy };

const port = parentPort;
if (!port) throw new Error('node-actor must run in a worker thread');
const preload = (workerData as ActorBoot).preload;
if (preload !== undefined && isImplemented(preload)) await loadStrategy(preload);
// The actor waits here, modules loaded, for the node it is to be (the rng is untouched until then).
const init = await new Promise<ActorInit>((resolve) => {
  const onAssign = (m: ActorAssign): void => {
    if ('preload' in m) {
      // A failed load shows when the node's own strategy is loaded after its init, not here.
      if (isImplemented(m.preload)) loadStrategy(m.preload).catch(() => undefined);
      return;
    }
    port.off('message', onAssign);
    resolve(m.init);
  };
  port.on('message', onAssign);
  const booted: ActorBooted = { booted: true };
  port.postMessage(booted);
});

// Node workers are part of the simulator's service (one service.name), each its own instance.
if (init.tracing) await initTracing('simlab-replsim', process.env, `node-${init.core.id}`);
const strategy = await loadStrategy(init.core.config.strategy);
const fold = strategy.fold;
let persisted: unknown;
if (init.restore !== undefined && fold !== undefined) {
  forEachDurableRecord(init.restore, (r) => {
    persisted = fold.fold(persisted, r);
  });
}
const core = strategy.factory({
  ...init.core,
  rng: new SeededRng(init.seed),
  now: Date.now(),
  ...(persisted !== undefined ? { persisted } : {}),
});
const out: CoreOutput = { messages: [], replies: [], events: [], durable: [] };
/** Leaderless peer messages with fixmap headers (encodeCompact: its put sat just past msgpackr's key cache). */
const encodePeer = init.core.config.strategy === 'leaderless' ? encodeCompact : encode;
const durable = out.durable as unknown[];
let paused = false;
let eventsEnabled = init.eventsEnabled;
let timer: NodeJS.Timeout | undefined;
let timerAt = Infinity;

/** Tracing only: the traceparent outgoing messages of this step continue, and open await_acks spans by request id. */
let stepParent: string | undefined;
const awaiting = new Map<number, SpanHandle>();

function flush(): void {
  core.drain(out);
  const msg: FromActor = {};
  const transfer: ArrayBuffer[] = [];
  // The step's durable records go first in the `net` buffer (protocol/actor.ts durableFrameIndex).
  const w = new FrameWriter();
  if (durable.length > 0) {
    // Records before the step's last checkpoint are superseded by it: only the rest is posted.
    let from = 0;
    let checkpoint = false;
    if (fold !== undefined) {
      for (let i = durable.length - 1; i >= 0; i--) {
        if (fold.isCheckpoint(durable[i])) {
          from = i;
          checkpoint = true;
          break;
        }
      }
    }
    // No copy: FrameWriter copies every part when it finishes, and msgpackr never writes over the
    // bytes of an earlier encode (it goes on past them, or into a new buffer), like the sends below.
    const records = encodeDurable(from === 0 ? durable : durable.slice(from));
    w.add(checkpoint ? durableCheckpointFrameIndex : durableFrameIndex, records);
    durable.length = 0;
  }
  if (out.messages.length > 0) {
    if (stepParent !== undefined) {
      const replicate = startSpan('node.replicate', stepParent, { node: core.id, messages: out.messages.length });
      const tp = replicate?.traceparent();
      for (const m of out.messages) w.add(nodeIndex(m.to), encodePeer(m.msg), tp);
      replicate?.end();
    } else {
      // A core that sends one message object to several peers (a write to every replica) has it
      // encoded once.
      let last: unknown;
      let lastBytes: Uint8Array | undefined;
      for (const m of out.messages) {
        if (m.msg !== last || lastBytes === undefined) {
          last = m.msg;
          lastBytes = encodePeer(m.msg);
        }
        w.add(nodeIndex(m.to), lastBytes);
      }
    }
    out.messages.length = 0;
  }
  if (w.count > 0) {
    msg.net = w.finish();
    transfer.push(msg.net);
  }
  stepParent = undefined;
  if (awaiting.size > 0) {
    for (const r of out.replies) {
      const span = awaiting.get(r.id);
      if (span) {
        span.setAttribute('ok', r.ok);
        span.end();
        awaiting.delete(r.id);
      }
    }
  }
  if (!eventsEnabled) out.events.length = 0;
  if (out.replies.length > 0 || out.events.length > 0) {
    const doc: ActorOut = { replies: out.replies, events: out.events };
    msg.out = encodeClientTransferable(doc);
    transfer.push(msg.out);
    out.replies.length = 0;
    out.events.length = 0;
  }
  if (transfer.length > 0) port!.postMessage(msg, transfer);
  schedule();
}

/** One timer at the core's next deadline (no fixed tick: idle nodes cost nothing). */
function schedule(): void {
  if (paused) return;
  const d = core.nextDeadline();
  if (d === Infinity || d >= timerAt) return;
  if (timer) clearTimeout(timer);
  timerAt = d;
  timer = setTimeout(onTimer, Math.max(0, d - Date.now()));
}

function onTimer(): void {
  timer = undefined;
  timerAt = Infinity;
  if (paused) return;
  core.onTick(Date.now());
  flush();
}

port.on('message', (m: ToActor) => {
  const now = Date.now();
  if (m.net) {
    readFrames(m.net, (fromIdx, bytes, tp) => {
      if (tp === undefined || !tracing.on) core.onMessage(nodeIdOf(fromIdx), decode(bytes), now);
      else {
        // A traced peer message (a follower applying a traced write): its work and replies join the trace.
        const span = startSpan('node.apply', tp, { node: core.id, from: nodeIdOf(fromIdx) });
        core.onMessage(nodeIdOf(fromIdx), decode(bytes), now);
        stepParent = span?.traceparent();
        span?.end();
      }
    });
  }
  if (m.req) {
    for (const r of decodeClient<Array<ClientRequest & { tp?: string }>>(new Uint8Array(m.req))) {
      if (r.tp === undefined || !tracing.on) {
        core.onClient(r, now);
        continue;
      }
      const span = startSpan(r.op.op === 'read' ? 'node.read' : 'node.write', r.tp, { node: core.id, op: r.op.op });
      core.onClient({ id: r.id, op: r.op }, now);
      const tp = span?.traceparent();
      span?.end();
      stepParent = tp;
      const wait = startSpan('await_acks', tp, { node: core.id });
      if (wait) awaiting.set(r.id, wait);
    }
  }
  flush();
});

const api = {
  status() {
    return core.status(Date.now());
  },
  log() {
    return core.logView();
  },
  store() {
    return core.storeView();
  },
  control(cmd: ControlCommand) {
    const r = core.control(cmd, Date.now());
    flush();
    return r;
  },
  pause() {
    paused = true;
    if (timer) clearTimeout(timer);
    timer = undefined;
    timerAt = Infinity;
    return true;
  },
  resume() {
    paused = false;
    core.onTick(Date.now());
    flush();
    return true;
  },
  setEvents(on: boolean) {
    eventsEnabled = on;
    return true;
  },
  persistentState() {
    return core.persistentState?.();
  },
  /** Blocks this thread for `ms` (a GC pause or a hung process): the node answers nothing meanwhile. */
  stall(ms: number) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // busy: the point is that this thread does nothing else
    }
    return true;
  },
};
export type ActorApi = typeof api;

Comlink.expose(api, nodeEndpoint(init.control));
// Cores with timers from the start (raft elections, heartbeats) need their first deadline armed now.
flush();
