/**
 * Scenario scripts on leader-based clusters: ReplicationLag, SyncVsAsync and LeaderFailover
 * (single_leader), MultiLeaderConflict and SplitBrain (multi_leader). Each drives its cluster
 * through the public API only (faults through the network endpoints), narrates its steps, and
 * returns checks computed from what the reads, writes, state and metrics actually showed.
 */
import type { KVEntry } from '../../../protocol/replication.js';
import { entryValue, metricSample } from './api-client.js';
import { avg, lwwWinner, ms, must, mustWrite, readValue, sumStat } from './kit.js';
import { check, type Check, type ScriptContext, type ScriptOutcome } from './runner.js';

function leaderAndFollowers(s: ScriptContext): { leader: string; followers: string[] } {
  const leader = s.state.leader_id ?? (s.state.node_ids[0] as string);
  return { leader, followers: s.state.node_ids.filter((n) => n !== leader) };
}

/** single_leader async, 4 nodes: 500 ms to one follower; it serves stale reads, then catches up. */
export async function replicationLag(s: ScriptContext): Promise<ScriptOutcome> {
  const { leader, followers } = leaderAndFollowers(s);
  const slow = followers[followers.length - 1] as string;
  const fresh = followers[0] as string;
  const latencyMs = 500;
  const writes = 10;
  // A follower on a healthy link must have the last write well before the slow link delivers it.
  const freshWaitMs = 450;
  s.step(
    `Leader ${leader} replicates its log asynchronously to ${followers.join(', ')}: a write is acknowledged as ` +
      'soon as the leader has applied it.',
  );
  await must('slowing the link', s.cluster.latency(leader, slow, latencyMs));
  s.step(
    `The network link ${leader} -> ${slow} now takes ${latencyMs} ms one way; the other followers are unaffected.`,
    { from: leader, to: slow, latency_ms: latencyMs },
  );
  const acks: number[] = [];
  let last: KVEntry | undefined;
  for (let i = 0; i < writes; i++) {
    const r = await s.cluster.write(leader, `lag-${i}`, `value ${i}`);
    if (!r.ok) throw new Error(`write lag-${i} failed (${r.status}): ${r.error}`);
    acks.push(r.ms);
    last = r.body.entry;
  }
  const lastAt = performance.now();
  const lastKey = `lag-${writes - 1}`;
  const lastValue = last ? entryValue(last) : '';
  s.step(
    `${writes} writes acknowledged by ${leader} in ${ms(avg(acks))} on average: the leader ` +
      'did not wait for any follower.',
    { writes, avg_ack_ms: Math.round(avg(acks) * 10) / 10 },
  );
  const stSoon = await s.cluster.mustState();
  const lagEntries = stSoon.nodes[slow]?.lag ?? 0;
  const lagMs = Number((stSoon.metrics['replication_lag_ms'] as Record<string, unknown> | undefined)?.[slow] ?? 0);
  const onSlow = await readValue(s.cluster, slow, lastKey);
  const onFresh = await s.cluster.until(
    async () => {
      const r = await readValue(s.cluster, fresh, lastKey);
      return r.value === lastValue ? performance.now() - lastAt : undefined;
    },
    freshWaitMs,
    5,
  );
  s.step(
    `Right after the writes ${slow} is ${lagEntries} entries behind (lag ${lagMs} ms): reading ${lastKey} there ` +
      `returns ${onSlow.value === null ? 'nothing' : `"${onSlow.value}"`}, while ${fresh} ` +
      `${onFresh === undefined ? 'did not have it either' : `had it within ${ms(onFresh)}`}.`,
    { slow, lag_entries: lagEntries, lag_ms: lagMs, stale_read: onSlow.value !== lastValue },
  );
  const caughtUp = await s.cluster.until(
    async () => {
      const r = await readValue(s.cluster, slow, lastKey);
      return r.value === lastValue ? performance.now() - lastAt : undefined;
    },
    3_000,
    20,
  );
  const lagAfter = await s.cluster.until(
    async () => {
      const st = await s.cluster.mustState();
      const l = st.nodes[slow]?.lag ?? 0;
      return l === 0 ? l : undefined;
    },
    1_500,
    50,
  );
  s.step(
    caughtUp === undefined
      ? `${slow} had not caught up within 3 s.`
      : `${slow} caught up ${ms(caughtUp)} after the last write (the ${latencyMs} ms link delay); its lag is ` +
          `${lagAfter === 0 ? 'back to 0' : 'still above 0'}. Asynchronous replication is eventually consistent.`,
    { caught_up_ms: caughtUp === undefined ? null : Math.round(caughtUp) },
  );
  await must('restoring the link', s.cluster.latency(leader, slow, 0));
  return {
    expected:
      `${slow}, behind a ${latencyMs} ms link, lags (entries behind, stale reads) while ${fresh} is current; once ` +
      'the delayed messages arrive it catches up and its lag returns to 0',
    checks: [
      check(
        'the slow follower lagged',
        lagEntries > 0 && onSlow.value !== lastValue,
        `${slow} was ${lagEntries} entries behind and returned ` +
          `${onSlow.value === null ? 'nothing' : `"${onSlow.value}"`} for ${lastKey}`,
      ),
      check(
        'the other followers were current',
        onFresh !== undefined,
        onFresh === undefined
          ? `${fresh} did not have ${lastKey} within ${freshWaitMs} ms`
          : `${fresh} had ${lastKey} ${ms(onFresh)} after the last write`,
      ),
      check(
        'the slow follower caught up after the link delay',
        caughtUp !== undefined && caughtUp >= latencyMs * 0.8,
        caughtUp === undefined ? `${slow} never caught up` : `${slow} caught up after ${ms(caughtUp)}`,
      ),
      check('lag returned to zero', lagAfter === 0, `lag of ${slow} after catching up: ${lagAfter ?? 'still above 0'}`),
    ],
  };
}

/** single_leader, 3 nodes: the same writes under async then sync; latency and durability at ack time. */
export async function syncVsAsync(s: ScriptContext): Promise<ScriptOutcome> {
  const { leader, followers } = leaderAndFollowers(s);
  const linkMs = 60;
  const writes = 5;
  for (const f of followers) await must('slowing a link', s.cluster.latency(leader, f, linkMs));
  s.step(
    `Every link from leader ${leader} to its followers (${followers.join(', ')}) now takes ${linkMs} ms one way, ` +
      'like replicas in another data center.',
    { link_ms: linkMs },
  );
  const phase = async (mode: 'async' | 'sync'): Promise<{ lat: number[]; onFollowers: number }> => {
    const lat: number[] = [];
    let onFollowers = 0;
    for (let i = 0; i < writes; i++) {
      const key = `order-${mode}-${i}`;
      const r = await s.cluster.write(leader, key, `order ${i} (${mode})`);
      if (!r.ok) throw new Error(`${mode} write ${key} failed (${r.status}): ${r.error}`);
      lat.push(r.ms);
      // Who holds the write at the moment the client heard "ok"? (durability if the leader died now)
      const held = await Promise.all(followers.map((f) => readValue(s.cluster, f, key)));
      onFollowers += held.filter((h) => h.value !== null).length;
    }
    return { lat, onFollowers };
  };
  const asyncR = await phase('async');
  s.step(
    `async: ${writes} writes, ${ms(avg(asyncR.lat))} each on average; at acknowledgement time ` +
      `${asyncR.onFollowers} of ${writes * followers.length} follower copies existed: had ${leader} crashed then, ` +
      'those writes would have been lost.',
    { mode: 'async', avg_ms: Math.round(avg(asyncR.lat) * 10) / 10, follower_copies_at_ack: asyncR.onFollowers },
  );
  await must('switching to sync', s.cluster.replicationMode('sync'));
  s.step(
    'Switched the cluster to sync replication (PATCH config): the leader now waits for every follower before ' +
      'acknowledging.',
  );
  const syncR = await phase('sync');
  s.step(
    `sync: ${writes} writes, ${ms(avg(syncR.lat))} each on average; at acknowledgement time ${syncR.onFollowers} ` +
      `of ${writes * followers.length} follower copies existed: every acknowledged write survives the leader's loss.`,
    { mode: 'sync', avg_ms: Math.round(avg(syncR.lat) * 10) / 10, follower_copies_at_ack: syncR.onFollowers },
  );
  await must('switching back to async', s.cluster.replicationMode('async'));
  await must('clearing the link delays', s.cluster.clearFaults());
  const total = writes * followers.length;
  return {
    expected:
      `sync writes take at least the ${linkMs} ms link delay while async writes return at once; at acknowledgement ` +
      'every sync write is on every follower, async writes are not yet',
    checks: [
      check(
        'sync writes are slower',
        avg(syncR.lat) > avg(asyncR.lat) && avg(syncR.lat) >= linkMs * 0.8,
        `average write latency async ${ms(avg(asyncR.lat))}, sync ${ms(avg(syncR.lat))}`,
      ),
      check(
        'sync writes are durable at acknowledgement',
        syncR.onFollowers === total,
        `sync: ${syncR.onFollowers}/${total} follower copies when acknowledged`,
      ),
      check(
        'async writes are not yet replicated at acknowledgement',
        asyncR.onFollowers < total,
        `async: ${asyncR.onFollowers}/${total} follower copies when acknowledged`,
      ),
    ],
  };
}

/**
 * single_leader async, 4 nodes: the leader stops with unreplicated writes; a follower is promoted; those
 * writes are orphaned.
 */
export async function leaderFailover(s: ScriptContext): Promise<ScriptOutcome> {
  const { leader, followers } = leaderAndFollowers(s);
  const base = { key: 'account:alice', value: 'balance 100' };
  await mustWrite(s.cluster, leader, base.key, base.value);
  const everywhere = await s.cluster.until(
    async () => {
      const vs = await Promise.all(followers.map((f) => readValue(s.cluster, f, base.key)));
      return vs.every((v) => v.value === base.value) ? true : undefined;
    },
    2_000,
    20,
  );
  s.step(
    `Wrote ${base.key} = "${base.value}" on leader ${leader}; ` +
      `${everywhere ? 'every follower has it' : 'not every follower had it within 2 s'}.`,
  );
  for (const f of followers) await must('slowing a link', s.cluster.latency(leader, f, 3_000));
  s.step(
    `The leader's links to ${followers.join(', ')} slow to 3 s: replication falls behind (asynchronous mode ` +
      'keeps acknowledging writes).',
  );
  const late = [
    { key: 'account:alice', value: 'balance 150' },
    { key: 'order:17', value: 'shipped to alice' },
  ];
  const acked: typeof late = [];
  for (const w of late) {
    const r = await s.cluster.write(leader, w.key, w.value);
    if (r.ok) acked.push(w);
  }
  s.step(
    `${leader} acknowledged ${acked.length} more write(s) ` +
      `(${acked.map((w) => `${w.key} = "${w.value}"`).join(', ')}) that no follower has yet.`,
  );
  await must('stopping the leader', s.cluster.removeNode(leader));
  s.step(`${leader} crashes (node removed). The orchestrator promotes the most up-to-date online follower.`);
  const st = await s.cluster.mustState();
  const newLeader = st.leader_id;
  s.step(`New leader: ${newLeader ?? '(none)'}.`, { old_leader: leader, new_leader: newLeader ?? null });
  const orphaned: string[] = [];
  for (const w of acked) {
    const r = newLeader ? await readValue(s.cluster, newLeader, w.key) : { value: null };
    if (r.value !== w.value)
      orphaned.push(`${w.key} = "${w.value}" (the new leader has ${r.value === null ? 'nothing' : `"${r.value}"`})`);
  }
  s.step(
    `Acknowledged writes missing on the new leader: ${orphaned.length === 0 ? 'none' : orphaned.join('; ')}. ` +
      'They were orphaned: acknowledged to the client, then lost in the failover.',
    { orphaned: orphaned.length },
  );
  const after = newLeader ? await s.cluster.write(newLeader, 'order:18', 'placed after failover') : undefined;
  s.step(
    after?.ok
      ? `${newLeader} accepts writes: order:18 written.`
      : `The new leader refused a write: ${after && !after.ok ? after.error : 'no leader'}.`,
  );
  const conv = await s.cluster.until(
    async () => {
      const c = await s.cluster.convergence();
      return c.ok && c.body.converged ? c.body : undefined;
    },
    2_000,
    50,
  );
  const kept = newLeader ? await readValue(s.cluster, newLeader, base.key) : { value: null };
  return {
    expected:
      `a follower is promoted when ${leader} stops; the ${acked.length} writes ${leader} acknowledged but never ` +
      'replicated are missing on the new leader (orphaned); the survivors agree and accept writes',
    checks: [
      check(
        'a follower was promoted',
        newLeader !== undefined && newLeader !== leader && followers.includes(newLeader),
        `leader ${leader} -> ${newLeader ?? 'none'}`,
      ),
      check(
        'unreplicated acknowledged writes were orphaned',
        acked.length > 0 && orphaned.length === acked.length,
        `${orphaned.length} of ${acked.length} acknowledged writes lost`,
      ),
      check(
        'the new leader kept the replicated data',
        kept.value === base.value,
        `${base.key} on the new leader is ${kept.value === null ? 'missing' : `"${kept.value}"`}`,
      ),
      check(
        'the cluster accepts writes again and the survivors agree',
        after?.ok === true && conv !== undefined,
        `write after failover ${after?.ok ? 'accepted' : 'refused'}; survivors ` +
          `${conv ? 'converged' : 'did not converge within 2 s'}`,
      ),
    ],
  };
}

async function conflictCount(s: ScriptContext): Promise<{ detected: number; metric: number }> {
  const st = await s.cluster.mustState();
  const text = await s.api.metricsText();
  return {
    detected: sumStat(st, 'conflicts'),
    metric: metricSample(text, 'sim_conflicts_total', { cluster_id: s.state.id }),
  };
}

/** multi_leader lww, 3 nodes: every node isolated writes the same key; heal; LWW resolves the conflicts. */
export async function multiLeaderConflict(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const key = 'doc:title';
  // Isolate every node: {n1} | rest, then split the rest pairwise.
  const cuts: string[] = [];
  for (let i = 0; i < nodes.length - 1; i++) {
    const p = await must('partitioning', s.cluster.partition([nodes[i] as string], nodes.slice(i + 1)));
    cuts.push(p.partition_id);
  }
  s.step(
    `Every node is isolated from every other (${cuts.length} partitions). All ${nodes.length} still accept ` +
      'writes: multi-leader.',
  );
  const written: KVEntry[] = [];
  for (const n of nodes) {
    const w = await mustWrite(s.cluster, n, key, `title chosen on ${n}`);
    written.push(w.entry);
  }
  const during = await Promise.all(nodes.map((n) => readValue(s.cluster, n, key)));
  const distinct = new Set(during.map((d) => d.value)).size;
  s.step(
    `Each node wrote ${key}; reads now show ${distinct} different values: ` +
      `${nodes.map((n, i) => `${n} "${during[i]?.value}"`).join(', ')}.`,
    { distinct_values: distinct },
  );
  const before = await conflictCount(s);
  await must('healing', s.cluster.clearFaults());
  s.step("The network heals. Each node receives the others' versions: their vector clocks are concurrent, a conflict.");
  const conv = await s.cluster.until(
    async () => {
      const c = await s.cluster.convergence();
      return c.ok && c.body.converged ? c.body : undefined;
    },
    3_000,
    50,
  );
  const after = await conflictCount(s);
  const finals = await Promise.all(nodes.map((n) => readValue(s.cluster, n, key)));
  const winner = lwwWinner(written);
  const winnerValue = winner ? entryValue(winner) : null;
  s.step(
    `${after.detected - before.detected} conflict detections (sim_conflicts_total ${after.metric}); ` +
      `last-writer-wins kept "${winnerValue}" (highest HLC timestamp) on ` +
      `${finals.filter((f) => f.value === winnerValue).length} of ${nodes.length} nodes; the other ` +
      `${written.length - 1} writes were discarded.`,
    { conflicts: after.detected - before.detected, winner: winnerValue },
  );
  return {
    expected:
      `isolated nodes accept ${nodes.length} concurrent writes to one key; after healing the conflicts are ` +
      'detected and LWW keeps the write with the highest timestamp on every node, silently discarding the others',
    checks: [
      check(
        'every isolated node accepted its write',
        distinct === nodes.length,
        `${distinct} distinct values while isolated`,
      ),
      check(
        'conflicts were detected',
        after.detected - before.detected > 0 && after.metric > 0,
        `${after.detected - before.detected} detections at the nodes, sim_conflicts_total = ${after.metric}`,
      ),
      check('replicas converged', conv !== undefined, conv ? 'every node agrees' : 'not converged within 3 s'),
      check(
        'LWW kept the newest write everywhere',
        finals.every((f) => f.value === winnerValue),
        `final values: ${nodes.map((n, i) => `${n} "${finals[i]?.value}"`).join(', ')}; LWW winner "${winnerValue}"`,
      ),
    ],
  };
}

/** multi_leader, 4 nodes: 2-2 partition, both sides write, heal, reconcile. */
export async function splitBrain(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const sideA = nodes.slice(0, Math.floor(nodes.length / 2));
  const sideB = nodes.slice(Math.floor(nodes.length / 2));
  const a0 = sideA[0] as string;
  const a1 = sideA[sideA.length - 1] as string;
  const b0 = sideB[0] as string;
  const b1 = sideB[sideB.length - 1] as string;
  await mustWrite(s.cluster, a0, 'inventory:widget', 'stock 10');
  await s.cluster.until(
    async () => ((await readValue(s.cluster, b1, 'inventory:widget')).value === 'stock 10' ? true : undefined),
    1_500,
    20,
  );
  s.step(`inventory:widget = "stock 10" is replicated to all ${nodes.length} nodes.`);
  const part = await must('partitioning', s.cluster.partition(sideA, sideB));
  s.step(
    `A 2-2 partition: {${sideA.join(', ')}} | {${sideB.join(', ')}}. Neither side can tell the other is alive; ` +
      'both keep accepting writes (split brain).',
    { partition_id: part.partition_id },
  );
  const plan = [
    { node: a0, key: 'inventory:widget', value: 'stock 5 (5 sold on side A)' },
    { node: a1, key: 'order:A-1', value: '5 widgets, placed on side A' },
    { node: b0, key: 'inventory:widget', value: 'stock 7 (3 sold on side B)' },
    { node: b1, key: 'order:B-1', value: '3 widgets, placed on side B' },
  ];
  const results = await Promise.all(plan.map((w) => s.cluster.write(w.node, w.key, w.value)));
  const accepted = results.filter((r) => r.ok).length;
  await s.sleep(50);
  const seenA = await readValue(s.cluster, a1, 'inventory:widget');
  const seenB = await readValue(s.cluster, b1, 'inventory:widget');
  s.step(
    `Both sides accepted writes (${accepted}/${plan.length}). ${a1} says inventory:widget is "${seenA.value}", ` +
      `${b1} says "${seenB.value}": two versions of the truth.`,
  );
  const before = await conflictCount(s);
  await must('healing', s.cluster.heal(part.partition_id));
  const ae = await s.cluster.antiEntropy(3_000);
  s.step(
    'The partition heals; a Merkle anti-entropy round compares the replicas: ' +
      (ae.ok
        ? `${ae.body.divergent_keys} divergent key(s), converged: ${ae.body.converged_after}`
        : `failed: ${ae.error}`) +
      '.',
  );
  const conv = await s.cluster.until(
    async () => {
      const c = await s.cluster.convergence();
      return c.ok && c.body.converged ? c.body : undefined;
    },
    3_000,
    50,
  );
  const after = await conflictCount(s);
  const finalWidget = await Promise.all(nodes.map((n) => readValue(s.cluster, n, 'inventory:widget')));
  const orderA = await readValue(s.cluster, b0, 'order:A-1');
  const orderB = await readValue(s.cluster, a0, 'order:B-1');
  const widget = finalWidget[0]?.value ?? null;
  s.step(
    `Reconciled: inventory:widget = "${widget}" on every node (the other side's stock update was overwritten, ` +
      'although 8 widgets were sold in total); both orders survive: ' +
      `${orderA.value !== null && orderB.value !== null ? 'yes' : 'no'}.`,
    { conflicts: after.detected - before.detected },
  );
  const checks: Check[] = [
    check(
      'both sides accepted writes during the split',
      accepted === plan.length,
      `${accepted}/${plan.length} writes accepted`,
    ),
    check(
      'the sides diverged',
      seenA.value !== seenB.value,
      `during the split ${a1} had "${seenA.value}", ${b1} had "${seenB.value}"`,
    ),
    check(
      'the conflicting key was detected as a conflict',
      after.detected > before.detected,
      `${after.detected - before.detected} conflict detections after healing`,
    ),
    check(
      'after healing every node agrees',
      conv !== undefined && finalWidget.every((f) => f.value === widget),
      conv ? `converged on "${widget}"` : 'not converged within 3 s',
    ),
    check(
      'non-conflicting writes from both sides survive',
      orderA.value !== null && orderB.value !== null,
      `order:A-1 on ${b0}: ${orderA.value === null ? 'missing' : 'present'}; order:B-1 on ${a0}: ` +
        `${orderB.value === null ? 'missing' : 'present'}`,
    ),
  ];
  return {
    expected:
      'both halves accept writes and diverge during the partition; after healing anti-entropy reconciles them: the ' +
      'conflicting key converges to one value (an update is lost), the non-conflicting writes of both sides survive',
    checks,
  };
}
