/**
 * The distributed swarm's pure pieces: a `--seeds A..B` window, its split into queued ranges (jobs),
 * a job's payload decoded at the edge, where a seed lives in the Redis bitmaps, and the command that
 * replays a seed locally. No Redis, no BullMQ, no clock here: store.ts and commands.ts do the I/O.
 */
import { distributedRangeSeedsMax, distributedSeedMax, distributedSeedsPerSubmitMax } from '../../limits.js';

/** Prefix of BullMQ's keys for the swarm's queues (the results live under store.ts's prefix). */
export const queueKeyPrefix = 'simlab-swarm';

export const distributedStrategies = ['raft', 'single_leader', 'multi_leader', 'leaderless'] as const;
export type DistributedStrategy = (typeof distributedStrategies)[number];

export function isDistributedStrategy(s: string): s is DistributedStrategy {
  return (distributedStrategies as readonly string[]).includes(s);
}

/** Seeds first..last inclusive, of one strategy: the payload of one queued job. */
export interface SeedRange {
  strategy: DistributedStrategy;
  first: number;
  last: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** `A..B` (inclusive, A <= B) or a single seed `N`, within 0..distributedSeedMax and the per-submit cap. */
export function parseSeedWindow(text: string): Parsed<{ first: number; last: number }> {
  const m = /^(\d+)(?:\.\.(\d+))?$/.exec(text.trim());
  if (!m)
    return { ok: false, error: `--seeds must be A..B (two non-negative integers) or N, got ${JSON.stringify(text)}` };
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  if (first > distributedSeedMax || last > distributedSeedMax) {
    return { ok: false, error: `--seeds: seeds go up to ${distributedSeedMax}` };
  }
  if (last < first) return { ok: false, error: `--seeds ${text}: the last seed is below the first` };
  const count = last - first + 1;
  if (count > distributedSeedsPerSubmitMax) {
    return {
      ok: false,
      error: `--seeds ${text} spans ${count} seeds; one submit takes at most ${distributedSeedsPerSubmitMax}`,
    };
  }
  return { ok: true, value: { first, last } };
}

/**
 * Seeds per bitmap key in Redis: a seed's done/submitted bit is bit `seed % bitmapChunkSeeds` of the
 * key for chunk `floor(seed / bitmapChunkSeeds)`, so a window far from 0 costs 128 KiB keys near it,
 * not a bitmap reaching back to seed 0.
 */
export const bitmapChunkSeeds = 2 ** 20;

export function bitmapChunk(seed: number): number {
  return Math.floor(seed / bitmapChunkSeeds);
}

export function bitmapOffset(seed: number): number {
  return seed % bitmapChunkSeeds;
}

/**
 * Splits first..last into ranges of at most `size` seeds, none crossing a bitmap chunk boundary
 * (so each range's bits live in one key).
 */
export function splitRanges(strategy: DistributedStrategy, first: number, last: number, size: number): SeedRange[] {
  const out: SeedRange[] = [];
  let s = first;
  while (s <= last) {
    const chunkEnd = (bitmapChunk(s) + 1) * bitmapChunkSeeds - 1;
    const e = Math.min(last, s + size - 1, chunkEnd);
    out.push({ strategy, first: s, last: e });
    s = e + 1;
  }
  return out;
}

/** A job's payload as read back from Redis, checked: a malformed one fails its job for good. */
export function decodeSeedRange(data: unknown): Parsed<SeedRange> {
  if (typeof data !== 'object' || data === null) return { ok: false, error: 'job data: not an object' };
  const d = data as Record<string, unknown>;
  const { strategy, first, last } = d;
  if (typeof strategy !== 'string' || !isDistributedStrategy(strategy)) {
    return { ok: false, error: `job data: unknown strategy ${JSON.stringify(strategy)}` };
  }
  const seedOk = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;
  if (!seedOk(first) || !seedOk(last) || last < first) {
    return { ok: false, error: `job data: bad seed range ${JSON.stringify(first)}..${JSON.stringify(last)}` };
  }
  if (last - first + 1 > distributedRangeSeedsMax || bitmapChunk(first) !== bitmapChunk(last)) {
    return { ok: false, error: `job data: range ${first}..${last} is larger than a range may be` };
  }
  return { ok: true, value: { strategy, first, last } };
}

/** The command that replays one seed locally, from a checkout: what `report` prints for a failure. */
export function replayCommandFor(strategy: DistributedStrategy, seed: number): string {
  return `make sim STRATEGY=${strategy} SEED=${seed}`;
}

/** The same replay through the installed command line. */
export function cliReplayCommandFor(strategy: DistributedStrategy, seed: number): string {
  return `simlab-swarm --seed ${seed} --strategy ${strategy} --verbose`;
}

/**
 * Seeds of `range` whose bit is clear in `bits`: the bytes GETRANGE returned for the range's chunk,
 * starting at byte `fromByte` (Redis bitmaps number bits from the most significant bit of byte 0;
 * bytes past the end of the key read as zero, as Redis treats them).
 */
export function clearSeeds(range: SeedRange, bits: Uint8Array, fromByte: number): number[] {
  const out: number[] = [];
  for (let s = range.first; s <= range.last; s++) {
    const off = bitmapOffset(s);
    const byte = bits[(off >> 3) - fromByte] ?? 0;
    if ((byte & (0x80 >> (off & 7))) === 0) out.push(s);
  }
  return out;
}

/** The byte span (inclusive) of a range's bits in its chunk key: the GETRANGE arguments. */
export function byteSpan(range: SeedRange): { from: number; to: number } {
  return { from: bitmapOffset(range.first) >> 3, to: bitmapOffset(range.last) >> 3 };
}
