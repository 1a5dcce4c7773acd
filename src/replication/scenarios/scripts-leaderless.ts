/**
 * Scenario scripts on leaderless (Dynamo-style) clusters: QuorumTuning, ReadRepair,
 * NetworkPartitionHeal, CascadingFailure, ThunderingHerd, HotKeyZipfian, NetworkFlapping,
 * ClockSkewLWW and CorruptReplica. Each drives its cluster through the public API only and
 * returns checks computed from what it observed (read values, per-node counters from the state,
 * fabric counters, convergence and anti-entropy reports, /metrics).
 */
import type { KVEntry } from '../../../protocol/replication.js';
import { entryValue, metricSample, type ClusterApi } from './api-client.js';
import {
  avg,
  fabricStat,
  lwwWinner,
  ms,
  must,
  mustWrite,
  nodeStat,
  pool,
  readValue,
  storedValue,
  sumStat,
} from './kit.js';
import { check, type ScriptContext, type ScriptOutcome } from './runner.js';

async function converged(api: ClusterApi, waitMs: number): Promise<boolean> {
  const r = await api.until(
    async () => {
      const c = await api.convergence();
      return c.ok && c.body.converged ? true : undefined;
    },
    waitMs,
    50,
  );
  return r === true;
}

/** N5 W1 R5 (this cluster) vs N5 W5 R1 (a comparison cluster): both legal, opposite costs. */
export async function quorumTuning(s: ScriptContext): Promise<ScriptOutcome> {
  const cfg = s.state.config;
  const illegal = await s.api.createCluster({
    strategy: 'leaderless',
    node_count: 5,
    quorum_n: 5,
    quorum_w: 2,
    quorum_r: 3,
  });
  if (illegal.ok) await s.api.deleteCluster(illegal.body.id);
  s.step(
    'First, N5 W2 R3 is refused: ' +
      `${illegal.ok ? 'it was accepted (unexpected)' : `${illegal.status} "${illegal.error}"`}. With W + R = N a ` +
      'read quorum may miss the latest write quorum entirely.',
    { status: illegal.status },
  );
  const other = await s.extraCluster({ strategy: 'leaderless', node_count: 5, quorum_n: 5, quorum_w: 5, quorum_r: 1 });
  s.step(
    `Two legal clusters: this one, N${cfg.quorum_n} W${cfg.quorum_w} R${cfg.quorum_r} (fast writes), and ` +
      `${other.state.id}, N5 W5 R1 (fast reads). Both satisfy W + R > N.`,
    { comparison_cluster_id: other.state.id },
  );
  const slowMs = 100;
  const coordinator = 'n1';
  const slowNode = s.state.node_ids[s.state.node_ids.length - 1] as string;
  await must('slowing a link', s.cluster.latency(coordinator, slowNode, slowMs));
  await must('slowing a link', other.api.latency(coordinator, slowNode, slowMs));
  s.step(
    `On both clusters the link ${coordinator} -> ${slowNode} takes ${slowMs} ms: the slowest replica decides how ` +
      'long a quorum that needs it takes.',
  );
  const measure = async (
    api: ClusterApi,
    label: string,
  ): Promise<{ w: number[]; r: number[]; fresh: number; ops: number }> => {
    const w: number[] = [];
    const r: number[] = [];
    let fresh = 0;
    const ops = 4;
    for (let i = 0; i < ops; i++) {
      const key = `tuning-${i}`;
      const value = `${label} value ${i}`;
      const wr = await api.write(coordinator, key, value);
      if (!wr.ok) throw new Error(`write on ${label} failed (${wr.status}): ${wr.error}`);
      w.push(wr.ms);
      const rr = await api.read(coordinator, key);
      if (rr.ok) {
        r.push(rr.ms);
        if (entryValue(rr.body.entry) === value) fresh++;
      }
    }
    return { w, r, fresh, ops };
  };
  const [fastW, fastR] = await Promise.all([measure(s.cluster, 'W1R5'), measure(other.api, 'W5R1')]);
  s.step(
    `W1 R5: writes ${ms(avg(fastW.w))}, reads ${ms(avg(fastW.r))}. W5 R1: writes ${ms(avg(fastR.w))}, reads ` +
      `${ms(avg(fastR.r))}. Each read returned the latest write: ${fastW.fresh}/${fastW.ops} and ` +
      `${fastR.fresh}/${fastR.ops}.`,
    {
      w1r5: { write_ms: Math.round(avg(fastW.w)), read_ms: Math.round(avg(fastW.r)) },
      w5r1: { write_ms: Math.round(avg(fastR.w)), read_ms: Math.round(avg(fastR.r)) },
    },
  );
  await s.cluster.clearFaults();
  s.step(`The comparison cluster ${other.state.id} is deleted at the end of the scenario.`);
  return {
    expected:
      'W+R<=N is refused; W1 R5 writes faster and reads slower than W5 R1 (the slow replica is on the write path ' +
      'of W5 and the read path of R5); both always read the latest write because W + R > N',
    checks: [
      check(
        'an overlapping-free quorum is refused',
        !illegal.ok && illegal.status === 400,
        illegal.ok ? 'N5 W2 R3 was accepted' : `N5 W2 R3 refused with ${illegal.status}`,
      ),
      check(
        'small W gives fast writes',
        avg(fastW.w) < avg(fastR.w),
        `write latency W1 ${ms(avg(fastW.w))} vs W5 ${ms(avg(fastR.w))}`,
      ),
      check(
        'small R gives fast reads',
        avg(fastR.r) < avg(fastW.r),
        `read latency R1 ${ms(avg(fastR.r))} vs R5 ${ms(avg(fastW.r))}`,
      ),
      check(
        'both configurations read the latest write',
        fastW.fresh === fastW.ops && fastR.fresh === fastR.ops,
        `fresh reads: W1R5 ${fastW.fresh}/${fastW.ops}, W5R1 ${fastR.fresh}/${fastR.ops}`,
      ),
    ],
  };
}

/** N5 W3 R3: two replicas miss an overwrite; one read returns the new value and repairs them. */
export async function readRepair(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const key = 'user:42';
  const oldV = 'email: old@example.com';
  const newV = 'email: new@example.com';
  const cutOff = nodes.slice(-2);
  const rest = nodes.slice(0, -2);
  const coord = rest[0] as string;
  await mustWrite(s.cluster, coord, key, oldV);
  const all = await s.cluster.until(
    async () => {
      const vs = await Promise.all(nodes.map((n) => storedValue(s.cluster, n, key)));
      return vs.every((v) => v === oldV) ? true : undefined;
    },
    2_000,
    20,
  );
  s.step(`${key} = "${oldV}" is stored on all ${nodes.length} replicas${all ? '' : ' (not all within 2 s)'}.`);
  // A partition, not a pause: a paused node's inbox keeps the messages and it would apply the overwrite on resume.
  const part = await must('partitioning', s.cluster.partition(cutOff, rest));
  s.step(
    `${cutOff.join(' and ')} are cut off (a partition drops what is sent to them; a pause would only hold it in ` +
      'their inbox).',
  );
  const w = await s.cluster.write(coord, key, newV);
  s.step(
    w.ok
      ? `Overwrote ${key} = "${newV}" via ${coord}: W=3 acknowledgements came from ${rest.join(', ')}.`
      : `The overwrite failed: ${w.error}`,
  );
  await must('healing', s.cluster.heal(part.partition_id));
  const staleBefore = await Promise.all(cutOff.map((n) => storedValue(s.cluster, n, key)));
  s.step(`Healed. ${cutOff.map((n, i) => `${n} still stores "${staleBefore[i]}"`).join(', ')}.`);
  const repairsBefore = sumStat(await s.cluster.mustState(), 'read_repairs');
  const read = await readValue(s.cluster, coord, key);
  const fixed = await s.cluster.until(
    async () => {
      const vs = await Promise.all(cutOff.map((n) => storedValue(s.cluster, n, key)));
      return vs.every((v) => v === newV) ? true : undefined;
    },
    1_500,
    20,
  );
  const repairsAfter = sumStat(await s.cluster.mustState(), 'read_repairs');
  s.step(
    `A read of ${key} at ${coord} (R=3) returned "${read.value}"; the stale replicas' late replies triggered ` +
      `${repairsAfter - repairsBefore} read repair(s); ${cutOff.join(' and ')} ` +
      `${fixed ? `now store "${newV}"` : 'were not repaired within 1.5 s'}.`,
    { read_repairs: repairsAfter - repairsBefore },
  );
  return {
    expected:
      `the overwrite succeeds with W=3 while ${cutOff.join(' and ')} miss it; a quorum read returns the new value ` +
      'and read repair brings the stale replicas up to date',
    checks: [
      check(
        'the overwrite met W=3 without the cut-off replicas',
        w.ok,
        w.ok ? `acknowledged by ${rest.length} replicas` : `write failed: ${w.error}`,
      ),
      check(
        'the cut-off replicas were stale',
        staleBefore.every((v) => v === oldV),
        `after healing: ${cutOff.map((n, i) => `${n} "${staleBefore[i]}"`).join(', ')}`,
      ),
      check('the read returned the newest value', read.value === newV, `read returned "${read.value}"`),
      check(
        'read repair fixed the stale replicas',
        repairsAfter > repairsBefore && fixed === true,
        `${repairsAfter - repairsBefore} repairs; stale replicas ${fixed ? 'repaired' : 'still stale'}`,
      ),
    ],
  };
}

/** 5 nodes N3 W3 R2: a 2-3 partition; the majority side writes, the minority cannot; heal, anti-entropy, converged. */
export async function networkPartitionHeal(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const minority = nodes.slice(0, 2);
  const majority = nodes.slice(2);
  const part = await must('partitioning', s.cluster.partition(minority, majority));
  s.step(
    `A 2-3 partition: {${minority.join(', ')}} | {${majority.join(', ')}}. Each key has N=3 replicas and a write ` +
      'needs W=3 acknowledgements (sloppy quorum may use stand-ins).',
  );
  const majKeys = ['cart:m1', 'cart:m2', 'cart:m3'];
  const minKeys = ['cart:x1', 'cart:x2'];
  const [majR, minR] = await Promise.all([
    Promise.all(
      majKeys.map((k, i) => s.cluster.write(majority[i % majority.length], k, `${k} from the majority side`)),
    ),
    Promise.all(
      minKeys.map((k, i) => s.cluster.write(minority[i % minority.length], k, `${k} from the minority side`)),
    ),
  ]);
  const majOk = majR.filter((r) => r.ok).length;
  const minFailed = minR.filter((r) => !r.ok && r.status === 409).length;
  const hints = sumStat(await s.cluster.mustState(), 'hints_stored');
  s.step(
    `Majority side: ${majOk}/${majKeys.length} writes accepted (${hints} hinted copies held by stand-ins for ` +
      `replicas across the split). Minority side: ${minFailed}/${minKeys.length} refused with 409 ` +
      `(${minR.map((r) => (r.ok ? 'ok' : r.error)).join('; ')}): two nodes cannot give three acknowledgements.`,
    { majority_ok: majOk, minority_refused: minFailed, hints_stored: hints },
  );
  await must('healing', s.cluster.heal(part.partition_id));
  const ae = await s.cluster.antiEntropy(3_000);
  s.step(
    `Healed. Hinted handoff returns the stand-ins' copies and a Merkle anti-entropy round reconciles the rest: ` +
      (ae.ok
        ? `${ae.body.divergent_keys} divergent key(s), ${ae.body.reconciled} reconciled, ` +
          `converged: ${ae.body.converged_after}`
        : ae.error) +
      '.',
  );
  const conv = await converged(s.cluster, 3_000);
  const fromMinority = await Promise.all(majKeys.map((k) => readValue(s.cluster, minority[0] as string, k)));
  const visible = fromMinority.filter((r, i) => r.value === `${majKeys[i]} from the majority side`).length;
  const ghosts = await Promise.all(minKeys.map((k) => readValue(s.cluster, majority[0] as string, k)));
  const ghostCount = ghosts.filter((g) => g.value !== null).length;
  s.step(
    `From ${minority[0]}, ${visible}/${majKeys.length} majority writes are ` +
      'visible.' +
      (ghostCount > 0
        ? ` ${ghostCount} refused minority write(s) are visible too: a failed quorum write is not rolled back ` +
          'on the replicas that took it.'
        : ''),
  );
  return {
    expected:
      'the majority side keeps accepting writes (W=3 reachable), the minority side refuses them; after healing ' +
      'anti-entropy makes every replica agree and the majority writes are readable everywhere',
    checks: [
      check('the majority side accepted writes', majOk === majKeys.length, `${majOk}/${majKeys.length} accepted`),
      check(
        'the minority side refused writes',
        minFailed === minKeys.length,
        `${minFailed}/${minKeys.length} refused with 409`,
      ),
      check(
        'anti-entropy converged the replicas',
        ae.ok && ae.body.converged_after && conv,
        ae.ok
          ? `anti-entropy converged_after ${ae.body.converged_after}, convergence check ${conv}`
          : `anti-entropy failed: ${ae.error}`,
      ),
      check(
        'majority writes are readable from the former minority',
        visible === majKeys.length,
        `${visible}/${majKeys.length} visible from ${minority[0]}`,
      ),
    ],
  };
}

/** 5 nodes N3 W2 R2: nodes fail one after another; sloppy quorum keeps writes going until fewer than W nodes remain. */
export async function cascadingFailure(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const coord = nodes[0] as string;
  const victims = nodes.slice(1).reverse();
  const w = s.state.config.quorum_w;
  const stages: Array<{ down: string[]; ok: number; tried: number; keys: Array<{ key: string; value: string }> }> = [];
  const down: string[] = [];
  for (const v of victims) {
    await must('pausing', s.cluster.pause(v));
    down.push(v);
    const keys = [0, 1, 2].map((i) => ({
      key: `stage${down.length}-key${i}`,
      value: `written with ${down.length} node(s) down`,
    }));
    const rs = await Promise.all(keys.map((k) => s.cluster.write(coord, k.key, k.value)));
    const ok = rs.filter((r) => r.ok).length;
    stages.push({ down: [...down], ok, tried: keys.length, keys: keys.filter((_, i) => rs[i]?.ok) });
    const online = nodes.length - down.length;
    const refusal = rs.find((r) => !r.ok);
    const why = refusal !== undefined && !refusal.ok ? `; refused: ${refusal.error}` : '';
    const sloppy =
      online >= w && ok === keys.length ? ' (stand-ins hold copies for the failed replicas: sloppy quorum)' : '';
    s.step(
      `${v} fails (${down.length} down, ${online} online). ${ok}/${keys.length} writes via ` +
        `${coord} succeed${why}${sloppy}.`,
      { down: down.length, online, accepted: ok },
    );
  }
  const stateDown = await s.cluster.mustState();
  const hintsStored = sumStat(stateDown, 'hints_stored');
  for (const v of [...down].reverse()) await must('resuming', s.cluster.resume(v));
  s.step(
    `All nodes recover. Stand-ins stored ${hintsStored} hinted copies; hinted handoff now delivers them to their ` +
      'home replicas.',
  );
  const delivered = await s.cluster.until(
    async () => {
      const st = await s.cluster.mustState();
      return sumStat(st, 'hints_held') === 0 && sumStat(st, 'hints_delivered') > 0
        ? sumStat(st, 'hints_delivered')
        : undefined;
    },
    3_000,
    50,
  );
  const acked = stages.flatMap((st) => st.keys);
  const reads = await Promise.all(acked.map((k) => readValue(s.cluster, nodes[nodes.length - 1] as string, k.key)));
  const readable = reads.filter((r, i) => r.value === acked[i]?.value).length;
  s.step(
    `${delivered ?? 0} hinted copies delivered; ${readable}/${acked.length} acknowledged writes are readable ` +
      `from ${nodes[nodes.length - 1]}.`,
    { hints_delivered: delivered ?? 0 },
  );
  const whileQuorum = stages.filter((st) => nodes.length - st.down.length >= w);
  const belowQuorum = stages.filter((st) => nodes.length - st.down.length < w);
  return {
    expected:
      `writes keep succeeding while at least W=${w} nodes are up, thanks to sloppy quorum and hinted handoff; with ` +
      'fewer they are refused; after recovery the hints are handed off and every acknowledged write is readable',
    checks: [
      check(
        'writes succeeded while W nodes were up',
        whileQuorum.length > 0 && whileQuorum.every((st) => st.ok === st.tried),
        whileQuorum.map((st) => `${st.down.length} down: ${st.ok}/${st.tried}`).join(', '),
      ),
      check(
        'writes were refused below W nodes',
        belowQuorum.length > 0 && belowQuorum.every((st) => st.ok === 0),
        belowQuorum.map((st) => `${st.down.length} down: ${st.ok}/${st.tried}`).join(', ') || 'never below W',
      ),
      check('stand-ins held hints', hintsStored > 0, `${hintsStored} hinted copies stored`),
      check(
        'hints were handed off and every acknowledged write is readable',
        delivered !== undefined && readable === acked.length,
        `${delivered ?? 0} hints delivered; ${readable}/${acked.length} readable`,
      ),
    ],
  };
}

/**
 * 5 nodes N3 W2 R2: 50 concurrent writes to one key, then a bigger stampede while one of the key's
 * replicas stalls; its bounded inbox overflows and the drops are counted. Every request is
 * answered, and the replicas converge on the newest write.
 */
export async function thunderingHerd(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const key = 'ticket:last-seat';
  const clients = 50;
  // While a replica stalls: more messages for it than its inbox holds (256 by default), sent as
  // batches (write-batch) so they reach the coordinators at once, before the stalled node is suspected.
  const burstBatches = 4;
  const burstBatchSize = 100;
  const burstsMax = 3;
  const replicas = (await must('placement', s.cluster.placement(key, s.state.config.quorum_n))).preference_list;
  const stalled = replicas[replicas.length - 1] as string;
  const droppedBefore = (await s.cluster.mustState()).dropped_messages ?? 0;
  const metricBefore = metricSample(await s.api.metricsText(), 'sim_dropped_messages_total', {
    cluster_id: s.state.id,
  });
  const acked: KVEntry[] = [];
  const attempted = new Set<string>();
  let answered = 0;
  let refused = 0;
  let other = 0;
  let buyer = 0;
  const reasons = new Set<string>();
  const nextValue = (): string => {
    const v = `sold to buyer ${buyer++}`;
    attempted.add(v);
    return v;
  };

  s.step(
    `${clients} clients write ${key} at the same instant, through all ${nodes.length} coordinators. Its replicas ` +
      `are ${replicas.join(', ')}.`,
  );
  const started = performance.now();
  const herd = await Promise.all(
    Array.from({ length: clients }, (_, i) => s.cluster.write(nodes[i % nodes.length], key, nextValue())),
  );
  const herdMs = performance.now() - started;
  for (const r of herd) {
    answered++;
    if (r.ok) acked.push(r.body.entry);
    else if (r.status === 409) {
      refused++;
      reasons.add(r.error);
    } else other++;
  }
  const lat = herd.map((r) => r.ms).sort((a, b) => a - b);
  s.step(
    `All ${clients} answered within ${ms(herdMs)} (median ${ms(lat[Math.floor(lat.length / 2)] ?? 0)}): ` +
      `${acked.length} acknowledged, ${refused} refused with 409, ${other} other.`,
  );

  await must('pausing', s.cluster.pause(stalled));
  const coordinators = nodes.filter((n) => n !== stalled);
  s.step(
    `${stalled} stalls (paused, like a long GC pause) and ${burstBatches * burstBatchSize} more writes arrive ` +
      `together (${burstBatches} batches of ${burstBatchSize}) through ${coordinators.join(', ')}: messages for ` +
      `${stalled} wait in its inbox, which is bounded.`,
  );
  let bursts = 0;
  let dropped = 0;
  let burstOk = 0;
  while (bursts < burstsMax) {
    const batches = await Promise.all(
      Array.from({ length: burstBatches }, (_, b) =>
        s.cluster.writeBatch(
          Array.from({ length: burstBatchSize }, (_, i) => ({
            key,
            value: nextValue(),
            target_node_id: coordinators[(b * burstBatchSize + i) % coordinators.length] as string,
          })),
        ),
      ),
    );
    bursts++;
    for (const b of batches) {
      answered += b.ok ? b.body.results.length : burstBatchSize;
      if (!b.ok) {
        other += burstBatchSize;
        reasons.add(b.error);
        continue;
      }
      for (const r of b.body.results) {
        if ('entry' in r) {
          acked.push(r.entry);
          burstOk++;
        } else {
          refused++;
          reasons.add(r.error);
        }
      }
    }
    dropped = ((await s.cluster.mustState()).dropped_messages ?? 0) - droppedBefore;
    if (dropped > 0) break;
  }
  const why = [...reasons].slice(0, 2).join('; ');
  s.step(
    `${bursts} burst(s): ${burstOk} writes acknowledged (W=2 can be met without ` +
      `${stalled})${why === '' ? '' : `, the others refused (${why})`}. ` +
      (dropped > 0
        ? `${stalled}'s inbox filled up: the fabric dropped ${dropped} message(s) and counted them ` +
          '(dropped_messages).'
        : `No queue filled up within ${burstsMax} bursts.`),
    { bursts, dropped_messages: dropped },
  );

  await must('resuming', s.cluster.resume(stalled));
  const ae = await s.cluster.antiEntropy(3_000);
  const conv = await converged(s.cluster, 3_000);
  const newestAcked = lwwWinner(acked);
  const finals = await Promise.all(nodes.map((n) => readValue(s.cluster, n, key)));
  const droppedTotal = ((await s.cluster.mustState()).dropped_messages ?? 0) - droppedBefore;
  // The counter is brought up to date on each scrape; poll until it has caught up.
  const metric =
    (await s.cluster.until(
      async () => {
        const m =
          metricSample(await s.api.metricsText(), 'sim_dropped_messages_total', { cluster_id: s.state.id }) -
          metricBefore;
        return m === droppedTotal ? m : undefined;
      },
      1_000,
      50,
    )) ??
    metricSample(await s.api.metricsText(), 'sim_dropped_messages_total', { cluster_id: s.state.id }) - metricBefore;
  const final = finals[0];
  const finalIsNewest =
    final !== undefined &&
    final.value !== null &&
    attempted.has(final.value) &&
    final.timestamp !== null &&
    newestAcked !== undefined &&
    final.timestamp >= newestAcked.timestamp;
  s.step(
    `${stalled} resumes; anti-entropy ${ae.ok ? `reconciled ${ae.body.reconciled} key(s)` : 'failed'}. Every ` +
      `replica reads "${final?.value}"; the newest acknowledged write was ` +
      `"${newestAcked ? entryValue(newestAcked) : '-'}"` +
      (final?.value !== (newestAcked ? entryValue(newestAcked) : null)
        ? ' (a refused write can still win: replicas that took it keep it, it is not rolled back)'
        : '') +
      '. ' +
      `Every other write to the key was overwritten. Drops: ${droppedTotal} in ClusterState, ${metric} in ` +
      'sim_dropped_messages_total.',
    { dropped_messages: droppedTotal, metric_delta: metric },
  );
  return {
    expected:
      'every request gets an answer (acknowledged or an explicit 409, never a hang or a 5xx); the stalled ' +
      "replica's bounded inbox overflows and the drops are counted, in ClusterState and /metrics alike; after it " +
      'resumes the replicas converge on the newest write (last-writer-wins: every other write is lost)',
    checks: [
      check(
        'every request was answered',
        other === 0,
        `${acked.length} acknowledged, ${refused} refused, ${other} other answers out of ${answered}`,
      ),
      check(
        'back-pressure drops were counted',
        droppedTotal > 0 && metric === droppedTotal,
        droppedTotal > 0
          ? `${droppedTotal} drops in ClusterState, ${metric} in sim_dropped_messages_total`
          : `no queue filled up within ${burstsMax} bursts (is FABRIC_INBOX_MAX set very high?)`,
      ),
      check(
        'replicas converged on one value',
        conv && finals.every((f) => f.value === final?.value && f.value !== null),
        `final reads: ${[...new Set(finals.map((f) => `"${f.value}"`))].join(', ')}`,
      ),
      check(
        'the value is the newest write (LWW)',
        finalIsNewest,
        `kept "${final?.value}" (timestamp ${final?.timestamp}); newest acknowledged ` +
          `"${newestAcked ? entryValue(newestAcked) : '-'}" (timestamp ${newestAcked?.timestamp})`,
      ),
    ],
  };
}

/** 5 nodes N3 W2 R2: 80% of the load on one key (the rest Zipf-distributed); per-node load shown. */
export async function hotKeyZipfian(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const ops = 200;
  const coldKeys = 20;
  // Zipf(1) over the cold keys: P(k) proportional to 1/k.
  const weights = Array.from({ length: coldKeys }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const pickCold = (): number => {
    let x = s.rng.next() * total;
    for (let i = 0; i < coldKeys; i++) {
      x -= weights[i] as number;
      if (x <= 0) return i;
    }
    return coldKeys - 1;
  };
  const plan = Array.from({ length: ops }, (_, i) =>
    s.rng.chance(0.8) ? 'hot:homepage' : `cold:${pickCold() + 1}`,
  ).map((key, i) => ({ key, node: nodes[i % nodes.length] as string }));
  const hotShare = plan.filter((p) => p.key === 'hot:homepage').length / ops;
  const pl = await must('placement', s.cluster.placement('hot:homepage', s.state.config.quorum_n));
  const replicas = pl.preference_list;
  s.step(
    `${ops} writes, ${Math.round(hotShare * 100)}% to hot:homepage and the rest over ${coldKeys} keys with a ` +
      `Zipf distribution, spread over all coordinators. hot:homepage lives on ${replicas.join(', ')}.`,
    { hot_share: hotShare, hot_replicas: replicas },
  );
  const before = await s.cluster.mustState();
  const rs = await pool(plan, 16, (p, i) => s.cluster.write(p.node, p.key, `write ${i}`));
  const okCount = rs.filter((r) => r.ok).length;
  await s.sleep(200);
  const after = await s.cluster.mustState();
  const load = Object.fromEntries(
    nodes.map((n) => [n, nodeStat(after, n, 'applied') - nodeStat(before, n, 'applied')]),
  );
  s.step(
    'Versions applied per node: ' +
      `${nodes.map((n) => `${n} ${load[n]}${replicas.includes(n) ? ' (hot replica)' : ''}`).join(', ')}. The hot ` +
      `key's replicas do the work; adding nodes would not help them.`,
    { applied_per_node: load },
  );
  const hotMin = Math.min(...replicas.map((n) => load[n] ?? 0));
  const others = nodes.filter((n) => !replicas.includes(n));
  const coldMax = others.length === 0 ? 0 : Math.max(...others.map((n) => load[n] ?? 0));
  return {
    expected:
      'about 80% of the writes hit one key; its N replicas apply far more versions than any other node (a hot spot ' +
      'that adding nodes does not relieve)',
    checks: [
      check(
        'the load was skewed towards one key',
        hotShare >= 0.7 && hotShare <= 0.9,
        `${Math.round(hotShare * 100)}% of writes on hot:homepage`,
      ),
      check('every write succeeded', okCount === ops, `${okCount}/${ops} acknowledged`),
      check(
        "the hot key's replicas carried the most load",
        others.length > 0 && hotMin > coldMax * 2,
        `least loaded hot replica ${hotMin} versions, most loaded other node ${coldMax}`,
      ),
    ],
  };
}

/** 5 nodes N3 W2 R2: one link's drop rate toggled 1.0 / 0.0; writes still succeed; replicas converge. */
export async function networkFlapping(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const from = nodes[0] as string;
  const to = nodes[1] as string;
  // Keys whose replicas include `to`, so the flapping link is on their write path.
  const keys: string[] = [];
  for (let i = 0; keys.length < 4 && i < 60; i++) {
    const pl = await must('placement', s.cluster.placement(`session:${i}`, s.state.config.quorum_n));
    if (pl.preference_list.includes(to)) keys.push(`session:${i}`);
  }
  const droppedBefore = fabricStat(await s.cluster.mustState(), 'dropped_rate');
  s.step(
    `The link ${from} -> ${to} will flap: drop rate 1.0, then 0.0, six times. Writes go through ${from} to keys ` +
      `replicated on ${to} (${keys.join(', ')}).`,
  );
  let tried = 0;
  let ok = 0;
  const cycles = 6;
  for (let c = 0; c < cycles; c++) {
    for (const rate of [1, 0]) {
      await must('setting the drop rate', s.cluster.drop(from, to, rate));
      const rs = await Promise.all(keys.map((k) => s.cluster.write(from, k, `cycle ${c} rate ${rate}`)));
      tried += rs.length;
      ok += rs.filter((r) => r.ok).length;
      await s.sleep(60);
    }
  }
  const droppedAfter = fabricStat(await s.cluster.mustState(), 'dropped_rate');
  s.step(
    `${ok}/${tried} writes succeeded while the link flapped; the fabric dropped ${droppedAfter - droppedBefore} ` +
      'message(s) on it (W=2 was met by the other replicas).',
    { writes: tried, accepted: ok, dropped: droppedAfter - droppedBefore },
  );
  const ae = await s.cluster.antiEntropy(3_000);
  const conv = await converged(s.cluster, 3_000);
  s.step(
    'The link is steady again; anti-entropy ' +
      (ae.ok
        ? `found ${ae.body.divergent_keys} divergent key(s) and converged: ${ae.body.converged_after}`
        : `failed: ${ae.error}`) +
      '.',
  );
  return {
    expected:
      'writes keep succeeding while the link flaps (other replicas meet W); the fabric counts the dropped ' +
      'messages; once steady, anti-entropy makes the replicas agree',
    checks: [
      check('writes succeeded throughout', tried > 0 && ok === tried, `${ok}/${tried} acknowledged`),
      check(
        'the flapping link dropped messages',
        droppedAfter > droppedBefore,
        `${droppedAfter - droppedBefore} messages dropped by the drop rate`,
      ),
      check('the replicas converged afterwards', conv && (!ae.ok || ae.body.converged_after), `convergence ${conv}`),
    ],
  };
}

/** N3 W2 R2: one node's clock 5 s behind; the causally later write still wins (HLC). */
export async function clockSkewLWW(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const first = nodes[0] as string;
  const skewed = nodes[nodes.length - 1] as string;
  const skewMs = -5_000;
  await must('skewing the clock', s.cluster.clockSkew(skewed, skewMs));
  s.step(`${skewed}'s physical clock is set ${-skewMs / 1000} s behind.`);
  const w1 = await mustWrite(s.cluster, first, 'doc:status', 'draft (written on ' + first + ')');
  s.step(`${first} writes doc:status = "draft"; its timestamp ${w1.entry.timestamp}.`);
  const seen = await readValue(s.cluster, skewed, 'doc:status');
  s.step(
    `${skewed} reads doc:status and sees "${seen.value}" (it observes the timestamp and merges it into its ` +
      'hybrid logical clock).',
  );
  const w2 = await mustWrite(
    s.cluster,
    skewed,
    'doc:status',
    'published (written on ' + skewed + ' after reading the draft)',
  );
  // The most the skewed physical clock can have read while the write was in progress.
  const physicalNs = (Date.now() + skewMs) * 1e6;
  s.step(
    `${skewed} then writes "published". Its physical clock reads about ${Math.round(physicalNs / 1e6)} ms (5 s ` +
      `behind), yet the write's timestamp is ${w2.entry.timestamp}, ` +
      `${((w2.entry.timestamp - w1.entry.timestamp) / 1e6).toFixed(3)} ms after the draft's.`,
    { draft_ts: w1.entry.timestamp, published_ts: w2.entry.timestamp },
  );
  const finals = await Promise.all(nodes.map((n) => readValue(s.cluster, n, 'doc:status')));
  s.step(
    `Every node now reads ${[...new Set(finals.map((f) => `"${f.value}"`))].join(' / ')}: last-writer-wins ` +
      'picked the causally later write. With plain physical timestamps the draft, stamped 5 s "later", would have ' +
      'won and the publication would have vanished.',
  );
  await s.cluster.clockSkew(skewed, 0);
  const published = entryValue(w2.entry);
  return {
    expected:
      `the write made on ${skewed} after reading the draft gets a larger hybrid-logical-clock timestamp despite ` +
      'the 5 s skew, so last-writer-wins keeps it on every node',
    checks: [
      check('the skewed node saw the first write', seen.value !== null, `${skewed} read "${seen.value}"`),
      check(
        'the later write has the larger timestamp',
        w2.entry.timestamp > w1.entry.timestamp,
        `draft ${w1.entry.timestamp} < published ${w2.entry.timestamp}: ${w2.entry.timestamp > w1.entry.timestamp}`,
      ),
      check(
        'the timestamp did not come from the skewed physical clock',
        w2.entry.timestamp > physicalNs,
        `published timestamp is ${((w2.entry.timestamp - physicalNs) / 1e9).toFixed(2)} s ahead of anything ` +
          `${skewed}'s physical clock could have read`,
      ),
      check(
        'every node keeps the causally later write',
        finals.every((f) => f.value === published),
        `final values: ${finals.map((f, i) => `${nodes[i]} "${f.value}"`).join(', ')}`,
      ),
    ],
  };
}

/** N3 W2 R2: one replica's copy overwritten with an older bad value; anti-entropy heals it. */
export async function corruptReplica(s: ScriptContext): Promise<ScriptOutcome> {
  const nodes = s.state.node_ids;
  const keys = Array.from({ length: 10 }, (_, i) => `acct:${i}`);
  await pool(keys, 5, (k, i) => mustWrite(s.cluster, nodes[i % nodes.length], k, `balance ${100 + i}`));
  const settled = await converged(s.cluster, 2_000);
  s.step(
    `Wrote ${keys.length} accounts; every key's N=${s.state.config.quorum_n} replicas ` +
      `${settled ? 'agree' : 'did not agree within 2 s'}.`,
  );
  const victimKey = 'acct:3';
  const good = 'balance 103';
  const pl = await must('placement', s.cluster.placement(victimKey, s.state.config.quorum_n));
  const victim = pl.preference_list[1] as string;
  await must('corrupting', s.cluster.corrupt(victim, victimKey, 'balance -999 (bit rot)'));
  const stored = await storedValue(s.cluster, victim, victimKey);
  const conv = await s.cluster.convergence();
  const detected = conv.ok && conv.body.diverged.some((d) => d.key === victimKey);
  s.step(
    `${victim}'s copy of ${victimKey} silently became "${stored}" (an older timestamp, no replication). The ` +
      `convergence check ${detected ? `reports ${victimKey} diverged` : 'did not see it'}.`,
    { victim, key: victimKey },
  );
  const ae = await s.cluster.antiEntropy(3_000);
  s.step(
    'A Merkle anti-entropy round: the replicas compare tree roots, descend only into differing buckets, and ' +
      'exchange ' +
      (ae.ok
        ? `${ae.body.divergent_keys} divergent key(s); converged: ${ae.body.converged_after}`
        : `nothing (${ae.error})`) +
      '.',
  );
  const healed = await storedValue(s.cluster, victim, victimKey);
  const reads = await Promise.all(nodes.map((n) => readValue(s.cluster, n, victimKey)));
  s.step(
    `${victim} stores "${healed}" again; reads on every node return ` +
      `${[...new Set(reads.map((r) => `"${r.value}"`))].join(' / ')}.`,
  );
  return {
    expected:
      `the corrupted copy on ${victim} is detected as a divergence and a Merkle anti-entropy round replaces it ` +
      'with the correct, newer version',
    checks: [
      check('the replica was corrupted', stored === 'balance -999 (bit rot)', `${victim} stored "${stored}"`),
      check(
        'the divergence was detected',
        detected || (ae.ok && ae.body.divergent_keys > 0),
        `convergence check ${detected ? 'flagged' : 'missed'} ${victimKey}; anti-entropy saw ` +
          `${ae.ok ? ae.body.divergent_keys : '?'} divergent key(s)`,
      ),
      check(
        'anti-entropy healed the replica',
        ae.ok && ae.body.converged_after && healed === good,
        `${victim} now stores "${healed}"`,
      ),
      check(
        'every read returns the correct value',
        reads.every((r) => r.value === good),
        `reads: ${reads.map((r, i) => `${nodes[i]} "${r.value}"`).join(', ')}`,
      ),
    ],
  };
}
