/**
 * The auth service: login with rate limiting, refresh-token rotation, bearer-token authentication,
 * user creation, and start-up bootstrap (the JWT secret from FLAGS_JWT_SECRET or generated once and
 * kept in the store; the first admin from FLAGS_ADMIN_EMAIL / FLAGS_ADMIN_PASSWORD). Outcomes are
 * values with codes; the HTTP layer maps them to 401/403/429. It knows nothing of routes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '../../util/logger.js';
import type { FlagStore, Role, UserRecord, WriteResult } from '../store/types.js';
import { decoyHash, hashPassword, verifyPassword } from './password.js';
import { SlidingWindowLimiter, type RateLimitConfig } from './rate-limit.js';
import { accessTokenTtlSec, newRefreshToken, refreshTokenHash, refreshTokenTtlSec, signAccessToken, verifyAccessToken, type Principal } from './tokens.js';

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType: 'Bearer';
  access_token: string;
  refresh_token: string;
  expires_in: number;
  token_type: 'Bearer';
}

export type LoginOutcome =
  | { ok: true; tokens: TokenPair; user: UserRecord }
  | { ok: false; code: 'invalid_credentials' }
  | { ok: false; code: 'rate_limited'; retryAfterSec: number };

export type RefreshOutcome = { ok: true; tokens: TokenPair } | { ok: false; code: 'invalid_token' };

export type AuthOutcome = { ok: true; principal: Principal } | { ok: false; code: 'missing_token' | 'invalid_token' };

export const jwtSecretSetting = 'jwt_secret';

export interface AuthServiceOptions {
  store: FlagStore;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Wall clock in ms (injected so tests can move it). */
  now: () => number;
  loginRateLimit: RateLimitConfig;
}

/** Verified access tokens remembered (until they expire) so a busy client does not pay HMAC + JSON per request. */
const verifiedTokensMax = 10_000;

export class AuthService {
  readonly limiter: SlidingWindowLimiter;
  private readonly verified = new Map<string, { principal: Principal; expMs: number }>();

  private constructor(
    private readonly store: FlagStore,
    private readonly secret: Uint8Array,
    private readonly now: () => number,
    limit: RateLimitConfig,
  ) {
    this.limiter = new SlidingWindowLimiter(limit);
  }

  static async start(o: AuthServiceOptions): Promise<AuthService> {
    const fromEnv = o.env['FLAGS_JWT_SECRET'];
    let secretText: string;
    if (fromEnv !== undefined && fromEnv !== '') {
      if (Buffer.byteLength(fromEnv) < 32) o.logger.warn('flags: FLAGS_JWT_SECRET is shorter than 32 bytes; HS256 wants at least 32');
      secretText = fromEnv;
    } else {
      // Generated once and kept in the database, so tokens stay valid across restarts and instances.
      secretText = await o.store.settingOrInit(jwtSecretSetting, randomBytes(48).toString('base64url'));
    }
    const svc = new AuthService(o.store, new TextEncoder().encode(secretText), o.now, o.loginRateLimit);
    await svc.bootstrapAdmin(o.env, o.logger);
    return svc;
  }

  /** The first admin: FLAGS_ADMIN_EMAIL / FLAGS_ADMIN_PASSWORD, created when that email is unknown. */
  private async bootstrapAdmin(env: NodeJS.ProcessEnv, logger: Logger): Promise<void> {
    const email = env['FLAGS_ADMIN_EMAIL'];
    const password = env['FLAGS_ADMIN_PASSWORD'];
    if (email && password) {
      if (await this.store.getUserByEmail(email)) return;
      const r = await this.createUser(email, password, 'admin');
      if (r.ok) logger.info({ email: r.value.email }, 'flags: created the first admin from FLAGS_ADMIN_EMAIL');
      return;
    }
    if ((await this.store.countUsers()) > 0) return;
    // No users and no configured admin: nobody could ever log in. Make one and say so once.
    const generated = randomBytes(12).toString('base64url');
    const fallbackEmail = email || 'admin@localhost';
    const r = await this.createUser(fallbackEmail, password || generated, 'admin');
    if (r.ok) {
      logger.warn(
        { email: r.value.email, ...(password ? {} : { password: generated }) },
        'flags: no FLAGS_ADMIN_EMAIL/FLAGS_ADMIN_PASSWORD given; created an admin (set them to choose your own)',
      );
    }
  }

  async createUser(email: string, password: string, role: Role): Promise<WriteResult<UserRecord>> {
    const user: UserRecord = {
      id: randomUUID(),
      email: email.toLowerCase(),
      role,
      passwordHash: await hashPassword(password),
      createdAt: new Date(this.now()).toISOString(),
    };
    return this.store.createUser(user);
  }

  async login(email: string, password: string, address: string): Promise<LoginOutcome> {
    const gate = this.limiter.attempt(address, this.now());
    if (!gate.ok) return { ok: false, code: 'rate_limited', retryAfterSec: gate.retryAfterSec };
    const user = await this.store.getUserByEmail(email);
    // Unknown email and wrong password take the same time and give the same answer.
    const matches = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
    if (!user || !matches) return { ok: false, code: 'invalid_credentials' };
    return { ok: true, tokens: await this.issue(user), user };
  }

  /** Rotation: the presented refresh token is consumed (single use) and a new pair issued. */
  async refresh(refreshToken: string): Promise<RefreshOutcome> {
    const nowIso = new Date(this.now()).toISOString();
    const userId = await this.store.consumeRefreshToken(refreshTokenHash(refreshToken), nowIso);
    const user = userId === undefined ? undefined : await this.store.getUserById(userId);
    if (!user) return { ok: false, code: 'invalid_token' };
    return { ok: true, tokens: await this.issue(user) };
  }

  private async issue(user: UserRecord): Promise<TokenPair> {
    const now = this.now();
    const accessToken = await signAccessToken(this.secret, { userId: user.id, email: user.email, role: user.role }, now);
    const refreshToken = newRefreshToken();
    await this.store.saveRefreshToken(
      refreshTokenHash(refreshToken),
      user.id,
      new Date(now + refreshTokenTtlSec * 1000).toISOString(),
      new Date(now).toISOString(),
    );
    return {
      accessToken,
      refreshToken,
      expiresIn: accessTokenTtlSec,
      tokenType: 'Bearer',
      access_token: accessToken,
      refresh_token: refreshToken,
      expires_in: accessTokenTtlSec,
      token_type: 'Bearer',
    };
  }

  /** `Authorization: Bearer <jwt>` → the principal, or why not. */
  async authenticate(authorization: string | undefined): Promise<AuthOutcome> {
    if (authorization === undefined || /^(Bearer)?\s*$/i.test(authorization.trim())) return { ok: false, code: 'missing_token' };
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization.trim());
    if (!m?.[1]) return { ok: false, code: 'invalid_token' };
    const token = m[1];
    const now = this.now();
    const known = this.verified.get(token);
    if (known && now < known.expMs) return { ok: true, principal: known.principal };
    if (known) this.verified.delete(token);
    const v = await verifyAccessToken(this.secret, token, now);
    if (!v) return { ok: false, code: 'invalid_token' };
    this.verified.set(token, v);
    if (this.verified.size > verifiedTokensMax) this.verified.delete(this.verified.keys().next().value as string);
    return { ok: true, principal: v.principal };
  }
}
