/**
 * The clock lab page's live state: the one `/ws` socket (through the proxy, same origin), the run
 * it feeds (model.ts), a read-only run loaded from a ShiViz log, and the fetches the page makes
 * after events that say less than the panels show (the process table, a key's versions, a
 * snapshot's verify answer). Redraws are coalesced to one per flush interval. It draws nothing.
 */
import { signal, type Signal } from '@preact/signals';
import { errorText } from '../shared/api.js';
import { EventSocket } from '../shared/ws.js';
import { formatShiViz, parseShiViz } from '../../src/clocklab/shiviz.js';
import { RunModel, fromShiViz } from './model.js';

/** Signals are refreshed at most this often while events stream in. */
export const flushIntervalMs = 50;
/** A burst of events that changes the process table is followed by one state fetch this much later. */
export const stateRefreshDelayMs = 150;
/** Longest the page waits for one API answer. */
export const labCallTimeoutMs = 15_000;
/** After the page's own scenario run answered, its events still arriving on the socket are ignored this long. */
export const ownRunEchoMs = 5_000;

export interface ProcessWire {
  id: string;
  clock_type: string;
  status: string;
  clock: unknown;
  balance: number;
  held: string[];
}

export interface ChannelWire {
  from: string;
  to: string;
  delay_ms: number;
  drop_rate: number;
  reorder: boolean;
  reorder_window_ms: number;
  in_flight: number;
}

export interface StateWire {
  time_ms: number;
  delivery_mode: string;
  conflict_strategy: string;
  processes: ProcessWire[];
  channels: ChannelWire[];
  partitions: Array<{ id: string; side_a: string[]; side_b: string[] }>;
  in_flight: number;
}

export interface KvVersionWire {
  value: string;
  version: Record<string, number>;
  writer: string;
  timestamp: number;
  dot: { replica: string; counter: number };
}

export interface KvKeyView {
  key: string;
  versions: KvVersionWire[];
  conflict: boolean;
  /** The strategy that resolved the last conflict on this key, from kv_resolved. */
  resolvedBy: string | undefined;
  /** The reader whose context was last shown, and its vector clock after the read. */
  reader: string | undefined;
  readerContext: Record<string, number> | undefined;
}

export interface ScenarioInfo {
  name: string;
  description: string;
}

export interface ScenarioPlay {
  scenario: string;
  steps: string[];
  shown: number;
  verdict: { passed: boolean; summary: string } | undefined;
}

export type CallResult<T> =
  | { ok: true; status: number; body: T; text: string }
  | { ok: false; status: number; error: string };

export class LabStore {
  live = new RunModel();
  /** A run loaded from a ShiViz log, shown instead of the live one while set. */
  readonly imported: Signal<RunModel | null> = signal(null);
  readonly importedName: Signal<string> = signal('');
  /** Moves whenever the run on screen changed (at most once per flush interval). */
  readonly version: Signal<number> = signal(0);
  readonly state: Signal<StateWire | null> = signal(null);
  readonly kv: Signal<ReadonlyMap<string, KvKeyView>> = signal(new Map());
  readonly scenarios: Signal<readonly ScenarioInfo[]> = signal([]);
  readonly play: Signal<ScenarioPlay | null> = signal(null);
  /** The outcome of the last action, for the status line. */
  readonly status: Signal<string> = signal('');
  readonly token: Signal<string> = signal('');
  socket: EventSocket = new EventSocket('/ws');
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private stateTimer: ReturnType<typeof setTimeout> | undefined;
  private unsubscribe: (() => void) | undefined;
  /**
   * Keys and snapshots to fetch once a burst of frames is over: a replay after (re)connecting holds
   * events of runs a later reset discarded, which must not be asked for (the lab would answer 404).
   */
  private followUpKeys = new Map<string, string | undefined>();
  private followUpSnapshots = new Set<string>();
  private followUpTimer: ReturnType<typeof setTimeout> | undefined;
  private ownRun: { scenario: string; until: number } | undefined;

  get run(): RunModel {
    return this.imported.value ?? this.live;
  }

  start(): void {
    this.connect();
    void this.loadScenarios();
  }

  /** (Re)opens the socket, with the token as `?token=` (browsers cannot set headers on a WebSocket). */
  connect(): void {
    this.unsubscribe?.();
    this.socket.stop();
    const t = this.token.value.trim();
    this.socket = new EventSocket(t ? `/ws?token=${encodeURIComponent(t)}` : '/ws');
    this.unsubscribe = this.socket.subscribe((f) => this.onFrame(f));
    this.socket.opened.subscribe((n) => {
      if (n > 0) this.refreshState();
    });
    this.socket.start();
  }

  setToken(t: string): void {
    this.token.value = t;
    this.live = new RunModel();
    this.connect();
    void this.loadScenarios();
    this.flushSoon();
  }

  private onFrame(raw: unknown): void {
    if (raw === null || typeof raw !== 'object') return;
    const f = raw as { type?: unknown; data?: Record<string, unknown> };
    this.live.apply(raw);
    const d = f.data ?? {};
    switch (f.type) {
      case 'simulation_reset':
        this.kv.value = new Map();
        this.followUpKeys.clear();
        this.followUpSnapshots.clear();
        this.refreshStateSoon();
        break;
      case 'process_spawned':
      case 'process_killed':
      case 'channel_faults_set':
      case 'partition_created':
      case 'faults_cleared':
      case 'delivery_mode_changed':
      case 'message_held':
        this.refreshStateSoon();
        break;
      case 'clock_tick':
        // The process table shows clocks: refreshed once per burst, not once per event.
        this.refreshStateSoon();
        break;
      case 'kv_write':
      case 'kv_conflict':
      case 'kv_stale_write': {
        const key = String(d['key'] ?? '');
        if (!this.followUpKeys.has(key)) this.followUpKeys.set(key, undefined);
        this.followUpSoon();
        break;
      }
      case 'kv_resolved':
        this.followUpKeys.set(String(d['key'] ?? ''), String(d['strategy'] ?? ''));
        this.followUpSoon();
        break;
      case 'snapshot_complete':
      case 'snapshot_incomplete':
        this.followUpSnapshots.add(String(d['snapshot'] ?? ''));
        this.followUpSoon();
        break;
      case 'scenario_started':
      case 'scenario_step':
      case 'scenario_verdict':
        this.narrate(String(f.type), d);
        break;
      default:
        break;
    }
    this.flushSoon();
  }

  private followUpSoon(): void {
    if (this.followUpTimer !== undefined) return;
    this.followUpTimer = setTimeout(() => {
      this.followUpTimer = undefined;
      const keys = [...this.followUpKeys];
      const snaps = [...this.followUpSnapshots].filter((id) => this.live.cuts.has(id));
      this.followUpKeys.clear();
      this.followUpSnapshots.clear();
      for (const [key, strategy] of keys) void this.refreshKey(key, strategy);
      for (const id of snaps) void this.verifySnapshot(id);
    }, stateRefreshDelayMs);
  }

  flushSoon(): void {
    if (this.flushTimer !== undefined) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.version.value = this.version.value + 1;
    }, flushIntervalMs);
  }

  /** One same-origin call with the token; never throws. */
  async call<T>(method: string, path: string, body?: unknown): Promise<CallResult<T>> {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), labCallTimeoutMs);
    try {
      const headers: Record<string, string> = {};
      if (body !== undefined) headers['content-type'] = 'application/json';
      const t = this.token.value.trim();
      if (t) headers['authorization'] = `Bearer ${t}`;
      const init: RequestInit = { method, headers, signal: ctl.signal };
      if (body !== undefined) init.body = JSON.stringify(body);
      const res = await fetch(path, init);
      const text = await res.text();
      if (!res.ok) return { ok: false, status: res.status, error: errorText(res.status, text) };
      let parsed: unknown;
      if (text !== '' && (res.headers.get('content-type') ?? '').includes('json')) {
        try {
          parsed = JSON.parse(text);
        } catch {
          return { ok: false, status: res.status, error: `the answer is not JSON: ${text.slice(0, 200)}` };
        }
      }
      return { ok: true, status: res.status, body: parsed as T, text };
    } catch (err) {
      const aborted = err instanceof DOMException && err.name === 'AbortError';
      return {
        ok: false,
        status: 0,
        error: aborted ? `no answer within ${labCallTimeoutMs} ms` : `network error: ${String(err)}`,
      };
    } finally {
      clearTimeout(timer);
    }
  }

  /** An action from the page: its outcome goes to the status line. */
  async act<T>(what: string, method: string, path: string, body?: unknown): Promise<CallResult<T>> {
    const r = await this.call<T>(method, path, body);
    this.status.value = r.ok ? `${what}: done` : `${what}: ${r.error}`;
    if (r.ok) this.refreshStateSoon();
    return r;
  }

  refreshStateSoon(): void {
    if (this.stateTimer !== undefined) return;
    this.stateTimer = setTimeout(() => {
      this.stateTimer = undefined;
      this.refreshState();
    }, stateRefreshDelayMs);
  }

  refreshState(): void {
    void this.call<StateWire>('GET', '/api/v1/simulation/state').then((r) => {
      if (r.ok) this.state.value = r.body;
    });
  }

  async loadScenarios(): Promise<void> {
    const r = await this.call<{ scenarios: ScenarioInfo[] }>('GET', '/api/v1/scenarios');
    if (r.ok) this.scenarios.value = r.body.scenarios;
  }

  async refreshKey(key: string, resolvedBy?: string, reader?: string): Promise<void> {
    if (key === '') return;
    const q = reader ? `?reader=${encodeURIComponent(reader)}` : '';
    const r = await this.call<{ key: string; versions: KvVersionWire[]; conflict: boolean }>(
      'GET',
      `/api/v1/kv/${encodeURIComponent(key)}${q}`,
    );
    if (!r.ok) return;
    const before = this.kv.value.get(key);
    let readerContext = before?.readerContext;
    if (reader) {
      const p = await this.call<{ vector: Record<string, number> }>(
        'GET',
        `/api/v1/processes/${encodeURIComponent(reader)}`,
      );
      readerContext = p.ok ? p.body.vector : undefined;
    }
    const next = new Map(this.kv.value);
    next.set(key, {
      key,
      versions: r.body.versions,
      conflict: r.body.conflict,
      resolvedBy: resolvedBy ?? before?.resolvedBy,
      reader: reader ?? before?.reader,
      readerContext,
    });
    this.kv.value = next;
  }

  async verifySnapshot(id: string): Promise<void> {
    if (id === '') return;
    const [v, s] = await Promise.all([
      this.call<Record<string, unknown>>('GET', `/api/v1/snapshots/${encodeURIComponent(id)}/verify`),
      this.call<Record<string, unknown>>('GET', `/api/v1/snapshots/${encodeURIComponent(id)}`),
    ]);
    if (!v.ok) return;
    this.live.applyVerify(id, v.body, s.ok ? s.body : undefined);
    this.flushSoon();
  }

  /**
   * A run started elsewhere (the API, another browser) is narrated live from its events. The page's
   * own runs are narrated from the answer (step by step), so their events are not (they may arrive
   * before or after the answer).
   */
  private narrate(type: string, d: Record<string, unknown>): void {
    const scenario = String(d['scenario'] ?? '');
    if (this.ownRun && (this.ownRun.until === 0 || this.ownRun.until > Date.now()) && this.ownRun.scenario === scenario)
      return;
    const p = this.play.value;
    if (type === 'scenario_started') {
      this.play.value = { scenario, steps: [], shown: 0, verdict: undefined };
      return;
    }
    if (!p || p.scenario !== scenario) return;
    if (type === 'scenario_step') {
      const steps = [...p.steps, String(d['text'] ?? '')];
      this.play.value = { ...p, steps, shown: steps.length };
    } else {
      this.play.value = { ...p, verdict: { passed: d['passed'] === true, summary: String(d['summary'] ?? '') } };
    }
  }

  async runScenario(name: string): Promise<void> {
    // until 0: the answer is pending; then its events are ignored for a while longer.
    this.ownRun = { scenario: name, until: 0 };
    const r = await this.act<{ scenario: string; steps: string[]; verdict: { passed: boolean; summary: string } }>(
      `scenario ${name}`,
      'POST',
      `/api/v1/scenarios/${encodeURIComponent(name)}/run`,
    );
    this.ownRun = { scenario: name, until: Date.now() + ownRunEchoMs };
    if (!r.ok) return;
    this.play.value = { scenario: r.body.scenario, steps: r.body.steps, shown: 1, verdict: r.body.verdict };
  }

  stepScenario(): void {
    const p = this.play.value;
    if (!p || p.shown >= p.steps.length) return;
    this.play.value = { ...p, shown: p.shown + 1 };
  }

  /** The run on screen as a ShiViz log: the lab's recorded run, or the imported run as it was loaded. */
  async exportShiViz(): Promise<{ ok: true; text: string } | { ok: false; error: string }> {
    const imported = this.imported.value;
    if (imported) return { ok: true, text: formatShiViz(imported.toShiViz()) };
    const r = await this.call<unknown>('GET', '/api/v1/export/shiviz');
    return r.ok ? { ok: true, text: r.text } : { ok: false, error: r.error };
  }

  /** Loads a ShiViz log as a read-only run; the outcome goes to the status line. */
  importShiViz(name: string, text: string): boolean {
    const parsed = parseShiViz(text);
    if (!parsed.ok) {
      this.status.value = `${name}: line ${parsed.line}: ${parsed.error}`;
      return false;
    }
    this.imported.value = fromShiViz(parsed.events);
    this.importedName.value = name;
    this.status.value = `${name}: ${parsed.events.length} events loaded (read-only)`;
    this.flushSoon();
    return true;
  }

  closeImport(): void {
    this.imported.value = null;
    this.importedName.value = '';
    this.flushSoon();
  }
}
