/**
 * The management API under /api/v1 (spec "Endpoints" plus ../shared/specs/DECISIONS.md's projects, environments,
 * audit and evaluation routes). Every route needs a bearer token: GET viewer, POST/PUT editor,
 * DELETE admin (evaluation is a read, so viewer), checked by a `before` hook ahead of the body.
 * Bodies must be JSON objects and are decoded by the model's decoders (400 naming the field or
 * the limit of src/flags/limits.ts); the same TypeBox schemas are attached as `documentedBody` for
 * /openapi.json (the decoders add defaults and cross-field rules a schema cannot state). The store's
 * outcomes map to 404/409/412; prerequisite cycles are checked inside the write transaction. Thin:
 * no storage or evaluation logic here.
 */
import { HttpError, type HttpApp, type HttpRequest, type HttpResult } from '../../http/index.js';
import Type from 'typebox';
import { decodeFlagCreate, decodeFlagPut, decodeSegmentCreate, decodeSegmentPut } from '../model/decode.js';
import {
  EvaluateBodySchema,
  FlagCreateBodySchema,
  FlagPutBodySchema,
  SegmentCreateBodySchema,
  SegmentPutBodySchema,
} from '../model/schemas.js';
import type { FieldError, Flag, FlagDefinition } from '../model/types.js';
import { validateFlag } from '../model/validate.js';
import type { FlagWriteCheck, SegmentWriteCheck, WriteMeta } from '../store/types.js';
import type { Principal } from '../auth/tokens.js';
import type { FlagsContext } from './context.js';
import { decodeEvaluateBody, Evaluator } from './evaluation.js';
import { authenticated, checkKey, ifMatchVersion, objectBody, requireRole, writeFailure } from './guard.js';
import {
  auditPageRecordsDefault,
  auditPageRecordsMax,
  flagsPerEnvironmentMax,
  segmentsPerProjectMax,
} from '../limits.js';

/** Prerequisite rules that need the other flags (variation exists, no cycle), run in the write transaction. */
const prerequisiteCheck: FlagWriteCheck = (
  candidate: FlagDefinition,
  others: readonly Flag[],
): FieldError | undefined => {
  if (candidate.prerequisites.length === 0) return undefined;
  const byKey = new Map(others.map((f) => [f.key, f]));
  return validateFlag(candidate, { lookupFlag: (k) => byKey.get(k) })[0];
};

/** Creation also keeps the environment under its flag count limit (inside the write transaction). */
export const createCheck: FlagWriteCheck = (candidate, others) => {
  if (others.length >= flagsPerEnvironmentMax) {
    return {
      field: 'key',
      message: `key: the environment already has ${others.length} flags (the limit is ${flagsPerEnvironmentMax})`,
    };
  }
  return prerequisiteCheck(candidate, others);
};

/** Segment creation keeps the project under its segment count limit (inside the write transaction). */
export const segmentCreateCheck: SegmentWriteCheck = (_candidate, liveSegments) => {
  if (liveSegments < segmentsPerProjectMax) return undefined;
  return {
    field: 'key',
    message: `key: the project already has ${liveSegments} segments (the limit is ${segmentsPerProjectMax})`,
  };
};

function badBody(errors: readonly FieldError[]): never {
  throw new HttpError(400, errors[0]?.message ?? 'body: invalid');
}

function param(req: HttpRequest<unknown>, name: string): string {
  const v = req.params[name];
  if (v === undefined) throw new HttpError(404, `missing path parameter ${name}`);
  return v;
}

/**
 * `?limit=`: default auditPageRecordsDefault, above auditPageRecordsMax means the max, anything but a
 * positive integer is a 400.
 */
export function parseAuditLimit(raw: string | null): number {
  if (raw === null) return auditPageRecordsDefault;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new HttpError(400, `limit: must be a positive integer (got ${JSON.stringify(raw)})`);
  return Math.min(Number(raw), auditPageRecordsMax);
}

/** `?limit=` of the audit route, as documented (parseAuditLimit decodes it). */
const AuditQuery = Type.Object({
  limit: Type.Optional(
    Type.String({
      pattern: '^[0-9]+$',
      description: `records per page: default ${auditPageRecordsDefault}, at most ${auditPageRecordsMax}`,
    }),
  ),
});

function versioned(status: number, doc: { version: number }, extra: Record<string, string> = {}): HttpResult {
  return { status, body: doc, headers: { etag: `"${doc.version}"`, ...extra } };
}

export function registerManagementRoutes(app: HttpApp, ctx: FlagsContext): void {
  const { store, auth } = ctx;
  const evaluator = new Evaluator(ctx);
  const meta = (p: Principal, req: HttpRequest<unknown>): WriteMeta => {
    const m: WriteMeta = { actor: p.email, at: new Date(ctx.now()).toISOString() };
    const v = ifMatchVersion(req);
    if (v !== undefined) m.ifVersion = v;
    return m;
  };
  const P = '/api/v1/projects/:projectKey';
  const E = `${P}/environments/:envKey`;

  // ---- projects and environments ----------------------------------------------------------

  app.get(
    '/api/v1/projects',
    async (req) => {
      await requireRole(auth, req);
      return { status: 200, body: await store.listProjects() };
    },
    authenticated(auth, undefined, { summary: 'List projects' }),
  );

  app.get(
    `${P}/environments`,
    async (req) => {
      await requireRole(auth, req);
      return { status: 200, body: await store.listEnvironments(param(req, 'projectKey')) };
    },
    authenticated(auth, undefined, { summary: "List a project's environments" }),
  );

  // Environments also come into being on the first flag write; this creates one explicitly (idempotent).
  app.put(
    E,
    async (req) => {
      await requireRole(auth, req);
      // No body is needed; one that is sent must still be a JSON object (`null` is a 400 like elsewhere).
      if (req.rawBody.length > 0) objectBody(req.body);
      const p = param(req, 'projectKey');
      const e = param(req, 'envKey');
      checkKey('projectKey', p);
      checkKey('envKey', e);
      return { status: 200, body: await store.ensureEnvironment(p, e, new Date(ctx.now()).toISOString()) };
    },
    authenticated(auth, undefined, {
      summary: 'Create an environment (idempotent; flag writes also create it)',
      documentedBody: Type.Object({}),
      bodyOptional: true,
    }),
  );

  // ---- flags ------------------------------------------------------------------------------

  app.get(
    `${E}/flags`,
    async (req) => {
      await requireRole(auth, req);
      return { status: 200, body: await store.listFlags(param(req, 'projectKey'), param(req, 'envKey')) };
    },
    authenticated(auth, undefined, { summary: "List an environment's flags" }),
  );

  app.post(
    `${E}/flags`,
    async (req) => {
      const who = await requireRole(auth, req);
      const p = param(req, 'projectKey');
      const e = param(req, 'envKey');
      checkKey('projectKey', p);
      checkKey('envKey', e);
      const d = decodeFlagCreate(objectBody(req.body));
      if (!d.ok) badBody(d.errors);
      const r = await store.createFlag(p, e, d.value, meta(who, req), createCheck);
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return versioned(201, r.value, { location: `/api/v1/projects/${p}/environments/${e}/flags/${r.value.key}` });
    },
    authenticated(auth, undefined, {
      summary: 'Create a flag',
      documentedBody: FlagCreateBodySchema,
      successStatus: 201,
    }),
  );

  app.get(
    `${E}/flags/:flagKey`,
    async (req) => {
      await requireRole(auth, req);
      const f = await store.getFlag(param(req, 'projectKey'), param(req, 'envKey'), param(req, 'flagKey'));
      if (!f) throw new HttpError(404, `flag ${JSON.stringify(param(req, 'flagKey'))} not found`);
      return versioned(200, f);
    },
    authenticated(auth, undefined, { summary: 'Get a flag (ETag: its version)' }),
  );

  app.put(
    `${E}/flags/:flagKey`,
    async (req) => {
      const who = await requireRole(auth, req);
      const m = meta(who, req);
      const d = decodeFlagPut(objectBody(req.body), param(req, 'flagKey'));
      if (!d.ok) badBody(d.errors);
      const r = await store.replaceFlag(param(req, 'projectKey'), param(req, 'envKey'), d.value, m, prerequisiteCheck);
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return versioned(200, r.value);
    },
    authenticated(auth, undefined, {
      summary: 'Replace a flag (If-Match: the version to replace)',
      documentedBody: FlagPutBodySchema,
    }),
  );

  app.delete(
    `${E}/flags/:flagKey`,
    async (req) => {
      const who = await requireRole(auth, req);
      const r = await store.deleteFlag(
        param(req, 'projectKey'),
        param(req, 'envKey'),
        param(req, 'flagKey'),
        meta(who, req),
      );
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return { status: 204 };
    },
    authenticated(auth, undefined, { summary: 'Delete a flag', successStatus: 204 }),
  );

  // ---- segments ---------------------------------------------------------------------------

  app.get(
    `${P}/segments`,
    async (req) => {
      await requireRole(auth, req);
      return { status: 200, body: await store.listSegments(param(req, 'projectKey')) };
    },
    authenticated(auth, undefined, { summary: "List a project's segments" }),
  );

  app.post(
    `${P}/segments`,
    async (req) => {
      const who = await requireRole(auth, req);
      const p = param(req, 'projectKey');
      checkKey('projectKey', p);
      const d = decodeSegmentCreate(objectBody(req.body));
      if (!d.ok) badBody(d.errors);
      const r = await store.createSegment(p, d.value, meta(who, req), segmentCreateCheck);
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return versioned(201, r.value, { location: `/api/v1/projects/${p}/segments/${r.value.key}` });
    },
    authenticated(auth, undefined, {
      summary: 'Create a segment',
      documentedBody: SegmentCreateBodySchema,
      successStatus: 201,
    }),
  );

  app.get(
    `${P}/segments/:segmentKey`,
    async (req) => {
      await requireRole(auth, req);
      const s = await store.getSegment(param(req, 'projectKey'), param(req, 'segmentKey'));
      if (!s) throw new HttpError(404, `segment ${JSON.stringify(param(req, 'segmentKey'))} not found`);
      return versioned(200, s);
    },
    authenticated(auth, undefined, { summary: 'Get a segment (ETag: its version)' }),
  );

  app.put(
    `${P}/segments/:segmentKey`,
    async (req) => {
      const who = await requireRole(auth, req);
      const m = meta(who, req);
      const d = decodeSegmentPut(objectBody(req.body), param(req, 'segmentKey'));
      if (!d.ok) badBody(d.errors);
      const r = await store.replaceSegment(param(req, 'projectKey'), d.value, m);
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return versioned(200, r.value);
    },
    authenticated(auth, undefined, {
      summary: 'Replace a segment (If-Match: the version to replace)',
      documentedBody: SegmentPutBodySchema,
    }),
  );

  // Flags whose rules name the segment keep their rules; such clauses then never match.
  app.delete(
    `${P}/segments/:segmentKey`,
    async (req) => {
      const who = await requireRole(auth, req);
      const r = await store.deleteSegment(param(req, 'projectKey'), param(req, 'segmentKey'), meta(who, req));
      if (!r.ok) writeFailure(r);
      await ctx.settled();
      return { status: 204 };
    },
    authenticated(auth, undefined, { summary: 'Delete a segment', successStatus: 204 }),
  );

  // ---- audit and evaluation ---------------------------------------------------------------

  app.get(
    `${P}/audit`,
    async (req) => {
      await requireRole(auth, req);
      const limit = parseAuditLimit(req.query.get('limit'));
      return { status: 200, body: await store.listAudit(param(req, 'projectKey'), limit) };
    },
    authenticated(auth, undefined, { summary: "A project's audit records, newest first", query: AuditQuery }),
  );

  // Evaluation changes nothing, so a viewer may do it although it is a POST.
  app.post(
    `${E}/evaluate`,
    async (req) => {
      await requireRole(auth, req, 'viewer');
      const body = decodeEvaluateBody(req.body);
      const p = param(req, 'projectKey');
      const e = param(req, 'envKey');
      // Only real environments are loaded into the replica, so made-up names cannot grow it.
      if (!ctx.replica.isLoaded(p, e) && !(await store.listEnvironments(p)).some((x) => x.key === e)) {
        return { status: 200, body: { flags: {} } };
      }
      return { status: 200, body: evaluator.run(await ctx.replica.environment(p, e), body) };
    },
    authenticated(auth, 'viewer', {
      summary: 'Evaluate flags for a context (viewer or above)',
      documentedBody: EvaluateBodySchema,
    }),
  );
}
