/**
 * Quorum arithmetic for the checkers, as pure functions: whether a cluster's read and write
 * quorums must intersect (the quorum-overlap invariant), and the quorum plan of the safe leaderless
 * add-node (widen, join, narrow) with the overlap of every pair of configurations that can be live
 * at once. It sends nothing and knows no cluster: routes.ts drives the phases.
 */
import type { ClusterConfig } from '../core.js';
import { unreachable } from '../../util/assert.js';

/** [N, W, R] as the ReconfigureReport shows them. */
export type Quorum = readonly [n: number, w: number, r: number];

export interface QuorumOverlapCheck {
  /** True when the rule holds, or when no quorum rule applies to the strategy. */
  ok: boolean;
  /** Whether reads and writes of this strategy go through quorums that must intersect. */
  applies: boolean;
  detail: string;
}

/**
 * The quorum-overlap invariant per strategy.
 * - leaderless: a read of R replicas meets every write acked by W of the same N when W + R > N
 *   (Gifford's weighted voting; Dynamo §4.5). Sloppy quorums weaken it while stand-ins hold hints.
 * - raft: two majorities of the same configuration always intersect (Raft §5.2, §6: single-server
 *   changes keep old and new majorities overlapping).
 * - single_leader and multi_leader: reads are answered by one node, not a read quorum; the rule
 *   does not apply (sync single_leader does make every follower current before it acknowledges).
 */
export function quorumOverlap(config: ClusterConfig, nodeCount: number): QuorumOverlapCheck {
  switch (config.strategy) {
    case 'leaderless': {
      const { quorum_n: n, quorum_w: w, quorum_r: r } = config;
      const ok = w + r > n;
      const regional =
        config.regions > 1 && config.consistency_level !== 'quorum'
          ? ` With consistency_level ${config.consistency_level} each region's quorums are ` +
            'ceil(W·m/N) and ceil(R·m/N) ' +
            'of its m replicas, which still overlap within the region.'
          : '';
      const sloppy = config.sloppy_quorum
        ? ' Sloppy quorums are on: while a replica is down its writes are held by stand-ins, and ' +
          'a read may miss them ' +
          'until hinted handoff delivers them.'
        : '';
      return {
        ok,
        applies: true,
        detail:
          `leaderless N=${n} W=${w} R=${r}: W + R ${ok ? '>' : '<='} N, so read and write quorums ` +
          `${ok ? 'always' : 'need not'} overlap.${regional}${sloppy}`,
      };
    }
    case 'raft': {
      const majority = Math.floor(nodeCount / 2) + 1;
      return {
        ok: true,
        applies: true,
        detail:
          `raft with ${nodeCount} voters: commit and election quorums are majorities of ` +
          `${majority}, and 2·${majority} ` +
          `> ${nodeCount}, so any two overlap.`,
      };
    }
    case 'single_leader': {
      const w =
        config.replication_mode === 'sync'
          ? nodeCount
          : config.replication_mode === 'semi_sync'
            ? Math.min(2, nodeCount)
            : 1;
      return {
        ok: true,
        applies: false,
        detail:
          `single_leader ${config.replication_mode}: a write is acknowledged after ${w} of ${nodeCount} copies and a ` +
          `read asks one node, so only reads at the leader${w === nodeCount ? ' or at any follower' : ''} are ` +
          'guaranteed current; no read quorum is involved.',
      };
    }
    case 'multi_leader':
      return {
        ok: true,
        applies: false,
        detail:
          'multi_leader: every node acknowledges its own writes and answers reads locally (W = R = 1); replicas ' +
          'converge by replication and anti-entropy, not by quorum overlap.',
      };
    default:
      return unreachable(config.strategy);
  }
}

/** A quorum whose own reads and writes overlap, among `slots` replicas actually placed (N capped by the members). */
export function selfOverlaps(q: Quorum, members: number): boolean {
  const slots = Math.min(q[0], members);
  return q[1] <= slots && q[2] <= slots && q[1] + q[2] > slots;
}

/**
 * Whether every write quorum of one configuration meets every read quorum of the other, when
 * both can be live at once. Write and read sets lie within the union of the two preference
 * lists; on one ring of `members` nodes that is the first max(N, N') nodes of the key's walk, and after a node joins
 * (the walk gains one member somewhere) at most one node more. Counting (|A| + |B| > |U| forces
 * A ∩ B ≠ ∅) gives W + R' > |U| and W' + R > |U|.
 */
export function transitionOverlaps(from: Quorum, to: Quorum, members: number, joined: boolean): boolean {
  const union = Math.min(Math.max(from[0], to[0]), members) + (joined ? 1 : 0);
  return from[1] + to[2] > union && to[1] + from[2] > union;
}

export interface AddNodePlan {
  old: Quorum;
  /** Phase 1, on the old ring: N+1 replicas and one more ack and one more reply. */
  widen: Quorum;
  /** Phase 2, the ring with the new node: the same widened quorum on N+1 replicas. */
  joint: Quorum;
  /** Phase 4, after streaming: N+1 replicas, one of W or R back down. */
  final: Quorum;
  /** Every configuration overlaps itself and every neighbour it can be live with. */
  overlapHeld: boolean;
  checks: string[];
}

/**
 * The safe add-node quorum plan (the new node gets N+1 replicas' worth of room without a gap):
 * widen to (N+1, W+1, R+1) on the old ring (capped at its members), join the node under that same
 * quorum, stream, then settle at N' = N+1 with the smaller of W and R raised by one (R on a tie),
 * which keeps the margin W + R - N of the old quorum. Phases are separated by the request timeout,
 * so only neighbouring configurations are ever live together.
 */
export function addNodePlan(old: Quorum, membersBefore: number): AddNodePlan {
  const [n, w, r] = old;
  const widen: Quorum = [n + 1, Math.min(w + 1, membersBefore), Math.min(r + 1, membersBefore)];
  const joint: Quorum = [n + 1, w + 1, r + 1];
  const final: Quorum = w < r ? [n + 1, w + 1, r] : [n + 1, w, r + 1];
  const checks: string[] = [];
  const self = (name: string, q: Quorum, members: number): boolean => {
    const ok = selfOverlaps(q, members);
    checks.push(`${name} N=${q[0]} W=${q[1]} R=${q[2]} on ${members} members: ${ok ? 'overlaps' : 'does NOT overlap'}`);
    return ok;
  };
  const across = (a: string, qa: Quorum, b: string, qb: Quorum, members: number, joined: boolean): boolean => {
    const ok = transitionOverlaps(qa, qb, members, joined);
    checks.push(`${a} -> ${b}${joined ? ' (ring gains the node)' : ''}: ${ok ? 'overlaps' : 'does NOT overlap'}`);
    return ok;
  };
  const results = [
    self('old', old, membersBefore),
    self('widen', widen, membersBefore),
    across('old', old, 'widen', widen, membersBefore, false),
    self('joint', joint, membersBefore + 1),
    across('widen', widen, 'joint', joint, membersBefore, true),
    self('final', final, membersBefore + 1),
    across('joint', joint, 'final', final, membersBefore + 1, false),
  ];
  return { old, widen, joint, final, overlapHeld: results.every(Boolean), checks };
}
