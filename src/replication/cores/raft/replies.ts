/**
 * The client replies raft gives when it cannot answer with a result: not the leader (naming it when
 * known), a proposal replaced by another entry at its index (definite), and an outcome unknown
 * (indeterminate: the entry may still commit). Values only; when to send which is the core's call.
 */
import type { ClientReply, NodeId } from '../../core.js';

export function notLeaderError(leaderId: NodeId | '', selfId: NodeId): string {
  return leaderId !== '' && leaderId !== selfId ? `not leader; leader is ${leaderId}` : 'no leader elected yet';
}

/** not_leader when another node is known to lead, else no_leader. */
export function notLeaderCode(leaderId: NodeId | '', selfId: NodeId): 'not_leader' | 'no_leader' {
  return leaderId !== '' && leaderId !== selfId ? 'not_leader' : 'no_leader';
}

export function notLeaderReply(id: number, leaderId: NodeId | '', selfId: NodeId): ClientReply {
  if (leaderId !== '' && leaderId !== selfId) {
    return { id, ok: false, code: 'not_leader', error: `not leader; leader is ${leaderId}`, leader_id: leaderId };
  }
  return { id, ok: false, code: 'no_leader', error: 'no leader elected yet' };
}

/** (index, term) names one entry: another entry applied at a proposal's index means it never will be. */
export function replacedReply(id: number, leaderId: NodeId | '', selfId: NodeId): ClientReply {
  const base = { id, ok: false as const };
  const error = 'leadership changed before the entry committed; it was discarded, retry';
  if (leaderId !== '' && leaderId !== selfId) {
    return { ...base, code: 'not_leader', error: `${error} (leader is ${leaderId})`, leader_id: leaderId };
  }
  return { ...base, code: 'no_leader', error };
}

export function indeterminateReply(id: number, why: string): ClientReply {
  return { id, ok: false, code: 'timeout', error: `${why}; the write may still be applied`, indeterminate: true };
}
