/**
 * OpenFeature Remote Evaluation Protocol (OFREP) on the flag service: `POST
 * /ofrep/v1/evaluate/flags/{key}` and the bulk `POST /ofrep/v1/evaluate/flags` (ETag /
 * If-None-Match → 304), authenticated by the environment's SDK key in Authorization (raw or
 * `Bearer <key>`). The context's `targetingKey` is simlab's context `key`; evaluation is the same
 * evaluator and replica as /sdk/v1/evaluate. Errors use OFREP's shapes (`{key, errorCode,
 * errorDetails}`, bulk `{errorCode, errorDetails}`) and also carry the service's `error` field.
 * TARGETING_KEY_MISSING is never answered: simlab evaluates without a key (targets and rules on
 * `key` simply do not match, rollouts bucket to 0), exactly as /sdk/v1/evaluate does. The bulk
 * answer is written from evaluate-all's plan when every flag is planned (bulkView: body and ETag
 * made once per outcome of the flags, the last reused while they repeat; every flag is still
 * evaluated for every request), else flag by flag with an ETag hashed from the request.
 */
import { hash } from 'node:crypto';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { HttpError, type HttpApp, type HttpRequest, type HttpResult } from '../../http/index.js';
import type { EvalResult } from '../eval/evaluate.js';
import type { FastFlag } from '../eval/plan.js';
import { schemaErrorsToFieldErrors } from '../model/decode.js';
import type { EvalContext } from '../model/types.js';
import type { EnvState } from '../stream/replica.js';
import type { EnvironmentInfo } from '../store/types.js';
import { keyCharsMax } from '../limits.js';
import type { FlagsContext } from './context.js';
import {
  decodeEvaluateBody,
  Evaluator,
  isWellFormedContext,
  parseEvaluateBody,
  sdkEnvironment,
  whenReady,
  type EvaluationAnswer,
  type PlannedView,
} from './evaluation.js';
import { SdkKeys, sdkKeyPresent } from './guard.js';

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
/** OFREP's request body: `{context?: {targetingKey?, ...attributes}}` (attributes: scalars or arrays of them). */
export const OfrepEvaluateBody = Type.Object(
  {
    context: Type.Optional(
      Type.Object(
        { targetingKey: Type.Optional(Type.String()) },
        { additionalProperties: Type.Union([Scalar, Type.Array(Scalar)]) },
      ),
    ),
  },
  { additionalProperties: true },
);
const ofrepBody = Compile(OfrepEvaluateBody);

const jsonContentType = Object.freeze({ 'content-type': 'application/json' });

type OfrepErrorCode = 'PARSE_ERROR' | 'INVALID_CONTEXT' | 'FLAG_NOT_FOUND' | 'GENERAL';

/** simlab reasons → OpenFeature's. */
export function ofrepReason(r: EvalResult['reason']): string {
  switch (r.kind) {
    case 'OFF':
      return 'DISABLED';
    case 'TARGET_MATCH':
    case 'RULE_MATCH':
      return 'TARGETING_MATCH';
    case 'FALLTHROUGH':
      return r.inRollout === true ? 'SPLIT' : 'DEFAULT';
    case 'PREREQUISITE_FAILED':
      return 'DEFAULT';
    case 'ERROR':
      return 'ERROR';
    default:
      return 'UNKNOWN';
  }
}

function success(key: string, r: EvalResult): Record<string, unknown> {
  const metadata: Record<string, string | boolean> = { reasonKind: r.reason.kind };
  if (r.reason.ruleId !== undefined) metadata['ruleId'] = r.reason.ruleId;
  if (r.reason.prerequisiteKey !== undefined) metadata['prerequisiteKey'] = r.reason.prerequisiteKey;
  if (r.reason.inRollout === true) metadata['inRollout'] = true;
  return { key, value: r.value, reason: ofrepReason(r.reason), variant: r.variation, metadata };
}

function failure(key: string | undefined, errorCode: OfrepErrorCode, details: string): Record<string, unknown> {
  return { ...(key === undefined ? {} : { key }), errorCode, errorDetails: details, error: details };
}

/**
 * A success serialised once per evaluator outcome: outcomes are frozen objects made once per flag
 * version (eval/evaluate.ts), so the hot path is a map lookup, like /sdk/v1/evaluate's shared results.
 */
const serialised = new WeakMap<EvalResult, string>();
function successJson(key: string, r: EvalResult): string {
  let s = serialised.get(r);
  if (s === undefined) {
    s = JSON.stringify(success(key, r));
    serialised.set(r, s);
  }
  return s;
}

/** One answer of the evaluator → OFREP's status and body (a success pre-serialised). */
function answer(key: string, r: EvaluationAnswer): { status: number; body: Record<string, unknown> | string } {
  if (r.reason.kind !== 'ERROR') return { status: 200, body: successJson(key, r as EvalResult) };
  if (r.reason.errorKind === 'FLAG_NOT_FOUND')
    return { status: 404, body: failure(key, 'FLAG_NOT_FOUND', `flag ${JSON.stringify(key)} not found`) };
  return {
    status: 500,
    body: failure(key, 'GENERAL', `flag ${JSON.stringify(key)} cannot be evaluated (${r.reason.errorKind})`),
  };
}

/**
 * A raw OFREP body → simlab's context, or the OFREP error: PARSE_ERROR for bytes that are not
 * JSON (or break the edge's JSON shape limits), INVALID_CONTEXT for a body or context of the
 * wrong shape or past a limit of src/flags/limits.ts.
 */
export function decodeOfrepBody(
  raw: Buffer,
): { ok: true; context: EvalContext } | { ok: false; code: OfrepErrorCode; message: string } {
  let parsed: unknown;
  try {
    parsed = parseEvaluateBody(raw) ?? {};
  } catch (err) {
    return { ok: false, code: 'PARSE_ERROR', message: (err as Error).message };
  }
  // The hot path validates once: the mapped context through the evaluate body's TypeBox schema and
  // limits. The OFREP schema is consulted for the message when the outer shape is wrong.
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  const outer = isObject(parsed) ? parsed['context'] : undefined;
  const given = isObject(outer) ? outer : outer === undefined ? {} : undefined;
  const targetingKeyType = given === undefined ? 'undefined' : typeof given['targetingKey'];
  if (!isObject(parsed) || given === undefined || (targetingKeyType !== 'string' && targetingKeyType !== 'undefined')) {
    const first = ofrepBody.Check(parsed) ? undefined : schemaErrorsToFieldErrors(ofrepBody.Errors(parsed))[0];
    return {
      ok: false,
      code: 'INVALID_CONTEXT',
      message: first?.message ?? 'body: must be {"context": {"targetingKey"?: "...", ...}}',
    };
  }
  const { targetingKey, ...attributes } = given;
  const context: Record<string, unknown> = attributes;
  if (typeof targetingKey === 'string') context['key'] = targetingKey;
  else if ('key' in context) delete context['key'];
  if (isWellFormedContext(context)) return { ok: true, context };
  try {
    return { ok: true, context: decodeEvaluateBody({ context }).context };
  } catch (err) {
    return { ok: false, code: 'INVALID_CONTEXT', message: (err as Error).message };
  }
}

/**
 * The bulk answer's ETag where the plan cannot write it (flags with prerequisites, keys that
 * JSON.stringify reorders): sha1 of the environment, its change position and the request bytes.
 * One-shot crypto.hash over one buffer (the same digest as a streamed createHash, at a fraction of
 * its cost per call).
 */
function bulkEtag(projectKey: string, envKey: string, pos: number, raw: Buffer): string {
  const prefix = Buffer.from(`${projectKey}\u0000${envKey}\u0000${pos}\u0000`);
  return `"${hash('sha1', Buffer.concat([prefix, raw]), 'base64url')}"`;
}

/** The bulk answer's body written flag by flag (Evaluator.eachAnswer): where the plan cannot write it. */
export function bulkBody(evaluator: Evaluator, env: EnvState, context: EvalContext): string {
  let out = '{"flags":[';
  let first = true;
  evaluator.eachAnswer(env, { context }, (key, r) => {
    out += `${first ? '' : ','}${fragment(key, r)}`;
    first = false;
  });
  return `${out}]}`;
}

/** One flag's entry in the bulk list: its success, or its error (no status of its own in a list). */
function fragment(key: string, r: EvaluationAnswer): string {
  const b = answer(key, r).body;
  return typeof b === 'string' ? b : JSON.stringify(b);
}

/** A bulk answer written from the plan: its body and ETag, and the headers of its 200 and its 304. */
interface BulkAnswer {
  readonly body: string;
  /**
   * The body in UTF-8, as it is written: uWS sends bytes as they are but encodes a string on every
   * write (about 0.5 µs of a 2.5-kB answer's server CPU, measured on a bare uWS app under wrk).
   */
  readonly bytes: Buffer;
  readonly etag: string;
  readonly ok: Readonly<Record<string, string>>;
  readonly notModified: Readonly<Record<string, string>>;
}

const codeDigits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** An outcome's code in the ETag: one character below 62, else `(base 36)` (no code is a prefix of another). */
function outcomeCode(n: number): string {
  return n < codeDigits.length ? (codeDigits[n] as string) : `(${n.toString(36)})`;
}
/** Longest list of outcome codes written out in an ETag; a longer one is hashed. */
const etagCodesMax = 64;

/**
 * The bulk answer from the plan's outcomes (Evaluator.planned). Per revision, each flag's answer
 * (`{key, value, reason, variant, metadata}`, or its error) is serialised once per outcome, and
 * the ETag is derived from what determines the body rather than from the request: the sha1 of
 * every flag's list of fragments (the revision's whole table) and, per flag, which fragment the
 * answer holds (the code of the first outcome with the same fragment). A changed body always has
 * a changed ETag; equal bodies share theirs whatever the context, across revisions too when the
 * change shows in no answer (a flag's name, say; a change to an outcome this context does not
 * reach makes a new table, so a new ETag for an equal body, as the request hash did). If-None-Match
 * thus gets 304 when the answer is the one the client holds.
 */
export const bulkView: PlannedView<BulkAnswer> = {
  make(entries) {
    const fragments = entries.map((e, i) =>
      (e.fast as FastFlag).results.map((r) => `${i === 0 ? '' : ','}${fragment(e.flag.key, r)}`),
    );
    const codes = fragments.map((list) => list.map((f) => outcomeCode(list.indexOf(f))));
    const table = hash('sha1', JSON.stringify(fragments), 'base64url');
    return (outcomes) => {
      let body = '{"flags":[';
      let code = '';
      for (let i = 0; i < fragments.length; i++) {
        const o = outcomes[i] as number;
        body += (fragments[i] as string[])[o] as string;
        code += (codes[i] as string[])[o] as string;
      }
      body += ']}';
      const etag =
        code.length <= etagCodesMax ? `"${table}.${code}"` : `"${hash('sha1', `${table}.${code}`, 'base64url')}"`;
      return {
        body,
        bytes: Buffer.from(body),
        etag,
        ok: Object.freeze({ 'content-type': 'application/json', etag }),
        notModified: Object.freeze({ etag }),
      };
    };
  },
};

export function registerOfrepRoutes(app: HttpApp, ctx: FlagsContext): void {
  const evaluator = new Evaluator(ctx);
  const keys = new SdkKeys(ctx.store);

  // The key is checked before the body is read (a wrong key is a 401 whatever the body). Like
  // /sdk/v1/evaluate, synchronous when the key and the environment are already known.
  app.post(
    '/ofrep/v1/evaluate/flags/:key',
    (req) =>
      whenReady(sdkEnvironment(keys, req), (env): HttpResult | Promise<HttpResult> => {
        const key = req.params['key'] ?? '';
        if (key.length > keyCharsMax)
          throw new HttpError(400, `key: must be at most ${keyCharsMax} characters (the limit)`);
        const body = decodeOfrepBody(req.rawBody);
        if (!body.ok) return { status: 400, body: failure(key, body.code, body.message) };
        return whenReady(ctx.replica.environment(env.projectKey, env.key), (state): HttpResult => {
          const a = answer(key, evaluator.one(state, body.context, key, undefined));
          return typeof a.body === 'string'
            ? { status: a.status, raw: a.body, headers: jsonContentType }
            : { status: a.status, body: a.body };
        });
      }),
    {
      ...sdkKeyPresent,
      rawBody: true,
      security: ['sdkKey'],
      tags: ['ofrep'],
      summary: 'OFREP: evaluate one flag for a context (targetingKey is the context key)',
      documentedBody: OfrepEvaluateBody,
    },
  );

  /** The bulk answer: from the plan (body and ETag per outcome) when it writes them, else flag by flag. */
  const bulk = (env: EnvironmentInfo, state: EnvState, req: HttpRequest<unknown>): HttpResult => {
    const body = decodeOfrepBody(req.rawBody);
    if (!body.ok) return { status: 400, body: failure(undefined, body.code, body.message) };
    const ifNoneMatch = req.header ? req.header('if-none-match') : req.headers['if-none-match'];
    const planned = evaluator.planned(state, body.context, bulkView);
    if (planned !== undefined) {
      return ifNoneMatch === planned.etag
        ? { status: 304, headers: planned.notModified }
        : { status: 200, raw: planned.bytes, headers: planned.ok };
    }
    // Same environment state and same request bytes → same answer: checked before evaluating.
    const etag = bulkEtag(env.projectKey, env.key, state.pos, req.rawBody);
    if (ifNoneMatch === etag) return { status: 304, headers: { etag } };
    return {
      status: 200,
      raw: bulkBody(evaluator, state, body.context),
      headers: { 'content-type': 'application/json', etag },
    };
  };
  const bulkFor = (env: EnvironmentInfo, req: HttpRequest<unknown>): HttpResult | Promise<HttpResult> => {
    const state = ctx.replica.environment(env.projectKey, env.key);
    return state instanceof Promise ? state.then((s) => bulk(env, s, req)) : bulk(env, state, req);
  };
  app.post(
    '/ofrep/v1/evaluate/flags',
    (req) => {
      const env = sdkEnvironment(keys, req);
      return env instanceof Promise ? env.then((e) => bulkFor(e, req)) : bulkFor(env, req);
    },
    {
      ...sdkKeyPresent,
      rawBody: true,
      security: ['sdkKey'],
      tags: ['ofrep'],
      summary: 'OFREP: evaluate every flag for a context (ETag; If-None-Match answers 304)',
      documentedBody: OfrepEvaluateBody,
    },
  );
}
