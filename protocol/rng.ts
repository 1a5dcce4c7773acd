/**
 * The seeded random source every protocol core and the fabric take instead of Math.random, as a
 * contract only: the implementation (sfc32 seeded through splitmix32) is src/util/rng.ts. Kept here
 * so the core contract (core.ts) imports nothing from src/.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Uniform integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  /** A child source with its own stream, derived deterministically from this one. */
  fork(): Rng;
}
