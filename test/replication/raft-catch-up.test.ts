/**
 * Raft log compaction under snapshotCatchUpEntries (cores/raft/compaction.ts), one leader core driven
 * by hand: a follower that still answers but is a batch behind the compaction point is caught up by
 * AppendEntries, where the old policy ('interval', snapshotCatchUpEntries 0) sends it the whole store;
 * a follower that stopped answering is still sent a raftSnapshot; the retained tail stays bounded.
 */
import t from 'tap';
import { RaftCore, type RaftMessage } from '../../src/replication/cores/raft.js';
import {
  defaultTimings,
  emptyOutput,
  type ClusterConfig,
  type CoreTimings,
  type NodeId,
} from '../../src/replication/core.js';
import { clusterConfig } from '../../src/replication/config.js';
import { raftCatchUpUnansweredMessagesMax, snapshotCatchUpEntriesDefault } from '../../src/replication/limits.js';
import { SeededRng } from '../../src/util/rng.js';

const config: ClusterConfig = clusterConfig({ strategy: 'raft', node_count: 3 });
const three: NodeId[] = ['n1', 'n2', 'n3'];
const every = 5;

/** A leader n1 of n1..n3, elected by hand, its no-op sent (and not yet acknowledged). */
class Leader {
  readonly core: RaftCore;
  readonly term: number;
  now: number;
  private reqId = 0;

  constructor(timings: Partial<CoreTimings>) {
    this.core = new RaftCore({
      id: 'n1',
      cluster_id: 'c',
      peers: three,
      config,
      timings: { ...defaultTimings, snapshotEveryEntries: every, ...timings },
      rng: new SeededRng(1),
      now: 0,
    });
    const c = this.core;
    this.now = c.nextDeadline();
    c.onTick(this.now);
    this.drain();
    for (const p of ['n2', 'n3'])
      c.onMessage(p, { kind: 'vote_resp', term: c.inspect().term + 1, preVote: true, granted: true }, this.now);
    this.drain();
    this.term = c.inspect().term;
    for (const p of ['n2', 'n3'])
      c.onMessage(p, { kind: 'vote_resp', term: this.term, preVote: false, granted: true }, this.now);
    if (c.inspect().role !== 'leader') throw new Error('election failed');
    this.drain();
  }

  /** What the leader sends now, per peer. */
  drain(): Map<NodeId, RaftMessage[]> {
    const out = emptyOutput();
    this.core.drain(out);
    const by = new Map<NodeId, RaftMessage[]>();
    for (const m of out.messages) by.set(m.to, [...(by.get(m.to) ?? []), m.msg as RaftMessage]);
    return by;
  }

  /** `n` writes proposed in one step, sent at the drain. */
  write(n: number): Map<NodeId, RaftMessage[]> {
    for (let i = 0; i < n; i++) {
      this.reqId++;
      this.core.onClient(
        { id: this.reqId, op: { op: 'write', key: `k${this.reqId % 7}`, value: `v${this.reqId}` } },
        this.now,
      );
    }
    return this.drain();
  }

  ack(from: NodeId, matchIndex: number): void {
    const m: RaftMessage = {
      kind: 'append_resp',
      term: this.term,
      success: true,
      matchIndex,
      rejectIndex: 0,
      conflictTerm: 0,
      conflictIndex: 0,
      seq: 0,
    };
    this.core.onMessage(from, m, this.now);
  }

  /** A follower whose log ends at `last` refuses an append that follows `prevLogIndex` (it missed one). */
  reject(from: NodeId, prevLogIndex: number, last: number): void {
    const m: RaftMessage = {
      kind: 'append_resp',
      term: this.term,
      success: false,
      matchIndex: 0,
      rejectIndex: prevLogIndex,
      conflictTerm: 0,
      conflictIndex: last + 1,
      seq: 0,
    };
    this.core.onMessage(from, m, this.now);
  }

  get lastIndex(): number {
    return this.core.inspect().lastIndex;
  }

  get snapshotIndex(): number {
    return this.core.inspect().raftSnapshot.lastIncludedIndex;
  }
}

/**
 * Six batches of three writes: n2 acknowledges each at once, n3 answers every message but is always
 * one batch behind. Then n3 misses a batch and refuses the next append: the leader backs off to what
 * n3 holds and sends that. Returns what n3 is sent after its refusal.
 */
function oneBatchBehind(catchUp: number): { kinds: string[]; firstIndex: number | undefined; leader: Leader } {
  const l = new Leader({ snapshotCatchUpEntries: catchUp });
  l.ack('n2', 1);
  l.ack('n3', 1);
  let n3Match = 1;
  for (let b = 0; b < 6; b++) {
    const before = l.lastIndex;
    l.write(3);
    l.now += 1;
    l.ack('n3', n3Match);
    n3Match = before;
    l.ack('n2', l.lastIndex);
    l.drain();
  }
  const missedUpTo = l.lastIndex;
  l.write(1);
  l.now += 1;
  l.reject('n3', missedUpTo, n3Match);
  const toN3 = l.drain().get('n3') ?? [];
  const append = toN3.find((m) => m.kind === 'append');
  return {
    kinds: toN3.map((m) => m.kind),
    firstIndex: append?.kind === 'append' ? append.entries[0]?.index : undefined,
    leader: l,
  };
}

t.test('an answering follower one batch behind is caught up by AppendEntries, not InstallSnapshot', async (t) => {
  const acked = oneBatchBehind(snapshotCatchUpEntriesDefault);
  t.ok(acked.leader.snapshotIndex > 0, `the leader compacted (snapshot ${acked.leader.snapshotIndex})`);
  t.same(acked.kinds, ['append'], 'the follower is sent entries');
  t.equal(acked.firstIndex, 17, 'from just after what it holds');
  t.ok(acked.leader.snapshotIndex < 16, 'the leader kept the entries the follower had not acknowledged');

  // The same run under the old policy: everything applied is compacted, the follower gets the store.
  const interval = oneBatchBehind(0);
  t.equal(interval.leader.snapshotIndex, 19, 'interval: compacted up to lastApplied');
  t.same(interval.kinds, ['snapshot'], 'interval: the follower is sent the whole store');
});

t.test('a follower that stopped answering does not hold compaction: it gets a raftSnapshot', async (t) => {
  // Silent through more messages than raftCatchUpUnansweredMessagesMax, within an election timeout.
  const l = new Leader({});
  const start = l.now;
  l.ack('n2', 1);
  l.ack('n3', 1);
  const writes = raftCatchUpUnansweredMessagesMax + every + 2;
  for (let i = 0; i < writes; i++) {
    l.write(1);
    l.now += 1;
    l.ack('n2', l.lastIndex);
  }
  t.ok(l.now - start < defaultTimings.electionTimeoutMsMax, 'within an election timeout: the unanswered count decided');
  t.ok(
    l.snapshotIndex >= writes + 1 - every,
    `compacted past the silent follower (snapshot ${l.snapshotIndex}, last ${l.lastIndex})`,
  );
  l.reject('n3', l.lastIndex, 1);
  t.same(
    (l.drain().get('n3') ?? []).map((m) => m.kind),
    ['snapshot'],
    'it is sent a raftSnapshot when it answers again',
  );

  // Silent for longer than the longest election timeout, with few messages sent meanwhile.
  const slow = new Leader({});
  slow.ack('n2', 1);
  slow.ack('n3', 1);
  for (let i = 0; i < every + 1; i++) {
    slow.now += defaultTimings.electionTimeoutMsMax / 2;
    slow.write(1);
    slow.ack('n2', slow.lastIndex);
  }
  t.ok(slow.snapshotIndex > 1, `compacted past the silent follower's match (snapshot ${slow.snapshotIndex})`);
});

t.test('an answering follower that makes no progress holds the log back only within the bounded tail', async (t) => {
  const catchUp = 12;
  const l = new Leader({ snapshotCatchUpEntries: catchUp });
  l.ack('n2', 1);
  l.ack('n3', 1);
  let worst = 0;
  for (let i = 0; i < 200; i++) {
    l.write(1 + (i % 3));
    l.now += 1;
    l.ack('n3', 1);
    l.ack('n2', l.lastIndex);
    const applied = l.core.inspect().lastApplied;
    worst = Math.max(worst, applied - l.snapshotIndex);
    t.ok(applied - l.snapshotIndex < catchUp + every, `step ${i}: retained applied entries within the tail`);
  }
  t.ok(worst >= catchUp, `the follower held the log back as far as the tail allows (${worst})`);
  t.ok(l.snapshotIndex > 0, 'and compaction went on past it');

  // With the default tail the same follower holds the log at its match (it still answers).
  const held = new Leader({});
  held.ack('n2', 1);
  held.write(10);
  held.ack('n2', held.lastIndex);
  held.ack('n3', 7);
  for (let i = 0; i < 60; i++) {
    held.write(1);
    held.now += 1;
    held.ack('n3', 7);
    held.ack('n2', held.lastIndex);
  }
  t.equal(held.snapshotIndex, 7, 'held at the follower’s match');
  t.equal(held.core.inspect().lastApplied, 71, 'while everything was applied');
});

t.test('after a lost append, only the first refusal of those behind it resends the gap', async (t) => {
  const resends = (catchUp: number): number[] => {
    // No compaction here: the refusals alone.
    const l = new Leader({ snapshotCatchUpEntries: catchUp, snapshotEveryEntries: 100 });
    l.ack('n2', 1);
    l.ack('n3', 1);
    // Five appends of one entry each in flight to n3; the first (index 2) is lost.
    for (let i = 0; i < 5; i++) l.write(1);
    l.ack('n2', l.lastIndex);
    const firsts: number[] = [];
    for (let prev = 2; prev <= 5; prev++) {
      l.reject('n3', prev, 1);
      for (const m of l.drain().get('n3') ?? []) if (m.kind === 'append') firsts.push(m.entries[0]?.index ?? -1);
    }
    // An append sent after the back-off, refused (its entry lost too): that refusal is acted on.
    l.write(1);
    l.reject('n3', l.lastIndex - 1, 1);
    for (const m of l.drain().get('n3') ?? []) if (m.kind === 'append') firsts.push(m.entries[0]?.index ?? -1);
    return firsts;
  };
  t.same(resends(snapshotCatchUpEntriesDefault), [2, 2], 'acked: the gap once for the old appends, once for the new');
  t.same(resends(0), [2, 2, 2, 2, 2], 'interval (as before): every refusal resends the gap');
});
