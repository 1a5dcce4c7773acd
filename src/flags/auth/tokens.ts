/**
 * Access tokens (HS256 JWT signed via jose and verified synchronously with node:crypto, so the HTTP
 * edge can authenticate before it reads a body; one hour; claims: sub = user id, email, role) and opaque
 * refresh tokens (32 random bytes; only their SHA-256 is stored, so a database leak yields no
 * usable token). Time is passed in. Verification failures are values, not exceptions.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Role } from '../store/types.js';
import { isRole } from './roles.js';
import { accessTokenCharsMax, accessTokenTtlSec, refreshTokenTtlSec } from '../limits.js';

export { accessTokenCharsMax, accessTokenTtlSec, refreshTokenTtlSec };

const issuer = 'simlab-flags';

export interface Principal {
  userId: string;
  email: string;
  role: Role;
}

export async function signAccessToken(secret: Uint8Array, p: Principal, nowMs: number): Promise<string> {
  const iat = Math.floor(nowMs / 1000);
  return new SignJWT({ email: p.email, role: p.role })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(p.userId)
    .setIssuer(issuer)
    .setIssuedAt(iat)
    .setExpirationTime(iat + accessTokenTtlSec)
    .sign(secret);
}

const base64urlPart = /^[A-Za-z0-9_-]*$/;

/** A base64url JSON object, or undefined (not canonical base64url, not JSON, not an object). */
function decodeJsonPart(part: string): Record<string, unknown> | undefined {
  if (!base64urlPart.test(part)) return undefined;
  const bytes = Buffer.from(part, 'base64url');
  if (bytes.toString('base64url') !== part) return undefined;
  try {
    const v: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The principal and the token's expiry (ms), or undefined for a bad, forged or expired token.
 * RFC 7519 / 7515 compact HS256 only, checked as jose's jwtVerify does: header `alg` HS256 and no
 * `crit`; a constant-time signature check; `iss` ours; `exp` required and in the future; `nbf`,
 * when present, not in the future. Synchronous, so it can run before a request body is read.
 */
export function verifyAccessToken(
  secret: Uint8Array,
  token: string,
  nowMs: number,
): { principal: Principal; expMs: number } | undefined {
  if (token.length > accessTokenCharsMax) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJsonPart(h);
  if (!header || header['alg'] !== 'HS256' || header['crit'] !== undefined || header['b64'] !== undefined)
    return undefined;
  if (!base64urlPart.test(s)) return undefined;
  const given = Buffer.from(s, 'base64url');
  const expected = createHmac('sha256', secret).update(`${h}.${p}`).digest();
  if (given.length !== expected.length || given.toString('base64url') !== s || !timingSafeEqual(given, expected))
    return undefined;
  const payload = decodeJsonPart(p);
  if (!payload) return undefined;
  const { sub, email, role, exp, nbf, iss, iat } = payload;
  const nowSec = Math.floor(nowMs / 1000);
  if (iss !== issuer || typeof exp !== 'number' || !Number.isFinite(exp) || exp <= nowSec) return undefined;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > nowSec)) return undefined;
  if (iat !== undefined && typeof iat !== 'number') return undefined;
  if (typeof sub !== 'string' || typeof email !== 'string' || !isRole(role)) return undefined;
  return { principal: { userId: sub, email, role }, expMs: exp * 1000 };
}

export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

export function refreshTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
