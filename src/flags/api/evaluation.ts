/**
 * The evaluation endpoint's body and answer, shared by `POST .../environments/{e}/evaluate` (JWT)
 * and `POST /sdk/v1/evaluate` (SDK key): `{context, flagKeys?}` → `{flags: {key: {value, variation,
 * reason}}}`, evaluated against the in-memory replica with the pure evaluator. Warnings (a clause
 * naming a deleted segment) are counted and logged, at most once a minute per flag and segment.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { HttpError, jsonShapeProblem } from '../../http/index.js';
import { evaluate, type EvalResult, type EvalWarning } from '../eval/evaluate.js';
import { schemaErrorsToFieldErrors } from '../model/decode.js';
import type { EvalContext } from '../model/types.js';
import type { EnvState } from '../stream/replica.js';
import type { FlagsContext } from './context.js';
import {
  attributeCharsMax,
  contextArrayItemsMax,
  contextAttributesMax,
  contextValueCharsMax,
  evaluateFlagKeysMax,
  keyCharsMax,
} from '../limits.js';
import { evaluateBodyDepthMax, unknownFlagWarnEveryMs, unknownFlagWarnKeysMax } from '../limits.js';
import { jsonDepth } from '../model/validate.js';

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const EvaluateBody = Type.Object(
  {
    context: Type.Object(
      { key: Type.Optional(Type.String()), kind: Type.Optional(Type.String()) },
      { additionalProperties: Type.Union([Scalar, Type.Array(Scalar)]) },
    ),
    flagKeys: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);
const evaluateBody = Compile(EvaluateBody);

export interface EvaluateRequest {
  context: EvalContext;
  flagKeys?: string[];
}

/**
 * A raw evaluate body (the SDK route reads it raw so the key is checked before the body is parsed)
 * → the parsed JSON, or a 400 (the HTTP edge's JSON shape limits first, then JSON.parse).
 */
export function parseEvaluateBody(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  // The adapter's shape limits (nesting, value count), as it applies them to the bodies it parses.
  const shape = jsonShapeProblem(raw);
  if (shape !== undefined) throw new HttpError(400, shape);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `malformed JSON: ${(err as Error).message}`);
  }
  return parsed;
}

/** The limits of src/flags/limits.ts on a shape-checked context and key list, or the 400 naming one. */
function checkEvaluateLimits(req: EvaluateRequest): void {
  const refuse = (field: string, rule: string): never => {
    throw new HttpError(400, `${field}: ${rule} (the limit)`);
  };
  const attrs = Object.entries(req.context);
  if (attrs.length > contextAttributesMax) refuse('context', `must have at most ${contextAttributesMax} attributes`);
  const tooLong = (v: unknown): boolean => typeof v === 'string' && v.length > contextValueCharsMax;
  for (const [name, v] of attrs) {
    if (name.length > attributeCharsMax)
      refuse('context', `attribute names must be at most ${attributeCharsMax} characters`);
    if (Array.isArray(v)) {
      if (v.length > contextArrayItemsMax) refuse(`context.${name}`, `must have at most ${contextArrayItemsMax} items`);
      if (v.some(tooLong)) refuse(`context.${name}`, `strings must be at most ${contextValueCharsMax} characters`);
    } else if (tooLong(v)) refuse(`context.${name}`, `must be at most ${contextValueCharsMax} characters`);
  }
  const keys = req.flagKeys;
  if (keys !== undefined) {
    if (keys.length > evaluateFlagKeysMax) refuse('flagKeys', `must have at most ${evaluateFlagKeysMax} items`);
    if (keys.some((k) => k.length > keyCharsMax)) refuse('flagKeys', `keys must be at most ${keyCharsMax} characters`);
  }
}

/** Untrusted body → request, or a 400 naming the field or the limit. */
export function decodeEvaluateBody(body: unknown): EvaluateRequest {
  if (body === undefined)
    throw new HttpError(400, 'context: is required (body: {"context": {"key": "..."}, "flagKeys"?: [...]})');
  if (jsonDepth(body, evaluateBodyDepthMax) > evaluateBodyDepthMax) {
    throw new HttpError(
      400,
      'body: must be {"context": {...}, "flagKeys"?: [...]} whose attributes are scalars or ' +
        'arrays of scalars (nested too deep)',
    );
  }
  if (!evaluateBody.Check(body)) {
    const first = schemaErrorsToFieldErrors(evaluateBody.Errors(body))[0];
    throw new HttpError(400, first?.message ?? 'body: does not match {context, flagKeys?}');
  }
  checkEvaluateLimits(body as EvaluateRequest);
  return body as EvaluateRequest;
}

/** The answer for a requested key that names no flag (the evaluator's error kinds lack this one). */
interface FlagNotFound {
  value: null;
  variation: null;
  reason: { kind: 'ERROR'; errorKind: 'FLAG_NOT_FOUND' };
}
export type EvaluationAnswer = EvalResult | FlagNotFound;
const notFound: FlagNotFound = Object.freeze({
  value: null,
  variation: null,
  reason: Object.freeze({ kind: 'ERROR' as const, errorKind: 'FLAG_NOT_FOUND' as const }),
});

export class Evaluator {
  private readonly lastWarned = new Map<string, number>();

  constructor(private readonly ctx: FlagsContext) {}

  run(env: EnvState, req: EvaluateRequest): { flags: Record<string, EvaluationAnswer> } {
    const byReason = this.ctx.metrics.evalCounts.byReason;
    const flags: Record<string, EvaluationAnswer> = {};
    const onWarning = (w: EvalWarning): void => this.warn(env, w);
    const keys = req.flagKeys ?? [...env.flags.keys()];
    for (const key of keys) {
      const flag = env.flags.get(key);
      // A named flag that does not exist answers an ERROR result rather than failing the batch.
      const r: EvaluationAnswer = flag ? evaluate(flag, req.context, env, { onWarning }) : notFound;
      flags[key] = r;
      byReason.set(r.reason.kind, (byReason.get(r.reason.kind) ?? 0) + 1);
    }
    return { flags };
  }

  /** Spec "Evaluation facts" 4: a deleted segment in a clause does not match, and a warning is logged. */
  private warn(env: EnvState, w: EvalWarning): void {
    const counts = this.ctx.metrics.evalCounts.warnings;
    counts.set(w.code, (counts.get(w.code) ?? 0) + 1);
    const id = `${env.projectKey}/${env.envKey}/${w.flagKey}/${w.code}/${w.segmentKey ?? ''}`;
    const now = this.ctx.now();
    const last = this.lastWarned.get(id);
    if (last !== undefined && now - last < unknownFlagWarnEveryMs) return;
    this.lastWarned.delete(id);
    this.lastWarned.set(id, now);
    if (this.lastWarned.size > unknownFlagWarnKeysMax)
      this.lastWarned.delete(this.lastWarned.keys().next().value as string);
    this.ctx.logger.warn(
      { project: env.projectKey, environment: env.envKey, flag: w.flagKey, segment: w.segmentKey, code: w.code },
      w.message,
    );
  }
}
