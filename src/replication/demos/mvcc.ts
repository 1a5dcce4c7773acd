/**
 * Multi-version concurrency control with snapshot isolation (Berenson et al. 1995, "A Critique of
 * ANSI SQL Isolation Levels"): a store server keeps every committed version of a key stamped with
 * its commit timestamp, a transaction reads the newest version no later than its start timestamp,
 * and commit applies first-committer-wins (abort when a key it wrote got a newer committed version
 * after it started). Scripted clients talk to the store over the demo fabric.
 * It is a teaching store: one server, logical timestamps, no garbage collection of old versions.
 */
import { invariant, unreachable } from '../../util/assert.js';
import { DemoNet, Narrator, type DemoActor, type Outgoing } from './runtime.js';

export type MvccMsg =
  | { t: 'begin'; tx: string }
  | { t: 'began'; tx: string; snapshot_ts: number }
  | { t: 'read'; tx: string; key: string }
  | { t: 'read_reply'; tx: string; key: string; value: string | null; version_ts: number | null }
  | { t: 'write'; tx: string; key: string; value: string }
  | { t: 'write_ok'; tx: string; key: string }
  | { t: 'commit'; tx: string }
  | { t: 'committed'; tx: string; commit_ts: number }
  | { t: 'aborted'; tx: string; code: 'write_write_conflict' | 'unknown_transaction'; key?: string; newer_ts?: number };

export interface StoredVersion {
  value: string;
  commit_ts: number;
  tx: string;
}

interface ActiveTx {
  startTs: number;
  writes: Map<string, string>;
}

/** Outcome of a commit attempt, kept in processing order (what first-committer-wins is judged on). */
export interface CommitRecord {
  tx: string;
  at_ms: number;
  outcome: 'committed' | 'aborted';
  commit_ts?: number;
  conflict_key?: string;
}

export class MvccStore implements DemoActor<MvccMsg> {
  readonly id: string;
  /** key -> versions in commit_ts order (append-only). */
  readonly versions = new Map<string, StoredVersion[]>();
  readonly commits: CommitRecord[] = [];
  private lastCommitTs = 0;
  private readonly active = new Map<string, ActiveTx>();
  private out: Array<Outgoing<MvccMsg>> = [];

  constructor(
    id: string,
    private readonly narrator: Narrator,
  ) {
    this.id = id;
  }

  /** Loads initial data as one committed transaction. */
  load(tx: string, data: Record<string, string>): number {
    const ts = ++this.lastCommitTs;
    for (const [k, v] of Object.entries(data)) this.install(k, { value: v, commit_ts: ts, tx });
    return ts;
  }

  private install(key: string, v: StoredVersion): void {
    const list = this.versions.get(key) ?? [];
    const last = list[list.length - 1];
    invariant(!last || last.commit_ts < v.commit_ts, 'versions of a key are installed in commit-timestamp order');
    list.push(v);
    this.versions.set(key, list);
  }

  /** Snapshot read rule: the newest version whose commit_ts <= the snapshot timestamp. */
  visible(key: string, snapshotTs: number): StoredVersion | undefined {
    const list = this.versions.get(key) ?? [];
    for (let i = list.length - 1; i >= 0; i--) {
      const v = list[i] as StoredVersion;
      if (v.commit_ts <= snapshotTs) return v;
    }
    return undefined;
  }

  onMessage(from: string, msg: MvccMsg, now: number): void {
    switch (msg.t) {
      case 'begin': {
        this.active.set(msg.tx, { startTs: this.lastCommitTs, writes: new Map() });
        this.out.push({ to: from, msg: { t: 'began', tx: msg.tx, snapshot_ts: this.lastCommitTs } });
        this.narrator.say(
          now,
          `${msg.tx} begins with snapshot timestamp ${this.lastCommitTs}: it will see exactly the commits stamped ` +
            `${this.lastCommitTs} or earlier.`,
        );
        return;
      }
      case 'read': {
        const tx = this.active.get(msg.tx);
        if (!tx) {
          this.out.push({ to: from, msg: { t: 'aborted', tx: msg.tx, code: 'unknown_transaction' } });
          return;
        }
        const own = tx.writes.get(msg.key);
        const v = this.visible(msg.key, tx.startTs);
        const value = own ?? v?.value ?? null;
        const versionTs = own !== undefined ? null : (v?.commit_ts ?? null);
        this.out.push({ to: from, msg: { t: 'read_reply', tx: msg.tx, key: msg.key, value, version_ts: versionTs } });
        const newest = this.versions.get(msg.key)?.at(-1);
        const note =
          own !== undefined
            ? ' (its own uncommitted write)'
            : newest && v && newest.commit_ts > v.commit_ts
              ? ` although ${newest.tx} committed ${msg.key}=${newest.value} at timestamp ${newest.commit_ts}`
              : '';
        this.narrator.say(
          now,
          `${msg.tx} reads ${msg.key}=${value ?? '(none)'}` +
            `${versionTs !== null ? ` (version ${versionTs})` : ''}${note}.`,
        );
        return;
      }
      case 'write': {
        const tx = this.active.get(msg.tx);
        if (!tx) {
          this.out.push({ to: from, msg: { t: 'aborted', tx: msg.tx, code: 'unknown_transaction' } });
          return;
        }
        tx.writes.set(msg.key, msg.value);
        this.out.push({ to: from, msg: { t: 'write_ok', tx: msg.tx, key: msg.key } });
        this.narrator.say(
          now,
          `${msg.tx} writes ${msg.key}=${msg.value} into its private write set (invisible to others until commit).`,
        );
        return;
      }
      case 'commit': {
        const tx = this.active.get(msg.tx);
        if (!tx) {
          this.out.push({ to: from, msg: { t: 'aborted', tx: msg.tx, code: 'unknown_transaction' } });
          return;
        }
        this.active.delete(msg.tx);
        // First-committer-wins: a key written by tx that has a version committed after tx's snapshot aborts it.
        for (const key of tx.writes.keys()) {
          const newest = this.versions.get(key)?.at(-1);
          if (newest && newest.commit_ts > tx.startTs) {
            this.commits.push({ tx: msg.tx, at_ms: now, outcome: 'aborted', conflict_key: key });
            this.out.push({
              to: from,
              msg: { t: 'aborted', tx: msg.tx, code: 'write_write_conflict', key, newer_ts: newest.commit_ts },
            });
            this.narrator.say(
              now,
              `${msg.tx} tries to commit, but ${newest.tx} already committed ${key} at timestamp ` +
                `${newest.commit_ts}, ` +
                `after ${msg.tx}'s snapshot ${tx.startTs}: write-write conflict, ${msg.tx} ABORTS ` +
                '(first committer wins).',
            );
            return;
          }
        }
        if (tx.writes.size === 0) {
          this.commits.push({ tx: msg.tx, at_ms: now, outcome: 'committed' });
          this.out.push({ to: from, msg: { t: 'committed', tx: msg.tx, commit_ts: tx.startTs } });
          this.narrator.say(now, `${msg.tx} commits; being read-only it needs no new timestamp.`);
          return;
        }
        const ts = ++this.lastCommitTs;
        for (const [k, v] of tx.writes) this.install(k, { value: v, commit_ts: ts, tx: msg.tx });
        this.commits.push({ tx: msg.tx, at_ms: now, outcome: 'committed', commit_ts: ts });
        this.out.push({ to: from, msg: { t: 'committed', tx: msg.tx, commit_ts: ts } });
        this.narrator.say(
          now,
          `${msg.tx} commits at timestamp ${ts}: new version${tx.writes.size > 1 ? 's' : ''} ` +
            `${[...tx.writes].map(([k, v]) => `${k}=${v}`).join(', ')} ` +
            `${tx.writes.size > 1 ? 'are' : 'is'} installed ` +
            'beside the old ones.',
        );
        return;
      }
      case 'began':
      case 'read_reply':
      case 'write_ok':
      case 'committed':
      case 'aborted':
        return;
      default:
        unreachable(msg);
    }
  }

  onTick(): void {}

  nextDeadline(): number {
    return Infinity;
  }

  drain(out: Array<Outgoing<MvccMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

type Step =
  | { op: 'begin'; at: number }
  | { op: 'read'; key: string; at: number }
  | { op: 'write'; key: string; value: string; at: number }
  | { op: 'commit'; at: number };

export interface ObservedRead {
  at_ms: number;
  key: string;
  value: string | null;
  version_ts: number | null;
}

/** A client running one transaction: each step is sent once its time has come and the previous step was answered. */
class TxClient implements DemoActor<MvccMsg> {
  snapshotTs: number | undefined;
  readonly reads: ObservedRead[] = [];
  outcome: 'committed' | 'aborted' | undefined;
  commitTs: number | undefined;
  private next = 0;
  private waiting = false;
  private out: Array<Outgoing<MvccMsg>> = [];

  constructor(
    readonly id: string,
    readonly tx: string,
    private readonly server: string,
    private readonly steps: Step[],
  ) {}

  onMessage(_from: string, msg: MvccMsg, now: number): void {
    if (!('tx' in msg) || msg.tx !== this.tx) return;
    this.waiting = false;
    switch (msg.t) {
      case 'began':
        this.snapshotTs = msg.snapshot_ts;
        break;
      case 'read_reply':
        this.reads.push({ at_ms: now, key: msg.key, value: msg.value, version_ts: msg.version_ts });
        break;
      case 'committed':
        this.outcome = 'committed';
        this.commitTs = msg.commit_ts;
        break;
      case 'aborted':
        this.outcome = 'aborted';
        this.next = this.steps.length;
        break;
      case 'write_ok':
      case 'begin':
      case 'read':
      case 'write':
      case 'commit':
        break;
      default:
        unreachable(msg);
    }
  }

  onTick(): void {
    const s = this.steps[this.next];
    if (!s || this.waiting) return;
    this.next++;
    this.waiting = true;
    const tx = this.tx;
    switch (s.op) {
      case 'begin':
        this.out.push({ to: this.server, msg: { t: 'begin', tx } });
        break;
      case 'read':
        this.out.push({ to: this.server, msg: { t: 'read', tx, key: s.key } });
        break;
      case 'write':
        this.out.push({ to: this.server, msg: { t: 'write', tx, key: s.key, value: s.value } });
        break;
      case 'commit':
        this.out.push({ to: this.server, msg: { t: 'commit', tx } });
        break;
      default:
        unreachable(s);
    }
  }

  nextDeadline(): number {
    if (this.waiting) return Infinity;
    return this.steps[this.next]?.at ?? Infinity;
  }

  drain(out: Array<Outgoing<MvccMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface MvccReport {
  demo: 'mvcc';
  seed: number;
  initial_values: Record<string, string>;
  reader: { tx: string; snapshot_ts: number | null; reads: ObservedRead[] };
  /**
   * Every read of the long reader returned the value committed as of its snapshot, however many commits
   * happened meanwhile.
   */
  snapshot_stable: boolean;
  commits_during_reader: number;
  new_reader: { tx: string; snapshot_ts: number | null; reads: ObservedRead[] };
  new_reader_sees_new_values: boolean;
  write_conflict: { key: string; contenders: string[]; winner: string | null; loser: string | null };
  write_conflict_detected: boolean;
  /** The contender whose commit reached the store first committed; the other aborted. */
  first_committer_wins: boolean;
  versions: Record<string, StoredVersion[]>;
  commits: CommitRecord[];
  finished_at_ms: number;
  narrative: string[];
}

export function runMvcc(opts: { seed?: number } = {}): MvccReport {
  const seed = opts.seed ?? 42;
  const narrator = new Narrator();
  const net = new DemoNet<MvccMsg>({ seed, latency: { minMs: 1, maxMs: 15 } });
  const store = new MvccStore('db', narrator);
  const initial = { x: '100', y: '200' };
  const loadTs = store.load('T0', initial);
  narrator.note(
    `Setup: the store db holds x=100 and y=200, committed by T0 at timestamp ${loadTs}; clients reach it with ` +
      `one-way latencies of 1-15 ms (seed ${seed}).`,
  );
  narrator.note(
    'T1 is a long reader; T2 updates x and y while T1 runs; T3 and T4 then race to overwrite x; T5 is a new ' +
      'reader that starts after all of that.',
  );

  // Step times leave room for the round trips before them (each at most 30 ms), so the story's order holds
  // for every seed.
  const reader = new TxClient('r1', 'T1', 'db', [
    { op: 'begin', at: 0 },
    { op: 'read', key: 'x', at: 10 },
    { op: 'read', key: 'y', at: 20 },
    { op: 'read', key: 'x', at: 380 },
    { op: 'read', key: 'y', at: 390 },
    { op: 'read', key: 'x', at: 600 },
    { op: 'commit', at: 610 },
  ]);
  const updater = new TxClient('w1', 'T2', 'db', [
    { op: 'begin', at: 100 },
    { op: 'write', key: 'x', value: '150', at: 110 },
    { op: 'write', key: 'y', value: '250', at: 120 },
    { op: 'commit', at: 130 },
  ]);
  // T3 and T4 both start from the same snapshot, both write x and send their commits at the same
  // moment: the fabric's latencies decide which commit reaches the store first.
  const racerA = new TxClient('w2', 'T3', 'db', [
    { op: 'begin', at: 250 },
    { op: 'write', key: 'x', value: '175', at: 290 },
    { op: 'commit', at: 330 },
  ]);
  const racerB = new TxClient('w3', 'T4', 'db', [
    { op: 'begin', at: 250 },
    { op: 'write', key: 'x', value: '190', at: 290 },
    { op: 'commit', at: 330 },
  ]);
  const newReader = new TxClient('r2', 'T5', 'db', [
    { op: 'begin', at: 450 },
    { op: 'read', key: 'x', at: 460 },
    { op: 'read', key: 'y', at: 470 },
    { op: 'commit', at: 480 },
  ]);
  const clients = [reader, updater, racerA, racerB, newReader];
  net.add(store);
  for (const c of clients) net.add(c);
  net.runUntilOr(() => clients.every((c) => c.outcome !== undefined), 5_000);

  // Snapshot stability, judged from the store's own version history: each read equals the version visible at
  // the snapshot.
  const rSnap = reader.snapshotTs;
  const snapshot_stable =
    rSnap !== undefined &&
    reader.reads.length >= 5 &&
    reader.reads.every((r) => r.value === (store.visible(r.key, rSnap)?.value ?? null)) &&
    sameValuePerKey(reader.reads);
  const readerBegan = rSnap ?? 0;
  const readerEnd = store.commits.find((c) => c.tx === 'T1')?.at_ms ?? Infinity;
  const commitsDuringReader = store.commits.filter(
    (c) => c.outcome === 'committed' && c.commit_ts !== undefined && c.commit_ts > readerBegan && c.at_ms < readerEnd,
  ).length;
  const latest = (key: string): string | null => store.versions.get(key)?.at(-1)?.value ?? null;
  const new_reader_sees_new_values =
    newReader.reads.length === 2 &&
    newReader.reads.every((r) => r.value === latest(r.key) && r.value !== (initial as Record<string, string>)[r.key]);

  const raceCommits = store.commits.filter((c) => c.tx === 'T3' || c.tx === 'T4');
  const first = raceCommits[0];
  const second = raceCommits[1];
  const winner = raceCommits.find((c) => c.outcome === 'committed')?.tx ?? null;
  const loser = raceCommits.find((c) => c.outcome === 'aborted')?.tx ?? null;
  const write_conflict_detected = raceCommits.some((c) => c.outcome === 'aborted' && c.conflict_key === 'x');
  const first_committer_wins = first?.outcome === 'committed' && second?.outcome === 'aborted';

  narrator.note(
    `Outcome: T1's reads ${snapshot_stable ? 'stayed' : 'did NOT stay'} on its snapshot across ` +
      `${commitsDuringReader} concurrent commit(s); T5 ${new_reader_sees_new_values ? 'sees' : 'does not see'} the ` +
      `new values; ${winner ?? 'nobody'} won the race on x and ${loser ?? 'nobody'} was aborted.`,
  );

  const versions: Record<string, StoredVersion[]> = {};
  for (const [k, list] of store.versions) versions[k] = list.map((v) => ({ ...v }));
  return {
    demo: 'mvcc',
    seed,
    initial_values: initial,
    reader: { tx: reader.tx, snapshot_ts: rSnap ?? null, reads: reader.reads },
    snapshot_stable,
    commits_during_reader: commitsDuringReader,
    new_reader: { tx: newReader.tx, snapshot_ts: newReader.snapshotTs ?? null, reads: newReader.reads },
    new_reader_sees_new_values,
    write_conflict: { key: 'x', contenders: ['T3', 'T4'], winner, loser },
    write_conflict_detected,
    first_committer_wins,
    versions,
    commits: store.commits,
    finished_at_ms: net.now,
    narrative: narrator.sentences(),
  };
}

function sameValuePerKey(reads: ObservedRead[]): boolean {
  const seen = new Map<string, string | null>();
  for (const r of reads) {
    if (seen.has(r.key) && seen.get(r.key) !== r.value) return false;
    seen.set(r.key, r.value);
  }
  return true;
}
