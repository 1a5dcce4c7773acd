/**
 * Two-phase commit (Gray 1978; Bernstein, Hadzilacos & Goodman ch. 7) between one coordinator and
 * three participants on the demo fabric, with a forced decision log at the coordinator, locks and
 * a prepare record at each participant, and the cooperative termination protocol for participants
 * left uncertain. With `crash` the coordinator dies right after logging its decision, so prepared
 * participants block holding their locks until it recovers from its log and finishes the job.
 * It is a teaching demo, not a transaction manager: one transaction, one key per participant.
 */
import { unreachable } from '../../util/assert.js';
import { DemoNet, Narrator, type DemoActor, type Outgoing } from './runtime.js';

export type Decision = 'commit' | 'abort';

export type TwoPcMsg =
  | { t: 'prepare'; tx: string; writes: Record<string, string>; participants: string[] }
  | { t: 'vote'; tx: string; yes: boolean }
  | { t: 'decision'; tx: string; decision: Decision }
  | { t: 'ack'; tx: string }
  /** Termination protocol: an uncertain participant asks the coordinator and its peers. */
  | { t: 'query'; tx: string }
  | { t: 'answer'; tx: string; decision: Decision | 'uncertain' }
  | { t: 'read'; key: string }
  | { t: 'read_reply'; key: string; outcome: 'value' | 'locked'; value?: string };

/** What the coordinator forces to its log before acting on it (the only state that survives a crash). */
export type CoordinatorLogRecord =
  | { kind: 'begin'; tx: string; at: number; participants: string[]; writes: Record<string, Record<string, string>> }
  | { kind: 'decision'; tx: string; at: number; decision: Decision }
  | { kind: 'end'; tx: string; at: number };

/** The coordinator's stable storage: kept by the demo across the crash, as a disk would be. */
export interface CoordinatorDisk {
  log: CoordinatorLogRecord[];
}

/** Fault injection point (as etcd's gofail): the coordinator halts right after forcing its decision. */
export type CoordinatorFailpoint = 'none' | 'crash_after_decision_logged';

export const twoPcTimings = {
  /** Coordinator aborts when votes are missing this long after PREPARE (presumed abort). */
  voteTimeoutMs: 300,
  /** A prepared participant with no decision after this long starts the termination protocol. */
  decisionTimeoutMs: 100,
  /** Interval between its repeated queries, and between the coordinator's decision resends. */
  retryMs: 100,
  /** How long the crashed coordinator stays down. */
  coordinatorDowntimeMs: 600,
  /** When the client tries to read a key that the transaction writes. */
  clientReadAtMs: 250,
};

interface CoordTx {
  participants: string[];
  votes: Map<string, boolean>;
  decision: Decision | undefined;
  acks: Set<string>;
  voteDeadline: number;
  resendAt: number;
  ended: boolean;
}

export class Coordinator implements DemoActor<TwoPcMsg> {
  readonly id: string;
  halted = false;
  private readonly txs = new Map<string, CoordTx>();
  private out: Array<Outgoing<TwoPcMsg>> = [];

  constructor(
    id: string,
    private readonly disk: CoordinatorDisk,
    private readonly failpoint: CoordinatorFailpoint,
    private readonly narrator: Narrator,
    now: number,
  ) {
    this.id = id;
    if (disk.log.length > 0) this.recover(now);
  }

  /** Phase 1: force a begin record, then send PREPARE with each participant's writes. */
  begin(tx: string, writes: Record<string, Record<string, string>>, now: number): void {
    const participants = Object.keys(writes);
    this.disk.log.push({ kind: 'begin', tx, at: now, participants, writes });
    this.txs.set(tx, {
      participants,
      votes: new Map(),
      decision: undefined,
      acks: new Set(),
      voteDeadline: now + twoPcTimings.voteTimeoutMs,
      resendAt: Infinity,
      ended: false,
    });
    for (const p of participants)
      this.out.push({ to: p, msg: { t: 'prepare', tx, writes: writes[p] ?? {}, participants } });
    this.narrator.say(
      now,
      `Coordinator ${this.id} logs BEGIN for ${tx} and sends PREPARE to ${participants.join(', ')}.`,
    );
  }

  /**
   * Recovery rule: replay the log. A decision without an end record is re-sent until every
   * participant acks; a begin without a decision is aborted (presumed abort, nobody can have committed).
   */
  private recover(now: number): void {
    const begins = new Map<string, Extract<CoordinatorLogRecord, { kind: 'begin' }>>();
    const decided = new Map<string, Decision>();
    const ended = new Set<string>();
    for (const r of this.disk.log) {
      if (r.kind === 'begin') begins.set(r.tx, r);
      else if (r.kind === 'decision') decided.set(r.tx, r.decision);
      else ended.add(r.tx);
    }
    this.narrator.say(
      now,
      `Coordinator ${this.id} restarts and replays its log: ` +
        this.disk.log
          .map((r) => `${r.kind.toUpperCase()}${r.kind === 'decision' ? `(${r.decision})` : ''} ${r.tx}`)
          .join(', ') +
        '.',
    );
    for (const [tx, b] of begins) {
      if (ended.has(tx)) continue;
      let decision = decided.get(tx);
      if (decision === undefined) {
        decision = 'abort';
        this.disk.log.push({ kind: 'decision', tx, at: now, decision });
        this.narrator.say(now, `No decision was logged for ${tx}, so the coordinator presumes abort and logs it.`);
      } else {
        this.narrator.say(
          now,
          `The log says ${tx} was decided ${decision.toUpperCase()}, so the coordinator re-sends that decision to ` +
            `${b.participants.join(', ')}.`,
        );
      }
      this.txs.set(tx, {
        participants: b.participants,
        votes: new Map(),
        decision,
        acks: new Set(),
        voteDeadline: Infinity,
        resendAt: now + twoPcTimings.retryMs,
        ended: false,
      });
      for (const p of b.participants) this.out.push({ to: p, msg: { t: 'decision', tx, decision } });
    }
  }

  /** Decision rule: commit only when every participant voted yes; any no (or silence) aborts. */
  private decide(tx: string, s: CoordTx, decision: Decision, now: number, why: string): void {
    s.decision = decision;
    s.voteDeadline = Infinity;
    this.disk.log.push({ kind: 'decision', tx, at: now, decision });
    this.narrator.say(now, `Coordinator forces the decision ${decision.toUpperCase()} for ${tx} to its log (${why}).`);
    if (this.failpoint === 'crash_after_decision_logged') {
      this.halted = true;
      return;
    }
    s.resendAt = now + twoPcTimings.retryMs;
    for (const p of s.participants) this.out.push({ to: p, msg: { t: 'decision', tx, decision } });
    this.narrator.say(now, `Coordinator sends ${decision.toUpperCase()} to ${s.participants.join(', ')}.`);
  }

  onMessage(from: string, msg: TwoPcMsg, now: number): void {
    if (this.halted) return;
    switch (msg.t) {
      case 'vote': {
        const s = this.txs.get(msg.tx);
        if (!s || s.decision !== undefined) return;
        s.votes.set(from, msg.yes);
        this.narrator.say(now, `Coordinator receives ${from}'s vote: ${msg.yes ? 'YES' : 'NO'}.`);
        if (!msg.yes) this.decide(msg.tx, s, 'abort', now, `${from} voted no`);
        else if (s.participants.every((p) => s.votes.get(p) === true))
          this.decide(msg.tx, s, 'commit', now, 'all participants voted yes');
        return;
      }
      case 'ack': {
        const s = this.txs.get(msg.tx);
        if (!s || s.ended) return;
        s.acks.add(from);
        if (s.participants.every((p) => s.acks.has(p))) {
          s.ended = true;
          s.resendAt = Infinity;
          this.disk.log.push({ kind: 'end', tx: msg.tx, at: now });
          this.narrator.say(
            now,
            `Every participant acknowledged; coordinator logs END for ${msg.tx} and may forget it.`,
          );
        }
        return;
      }
      case 'query': {
        const s = this.txs.get(msg.tx);
        // Presumed abort: a transaction the coordinator knows nothing about was aborted.
        const decision = s?.decision ?? (s ? 'uncertain' : 'abort');
        this.out.push({ to: from, msg: { t: 'answer', tx: msg.tx, decision } });
        return;
      }
      case 'prepare':
      case 'decision':
      case 'answer':
      case 'read':
      case 'read_reply':
        return;
      default:
        unreachable(msg);
    }
  }

  onTick(now: number): void {
    if (this.halted) return;
    for (const [tx, s] of this.txs) {
      if (s.decision === undefined && now >= s.voteDeadline)
        this.decide(tx, s, 'abort', now, 'votes missing at the timeout');
      if (s.decision !== undefined && !s.ended && now >= s.resendAt) {
        s.resendAt = now + twoPcTimings.retryMs;
        for (const p of s.participants)
          if (!s.acks.has(p)) this.out.push({ to: p, msg: { t: 'decision', tx, decision: s.decision } });
      }
    }
  }

  nextDeadline(): number {
    if (this.halted) return Infinity;
    let at = Infinity;
    for (const s of this.txs.values()) {
      if (s.decision === undefined) at = Math.min(at, s.voteDeadline);
      else if (!s.ended) at = Math.min(at, s.resendAt);
    }
    return at;
  }

  drain(out: Array<Outgoing<TwoPcMsg>>): void {
    if (this.halted) this.out = [];
    out.push(...this.out);
    this.out = [];
  }
}

export interface LockSpan {
  participant: string;
  key: string;
  acquired_at_ms: number;
  released_at_ms: number | null;
  held_ms: number;
}

interface PartTx {
  writes: Record<string, string>;
  participants: string[];
  coordinator: string;
  state: 'prepared' | Decision;
  queryAt: number;
}

export class Participant implements DemoActor<TwoPcMsg> {
  readonly id: string;
  readonly store = new Map<string, string>();
  /** key -> transaction holding its write lock. */
  readonly locks = new Map<string, string>();
  readonly lockSpans: LockSpan[] = [];
  /** First time the termination protocol found nobody who knew the outcome. */
  blockedSince: number | undefined;
  queriesSent = 0;
  private readonly txs = new Map<string, PartTx>();
  private out: Array<Outgoing<TwoPcMsg>> = [];

  constructor(
    id: string,
    initial: Record<string, string>,
    private readonly narrator: Narrator,
  ) {
    this.id = id;
    for (const [k, v] of Object.entries(initial)) this.store.set(k, v);
  }

  txState(tx: string): PartTx['state'] | undefined {
    return this.txs.get(tx)?.state;
  }

  onMessage(from: string, msg: TwoPcMsg, now: number): void {
    switch (msg.t) {
      case 'prepare': {
        if (this.txs.has(msg.tx)) return;
        const busy = Object.keys(msg.writes).some((k) => this.locks.has(k));
        if (busy) {
          this.txs.set(msg.tx, {
            writes: msg.writes,
            participants: msg.participants,
            coordinator: from,
            state: 'abort',
            queryAt: Infinity,
          });
          this.out.push({ to: from, msg: { t: 'vote', tx: msg.tx, yes: false } });
          this.narrator.say(now, `${this.id} cannot lock its keys for ${msg.tx} and votes NO.`);
          return;
        }
        // Prepare rule: lock and force a prepare record before voting yes; from here on the
        // participant may not decide alone.
        for (const k of Object.keys(msg.writes)) {
          this.locks.set(k, msg.tx);
          this.lockSpans.push({ participant: this.id, key: k, acquired_at_ms: now, released_at_ms: null, held_ms: 0 });
        }
        this.txs.set(msg.tx, {
          writes: msg.writes,
          participants: msg.participants,
          coordinator: from,
          state: 'prepared',
          queryAt: now + twoPcTimings.decisionTimeoutMs,
        });
        this.out.push({ to: from, msg: { t: 'vote', tx: msg.tx, yes: true } });
        this.narrator.say(now, `${this.id} locks ${Object.keys(msg.writes).join(', ')}, logs PREPARED and votes YES.`);
        return;
      }
      case 'decision':
        this.learn(msg.tx, msg.decision, from, now);
        if (this.txs.has(msg.tx)) this.out.push({ to: from, msg: { t: 'ack', tx: msg.tx } });
        return;
      case 'answer':
        if (msg.decision === 'uncertain') {
          const s = this.txs.get(msg.tx);
          if (s?.state === 'prepared' && this.blockedSince === undefined) {
            this.blockedSince = now;
            this.narrator.say(
              now,
              `${from} is uncertain too: ${this.id} is BLOCKED, still holding its lock, until someone who knows the ` +
                'decision answers.',
            );
          }
          return;
        }
        this.learn(msg.tx, msg.decision, from, now);
        return;
      case 'query': {
        const s = this.txs.get(msg.tx);
        // Cooperative termination: a participant that knows the outcome tells; a prepared one cannot.
        const decision = !s ? 'abort' : s.state === 'prepared' ? 'uncertain' : s.state;
        this.out.push({ to: from, msg: { t: 'answer', tx: msg.tx, decision } });
        return;
      }
      case 'read': {
        const holder = this.locks.get(msg.key);
        if (holder !== undefined) {
          this.out.push({ to: from, msg: { t: 'read_reply', key: msg.key, outcome: 'locked' } });
          this.narrator.say(
            now,
            `A client asks ${this.id} for ${msg.key}; it is write-locked by ${holder}, so the read ` +
              'must wait (refused here).',
          );
        } else {
          const value = this.store.get(msg.key) ?? '';
          this.out.push({ to: from, msg: { t: 'read_reply', key: msg.key, outcome: 'value', value } });
          this.narrator.say(now, `A client reads ${msg.key}=${value} from ${this.id}; no lock is held.`);
        }
        return;
      }
      case 'vote':
      case 'ack':
      case 'read_reply':
        return;
      default:
        unreachable(msg);
    }
  }

  private learn(tx: string, decision: Decision, from: string, now: number): void {
    const s = this.txs.get(tx);
    if (!s || s.state !== 'prepared') return;
    s.state = decision;
    s.queryAt = Infinity;
    if (decision === 'commit') for (const [k, v] of Object.entries(s.writes)) this.store.set(k, v);
    for (const k of Object.keys(s.writes)) {
      if (this.locks.get(k) !== tx) continue;
      this.locks.delete(k);
      const span = this.lockSpans.find((l) => l.key === k && l.released_at_ms === null);
      if (span) {
        span.released_at_ms = now;
        span.held_ms = now - span.acquired_at_ms;
      }
    }
    const applied =
      decision === 'commit'
        ? `applies ${Object.entries(s.writes)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`
        : 'discards its writes';
    this.narrator.say(
      now,
      `${this.id} learns ${decision.toUpperCase()} from ${from}, ${applied} and releases its lock.`,
    );
  }

  onTick(now: number): void {
    for (const [tx, s] of this.txs) {
      if (s.state !== 'prepared' || now < s.queryAt) continue;
      if (this.queriesSent === 0)
        this.narrator.say(
          now,
          `${this.id} has waited ${twoPcTimings.decisionTimeoutMs} ms without a decision; being prepared it may not ` +
            'abort alone, so it asks the coordinator and its peers.',
        );
      else if (this.blockedSince === undefined) {
        // A whole retry interval and still nobody told it the outcome (no answer at all): blocked too.
        this.blockedSince = now;
        this.narrator.say(now, `Nobody has answered ${this.id}'s query: it is BLOCKED, still holding its lock.`);
      }
      this.queriesSent++;
      s.queryAt = now + twoPcTimings.retryMs;
      for (const p of [s.coordinator, ...s.participants.filter((x) => x !== this.id)])
        this.out.push({ to: p, msg: { t: 'query', tx } });
    }
  }

  nextDeadline(): number {
    let at = Infinity;
    for (const s of this.txs.values()) if (s.state === 'prepared') at = Math.min(at, s.queryAt);
    return at;
  }

  drain(out: Array<Outgoing<TwoPcMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

/** A client that performs one scripted read and records the reply. */
class ReadingClient implements DemoActor<TwoPcMsg> {
  reply: Extract<TwoPcMsg, { t: 'read_reply' }> | undefined;
  replyAt: number | undefined;
  private out: Array<Outgoing<TwoPcMsg>> = [];
  private readAt: number;

  constructor(
    readonly id: string,
    private readonly target: string,
    private readonly key: string,
    readAt: number,
  ) {
    this.readAt = readAt;
  }

  onMessage(_from: string, msg: TwoPcMsg, now: number): void {
    if (msg.t === 'read_reply') {
      this.reply = msg;
      this.replyAt = now;
    }
  }

  onTick(): void {
    this.readAt = Infinity;
    this.out.push({ to: this.target, msg: { t: 'read', key: this.key } });
  }

  nextDeadline(): number {
    return this.readAt;
  }

  drain(out: Array<Outgoing<TwoPcMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface TwoPcReport {
  demo: '2pc';
  seed: number;
  crash: boolean;
  transaction: string;
  decision: Decision | null;
  committed: boolean;
  blocked: boolean;
  blocked_participants: string[];
  recovered: boolean;
  coordinator_crashed_at_ms: number | null;
  coordinator_recovered_at_ms: number | null;
  locks: LockSpan[];
  /** The longest time any participant held a lock for the transaction (virtual ms). */
  max_lock_held_ms: number;
  client_read: {
    key: string;
    participant: string;
    at_ms: number | null;
    outcome: 'value' | 'locked' | 'no_reply';
    value?: string;
  };
  final_values: Record<string, Record<string, string>>;
  coordinator_log: CoordinatorLogRecord[];
  messages_sent: number;
  messages_lost_to_crash: number;
  finished_at_ms: number;
  narrative: string[];
}

const initialValues: Record<string, Record<string, string>> = {
  p1: { alice: '100' },
  p2: { bob: '50' },
  p3: { carol: '0' },
};
/** tx1 moves 30 out of alice's account: 10 to bob, 20 to carol. */
const txWrites: Record<string, Record<string, string>> = {
  p1: { alice: '70' },
  p2: { bob: '60' },
  p3: { carol: '20' },
};

export function runTwoPhaseCommit(opts: { crash: boolean; seed?: number }): TwoPcReport {
  const seed = opts.seed ?? 42;
  const tx = 'tx1';
  const narrator = new Narrator();
  const net = new DemoNet<TwoPcMsg>({ seed, latency: { minMs: 2, maxMs: 12 } });
  const disk: CoordinatorDisk = { log: [] };
  narrator.note(
    'Setup: coordinator c and participants p1 (alice=100), p2 (bob=50), p3 (carol=0); one-way latencies 2-12 ms ' +
      `(seed ${seed}). Transaction ${tx} moves 30 from alice: alice=70, bob=60, carol=20.`,
  );
  if (opts.crash)
    narrator.note(
      'Fault: the coordinator will crash right after it forces its decision to the log, before telling anyone.',
    );

  const coordinator = new Coordinator('c', disk, opts.crash ? 'crash_after_decision_logged' : 'none', narrator, 0);
  const parts = Object.keys(initialValues).map((id) => new Participant(id, initialValues[id] ?? {}, narrator));
  const client = new ReadingClient('client', 'p1', 'alice', twoPcTimings.clientReadAtMs);
  for (const p of parts) net.add(p);
  net.add(client);
  coordinator.begin(tx, txWrites, net.now);
  net.add(coordinator); // joins the fabric and sends the PREPAREs begin() queued

  let crashedAt: number | null = null;
  let recoveredAt: number | null = null;
  let recovering: Coordinator | undefined;
  const allDecided = (): boolean => parts.every((p) => p.txState(tx) !== 'prepared');
  const horizonMs = 5_000;
  while (net.now < horizonMs) {
    if (crashedAt === null && coordinator.halted) {
      crashedAt = net.now;
      net.crash('c');
      const prepared = parts.filter((p) => p.txState(tx) === 'prepared').map((p) => p.id);
      narrator.say(
        net.now,
        `Coordinator c CRASHES before sending the decision; ${prepared.join(', ')} are prepared and hold their locks.`,
      );
    }
    if (crashedAt !== null && recoveredAt === null && net.now >= crashedAt + twoPcTimings.coordinatorDowntimeMs) {
      recoveredAt = net.now;
      recovering = new Coordinator('c', disk, 'none', narrator, net.now);
      net.add(recovering);
    }
    const ended = disk.log.some((r) => r.kind === 'end' && r.tx === tx);
    if (ended && allDecided() && client.replyAt !== undefined) break;
    const wakeAt =
      crashedAt !== null && recoveredAt === null ? crashedAt + twoPcTimings.coordinatorDowntimeMs : Infinity;
    if (net.nextEventAt() > wakeAt) {
      net.runUntil(wakeAt);
      continue;
    }
    if (!net.step()) break;
  }

  const decisionRec = disk.log.find(
    (r): r is Extract<CoordinatorLogRecord, { kind: 'decision' }> => r.kind === 'decision' && r.tx === tx,
  );
  const decision = decisionRec?.decision ?? null;
  const committed = decision === 'commit' && parts.every((p) => p.txState(tx) === 'commit');
  const blockedParticipants = parts.filter((p) => p.blockedSince !== undefined).map((p) => p.id);
  const endedAfterRestart =
    recoveredAt !== null && disk.log.some((r) => r.kind === 'end' && r.tx === tx && r.at >= (recoveredAt as number));
  const locks = parts.flatMap((p) =>
    p.lockSpans.map((l) => ({ ...l, held_ms: l.released_at_ms === null ? net.now - l.acquired_at_ms : l.held_ms })),
  );
  const finalValues: Record<string, Record<string, string>> = {};
  for (const p of parts) finalValues[p.id] = Object.fromEntries(p.store);

  const crashed = crashedAt !== null;
  narrator.note(
    crashed
      ? `Outcome: ${blockedParticipants.length} participant(s) blocked for up to ` +
          `${Math.max(0, ...locks.map((l) => l.held_ms))} ms holding locks; the recovered coordinator ` +
          `${endedAfterRestart ? 'completed' : 'did not complete'} the ${decision ?? 'missing'} decision from its log.`
      : `Outcome: ${committed ? 'committed' : 'not committed'} with no blocking; locks were held for at most ` +
          `${Math.max(0, ...locks.map((l) => l.held_ms))} ms.`,
  );

  return {
    demo: '2pc',
    seed,
    crash: opts.crash,
    transaction: tx,
    decision,
    committed,
    blocked: blockedParticipants.length > 0,
    blocked_participants: blockedParticipants,
    recovered: endedAfterRestart,
    coordinator_crashed_at_ms: crashedAt,
    coordinator_recovered_at_ms: recoveredAt,
    locks,
    max_lock_held_ms: Math.max(0, ...locks.map((l) => l.held_ms)),
    client_read: {
      key: 'alice',
      participant: 'p1',
      at_ms: client.replyAt ?? null,
      outcome: client.reply?.outcome ?? 'no_reply',
      ...(client.reply?.value !== undefined ? { value: client.reply.value } : {}),
    },
    final_values: finalValues,
    coordinator_log: disk.log.map((r) => ({ ...r })),
    messages_sent: net.fabric.stats().submitted,
    messages_lost_to_crash: net.lostToCrashed,
    finished_at_ms: net.now,
    narrative: narrator.sentences(),
  };
}
