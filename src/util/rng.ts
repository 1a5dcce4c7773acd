/**
 * Seeded pseudo-random source (sfc32 seeded through splitmix32). Every protocol core and the fabric
 * take one of these instead of Math.random, so a whole run replays from one seed.
 * Not cryptographic.
 */
import type { Rng } from '../../protocol/rng.js';

/** The contract lives in protocol/rng.ts (the core contract may import nothing from src/). */
export type { Rng };

function splitmix32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class SeededRng implements Rng {
  // The four words of state, kept as int32 (`| 0`): small integers to V8, so no field holds a boxed
  // number. Every step is arithmetic mod 2^32, so the words have the same bits as uint32 ones would,
  // and u32() gives the same numbers.
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    const sm = splitmix32(Math.floor(seed) ^ Math.floor(seed / 0x100000000));
    this.a = sm() | 0;
    this.b = sm() | 0;
    this.c = sm() | 0;
    this.d = sm() | 0;
    for (let i = 0; i < 12; i++) this.u32();
  }

  private u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  next(): number {
    return this.u32() / 0x100000000;
  }

  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    if (p <= 0) return false;
    if (p >= 1) return true;
    return this.next() < p;
  }

  fork(): Rng {
    return new SeededRng(this.u32() * 0x100000000 + this.u32());
  }
}

/** A source seeded from the OS, for the live (worker) mode; still an Rng so cores never see Math.random. */
export function liveRng(): Rng {
  return new SeededRng(Math.floor(Math.random() * 0x1_0000_0000) * 0x10000 + Math.floor(Math.random() * 0x10000));
}
