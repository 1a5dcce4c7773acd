/**
 * What raft does with a client request or a control command: writes, deletes and batches become
 * proposals (one log entry each, answered after commit+apply), reads start a ReadIndex round
 * (dissertation §6.4), add/remove_server a single-server membership change (§4.1), and timeouts
 * answer what waited too long. Free functions over the node's state; they only start things on a
 * leader (a follower answers not_leader) and leave replication and commit to leader.ts.
 */
import {
  type ClientReply,
  type ClientRequest,
  type ControlCommand,
  type ControlResult,
  type Version,
} from '../../core.js';
import { unreachable } from '../../../util/assert.js';
import { appendEntry, maybeCommit, resolveReads } from './leader.js';
import { planMembershipChange } from './membership.js';
import type { PendingProposal } from './proposals.js';
import { indeterminateReply, notLeaderCode, notLeaderError, notLeaderReply } from './replies.js';
import { configKey, versionOf } from './state-machine.js';
import type { Raft } from './state.js';
import type { EntryBody } from './types.js';

/** A client request: a proposal, a ReadIndex read, or a refusal of an empty batch. */
export function stepClient(r: Raft, req: ClientRequest, now: number): void {
  const op = req.op;
  switch (op.op) {
    case 'write':
      propose(r, req.id, 'write', { type: 'put', key: op.key, value: op.value }, now);
      return;
    case 'delete':
      propose(r, req.id, 'write', { type: 'delete', key: op.key }, now);
      return;
    case 'batch':
      if (op.entries.length === 0) {
        r.reply({ id: req.id, ok: false, code: 'bad_request', error: 'a batch needs at least one entry' });
        return;
      }
      propose(
        r,
        req.id,
        'write',
        { type: 'batch', entries: op.entries.map((e) => ({ key: e.key, value: e.value })) },
        now,
      );
      return;
    case 'read':
      startRead(r, req.id, op.key, now);
      return;
    default:
      unreachable(op);
  }
}

/** A control command: only clock skew and the membership changes apply to raft. */
export function stepControl(r: Raft, cmd: ControlCommand, now: number): ControlResult {
  switch (cmd.kind) {
    case 'clock_skew':
      r.clock.skewMs = cmd.ms;
      return { ok: true, data: { skew_ms: cmd.ms } };
    case 'add_server':
    case 'remove_server':
      return changeMembership(r, cmd, now);
    case 'replication_mode':
      return { ok: false, code: 'unsupported', error: 'replication_mode applies to single_leader clusters only' };
    case 'peers':
      return {
        ok: false,
        code: 'unsupported',
        error: 'raft changes membership through its log: use add_server / remove_server',
      };
    case 'set_leader':
      return {
        ok: false,
        code: 'unsupported',
        error: 'raft elects its own leader; set_leader is for single_leader clusters',
      };
    case 'custom':
      return { ok: false, code: 'unsupported', error: `unknown raft command: ${cmd.name}` };
    default:
      return unreachable(cmd);
  }
}

function propose(r: Raft, reqId: number, kind: PendingProposal['kind'], body: EntryBody, now: number): void {
  if (r.role !== 'leader') {
    r.reply(notLeaderReply(reqId, r.leaderId, r.id));
    return;
  }
  const entry = appendEntry(r, body, now);
  r.pending.add({
    reqId,
    index: entry.index,
    term: entry.term,
    deadline: now + r.timings.requestTimeoutMs,
    kind,
  });
  maybeCommit(r, now);
}

/**
 * ReadIndex (dissertation §6.4): note the commit index (at least this term's no-op), confirm
 * leadership with a heartbeat round acknowledged by a majority, then answer once applied.
 */
function startRead(r: Raft, reqId: number, key: string, now: number): void {
  if (r.role !== 'leader') {
    r.reply(notLeaderReply(reqId, r.leaderId, r.id));
    return;
  }
  r.readSeq += 1;
  r.pendingReads.add({
    reqId,
    key,
    readIndex: Math.max(r.commitIndex, r.termStartIndex),
    seq: r.readSeq,
    deadline: now + r.timings.requestTimeoutMs,
  });
  r.readBroadcast = true;
  resolveReads(r);
}

/** Single-server membership change (dissertation §4.1), one at a time, through the log. */
function changeMembership(
  r: Raft,
  cmd: Extract<ControlCommand, { kind: 'add_server' | 'remove_server' }>,
  now: number,
): ControlResult {
  if (r.role !== 'leader')
    return { ok: false, code: notLeaderCode(r.leaderId, r.id), error: notLeaderError(r.leaderId, r.id) };
  const pendingChange = r.configIndex > r.commitIndex;
  const plan = planMembershipChange(
    {
      voters: r.voters,
      votersBefore: pendingChange ? r.log.configAt(r.configIndex - 1).voters : r.voters,
      configIndex: r.configIndex,
      commitIndex: r.commitIndex,
      termStartIndex: r.termStartIndex,
    },
    cmd.kind === 'add_server' ? 'add' : 'remove',
    cmd.node_id,
  );
  if (plan.kind === 'refuse') return { ok: false, code: 'refused', error: plan.error };
  // Already made or being made: answered with (or waiting on) that configuration.
  if (plan.kind !== 'append') return changeAlreadyMade(r, cmd.reqId, now);
  const voters = plan.voters;
  const entry = appendEntry(r, { type: 'config', voters }, now);
  r.pending.add({
    reqId: cmd.reqId,
    index: entry.index,
    term: entry.term,
    deadline: now + r.timings.requestTimeoutMs,
    kind: 'control',
  });
  // The new configuration takes effect as soon as it is appended (§4.1).
  r.refreshConfig(now);
  maybeCommit(r, now);
  return { ok: true, data: { index: entry.index, term: entry.term, voters } };
}

/**
 * The latest configuration already has what was asked. Committed: answered now. Pending (its
 * entry not yet committed): the request waits on that entry like the one that appended it.
 */
function changeAlreadyMade(r: Raft, reqId: number, now: number): ControlResult {
  const index = r.configIndex;
  const term = r.log.termAt(index) ?? r.term;
  const voters = [...r.voters];
  if (index > r.commitIndex) {
    r.pending.add({ reqId, index, term, deadline: now + r.timings.requestTimeoutMs, kind: 'control' });
    return { ok: true, data: { index, term, voters, pending: true } };
  }
  const entry = r.log.entryAt(index);
  const version: Version =
    entry?.type === 'config'
      ? versionOf(entry, configKey, voters.join(','), false)
      : {
          key: configKey,
          value: voters.join(','),
          tombstone: false,
          timestamp: 0,
          node_id: r.id,
          version: index,
          vclock: {},
        };
  r.reply({ id: reqId, ok: true, result: { kind: 'entry', entry: version, node_id: r.id } });
  return { ok: true, data: { index, term, voters, already: true } };
}

/** Timeouts: proposals become indeterminate (they may still commit), reads simply fail. */
export function expireRequests(r: Raft, now: number): void {
  for (const p of r.pending.takeExpired(now)) {
    r.reply(indeterminateReply(p.reqId, `not committed within ${r.timings.requestTimeoutMs} ms`));
  }
  for (const read of r.pendingReads.takeExpired(now)) {
    const reply: ClientReply = {
      id: read.reqId,
      ok: false,
      code: 'timeout',
      error: `read not confirmed by a majority within ${r.timings.requestTimeoutMs} ms`,
    };
    r.reply(reply);
  }
}
