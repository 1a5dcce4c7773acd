/**
 * The leaderless core's `custom` controls (POST .../nodes/{id}/control and the checkers): each one's
 * arguments decoded from untrusted JSON into a typed value (a bad_request ControlResult otherwise),
 * then answered through the narrow ControlHost the core implements. No state lives here; what a
 * control changes is the core's to change.
 */
import type { ControlResult, NodeId, Version } from '../../core.js';
import { isObject } from '../../dynamo/version.js';
import { leaderlessPlacementControlNDefault } from '../../limits.js';

export type LeaderlessControlName =
  | 'suspicion'
  | 'placement'
  | 'corrupt'
  | 'anti_entropy'
  | 'digest'
  | 'set_quorum'
  | 'quorum'
  | 'hints';

/** N, W and R as set_quorum takes them. */
export interface QuorumSizes {
  n: number;
  w: number;
  r: number;
}

export interface CorruptArgs {
  key: string;
  value: string;
  /** An outside HLC timestamp for the bad copy; when absent the core picks one older than any. */
  timestamp?: unknown;
}

/** What the controls need from the core: views, and the few changes the controls make. */
export interface ControlHost {
  suspicion(): { threshold: number; nodes: Record<NodeId, { phi: number; suspected: boolean }> };
  /** The key's first n replicas on the current ring (any n, not the configured N). */
  placementFor(key: string, n: number): NodeId[];
  /** Stores a bad copy; a string is a bad_request (the timestamp is out of bounds). */
  corrupt(args: CorruptArgs): { entry: Version } | string;
  /** Starts an exchange with every peer not suspected; returns them. */
  antiEntropyWithAll(): NodeId[];
  storeDigest(): { root: string; keys: number };
  keyCount(): number;
  /** Applies new N/W/R (already checked); returns the previous N. */
  setQuorum(sizes: QuorumSizes): number;
  quorum(): QuorumSizes;
  hintKeysByOwner(): Record<NodeId, string[]>;
}

function isPositiveInteger(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x) && x >= 1;
}

function badRequest(error: string): ControlResult {
  return { ok: false, code: 'bad_request', error };
}

/**
 * set_quorum's arguments: positive integers with W, R ≤ N and W + R > N (a quorum that does not
 * overlap itself is refused; sequencing nodes so quorums in use at once overlap is the caller's job,
 * checkers/quorum.ts).
 */
export function decodeSetQuorum(args: unknown): QuorumSizes | string {
  const a = isObject(args) ? args : {};
  const { n, w, r } = a;
  if (!isPositiveInteger(n) || !isPositiveInteger(w) || !isPositiveInteger(r)) {
    return 'set_quorum needs {n, w, r}: positive integers';
  }
  if (w > n || r > n) return `set_quorum: w and r must be at most n (${n})`;
  if (w + r <= n) return `set_quorum: w + r must be greater than n (W + R > N), got ${w} + ${r} <= ${n}`;
  return { n, w, r };
}

/** placement's arguments: a key and N (default 3). */
export function decodePlacement(args: unknown): { key: string; n: number } | string {
  const a = isObject(args) ? args : {};
  const key = a.key;
  const n = a.n ?? leaderlessPlacementControlNDefault;
  if (typeof key !== 'string') return 'placement needs a key (string)';
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) return 'placement n must be a positive integer';
  return { key, n };
}

/** corrupt's arguments: key and value strings, an optional timestamp (its bounds are the core's). */
export function decodeCorrupt(args: unknown): CorruptArgs | string {
  if (!isObject(args) || typeof args.key !== 'string' || typeof args.value !== 'string') {
    return 'corrupt needs {key: string, value: string, timestamp?: number}';
  }
  return args.timestamp === undefined
    ? { key: args.key, value: args.value }
    : { key: args.key, value: args.value, timestamp: args.timestamp };
}

/** Decodes and answers one custom control; unknown names are `unsupported`. */
export function answerControl(host: ControlHost, name: string, args: unknown): ControlResult {
  switch (name as LeaderlessControlName) {
    case 'suspicion':
      return { ok: true, data: host.suspicion() };
    case 'placement': {
      const p = decodePlacement(args);
      if (typeof p === 'string') return badRequest(p);
      return { ok: true, data: { key: p.key, preference_list: host.placementFor(p.key, p.n) } };
    }
    case 'corrupt': {
      const c = decodeCorrupt(args);
      if (typeof c === 'string') return badRequest(c);
      const done = host.corrupt(c);
      if (typeof done === 'string') return badRequest(done);
      return { ok: true, data: { key: c.key, entry: done.entry } };
    }
    case 'anti_entropy': {
      const peers = host.antiEntropyWithAll();
      return { ok: true, data: { peers, keys: host.keyCount() } };
    }
    case 'digest':
      return { ok: true, data: host.storeDigest() };
    case 'set_quorum': {
      const q = decodeSetQuorum(args);
      if (typeof q === 'string') return badRequest(q);
      const previousN = host.setQuorum(q);
      return { ok: true, data: { n: q.n, w: q.w, r: q.r, previous_n: previousN } };
    }
    case 'quorum':
      return { ok: true, data: host.quorum() };
    case 'hints':
      return { ok: true, data: host.hintKeysByOwner() };
    default:
      return { ok: false, code: 'unsupported', error: `unknown leaderless command: ${name}` };
  }
}
