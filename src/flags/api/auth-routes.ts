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
import { bodyDecoder, requireRole, writeFailure } from './guard.js';

const LoginBody = Type.Object({ email: Type.String(), password: Type.String() }, { additionalProperties: false });
const RefreshBody = Type.Object(
  { refreshToken: Type.Optional(Type.String()), refresh_token: Type.Optional(Type.String()) },
  { additionalProperties: false },
);
const CreateUserBody = Type.Object(
  { email: Type.String(), password: Type.String(), role: Type.Union(ROLES.map((r) => Type.Literal(r))) },
  { additionalProperties: false },
);

type LoginBodyT = Type.Static<typeof LoginBody>;
type RefreshBodyT = Type.Static<typeof RefreshBody>;
type CreateUserBodyT = Type.Static<typeof CreateUserBody>;

const passwordLengthMin = 8;
const decodeCreateUser = bodyDecoder<CreateUserBodyT>(CreateUserBody);

/** A user as the API shows it: never the password hash. */
function publicUser(u: UserRecord): { id: string; email: string; role: Role; createdAt: string } {
  return { id: u.id, email: u.email, role: u.role, createdAt: u.createdAt };
}

export function registerAuthRoutes(app: HttpApp, ctx: FlagsContext): void {
  const { auth, metrics } = ctx;

  app.post<LoginBodyT>('/auth/login', async (req) => {
    const r = await auth.login(req.body.email, req.body.password, req.remoteAddress);
    if (r.ok) {
      metrics.logins.inc({ outcome: 'ok' });
      return { status: 200, body: r.tokens, headers: { 'cache-control': 'no-store' } };
    }
    metrics.logins.inc({ outcome: r.code });
    switch (r.code) {
      case 'invalid_credentials':
        throw new HttpError(401, 'invalid credentials');
      case 'rate_limited':
        throw new HttpError(429, `too many login attempts from this address; retry in ${r.retryAfterSec} s`, { 'retry-after': String(r.retryAfterSec) });
      default:
        return unreachable(r);
    }
  }, { body: LoginBody });

  app.post<RefreshBodyT>('/auth/refresh', async (req) => {
    const token = req.body.refreshToken ?? req.body.refresh_token;
    if (token === undefined) throw new HttpError(400, 'refreshToken: is required');
    const r = await auth.refresh(token);
    if (!r.ok) throw new HttpError(401, 'invalid token');
    return { status: 200, body: r.tokens, headers: { 'cache-control': 'no-store' } };
  }, { body: RefreshBody });

  app.get('/api/v1/me', async (req) => {
    const p = await requireRole(auth, req, 'viewer');
    return { status: 200, body: { id: p.userId, email: p.email, role: p.role } };
  });

  app.get('/api/v1/users', async (req) => {
    await requireRole(auth, req, 'admin');
    return { status: 200, body: (await ctx.store.listUsers()).map(publicUser) };
  });

  // Creating users is an admin act (not merely an editor's POST).
  app.post('/api/v1/users', async (req) => {
    await requireRole(auth, req, 'admin');
    const { email, password, role } = decodeCreateUser(req.body);
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new HttpError(400, `email: must be an email address (got ${JSON.stringify(email)})`);
    if (password.length < passwordLengthMin) throw new HttpError(400, `password: must be at least ${passwordLengthMin} characters`);
    const r = await auth.createUser(email, password, role);
    if (!r.ok) writeFailure(r);
    return { status: 201, body: publicUser(r.value) };
  });
}
