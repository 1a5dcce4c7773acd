/**
 * Raft's elections, voter side and candidate side (§5.2, §5.4.1, with the dissertation's PreVote,
 * §9.6, and leader lease, §4.2.3): the vote request a candidate sends, granting a vote, counting
 * the answers. Free functions over the node's state (etcd's stepCandidate); they do not apply the
 * term rules (raft.ts's stepTerm did) nor change roles themselves (they ask raft.ts's become*).
 */
import type { NodeId } from '../../core.js';
import { invariant } from '../../../util/assert.js';
import { isMajority } from './quorum.js';
import type { Raft } from './state.js';
import type { VoteRequest, VoteResponse } from './types.js';

/**
 * Dissertation §4.2.3 / §9.6: a server that heard from a current leader within the minimum
 * election timeout ignores vote requests, so a rejoining or removed server cannot disrupt a
 * healthy cluster. A leader (kept honest by CheckQuorum) is always in its lease.
 */
export function inLease(r: Raft, now: number): boolean {
  if (r.role === 'leader') return true;
  return r.role === 'follower' && r.leaderId !== '' && now - r.lastLeaderContactAt < r.timings.electionTimeoutMsMin;
}

/** §5.4.1: the candidate's log is at least as up-to-date as ours. */
export function logUpToDate(r: Raft, lastLogIndex: number, lastLogTerm: number): boolean {
  const myTerm = r.log.lastTerm;
  return lastLogTerm > myTerm || (lastLogTerm === myTerm && lastLogIndex >= r.log.lastIndex);
}

/** A majority of the voters in effect is among `votes`. */
export function hasQuorum(r: Raft, votes: ReadonlySet<NodeId>): boolean {
  return isMajority(r.voters, (v) => votes.has(v));
}

/** Asks every other voter for its vote in `term` (§5.2), or for a pre-vote (§9.6), in voter order. */
export function requestVotes(r: Raft, term: number, preVote: boolean): void {
  const req: VoteRequest = {
    kind: 'vote_req',
    term,
    preVote,
    lastLogIndex: r.log.lastIndex,
    lastLogTerm: r.log.lastTerm,
  };
  for (const v of r.voters) if (v !== r.id) r.send(v, req);
}

/** RequestVote receiver (§5.2, §5.4.1) and PreVote (§9.6); stepTerm has applied the term rules. */
export function onVoteRequest(r: Raft, from: NodeId, m: VoteRequest, now: number): void {
  if (m.preVote) {
    invariant(m.term > r.term, 'stepTerm passes only pre-votes for a term ahead of ours');
    // A pre-vote changes nothing here: granted when the candidate's log is up to date (§9.6).
    const granted = logUpToDate(r, m.lastLogIndex, m.lastLogTerm);
    const resp: VoteResponse = { kind: 'vote_resp', term: granted ? m.term : r.term, preVote: true, granted };
    r.send(from, resp);
    return;
  }
  invariant(m.term === r.term, 'stepTerm passes only vote requests of our term');
  // §5.2: one vote per term, first come first served (a repeated request gets the same answer).
  const canVote = r.votedFor === null || r.votedFor === from;
  const granted = canVote && logUpToDate(r, m.lastLogIndex, m.lastLogTerm);
  if (granted) {
    r.votedFor = from;
    r.resetElectionTimer(now);
  }
  const resp: VoteResponse = { kind: 'vote_resp', term: r.term, preVote: false, granted };
  r.send(from, resp);
}

/** Counts a vote (or a pre-vote) of our round: a majority moves the candidate on. */
export function onVoteResponse(r: Raft, from: NodeId, m: VoteResponse, now: number): void {
  if (m.preVote) {
    invariant(m.granted, 'stepTerm passes only granted pre-votes');
    invariant(r.preCandidate, 'stepTerm passes pre-votes only to a pre-candidate');
    r.votes.add(from);
    if (hasQuorum(r, r.votes)) r.becomeCandidate(now);
    return;
  }
  invariant(m.term === r.term, 'stepTerm passes only vote answers of our term');
  if (r.role !== 'candidate' || r.preCandidate || !m.granted) return;
  r.votes.add(from);
  if (hasQuorum(r, r.votes)) r.becomeLeader(now);
}
