/**
 * The message flow's model, as pure data: `link_stats` frames (per-link counts over ~100 ms) in,
 * dots to draw out. Each link gets a spawn rate from its last interval, capped per link; dots are
 * spawned at that rate, typed in proportion to the interval's counts by message type, and a share
 * of them (the interval's dropped / sent) is marked to stop at the link's middle and fade there.
 * Dots live in preallocated typed arrays (no allocation per dot or per frame). It draws nothing and
 * knows nothing of the DOM: flow.tsx owns the canvas and the animation loop.
 */

// ---- limits (the page's own; the server bounds what it sends)

/** Dots drawn at once over all links; past it, spawning waits for dots to finish. */
export const flowDotsMax = 8_192;
/** Dots spawned per second on one link at most (a busier link is drawn at this rate; its label says the real one). */
export const flowDotsPerLinkPerSecondMax = 60;
/** Dots in flight on one link at most. */
export const flowDotsPerLinkMax = 48;
/** A dot's trip from one end of a link to the other, ms, plus the link's own latency (up to flowTravelMsMax). */
export const flowTravelMsBase = 700;
export const flowTravelMsMax = 3_000;
/** A dropped dot stays at the break this long, fading, ms. */
export const flowDropFadeMs = 600;
/** A link with no frame for this long is taken as idle (the server sends only links with traffic). */
export const flowIdleAfterMs = 350;
/** A link's shown rate is smoothed over about this long, ms. */
export const flowRateSmoothingMs = 1_000;
/** Links (directed) tracked at once: 64 nodes make 4032. */
export const flowLinksMax = 8_192;
/** Message types told apart by colour (the server sends at most 64 names; the rest share 'other'). */
export const flowTypesMax = 64;

// ---- the wire: a link_stats frame's data (src/replication/link-stats.ts)

export interface LinkStatsEntryWire {
  from: string;
  to: string;
  sent: number;
  delivered: number;
  dropped?: Partial<Record<'rate' | 'partition' | 'full', number>>;
  bytes: number;
  by_type?: Record<string, number>;
  in_flight: number;
}

export interface LinkStatsWire {
  interval_ms: number;
  links: LinkStatsEntryWire[];
  ops?: { writes: number; reads: number; write_failures: number };
}

/** A link_stats frame's data, or null when it is not one (the page trusts its server, not blindly). */
export function decodeLinkStats(data: unknown): LinkStatsWire | null {
  if (data === null || typeof data !== 'object') return null;
  const d = data as Partial<LinkStatsWire>;
  if (typeof d.interval_ms !== 'number' || !Array.isArray(d.links)) return null;
  return d as LinkStatsWire;
}

// ---- colours per message type

/**
 * Families of message types by what they do, each one colour: replication (blue), its answers
 * (green), heartbeats (grey), elections (amber), reads (cyan), anti-entropy (purple), hinted
 * handoff (pink), refusals (red). Types not listed get a colour from their name's hash.
 */
export const typeFamilies: ReadonlyArray<{ name: string; color: string; types: readonly string[] }> = [
  {
    name: 'replication',
    color: '#2563eb',
    types: ['append', 'entry', 'replicate', 'batch', 'put', 'write', 'snapshot', 'store_copy'],
  },
  { name: 'acknowledgement', color: '#16a34a', types: ['append_resp', 'ack', 'put_ack', 'snapshot_resp', 'entry_ack'] },
  { name: 'heartbeat', color: '#64748b', types: ['heartbeat', 'heartbeat_resp', 'ping', 'pong'] },
  {
    name: 'election',
    color: '#d97706',
    types: ['vote_req', 'vote_resp', 'pre_vote_req', 'pre_vote_resp', 'set_leader'],
  },
  { name: 'read', color: '#0891b2', types: ['get', 'get_reply', 'read', 'read_resp'] },
  {
    name: 'anti-entropy',
    color: '#9333ea',
    types: ['anti_entropy_root', 'anti_entropy_pull', 'anti_entropy_keys', 'anti_entropy_push'],
  },
  { name: 'handoff', color: '#db2777', types: ['handoff', 'handoff_ack'] },
  { name: 'refusal', color: '#dc2626', types: ['refuse', 'put_nack'] },
];
const otherPalette = ['#0d9488', '#a16207', '#4f46e5', '#be185d', '#15803d', '#7c2d12'];
const familyColor = new Map<string, string>();
for (const f of typeFamilies) for (const t of f.types) familyColor.set(t, f.color);

/** The colour a message type is drawn in (the same name, the same colour, on every page). */
export function colorOfType(type: string): string {
  const c = familyColor.get(type);
  if (c !== undefined) return c;
  let h = 0x811c9dc5;
  for (let i = 0; i < type.length; i++) h = Math.imul(h ^ type.charCodeAt(i), 0x01000193);
  return otherPalette[(h >>> 0) % otherPalette.length] as string;
}

// ---- per link

/** A link's state between frames: the spawn rate of its last interval and what it spawns next. */
export interface FlowLink {
  readonly from: string;
  readonly to: string;
  /** Index into the model's link table (stable while the link is known). */
  readonly index: number;
  /** Messages per second of the last interval (sent), as reported. */
  ratePerS: number;
  /** The rate smoothed over about flowRateSmoothingMs: what the label shows. */
  shownRatePerS: number;
  /** Dropped / sent of the last interval, 0..1. */
  dropShare: number;
  /** The last interval's counts by type index (spawned dots follow these proportions). */
  readonly typeWeights: Float64Array;
  /** Per type: dots owed to the proportion so far (largest-remainder choice of the next dot's type). */
  readonly typeCredit: Float64Array;
  /** Dots owed by the rate so far, fractional. */
  spawnCredit: number;
  /** Drops owed so far, fractional: a dot is marked dropped when it passes 1. */
  dropCredit: number;
  /** Dots of this link alive now. */
  inFlight: number;
  /** When the last frame mentioning the link arrived (ms, the caller's clock). */
  lastSeenMs: number;
  /** Travel time of its dots, ms. */
  travelMs: number;
}

/** Where a node is drawn (view units; flow.tsx maps them to the canvas). */
export interface Point {
  x: number;
  y: number;
}

/**
 * The dots in flight and the links that spawn them. `ingest` takes a frame's data; `step` moves
 * time on (spawning due dots, retiring finished ones). Dots are kept in struct-of-arrays form,
 * packed (a finished dot is replaced by the last one), so a frame walks only live dots.
 */
export class FlowModel {
  readonly links = new Map<string, FlowLink>();
  private readonly linkList: FlowLink[] = [];
  /** Type names by index (index 0 is 'other'), and their colours. */
  readonly typeNames: string[] = ['other'];
  readonly typeColors: string[] = [colorOfType('other')];
  private readonly typeIndex = new Map<string, number>([['other', 0]]);

  // Dots, struct of arrays: link index, type index, birth (ms), travel (ms), drop point (0..1, or 2 when not dropped).
  readonly dotLink = new Uint16Array(flowDotsMax);
  readonly dotType = new Uint8Array(flowDotsMax);
  readonly dotBorn = new Float64Array(flowDotsMax);
  readonly dotTravel = new Float32Array(flowDotsMax);
  readonly dotDropAt = new Float32Array(flowDotsMax);
  /** Live dots: indexes 0..count-1. */
  count = 0;
  /** Dots spawned and dropped-marked since the model was made (for tests and the page's counters). */
  spawned = 0;
  spawnedDropped = 0;
  /** Dots not spawned because a cap was reached (per link or overall). */
  capped = 0;
  private lastStepMs: number | null = null;

  /** The index of a type name (registered on first sight; past flowTypesMax it is 'other'). */
  typeOf(name: string): number {
    const i = this.typeIndex.get(name);
    if (i !== undefined) return i;
    if (this.typeNames.length >= flowTypesMax) return 0;
    const n = this.typeNames.length;
    this.typeNames.push(name);
    this.typeColors.push(colorOfType(name));
    this.typeIndex.set(name, n);
    return n;
  }

  private link(from: string, to: string, nowMs: number): FlowLink | null {
    const key = `${from} ${to}`;
    const known = this.links.get(key);
    if (known) return known;
    if (this.linkList.length >= flowLinksMax) return null;
    const l: FlowLink = {
      from,
      to,
      index: this.linkList.length,
      ratePerS: 0,
      shownRatePerS: 0,
      dropShare: 0,
      typeWeights: new Float64Array(flowTypesMax),
      typeCredit: new Float64Array(flowTypesMax),
      spawnCredit: 0,
      dropCredit: 0,
      inFlight: 0,
      lastSeenMs: nowMs,
      travelMs: flowTravelMsBase,
    };
    this.links.set(key, l);
    this.linkList.push(l);
    return l;
  }

  /** The link a dot's link index stands for. */
  linkAt(index: number): FlowLink | undefined {
    return this.linkList[index];
  }

  /**
   * One frame's data: each listed link's rate, drop share and type mix for the next interval;
   * links not listed had no traffic (their rate drops to 0). `latencyMs` gives a link's set
   * latency (drawn as a longer trip).
   */
  ingest(data: LinkStatsWire, nowMs: number, latencyMs: (from: string, to: string) => number = () => 0): void {
    const intervalS = Math.max(data.interval_ms, 1) / 1000;
    for (const l of this.linkList) l.ratePerS = 0;
    for (const e of data.links) {
      const l = this.link(e.from, e.to, nowMs);
      if (l === null) continue;
      const sent = Math.max(0, e.sent);
      l.ratePerS = sent / intervalS;
      l.lastSeenMs = nowMs;
      const dropped = (e.dropped?.rate ?? 0) + (e.dropped?.partition ?? 0) + (e.dropped?.full ?? 0);
      l.dropShare = sent > 0 ? Math.min(1, dropped / sent) : dropped > 0 ? 1 : 0;
      // With no sends but drops (messages sent earlier, lost now), a few dots still show the loss.
      if (sent === 0 && dropped > 0) l.ratePerS = dropped / intervalS;
      l.typeWeights.fill(0);
      let typed = 0;
      if (e.by_type) {
        for (const name in e.by_type) {
          const n = e.by_type[name] ?? 0;
          if (n <= 0) continue;
          const t = this.typeOf(name);
          l.typeWeights[t] = (l.typeWeights[t] as number) + n;
          typed += n;
        }
      }
      // Messages not counted by type (or none counted) are 'other'.
      if (typed < sent || typed === 0) l.typeWeights[0] = Math.max(sent - typed, typed === 0 ? 1 : 0);
      l.travelMs = Math.min(flowTravelMsMax, flowTravelMsBase + Math.max(0, latencyMs(e.from, e.to)));
    }
  }

  /** Moves the model to `nowMs`: retires finished dots, then spawns the dots due since the last step. */
  step(nowMs: number): void {
    const last = this.lastStepMs ?? nowMs;
    const dtMs = Math.max(0, Math.min(nowMs - last, 250));
    this.lastStepMs = nowMs;
    this.retire(nowMs);
    const alpha = 1 - Math.exp(-dtMs / flowRateSmoothingMs);
    for (const l of this.linkList) {
      if (l.ratePerS > 0 && nowMs - l.lastSeenMs > flowIdleAfterMs) l.ratePerS = 0;
      l.shownRatePerS += (l.ratePerS - l.shownRatePerS) * alpha;
      if (l.shownRatePerS < 0.05 && l.ratePerS === 0) l.shownRatePerS = 0;
      if (l.ratePerS === 0) {
        l.spawnCredit = 0;
        continue;
      }
      const drawnRate = Math.min(l.ratePerS, flowDotsPerLinkPerSecondMax);
      l.spawnCredit = Math.min(l.spawnCredit + (drawnRate * dtMs) / 1000, flowDotsPerLinkMax);
      // Dots of one step start spread over it, so a slow frame does not draw them in a clump.
      let k = 0;
      const due = Math.floor(l.spawnCredit);
      while (l.spawnCredit >= 1) {
        l.spawnCredit -= 1;
        if (l.inFlight >= flowDotsPerLinkMax || this.count >= flowDotsMax) {
          this.capped++;
          continue;
        }
        this.spawn(l, nowMs - (dtMs * (due - 1 - k)) / Math.max(due, 1));
        k++;
      }
    }
  }

  private spawn(l: FlowLink, bornMs: number): void {
    // The type: the one furthest behind its share of the interval's counts (largest remainder).
    let total = 0;
    for (let t = 0; t < this.typeNames.length; t++) total += l.typeWeights[t] as number;
    let best = 0;
    let bestCredit = -Infinity;
    for (let t = 0; t < this.typeNames.length; t++) {
      const w = l.typeWeights[t] as number;
      if (w <= 0) continue;
      const c = (l.typeCredit[t] as number) + w / total;
      l.typeCredit[t] = c;
      if (c > bestCredit) {
        bestCredit = c;
        best = t;
      }
    }
    l.typeCredit[best] = (l.typeCredit[best] as number) - 1;
    const i = this.count++;
    this.dotLink[i] = l.index;
    this.dotType[i] = best;
    this.dotBorn[i] = bornMs;
    this.dotTravel[i] = l.travelMs;
    l.dropCredit += l.dropShare;
    if (l.dropCredit >= 1 - 1e-9) {
      l.dropCredit -= 1;
      this.dotDropAt[i] = 0.5;
      this.spawnedDropped++;
    } else this.dotDropAt[i] = 2;
    l.inFlight++;
    this.spawned++;
  }

  /** Removes dots whose trip (or fade after a drop) is over; the last live dot takes each freed place. */
  private retire(nowMs: number): void {
    let i = 0;
    while (i < this.count) {
      const age = nowMs - (this.dotBorn[i] as number);
      const travel = this.dotTravel[i] as number;
      const dropAt = this.dotDropAt[i] as number;
      const end = dropAt <= 1 ? travel * dropAt + flowDropFadeMs : travel;
      if (age < end) {
        i++;
        continue;
      }
      const l = this.linkList[this.dotLink[i] as number];
      if (l) l.inFlight--;
      const lastIdx = --this.count;
      if (i !== lastIdx) {
        this.dotLink[i] = this.dotLink[lastIdx] as number;
        this.dotType[i] = this.dotType[lastIdx] as number;
        this.dotBorn[i] = this.dotBorn[lastIdx] as number;
        this.dotTravel[i] = this.dotTravel[lastIdx] as number;
        this.dotDropAt[i] = this.dotDropAt[lastIdx] as number;
      }
    }
  }

  /** Whether anything is moving or will spawn: the animation loop runs only then. */
  active(): boolean {
    if (this.count > 0) return true;
    for (const l of this.linkList) if (l.ratePerS > 0 || l.shownRatePerS > 0) return true;
    return false;
  }

  /** Forgets every link and dot (another cluster is shown). */
  clear(): void {
    this.links.clear();
    this.linkList.length = 0;
    this.count = 0;
    this.lastStepMs = null;
  }

  /**
   * The busiest links by shown rate, the two directions of a pair summed: what the labels show.
   * Allocates (a few objects per call): called a few times per second, not per frame.
   */
  busiest(max: number): Array<{ a: string; b: string; ratePerS: number; dropShare: number }> {
    const pairs = new Map<string, { a: string; b: string; ratePerS: number; dropped: number }>();
    for (const l of this.linkList) {
      if (l.shownRatePerS < 0.5) continue;
      const [a, b] = l.from < l.to ? [l.from, l.to] : [l.to, l.from];
      const key = `${a} ${b}`;
      const p = pairs.get(key) ?? { a, b, ratePerS: 0, dropped: 0 };
      p.ratePerS += l.shownRatePerS;
      p.dropped += l.shownRatePerS * l.dropShare;
      pairs.set(key, p);
    }
    return [...pairs.values()]
      .sort((x, y) => y.ratePerS - x.ratePerS || (x.a + x.b < y.a + y.b ? -1 : 1))
      .slice(0, max)
      .map((p) => ({ a: p.a, b: p.b, ratePerS: p.ratePerS, dropShare: p.ratePerS > 0 ? p.dropped / p.ratePerS : 0 }));
  }

  /** Total shown rate over every link (messages/s). */
  totalRatePerS(): number {
    let s = 0;
    for (const l of this.linkList) s += l.shownRatePerS;
    return s;
  }
}

/**
 * Where dot `i` is at `nowMs`, written into `out` (no allocation): its position along the link
 * from `a` to `b`, the points inset by `inset` view units at both ends (the nodes' radius), and its
 * opacity (1 while moving, fading after a drop). Returns false when the dot is not drawable.
 */
export function dotPosition(
  m: FlowModel,
  i: number,
  nowMs: number,
  a: Point,
  b: Point,
  inset: number,
  out: { x: number; y: number; alpha: number; stoppedAtDrop: boolean },
): boolean {
  const travel = m.dotTravel[i] as number;
  const age = nowMs - (m.dotBorn[i] as number);
  if (age < 0) return false;
  let f = age / travel;
  const dropAt = m.dotDropAt[i] as number;
  out.alpha = 1;
  out.stoppedAtDrop = false;
  if (dropAt <= 1 && f >= dropAt) {
    f = dropAt;
    out.alpha = Math.max(0, 1 - (age - travel * dropAt) / flowDropFadeMs);
    out.stoppedAtDrop = true;
  } else if (f > 1) f = 1;
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len = Math.hypot(dx, dy);
  if (len <= 2 * inset) return false;
  const ux = dx / len;
  const uy = dy / len;
  const span = len - 2 * inset;
  // A dot keeps a little to its side of the line, so the two directions of a link do not overlap.
  const side = 3;
  out.x = a.x + ux * (inset + span * f) - uy * side;
  out.y = a.y + uy * (inset + span * f) + ux * side;
  return true;
}

// ---- the load generator's schedule (load.tsx issues the requests)

/** The load generator's bounds (enforced by its form and by loadSchedule). */
export const loadClientsMax = 32;
export const loadRatePerSecondMax = 2_000;
export const loadKeysMax = 100_000;
/** Operations started in one tick at most (a long pause of the tab does not release a burst). */
export const loadBurstMax = 200;

export interface LoadSettings {
  clients: number;
  ratePerS: number;
  keys: number;
  /** Share of reads, 0..1 (the rest are writes). */
  readShare: number;
}

/** The settings within bounds, or why not. */
export function checkLoadSettings(s: LoadSettings): { ok: true } | { ok: false; error: string } {
  if (!Number.isInteger(s.clients) || s.clients < 1 || s.clients > loadClientsMax)
    return { ok: false, error: `clients: a whole number from 1 to ${loadClientsMax}` };
  if (!Number.isFinite(s.ratePerS) || s.ratePerS <= 0 || s.ratePerS > loadRatePerSecondMax)
    return { ok: false, error: `rate: more than 0 and at most ${loadRatePerSecondMax} operations/s` };
  if (!Number.isInteger(s.keys) || s.keys < 1 || s.keys > loadKeysMax)
    return { ok: false, error: `keys: a whole number from 1 to ${loadKeysMax}` };
  if (!Number.isFinite(s.readShare) || s.readShare < 0 || s.readShare > 1)
    return { ok: false, error: 'reads: a share from 0 to 1' };
  return { ok: true };
}

/**
 * The rate's bookkeeping: operations owed since the start, started, and skipped because every
 * client was busy (an open-loop generator that never queues: a skipped operation is counted, not
 * delayed, so a slow cluster shows as lower throughput, not as a growing backlog).
 */
export class LoadSchedule {
  private owed = 0;
  private lastMs: number | null = null;
  started = 0;
  skipped = 0;

  constructor(private readonly settings: LoadSettings) {}

  /**
   * How many operations to start now, given the clients busy: the rate's due operations up to the
   * free clients (and loadBurstMax); the rest are skipped.
   */
  tick(nowMs: number, busyClients: number): number {
    const dt = this.lastMs === null ? 0 : Math.max(0, nowMs - this.lastMs);
    this.lastMs = nowMs;
    this.owed += (this.settings.ratePerS * dt) / 1000;
    const due = Math.floor(this.owed);
    if (due <= 0) return 0;
    this.owed -= due;
    const free = Math.max(0, this.settings.clients - busyClients);
    const go = Math.min(due, free, loadBurstMax);
    this.started += go;
    this.skipped += due - go;
    return go;
  }
}

/** The p-quantile (0..1) of the values (sorted in place), nearest rank; NaN for none. */
export function quantile(values: number[] | Float64Array, p: number): number {
  const n = values.length;
  if (n === 0) return Number.NaN;
  values.sort((a, b) => a - b);
  const rank = Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1));
  return values[rank] as number;
}
