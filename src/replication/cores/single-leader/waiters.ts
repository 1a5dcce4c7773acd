/**
 * Writes a single-leader leader holds until its followers confirm them: sync needs every follower's
 * ack, semi_sync one (none when there is no follower), and past its deadline a write is answered
 * `timeout`, indeterminate (it is applied on the leader, but may or may not survive a failover).
 * A pure rule over the followers' match indexes; the core owns the list and sends the replies.
 */
import type { ClientReply, NodeId, ReplicationMode } from '../../core.js';

/** A sync/semi_sync write applied on the leader, waiting for follower acks (or its deadline). */
export interface Waiter {
  requestId: number;
  index: number;
  deadline: number;
  mode: ReplicationMode;
  /** The success reply, sent once the write is confirmed. */
  reply: ClientReply;
}

/**
 * Which waiting writes the followers' match indexes confirm, which timed out at `now`, and which
 * still wait (`keep`, in order). Replies come in the waiters' order.
 */
export function settleWaiters(
  waiters: readonly Waiter[],
  matches: readonly number[],
  now: number,
  leader: NodeId,
  requestTimeoutMs: number,
): { replies: ClientReply[]; keep: Waiter[] } {
  const replies: ClientReply[] = [];
  const keep: Waiter[] = [];
  for (const w of waiters) {
    let acked = 0;
    for (const m of matches) if (m >= w.index) acked++;
    const needed = w.mode === 'sync' ? matches.length : Math.min(1, matches.length);
    if (acked >= needed) {
      replies.push(w.reply);
    } else if (now >= w.deadline) {
      const what = w.mode === 'sync' ? `all ${matches.length} followers` : 'any follower';
      replies.push({
        id: w.requestId,
        ok: false,
        code: 'timeout',
        indeterminate: true,
        error:
          `${w.mode} replication timed out after ${requestTimeoutMs} ms: the write is applied on ` +
          `leader ${leader} (index ${w.index}) but was not confirmed by ${what} (${acked}/${needed} acks); ` +
          'its outcome is indeterminate',
      });
    } else keep.push(w);
  }
  return { replies, keep };
}
