/**
 * Percentage-rollout bucketing, LaunchDarkly's algorithm (../shared/specs/DECISIONS.md "Bucketing"): SHA-1 of
 * `{flagKey}.{salt}.{value}` (salt = our flag key), or of `{seed}.{value}` when a seed is set; the
 * first 15 hex digits as an integer over 0xFFFFFFFFFFFFFFF give a bucket in [0, 1]. Pure: no state
 * beyond the hash. It does not choose the variation (evaluate.ts walks the rollout).
 */
import * as crypto from 'node:crypto';

/** 0xFFFFFFFFFFFFFFF: the largest 15-hex-digit number, LaunchDarkly's bucket scale. */
const LONG_SCALE = 0xfffffffffffffff;

// One-shot crypto.hash (Node >= 20.12) avoids a Hash object per call, and hex output is cheaper
// to make than a Buffer here (measured); createHash is the fallback on older Nodes.
const oneShot: ((alg: string, data: string, enc: 'hex') => string) | undefined =
  typeof (crypto as { hash?: unknown }).hash === 'function'
    ? (crypto.hash as (alg: string, data: string, enc: 'hex') => string)
    : undefined;

function sha1Hex(input: string): string {
  return oneShot ? oneShot('sha1', input, 'hex') : crypto.createHash('sha1').update(input).digest('hex');
}

/**
 * The bucket of one hash input: exactly LaunchDarkly's
 * `parseInt(sha1hex(input).substring(0, 15), 16) / 0xFFFFFFFFFFFFFFF`.
 */
export function bucketOfHashInput(input: string): number {
  return parseInt(sha1Hex(input).substring(0, 15), 16) / LONG_SCALE;
}

/** LaunchDarkly's bucket for `key.salt.value` (the form of its published test vectors). */
export function bucketWithSalt(flagKey: string, salt: string, value: string): number {
  return bucketOfHashInput(`${flagKey}.${salt}.${value}`);
}

/**
 * The prefix before the bucketed value: `{flagKey}.{flagKey}.` (salt = flag key), or `{seed}.`
 * when the flag sets a seed. Computed once per compiled flag.
 */
export function hashPrefix(flagKey: string, seed: string | undefined): string {
  return seed === undefined ? `${flagKey}.${flagKey}.` : `${seed}.`;
}

/**
 * The value bucketed on, from a context attribute: strings as they are, integers in decimal;
 * anything else (missing, fractional numbers, booleans, arrays) has no bucket value and buckets
 * to 0 (../shared/specs/DECISIONS.md: strings and integers only).
 */
export function bucketableValue(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  return undefined;
}
