/**
 * Single-server membership changes (dissertation §4.1) decided as a value: given the leader's
 * configuration and commit state, what a request to add or remove one node becomes. One change at
 * a time; a new leader first commits an entry of its term (Ongaro's 2015 correction); never below
 * one member; a request for the change already made (committed) or already pending is answered by
 * that change, so repeating a request whose answer was lost is safe. It changes nothing itself.
 */
import type { NodeId } from '../../core.js';

export interface MembershipView {
  /** The latest configuration (in effect since appended). */
  voters: readonly NodeId[];
  /** The configuration before the latest config entry (equal to voters when it is committed). */
  votersBefore: readonly NodeId[];
  /** Index of the latest config entry (or of the raftSnapshot holding it). */
  configIndex: number;
  commitIndex: number;
  /** Index of the leader's no-op of its term. */
  termStartIndex: number;
}

export type MembershipPlan =
  | { kind: 'refuse'; error: string }
  /** The uncommitted config entry is this very change: wait for it. */
  | { kind: 'wait' }
  /** The committed configuration already is what was asked. */
  | { kind: 'already' }
  | { kind: 'append'; voters: NodeId[] };

export function planMembershipChange(view: MembershipView, change: 'add' | 'remove', nodeId: NodeId): MembershipPlan {
  const adding = change === 'add';
  if (view.configIndex > view.commitIndex) {
    const same = view.votersBefore.includes(nodeId) !== adding && view.voters.includes(nodeId) === adding;
    if (same) return { kind: 'wait' };
    return {
      kind: 'refuse',
      error:
        `another membership change is in progress (config entry ${view.configIndex} not yet committed); ` +
        'retry once it commits',
    };
  }
  if (view.commitIndex < view.termStartIndex) {
    return { kind: 'refuse', error: 'the leader has not committed an entry of its term yet; retry shortly' };
  }
  if (view.voters.includes(nodeId) === adding) return { kind: 'already' };
  if (adding) return { kind: 'append', voters: [...view.voters, nodeId] };
  if (view.voters.length === 1) return { kind: 'refuse', error: 'cannot remove the last member' };
  return { kind: 'append', voters: view.voters.filter((v) => v !== nodeId) };
}
