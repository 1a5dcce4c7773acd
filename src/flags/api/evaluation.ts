/**
 * The evaluation endpoint's body and answer, shared by `POST .../environments/{e}/evaluate` (JWT)
 * and `POST /sdk/v1/evaluate` (SDK key): `{context, flagKeys?}` → `{flags: {key: {value, variation,
 * reason}}}`, evaluated against the in-memory replica with the pure evaluator. Warnings (a clause
 * naming a deleted segment) are counted and logged, at most once a minute per flag and segment.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { HttpError } from '../../http/index.js';
import { evaluate, type EvalResult, type EvalWarning } from '../eval/evaluate.js';
import { schemaErrorsToFieldErrors } from '../model/decode.js';
import type { EvalContext } from '../model/types.js';
import type { EnvState } from '../stream/replica.js';
import type { FlagsContext } from './context.js';

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

/** Untrusted body → request, or a 400 naming the field. */
export function decodeEvaluateBody(body: unknown): EvaluateRequest {
  if (body === undefined) throw new HttpError(400, 'context: is required (body: {"context": {"key": "..."}, "flagKeys"?: [...]})');
  if (!evaluateBody.Check(body)) {
    const first = schemaErrorsToFieldErrors(evaluateBody.Errors(body))[0];
    throw new HttpError(400, first?.message ?? 'body: does not match {context, flagKeys?}');
  }
  return body as EvaluateRequest;
}

/** The answer for a requested key that names no flag (the evaluator's error kinds lack this one). */
interface FlagNotFound {
  value: null;
  variation: null;
  reason: { kind: 'ERROR'; errorKind: 'FLAG_NOT_FOUND' };
}
export type EvaluationAnswer = EvalResult | FlagNotFound;
const notFound: FlagNotFound = Object.freeze({ value: null, variation: null, reason: Object.freeze({ kind: 'ERROR' as const, errorKind: 'FLAG_NOT_FOUND' as const }) });

const warnEveryMs = 60_000;
const warnKeysMax = 1000;

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
    if (last !== undefined && now - last < warnEveryMs) return;
    this.lastWarned.delete(id);
    this.lastWarned.set(id, now);
    if (this.lastWarned.size > warnKeysMax) this.lastWarned.delete(this.lastWarned.keys().next().value as string);
    this.ctx.logger.warn({ project: env.projectKey, environment: env.envKey, flag: w.flagKey, segment: w.segmentKey, code: w.code }, w.message);
  }
}
