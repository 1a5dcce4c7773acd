/**
 * Single-decree Paxos (Lamport, "Paxos Made Simple", 2001) on the demo fabric: competing proposers
 * with their own values run phase 1 (prepare/promise) and phase 2 (accept/accepted) against a set
 * of acceptors, backing off at random after being preempted; acceptors tell learners what they
 * accept, and a learner learns a value once a majority accepted it in one ballot. A proposer that
 * starts after a value was chosen finds it in the promises and must propose it again (P2c).
 * The report's safety verdict comes from an omniscient check over every acceptance, not from the
 * protocol's own claims. It is one instance of consensus, not Multi-Paxos: no log, no leader lease.
 */
import { unreachable } from '../../util/assert.js';
import type { Rng } from '../../util/rng.js';
import { DemoNet, Narrator, type DemoActor, type Outgoing } from './runtime.js';

/** Ballots are totally ordered: by round, then by proposer id (so two proposers never share one). */
export interface Ballot {
  n: number;
  by: string;
}

export function compareBallots(a: Ballot, b: Ballot): number {
  if (a.n !== b.n) return a.n - b.n;
  return a.by < b.by ? -1 : a.by > b.by ? 1 : 0;
}

export const showBallot = (b: Ballot): string => `${b.n}.${b.by}`;

export type PaxosMsg =
  | { t: 'prepare'; ballot: Ballot }
  | { t: 'promise'; ballot: Ballot; accepted: { ballot: Ballot; value: string } | null }
  | { t: 'accept'; ballot: Ballot; value: string }
  | { t: 'accepted'; ballot: Ballot; value: string }
  | { t: 'nack'; ballot: Ballot; promised: Ballot };

export const paxosTimings = {
  /** A phase with no majority after this long is abandoned and retried with a higher ballot. */
  phaseTimeoutMs: 150,
  backoffMsMin: 10,
  backoffMsMax: 80,
};

export interface Acceptance {
  acceptor: string;
  at: number;
  ballot: Ballot;
  value: string;
}

export class Acceptor implements DemoActor<PaxosMsg> {
  readonly id: string;
  promised: Ballot | null = null;
  accepted: { ballot: Ballot; value: string } | null = null;
  private out: Array<Outgoing<PaxosMsg>> = [];

  constructor(
    id: string,
    private readonly learners: string[],
    private readonly history: Acceptance[],
    private readonly narrator: Narrator,
  ) {
    this.id = id;
  }

  onMessage(from: string, msg: PaxosMsg, now: number): void {
    switch (msg.t) {
      case 'prepare':
        // P1b: promise never to accept a ballot below this one, and report the highest accepted proposal.
        if (this.promised === null || compareBallots(msg.ballot, this.promised) > 0) {
          this.promised = msg.ballot;
          this.out.push({ to: from, msg: { t: 'promise', ballot: msg.ballot, accepted: this.accepted } });
          this.narrator.say(
            now,
            `${this.id} promises ballot ` +
              showBallot(msg.ballot) +
              (this.accepted
                ? `, reporting it already accepted "${this.accepted.value}" in ${showBallot(this.accepted.ballot)}`
                : ' (it has accepted nothing yet)') +
              '.',
          );
        } else {
          this.out.push({ to: from, msg: { t: 'nack', ballot: msg.ballot, promised: this.promised } });
          this.narrator.say(
            now,
            `${this.id} rejects PREPARE ${showBallot(msg.ballot)}: it already promised ${showBallot(this.promised)}.`,
          );
        }
        return;
      case 'accept':
        // P2b: accept unless a higher ballot was promised meanwhile.
        if (this.promised === null || compareBallots(msg.ballot, this.promised) >= 0) {
          this.promised = msg.ballot;
          this.accepted = { ballot: msg.ballot, value: msg.value };
          this.history.push({ acceptor: this.id, at: now, ballot: msg.ballot, value: msg.value });
          for (const l of this.learners)
            this.out.push({ to: l, msg: { t: 'accepted', ballot: msg.ballot, value: msg.value } });
          if (!this.learners.includes(from))
            this.out.push({ to: from, msg: { t: 'accepted', ballot: msg.ballot, value: msg.value } });
          this.narrator.say(
            now,
            `${this.id} ACCEPTS "${msg.value}" in ballot ${showBallot(msg.ballot)} and tells the learners.`,
          );
        } else {
          this.out.push({ to: from, msg: { t: 'nack', ballot: msg.ballot, promised: this.promised } });
          this.narrator.say(
            now,
            `${this.id} rejects ACCEPT ${showBallot(msg.ballot)} ("${msg.value}"): it promised ` +
              `${showBallot(this.promised)}.`,
          );
        }
        return;
      case 'promise':
      case 'accepted':
      case 'nack':
        return;
      default:
        unreachable(msg);
    }
  }

  onTick(): void {}

  nextDeadline(): number {
    return Infinity;
  }

  drain(out: Array<Outgoing<PaxosMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

/** Counts acceptances per ballot; a value is learned when one ballot holds a majority of acceptors. */
class LearnerState {
  learned: { value: string; ballot: Ballot; at: number } | null = null;
  /** Every majority this learner has seen form, in order (more than one only if safety were broken). */
  readonly learnings: Array<{ value: string; ballot: Ballot; at: number }> = [];
  private readonly votes = new Map<string, Map<string, string>>();

  constructor(private readonly majority: number) {}

  /** Returns true when this acceptance completes a majority the learner had not yet counted. */
  observe(acceptor: string, ballot: Ballot, value: string, now: number): boolean {
    const key = showBallot(ballot);
    const byAcceptor = this.votes.get(key) ?? new Map<string, string>();
    this.votes.set(key, byAcceptor);
    if (byAcceptor.has(acceptor)) return false;
    byAcceptor.set(acceptor, value);
    if (byAcceptor.size !== this.majority) return false;
    const l = { value, ballot, at: now };
    this.learnings.push(l);
    this.learned ??= l;
    return true;
  }
}

export class Learner implements DemoActor<PaxosMsg> {
  readonly state: LearnerState;
  private out: Array<Outgoing<PaxosMsg>> = [];

  constructor(
    readonly id: string,
    majority: number,
    private readonly narrator: Narrator,
  ) {
    this.state = new LearnerState(majority);
  }

  onMessage(from: string, msg: PaxosMsg, now: number): void {
    if (msg.t !== 'accepted') return;
    const first = this.state.learned === null;
    if (this.state.observe(from, msg.ballot, msg.value, now) && first) {
      this.narrator.say(
        now,
        `Learner ${this.id} sees a majority accept "${msg.value}" in ballot ` +
          `${showBallot(msg.ballot)}: the value is CHOSEN.`,
      );
    }
  }

  onTick(): void {}

  nextDeadline(): number {
    return Infinity;
  }

  drain(out: Array<Outgoing<PaxosMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface Proposal {
  proposer: string;
  ballot: string;
  value: string;
  /** False when phase 1 forced the proposer to adopt a value already accepted by someone. */
  own_value: boolean;
  at_ms: number;
  outcome: 'chosen' | 'preempted' | 'timed_out' | 'superseded' | 'pending';
}

type Phase = 'idle' | 'backoff' | 'preparing' | 'accepting' | 'done';

export class Proposer implements DemoActor<PaxosMsg> {
  readonly id: string;
  readonly learner: LearnerState;
  readonly proposals: Proposal[] = [];
  prepares = 0;
  private phase: Phase = 'idle';
  private round = 0;
  private ballot: Ballot | null = null;
  private promises = new Map<string, { ballot: Ballot; value: string } | null>();
  private acceptedBy = new Set<string>();
  private wakeAt: number;
  private highestSeen = 0;
  private out: Array<Outgoing<PaxosMsg>> = [];

  constructor(
    id: string,
    readonly ownValue: string,
    private readonly acceptors: string[],
    startAt: number,
    private readonly rng: Rng,
    private readonly narrator: Narrator,
  ) {
    this.id = id;
    this.wakeAt = startAt;
    this.learner = new LearnerState(this.majority());
  }

  private majority(): number {
    return Math.floor(this.acceptors.length / 2) + 1;
  }

  get done(): boolean {
    return this.phase === 'done';
  }

  /** Phase 1a: a fresh ballot above every round seen so far. */
  private prepare(now: number): void {
    this.round = Math.max(this.round, this.highestSeen) + 1;
    this.ballot = { n: this.round, by: this.id };
    this.promises.clear();
    this.acceptedBy.clear();
    this.phase = 'preparing';
    this.wakeAt = now + paxosTimings.phaseTimeoutMs;
    this.prepares++;
    for (const a of this.acceptors) this.out.push({ to: a, msg: { t: 'prepare', ballot: this.ballot } });
    this.narrator.say(
      now,
      `${this.id} (wants "${this.ownValue}") sends PREPARE ${showBallot(this.ballot)} to ${this.acceptors.join(', ')}.`,
    );
  }

  private backoff(now: number, outcome: Proposal['outcome'], why: string): void {
    const last = this.proposals[this.proposals.length - 1];
    if (last && last.outcome === 'pending') last.outcome = outcome;
    this.phase = 'backoff';
    this.wakeAt = now + this.rng.range(paxosTimings.backoffMsMin, paxosTimings.backoffMsMax);
    this.narrator.say(
      now,
      `${this.id} abandons ballot ${this.ballot ? showBallot(this.ballot) : '-'} (${why}) and retries at ` +
        `t=${this.wakeAt} ms with a higher ballot.`,
    );
  }

  private finish(now: number): void {
    const l = this.learner.learned;
    if (!l || this.phase === 'done') return;
    this.phase = 'done';
    this.wakeAt = Infinity;
    const last = this.proposals[this.proposals.length - 1];
    if (last && last.outcome === 'pending')
      last.outcome = last.ballot === showBallot(l.ballot) ? 'chosen' : 'superseded';
    this.narrator.say(
      now,
      `${this.id} learns that "${l.value}" was chosen (ballot ${showBallot(l.ballot)}) and stops proposing.`,
    );
  }

  onMessage(from: string, msg: PaxosMsg, now: number): void {
    if (msg.t === 'accepted') {
      this.learner.observe(from, msg.ballot, msg.value, now);
      if (this.ballot && compareBallots(msg.ballot, this.ballot) === 0) this.acceptedBy.add(from);
      if (this.learner.learned) this.finish(now);
      return;
    }
    if (this.phase === 'done' || !this.ballot || compareBallots(msg.ballot, this.ballot) !== 0) return;
    switch (msg.t) {
      case 'promise': {
        if (this.phase !== 'preparing') return;
        this.promises.set(from, msg.accepted);
        if (this.promises.size < this.majority()) return;
        // P2c: adopt the value of the highest-ballot proposal any promiser accepted, else our own.
        let best: { ballot: Ballot; value: string } | null = null;
        for (const acc of this.promises.values())
          if (acc && (!best || compareBallots(acc.ballot, best.ballot) > 0)) best = acc;
        const value = best ? best.value : this.ownValue;
        this.phase = 'accepting';
        this.wakeAt = now + paxosTimings.phaseTimeoutMs;
        this.proposals.push({
          proposer: this.id,
          ballot: showBallot(this.ballot),
          value,
          own_value: value === this.ownValue && best === null,
          at_ms: now,
          outcome: 'pending',
        });
        for (const a of this.acceptors) this.out.push({ to: a, msg: { t: 'accept', ballot: this.ballot, value } });
        this.narrator.say(
          now,
          best
            ? `${this.id} has a majority of promises; one reports "${best.value}" accepted in ` +
                `${showBallot(best.ballot)}, ` +
                `so ${this.id} must propose "${value}" instead of its own "${this.ownValue}" and sends ACCEPT ` +
                `${showBallot(this.ballot)}.`
            : `${this.id} has a majority of promises and none reports an accepted value, so it sends ACCEPT ` +
                `${showBallot(this.ballot)} with its own value "${value}".`,
        );
        return;
      }
      case 'nack':
        this.highestSeen = Math.max(this.highestSeen, msg.promised.n);
        if (this.phase === 'preparing' || this.phase === 'accepting')
          this.backoff(now, 'preempted', `an acceptor promised ${showBallot(msg.promised)}`);
        return;
      case 'prepare':
      case 'accept':
        return;
      default:
        unreachable(msg);
    }
  }

  onTick(now: number): void {
    switch (this.phase) {
      case 'idle':
      case 'backoff':
        this.prepare(now);
        return;
      case 'preparing':
      case 'accepting':
        this.backoff(now, 'timed_out', 'no majority answered in time');
        return;
      case 'done':
        return;
      default:
        unreachable(this.phase);
    }
  }

  nextDeadline(): number {
    return this.wakeAt;
  }

  drain(out: Array<Outgoing<PaxosMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface PaxosOptions {
  seed?: number;
  /** Loss rate on every link (tests use it; the demo default is 0). */
  dropRate?: number;
  acceptors?: number;
  latency?: { minMs: number; maxMs: number };
}

export interface PaxosReport {
  demo: 'paxos';
  seed: number;
  acceptors: string[];
  proposers: Array<{ id: string; value: string; starts_at_ms: number; prepares: number; learned: string | null }>;
  chosen_value: string | null;
  chosen_ballot: string | null;
  chosen_at_ms: number | null;
  proposals: Proposal[];
  learners: Record<string, string | null>;
  /** Every value any learner learned, and every value a majority ever accepted, is one and the same. */
  safety_held: boolean;
  /** The chosen value is one some proposer asked for. */
  validity_held: boolean;
  /** The latecomer's proposals all carried the already chosen value. */
  late_proposer_adopted_chosen: boolean;
  acceptances: number;
  messages_sent: number;
  messages_dropped: number;
  finished_at_ms: number;
  narrative: string[];
}

export function runPaxos(opts: PaxosOptions = {}): PaxosReport {
  const seed = opts.seed ?? 42;
  const narrator = new Narrator();
  const latency = opts.latency ?? { minMs: 5, maxMs: 40 };
  const net = new DemoNet<PaxosMsg>({ seed, latency });
  const acceptorIds = Array.from({ length: opts.acceptors ?? 3 }, (_, i) => `a${i + 1}`);
  const majority = Math.floor(acceptorIds.length / 2) + 1;
  const specs = [
    { id: 'p1', value: 'A', startAt: 0 },
    { id: 'p2', value: 'B', startAt: 5 },
    { id: 'p3', value: 'C', startAt: 700 },
  ];
  const learnerIds = ['l1', 'l2'];
  const history: Acceptance[] = [];
  // Acceptors tell the learners and the proposer whose ACCEPT it was; a proposer that lost a duel
  // (or arrives late) learns the outcome only the Paxos way, through the promises of a new ballot.
  const acceptors = acceptorIds.map((id) => new Acceptor(id, learnerIds, history, narrator));
  const proposers = specs.map((s) => new Proposer(s.id, s.value, acceptorIds, s.startAt, net.rng.fork(), narrator));
  const learners = learnerIds.map((id) => new Learner(id, majority, narrator));
  narrator.note(
    `Setup: acceptors ${acceptorIds.join(', ')} (majority ${majority}); proposers p1 wants "A" (starts at 0 ms), ` +
      `p2 wants "B" (starts at 5 ms), p3 wants "C" (starts late, at 700 ms); learners ${learnerIds.join(', ')}; ` +
      `latencies ${latency.minMs}-${latency.maxMs} ms (seed ${seed}).`,
  );
  for (const a of acceptors) net.add(a);
  for (const p of proposers) net.add(p);
  for (const l of learners) net.add(l);
  const dropRate = opts.dropRate ?? 0;
  if (dropRate > 0) {
    const all = [...acceptorIds, ...specs.map((s) => s.id), ...learnerIds];
    for (const a of all) for (const b of all) if (a !== b) net.fabric.setDropRate(a, b, dropRate);
    narrator.note(`Every link loses ${Math.round(dropRate * 100)}% of its messages.`);
  }

  const horizonMs = 10_000;
  net.runUntilOr(() => proposers.every((p) => p.done) && learners.every((l) => l.state.learned !== null), horizonMs);
  if (!proposers.every((p) => p.done)) net.runUntil(horizonMs);

  // Omniscient check: a value is chosen when a majority of acceptors accepted it in one ballot.
  const perBallot = new Map<string, { ballot: Ballot; value: string; acceptors: Set<string>; at: number | null }>();
  for (const h of history) {
    const k = showBallot(h.ballot);
    const e = perBallot.get(k) ?? { ballot: h.ballot, value: h.value, acceptors: new Set<string>(), at: null };
    perBallot.set(k, e);
    if (e.value !== h.value) e.value = `${e.value}|${h.value}`; // two values in one ballot would itself be a violation
    e.acceptors.add(h.acceptor);
    if (e.at === null && e.acceptors.size >= majority) e.at = h.at;
  }
  const chosen = [...perBallot.values()]
    .filter((e) => e.at !== null)
    .sort((a, b) => (a.at as number) - (b.at as number));
  const chosenValues = new Set(chosen.map((c) => c.value));
  const learnedValues = new Set<string>();
  for (const s of [...learners.map((l) => l.state), ...proposers.map((p) => p.learner)])
    for (const l of s.learnings) learnedValues.add(l.value);
  const first = chosen[0];
  const safetyHeld = chosenValues.size <= 1 && [...learnedValues].every((v) => chosenValues.has(v));
  const proposed = new Set(specs.map((s) => s.value));
  const validityHeld =
    [...chosenValues].every((v) => proposed.has(v)) && [...learnedValues].every((v) => proposed.has(v));
  const late = proposers[2] as Proposer;
  const lateProps = late.proposals.filter((p) => first && first.at !== null && p.at_ms > first.at);
  const lateAdopted =
    first !== undefined && lateProps.length > 0 && lateProps.every((p) => p.value === first.value && !p.own_value);
  const stats = net.fabric.stats();

  narrator.note(
    first
      ? `Outcome: "${first.value}" was chosen in ballot ${showBallot(first.ballot)} at t=${first.at} ms after ` +
          `${proposers.reduce((n, p) => n + p.prepares, 0)} prepares; every learner that learned agrees: safety ` +
          `${safetyHeld ? 'held' : 'was VIOLATED'}.`
      : `Outcome: no value was chosen by t=${horizonMs} ms (liveness is not guaranteed under message loss); safety ` +
          `${safetyHeld ? 'held' : 'was VIOLATED'}.`,
  );

  const learnedMap: Record<string, string | null> = {};
  for (const l of learners) learnedMap[l.id] = l.state.learned?.value ?? null;
  for (const p of proposers) learnedMap[p.id] = p.learner.learned?.value ?? null;
  return {
    demo: 'paxos',
    seed,
    acceptors: acceptorIds,
    proposers: proposers.map((p, i) => ({
      id: p.id,
      value: p.ownValue,
      starts_at_ms: (specs[i] as { startAt: number }).startAt,
      prepares: p.prepares,
      learned: p.learner.learned?.value ?? null,
    })),
    chosen_value: first?.value ?? null,
    chosen_ballot: first ? showBallot(first.ballot) : null,
    chosen_at_ms: first?.at ?? null,
    proposals: proposers.flatMap((p) => p.proposals).sort((a, b) => a.at_ms - b.at_ms),
    learners: learnedMap,
    safety_held: safetyHeld,
    validity_held: validityHeld,
    late_proposer_adopted_chosen: lateAdopted,
    acceptances: history.length,
    messages_sent: stats.submitted,
    messages_dropped: stats.dropped_rate,
    finished_at_ms: net.now,
    narrative: narrator.sentences(),
  };
}
