/**
 * The distributed swarm's results in Redis, kept apart from BullMQ's own keys: per strategy a
 * bitmap of seeds submitted and one of seeds done (chunked, see ranges.ts), a meta hash of counters
 * and times, and a hash of failing seeds. Recording a seed is one Lua script that sets its done bit
 * and counts it only when the bit was clear, so a range retried after a worker died (or run twice by
 * a worker that lost its lock) never counts a seed twice. It holds no queue logic (commands.ts).
 */
import type { Redis } from 'ioredis';
import { distributedFailuresKeptMax } from '../../limits.js';
import {
  bitmapChunk,
  bitmapOffset,
  byteSpan,
  clearSeeds,
  replayCommandFor,
  type DistributedStrategy,
  type SeedRange,
} from './ranges.js';

/** Prefix of the results keys (BullMQ's keys use `simlab-swarm`, see commands.ts). */
export const resultsKeyPrefix = 'simlab-swarm-results';

/** A failing seed as stored and as `report --json` prints it (plus the violations, for the text report). */
export interface StoredFailure {
  seed: number;
  strategy: DistributedStrategy;
  replay: string;
  violations: string[];
}

export interface Counters {
  seedsTotal: number;
  seedsDone: number;
  seedsFailed: number;
  /** Redis time (ms) a worker first took a range of this queue; null before. */
  startedMs: number | null;
  /** Redis time (ms) the latest seed was recorded; null before. */
  lastDoneMs: number | null;
  /** Redis time now, ms: one clock for every machine. */
  nowMs: number;
}

// Redis TIME as ms inside a script (scripts replicate by effects in Redis >= 5, so TIME is allowed).
const nowMsLua =
  "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n";

/** KEYS: submitted bitmap, meta. ARGV: first, last offset. Sets the bits; counts the new ones into seeds_total. */
const markSubmittedLua = `
local fresh = 0
for off = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  if redis.call('SETBIT', KEYS[1], off, 1) == 0 then fresh = fresh + 1 end
end
if fresh > 0 then redis.call('HINCRBY', KEYS[2], 'seeds_total', fresh) end
return fresh
`;

/**
 * KEYS: done bitmap, meta, failures. ARGV: offset, ok (1/0), failure field, failure JSON, kept max.
 * Returns 1 when the seed is recorded now, 0 when it had been already (nothing changes then).
 */
const recordSeedLua = `
if redis.call('SETBIT', KEYS[1], ARGV[1], 1) == 1 then return 0 end
${nowMsLua}
redis.call('HINCRBY', KEYS[2], 'seeds_done', 1)
redis.call('HSET', KEYS[2], 'last_done_ms', now)
if ARGV[2] == '0' then
  local n = redis.call('HINCRBY', KEYS[2], 'seeds_failed', 1)
  if n <= tonumber(ARGV[5]) then redis.call('HSET', KEYS[3], ARGV[3], ARGV[4]) end
end
return 1
`;

/** KEYS: meta. Sets started_ms once (the first range any worker took). */
const markStartedLua = `
${nowMsLua}
redis.call('HSETNX', KEYS[1], 'started_ms', now)
return now
`;

const nowLua = `${nowMsLua}return now`;

export class ResultStore {
  constructor(
    private readonly redis: Redis,
    readonly queue: string,
  ) {}

  private key(...parts: Array<string | number>): string {
    return [resultsKeyPrefix, this.queue, ...parts].join(':');
  }

  private bitmapKey(kind: 'submitted' | 'done', strategy: DistributedStrategy, seed: number): string {
    return this.key(kind, strategy, bitmapChunk(seed));
  }

  private get metaKey(): string {
    return this.key('meta');
  }

  private get failuresKey(): string {
    return this.key('failures');
  }

  /** Seeds of each range not recorded yet (one GETRANGE per range, pipelined). */
  async undoneSeeds(ranges: SeedRange[]): Promise<number[][]> {
    if (ranges.length === 0) return [];
    const p = this.redis.pipeline();
    for (const r of ranges) {
      const span = byteSpan(r);
      p.getrangeBuffer(this.bitmapKey('done', r.strategy, r.first), span.from, span.to);
    }
    const replies = (await p.exec()) ?? [];
    return ranges.map((r, i) => {
      const [err, bytes] = replies[i] ?? [new Error('no reply'), null];
      if (err) throw err;
      return clearSeeds(r, bytes as Buffer, byteSpan(r).from);
    });
  }

  /** Marks ranges submitted; returns how many of their seeds had never been submitted (added to seeds_total). */
  async markSubmitted(ranges: SeedRange[]): Promise<number> {
    if (ranges.length === 0) return 0;
    const p = this.redis.pipeline();
    for (const r of ranges) {
      p.eval(
        markSubmittedLua,
        2,
        this.bitmapKey('submitted', r.strategy, r.first),
        this.metaKey,
        bitmapOffset(r.first),
        bitmapOffset(r.last),
      );
    }
    let fresh = 0;
    for (const [err, n] of (await p.exec()) ?? []) {
      if (err) throw err;
      fresh += Number(n);
    }
    return fresh;
  }

  async markStarted(): Promise<void> {
    await this.redis.eval(markStartedLua, 1, this.metaKey);
  }

  /** Records one seed's outcome; true when it counted (false: it had been recorded already). */
  async recordSeed(strategy: DistributedStrategy, seed: number, ok: boolean, violations: string[]): Promise<boolean> {
    const failure: StoredFailure = { seed, strategy, replay: replayCommandFor(strategy, seed), violations };
    const n = await this.redis.eval(
      recordSeedLua,
      3,
      this.bitmapKey('done', strategy, seed),
      this.metaKey,
      this.failuresKey,
      bitmapOffset(seed),
      ok ? 1 : 0,
      `${strategy}:${seed}`,
      ok ? '' : JSON.stringify(failure),
      distributedFailuresKeptMax,
    );
    return Number(n) === 1;
  }

  /** Whether one seed is recorded (for tests and the report's consistency check). */
  async isDone(strategy: DistributedStrategy, seed: number): Promise<boolean> {
    return (await this.redis.getbit(this.bitmapKey('done', strategy, seed), bitmapOffset(seed))) === 1;
  }

  async counters(): Promise<Counters> {
    const [meta, now] = await Promise.all([this.redis.hgetall(this.metaKey), this.redis.eval(nowLua, 0)]);
    const num = (k: string): number => Number(meta[k] ?? 0);
    const ms = (k: string): number | null => (meta[k] === undefined ? null : Number(meta[k]));
    return {
      seedsTotal: num('seeds_total'),
      seedsDone: num('seeds_done'),
      seedsFailed: num('seeds_failed'),
      startedMs: ms('started_ms'),
      lastDoneMs: ms('last_done_ms'),
      nowMs: Number(now),
    };
  }

  /** The failing seeds kept (at most distributedFailuresKeptMax), by strategy then seed. */
  async failures(): Promise<StoredFailure[]> {
    const all = await this.redis.hvals(this.failuresKey);
    const out: StoredFailure[] = [];
    for (const text of all) {
      try {
        out.push(JSON.parse(text) as StoredFailure);
      } catch {
        // A field somebody else wrote into our hash: not ours to report.
      }
    }
    return out.sort((a, b) => (a.strategy === b.strategy ? a.seed - b.seed : a.strategy < b.strategy ? -1 : 1));
  }
}
