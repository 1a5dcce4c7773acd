/**
 * The evaluation endpoint's body and answer, shared by `POST .../environments/{e}/evaluate` (JWT)
 * and `POST /sdk/v1/evaluate` (SDK key): `{context, flagKeys?}` → `{flags: {key: {value, variation,
 * reason}}}`, evaluated against the in-memory replica with the pure evaluator. Warnings (a clause
 * naming a deleted segment) are counted and logged, at most once a minute per flag and segment.
 * The hot path (issue 20's profile) stays synchronous when the SDK key and the environment are
 * already known, accepts well-formed bodies in one pass (the schema path only words a refusal), and
 * writes the answer from per-outcome JSON fragments; the bytes are those JSON.stringify would give.
 * Evaluating every flag goes through the environment's plan (../eval/plan.ts, made once per
 * revision): each flag's answer is one of its precomputed `"key":{...}` fragments. Other answers
 * of every flag (OFREP's bulk list and its ETag) are written from the same plan (PlannedView).
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { HttpError, jsonShapeProblem, type HttpRequest, type HttpResult } from '../../http/index.js';
import { EvalMemo, evaluate, type EvalOptions, type EvalResult, type EvalWarning } from '../eval/evaluate.js';
import { EvalPlan, reasonKinds, type FastFlag, type PlanEntry } from '../eval/plan.js';
import { schemaErrorsToFieldErrors } from '../model/decode.js';
import type { EvalContext, Flag } from '../model/types.js';
import type { EnvState } from '../stream/replica.js';
import type { EnvironmentInfo } from '../store/types.js';
import type { FlagsContext } from './context.js';
import { authorizationOf, requireSdkKey, sdkKeyOf, type SdkKeys } from './guard.js';
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
    // toString() without an encoding is UTF-8 too, and skips the encoding lookup.
    parsed = JSON.parse(raw.toString());
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

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A context value the schema and limits accept: a scalar (strings bounded) or an array of them. */
function isContextValue(v: unknown): boolean {
  switch (typeof v) {
    case 'string':
      return v.length <= contextValueCharsMax;
    case 'number':
    case 'boolean':
      return true;
    case 'object':
      if (v === null) return true;
      if (!Array.isArray(v) || v.length > contextArrayItemsMax) return false;
      for (const el of v as unknown[]) {
        if (el === null || typeof el === 'number' || typeof el === 'boolean') continue;
        if (typeof el !== 'string' || el.length > contextValueCharsMax) return false;
      }
      return true;
    default:
      return false;
  }
}

/** The context half of isWellFormedEvaluateBody (OFREP's bodies carry only a context). */
export function isWellFormedContext(context: unknown): context is EvalContext {
  if (!isPlainObject(context)) return false;
  let attributes = 0;
  for (const name in context) {
    if (++attributes > contextAttributesMax || name.length > attributeCharsMax) return false;
    const v = context[name];
    if ((name === 'key' || name === 'kind') && typeof v !== 'string') return false;
    if (!isContextValue(v)) return false;
  }
  return true;
}

/**
 * One pass over a parsed body: true only when the schema, the depth rule and every limit accept
 * it (so it may skip them); false sends the body down the full path, which words the refusal.
 */
export function isWellFormedEvaluateBody(body: unknown): body is EvaluateRequest {
  if (!isPlainObject(body)) return false;
  let context: unknown;
  let flagKeys: unknown;
  for (const k in body) {
    if (k === 'context') context = body[k];
    else if (k === 'flagKeys') flagKeys = body[k];
    else return false;
  }
  if (!isWellFormedContext(context)) return false;
  if (flagKeys === undefined) return true;
  if (!Array.isArray(flagKeys) || flagKeys.length > evaluateFlagKeysMax) return false;
  for (const key of flagKeys as unknown[]) if (typeof key !== 'string' || key.length > keyCharsMax) return false;
  return true;
}

/** Untrusted body → request, or a 400 naming the field or the limit. */
export function decodeEvaluateBody(body: unknown): EvaluateRequest {
  return isWellFormedEvaluateBody(body) ? body : decodeEvaluateBodyByRules(body);
}

/**
 * The full path of decodeEvaluateBody: depth, schema, then limits, each refusal a 400 worded for
 * the user. Exported for the test that holds the one-pass check to it.
 */
export function decodeEvaluateBodyByRules(body: unknown): EvaluateRequest {
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

/** Calls `next` with `v` now when it is a value, or once it resolves (the hot path stays synchronous). */
export function whenReady<T, U>(v: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return v instanceof Promise ? v.then(next) : next(v);
}

/**
 * The environment of an SDK request's key: at once when the key is already known (the hot path),
 * else through the store (a 401 for a missing or unknown key).
 */
export function sdkEnvironment(keys: SdkKeys, req: HttpRequest<unknown>): EnvironmentInfo | Promise<EnvironmentInfo> {
  const key = sdkKeyOf(authorizationOf(req));
  return (key !== undefined ? keys.cached(key) : undefined) ?? requireSdkKey(keys, req);
}

/** JSON of each shared outcome (results are frozen, one per flag version), made once. */
const outcomeJson = new WeakMap<EvaluationAnswer, string>();
function answerJson(r: EvaluationAnswer): string {
  let s = outcomeJson.get(r);
  if (s === undefined) {
    s = JSON.stringify(r);
    outcomeJson.set(r, s);
  }
  return s;
}

const jsonContentType = Object.freeze({ 'content-type': 'application/json' });

/** A key that may be an array index, which JSON.stringify writes before every other key. */
function startsWithDigit(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57;
}

/** JSON of each flag's key, made once per flag version (the flag objects are never mutated). */
const keyJsonOf = new WeakMap<Flag, string>();
function keyJson(flag: Flag): string {
  let s = keyJsonOf.get(flag);
  if (s === undefined) {
    s = JSON.stringify(flag.key);
    keyJsonOf.set(flag, s);
  }
  return s;
}

/**
 * An environment's evaluate-all plan for one revision, with each planned flag's answer fragments:
 * `fragments[i][outcome]` is `,"key":{...}` (no comma for the first flag). `direct` when the flags'
 * order is JSON.stringify's (no key starts with a digit).
 */
interface EnvPlan {
  readonly revision: number;
  readonly plan: EvalPlan;
  readonly direct: boolean;
  readonly fragments: ReadonlyArray<readonly string[] | undefined>;
  /**
   * When every flag is planned: the outcome of each flag in the last answer written, and that
   * answer. The answer is a function of the outcomes alone, so a request whose flags all come out
   * the same as the last one's (every request for one context, many for contexts alike) reuses
   * its string instead of joining the fragments again; any other request replaces it.
   */
  readonly last: Uint32Array | undefined;
  lastBody: string | undefined;
  /** The other answers written from this plan (PlannedView), made on their first use. */
  readonly views: Map<PlannedView<unknown>, ViewState>;
}
const plans = new WeakMap<EnvState, EnvPlan>();

/**
 * An answer other than evaluate-all's written from a plan's outcomes (OFREP's bulk list, with its
 * ETag): `make` runs once per revision, given the plan's entries (every one planned, in the
 * order JSON.stringify writes evaluate-all's flags), and returns the writer of the answer for the
 * outcome of each flag (an index into its `fast.results`). As with evaluate-all's body, the answer
 * is a function of the outcomes alone, so the last one is reused while every outcome repeats.
 */
export interface PlannedView<A> {
  /** Called once per plan per view (views are module constants: each keeps one writer per plan). */
  make(entries: readonly PlanEntry[]): (outcomes: Uint32Array) => A;
}

/** A view's writer for one plan, with the outcomes of its last answer and that answer. */
interface ViewState {
  readonly write: (outcomes: Uint32Array) => unknown;
  readonly last: Uint32Array;
  answer: unknown;
}

/** The plan of the environment's current revision (its flags and segments change only by apply()). */
function planOf(env: EnvState): EnvPlan {
  const have = plans.get(env);
  if (have !== undefined && have.revision === env.revision) return have;
  const plan = new EvalPlan(env.flags.values(), env);
  let direct = true;
  const fragments = plan.entries.map((e, i) => {
    if (startsWithDigit(e.flag.key)) direct = false;
    const head = `${i === 0 ? '' : ','}${keyJson(e.flag as Flag)}:`;
    return e.fast?.results.map((r) => head + answerJson(r));
  });
  const allFast = plan.entries.every((e) => e.fast !== undefined);
  const last = allFast ? new Uint32Array(plan.entries.length) : undefined;
  const made: EnvPlan = {
    revision: env.revision,
    plan,
    direct,
    fragments,
    last,
    lastBody: undefined,
    views: new Map(),
  };
  plans.set(env, made);
  return made;
}

export class Evaluator {
  private readonly lastWarned = new Map<string, number>();
  /** Evaluation options per environment (its warning sink), made once, not per request. */
  private readonly optionsOf = new WeakMap<EnvState, EvalOptions>();

  constructor(private readonly ctx: FlagsContext) {}

  /**
   * One flag (or the FLAG_NOT_FOUND answer), counted by reason; `memo` shares prerequisites across
   * calls for one context (undefined: a memo of its own when the flag has prerequisites).
   */
  one(env: EnvState, context: EvalContext, key: string, memo: EvalMemo | undefined): EvaluationAnswer {
    return this.outcome(env, context, env.flags.get(key), memo);
  }

  /** One flag's answer, counted; without a shared memo, a flag with prerequisites gets its own. */
  private outcome(env: EnvState, context: EvalContext, flag: Flag | undefined, memo: EvalMemo | undefined) {
    // A named flag that does not exist answers an ERROR result rather than failing the batch.
    const r: EvaluationAnswer = flag
      ? evaluate(
          flag,
          context,
          env,
          this.options(env),
          memo ?? (flag.prerequisites.length > 0 ? new EvalMemo() : undefined),
        )
      : notFound;
    const byReason = this.ctx.metrics.evalCounts.byReason;
    byReason.set(r.reason.kind, (byReason.get(r.reason.kind) ?? 0) + 1);
    return r;
  }

  /**
   * Every requested flag (all of the environment's without flagKeys), keyed by flag key in the
   * order JSON.stringify writes them. Prerequisites are evaluated once per request (EvalMemo).
   */
  run(env: EnvState, req: EvaluateRequest): { flags: Record<string, EvaluationAnswer> } {
    const flags: Record<string, EvaluationAnswer> = {};
    const memo = new EvalMemo();
    if (req.flagKeys === undefined)
      for (const key of env.flags.keys()) flags[key] = this.one(env, req.context, key, memo);
    else for (const key of req.flagKeys) flags[key] = this.one(env, req.context, key, memo);
    return { flags };
  }

  /**
   * `run` as the 200 answer, its body written from per-outcome JSON fragments: exactly the bytes
   * JSON.stringify(run(...)) gives. Written straight from the flags when their order is
   * insertion order (every flag, no key starting with a digit; or one requested key); otherwise
   * through run's object, whose Object.keys order is JSON.stringify's (integer-like keys first,
   * a repeated key once, `__proto__` not an own key).
   */
  answer(env: EnvState, req: EvaluateRequest): HttpResult {
    return { status: 200, raw: this.answerBody(env, req), headers: jsonContentType };
  }

  private answerBody(env: EnvState, req: EvaluateRequest): string {
    if (req.flagKeys === undefined) {
      const p = planOf(env);
      if (p.direct) return this.plannedBody(env, p, req.context);
    }
    let out = '{"flags":{';
    let first = true;
    this.eachAnswer(env, req, (key, r, flag) => {
      out += `${first ? '' : ','}${flag ? keyJson(flag) : JSON.stringify(key)}:${answerJson(r)}`;
      first = false;
    });
    return `${out}}}`;
  }

  /**
   * Every flag through the plan, written from its fragments; the flags the plan leaves to the
   * general evaluator are evaluated as before (one EvalMemo per request), in their place.
   */
  private plannedBody(env: EnvState, p: EnvPlan, context: EvalContext): string {
    if (p.last !== undefined) return this.fastBody(p, p.last, context);
    const run = p.plan.begin(context);
    const counts = [0, 0, 0, 0, 0, 0];
    const entries = p.plan.entries;
    let memo: EvalMemo | undefined;
    let out = '{"flags":{';
    try {
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i] as PlanEntry;
        const fast = e.fast;
        if (fast !== undefined) {
          const o = run.outcome(fast);
          const k = fast.kinds[o] as number;
          const n = counts[k] as number;
          if (n === 0) this.reasonSeen(k);
          counts[k] = n + 1;
          out += (p.fragments[i] as readonly string[])[o] as string;
        } else {
          const r = this.outcome(env, context, e.flag as Flag, (memo ??= new EvalMemo()));
          out += `${i === 0 ? '' : ','}${keyJson(e.flag as Flag)}:${answerJson(r)}`;
        }
      }
    } finally {
      this.addReasons(counts);
    }
    return `${out}}}`;
  }

  /** plannedBody when every flag is planned: the outcomes first, then the last answer or a new one. */
  private fastBody(p: EnvPlan, last: Uint32Array, context: EvalContext): string {
    let same: boolean;
    try {
      same = this.outcomes(p, last, context);
    } catch (err) {
      p.lastBody = undefined; // `last` may be half written
      throw err;
    }
    if (same && p.lastBody !== undefined) return p.lastBody;
    let out = '{"flags":{';
    const entries = p.plan.entries;
    for (let i = 0; i < entries.length; i++) out += (p.fragments[i] as readonly string[])[last[i] as number] as string;
    out += '}}';
    p.lastBody = out;
    return out;
  }

  /**
   * Every flag of a plan whose flags are all planned, evaluated for `context` and counted by
   * reason, its outcome written to `last`: whether every outcome was already there.
   */
  private outcomes(p: EnvPlan, last: Uint32Array, context: EvalContext): boolean {
    const run = p.plan.begin(context);
    const counts = [0, 0, 0, 0, 0, 0];
    const entries = p.plan.entries;
    let same = true;
    try {
      for (let i = 0; i < entries.length; i++) {
        const fast = (entries[i] as PlanEntry).fast as FastFlag;
        const o = run.outcome(fast);
        const k = fast.kinds[o] as number;
        const n = counts[k] as number;
        if (n === 0) this.reasonSeen(k);
        counts[k] = n + 1;
        if (last[i] !== o) {
          last[i] = o;
          same = false;
        }
      }
    } finally {
      this.addReasons(counts);
    }
    return same;
  }

  /**
   * Every flag of the environment evaluated for `context` (counted by reason, as answer() counts)
   * and written as `view`'s answer; undefined, with nothing evaluated, unless every flag is planned
   * and written in the flags' own order (then eachAnswer is the way).
   */
  planned<A>(env: EnvState, context: EvalContext, view: PlannedView<A>): A | undefined {
    const p = planOf(env);
    if (p.last === undefined || !p.direct) return undefined;
    let v = p.views.get(view as PlannedView<unknown>);
    if (v === undefined) {
      v = { write: view.make(p.plan.entries), last: new Uint32Array(p.plan.entries.length), answer: undefined };
      p.views.set(view as PlannedView<unknown>, v);
    }
    let same: boolean;
    try {
      same = this.outcomes(p, v.last, context);
    } catch (err) {
      v.answer = undefined; // `last` may be half written
      throw err;
    }
    if (!same || v.answer === undefined) {
      v.answer = undefined; // not the last answer, should write throw
      v.answer = v.write(v.last);
    }
    return v.answer as A;
  }

  /**
   * A reason kind met for the first time in a request: its counter is created now if it is new,
   * so the counters keep the order in which outcomes were met (the order flag by flag counting
   * gave; /metrics lists them in it); the counts are added once at the end (addReasons).
   */
  private reasonSeen(k: number): void {
    const byReason = this.ctx.metrics.evalCounts.byReason;
    const kind = reasonKinds[k] as string;
    if (!byReason.has(kind)) byReason.set(kind, 0);
  }

  private addReasons(counts: readonly number[]): void {
    const byReason = this.ctx.metrics.evalCounts.byReason;
    for (let k = 0; k < counts.length; k++) {
      const n = counts[k] as number;
      if (n === 0) continue;
      const kind = reasonKinds[k] as string;
      byReason.set(kind, (byReason.get(kind) ?? 0) + n);
    }
  }

  /**
   * Calls `visit` with each requested flag's key, answer and flag (undefined for an unknown key) in
   * the order JSON.stringify writes run()'s object, without building it when that order is the
   * flags' own (every flag and no key starting with a digit, or one requested key). Otherwise
   * through run()'s object, whose Object.keys order is JSON.stringify's (integer-like keys first,
   * a repeated key once, `__proto__` not an own key).
   */
  eachAnswer(
    env: EnvState,
    req: EvaluateRequest,
    visit: (key: string, r: EvaluationAnswer, flag: Flag | undefined) => void,
  ): void {
    const keys = req.flagKeys;
    if (keys === undefined) {
      const p = planOf(env);
      if (p.direct) {
        const run = p.plan.begin(req.context);
        const byReason = this.ctx.metrics.evalCounts.byReason;
        let memo: EvalMemo | undefined;
        for (const e of p.plan.entries) {
          const flag = e.flag as Flag;
          let r: EvaluationAnswer;
          if (e.fast !== undefined) {
            r = run.result(e.fast);
            byReason.set(r.reason.kind, (byReason.get(r.reason.kind) ?? 0) + 1);
          } else r = this.outcome(env, req.context, flag, (memo ??= new EvalMemo()));
          visit(flag.key, r, flag);
        }
        return;
      }
    } else if (keys.length === 1 && keys[0] !== '__proto__') {
      const key = keys[0] as string;
      const flag = env.flags.get(key);
      visit(key, this.outcome(env, req.context, flag, undefined), flag);
      return;
    }
    const flags = this.run(env, req).flags;
    for (const key of Object.keys(flags)) visit(key, flags[key] as EvaluationAnswer, env.flags.get(key));
  }

  private options(env: EnvState): EvalOptions {
    let opts = this.optionsOf.get(env);
    if (opts === undefined) {
      opts = { onWarning: (w: EvalWarning): void => this.warn(env, w) };
      this.optionsOf.set(env, opts);
    }
    return opts;
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
