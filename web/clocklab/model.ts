/**
 * The clock lab page's run: lanes (processes), events with their clocks, messages from send to
 * receive, snapshots as cuts. Built either live from the lab's `/ws` frames (`apply`) or from a
 * ShiViz log (`fromShiViz`, read-only), and laid out as it grows: an event's row is one past the
 * previous event of its lane and past its message's send, so arrows always point down. Pure: no
 * DOM, no fetch; the store feeds it and the diagram reads it.
 */
import { type CutMessage, type VClock, clockText, cutViolations, messageIdsIn, vectorText } from './causality.js';
import { type ShiVizEvent, nonzero } from '../../src/clocklab/shiviz.js';

export type EventKind = 'internal' | 'send' | 'receive' | 'deliver' | 'held' | 'dropped' | 'kv_write' | 'kv_read';

export interface DiagramEvent {
  index: number;
  lane: number;
  host: string;
  row: number;
  kind: EventKind;
  /** The clock as the API reports it, in the process's clock type (vectors as nonzero entries). */
  clock: string;
  /** The vector clock used for happened-before (held and dropped events carry the message's). */
  vector: VClock;
  /** What happened, for the label and the ShiViz text: `send m1 to p2`, `internal work` ... */
  text: string;
  /** Held and dropped events move no clock: they take no part in the causal cones. */
  causal: boolean;
  /** The event this one must be drawn below besides its lane's previous (its message's send), or -1. */
  dep: number;
}

export type MessageState = 'in_flight' | 'held' | 'delivered' | 'dropped';

export interface DiagramMessage {
  id: string;
  from: string;
  to: string;
  /** Event index of the send (-1 when the send is not in the run, e.g. before the replay). */
  send: number;
  /** Event index of the receive or delivery, or of the drop. */
  end: number;
  /** Event index of the arrival into the hold-back queue. */
  held: number;
  state: MessageState;
  reason?: string;
}

export interface Lane {
  id: string;
  clockType: string;
  killed: boolean;
  /** Event indices in row order. */
  events: number[];
  lastRow: number;
}

export interface ChannelRecord {
  from: string;
  to: string;
  messages: Array<{ id: string; amount: number; payload: string }>;
}

export interface Cut {
  id: string;
  initiator: string;
  status: 'started' | 'complete' | 'incomplete';
  /** Per process, the row its state was recorded after (row + 0.5 is where the cut passes). */
  rows: Map<string, number>;
  markers: Array<{ from: string; to: string; sentRow: number; receivedRow: number | undefined }>;
  /** From the lab's verify answer; undefined until asked. */
  consistent: boolean | undefined;
  reasons: string[];
  /** Messages that make the cut inconsistent (from the diagram and the verifier's reasons). */
  offending: string[];
  totalBalance: number | undefined;
  inTransit: number | undefined;
  channels: ChannelRecord[];
  balances: Record<string, number>;
}

/**
 * Events the page keeps (a 20 × 5,000 run fits); past it the oldest quarter is forgotten and the
 * rest laid out again.
 */
export const modelEventsMax = 150_000;

interface Frame {
  type: string;
  seq?: number;
  data: Record<string, unknown>;
}

const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v));
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const vec = (v: unknown): VClock => (v !== null && typeof v === 'object' ? (v as VClock) : {});

export function isFrame(x: unknown): x is Frame {
  return (
    x !== null &&
    typeof x === 'object' &&
    typeof (x as Frame).type === 'string' &&
    (x as Frame).data !== null &&
    typeof (x as Frame).data === 'object'
  );
}

export class RunModel {
  lanes: Lane[] = [];
  events: DiagramEvent[] = [];
  messages = new Map<string, DiagramMessage>();
  cuts = new Map<string, Cut>();
  readOnly = false;
  /** A loaded log: its events' indices in the log's own order (exported again in that order). */
  logOrder: number[] | undefined;
  /** Bumped on every change: the page redraws when it moves. */
  version = 0;
  lastSeq = 0;
  /** Frames lost between the lab and the page (gaps in seq). */
  gaps = 0;
  forgotten = 0;
  private laneOf = new Map<string, number>();
  private pendingSends = new Map<string, string[]>();
  private pendingReceive = new Map<string, { id: string; from: string; held: boolean }>();
  private pendingLabel = new Map<string, string>();
  private pendingRead = new Map<string, string>();

  constructor(readonly eventsMax = modelEventsMax) {}

  clear(): void {
    this.lanes = [];
    this.events = [];
    this.messages.clear();
    this.cuts.clear();
    this.laneOf.clear();
    this.pendingSends.clear();
    this.pendingReceive.clear();
    this.pendingLabel.clear();
    this.pendingRead.clear();
    this.version++;
  }

  lane(id: string, clockType = 'vector'): number {
    let i = this.laneOf.get(id);
    if (i === undefined) {
      i = this.lanes.length;
      this.lanes.push({ id, clockType, killed: false, events: [], lastRow: -1 });
      this.laneOf.set(id, i);
    }
    return i;
  }

  laneIndex(id: string): number | undefined {
    return this.laneOf.get(id);
  }

  /** Number of rows the run takes (the diagram's height in rows). */
  get rows(): number {
    let max = 0;
    for (const l of this.lanes) max = Math.max(max, l.lastRow + 1);
    return max;
  }

  /**
   * Adds an event on `host`'s lane, below its lane's last event and below `dep` (its message's send),
   * or below row `afterRow` when given (a loaded log's event may receive from several sends).
   */
  addEvent(
    host: string,
    kind: EventKind,
    clock: string,
    vector: VClock,
    text: string,
    dep = -1,
    afterRow = this.rowOf(dep),
  ): number {
    const laneIdx = this.lane(host);
    const lane = this.lanes[laneIdx] as Lane;
    const row = Math.max(lane.lastRow + 1, afterRow + 1);
    const index = this.events.length;
    const causal = kind !== 'held' && kind !== 'dropped';
    this.events.push({ index, lane: laneIdx, host, row, kind, clock, vector, text, causal, dep });
    lane.events.push(index);
    lane.lastRow = row;
    return index;
  }

  private rowOf(index: number): number {
    return index >= 0 ? (this.events[index] as DiagramEvent).row : -1;
  }

  /** Applies one `/ws` frame of the lab; false when it changed nothing the page shows. */
  apply(raw: unknown): boolean {
    if (!isFrame(raw) || this.readOnly) return false;
    if (typeof raw.seq === 'number') {
      // A replay after a reconnect repeats frames already applied: they are skipped.
      if (raw.seq <= this.lastSeq) return false;
      if (this.lastSeq > 0 && raw.seq > this.lastSeq + 1) this.gaps += raw.seq - this.lastSeq - 1;
      this.lastSeq = raw.seq;
    }
    if (raw.type === 'simulation_reset') {
      this.clear();
      return true;
    }
    const changed = this.step(raw);
    if (changed) this.version++;
    if (this.events.length > this.eventsMax) this.forgetOldest();
    return changed;
  }

  private step(f: Frame): boolean {
    const d = f.data;
    switch (f.type) {
      case 'process_spawned':
        this.lane(str(d['process']), str(d['clock_type']) || 'vector');
        return true;
      case 'process_killed': {
        const i = this.laneOf.get(str(d['process']));
        if (i !== undefined) (this.lanes[i] as Lane).killed = true;
        return true;
      }
      case 'message_sent': {
        const from = str(d['from']);
        const id = str(d['id']);
        const list = this.pendingSends.get(from) ?? [];
        list.push(id);
        this.pendingSends.set(from, list);
        this.messages.set(id, { id, from, to: str(d['to']), send: -1, end: -1, held: -1, state: 'in_flight' });
        return false;
      }
      case 'internal_event':
        this.pendingLabel.set(str(d['process']), str(d['label']));
        return false;
      case 'kv_read':
        this.pendingRead.set(str(d['reader']), str(d['key']));
        return false;
      case 'kv_write': {
        const writer = str(d['writer']);
        const lane = this.laneOf.get(writer);
        const last = lane === undefined ? undefined : (this.lanes[lane] as Lane).events.at(-1);
        const e = last === undefined ? undefined : this.events[last];
        if (e && e.kind === 'kv_write') e.text = `kv_write ${str(d['key'])}=${str(d['value'])}`;
        return true;
      }
      case 'message_delivered': {
        const id = str(d['id']);
        const m = this.messages.get(id);
        this.pendingReceive.set(str(d['to']), {
          id,
          from: str(d['from']),
          held: num(d['held_ms']) > 0 || (m !== undefined && m.held >= 0),
        });
        return false;
      }
      case 'message_held': {
        const m = this.messageFor(d);
        const w = d['waiting_for'] as Record<string, unknown> | undefined;
        const waits = w ? ` waiting for ${str(w['process'])} (${str(d['rule'])})` : '';
        m.held = this.addEvent(
          m.to,
          'held',
          vectorText(vec(d['vector'])),
          vec(d['vector']),
          `held ${m.id} from ${m.from}${waits}`,
          m.send,
        );
        m.state = 'held';
        return true;
      }
      case 'message_dropped': {
        if (d['marker'] === true) return false;
        const m = this.messageFor(d);
        m.state = 'dropped';
        m.reason = str(d['reason']);
        const sent = m.send >= 0 ? (this.events[m.send] as DiagramEvent) : undefined;
        m.end = this.addEvent(
          m.to,
          'dropped',
          sent ? sent.clock : '',
          sent ? sent.vector : {},
          `dropped ${m.id} from ${m.from} (${m.reason})`,
          m.send,
        );
        return true;
      }
      case 'clock_tick':
        this.tick(d);
        return true;
      case 'snapshot_started': {
        const id = str(d['snapshot']);
        this.cuts.set(id, {
          id,
          initiator: str(d['initiator']),
          status: 'started',
          rows: new Map(),
          markers: [],
          consistent: undefined,
          reasons: [],
          offending: [],
          totalBalance: undefined,
          inTransit: undefined,
          channels: [],
          balances: {},
        });
        return true;
      }
      case 'snapshot_state_recorded': {
        const cut = this.cuts.get(str(d['snapshot']));
        if (!cut) return false;
        const p = str(d['process']);
        const lane = this.laneOf.get(p);
        cut.rows.set(p, lane === undefined ? -1 : (this.lanes[lane] as Lane).lastRow);
        cut.balances[p] = num(d['balance']);
        return true;
      }
      case 'marker_sent':
      case 'marker_received': {
        const cut = this.cuts.get(str(d['snapshot']));
        if (!cut) return false;
        const from = str(d['from']);
        const to = str(d['to']);
        const lastRow = (p: string): number => {
          const l = this.laneOf.get(p);
          return l === undefined ? -1 : (this.lanes[l] as Lane).lastRow;
        };
        if (f.type === 'marker_sent') cut.markers.push({ from, to, sentRow: lastRow(from), receivedRow: undefined });
        else {
          const mk = cut.markers.find((x) => x.from === from && x.to === to && x.receivedRow === undefined);
          if (mk) mk.receivedRow = lastRow(to);
        }
        return true;
      }
      case 'snapshot_complete':
      case 'snapshot_incomplete': {
        const cut = this.cuts.get(str(d['snapshot']));
        if (!cut) return false;
        cut.status = f.type === 'snapshot_complete' ? 'complete' : 'incomplete';
        if (typeof d['consistent'] === 'boolean') cut.consistent = d['consistent'];
        if (typeof d['total_balance'] === 'number') cut.totalBalance = d['total_balance'];
        if (typeof d['in_transit'] === 'number') cut.inTransit = d['in_transit'];
        if (Array.isArray(d['reasons'])) this.setReasons(cut, d['reasons'].map(str));
        if (cut.status === 'incomplete') cut.consistent = false;
        return true;
      }
      case 'snapshot_evicted':
        return false;
      default:
        return false;
    }
  }

  /** The message a frame names, created when its send was not seen (a replay starting mid-run). */
  private messageFor(d: Record<string, unknown>): DiagramMessage {
    const id = str(d['id']);
    let m = this.messages.get(id);
    if (!m) {
      m = { id, from: str(d['from']), to: str(d['to']), send: -1, end: -1, held: -1, state: 'in_flight' };
      this.messages.set(id, m);
    }
    return m;
  }

  private tick(d: Record<string, unknown>): void {
    const host = str(d['process']);
    const clockType = str(d['clock_type']) || 'vector';
    const lane = this.lanes[this.lane(host, clockType)] as Lane;
    lane.clockType = clockType;
    const vector = vec(d['vector'] ?? d['clock']);
    const clock = clockText(d['clock']);
    const cause = str(d['cause']);
    switch (cause) {
      case 'send': {
        const ids = this.pendingSends.get(host) ?? [];
        this.pendingSends.delete(host);
        const text = `send ${ids.map((id) => `${id} to ${this.messages.get(id)?.to ?? '?'}`).join(', ')}`;
        const e = this.addEvent(host, 'send', clock, vector, text);
        for (const id of ids) {
          const m = this.messages.get(id);
          if (m) m.send = e;
        }
        return;
      }
      case 'receive': {
        const r = this.pendingReceive.get(host);
        this.pendingReceive.delete(host);
        const m = r ? this.messages.get(r.id) : undefined;
        const kind: EventKind = r?.held ? 'deliver' : 'receive';
        const text = r ? `${kind} ${r.id} from ${r.from}` : 'receive';
        const e = this.addEvent(host, kind, clock, vector, text, m ? m.send : -1);
        if (m) {
          m.end = e;
          m.state = 'delivered';
        }
        return;
      }
      case 'internal': {
        const label = this.pendingLabel.get(host) ?? '';
        this.pendingLabel.delete(host);
        this.addEvent(host, 'internal', clock, vector, `internal ${label}`.trimEnd());
        return;
      }
      case 'kv_write':
        this.addEvent(host, 'kv_write', clock, vector, 'kv_write');
        return;
      case 'kv_read': {
        const key = this.pendingRead.get(host) ?? '';
        this.pendingRead.delete(host);
        this.addEvent(host, 'kv_read', clock, vector, `kv_read ${key}`.trimEnd());
        return;
      }
      default:
        this.addEvent(host, 'internal', clock, vector, cause);
    }
  }

  /** The cut's messages as the consistency check wants them. */
  private cutMessages(): CutMessage[] {
    const out: CutMessage[] = [];
    for (const m of this.messages.values()) {
      if (m.send < 0 || m.end < 0 || m.state !== 'delivered') continue;
      out.push({ id: m.id, from: m.from, to: m.to, sendRow: this.rowOf(m.send), receiveRow: this.rowOf(m.end) });
    }
    return out;
  }

  private setReasons(cut: Cut, reasons: string[]): void {
    cut.reasons = reasons;
    const ids = new Set([...cutViolations(cut.rows, this.cutMessages()), ...messageIdsIn(reasons)]);
    cut.offending = [...ids];
  }

  /** The lab's verify answer for a snapshot (and its recorded channels and total, when fetched). */
  applyVerify(
    id: string,
    verify: { consistent?: unknown; reasons?: unknown; in_transit?: unknown; status?: unknown },
    view?: { total_balance?: unknown; channels?: unknown },
  ): void {
    const cut = this.cuts.get(id);
    if (!cut) return;
    if (typeof verify.consistent === 'boolean') cut.consistent = verify.consistent;
    if (typeof verify.in_transit === 'number') cut.inTransit = verify.in_transit;
    if (Array.isArray(verify.reasons)) this.setReasons(cut, verify.reasons.map(str));
    if (view) {
      if (typeof view.total_balance === 'number') cut.totalBalance = view.total_balance;
      if (Array.isArray(view.channels)) {
        cut.channels = [];
        for (const c of view.channels as Array<Record<string, unknown>>) {
          const msgs = Array.isArray(c['messages']) ? (c['messages'] as Array<Record<string, unknown>>) : [];
          if (msgs.length === 0) continue;
          cut.channels.push({
            from: str(c['from']),
            to: str(c['to']),
            messages: msgs.map((m) => ({ id: str(m['id']), amount: num(m['amount']), payload: str(m['payload']) })),
          });
        }
      }
    }
    this.version++;
  }

  /**
   * Past the cap: the oldest quarter of the events is forgotten and the rest laid out again from
   * the top (each event below its lane's previous and its message's send, as when it came). Arrows
   * whose ends were all forgotten go; cuts keep their place relative to the events that stay.
   */
  private forgetOldest(): void {
    const cut = Math.floor(this.events.length / 4);
    const old = this.events;
    const oldLanes = this.lanes.map((l) => l.events.slice());
    /** Old row → new row on a lane: the row of the last kept event at or above it, else -1. */
    const remapRow = (laneIdx: number, row: number, rowOfNew: (i: number) => number): number => {
      const list = oldLanes[laneIdx] ?? [];
      let lo = 0;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((old[list[mid] as number] as DiagramEvent).row <= row) lo = mid + 1;
        else hi = mid;
      }
      const at = lo - 1;
      if (at < 0) return -1;
      const idx = list[at] as number;
      return idx >= cut ? rowOfNew(idx - cut) : -1;
    };
    this.events = [];
    for (const l of this.lanes) {
      l.events = [];
      l.lastRow = -1;
    }
    for (let i = cut; i < old.length; i++) {
      const e = old[i] as DiagramEvent;
      const dep = e.dep >= cut ? e.dep - cut : -1;
      this.addEvent(e.host, e.kind, e.clock, e.vector, e.text, dep);
    }
    const shift = (i: number): number => (i >= cut ? i - cut : -1);
    for (const [id, m] of this.messages) {
      m.send = shift(m.send);
      m.end = shift(m.end);
      m.held = shift(m.held);
      if (m.send < 0 && m.end < 0 && m.held < 0 && m.state !== 'in_flight') this.messages.delete(id);
    }
    const rowOfNew = (i: number): number => (this.events[i] as DiagramEvent).row;
    for (const c of this.cuts.values()) {
      for (const [p, r] of c.rows) {
        const l = this.laneOf.get(p);
        if (l !== undefined) c.rows.set(p, remapRow(l, r, rowOfNew));
      }
      for (const mk of c.markers) {
        const a = this.laneOf.get(mk.from);
        const b = this.laneOf.get(mk.to);
        if (a !== undefined) mk.sentRow = remapRow(a, mk.sentRow, rowOfNew);
        if (b !== undefined && mk.receivedRow !== undefined) mk.receivedRow = remapRow(b, mk.receivedRow, rowOfNew);
      }
    }
    this.forgotten += cut;
    this.version++;
  }

  /** The clock events of the run as ShiViz events (held and dropped move no clock and are left out). */
  toShiViz(): ShiVizEvent[] {
    const out: ShiVizEvent[] = [];
    const order = this.logOrder ?? this.events.map((e) => e.index);
    for (const i of order) {
      const e = this.events[i] as DiagramEvent;
      if (e.causal) out.push({ host: e.host, clock: nonzero(e.vector), text: e.text });
    }
    return out;
  }
}

/** Message sends and receives named in the lab's own ShiViz texts. */
const sendTextRe = /^send (.+)$/;
const sendPartRe = /^(\S+) to (\S+)$/;
const receiveTextRe = /^(receive|deliver) (\S+) from (\S+)/;

/**
 * A read-only run from a ShiViz log. Events are laid out in a linear extension of happened-before
 * (the sum of a vector's entries grows along every causal path). Messages come from the texts when
 * they are the lab's own (`send m1 to p2`, `receive m1 from p1`; `internal`, `kv_write` and
 * `kv_read` events have none); for any other text from the clocks: an event that learns of another
 * host's event directly (not through a third host) received a message from it.
 */
export function fromShiViz(log: readonly ShiVizEvent[]): RunModel {
  const run = new RunModel();
  // Lanes in natural order of the host names (p2 before p10): the log does not say in which order
  // the processes were started.
  const hosts = [...new Set(log.map((e) => e.host))];
  hosts.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  for (const h of hosts) run.lane(h);
  const sum = (v: VClock): number => {
    let s = 0;
    for (const n of Object.values(v)) s += n;
    return s;
  };
  const order = log.map((e, i) => ({ e, i, s: sum(e.clock) })).sort((a, b) => a.s - b.s || a.i - b.i);
  /** Index of the event on `host` whose own entry is `n`. */
  const byOwn = new Map<string, number>();
  const known = new Map<string, VClock>();
  const sendsById = new Map<string, { index: number; to: string }>();
  const logOrder: number[] = new Array<number>(log.length);
  for (const { e, i: at } of order) {
    const text = e.text;
    const recv = receiveTextRe.exec(text);
    const send = sendTextRe.exec(text);
    let kind: EventKind = 'internal';
    if (recv) kind = recv[1] === 'deliver' ? 'deliver' : 'receive';
    else if (send) kind = 'send';
    else if (text.startsWith('kv_write')) kind = 'kv_write';
    else if (text.startsWith('kv_read')) kind = 'kv_read';
    // The sender of an inferred message: a host whose entry grew past what this host knew, unless a
    // third host's event that this one learnt of already knew it.
    let after = -1;
    const inferred: number[] = [];
    const labText = recv !== null || send !== null || kind !== 'internal' || text.startsWith('internal');
    if (!labText) {
      const prev = known.get(e.host) ?? {};
      const grown: number[] = [];
      for (const [h, n] of Object.entries(e.clock)) {
        if (h === e.host || n <= (prev[h] ?? 0)) continue;
        const idx = byOwn.get(`${h}\u0000${n}`);
        if (idx !== undefined) grown.push(idx);
      }
      for (const idx of grown) {
        const src = run.events[idx] as DiagramEvent;
        const viaThird = grown.some(
          (j) =>
            j !== idx &&
            (run.events[j] as DiagramEvent).vector[src.host] !== undefined &&
            ((run.events[j] as DiagramEvent).vector[src.host] ?? 0) >= (src.vector[src.host] ?? 0),
        );
        if (!viaThird) inferred.push(idx);
      }
      for (const idx of inferred) after = Math.max(after, (run.events[idx] as DiagramEvent).row);
      if (inferred.length > 0) kind = 'receive';
    }
    let sendOf: { index: number; to: string } | undefined;
    if (recv) {
      sendOf = sendsById.get(recv[2] as string);
      if (sendOf) after = (run.events[sendOf.index] as DiagramEvent).row;
    }
    const index = addImported(run, e, kind, after);
    logOrder[at] = index;
    byOwn.set(`${e.host}\u0000${e.clock[e.host] ?? 0}`, index);
    known.set(e.host, e.clock);
    if (send) {
      for (const part of (send[1] as string).split(', ')) {
        const p = sendPartRe.exec(part);
        if (!p) continue;
        const id = p[1] as string;
        sendsById.set(id, { index, to: p[2] as string });
        run.messages.set(id, {
          id,
          from: e.host,
          to: p[2] as string,
          send: index,
          end: -1,
          held: -1,
          state: 'in_flight',
        });
      }
    }
    if (recv) {
      const id = recv[2] as string;
      const m = run.messages.get(id);
      if (m) {
        m.end = index;
        m.state = 'delivered';
      } else {
        run.messages.set(id, {
          id,
          from: recv[3] as string,
          to: e.host,
          send: -1,
          end: index,
          held: -1,
          state: 'delivered',
        });
      }
    }
    for (const src of inferred) {
      const id = `i${run.messages.size + 1}`;
      const from = (run.events[src] as DiagramEvent).host;
      run.messages.set(id, { id, from, to: e.host, send: src, end: index, held: -1, state: 'delivered' });
    }
  }
  run.readOnly = true;
  run.logOrder = logOrder;
  run.version++;
  return run;
}

function addImported(run: RunModel, e: ShiVizEvent, kind: EventKind, after: number): number {
  return run.addEvent(e.host, kind, vectorText(e.clock), e.clock, e.text, -1, after);
}
