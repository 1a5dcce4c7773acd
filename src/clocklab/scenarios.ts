/**
 * The pre-built scenarios of the clock lab. Each one resets the simulation, drives it through a
 * short story on virtual time (so a run is instant and replays exactly), narrates every step as a
 * `scenario_step` event and ends with a verdict computed from the events it observed. Scenarios
 * only call the lab's public operations; they hold no protocol logic of their own.
 */
import { invariant } from '../util/assert.js';
import type { EmitFn, EventData, LabEventType } from './events.js';
import type { Lab } from './lab.js';
import type { Outcome } from './outcome.js';
import { scenarioSettleMsMax } from './limits.js';

export interface Verdict {
  passed: boolean;
  summary: string;
  facts: Record<string, unknown>;
}

export interface ScenarioReport {
  scenario: string;
  steps: string[];
  verdict: Verdict;
  time_ms: number;
}

interface Seen {
  type: LabEventType;
  data: EventData;
}

/** What a scenario body gets: the lab, a narrator and the events seen so far. */
interface Ctx {
  lab: Lab;
  step(text: string, data?: EventData): void;
  seen: Seen[];
  settle(): void;
}

interface ScenarioDef {
  name: string;
  description: string;
  run(ctx: Ctx): Verdict;
}

function must<T>(r: Outcome<T>): T {
  invariant(r.ok, () => `scenario operation failed: ${r.ok ? '' : r.error.message}`);
  return r.value;
}

const delivered = (seen: Seen[], to?: string) =>
  seen
    .filter((e) => e.type === 'message_delivered' && (to === undefined || e.data['to'] === to))
    .map((e) => e.data['id'] as string);
const count = (seen: Seen[], type: LabEventType) => seen.filter((e) => e.type === type).length;

const scenarios: ScenarioDef[] = [
  {
    name: 'BasicLamport',
    description:
      'Three processes with Lamport clocks exchange messages: every receive is stamped after ' +
      'its send (IR1, IR2), yet concurrent events can carry equal or ordered stamps.',
    run({ lab, step, seen, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'scalar'));
      step('Spawned p1, p2, p3 with scalar (Lamport) clocks at 0.');
      must(lab.internalEvent('p1', 'a'));
      must(lab.internalEvent('p3', 'e'));
      step('p1 performs event a and p3 performs event e: both clocks read 1, yet a and e are concurrent.');
      const m1 = must(lab.send('p1', 'p2', 'hello p2'));
      step(`p1 sends ${m1.id} to p2 stamped ${m1.lamport} (IR1: a send is an event).`);
      settle();
      must(lab.internalEvent('p2', 'b'));
      const m2 = must(lab.send('p2', 'p3', 'hello p3'));
      step(
        `p2 received ${m1.id} (IR2: max(own, ${m1.lamport}) + 1), did event b and sent ${m2.id} stamped ${m2.lamport}.`,
      );
      settle();
      const m3 = must(lab.send('p3', 'p1', 'hello p1'));
      step(`p3 received ${m2.id} and replied with ${m3.id} stamped ${m3.lamport}.`);
      settle();
      // Clock condition: the receiver's clock after a receive exceeds the message's stamp.
      let checked = 0;
      let held = true;
      for (let i = 0; i < seen.length; i++) {
        const e = seen[i] as Seen;
        if (e.type !== 'message_delivered') continue;
        const tick = seen.slice(i + 1).find((x) => x.type === 'clock_tick' && x.data['process'] === e.data['to']);
        checked++;
        if (!tick || !((tick.data['lamport'] as number) > (e.data['lamport'] as number))) held = false;
      }
      const final = Object.fromEntries(lab.processes().map((p) => [p.id, p.lamport]));
      step(`Final Lamport clocks: ${JSON.stringify(final)}.`);
      return {
        passed: held && checked === 3,
        summary: held
          ? 'Every receive was stamped later than its send, so a → b implies L(a) < L(b); events a ' +
            'and e are concurrent yet both carry 1: Lamport clocks cannot detect concurrency.'
          : 'A receive was not stamped later than its send: the Lamport clock condition failed.',
        facts: { messages_checked: checked, clock_condition_held: held, final_clocks: final },
      };
    },
  },
  {
    name: 'Snapshot3P',
    description:
      'Three processes move money between them while p1 takes a Chandy–Lamport snapshot; the ' +
      'recorded cut is consistent and the total is conserved, in-transit transfers included.',
    run({ lab, step, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'vector'));
      for (const [a, b] of [
        ['p1', 'p2'],
        ['p2', 'p3'],
        ['p3', 'p1'],
      ] as const)
        must(lab.setChannelFaults(a, b, { delay_ms: 30 }));
      const total = lab.totalBalance();
      step(`Spawned p1, p2, p3 with ${total / 3} each; the ring channels p1→p2→p3→p1 take 30 ms, the others 10 ms.`);
      must(lab.send('p1', 'p2', 'transfer', 10));
      must(lab.send('p2', 'p3', 'transfer', 20));
      must(lab.send('p3', 'p1', 'transfer', 5));
      step('Transfers in flight: p1→p2 10, p2→p3 20, p3→p1 5.');
      lab.advance(5);
      const snap = must(lab.startSnapshot('p1'));
      step(`At ${lab.now} ms p1 records its state and sends markers on every outgoing channel (snapshot ${snap.id}).`);
      must(lab.send('p2', 'p1', 'transfer', 7));
      step('p2 sends 7 more to p1 while the markers travel.');
      settle();
      const view = must(lab.snapshot(snap.id));
      const v = must(lab.verifySnapshot(snap.id));
      const balances = Object.fromEntries(Object.entries(view.processes).map(([id, p]) => [id, p.balance]));
      const transit = view.channels.flatMap((c) => c.messages.map((m) => `${m.id} ${c.from}→${c.to} ${m.amount}`));
      step(
        `Recorded balances ${JSON.stringify(balances)}; in transit: ` +
          `${transit.length > 0 ? transit.join(', ') : 'nothing'}.`,
      );
      step(
        `Verify: ${v.consistent ? 'consistent' : `inconsistent (${v.reasons.join('; ')})`}; ` +
          `recorded total ${view.total_balance} of ${total}.`,
      );
      const passed = v.consistent && view.total_balance === total;
      return {
        passed,
        summary: passed
          ? `The snapshot is a consistent cut and conserves the money: ${view.total_balance} ` +
            `recorded, ${transit.length} transfer(s) counted in transit.`
          : `The snapshot failed: consistent=${v.consistent}, recorded total ${view.total_balance} of ${total}.`,
        facts: {
          snapshot: snap.id,
          consistent: v.consistent,
          recorded_total: view.total_balance,
          expected_total: total,
          in_transit: v.in_transit,
          balances,
        },
      };
    },
  },
  {
    name: 'FalseConflict',
    description:
      'P1 writes x; P2 reads it (its clock now covers the write); P2 writes x. P2’s vector ' +
      'dominates P1’s, so no conflict is raised.',
    run({ lab, step, seen }) {
      for (const p of ['p1', 'p2']) must(lab.spawn(p, 'vector'));
      step('Spawned p1 and p2 with vector clocks.');
      const w1 = must(lab.kvWrite('x', 'v1', 'p1'));
      step(`p1 writes x = v1 with version ${JSON.stringify(w1.written.version)}.`);
      must(lab.kvRead('x', 'p2'));
      const p2 = must(lab.process('p2'));
      step(`p2 reads x: its vector clock becomes ${JSON.stringify(p2.vector)}, which covers p1's write.`);
      const w2 = must(lab.kvWrite('x', 'v2', 'p2'));
      step(
        `p2 writes x = v2 with version ${JSON.stringify(w2.written.version)}: it dominates ` +
          `${JSON.stringify(w1.written.version)}, so it replaces it.`,
      );
      const r = must(lab.kvRead('x'));
      const conflicts = count(seen, 'kv_conflict');
      const passed = r.versions.length === 1 && !r.conflict && conflicts === 0 && r.versions[0]?.value === 'v2';
      return {
        passed,
        summary: passed
          ? 'One version (v2), no conflict: the second write causally follows the first.'
          : `Expected one version and no conflict, got ${r.versions.length} version(s), conflict=${r.conflict}.`,
        facts: { versions: r.versions, conflict: r.conflict, kv_conflict_events: conflicts },
      };
    },
  },
  {
    name: 'ConcurrentWrites',
    description:
      'P1 and P2 write the same key without seeing each other’s write: the versions are ' +
      'concurrent, kv_conflict fires and the configured strategy decides.',
    run({ lab, step, seen }) {
      for (const p of ['p1', 'p2']) must(lab.spawn(p, 'vector'));
      must(lab.internalEvent('p2', 'warm-up'));
      must(lab.internalEvent('p2', 'warm-up'));
      step(
        'Spawned p1 and p2; p2 performed two internal events so its Lamport clock runs ahead. ' +
          `Strategy: ${lab.conflictStrategy}.`,
      );
      const w1 = must(lab.kvWrite('x', 'from-p1', 'p1'));
      step(
        `p1 writes x = from-p1 with version ${JSON.stringify(w1.written.version)} at Lamport ${w1.written.timestamp}.`,
      );
      const w2 = must(lab.kvWrite('x', 'from-p2', 'p2'));
      step(
        `p2, which never saw p1's write, writes x = from-p2 with version ` +
          `${JSON.stringify(w2.written.version)} at Lamport ${w2.written.timestamp}: neither ` +
          'vector dominates.',
      );
      const r = must(lab.kvRead('x'));
      const conflicts = count(seen, 'kv_conflict');
      const resolved = count(seen, 'kv_resolved');
      const strategy = lab.conflictStrategy;
      const expected: Record<string, string> = { lww: 'from-p2', first_writer: 'from-p1', merge: 'from-p1|from-p2' };
      const passed =
        conflicts === 1 &&
        (strategy === 'keep_all'
          ? r.versions.length === 2 && r.conflict
          : r.versions.length === 1 && resolved === 1 && r.versions[0]?.value === expected[strategy]);
      step(
        strategy === 'keep_all'
          ? `keep_all retains both siblings: ${r.versions.map((v) => v.value).join(', ')}.`
          : `${strategy} resolved the conflict to ${r.versions[0]?.value}.`,
      );
      return {
        passed,
        summary: passed
          ? 'The concurrent writes were detected (kv_conflict) and ' +
            `${strategy === 'keep_all' ? 'both kept as siblings' : `resolved by ${strategy}`}.`
          : 'The concurrent writes were not handled as the strategy prescribes.',
        facts: {
          strategy,
          versions: r.versions,
          conflict: r.conflict,
          kv_conflict_events: conflicts,
          kv_resolved_events: resolved,
        },
      };
    },
  },
  {
    name: 'CausalViolation',
    description:
      'With immediate delivery, p3 receives p2’s reply to p1’s message before p1’s message ' +
      'itself: the effect overtakes its cause.',
    run({ lab, step, seen, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'vector'));
      lab.setDeliveryMode('immediate');
      must(lab.setChannelFaults('p1', 'p3', { delay_ms: 100 }));
      step('Delivery mode immediate (no hold-back queue); the channel p1→p3 takes 100 ms, the others 10 ms.');
      const m1 = must(lab.send('p1', 'p3', 'cause'));
      const m2 = must(lab.send('p1', 'p2', 'cause, copy for p2'));
      step(`p1 sends ${m1.id} to p3 (slow) and ${m2.id} to p2.`);
      lab.advance(15);
      const m3 = must(lab.send('p2', 'p3', 'effect'));
      step(`p2 delivered ${m2.id} and sends ${m3.id} to p3: send(${m1.id}) → send(${m3.id}).`);
      settle();
      const order = delivered(seen, 'p3');
      const violations = count(seen, 'causal_violation');
      step(`p3 delivered ${order.join(' then ')}.`);
      lab.setDeliveryMode('causal');
      step('Delivery mode restored to causal.');
      const passed = violations === 1 && order[0] === m3.id;
      return {
        passed,
        summary: passed
          ? `p3 delivered ${m3.id} before its causal predecessor ${m1.id}: a causal violation, ` +
            'which the hold-back queue prevents (see CausalDelivery).'
          : 'The expected causal violation did not show.',
        facts: { delivery_order_at_p3: order, causal_violations: violations },
      };
    },
  },
  {
    name: 'CausalDelivery',
    description:
      'The same race under causal delivery: the effect is held back until its cause arrives, ' +
      'for a unicast (RST matrices) and for a broadcast (BSS vectors).',
    run({ lab, step, seen, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'vector'));
      lab.setDeliveryMode('causal');
      must(lab.setChannelFaults('p1', 'p3', { delay_ms: 100 }));
      step('Delivery mode causal; the channel p1→p3 takes 100 ms, the others 10 ms.');
      const m1 = must(lab.send('p1', 'p3', 'cause'));
      const m2 = must(lab.send('p1', 'p2', 'cause, copy for p2'));
      lab.advance(15);
      const m3 = must(lab.send('p2', 'p3', 'effect'));
      step(`Unicast: p1 sends ${m1.id} to p3 and ${m2.id} to p2; p2 then sends ${m3.id} to p3.`);
      settle();
      const uniOrder = delivered(seen, 'p3');
      const uniHeld = seen.some((e) => e.type === 'message_held' && e.data['id'] === m3.id);
      step(`${m3.id} arrived first and was ${uniHeld ? 'held' : 'not held'}; p3 delivered ${uniOrder.join(' then ')}.`);
      const b1 = must(lab.broadcast('p1', 'question'));
      lab.advance(15);
      const b2 = must(lab.broadcast('p2', 'answer'));
      step(
        `Broadcast: p1 broadcasts the question (${b1.broadcast_id}); p2 delivers it and ` +
          `broadcasts the answer (${b2.broadcast_id}).`,
      );
      settle();
      const payloads = seen
        .filter((e) => e.type === 'message_delivered' && e.data['to'] === 'p3' && e.data['cast'] === 'broadcast')
        .map((e) => e.data['payload']);
      const bHeld = seen.some(
        (e) => e.type === 'message_held' && e.data['broadcast_id'] === b2.broadcast_id && e.data['to'] === 'p3',
      );
      step(
        `The answer reached p3 first and was ${bHeld ? 'held' : 'not held'}; p3 delivered ${payloads.join(' then ')}.`,
      );
      const violations = count(seen, 'causal_violation');
      const passed =
        uniHeld &&
        uniOrder[0] === m1.id &&
        uniOrder[1] === m3.id &&
        bHeld &&
        payloads[0] === 'question' &&
        payloads[1] === 'answer' &&
        violations === 0;
      return {
        passed,
        summary: passed
          ? 'Both effects waited in p3’s hold-back queue until their causes were delivered: no causal violation.'
          : 'Causal delivery did not hold the effects back as expected.',
        facts: {
          unicast_order_at_p3: uniOrder,
          unicast_held: uniHeld,
          broadcast_order_at_p3: payloads,
          broadcast_held: bHeld,
          causal_violations: violations,
        },
      };
    },
  },
  {
    name: 'MatrixGC',
    description:
      'Matrix clocks let p1 learn when every process has seen its update, so the update can ' +
      'be garbage-collected; not before the knowledge has gone round.',
    run({ lab, step, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'matrix'));
      const u = must(lab.internalEvent('p1', 'update u'));
      const t = u.vector['p1'] as number;
      step(`p1 performs update u, its event number ${t}. p1 may discard u once min over k of M[k][p1] >= ${t}.`);
      const known = () => must(lab.process('p1')).known_by_all?.['p1'] ?? 0;
      const before: number[] = [known()];
      must(lab.send('p1', 'p2', 'u'));
      settle();
      before.push(known());
      step(`p1 → p2 delivered; p1 knows every process has seen ${before[1]} of its events: not yet collectable.`);
      must(lab.send('p2', 'p3', 'u forwarded'));
      settle();
      before.push(known());
      step(`p2 → p3 delivered; p1 still knows only ${before[2]} (no message has come back).`);
      must(lab.send('p3', 'p1', 'ack'));
      settle();
      const after = known();
      const m = must(lab.process('p1')).matrix;
      step(
        `p3 → p1 delivered; p1's matrix column p1 is ` +
          `${JSON.stringify(Object.fromEntries(Object.entries(m ?? {}).map(([k, row]) => [k, row['p1']])))}: ` +
          `min ${after}.`,
      );
      const passed = before.every((x) => x < t) && after >= t;
      return {
        passed,
        summary: passed
          ? 'p1 could not discard u until the cycle p1→p2→p3→p1 closed; then every row of its ' +
            `matrix showed u seen (min ${after} >= ${t}).`
          : 'The matrix clock did not show the garbage-collection point where expected.',
        facts: { update_event: t, known_by_all_before: before, known_by_all_after: after },
      };
    },
  },
  {
    name: 'PartitionAndHeal',
    description:
      'A partition isolates p1: messages across it are dropped, messages within a side flow; ' +
      'after healing, messages cross again and nothing stays held.',
    run({ lab, step, seen, settle }) {
      for (const p of ['p1', 'p2', 'p3']) must(lab.spawn(p, 'vector'));
      const part = must(lab.partition(['p1'], ['p2', 'p3']));
      step(`Partition ${part.id}: {p1} | {p2, p3}.`);
      const a = must(lab.send('p1', 'p2', 'across'));
      const b = must(lab.send('p2', 'p3', 'inside'));
      const c = must(lab.send('p3', 'p1', 'across back'));
      settle();
      const droppedIds = seen.filter((e) => e.type === 'message_dropped').map((e) => e.data['id'] as string);
      step(
        `${a.id} p1→p2 and ${c.id} p3→p1 were ` +
          `${droppedIds.includes(a.id) && droppedIds.includes(c.id) ? 'dropped' : 'not dropped'}; ` +
          `${b.id} p2→p3 was ${delivered(seen).includes(b.id) ? 'delivered' : 'not delivered'}.`,
      );
      lab.clearFaults();
      step('Healed: every fault cleared.');
      const d = must(lab.send('p1', 'p2', 'after heal'));
      const e = must(lab.send('p2', 'p1', 'after heal, back'));
      settle();
      const got = delivered(seen);
      const p1 = must(lab.process('p1'));
      step(
        `${d.id} and ${e.id} were ` +
          `${got.includes(d.id) && got.includes(e.id) ? 'delivered' : 'not delivered'}; p1's ` +
          `vector clock is now ${JSON.stringify(p1.vector)}.`,
      );
      const held = lab.processes().reduce((n, p) => n + p.held.length, 0);
      const passed =
        droppedIds.length === 2 &&
        got.includes(b.id) &&
        got.includes(d.id) &&
        got.includes(e.id) &&
        held === 0 &&
        (p1.vector['p2'] ?? 0) > 0;
      return {
        passed,
        summary: passed
          ? 'Messages across the partition were lost, traffic inside each side continued, and ' +
            'after healing the processes communicate again with nothing left held back.'
          : 'The partition or the heal did not behave as expected.',
        facts: { dropped: droppedIds, delivered: got, held_after_heal: held },
      };
    },
  },
];

export function scenarioList(): Array<{ name: string; description: string }> {
  return scenarios.map((s) => ({ name: s.name, description: s.description }));
}

export function hasScenario(name: string): boolean {
  return scenarios.some((s) => s.name === name);
}

/**
 * Resets the simulation (without the configured initial processes), runs the scenario to its end
 * on virtual time, publishes `scenario_started`, each `scenario_step` and the `scenario_verdict`.
 */
export function runScenario(lab: Lab, name: string, publish: EmitFn): ScenarioReport | undefined {
  const def = scenarios.find((s) => s.name === name);
  if (!def) return undefined;
  lab.reset(false);
  const seen: Seen[] = [];
  const steps: string[] = [];
  const stop = lab.observe((type, data) => seen.push({ type, data }));
  publish('scenario_started', { scenario: name, description: def.description });
  const ctx: Ctx = {
    lab,
    seen,
    step(text, data) {
      steps.push(text);
      publish('scenario_step', {
        scenario: name,
        step: steps.length,
        text,
        time_ms: lab.now,
        ...(data ? { data } : {}),
      });
    },
    settle() {
      lab.runUntilQuiet(scenarioSettleMsMax);
    },
  };
  try {
    const verdict = def.run(ctx);
    publish('scenario_verdict', {
      scenario: name,
      passed: verdict.passed,
      summary: verdict.summary,
      facts: verdict.facts,
    });
    return { scenario: name, steps, verdict, time_ms: lab.now };
  } finally {
    stop();
  }
}
