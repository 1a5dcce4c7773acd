/**
 * single_leader failover's choice: of the online nodes that answered their status in time, the one
 * with the most up-to-date log. A pure rule over statuses; promoting the node (the new epoch, the
 * set_leader control, the leader_elected event) is the cluster's.
 */
import { nodeIndex } from '../../../protocol/actor.js';
import { lastEntryEpochOf, type CoreStatus, type NodeId } from '../core.js';

/** The node to promote, or undefined when none answered. */
export function failoverChoice(answered: ReadonlyArray<{ id: NodeId; status: CoreStatus }>): NodeId | undefined {
  // Most up-to-date log first: the epoch of the last entry, then its index (Raft §5.4.1's rule).
  // By last_applied alone a restarted ex-leader with orphaned entries of an old epoch won over the
  // follower holding a newer acknowledged semi_sync write (single_leader swarm, seed 1653).
  const ranked = [...answered].sort(
    (a, b) =>
      lastEntryEpochOf(b.status) - lastEntryEpochOf(a.status) ||
      b.status.last_applied - a.status.last_applied ||
      nodeIndex(a.id) - nodeIndex(b.id),
  );
  return ranked[0]?.id;
}
