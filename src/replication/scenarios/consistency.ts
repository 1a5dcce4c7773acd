/**
 * The three consistency demos (POST clusters/{id}/demo/read-your-writes, monotonic-reads,
 * consistent-prefix), run against the cluster's real nodes through the public API over loopback.
 * A replica is made to lag by the fabric only: one-way latency on the link from the writing node
 * to it (the latency endpoint), restored to its previous value afterwards. Whether a guarantee held
 * is decided from the values and timestamps the reads actually returned, never assumed from the
 * strategy. Not a checker of arbitrary histories (that is the linearizability checker).
 *
 * Report (every demo):
 *   { cluster_id, demo, strategy, replication_mode?, held: boolean, verdict: "held" | "violated",
 *     explanation: string,                       what happened and why, for a learner
 *     lag: { from, to, injected_ms, previous_ms, restored },
 *     writes: [{ node_id, key, value, timestamp, latency_ms, at }],     timestamp: the entry's HLC (Unix ns)
 *     reads:  [{ purpose, asked_node, served_by, key, value, timestamp, outcome, error?, at, latency_ms }],
 *               outcome "value" | "not_found" | "refused" (raft followers refuse reads: they go to the leader)
 *     narrative: [string] }
 * consistent-prefix adds { observer, sequence: [{ seq, key, value, node_id }],
 *     observations: [{ at_ms, visible: [seq] }], observed_order: [seq], prefix_violations: number }.
 * Errors: 404 unknown cluster, 400 fewer than two online nodes, 409 when a demo write fails.
 */
import { randomUUID } from 'node:crypto';
import { HttpError, type HttpResult } from '../../http/index.js';
import type { ClusterState } from '../../../protocol/replication.js';
import { unreachable } from '../../util/assert.js';
import { entryValue, type ApiResult, type ClusterApi, type WriteResult } from './api-client.js';
import { demoLeaderWaitMsMax, demoSettleMsMax } from '../limits.js';

export type DemoKind = 'read-your-writes' | 'monotonic-reads' | 'consistent-prefix';
export const demoKinds: readonly DemoKind[] = ['read-your-writes', 'monotonic-reads', 'consistent-prefix'];

/** The demos' choreography, with units (parameters of the lesson, not limits; those are in limits.ts). */
export const demoTimings = {
  /**
   * One-way latency added from the writer to the lagging replica (below the 1 s request timeout, so sync
   * writes still succeed).
   */
  lagMs: 400,
  /** consistent-prefix: poll the observer this often, for at most lagMs + this. */
  observePollMs: 15,
  observeExtraMs: 700,
} as const;

export interface WriteRecord {
  node_id: string;
  key: string;
  value: string;
  timestamp: number;
  latency_ms: number;
  at: string;
}

export interface ReadRecord {
  purpose: string;
  asked_node: string;
  served_by: string | null;
  key: string;
  value: string | null;
  timestamp: number | null;
  outcome: 'value' | 'not_found' | 'refused';
  error?: string;
  at: string;
  latency_ms: number;
}

export interface DemoReport {
  cluster_id: string;
  demo: DemoKind;
  strategy: string;
  replication_mode?: string;
  held: boolean;
  verdict: 'held' | 'violated';
  explanation: string;
  lag: { from: string; to: string; injected_ms: number; previous_ms: number; restored: boolean };
  writes: WriteRecord[];
  reads: ReadRecord[];
  narrative: string[];
  observer?: string;
  sequence?: Array<{ seq: number; key: string; value: string; node_id: string }>;
  observations?: Array<{ at_ms: number; visible: number[] }>;
  observed_order?: number[];
  prefix_violations?: number;
}

/** What the demo needs from the server beyond the public API: the current one-way latency of a link (read-only). */
export interface DemoEnv {
  api: ClusterApi;
  currentLatencyMs: (from: string, to: string) => number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const round = (ms: number): number => Math.round(ms * 10) / 10;

/** Who writes, who lags, who observes: chosen from the cluster's roles. */
interface Roles {
  strategy: string;
  leader: string | undefined;
  writer: string;
  /** Second writer for consistent-prefix (multi_leader, leaderless); the writer itself otherwise. */
  replier: string;
  lagging: string;
  online: string[];
}

function onlineNodes(st: ClusterState): string[] {
  return st.node_ids.filter((id) => st.nodes[id]?.state === 'online');
}

async function rolesOf(env: DemoEnv, st: ClusterState, kind: DemoKind, key: string): Promise<Roles> {
  const online = onlineNodes(st);
  if (online.length < 2) {
    throw new HttpError(
      400,
      `the ${kind} demo needs at least 2 online nodes (a writer and a replica to read from); cluster ${st.id} has ` +
        `${online.length}`,
    );
  }
  const strategy = st.config.strategy;
  let leader = st.leader_id;
  if (strategy === 'raft' && leader === undefined) {
    const found = await env.api.until(async () => (await env.api.mustState()).leader_id, demoLeaderWaitMsMax, 50);
    if (found === undefined) throw new HttpError(409, 'the demo write failed: no raft leader was elected within 3 s');
    leader = found;
  }
  const leaderOnline = leader !== undefined && online.includes(leader);
  if ((strategy === 'single_leader' || strategy === 'raft') && !leaderOnline) {
    throw new HttpError(409, `the demo write failed: the leader ${leader ?? '(none)'} is not online`);
  }
  const writer =
    (strategy === 'single_leader' || strategy === 'raft') && leader !== undefined ? leader : (online[0] as string);
  const others = online.filter((n) => n !== writer);
  // consistent-prefix on multi-writer strategies: two writers and a third node watching.
  const multiWriter = strategy === 'multi_leader' || strategy === 'leaderless';
  const replier = multiWriter && kind === 'consistent-prefix' && others.length >= 2 ? (others[0] as string) : writer;
  let lagging = others[others.length - 1] as string;
  if (strategy === 'leaderless' && kind !== 'consistent-prefix') {
    // Lag a replica that actually holds the key's copies, so the slow link matters.
    const pl = await env.api.placement(key, Math.min(st.config.quorum_n, st.node_ids.length));
    const inList = pl.ok ? pl.body.preference_list.filter((n) => n !== writer && online.includes(n)) : [];
    if (inList[0] !== undefined) lagging = inList[0];
  }
  return { strategy, leader, writer, replier, lagging, online };
}

function nowIso(): string {
  return new Date().toISOString();
}

function writeFailed(r: Extract<ApiResult<unknown>, { ok: false }>, node: string): never {
  throw new HttpError(409, `the demo write on ${node} failed (${r.status}): ${r.error}`);
}

async function doWrite(
  env: DemoEnv,
  node: string,
  key: string,
  value: string,
  writes: WriteRecord[],
): Promise<WriteResult> {
  const at = nowIso();
  const r = await env.api.write(node, key, value, 'demo-client');
  if (!r.ok) writeFailed(r, node);
  writes.push({ node_id: r.body.node_id, key, value, timestamp: r.body.entry.timestamp, latency_ms: round(r.ms), at });
  return r.body;
}

const leaderHint = /leader is (\S+?)\)?$/;

/**
 * A client read at `node`. A raft follower refuses it (only the leader serves reads, with
 * ReadIndex): the refusal is recorded and the read is retried at the leader it names, or at the
 * cluster's leader when the follower does not know one (it may have just timed out behind the slow link).
 */
async function readAt(
  env: DemoEnv,
  node: string,
  key: string,
  purpose: string,
  reads: ReadRecord[],
  leader?: string,
): Promise<ReadRecord> {
  const at = nowIso();
  const r = await env.api.read(node, key, 'demo-client');
  if (r.ok) {
    const rec: ReadRecord = {
      purpose,
      asked_node: node,
      served_by: r.body.node_id,
      key,
      value: entryValue(r.body.entry),
      timestamp: r.body.entry.timestamp,
      outcome: 'value',
      at,
      latency_ms: round(r.ms),
    };
    reads.push(rec);
    return rec;
  }
  if (/not found in cluster/.test(r.error))
    throw new HttpError(409, `node ${node} left the cluster during the demo: ${r.error}`);
  if (/not leader|no leader/.test(r.error)) {
    reads.push({
      purpose,
      asked_node: node,
      served_by: null,
      key,
      value: null,
      timestamp: null,
      outcome: 'refused',
      error: r.error,
      at,
      latency_ms: round(r.ms),
    });
    const to = leaderHint.exec(r.error)?.[1] ?? leader;
    if (to !== undefined && to !== node) return readAt(env, to, key, `${purpose} (redirected to the leader)`, reads);
    return reads[reads.length - 1] as ReadRecord;
  }
  const rec: ReadRecord = {
    purpose,
    asked_node: node,
    served_by: null,
    key,
    value: null,
    timestamp: null,
    outcome: 'not_found',
    error: r.error,
    at,
    latency_ms: round(r.ms),
  };
  reads.push(rec);
  return rec;
}

/** Reads at `node` until it returns `value` (the replica has caught up), or the wait runs out. */
async function settle(env: DemoEnv, node: string, key: string, value: string): Promise<boolean> {
  const got = await env.api.until(
    async () => {
      const r = await env.api.read(node, key, 'demo-settle');
      if (r.ok && entryValue(r.body.entry) === value) return true;
      // A raft follower never serves reads: nothing to wait for there.
      if (!r.ok && /not leader|no leader/.test(r.error)) return true;
      return undefined;
    },
    demoSettleMsMax,
    10,
  );
  return got === true;
}

/** Runs `body` with the link from -> to slowed by lagMs, restoring its previous latency afterwards. */
async function withLag<T>(
  env: DemoEnv,
  from: string,
  to: string,
  body: (lag: DemoReport['lag']) => Promise<T>,
): Promise<T> {
  const previous = env.currentLatencyMs(from, to);
  const lag: DemoReport['lag'] = {
    from,
    to,
    injected_ms: previous + demoTimings.lagMs,
    previous_ms: previous,
    restored: false,
  };
  const set = await env.api.latency(from, to, lag.injected_ms);
  if (!set.ok)
    throw new HttpError(set.status === 404 ? 404 : 409, `could not slow the link ${from} -> ${to}: ${set.error}`);
  try {
    return await body(lag);
  } finally {
    const back = await env.api.latency(from, to, previous).catch(() => undefined);
    lag.restored = back?.ok === true;
  }
}

function olderThan(a: ReadRecord, b: ReadRecord): boolean {
  // A read that found nothing is older than one that found a value; otherwise compare HLC timestamps.
  if (b.timestamp === null) return false;
  if (a.timestamp === null) return true;
  return a.timestamp < b.timestamp;
}

function served(reads: ReadRecord[], purpose: string): ReadRecord | undefined {
  return [...reads].reverse().find((r) => r.purpose.startsWith(purpose) && r.outcome !== 'refused');
}

function refusedNote(reads: ReadRecord[]): string | undefined {
  const refused = reads.find((r) => r.outcome === 'refused');
  if (!refused) return undefined;
  return (
    `${refused.asked_node} refused the read (${refused.error}): in raft only the leader serves reads, after ` +
    'confirming with a majority that it is still the leader (ReadIndex), so the read went to the leader and saw ' +
    'every committed write.'
  );
}

function describeRead(r: ReadRecord | undefined): string {
  if (!r) return 'no answer';
  if (r.outcome === 'value') return `"${r.value}" (from ${r.served_by})`;
  if (r.outcome === 'refused') return `a refusal (${r.error})`;
  return `nothing (${r.error ?? 'key not found'})`;
}

async function readYourWrites(env: DemoEnv, st: ClusterState): Promise<DemoReport> {
  const key = `demo-ryw-${randomUUID().slice(0, 8)}`;
  const roles = await rolesOf(env, st, 'read-your-writes', key);
  const writes: WriteRecord[] = [];
  const reads: ReadRecord[] = [];
  const narrative: string[] = [];
  const v1 = 'profile photo: beach.jpg';
  const v2 = 'profile photo: mountains.jpg';
  await doWrite(env, roles.writer, key, v1, writes);
  await settle(env, roles.lagging, key, v1);
  narrative.push(`Wrote "${v1}" to ${key} on ${roles.writer} and waited until ${roles.lagging} had it too.`);
  return withLag(env, roles.writer, roles.lagging, async (lag) => {
    narrative.push(
      `Slowed the link ${roles.writer} -> ${roles.lagging} to ${lag.injected_ms} ms one way (it was ` +
        `${lag.previous_ms} ms): ${roles.lagging} now lags.`,
    );
    const w = await doWrite(env, roles.writer, key, v2, writes);
    narrative.push(
      `You updated it to "${v2}" on ${roles.writer}; the write was acknowledged in ${writes[1]?.latency_ms} ms.`,
    );
    const r = await readAt(env, roles.lagging, key, 'read your own write', reads, roles.leader);
    const got = served(reads, 'read your own write') ?? r;
    narrative.push(`Your next read went to ${roles.lagging} and returned ${describeRead(got)}.`);
    const held = got.outcome === 'value' && got.timestamp !== null && got.timestamp >= w.entry.timestamp;
    await sleep(lag.injected_ms + 100);
    const later = await readAt(env, roles.lagging, key, 'read again after the lag', reads, roles.leader);
    const laterGot = served(reads, 'read again after the lag') ?? later;
    narrative.push(`${lag.injected_ms + 100} ms later the same read returned ${describeRead(laterGot)}.`);
    const refused = refusedNote(reads);
    let explanation: string;
    if (!held) {
      explanation =
        `Read-your-writes was violated: your write of "${v2}" was acknowledged by ${roles.writer} before ` +
        `${roles.lagging} had it ` +
        '(' +
        (st.config.strategy === 'single_leader' ? `${st.config.replication_mode} replication` : st.config.strategy) +
        ' ' +
        `acknowledges a write without waiting for that replica), and your next read was served by ${roles.lagging}, ` +
        `which still held ${describeRead(got)}. It looked as if your update had been lost. Remedies: read data you ` +
        'may have changed from the node you wrote to (the leader), ' +
        `or remember your write's timestamp and only read from replicas that have caught up to it.`;
    } else if (refused !== undefined) {
      explanation = `Read-your-writes held. ${refused}`;
    } else if (st.config.strategy === 'single_leader' && st.config.replication_mode === 'sync') {
      explanation =
        'Read-your-writes held: with sync replication the leader acknowledged your write only after every follower, ' +
        `the slow ${roles.lagging} included, had applied it, so any replica you read next has it. The price is write ` +
        `latency: this write took ${writes[1]?.latency_ms} ms because it waited for the slow link.`;
    } else if (st.config.strategy === 'leaderless') {
      explanation =
        `Read-your-writes held: the read at ${roles.lagging} asked R=${st.config.quorum_r} replicas and your write ` +
        `reached W=${st.config.quorum_w} of N=${st.config.quorum_n}; since W + R > N at least one reply carried your ` +
        'write, and the newest version wins.';
    } else {
      explanation =
        `Read-your-writes held: by the time your read reached ${roles.lagging} it had applied your write ` +
        `(${describeRead(got)}), even though the link to it was slowed.`;
    }
    return report(st, 'read-your-writes', held, explanation, lag, writes, reads, narrative);
  });
}

async function monotonicReads(env: DemoEnv, st: ClusterState): Promise<DemoReport> {
  const key = `demo-mr-${randomUUID().slice(0, 8)}`;
  const roles = await rolesOf(env, st, 'monotonic-reads', key);
  const writes: WriteRecord[] = [];
  const reads: ReadRecord[] = [];
  const narrative: string[] = [];
  const v1 = 'comments: 1';
  const v2 = 'comments: 2';
  await doWrite(env, roles.writer, key, v1, writes);
  await settle(env, roles.lagging, key, v1);
  narrative.push(`Wrote "${v1}" to ${key} on ${roles.writer} and waited until ${roles.lagging} had it too.`);
  return withLag(env, roles.writer, roles.lagging, async (lag) => {
    narrative.push(
      `Slowed the link ${roles.writer} -> ${roles.lagging} to ${lag.injected_ms} ms one way: ` +
        `${roles.lagging} now lags.`,
    );
    await doWrite(env, roles.writer, key, v2, writes);
    narrative.push(`Someone updated it to "${v2}" on ${roles.writer}.`);
    await readAt(env, roles.writer, key, 'first read', reads, roles.leader);
    const first = served(reads, 'first read');
    narrative.push(`Your first read hit the up-to-date ${roles.writer} and returned ${describeRead(first)}.`);
    await readAt(env, roles.lagging, key, 'second read', reads, roles.leader);
    const second = served(reads, 'second read');
    narrative.push(`Your second read, a moment later, hit ${roles.lagging} and returned ${describeRead(second)}.`);
    const held = first !== undefined && second !== undefined && !olderThan(second, first);
    const refused = refusedNote(reads);
    let explanation: string;
    if (!held) {
      explanation =
        `Monotonic reads were violated: you saw "${first?.value}" and then, reading again, the older ` +
        `${describeRead(second)}, as if time went backwards. ` +
        `Your two reads were served by different replicas, and ${roles.lagging} had not yet received the update. ` +
        'Remedy: pin each user to one replica (for example by hashing the user id), so later reads never come from a ' +
        'replica further behind.';
    } else if (refused !== undefined) {
      explanation = `Monotonic reads held. ${refused}`;
    } else if (st.config.strategy === 'single_leader' && st.config.replication_mode === 'sync') {
      explanation =
        'Monotonic reads held: with sync replication the update was acknowledged only once every follower had it, so ' +
        'no replica could hand you an older value after you saw the newer one.';
    } else if (st.config.strategy === 'leaderless') {
      explanation =
        `Monotonic reads held: each read gathered R=${st.config.quorum_r} replies and W + R > N, so every read after ` +
        'the write saw it; the newest version wins.';
    } else {
      explanation = `Monotonic reads held: the second read returned ${describeRead(second)}, no older than the first.`;
    }
    return report(st, 'monotonic-reads', held, explanation, lag, writes, reads, narrative);
  });
}

async function consistentPrefix(env: DemoEnv, st: ClusterState): Promise<DemoReport> {
  const prefix = `demo-cp-${randomUUID().slice(0, 8)}`;
  const roles = await rolesOf(env, st, 'consistent-prefix', prefix);
  const chat = ['Alice: shall we meet at noon?', 'Bob: noon works for me', 'Alice: great, see you then'];
  const authors = [roles.writer, roles.replier, roles.writer];
  const writes: WriteRecord[] = [];
  const reads: ReadRecord[] = [];
  const narrative: string[] = [];
  const multiWriter = roles.replier !== roles.writer;
  // The observer: a third node when two nodes write, else the lagging replica.
  const observer = roles.online.find((n) => n !== roles.writer && n !== roles.replier) ?? roles.lagging;
  const sequence = chat.map((value, i) => ({
    seq: i + 1,
    key: `${prefix}-${i + 1}`,
    value,
    node_id: authors[i] as string,
  }));
  return withLag(env, roles.writer, observer, async (lag) => {
    narrative.push(
      `Slowed the link ${roles.writer} -> ${observer} to ${lag.injected_ms} ms one way; ${observer} watches the ` +
        'conversation.',
    );
    for (const [i, m] of sequence.entries()) {
      const prev = sequence[i - 1];
      if (prev !== undefined && prev.node_id !== m.node_id) {
        // Causality: the reply is written after its author has read the message it answers.
        const seen = await settle(env, m.node_id, prev.key, prev.value);
        narrative.push(
          `${m.node_id} ${seen ? 'read' : 'did not yet see'} message ${prev.seq} before writing message ${m.seq}.`,
        );
      }
      await doWrite(env, m.node_id, m.key, m.value, writes);
    }
    narrative.push(
      'Wrote the conversation in order: ' +
        sequence.map((m) => `${m.seq} on ${m.node_id}`).join(', ') +
        (multiWriter ? ' (two nodes accept writes)' : ` (all through ${roles.writer})`) +
        '.',
    );
    const observations: Array<{ at_ms: number; visible: number[] }> = [];
    const order: number[] = [];
    let violations = 0;
    const started = performance.now();
    const deadline = started + lag.injected_ms + demoTimings.observeExtraMs;
    let lastKey = '';
    for (;;) {
      // Newest first: seeing message k and then missing an earlier one is a real gap, not a race.
      const visible: number[] = [];
      for (const m of [...sequence].reverse()) {
        const pollReads: ReadRecord[] = [];
        await readAt(env, observer, m.key, `observe message ${m.seq}`, pollReads, roles.leader);
        const got = served(pollReads, `observe message ${m.seq}`);
        if (got?.outcome === 'value') visible.push(m.seq);
        if (observations.length === 0) reads.push(...pollReads);
      }
      visible.sort((a, b) => a - b);
      const k = visible.join(',');
      if (k !== lastKey) {
        observations.push({ at_ms: Math.round(performance.now() - started), visible });
        for (const s of visible) if (!order.includes(s)) order.push(s);
        const isPrefix = visible.every((s, i) => s === i + 1);
        if (!isPrefix) violations++;
        lastKey = k;
      }
      if (visible.length === sequence.length || performance.now() > deadline) break;
      await sleep(demoTimings.observePollMs);
    }
    const held = violations === 0;
    for (const o of observations) {
      narrative.push(
        `At +${o.at_ms} ms ${observer} showed ` +
          (o.visible.length === 0
            ? 'no messages'
            : `message${o.visible.length > 1 ? 's' : ''} ${o.visible.join(', ')}`) +
          '.',
      );
    }
    const last = observations[observations.length - 1];
    if (
      multiWriter &&
      st.config.strategy === 'multi_leader' &&
      last !== undefined &&
      last.visible.length === sequence.length &&
      last.at_ms < lag.injected_ms
    ) {
      narrative.push(
        `The messages from ${roles.writer} reached ${observer} before the slow link delivered them: a periodic ` +
          'anti-entropy exchange with another replica filled the gap.',
      );
    }
    const refused = refusedNote(reads);
    let explanation: string;
    if (!held) {
      const bad = observations.find((o) => !o.visible.every((s, i) => s === i + 1));
      explanation =
        `Consistent prefix was violated: ${observer} showed message${(bad?.visible.length ?? 0) > 1 ? 's' : ''} ` +
        `${bad?.visible.join(', ')} without the earlier ones, ` +
        `so an observer saw Bob's answer before Alice's question. Writes accepted by different nodes replicate ` +
        `independently, and the link from ${roles.writer} was slow. ` +
        'Remedy: make causally related writes go through the same node (or the same partition), or track causal ' +
        'dependencies (version vectors) and hold a write back until what it depends on is visible.';
    } else if (refused !== undefined) {
      explanation = `Consistent prefix held. ${refused}`;
    } else if (!multiWriter) {
      explanation =
        `Consistent prefix held: every message went through ${roles.writer}, which ships one ordered log; ` +
        `${observer} applies it strictly in order, so even while it lagged it only ever showed a prefix of the ` +
        `conversation (observed order ${order.join(', ') || 'none'}).`;
    } else if (st.config.strategy === 'leaderless') {
      explanation =
        `Consistent prefix held here: every read at ${observer} was a quorum read (W + R > N), and each message had ` +
        'been acknowledged before the next was written, so each read saw it. Without quorums, or with messages on ' +
        'different partitions replicating at different speeds, the order could break.';
    } else {
      explanation = `Consistent prefix held: ${observer} showed the messages in order (${order.join(', ')}).`;
    }
    const r = report(st, 'consistent-prefix', held, explanation, lag, writes, reads, narrative);
    r.observer = observer;
    r.sequence = sequence;
    r.observations = observations;
    r.observed_order = order;
    r.prefix_violations = violations;
    return r;
  });
}

function report(
  st: ClusterState,
  demo: DemoKind,
  held: boolean,
  explanation: string,
  lag: DemoReport['lag'],
  writes: WriteRecord[],
  reads: ReadRecord[],
  narrative: string[],
): DemoReport {
  const r: DemoReport = {
    cluster_id: st.id,
    demo,
    strategy: st.config.strategy,
    held,
    verdict: held ? 'held' : 'violated',
    explanation,
    lag,
    writes,
    reads,
    narrative,
  };
  if (st.config.strategy === 'single_leader') r.replication_mode = st.config.replication_mode;
  return r;
}

/** Runs one demo; HttpError for 400/404/409. */
export async function runConsistencyDemo(kind: DemoKind, env: DemoEnv): Promise<HttpResult> {
  const st = await env.api.state();
  if (!st.ok) throw new HttpError(404, st.error);
  let body: DemoReport;
  switch (kind) {
    case 'read-your-writes':
      body = await readYourWrites(env, st.body);
      break;
    case 'monotonic-reads':
      body = await monotonicReads(env, st.body);
      break;
    case 'consistent-prefix':
      body = await consistentPrefix(env, st.body);
      break;
    default:
      unreachable(kind);
  }
  return { status: 200, body };
}
