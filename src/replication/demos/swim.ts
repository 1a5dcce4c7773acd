/**
 * SWIM membership (Das, Gupta & Motivala, DSN 2002) on the demo fabric: every protocol period a
 * member pings one member chosen round-robin over a shuffled list (§4.3); without an ack before the
 * ping timeout it asks k other members to ping the target for it (ping-req, §3.1); a target still
 * silent at the end of the period becomes suspect, and a suspect not refuted within the suspicion
 * timeout is declared dead (§4.2). A suspected live member refutes by raising its incarnation. All
 * membership updates travel piggybacked on pings and acks (infection-style dissemination, §4.1).
 * It is a demo with static membership: no joins, no leave messages, no Lifeguard extensions.
 */
import { unreachable } from '../../util/assert.js';
import type { Rng } from '../../util/rng.js';
import { DemoNet, Narrator, type DemoActor, type Outgoing } from './runtime.js';

export type MemberStatus = 'alive' | 'suspect' | 'dead';

export interface MemberUpdate {
  member: string;
  status: MemberStatus;
  incarnation: number;
}

export type SwimMsg =
  | { t: 'ping'; seq: number; updates: MemberUpdate[] }
  | { t: 'ack'; seq: number; target: string; updates: MemberUpdate[] }
  | { t: 'ping_req'; seq: number; target: string; updates: MemberUpdate[] };

export interface SwimParams {
  protocolPeriodMs: number;
  /** Wait for a direct ack before asking for indirect probes. */
  pingTimeoutMs: number;
  /** Members asked to probe indirectly (SWIM's k). */
  indirectProbes: number;
  suspicionTimeoutMs: number;
  /** Updates carried on one message. */
  piggybackMax: number;
  /** Each update is piggybacked this many times times log2(n) before it is retired (SWIM's λ log n). */
  retransmitMult: number;
}

export const defaultSwimParams: SwimParams = {
  protocolPeriodMs: 200,
  pingTimeoutMs: 50,
  indirectProbes: 3,
  suspicionTimeoutMs: 1000,
  piggybackMax: 8,
  retransmitMult: 3,
};

export type SwimEvent =
  | { kind: 'indirect_probe'; at: number; by: string; target: string; relays: string[] }
  | { kind: 'indirect_ack'; at: number; by: string; target: string }
  | { kind: 'suspect'; at: number; by: string; member: string; incarnation: number; own: boolean }
  | { kind: 'dead'; at: number; by: string; member: string; incarnation: number; own: boolean }
  | { kind: 'refute'; at: number; member: string; incarnation: number }
  | { kind: 'alive_again'; at: number; by: string; member: string; incarnation: number };

interface View {
  status: MemberStatus;
  incarnation: number;
  suspectSince: number;
}

interface Probe {
  target: string;
  seq: number;
  acked: boolean;
  indirectAt: number;
  indirect: boolean;
}

interface Gossip {
  update: MemberUpdate;
  sent: number;
}

export class SwimMember implements DemoActor<SwimMsg> {
  readonly id: string;
  incarnation = 0;
  readonly view = new Map<string, View>();
  private seq = 0;
  private probe: Probe | undefined;
  private nextProbeAt: number;
  private order: string[] = [];
  /** relay seq -> who asked and under which seq. */
  private readonly relays = new Map<number, { origin: string; originSeq: number; target: string; at: number }>();
  private gossip = new Map<string, Gossip>();
  private readonly retransmitLimit: number;
  private out: Array<Outgoing<SwimMsg>> = [];

  constructor(
    id: string,
    members: string[],
    private readonly params: SwimParams,
    private readonly rng: Rng,
    private readonly events: SwimEvent[],
    now: number,
  ) {
    this.id = id;
    for (const m of members) if (m !== id) this.view.set(m, { status: 'alive', incarnation: 0, suspectSince: 0 });
    this.retransmitLimit = params.retransmitMult * Math.max(1, Math.ceil(Math.log2(members.length)));
    // Members start their periods out of phase, as independent processes would.
    this.nextProbeAt = now + this.rng.int(params.protocolPeriodMs);
  }

  statusOf(member: string): MemberStatus | undefined {
    return this.view.get(member)?.status;
  }

  // ---- dissemination ----

  private enqueue(update: MemberUpdate): void {
    this.gossip.set(update.member, { update, sent: 0 });
  }

  /** The least-sent updates ride along; each is retired after λ·log2(n) sends (§4.1). */
  private piggyback(): MemberUpdate[] {
    const all = [...this.gossip.values()].sort(
      (a, b) => a.sent - b.sent || (a.update.member < b.update.member ? -1 : 1),
    );
    const picked = all.slice(0, this.params.piggybackMax);
    for (const g of picked) {
      g.sent++;
      if (g.sent >= this.retransmitLimit) this.gossip.delete(g.update.member);
    }
    return picked.map((g) => g.update);
  }

  private send(to: string, msg: SwimMsg): void {
    this.out.push({ to, msg });
  }

  /** Update rules of §4.2: dead overrides all; suspect overrides alive at >= incarnation; alive needs a higher one. */
  private apply(u: MemberUpdate, now: number): void {
    if (u.member === this.id) {
      if (u.status === 'suspect' && u.incarnation >= this.incarnation) {
        // Refutation: only the member itself may raise its incarnation.
        this.incarnation = u.incarnation + 1;
        this.enqueue({ member: this.id, status: 'alive', incarnation: this.incarnation });
        this.events.push({ kind: 'refute', at: now, member: this.id, incarnation: this.incarnation });
      }
      return;
    }
    const v = this.view.get(u.member);
    if (!v || v.status === 'dead') return;
    switch (u.status) {
      case 'dead':
        this.markDead(u.member, u.incarnation, now, false);
        return;
      case 'suspect':
        if (
          (v.status === 'alive' && u.incarnation >= v.incarnation) ||
          (v.status === 'suspect' && u.incarnation > v.incarnation)
        ) {
          v.status = 'suspect';
          v.incarnation = u.incarnation;
          v.suspectSince = now;
          this.enqueue(u);
          this.events.push({
            kind: 'suspect',
            at: now,
            by: this.id,
            member: u.member,
            incarnation: u.incarnation,
            own: false,
          });
        }
        return;
      case 'alive':
        if (u.incarnation > v.incarnation) {
          const wasSuspect = v.status === 'suspect';
          v.status = 'alive';
          v.incarnation = u.incarnation;
          this.enqueue(u);
          if (wasSuspect)
            this.events.push({
              kind: 'alive_again',
              at: now,
              by: this.id,
              member: u.member,
              incarnation: u.incarnation,
            });
        }
        return;
      default:
        unreachable(u.status);
    }
  }

  private markDead(member: string, incarnation: number, now: number, own: boolean): void {
    const v = this.view.get(member);
    if (!v || v.status === 'dead') return;
    v.status = 'dead';
    v.incarnation = incarnation;
    this.enqueue({ member, status: 'dead', incarnation });
    this.events.push({ kind: 'dead', at: now, by: this.id, member, incarnation, own });
  }

  private suspect(member: string, now: number): void {
    const v = this.view.get(member);
    if (!v || v.status !== 'alive') return;
    v.status = 'suspect';
    v.suspectSince = now;
    this.enqueue({ member, status: 'suspect', incarnation: v.incarnation });
    this.events.push({ kind: 'suspect', at: now, by: this.id, member, incarnation: v.incarnation, own: true });
  }

  // ---- inputs ----

  onMessage(from: string, msg: SwimMsg, now: number): void {
    for (const u of msg.updates) this.apply(u, now);
    switch (msg.t) {
      case 'ping':
        this.send(from, { t: 'ack', seq: msg.seq, target: this.id, updates: this.piggyback() });
        return;
      case 'ping_req': {
        const seq = ++this.seq;
        this.relays.set(seq, { origin: from, originSeq: msg.seq, target: msg.target, at: now });
        this.send(msg.target, { t: 'ping', seq, updates: this.piggyback() });
        return;
      }
      case 'ack': {
        const relay = this.relays.get(msg.seq);
        if (relay && relay.target === msg.target) {
          this.relays.delete(msg.seq);
          this.send(relay.origin, { t: 'ack', seq: relay.originSeq, target: msg.target, updates: this.piggyback() });
          return;
        }
        const p = this.probe;
        if (p && p.seq === msg.seq && p.target === msg.target && !p.acked) {
          p.acked = true;
          if (p.indirect) this.events.push({ kind: 'indirect_ack', at: now, by: this.id, target: p.target });
        }
        return;
      }
      default:
        unreachable(msg);
    }
  }

  onTick(now: number): void {
    const p = this.probe;
    if (p && !p.acked && !p.indirect && now >= p.indirectAt) this.askForIndirectProbes(p, now);
    for (const [member, v] of this.view) {
      if (v.status === 'suspect' && now >= v.suspectSince + this.params.suspicionTimeoutMs)
        this.markDead(member, v.incarnation, now, true);
    }
    if (now >= this.nextProbeAt) this.startPeriod(now);
  }

  private askForIndirectProbes(p: Probe, now: number): void {
    p.indirect = true;
    const candidates = [...this.view.entries()]
      .filter(([m, v]) => m !== p.target && v.status !== 'dead')
      .map(([m]) => m);
    const relays: string[] = [];
    while (relays.length < this.params.indirectProbes && candidates.length > 0) {
      relays.push(candidates.splice(this.rng.int(candidates.length), 1)[0] as string);
    }
    for (const r of relays) this.send(r, { t: 'ping_req', seq: p.seq, target: p.target, updates: this.piggyback() });
    this.events.push({ kind: 'indirect_probe', at: now, by: this.id, target: p.target, relays });
  }

  /** End of one protocol period, start of the next (§3.1, with round-robin targets from §4.3). */
  private startPeriod(now: number): void {
    const p = this.probe;
    if (p && !p.acked) this.suspect(p.target, now);
    for (const [seq, r] of this.relays) if (now - r.at > this.params.protocolPeriodMs) this.relays.delete(seq);
    this.nextProbeAt = now + this.params.protocolPeriodMs;
    const target = this.nextTarget();
    if (target === undefined) {
      this.probe = undefined;
      return;
    }
    const seq = ++this.seq;
    this.probe = { target, seq, acked: false, indirect: false, indirectAt: now + this.params.pingTimeoutMs };
    this.send(target, { t: 'ping', seq, updates: this.piggyback() });
  }

  private nextTarget(): string | undefined {
    for (;;) {
      if (this.order.length === 0) {
        const live = [...this.view.entries()].filter(([, v]) => v.status !== 'dead').map(([m]) => m);
        if (live.length === 0) return undefined;
        // Fisher-Yates with the member's own seeded rng: a fresh random round-robin order per cycle.
        for (let i = live.length - 1; i > 0; i--) {
          const j = this.rng.int(i + 1);
          [live[i], live[j]] = [live[j] as string, live[i] as string];
        }
        this.order = live;
      }
      const next = this.order.shift() as string;
      if (this.view.get(next)?.status !== 'dead') return next;
    }
  }

  nextDeadline(): number {
    let at = this.nextProbeAt;
    const p = this.probe;
    if (p && !p.acked && !p.indirect && p.indirectAt < at) at = p.indirectAt;
    for (const v of this.view.values()) {
      if (v.status === 'suspect') at = Math.min(at, v.suspectSince + this.params.suspicionTimeoutMs);
    }
    return at;
  }

  drain(out: Array<Outgoing<SwimMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface SwimReport {
  demo: 'swim';
  seed: number;
  members: string[];
  params: SwimParams;
  lossy_links: Array<{ from: string; to: string; drop_rate: number }>;
  failed_member: string;
  failed_at_ms: number;
  /** Every live member ended up declaring the failed member dead. */
  detected: boolean;
  first_suspected_at_ms: number | null;
  declared_dead_at_ms: Record<string, number | null>;
  /** From the failure until the last live member declared it dead. */
  detection_time_ms: number | null;
  /** (observer, live member) pairs where the observer declared a live member dead. */
  false_positives: number;
  /** Times a live member was suspected (each was refuted, or it would show in false_positives). */
  suspicions_of_live_members: number;
  refutations: number;
  indirect_probes: number;
  /** Probes whose direct ping went unanswered but an indirect ping-req got the ack. */
  indirect_acks: number;
  messages_sent: number;
  messages_dropped: number;
  finished_at_ms: number;
  narrative: string[];
}

export function runSwim(opts: { seed?: number; params?: Partial<SwimParams> } = {}): SwimReport {
  const seed = opts.seed ?? 42;
  const params: SwimParams = { ...defaultSwimParams, ...opts.params };
  const members = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'];
  const failed = 'm3';
  const failAtMs = 1_000;
  const endMs = 8_000;
  const net = new DemoNet<SwimMsg>({ seed, latency: { minMs: 2, maxMs: 15 } });
  const events: SwimEvent[] = [];
  const nodes = members.map((m) => new SwimMember(m, members, params, net.rng.fork(), events, 0));
  for (const n of nodes) net.add(n);
  // m1 can never reach m2 directly (one-way loss), and m4<->m5 loses 30% each way: indirect probes must cover for them.
  const lossy = [
    { from: 'm1', to: 'm2', drop_rate: 1 },
    { from: 'm4', to: 'm5', drop_rate: 0.3 },
    { from: 'm5', to: 'm4', drop_rate: 0.3 },
  ];
  for (const l of lossy) net.fabric.setDropRate(l.from, l.to, l.drop_rate);

  net.runUntil(failAtMs);
  net.crash(failed);
  const live = nodes.filter((n) => n.id !== failed);
  const allDeclared = (): boolean => live.every((n) => n.statusOf(failed) === 'dead');
  net.runUntilOr(allDeclared, endMs);
  // Keep running a while after detection: a false positive would show up here too.
  net.runUntil(Math.min(endMs, net.now + 2_000));

  const deadAt: Record<string, number | null> = {};
  for (const n of live)
    deadAt[n.id] = events.find((e) => e.kind === 'dead' && e.by === n.id && e.member === failed)?.at ?? null;
  const detected = allDeclared();
  const detectionAt = detected ? Math.max(...Object.values(deadAt).map((x) => x ?? 0)) : null;
  const isLive = (m: string): boolean => m !== failed;
  const falsePositives = new Set(
    events
      .filter((e) => e.kind === 'dead' && isLive(e.member))
      .map((e) => (e.kind === 'dead' ? `${e.by}:${e.member}` : '')),
  ).size;
  const firstSuspect = events.find((e) => e.kind === 'suspect' && e.member === failed && e.at >= failAtMs);
  const stats = net.fabric.stats();

  const narrator = new Narrator();
  narrator.note(
    `Setup: ${members.length} members ${members.join(', ')}; protocol period ${params.protocolPeriodMs} ms, ping ` +
      `timeout ${params.pingTimeoutMs} ms, k=${params.indirectProbes} indirect probes, suspicion timeout ` +
      `${params.suspicionTimeoutMs} ms; latencies 2-15 ms (seed ${seed}).`,
  );
  narrator.note(
    `Faulty links: m1->m2 drops everything, m4<->m5 drops 30%. Member ${failed} stops answering at t=${failAtMs} ms.`,
  );
  narrate(narrator, events, failed, failAtMs, params);
  narrator.note(
    detected
      ? `Outcome: every live member declared ${failed} dead within ${(detectionAt as number) - failAtMs} ms of its ` +
          `failure; ${falsePositives} live member(s) were wrongly declared dead; ` +
          `${events.filter((e) => e.kind === 'indirect_ack').length} probes were saved by indirect pings.`
      : `Outcome: ${failed} was NOT declared dead by every live member by t=${endMs} ms.`,
  );

  return {
    demo: 'swim',
    seed,
    members,
    params,
    lossy_links: lossy,
    failed_member: failed,
    failed_at_ms: failAtMs,
    detected,
    first_suspected_at_ms: firstSuspect?.at ?? null,
    declared_dead_at_ms: deadAt,
    detection_time_ms: detectionAt === null ? null : detectionAt - failAtMs,
    false_positives: falsePositives,
    suspicions_of_live_members: events.filter((e) => e.kind === 'suspect' && isLive(e.member) && e.own).length,
    refutations: events.filter((e) => e.kind === 'refute').length,
    indirect_probes: events.filter((e) => e.kind === 'indirect_probe').length,
    indirect_acks: events.filter((e) => e.kind === 'indirect_ack').length,
    messages_sent: stats.submitted,
    messages_dropped: stats.dropped_rate + stats.dropped_partition + stats.dropped_full + net.lostToCrashed,
    finished_at_ms: net.now,
    narrative: narrator.sentences(),
  };
}

/** Picks the sentences a learner needs: the first indirect save, each suspicion, refutation and death. */
function narrate(narrator: Narrator, events: SwimEvent[], failed: string, failAtMs: number, params: SwimParams): void {
  let savedShown = 0;
  let probesOfFailedShown = false;
  let failureShown = false;
  let gossipShown = 0;
  const showFailure = (): void => {
    failureShown = true;
    narrator.say(failAtMs, `${failed} FAILS: from now on every message sent to it is lost.`);
  };
  for (const e of events) {
    if (!failureShown && e.at >= failAtMs) showFailure();
    switch (e.kind) {
      case 'indirect_probe':
        if (e.target === failed && e.at >= failAtMs && !probesOfFailedShown) {
          probesOfFailedShown = true;
          narrator.say(
            e.at,
            `${e.by}'s ping to ${failed} went unanswered; it asks ${e.relays.join(', ')} to ping ` +
              `${failed} for it (ping-req).`,
          );
        }
        break;
      case 'indirect_ack':
        if (savedShown < 2) {
          savedShown++;
          narrator.say(
            e.at,
            `${e.by} could not reach ${e.target} directly, but an indirect ping through another ` +
              `member got ${e.target}'s ` +
              'ack: no suspicion needed.',
          );
        }
        break;
      case 'suspect':
        if (e.own)
          narrator.say(
            e.at,
            `${e.by} heard nothing from ${e.member} during its whole period and marks it SUSPECT (incarnation ` +
              `${e.incarnation}); the news rides on its next messages.`,
          );
        else if (gossipShown < 2) {
          gossipShown++;
          narrator.say(
            e.at,
            `${e.by} learns from a piggybacked update that ${e.member} is suspect and starts its own suspicion timer.`,
          );
        }
        break;
      case 'refute':
        narrator.say(
          e.at,
          `${e.member} learns it is suspected and refutes: it is ALIVE with incarnation ${e.incarnation}.`,
        );
        break;
      case 'dead':
        narrator.say(
          e.at,
          e.own
            ? `${e.member}'s suspicion at ${e.by} was not refuted within ` +
                `${params.suspicionTimeoutMs} ms: ${e.by} declares it DEAD.`
            : `${e.by} learns from gossip that ${e.member} is DEAD.`,
        );
        break;
      case 'alive_again':
        break;
      default:
        unreachable(e);
    }
  }
  if (!failureShown) showFailure();
}
