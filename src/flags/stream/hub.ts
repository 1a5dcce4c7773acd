/**
 * The SDK streaming hub (../shared/specs/DECISIONS.md "SDK streaming"): server-sent events per environment, in
 * LaunchDarkly's shape. On connect one `put` with every flag and segment; then `patch` and `delete`
 * per change (a segment change goes to every environment of its project). `id:` lines carry the
 * change-feed seq, so a client that reconnects with Last-Event-ID gets what it missed from a bounded
 * in-memory log, or a fresh `put` when the log no longer reaches back that far. Heartbeat comments
 * keep idle connections open; a client that cannot keep up is disconnected by the HTTP adapter
 * (its per-stream buffer cap or drain deadline, src/http/stream.ts) and counted here, whether it
 * was cut off during its put or later. Each event, and each environment's put, is serialised once
 * into a Buffer that every client shares; the adapter sends it in back-pressured slices.
 * It is not the HTTP route (api/sdk-routes.ts) and does not read the store except through Replica.
 */
import type { ServerStream } from '../../http/index.js';
import type { Change, EnvironmentInfo } from '../store/types.js';
import type { EnvState, Replica } from './replica.js';
import {
  sseClientBufferBytesDefault,
  sseClientsMaxDefault,
  sseDrainTimeoutMsDefault,
  sseHeartbeatMsDefault,
  sseReplayLogBytesMaxDefault,
  sseReplayLogEntriesMaxDefault,
  sseRetryMs,
} from '../limits.js';

export interface StreamLimits {
  /** Changes kept for Last-Event-ID replay... */
  replayLogEntriesMax: number;
  /** ...and the bytes their frames may take together (flags can be large). */
  replayLogBytesMax: number;
  /** Connected clients across all environments; more are refused (503). */
  clientsMax: number;
  heartbeatMs: number;
  /** A client whose socket stays unwritable this long (it stopped reading) is cut off as slow. */
  drainTimeoutMs: number;
  /** A resuming client whose missed changes exceed this many bytes gets a fresh put instead. */
  replayBytesMax: number;
}

export const defaultStreamLimits: StreamLimits = {
  replayLogEntriesMax: sseReplayLogEntriesMaxDefault,
  replayLogBytesMax: sseReplayLogBytesMaxDefault,
  clientsMax: sseClientsMaxDefault,
  heartbeatMs: sseHeartbeatMsDefault,
  drainTimeoutMs: sseDrainTimeoutMsDefault,
  replayBytesMax: sseClientBufferBytesDefault,
};

interface Client {
  stream: ServerStream;
  env: EnvState;
  /** The highest seq this client has been sent (or that its put reflected). */
  lastId: number;
}

interface LogEntry {
  seq: number;
  projectKey: string;
  envKey: string | null;
  frame: Buffer;
}

export interface StreamStats {
  connects: number;
  resumedFromLog: number;
  freshPuts: number;
  eventsSent: number;
  slowDisconnects: number;
  replayLogEvicted: number;
  refusedOverCap: number;
  /** Flags or segments left out of a put, or changes not sent, because they could not be serialised. */
  unservable: number;
}

export type ConnectOutcome = { ok: true; mode: 'put' | 'replay' } | { ok: false; code: 'over_capacity' | 'closed' };

/** One SSE frame. JSON has no raw newlines, so the data fits on one `data:` line. */
function frame(id: number, event: string, json: string): string {
  return `id: ${id}\nevent: ${event}\ndata: ${json}\n\n`;
}

export function changeFrame(c: Change): string {
  const path = `/${c.resource === 'flag' ? 'flags' : 'segments'}/${c.key}`;
  if (c.op === 'delete' || c.data === null) return frame(c.seq, 'delete', JSON.stringify({ path, version: c.version }));
  return frame(c.seq, 'patch', JSON.stringify({ path, data: c.data }));
}

export const heartbeatFrame = ': heartbeat\n\n';
const heartbeatBytes = Buffer.from(heartbeatFrame);
const retryBytes = Buffer.from(`retry: ${sseRetryMs}\n\n`);

export class StreamHub {
  private readonly clients = new Map<EnvState, Set<Client>>();
  private clientCount = 0;
  /** Ring of recent changes; `floor` is the highest seq no longer (or never) in it. */
  private readonly log: LogEntry[] = [];
  private logStart = 0;
  private logBytes = 0;
  private floor: number;
  private readonly putCache = new WeakMap<EnvState, { revision: number; id: number; frame: Buffer }>();
  private readonly heartbeat: NodeJS.Timeout | undefined;
  readonly stats: StreamStats = {
    connects: 0,
    resumedFromLog: 0,
    freshPuts: 0,
    eventsSent: 0,
    slowDisconnects: 0,
    replayLogEvicted: 0,
    refusedOverCap: 0,
    unservable: 0,
  };

  constructor(
    private readonly replica: Replica,
    private readonly limits: StreamLimits,
    /** The store's newest seq, to tell a Last-Event-ID from this data set's future from a stale one. */
    private readonly latestSeq: () => Promise<number>,
    /** Told about each record that cannot be serialised (logged by the service). */
    private readonly onUnservable: (what: string, err: unknown) => void = () => undefined,
  ) {
    this.floor = replica.feedPos;
    if (limits.heartbeatMs > 0) {
      this.heartbeat = setInterval(() => this.beat(), limits.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  get connected(): number {
    return this.clientCount;
  }

  /**
   * Serves one stream. Resumes from the replay log when `lastEventId` lies within it, else sends a
   * fresh put. Everything after the last await runs in one tick, so no change slips between the
   * state that was sent and the client's registration.
   */
  async connect(env: EnvironmentInfo, stream: ServerStream, lastEventId: number | undefined): Promise<ConnectOutcome> {
    if (this.clientCount >= this.limits.clientsMax) {
      this.stats.refusedOverCap++;
      return { ok: false, code: 'over_capacity' };
    }
    const state = await this.replica.environment(env.projectKey, env.key);
    let resumable = lastEventId !== undefined && Number.isSafeInteger(lastEventId) && lastEventId >= 0;
    if (resumable && (lastEventId as number) > this.replica.feedPos) {
      // Ahead of our feed: fine if it came from another instance of this data set (the feed will
      // catch up and skip what the client has), not if it names a seq this database never issued.
      resumable = (lastEventId as number) <= (await this.latestSeq());
    }
    if (stream.closed) return { ok: false, code: 'closed' };
    stream.open(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    stream.drainTimeoutMs = this.limits.drainTimeoutMs;
    const client: Client = { stream, env: state, lastId: 0 };
    // Registered before the first byte, so a client cut off as slow during its put (or its
    // replay) is counted like any other.
    let set = this.clients.get(state);
    if (!set) {
      set = new Set();
      this.clients.set(state, set);
    }
    set.add(client);
    this.clientCount++;
    stream.onClose((reason) => {
      if (reason === 'slow') this.stats.slowDisconnects++;
      this.remove(client);
    });
    let mode: 'put' | 'replay';
    const missed =
      resumable && (lastEventId as number) >= this.floor ? this.missedSince(env, lastEventId as number) : undefined;
    if (missed) {
      // One chunk made of the shared frames: the adapter sends it with back-pressure like a put,
      // rather than counting hundreds of queued frames against the client's buffer before it had
      // a chance to read, and without a private copy per resuming client.
      mode = 'replay';
      this.stats.resumedFromLog++;
      stream.write([retryBytes, ...missed.frames]);
      this.stats.eventsSent += missed.frames.length;
      client.lastId = Math.max(missed.lastId, lastEventId as number);
    } else {
      mode = 'put';
      this.stats.freshPuts++;
      client.lastId = this.replica.positionOf(state);
      stream.write(`retry: ${sseRetryMs}\n`);
      stream.write(this.putFrame(state, client.lastId));
      this.stats.eventsSent++;
    }
    this.stats.connects++;
    if (stream.closed) return { ok: false, code: 'closed' };
    return { ok: true, mode };
  }

  /**
   * The frames of the log this environment's client missed after `lastId`, or undefined when they
   * exceed what a client may be sent in one go (replayBytesMax): such a client gets a fresh put,
   * which every client shares, instead of a private copy of the log.
   */
  private missedSince(env: EnvironmentInfo, lastId: number): { frames: Buffer[]; lastId: number } | undefined {
    const frames: Buffer[] = [];
    let bytes = 0;
    let last = lastId;
    for (let i = this.logStart; i < this.log.length; i++) {
      const e = this.log[i] as LogEntry;
      if (e.seq <= lastId || e.projectKey !== env.projectKey || (e.envKey !== null && e.envKey !== env.key)) continue;
      bytes += e.frame.length;
      if (bytes > this.limits.replayBytesMax) return undefined;
      frames.push(e.frame);
      last = e.seq;
    }
    return { frames, lastId: last };
  }

  /**
   * The put frame, `{path: "/", data: {flags: {key: Flag}, segments: {key: Segment}}}`, serialised
   * once per revision into one Buffer that every client connecting at that revision shares (a
   * client still streaming an older one keeps that one alive until it finishes or is cut off).
   */
  private putFrame(state: EnvState, id: number): Buffer {
    const cached = this.putCache.get(state);
    if (cached && cached.revision === state.revision && cached.id === id) return cached.frame;
    let json: string;
    try {
      json = JSON.stringify({
        path: '/',
        data: { flags: Object.fromEntries(state.flags), segments: Object.fromEntries(state.segments) },
      });
    } catch {
      json = this.putJsonWithoutUnservable(state);
    }
    const built = Buffer.from(frame(id, 'put', json));
    this.putCache.set(state, { revision: state.revision, id, frame: built });
    return built;
  }

  /**
   * The put's JSON built entry by entry, leaving out (and reporting) each flag or segment that
   * cannot be serialised (a record stored before the input limits existed): one bad record must
   * not keep every client of the environment from its put.
   */
  private putJsonWithoutUnservable(state: EnvState): string {
    const members = (kind: string, entries: Iterable<[string, unknown]>): string => {
      const out: string[] = [];
      for (const [key, value] of entries) {
        try {
          out.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
        } catch (err) {
          this.stats.unservable++;
          this.onUnservable(`${kind} ${state.projectKey}/${state.envKey}/${key} left out of the SSE put`, err);
        }
      }
      return out.join(',');
    };
    return (
      `{"path":"/","data":{"flags":{${members('flag', state.flags)}},` +
      `"segments":{${members('segment', state.segments)}}}}`
    );
  }

  private remove(client: Client): void {
    const set = this.clients.get(client.env);
    if (set?.delete(client)) {
      this.clientCount--;
      if (set.size === 0) this.clients.delete(client.env);
    }
  }

  /** Called for every feed change, after the replica applied it, with the environments it touched. */
  publish(c: Change, affected: readonly EnvState[]): void {
    let f: Buffer;
    try {
      f = Buffer.from(changeFrame(c));
    } catch (err) {
      this.stats.unservable++;
      this.onUnservable(
        `${c.resource} ${c.projectKey}/${c.environmentKey ?? '*'}/${c.key} version ` +
          `${c.version} not sent to SSE clients`,
        err,
      );
      return;
    }
    this.append({ seq: c.seq, projectKey: c.projectKey, envKey: c.environmentKey, frame: f });
    for (const env of affected) {
      const set = this.clients.get(env);
      if (!set) continue;
      for (const client of set) {
        if (c.seq <= client.lastId) continue;
        client.lastId = c.seq;
        this.send(client, f);
      }
    }
  }

  /**
   * write() refuses only a closed stream; when it was open, the adapter just cut it off for
   * overflowing its buffer cap, and the close callback counted it as slow and removed it.
   */
  private send(client: Client, chunk: Buffer): void {
    if (client.stream.write(chunk)) this.stats.eventsSent++;
  }

  private append(e: LogEntry): void {
    this.log.push(e);
    this.logBytes += e.frame.length;
    const { replayLogEntriesMax, replayLogBytesMax } = this.limits;
    while (
      this.log.length - this.logStart > replayLogEntriesMax ||
      (this.logBytes > replayLogBytesMax && this.log.length - this.logStart > 1)
    ) {
      const old = this.log[this.logStart] as LogEntry;
      this.log[this.logStart] = undefined as unknown as LogEntry;
      this.floor = old.seq;
      this.logBytes -= old.frame.length;
      this.logStart++;
      this.stats.replayLogEvicted++;
    }
    // Compact now and then instead of shifting on every eviction.
    if (this.logStart >= 1024 && this.logStart * 2 >= this.log.length) {
      this.log.splice(0, this.logStart);
      this.logStart = 0;
    }
  }

  private beat(): void {
    for (const set of this.clients.values()) for (const client of [...set]) this.send(client, heartbeatBytes);
  }

  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const set of this.clients.values()) for (const client of [...set]) client.stream.end();
    this.clients.clear();
    this.clientCount = 0;
  }
}
