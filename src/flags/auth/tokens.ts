/**
 * Access tokens (HS256 JWT via jose, one hour, claims: sub = user id, email, role) and opaque
 * refresh tokens (32 random bytes; only their SHA-256 is stored, so a database leak yields no
 * usable token). Time is passed in. Verification failures are values, not exceptions.
 */
import { createHash, randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { Role } from '../store/types.js';
import { isRole } from './roles.js';

export const accessTokenTtlSec = 3600;
export const refreshTokenTtlSec = 30 * 24 * 3600;
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

/** The principal and the token's expiry (ms), or undefined for a bad, forged or expired token. */
export async function verifyAccessToken(secret: Uint8Array, token: string, nowMs: number): Promise<{ principal: Principal; expMs: number } | undefined> {
  try {
    const { payload } = await jwtVerify(token, secret, { algorithms: ['HS256'], issuer, currentDate: new Date(nowMs), requiredClaims: ['exp'] });
    const { sub, email, role, exp } = payload;
    if (typeof sub !== 'string' || typeof email !== 'string' || !isRole(role) || typeof exp !== 'number') return undefined;
    return { principal: { userId: sub, email, role }, expMs: exp * 1000 };
  } catch {
    return undefined;
  }
}

export function newRefreshToken(): string {
  return randomBytes(32).toString('base64url');
}

export function refreshTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
