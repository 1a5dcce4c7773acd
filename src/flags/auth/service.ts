/**
 * The auth service: login with rate limiting (per client address and per account), refresh-token
 * rotation, bearer-token authentication (synchronous, so the HTTP edge runs it before a body is read),
 * user creation, and start-up bootstrap (the JWT secret from FLAGS_JWT_SECRET or generated once and
 * kept in the store; the first admin from FLAGS_ADMIN_EMAIL / FLAGS_ADMIN_PASSWORD). Outcomes are
 * values with codes; the HTTP layer maps them to 401/403/429. It knows nothing of routes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Logger } from '../../util/logger.js';
import type { FlagStore, Role, UserRecord, WriteResult } from '../store/types.js';
import { decoyHash, hashPassword, verifyPassword } from './password.js';
import { SlidingWindowLimiter, type RateLimitConfig } from './rate-limit.js';
import { jwtSecretBytesMin, passwordCharsMax, passwordCharsMin, verifiedTokensMax } from '../limits.js';
import {
  accessTokenTtlSec,
  newRefreshToken,
  refreshTokenHash,
  refreshTokenTtlSec,
  signAccessToken,
  verifyAccessToken,
  type Principal,
} from './tokens.js';

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
  | { ok: false; code: 'rate_limited'; retryAfterSec: number; scope: 'address' | 'account' };

export type RefreshOutcome = { ok: true; tokens: TokenPair } | { ok: false; code: 'invalid_token' };

export type AuthOutcome = { ok: true; principal: Principal } | { ok: false; code: 'missing_token' | 'invalid_token' };

export const jwtSecretSetting = 'jwt_secret';

export interface AuthServiceOptions {
  store: FlagStore;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  /** Wall clock in ms (injected so tests can move it). */
  now: () => number;
  /** Attempts per client address. */
  loginRateLimit: RateLimitConfig;
  /** Attempts per account (the email as given, lower-cased), from every address together. */
  accountRateLimit: RateLimitConfig;
}

/** Why a password cannot be set or checked, or undefined when its length is within the limits. */
export function passwordLengthProblem(password: string): string | undefined {
  if (password.length < passwordCharsMin || password.length > passwordCharsMax) {
    return (
      `password: must be ${passwordCharsMin} to ${passwordCharsMax} characters (the limits; ` +
      `got ${password.length})`
    );
  }
  return undefined;
}

export class AuthService {
  readonly limiter: SlidingWindowLimiter;
  readonly accountLimiter: SlidingWindowLimiter;
  private readonly verified = new Map<string, { principal: Principal; expMs: number }>();

  private constructor(
    private readonly store: FlagStore,
    private readonly secret: Uint8Array,
    private readonly now: () => number,
    limit: RateLimitConfig,
    accountLimit: RateLimitConfig,
  ) {
    this.limiter = new SlidingWindowLimiter(limit);
    this.accountLimiter = new SlidingWindowLimiter(accountLimit);
  }

  static async start(o: AuthServiceOptions): Promise<AuthService> {
    const fromEnv = o.env['FLAGS_JWT_SECRET'];
    let secretText: string;
    if (fromEnv !== undefined && fromEnv !== '') {
      if (Buffer.byteLength(fromEnv) < jwtSecretBytesMin)
        o.logger.warn(`flags: FLAGS_JWT_SECRET is shorter than ${jwtSecretBytesMin} bytes; HS256 wants at least 32`);
      secretText = fromEnv;
    } else {
      // Generated once and kept in the database, so tokens stay valid across restarts and instances.
      secretText = await o.store.settingOrInit(jwtSecretSetting, randomBytes(48).toString('base64url'));
    }
    const svc = new AuthService(
      o.store,
      new TextEncoder().encode(secretText),
      o.now,
      o.loginRateLimit,
      o.accountRateLimit,
    );
    await svc.bootstrapAdmin(o.env, o.logger);
    return svc;
  }

  /** The first admin: FLAGS_ADMIN_EMAIL / FLAGS_ADMIN_PASSWORD, created when that email is unknown. */
  private async bootstrapAdmin(env: NodeJS.ProcessEnv, logger: Logger): Promise<void> {
    const email = env['FLAGS_ADMIN_EMAIL'];
    const password = env['FLAGS_ADMIN_PASSWORD'];
    // A configured password outside the limits stops start-up, like any other bad setting.
    const problem = password ? passwordLengthProblem(password) : undefined;
    if (problem) throw new Error(`FLAGS_ADMIN_PASSWORD: ${problem.replace(/^password: /, '')}`);
    if (email && password) {
      if (await this.store.getUserByEmail(email)) return;
      const r = await this.createUser(email, password, 'admin');
      if (r.ok) logger.info({ email: r.value.email }, 'flags: created the first admin from FLAGS_ADMIN_EMAIL');
      else
        logger.error(
          { email, reason: r.message },
          'flags: cannot create the admin from FLAGS_ADMIN_EMAIL/FLAGS_ADMIN_PASSWORD',
        );
      return;
    }
    if ((await this.store.countUsers()) > 0) return;
    // No users and no configured admin: nobody could ever log in. Make one and say so once.
    const generated = randomBytes(12).toString('base64url');
    const fallbackEmail = email || 'admin@localhost';
    const r = await this.createUser(fallbackEmail, password || generated, 'admin');
    if (!r.ok) logger.error({ email: fallbackEmail, reason: r.message }, 'flags: cannot create the first admin');
    if (r.ok) {
      logger.warn(
        { email: r.value.email, ...(password ? {} : { password: generated }) },
        'flags: no FLAGS_ADMIN_EMAIL/FLAGS_ADMIN_PASSWORD given; created an admin (set them to choose your own)',
      );
    }
  }

  /** Refuses a password outside the length limits before hashing anything. */
  async createUser(email: string, password: string, role: Role): Promise<WriteResult<UserRecord>> {
    const problem = passwordLengthProblem(password);
    if (problem) return { ok: false, code: 'invalid', message: problem, field: 'password' };
    const user: UserRecord = {
      id: randomUUID(),
      email: email.toLowerCase(),
      role,
      passwordHash: await hashPassword(password),
      createdAt: new Date(this.now()).toISOString(),
    };
    return this.store.createUser(user);
  }

  /**
   * Counts the attempt against the address, then against the account (an address already over its
   * limit does not use up the account's). A password longer than the limit is never hashed: no
   * stored password can be that long, so it is simply wrong.
   */
  async login(email: string, password: string, address: string): Promise<LoginOutcome> {
    const now = this.now();
    const gate = this.limiter.attempt(address, now);
    if (!gate.ok) return { ok: false, code: 'rate_limited', retryAfterSec: gate.retryAfterSec, scope: 'address' };
    const account = this.accountLimiter.attempt(email.toLowerCase(), now);
    if (!account.ok) return { ok: false, code: 'rate_limited', retryAfterSec: account.retryAfterSec, scope: 'account' };
    if (password.length > passwordCharsMax) return { ok: false, code: 'invalid_credentials' };
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
    const accessToken = await signAccessToken(
      this.secret,
      { userId: user.id, email: user.email, role: user.role },
      now,
    );
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

  /** `Authorization: Bearer <jwt>` → the principal, or why not (see authenticateNow). */
  async authenticate(authorization: string | undefined): Promise<AuthOutcome> {
    return this.authenticateNow(authorization);
  }

  /** `Authorization: Bearer <jwt>` → the principal, or why not; synchronous (a `before` hook). */
  authenticateNow(authorization: string | undefined): AuthOutcome {
    if (authorization === undefined || /^(Bearer)?\s*$/i.test(authorization.trim()))
      return { ok: false, code: 'missing_token' };
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization.trim());
    if (!m?.[1]) return { ok: false, code: 'invalid_token' };
    const token = m[1];
    const now = this.now();
    const known = this.verified.get(token);
    if (known && now < known.expMs) return { ok: true, principal: known.principal };
    if (known) this.verified.delete(token);
    const v = verifyAccessToken(this.secret, token, now);
    if (!v) return { ok: false, code: 'invalid_token' };
    this.verified.set(token, v);
    if (this.verified.size > verifiedTokensMax) this.verified.delete(this.verified.keys().next().value as string);
    return { ok: true, principal: v.principal };
  }
}
