/**
 * The LaunchDarkly relay's state: per environment, the LD form of its flags and segments (built
 * with ./translate.ts from the in-memory replica, re-diffed after every change so a flag whose
 * prerequisite moved is re-sent too), and the `/ld/all` stream clients with LD's put/patch/delete
 * events. The server calls publish() for every feed change next to the SDK hub's; routes.ts is
 * the HTTP side. It keeps no replay log: an LD SDK that reconnects asks for, and gets, a fresh put.
 */
import type { ServerStream } from '../../http/index.js';
import type { Flag, Segment } from '../model/types.js';
import type { EnvState } from '../stream/replica.js';
import { sseRetryMs } from '../limits.js';
import { prerequisiteIndexer, translateFlag, translateSegment, type LdFlag, type LdSegment } from './translate.js';

interface Entry {
  /** The LD form without its version, serialised: what a change is detected on. */
  json: string;
  value: LdFlag | LdSegment;
  version: number;
}

/** One change of an environment's LD form: a patch (entry) or a delete (no entry). */
export interface LdChange {
  kind: 'flags' | 'segments';
  key: string;
  entry: Entry | undefined;
  version: number;
}

class LdView {
  revision = -1;
  readonly flags = new Map<string, Entry>();
  readonly segments = new Map<string, Entry>();
  put: { revision: number; data: string } | undefined;
}

const flagCache = new WeakMap<Flag, { sig: string; entry: Omit<Entry, 'version'> | undefined }>();
const segmentCache = new WeakMap<Segment, Omit<Entry, 'version'>>();

/** The flag's LD form (version 0), cached per flag object and prerequisite indexes; undefined when not served. */
function ldFlag(f: Flag, index: (k: string, v: string) => number): Omit<Entry, 'version'> | undefined {
  const sig = f.prerequisites.map((p) => index(p.flagKey, p.variation)).join(',');
  const hit = flagCache.get(f);
  if (hit && hit.sig === sig) return hit.entry;
  const t = translateFlag(f, 0, index);
  const entry = t.ok ? { json: JSON.stringify(t.value), value: t.value } : undefined;
  flagCache.set(f, { sig, entry });
  return entry;
}

function ldSegment(s: Segment): Omit<Entry, 'version'> {
  let hit = segmentCache.get(s);
  if (!hit) {
    const value = translateSegment(s, 0);
    hit = { json: JSON.stringify(value), value };
    segmentCache.set(s, hit);
  }
  return hit;
}

function withVersion(e: Entry): string {
  return JSON.stringify({ ...e.value, version: e.version });
}

function frame(event: string, json: string): string {
  return `event: ${event}\ndata: ${json}\n\n`;
}

export function changeFrame(c: LdChange): string {
  const path = `/${c.kind}/${c.key}`;
  if (c.entry === undefined) return frame('delete', JSON.stringify({ path, version: c.version }));
  return frame('patch', `{"path":${JSON.stringify(path)},"data":${withVersion(c.entry)}}`);
}

export interface LdRelayStats {
  connects: number;
  eventsSent: number;
  slowDisconnects: number;
  /** Analytics events received on /ld/bulk (diagnostic payloads count as one each). */
  eventsReceived: number;
  /** Flags left out of the LD payload because LD's JSON cannot say them (see translate.ts). */
  unrepresentable: number;
}

export class LdRelay {
  private readonly views = new WeakMap<EnvState, LdView>();
  private readonly clients = new Map<EnvState, Set<ServerStream>>();
  private clientCount = 0;
  private readonly heartbeat: NodeJS.Timeout | undefined;
  readonly stats: LdRelayStats = {
    connects: 0,
    eventsSent: 0,
    slowDisconnects: 0,
    eventsReceived: 0,
    unrepresentable: 0,
  };

  constructor(private readonly limits: { heartbeatMs: number; drainTimeoutMs: number; clientsMax: number }) {
    if (limits.heartbeatMs > 0) {
      this.heartbeat = setInterval(() => this.beat(), limits.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  get connected(): number {
    return this.clientCount;
  }

  /** Brings the environment's LD form up to date; the changes since the last call (none on the first). */
  refresh(state: EnvState): LdChange[] {
    let view = this.views.get(state);
    const first = view === undefined;
    if (!view) {
      view = new LdView();
      this.views.set(state, view);
    }
    if (view.revision === state.revision) return [];
    const changes: LdChange[] = [];
    const version = state.pos;
    const index = prerequisiteIndexer(state.flags);
    const sync = <T>(
      kind: 'flags' | 'segments',
      have: Map<string, Entry>,
      now: ReadonlyMap<string, T>,
      form: (x: T) => Omit<Entry, 'version'> | undefined,
    ): void => {
      for (const [key, x] of now) {
        const e = form(x);
        const old = have.get(key);
        if (e === undefined) {
          if (first || old) this.stats.unrepresentable++;
          if (old) {
            have.delete(key);
            changes.push({ kind, key, entry: undefined, version });
          }
          continue;
        }
        if (old && old.json === e.json) continue;
        const entry: Entry = { ...e, version };
        have.set(key, entry);
        changes.push({ kind, key, entry, version });
      }
      for (const key of [...have.keys()]) {
        if (now.has(key)) continue;
        have.delete(key);
        changes.push({ kind, key, entry: undefined, version });
      }
    };
    sync('flags', view.flags, state.flags, (f: Flag) => ldFlag(f, index));
    sync('segments', view.segments, state.segments, ldSegment);
    view.revision = state.revision;
    return first ? [] : changes;
  }

  /** `{"flags": {...}, "segments": {...}}`: the polling answer and the put's data; cached per revision. */
  allData(state: EnvState): string {
    this.refresh(state);
    const view = this.views.get(state) as LdView;
    if (view.put?.revision === view.revision) return view.put.data;
    const members = (m: Map<string, Entry>): string =>
      [...m].map(([k, e]) => `${JSON.stringify(k)}:${withVersion(e)}`).join(',');
    const data = `{"flags":{${members(view.flags)}},"segments":{${members(view.segments)}}}`;
    view.put = { revision: view.revision, data };
    return data;
  }

  /** Serves one `/ld/all` stream: a put now, patches and deletes as changes arrive. */
  connect(state: EnvState, stream: ServerStream): 'ok' | 'over_capacity' | 'closed' {
    if (this.clientCount >= this.limits.clientsMax) return 'over_capacity';
    if (stream.closed) return 'closed';
    stream.open(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    stream.drainTimeoutMs = this.limits.drainTimeoutMs;
    let set = this.clients.get(state);
    if (!set) {
      set = new Set();
      this.clients.set(state, set);
    }
    set.add(stream);
    this.clientCount++;
    stream.onClose((reason) => {
      if (reason === 'slow') this.stats.slowDisconnects++;
      const s = this.clients.get(state);
      if (s?.delete(stream)) {
        this.clientCount--;
        if (s.size === 0) this.clients.delete(state);
      }
    });
    this.stats.connects++;
    stream.write(`retry: ${sseRetryMs}\n`);
    if (stream.write(frame('put', `{"path":"/","data":${this.allData(state)}}`))) this.stats.eventsSent++;
    return stream.closed ? 'closed' : 'ok';
  }

  /** Called for every feed change, after the replica applied it, with the environments it touched. */
  publish(affected: readonly EnvState[]): void {
    for (const state of affected) {
      const set = this.clients.get(state);
      if (!set) continue;
      const changes = this.refresh(state);
      if (changes.length === 0) continue;
      const chunk = Buffer.from(changes.map(changeFrame).join(''));
      for (const stream of [...set]) if (stream.write(chunk)) this.stats.eventsSent += changes.length;
    }
  }

  private beat(): void {
    for (const set of this.clients.values()) for (const s of [...set]) s.write(': heartbeat\n\n');
  }

  close(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const set of this.clients.values()) for (const s of [...set]) s.end();
    this.clients.clear();
    this.clientCount = 0;
  }
}
