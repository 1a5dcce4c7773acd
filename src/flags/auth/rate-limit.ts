import {
  loginAttemptsPerAccountMax,
  loginAttemptsPerAddressMax,
  loginLimiterEntriesMax,
  loginWindowMs,
} from '../limits.js';

/**
 * Login rate limiting per key (a client address, or an account): a sliding window of at most `attemptsMax` attempts per
 * `windowMs`. Pure: the caller passes the time. The address table is capped (`addressesMax`, least
 * recently seen evicted first, evictions counted) so a flood of addresses cannot grow memory.
 */

export interface RateLimitConfig {
  attemptsMax: number;
  windowMs: number;
  addressesMax: number;
}

export const defaultLoginRateLimit: RateLimitConfig = {
  attemptsMax: loginAttemptsPerAddressMax,
  windowMs: loginWindowMs,
  addressesMax: loginLimiterEntriesMax,
};
/** The same limiter keyed by account (lower-cased email) instead of address. */
export const defaultAccountRateLimit: RateLimitConfig = {
  attemptsMax: loginAttemptsPerAccountMax,
  windowMs: loginWindowMs,
  addressesMax: loginLimiterEntriesMax,
};

export type RateDecision = { ok: true } | { ok: false; retryAfterSec: number };

export class SlidingWindowLimiter {
  /** Per address, attempt times inside the window, oldest first (at most attemptsMax). */
  private readonly attempts = new Map<string, number[]>();
  evictions = 0;

  constructor(readonly config: RateLimitConfig) {}

  /** Records an attempt at `nowMs` unless the address is over its limit. */
  attempt(address: string, nowMs: number): RateDecision {
    const { attemptsMax, windowMs, addressesMax } = this.config;
    const times = (this.attempts.get(address) ?? []).filter((t) => t > nowMs - windowMs);
    this.attempts.delete(address);
    if (times.length >= attemptsMax) {
      this.attempts.set(address, times);
      const oldest = times[0] ?? nowMs;
      return { ok: false, retryAfterSec: Math.max(1, Math.ceil((oldest + windowMs - nowMs) / 1000)) };
    }
    times.push(nowMs);
    this.attempts.set(address, times);
    while (this.attempts.size > addressesMax) {
      const lru = this.attempts.keys().next().value as string;
      this.attempts.delete(lru);
      this.evictions++;
    }
    return { ok: true };
  }

  get trackedAddresses(): number {
    return this.attempts.size;
  }
}
