/**
 * Pure rules of the per-strategy views: raft votes and terms, the leaderless hash ring (the same
 * MD5 token positions as src/replication/dynamo/ring.ts, so the page draws the server's ring),
 * sloppy-quorum stand-ins, multi-leader conflicts and vector clocks, and clock skew badges.
 * No I/O, no DOM: strategy-views.tsx fetches and draws, this decides what is shown.
 */
import { clockSkewMsMax } from '../../protocol/replication-limits.js';
import type { NodeView } from './model.js';

// ---- raft ----

export interface Vote {
  readonly from: string;
  readonly to: string;
}

export interface RaftElection {
  /** The highest term any live node reports (null when no node reports one). */
  readonly term: number | null;
  /** Votes cast in that term by live nodes (a node voting for itself included). */
  readonly votes: readonly Vote[];
  /** Live nodes standing in that term (candidates, pre-candidates). */
  readonly candidates: readonly string[];
  /** Votes per node voted for, most first. */
  readonly tally: ReadonlyArray<{ readonly node: string; readonly votes: number }>;
  /** A node standing with no leader of that term: an election is under way. */
  readonly underWay: boolean;
}

const live = (n: NodeView): boolean => !n.removed && n.state === 'online';

/** Who votes for whom in the newest term, from the nodes' statuses. */
export function raftElection(nodes: readonly NodeView[]): RaftElection {
  let term: number | null = null;
  for (const n of nodes) if (live(n) && n.term !== undefined) term = Math.max(term ?? 0, n.term);
  if (term === null) return { term: null, votes: [], candidates: [], tally: [], underWay: false };
  const current = nodes.filter((n) => live(n) && n.term === term);
  const candidates = current.filter((n) => n.role === 'candidate' || n.role === 'pre_candidate').map((n) => n.id);
  const hasLeader = current.some((n) => n.role === 'leader' && !n.staleLeader);
  const underWay = candidates.length > 0 && !hasLeader;
  // While an election runs, only votes for those standing count: a vote for anyone else was cast
  // earlier in the term (a pre-candidate asks before raising its term, so it still holds its old vote).
  const votes = current
    .filter((n) => n.votedFor !== undefined && n.votedFor !== '')
    .filter((n) => !underWay || candidates.includes(n.votedFor as string))
    .map((n) => ({ from: n.id, to: n.votedFor as string }));
  const counts = new Map<string, number>();
  for (const v of votes) counts.set(v.to, (counts.get(v.to) ?? 0) + 1);
  const tally = [...counts.entries()]
    .map(([node, c]) => ({ node, votes: c }))
    .sort((a, b) => b.votes - a.votes || byNodeId(a.node, b.node));
  return { term, votes, candidates, tally, underWay };
}

/** The words drawn beside a raft node: its term, commit index and vote. */
export function raftBadge(n: NodeView): string {
  const parts = [`term ${n.term ?? '?'}`, `commit ${n.commitIndex}`];
  if (n.votedFor !== undefined && n.votedFor !== '') parts.push(`voted for ${n.votedFor}`);
  return parts.join(' · ');
}

/** Vote traffic one candidate drew in a link_stats interval (requests out, answers back). */
export interface VoteAsk {
  readonly candidate: string;
  /** Nodes it sent a vote request to (pre-votes included: the wire type is the same). */
  readonly asked: readonly string[];
  /** Nodes that answered it (granted or not: the aggregates count messages, not their contents). */
  readonly answeredBy: readonly string[];
}

/**
 * Who asks whom for votes, and who answers, from one link_stats interval's per-type counts: the
 * raft core has no vote event, and the nodes' statuses (voted_for) are fetched about once a
 * second, after most elections are over; the message aggregates show them while they run.
 */
export function voteTraffic(
  links: ReadonlyArray<{ from: string; to: string; by_type?: Record<string, number> }>,
): VoteAsk[] {
  const asked = new Map<string, Set<string>>();
  const answered = new Map<string, Set<string>>();
  const add = (m: Map<string, Set<string>>, k: string, v: string): void => {
    const set = m.get(k) ?? new Set<string>();
    set.add(v);
    m.set(k, set);
  };
  for (const l of links) {
    if ((l.by_type?.['vote_req'] ?? 0) > 0) add(asked, l.from, l.to);
    if ((l.by_type?.['vote_resp'] ?? 0) > 0) add(answered, l.to, l.from);
  }
  const candidates = [...new Set([...asked.keys(), ...answered.keys()])].sort(byNodeId);
  return candidates.map((c) => ({
    candidate: c,
    asked: [...(asked.get(c) ?? [])].sort(byNodeId),
    answeredBy: [...(answered.get(c) ?? [])].sort(byNodeId),
  }));
}

/** Merges a newer interval's vote traffic into what was seen (per candidate, the union of both). */
export function mergeVoteTraffic(seen: readonly VoteAsk[], next: readonly VoteAsk[]): VoteAsk[] {
  const out = new Map(seen.map((v) => [v.candidate, v]));
  for (const v of next) {
    const old = out.get(v.candidate);
    out.set(
      v.candidate,
      old
        ? {
            candidate: v.candidate,
            asked: [...new Set([...old.asked, ...v.asked])].sort(byNodeId),
            answeredBy: [...new Set([...old.answeredBy, ...v.answeredBy])].sort(byNodeId),
          }
        : v,
    );
  }
  return [...out.values()].sort((a, b) => byNodeId(a.candidate, b.candidate));
}

/** Node ids listed in a vote line at most (the rest counted). */
export const voteNamesShownMax = 12;

/** A candidate's vote traffic in words: `n5 asked 4 nodes; answers from n1, n2 (2)`. */
export function voteAskText(v: VoteAsk): string {
  const names =
    v.answeredBy.length > voteNamesShownMax
      ? `${v.answeredBy.slice(0, voteNamesShownMax).join(', ')} and ${v.answeredBy.length - voteNamesShownMax} more`
      : v.answeredBy.join(', ');
  const answers = v.answeredBy.length === 0 ? 'no answer yet' : `answers from ${names} (${v.answeredBy.length})`;
  return `${v.candidate} asked ${v.asked.length} node${v.asked.length === 1 ? '' : 's'} for votes; ${answers}`;
}

/**
 * One collator for every comparison: localeCompare with a locale and options builds one per call
 * (a 64-node election's vote lists sorted ten times a second took tens of ms per second).
 */
const nodeIdCollator = new Intl.Collator('en', { numeric: true });

/** Ids remembered by nodeNumber at most (the server's ids are n1, n2, ...: a few hundred at most). */
const nodeNumbersMax = 4_096;
const nodeNumbers = new Map<string, number>();

/** The number of an id of the form `n<digits>` (no leading zero), else -1; remembered per id. */
function nodeNumber(id: string): number {
  let k = nodeNumbers.get(id);
  if (k === undefined) {
    const m = /^n([1-9]\d{0,8})$/.exec(id);
    k = m ? Number(m[1]) : -1;
    if (nodeNumbers.size < nodeNumbersMax) nodeNumbers.set(id, k);
  }
  return k;
}

/**
 * Node ids in their natural order (n2 before n10): as `a.localeCompare(b, 'en', { numeric: true })`.
 * Two ids `n<digits>` are compared by number, as the collator would, without it (a 64-node election's
 * vote lists are sorted ten times a second: the collator took about 30 ms a second); others by it.
 */
export function byNodeId(a: string, b: string): number {
  const x = nodeNumber(a);
  const y = nodeNumber(b);
  if (x >= 0 && y >= 0) return x - y;
  return nodeIdCollator.compare(a, b);
}

// ---- clock skew ----

/** A skew as drawn on its node: `+500 ms`, `-20 ms`; '' for none. */
export function skewBadge(ms: number | undefined): string {
  if (ms === undefined || ms === 0) return '';
  return `${ms > 0 ? '+' : ''}${ms} ms`;
}

/** A fault of the history (the subset read here). */
export interface SkewFault {
  kind: string;
  node?: string;
  value?: number;
  end_ms?: number | null;
}

/**
 * Each node's current skew: the open clock_skew faults of the history, overridden by the
 * `clock_skew_set` events seen since (which arrive before the history is fetched again).
 */
export function currentSkews(
  faults: readonly SkewFault[],
  seen: ReadonlyMap<string, number>,
): ReadonlyMap<string, number> {
  const out = new Map<string, number>();
  for (const f of faults) {
    if (f.kind === 'clock_skew' && f.node !== undefined && (f.end_ms === null || f.end_ms === undefined))
      out.set(f.node, f.value ?? 0);
  }
  for (const [node, ms] of seen) out.set(node, ms);
  for (const [node, ms] of out) if (ms === 0) out.delete(node);
  return out;
}

/** The skew a `clock_skew_set` frame sets, or null when the frame is another one or malformed. */
export function skewOfFrame(f: {
  type: string;
  node_id?: string;
  data?: Record<string, unknown>;
}): { node: string; ms: number } | null {
  if (f.type !== 'clock_skew_set' || f.node_id === undefined) return null;
  const ms = f.data?.['skew_ms'];
  return typeof ms === 'number' && Number.isFinite(ms) ? { node: f.node_id, ms } : null;
}

/** The clock skew input's bound (ms): the server's own (checked here so the user reads it at once). */
export const skewInputMaxMs = clockSkewMsMax;

/** The skew typed in the input, or why it is not one. */
export function parseSkew(text: string): { ok: true; ms: number } | { ok: false; error: string } {
  const t = text.trim();
  if (!/^[+-]?\d+$/.test(t)) return { ok: false, error: 'clock skew must be a whole number of milliseconds' };
  const ms = Number(t);
  if (Math.abs(ms) > skewInputMaxMs) return { ok: false, error: `clock skew must be within ±${skewInputMaxMs} ms` };
  return { ok: true, ms };
}

// ---- leaderless: the ring ----

/** Tokens per member, as the server's ring (dynamo/ring.ts vnodesPerNode). */
export const vnodesPerNode = 128;
/** Vnode ticks drawn at most (the ring of 64 nodes has 8192 tokens; a sample per node is drawn). */
export const ringTicksMax = 1024;

const md5Shifts = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
const md5K = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) >>> 0);

/** MD5 of a string's UTF-8 bytes, as 16 bytes (RFC 1321). */
export function md5(s: string): Uint8Array {
  const msg = new TextEncoder().encode(s);
  const len = ((msg.length + 8) >>> 6) * 64 + 64;
  const buf = new Uint8Array(len);
  buf.set(msg);
  buf[msg.length] = 0x80;
  const view = new DataView(buf.buffer);
  view.setUint32(len - 8, (msg.length * 8) >>> 0, true);
  view.setUint32(len - 4, Math.floor((msg.length * 8) / 2 ** 32), true);
  let a0 = 0x67452301;
  let b0 = 0xefcdab89;
  let c0 = 0x98badcfe;
  let d0 = 0x10325476;
  const w = new Array<number>(16);
  for (let off = 0; off < len; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(off + i * 4, true);
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number;
      let g: number;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const s = md5Shifts[(i >>> 4) * 4 + (i % 4)] as number;
      const x = (a + f + (md5K[i] as number) + (w[g] as number)) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((x << s) | (x >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  const out = new Uint8Array(16);
  const ov = new DataView(out.buffer);
  ov.setUint32(0, a0 >>> 0, true);
  ov.setUint32(4, b0 >>> 0, true);
  ov.setUint32(8, c0 >>> 0, true);
  ov.setUint32(12, d0 >>> 0, true);
  return out;
}

/** Where a string sits on the ring: the first 32 bits of its MD5, big-endian (as the server). */
export function ringPosition(s: string): number {
  const h = md5(s);
  return (((h[0] as number) << 24) | ((h[1] as number) << 16) | ((h[2] as number) << 8) | (h[3] as number)) >>> 0;
}

export interface RingToken {
  readonly pos: number;
  readonly node: string;
}

/** Every member's tokens, in ring order (ties by node id, as the server breaks them). */
export function ringTokens(members: readonly string[], vnodes = vnodesPerNode): RingToken[] {
  const sorted = [...new Set(members)].sort();
  const out: RingToken[] = [];
  for (const node of sorted)
    for (let i = 0; i < vnodes; i++) out.push({ pos: ringPosition(`${node}#vnode${i}`), node });
  out.sort((a, b) => a.pos - b.pos || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return out;
}

/** The tokens drawn: every member's first ones, at most ringTicksMax in all. */
export function drawnTokens(members: readonly string[]): RingToken[] {
  const n = new Set(members).size;
  const per = n === 0 ? 0 : Math.max(1, Math.min(vnodesPerNode, Math.floor(ringTicksMax / n)));
  return ringTokens(members, per);
}

/** A ring position as an angle in radians, clockwise from the top. */
export const ringAngle = (pos: number): number => (pos / 2 ** 32) * 2 * Math.PI;

/** A node's colour on the ring: hues spread by its place among the members. */
export function ownerColor(index: number, count: number): string {
  const hue = Math.round((index * 360) / Math.max(count, 1) + 200) % 360;
  return `hsl(${hue} 70% 38%)`;
}

export interface SloppyQuorum {
  /** The key's N preferred replicas. */
  readonly preferred: readonly string[];
  /** A preferred replica that is down or suspected, and the stand-in that takes its writes (with a hint). */
  readonly standIns: ReadonlyArray<{ readonly for: string; readonly by: string }>;
  /** Preferred replicas that are down and have no stand-in left. */
  readonly uncovered: readonly string[];
}

/**
 * Who takes a key's writes: its walk of the ring (every member, clockwise from the key), the N
 * first preferred; each preferred node that is unavailable is stood in for by the next available
 * node past the first N (Dynamo §4.6), when the cluster uses a sloppy quorum.
 */
export function sloppyQuorum(
  walk: readonly string[],
  n: number,
  unavailable: ReadonlySet<string>,
  sloppy: boolean,
): SloppyQuorum {
  const preferred = walk.slice(0, n);
  const spares = walk.slice(n).filter((x) => !unavailable.has(x));
  const standIns: Array<{ for: string; by: string }> = [];
  const uncovered: string[] = [];
  for (const p of preferred) {
    if (!unavailable.has(p)) continue;
    const by = sloppy ? spares.shift() : undefined;
    if (by === undefined) uncovered.push(p);
    else standIns.push({ for: p, by });
  }
  return { preferred, standIns, uncovered };
}

export interface Suspicion {
  readonly threshold: number;
  readonly nodes: Readonly<Record<string, { phi: number; suspected: boolean }>>;
}

/** GET .../suspicion's body, checked (null when it is not one). */
export function parseSuspicion(body: unknown): Suspicion | null {
  if (body === null || typeof body !== 'object') return null;
  const b = body as { threshold?: unknown; nodes?: unknown };
  if (typeof b.threshold !== 'number' || b.nodes === null || typeof b.nodes !== 'object') return null;
  const nodes: Record<string, { phi: number; suspected: boolean }> = {};
  for (const [id, v] of Object.entries(b.nodes as Record<string, unknown>)) {
    if (v === null || typeof v !== 'object') continue;
    const phi = (v as { phi?: unknown }).phi;
    nodes[id] = {
      phi: typeof phi === 'number' && Number.isFinite(phi) ? phi : Number.POSITIVE_INFINITY,
      suspected: (v as { suspected?: unknown }).suspected === true,
    };
  }
  return { threshold: b.threshold, nodes };
}

/** Phi as shown: one decimal, ∞ when the detector has given up on the node. */
export const phiText = (phi: number): string => (Number.isFinite(phi) ? phi.toFixed(1) : '∞');

// ---- multi-leader ----

/** A vector clock as the page writes it: the nonzero entries by node id, `n1:3 n2:1`. */
export function vclockText(v: Readonly<Record<string, number>> | undefined): string {
  if (!v) return '';
  return Object.keys(v)
    .filter((k) => (v[k] ?? 0) !== 0)
    .sort(byNodeId)
    .map((k) => `${k}:${v[k]}`)
    .join(' ');
}

export interface ConflictWire {
  node_id: string;
  key: string;
  local_value: string;
  remote_value: string;
}

/** GET .../conflicts' list, checked. */
export function parseConflicts(body: unknown): ConflictWire[] {
  const list = body !== null && typeof body === 'object' ? (body as { conflicts?: unknown }).conflicts : undefined;
  if (!Array.isArray(list)) return [];
  return list.filter(
    (c): c is ConflictWire =>
      c !== null &&
      typeof c === 'object' &&
      typeof c.node_id === 'string' &&
      typeof c.key === 'string' &&
      typeof c.local_value === 'string' &&
      typeof c.remote_value === 'string',
  );
}

export interface KeyConflict {
  readonly key: string;
  /** The values in conflict, each with a node holding it locally (where a resolution keeps it as `local`). */
  readonly choices: ReadonlyArray<{ readonly value: string; readonly node: string }>;
  /** Nodes that see the conflict. */
  readonly nodes: readonly string[];
}

/** Conflicts by key: which values compete and where a choice of each is made. */
export function conflictsByKey(list: readonly ConflictWire[]): KeyConflict[] {
  const keys = new Map<string, { choices: Map<string, string>; nodes: string[] }>();
  for (const c of list) {
    let k = keys.get(c.key);
    if (!k) {
      k = { choices: new Map(), nodes: [] };
      keys.set(c.key, k);
    }
    if (!k.nodes.includes(c.node_id)) k.nodes.push(c.node_id);
    if (!k.choices.has(c.local_value)) k.choices.set(c.local_value, c.node_id);
  }
  // Each value is offered where it is some node's local one (every side of a conflict sees it).
  return [...keys.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([key, k]) => ({
      key,
      choices: [...k.choices.entries()].map(([value, node]) => ({ value, node })),
      nodes: k.nodes.sort(byNodeId),
    }));
}

/** Keys shown in the vector clock table at most. */
export const vclockKeysShownMax = 20;

/** Per key, each node's vector clock for it, from the nodes' stores; the first vclockKeysShownMax keys. */
export function vclockRows(
  stores: ReadonlyMap<string, Readonly<Record<string, { vclock?: Record<string, number> }>>>,
): Array<{ key: string; clocks: Record<string, string> }> {
  const keys = new Set<string>();
  for (const s of stores.values()) for (const k of Object.keys(s)) keys.add(k);
  return [...keys]
    .sort()
    .slice(0, vclockKeysShownMax)
    .map((key) => {
      const clocks: Record<string, string> = {};
      for (const [node, s] of stores) {
        const e = s[key];
        if (e) clocks[node] = vclockText(e.vclock);
      }
      return { key, clocks };
    });
}
