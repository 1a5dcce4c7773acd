/**
 * Routes of the auth surface: `POST /auth/login`, `POST /auth/refresh` (both open), and the admin
 * user management `GET|POST /api/v1/users` plus `GET /api/v1/me`. Thin: decode, call AuthService,
 * map outcomes to statuses (401 `invalid credentials` / `invalid token`, 429 with Retry-After).
 */
import Type from 'typebox';
import { HttpError, type HttpApp } from '../../http/index.js';
import { unreachable } from '../../util/assert.js';
import { ROLES } from '../auth/roles.js';
import type { Role, UserRecord } from '../store/types.js';
import type { FlagsContext } from './context.js';
import { authenticated, edgeBody, requireRole, writeFailure } from './guard.js';
import { passwordLengthProblem } from '../auth/service.js';
import { emailCharsMax, passwordCharsMax, refreshTokenCharsMax } from '../limits.js';

// Login's password has no maximum in the schema: an over-long one is answered below with a 400
// naming the limit, without being hashed (the schema's message would not name the rule as well).
const LoginBody = Type.Object(
  { email: Type.String({ maxLength: emailCharsMax }), password: Type.String() },
  { additionalProperties: false },
);
const RefreshBody = Type.Object(
  {
    refreshToken: Type.Optional(Type.String({ maxLength: refreshTokenCharsMax })),
    refresh_token: Type.Optional(Type.String({ maxLength: refreshTokenCharsMax })),
  },
  { additionalProperties: false },
);
const CreateUserBody = Type.Object(
  {
    email: Type.String({ maxLength: emailCharsMax }),
    password: Type.String(),
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
  },
  { additionalProperties: false },
);

type LoginBodyT = Type.Static<typeof LoginBody>;
type RefreshBodyT = Type.Static<typeof RefreshBody>;
type CreateUserBodyT = Type.Static<typeof CreateUserBody>;

// Validated at the adapter's edge with the flags' wording (edgeBody), so a limit reads like every other.
const tokensResponse = Type.Object({
  accessToken: Type.String(),
  refreshToken: Type.String(),
  expiresIn: Type.Number({ description: 'seconds until the access token expires' }),
  tokenType: Type.Literal('Bearer'),
  access_token: Type.String(),
  refresh_token: Type.String(),
  expires_in: Type.Number(),
  token_type: Type.Literal('Bearer'),
});
const userResponse = Type.Object({
  id: Type.String(),
  email: Type.String(),
  role: Type.Union(ROLES.map((r) => Type.Literal(r))),
  createdAt: Type.String(),
});

/** A user as the API shows it: never the password hash. */
function publicUser(u: UserRecord): { id: string; email: string; role: Role; createdAt: string } {
  return { id: u.id, email: u.email, role: u.role, createdAt: u.createdAt };
}

export function registerAuthRoutes(app: HttpApp, ctx: FlagsContext): void {
  const { auth, metrics } = ctx;

  app.post<LoginBodyT>(
    '/auth/login',
    async (req) => {
      const { email, password } = req.body;
      if (password.length > passwordCharsMax) {
        throw new HttpError(400, `password: must be at most ${passwordCharsMax} characters (the limit)`);
      }
      const r = await auth.login(email, password, req.remoteAddress);
      if (r.ok) {
        metrics.logins.inc({ outcome: 'ok' });
        return { status: 200, body: r.tokens, headers: { 'cache-control': 'no-store' } };
      }
      metrics.logins.inc({ outcome: r.code });
      switch (r.code) {
        case 'invalid_credentials':
          throw new HttpError(401, 'invalid credentials');
        case 'rate_limited':
          throw new HttpError(
            429,
            'too many login attempts ' +
              `${r.scope === 'address' ? 'from this address' : 'for this account'}; retry in ` +
              `${r.retryAfterSec} s`,
            { 'retry-after': String(r.retryAfterSec) },
          );
        default:
          return unreachable(r);
      }
    },
    {
      ...edgeBody(LoginBody),
      summary: 'Log in: email and password for an access and a refresh token',
      response: tokensResponse,
    },
  );

  app.post<RefreshBodyT>(
    '/auth/refresh',
    async (req) => {
      const body = req.body;
      const token = body.refreshToken ?? body.refresh_token;
      if (token === undefined) throw new HttpError(400, 'refreshToken: is required');
      const r = await auth.refresh(token);
      if (!r.ok) throw new HttpError(401, 'invalid token');
      return { status: 200, body: r.tokens, headers: { 'cache-control': 'no-store' } };
    },
    { ...edgeBody(RefreshBody), summary: 'A fresh token pair for a refresh token', response: tokensResponse },
  );

  app.get(
    '/api/v1/me',
    async (req) => {
      const p = await requireRole(auth, req, 'viewer');
      return { status: 200, body: { id: p.userId, email: p.email, role: p.role } };
    },
    authenticated(auth, 'viewer', { summary: 'The user the token belongs to' }),
  );

  app.get(
    '/api/v1/users',
    async (req) => {
      await requireRole(auth, req, 'admin');
      return { status: 200, body: (await ctx.store.listUsers()).map(publicUser) };
    },
    authenticated(auth, 'admin', { summary: 'Every user (admin)', response: Type.Array(userResponse) }),
  );

  // Creating users is an admin act (not merely an editor's POST).
  app.post<CreateUserBodyT>(
    '/api/v1/users',
    async (req) => {
      await requireRole(auth, req, 'admin');
      const { email, password, role } = req.body;
      if (!/^[^@\s]+@[^@\s]+$/.test(email))
        throw new HttpError(400, `email: must be an email address (got ${JSON.stringify(email)})`);
      const tooLongOrShort = passwordLengthProblem(password);
      if (tooLongOrShort) throw new HttpError(400, tooLongOrShort);
      const r = await auth.createUser(email, password, role);
      if (!r.ok) writeFailure(r);
      return { status: 201, body: publicUser(r.value) };
    },
    authenticated(auth, 'admin', {
      ...edgeBody(CreateUserBody),
      summary: 'Create a user (admin)',
      successStatus: 201,
      response: userResponse,
    }),
  );
}
