/**
 * Majority arithmetic over a voter list (Raft §5.2-§5.4, dissertation §6.2 and §6.4): the quorum
 * size, the highest value a majority has reached (commit index, confirmed ReadIndex round), and
 * whether a set of voters is a majority. Pure functions; who the voters are is the core's business.
 */
import type { NodeId } from '../../core.js';

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/**
 * The highest value that a majority of `voters` has reached (each voter's value from `valueOf`):
 * the match index a majority stores (§5.3 commit), or the ReadIndex round a majority acknowledged
 * (§6.4). 0 for no voters.
 */
export function majorityValue(voters: readonly NodeId[], valueOf: (voter: NodeId) => number): number {
  const values = voters.map(valueOf);
  values.sort((a, b) => b - a);
  return values[quorumSize(voters.length) - 1] ?? 0;
}

/** True when the voters that satisfy `counts` are a majority (votes won, CheckQuorum activity). */
export function isMajority(voters: readonly NodeId[], counts: (voter: NodeId) => boolean): boolean {
  let n = 0;
  for (const v of voters) if (counts(v)) n++;
  return n >= quorumSize(voters.length);
}
