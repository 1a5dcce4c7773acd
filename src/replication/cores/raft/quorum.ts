/**
 * Majority arithmetic over a voter list (Raft §5.2-§5.4, dissertation §6.2 and §6.4): the quorum
 * size, the highest value a majority has reached (commit index, confirmed ReadIndex round), and
 * whether a set of voters is a majority. Pure functions; who the voters are is the core's business.
 * They run on every acknowledgement a leader takes, so they allocate nothing: values go into one
 * reused scratch array (the core is single-threaded and never re-enters these functions).
 */
import type { NodeId } from '../../core.js';

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/** Scratch space for the values being ranked; grows to the largest voter list seen. */
const scratch: number[] = [];

/**
 * The `k`-th largest of `values[0 .. count)` (k counted from 1), or 0 when there are fewer than k.
 * Sorts that prefix in place, descending (insertion sort: voter lists are a handful long).
 */
export function kthLargest(values: number[], count: number, k: number): number {
  for (let i = 1; i < count; i++) {
    const v = values[i] as number;
    let j = i - 1;
    while (j >= 0 && (values[j] as number) < v) {
      values[j + 1] = values[j] as number;
      j--;
    }
    values[j + 1] = v;
  }
  return k >= 1 && k <= count ? (values[k - 1] as number) : 0;
}

/**
 * The highest value that a majority of `voters` has reached (each voter's value from `valueOf`):
 * the match index a majority stores (§5.3 commit), or the ReadIndex round a majority acknowledged
 * (§6.4). 0 for no voters.
 */
export function majorityValue(voters: readonly NodeId[], valueOf: (voter: NodeId) => number): number {
  const n = voters.length;
  for (let i = 0; i < n; i++) scratch[i] = valueOf(voters[i] as NodeId);
  return kthLargest(scratch, n, quorumSize(n));
}

/**
 * The same over a value each voter has in `context`, without a closure per call: `valueOf` is a
 * module-level function (the leader's match index or acknowledged ReadIndex round of a voter).
 */
export function majorityValueOf<C>(
  voters: readonly NodeId[],
  context: C,
  valueOf: (context: C, voter: NodeId) => number,
): number {
  const n = voters.length;
  for (let i = 0; i < n; i++) scratch[i] = valueOf(context, voters[i] as NodeId);
  return kthLargest(scratch, n, quorumSize(n));
}

/** True when the voters that satisfy `counts` are a majority (votes won, CheckQuorum activity). */
export function isMajority(voters: readonly NodeId[], counts: (voter: NodeId) => boolean): boolean {
  let n = 0;
  for (const v of voters) if (counts(v)) n++;
  return n >= quorumSize(voters.length);
}
