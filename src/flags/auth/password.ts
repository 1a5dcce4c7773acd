/**
 * Password hashing with node:crypto scrypt, a fresh 16-byte salt per user, stored as
 * `scrypt$N$r$p$salt$hash` (base64url) so parameters can be raised later without breaking old hashes.
 * Comparison is constant-time. This module never stores or logs a clear password.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const keyLengthBytes = 32;
const saltBytes = 16;
/** OWASP's scrypt minimum (N=2^17 is stronger; 2^15 keeps login under ~100 ms on 2 cores). */
const defaultParams = { N: 1 << 15, r: 8, p: 1 };

function derive(password: string, salt: Buffer, params: { N: number; r: number; p: number }): Promise<Buffer> {
  const opts: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, keyLengthBytes, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(saltBytes);
  const key = await derive(password, salt, defaultParams);
  const { N, r, p } = defaultParams;
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** True when `password` produces `stored`. A malformed stored hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![N, r, p].every((x) => Number.isSafeInteger(x) && x > 0)) return false;
  const salt = Buffer.from(parts[4] ?? '', 'base64url');
  const expected = Buffer.from(parts[5] ?? '', 'base64url');
  if (expected.length !== keyLengthBytes) return false;
  const actual = await derive(password, salt, { N, r, p });
  return timingSafeEqual(actual, expected);
}

/**
 * A hash of a password nobody has: login for an unknown email verifies against it, so an unknown
 * email costs as much time as a wrong password (no user enumeration by timing).
 */
let decoy: Promise<string> | undefined;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64url'));
  return decoy;
}
