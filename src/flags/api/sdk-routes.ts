/**
 * The SDK surface, authenticated by an environment's SDK key (raw or `Bearer <key>`), never by a
 * user token: `GET /sdk/v1/stream` (server-sent events, see ../stream/hub.ts), `POST
 * /sdk/v1/evaluate` (server-side evaluation) and `GET /sdk/v1/latest-all` (the put payload, for
 * polling clients). Thin: it resolves the key and hands over to the hub or the evaluator.
 * The same stream is also offered to a signed-in user at `GET /api/v1/projects/{p}/environments/{e}/stream`
 * with a bearer access token (viewer or above), for the web console: a browser's EventSource cannot
 * send an Authorization header, so the page reads it with fetch().
 */
import { HttpError, type HttpApp, type HttpRequest, type HttpResult } from '../../http/index.js';
import type { FlagsContext } from './context.js';
import { decodeEvaluateBody, Evaluator, parseEvaluateBody, sdkEnvironment } from './evaluation.js';
import type { EnvironmentInfo } from '../store/types.js';
import { requireRole, requireSdkKey, SdkKeys, sdkKeyPresent } from './guard.js';
import { sseClientBufferBytesDefault } from '../limits.js';
import { EvaluateBodySchema } from '../model/schemas.js';

function lastEventId(raw: string | undefined): number | undefined {
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return undefined;
  return Number(raw.trim());
}

/**
 * The `exp` of a bearer JWT that requireRole has already verified, in ms; undefined when it has
 * none. Only the payload is read: the signature was checked by the auth service.
 */
export function verifiedTokenExpiryMs(authorization: string | undefined): number | undefined {
  const payload = /^Bearer\s+[^.\s]+\.([^.\s]+)\./i.exec(authorization?.trim() ?? '')?.[1];
  if (payload === undefined) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export function registerSdkRoutes(
  app: HttpApp,
  ctx: FlagsContext,
  sseClientBufferBytes = sseClientBufferBytesDefault,
): void {
  const evaluator = new Evaluator(ctx);
  const keys = new SdkKeys(ctx.store);

  app.stream(
    '/sdk/v1/stream',
    async (req, stream) => {
      const env = await requireSdkKey(keys, req);
      const r = await ctx.hub.connect(env, stream, lastEventId(req.headers['last-event-id']));
      if (!r.ok && r.code === 'over_capacity')
        throw new HttpError(503, 'too many stream clients; retry later', { 'retry-after': '5' });
    },
    sseClientBufferBytes,
    { security: ['sdkKey'], summary: "The environment's flag changes as server-sent events (Last-Event-ID resumes)" },
  );

  // The user's view of the same stream: a bearer token of any role (all roles may read every
  // environment), an environment that exists (404 otherwise, so made-up names cannot grow the replica).
  app.stream(
    '/api/v1/projects/:projectKey/environments/:envKey/stream',
    async (req, stream) => {
      await requireRole(ctx.auth, req, 'viewer');
      const p = req.params['projectKey'] ?? '';
      const e = req.params['envKey'] ?? '';
      const env = (await ctx.store.listEnvironments(p)).find((x) => x.key === e);
      if (!env)
        throw new HttpError(
          404,
          `environment ${JSON.stringify(e.slice(0, 128))} of project ${JSON.stringify(p.slice(0, 128))} not found`,
        );
      const r = await ctx.hub.connect(env, stream, lastEventId(req.headers['last-event-id']));
      if (!r.ok && r.code === 'over_capacity')
        throw new HttpError(503, 'too many stream clients; retry later', { 'retry-after': '5' });
      // The stream ends when the token it was opened with expires: a client reconnects with a fresh
      // token (and Last-Event-ID), so an expired or refused session does not keep receiving changes.
      const exp = verifiedTokenExpiryMs(req.headers['authorization']);
      if (r.ok && exp !== undefined && !stream.closed) {
        const timer = setTimeout(() => stream.end(), Math.max(0, exp - ctx.now()));
        stream.onClose(() => clearTimeout(timer));
      }
    },
    sseClientBufferBytes,
    { security: ['bearerJwt'], summary: "An environment's flag changes as server-sent events (any role)" },
  );

  // The body is read raw and parsed only once the key is known good (a wrong key is a 401 whatever
  // the body); a request with no key at all is refused before the body is read. With a known key
  // and a loaded environment the whole request is answered synchronously (no promise per step).
  // (Callbacks are made only when a promise is met: none per request on the synchronous path.)
  const evaluateFor = (env: EnvironmentInfo, req: HttpRequest<unknown>): HttpResult | Promise<HttpResult> => {
    const body = decodeEvaluateBody(parseEvaluateBody(req.rawBody));
    const state = ctx.replica.environment(env.projectKey, env.key);
    return state instanceof Promise ? state.then((s) => evaluator.answer(s, body)) : evaluator.answer(state, body);
  };
  app.post(
    '/sdk/v1/evaluate',
    (req) => {
      const env = sdkEnvironment(keys, req);
      return env instanceof Promise ? env.then((e) => evaluateFor(e, req)) : evaluateFor(env, req);
    },
    {
      ...sdkKeyPresent,
      rawBody: true,
      summary: 'Evaluate flags for a context',
      documentedBody: EvaluateBodySchema,
    },
  );

  app.get(
    '/sdk/v1/latest-all',
    async (req) => {
      const env = await requireSdkKey(keys, req);
      const state = await ctx.replica.environment(env.projectKey, env.key);
      return {
        status: 200,
        body: { flags: Object.fromEntries(state.flags), segments: Object.fromEntries(state.segments) },
      };
    },
    { security: ['sdkKey'], summary: "Every flag and segment of the key's environment" },
  );
}
