/**
 * Request guards shared by the routes: bearer-token authentication with the required role
 * (401 `missing token` / `invalid token`, 403 naming the role), both as a `before` hook (it answers
 * before the adapter reads or parses the body) and inside handlers; SDK-key lookup, path-key checks,
 * If-Match parsing and the "a body must be a JSON object" rule. They throw HttpError, which the
 * adapter turns into `{error}` bodies.
 */
import type { TSchema } from 'typebox';
import type { TLocalizedValidationError } from 'typebox/error';
import { Compile } from 'typebox/compile';
import { HttpError, type HttpRequest, type HttpResult, type RouteOptions } from '../../http/index.js';
import { schemaErrorsToFieldErrors } from '../model/decode.js';
import { isValidKey } from '../model/validate.js';
import { roleAtLeast, roleForMethod, type Role } from '../auth/roles.js';
import type { AuthService } from '../auth/service.js';
import type { Principal } from '../auth/tokens.js';
import type { EnvironmentInfo, FlagStore, WriteFailure } from '../store/types.js';
import { unreachable } from '../../util/assert.js';
import { sdkKeysCachedMax } from '../limits.js';

/** The principal, or the HttpError (401/403) the request gets instead. */
function check(auth: AuthService, req: HttpRequest<unknown>, need: Role): Principal | HttpError {
  const r = auth.authenticateNow(req.headers['authorization']);
  if (!r.ok) {
    const challenge = { 'www-authenticate': r.code === 'missing_token' ? 'Bearer' : 'Bearer error="invalid_token"' };
    return new HttpError(401, r.code === 'missing_token' ? 'missing token' : 'invalid token', challenge);
  }
  if (!roleAtLeast(r.principal.role, need)) {
    return new HttpError(403, `this needs the ${need} role; ${r.principal.email} is ${r.principal.role}`);
  }
  return r.principal;
}

export async function requireRole(
  auth: AuthService,
  req: HttpRequest<unknown>,
  need: Role = roleForMethod(req.method),
): Promise<Principal> {
  const r = check(auth, req, need);
  if (r instanceof HttpError) throw r;
  return r;
}

/**
 * Route options whose `before` hook authenticates (and checks the role) before the adapter reads
 * the body: a request without a valid token gets 401 whatever its body, and its body is never
 * parsed. The handler still calls requireRole for the principal (a cache hit).
 */
export function authenticated(auth: AuthService, need?: Role, opts: RouteOptions = {}): RouteOptions {
  return {
    security: ['bearerJwt'],
    ...opts,
    before: (req) => {
      const r = check(auth, req, need ?? roleForMethod(req.method));
      if (!(r instanceof HttpError)) return undefined;
      const out: HttpResult = { status: r.status, body: { error: r.message } };
      if (r.headers) out.headers = r.headers;
      return out;
    },
  };
}

/**
 * SDK routes: a request without any key is a 401 before its body is read (the key itself is checked by
 * requireSdkKey).
 */
export const sdkKeyPresent: RouteOptions = {
  security: ['sdkKey'],
  before: (req) => (authorizationOf(req)?.trim() ? undefined : { status: 401, body: { error: 'missing token' } }),
};

/** The Authorization header, read without building the request's header object when it can be. */
export function authorizationOf(req: HttpRequest<unknown>): string | undefined {
  return req.header ? req.header('authorization') : req.headers['authorization'];
}

/**
 * A POST or PUT body must be a JSON object: an empty body, `null`, an array or a scalar is a 400
 * before anything is decoded (a PUT with `{}` as the default for a missing body would wipe the
 * resource).
 */
export function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) throw new HttpError(400, 'body: a JSON object is required (the request had no body)');
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new HttpError(
      400,
      `body: must be a JSON object (got ${body === null ? 'null' : Array.isArray(body) ? 'an array' : typeof body})`,
    );
  }
  return body as Record<string, unknown>;
}

/**
 * SDK keys → environments. A key never changes owner, so known keys are cached (capped, oldest
 * dropped first); unknown keys always go to the store.
 */
export class SdkKeys {
  private readonly known = new Map<string, EnvironmentInfo>();

  constructor(
    private readonly store: FlagStore,
    private readonly entriesMax = sdkKeysCachedMax,
  ) {}

  /** The environment of a key already looked up, or undefined (then `lookup` asks the store). */
  cached(key: string): EnvironmentInfo | undefined {
    return this.known.get(key);
  }

  async lookup(key: string): Promise<EnvironmentInfo | undefined> {
    const hit = this.known.get(key);
    if (hit) return hit;
    const env = await this.store.environmentBySdkKey(key);
    if (env) {
      this.known.set(key, env);
      if (this.known.size > this.entriesMax) this.known.delete(this.known.keys().next().value as string);
    }
    return env;
  }
}

/** The SDK key in an Authorization value (raw or `Bearer <key>`); undefined when there is none. */
export function sdkKeyOf(authorization: string | undefined): string | undefined {
  const raw = authorization?.trim();
  if (!raw) return undefined;
  // The pattern only when the value starts with b or B (a raw key mostly does not).
  return (raw.charCodeAt(0) | 32) === 98 && /^Bearer\s+/i.test(raw) ? raw.replace(/^Bearer\s+/i, '') : raw;
}

/** SDK routes: the environment's SDK key as the Authorization value, raw or as `Bearer <key>`. */
export async function requireSdkKey(keys: SdkKeys, req: HttpRequest<unknown>): Promise<EnvironmentInfo> {
  const key = sdkKeyOf(authorizationOf(req));
  if (key === undefined) throw new HttpError(401, 'missing token');
  const env = await keys.lookup(key);
  if (!env) throw new HttpError(401, 'invalid token');
  return env;
}

/** A path key that a write will create (project, environment) must be URL-safe. */
export function checkKey(name: string, value: string): void {
  if (!isValidKey(value)) {
    throw new HttpError(
      400,
      `${name}: must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or ` +
        `digit (got ${JSON.stringify(value)})`,
    );
  }
}

/** `If-Match: 3`, `"3"` or `W/"3"` → 3; absent → undefined; anything else is a 400. */
export function ifMatchVersion(req: HttpRequest<unknown>): number | undefined {
  const h = req.headers['if-match'];
  if (h === undefined || h.trim() === '') return undefined;
  const m = /^(?:W\/)?"?(\d{1,15})"?$/.exec(h.trim());
  if (!m?.[1])
    throw new HttpError(400, `If-Match: must be the version to replace, e.g. If-Match: 3 (got ${JSON.stringify(h)})`);
  return Number(m[1]);
}

/** Store write failures → HTTP statuses: 404, 409, 412, 400. */
export function writeFailure(f: WriteFailure): never {
  switch (f.code) {
    case 'not_found':
      throw new HttpError(404, f.message);
    case 'duplicate':
      throw new HttpError(409, f.message);
    case 'version_mismatch':
      throw new HttpError(412, f.message, { etag: `"${f.currentVersion}"` });
    case 'invalid':
      throw new HttpError(400, f.message);
    default:
      return unreachable(f);
  }
}

/**
 * Route options that validate the body against `schema` at the adapter's edge (after the `before`
 * hooks, so a request without a valid token still gets 401 first) with the flags' own wording: the
 * same messages bodyDecoder gives, so a route moving onto the edge answers exactly as before. The
 * schema is also what /openapi.json documents.
 */
export function edgeBody(schema: TSchema): RouteOptions {
  return {
    body: schema,
    bodyErrors: {
      missing: 'body: a JSON object is required',
      format: (errors) =>
        schemaErrorsToFieldErrors([...errors] as TLocalizedValidationError[])[0]?.message ??
        'body: does not match the expected shape',
    },
  };
}

/**
 * Body validation after authentication (the adapter's edge validation would answer 400 before the
 * token is checked, and no authenticated route answers anything but 401 without a valid token).
 */
export function bodyDecoder<T>(schema: TSchema): (body: unknown) => T {
  const compiled = Compile(schema);
  return (body) => {
    if (body === undefined) throw new HttpError(400, 'body: a JSON object is required');
    if (!compiled.Check(body)) {
      const first = schemaErrorsToFieldErrors(compiled.Errors(body))[0];
      throw new HttpError(400, first?.message ?? 'body: does not match the expected shape');
    }
    return body as T;
  };
}
