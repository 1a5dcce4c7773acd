/**
 * The flag evaluator: a pure function of (flag, context, store of other flags and segments), in
 * exactly ../shared/specs/DECISIONS.md's order: off → prerequisites → targets → rules → rollout → default.
 * Flags and segments are compiled once (target sets, clause tests, rollout thresholds, frozen
 * results) and cached by object identity, so the hot path allocates next to nothing. No I/O, no
 * clock, no logging: a missing segment is reported through `opts.onWarning`, never thrown.
 * Evaluating many flags for one context shares an EvalMemo, so each prerequisite is evaluated once
 * (evaluate-all is linear in flags plus prerequisite edges, not quadratic on chains).
 */
import {
  CLAUSE_OPS,
  ROLLOUT_TOTAL,
  type Clause,
  type ClauseOp,
  type EvalContext,
  type FlagDefinition,
  type JsonValue,
  type SegmentDefinition,
} from '../model/types.js';
import { bucketOfHashInput, bucketableValue, hashPrefix } from './bucket.js';
import { unreachable } from '../../util/assert.js';
import { compileScalarTest, type Scalar, type ScalarTest } from './operators.js';

export type ReasonKind = 'OFF' | 'PREREQUISITE_FAILED' | 'TARGET_MATCH' | 'RULE_MATCH' | 'FALLTHROUGH' | 'ERROR';

/**
 * Why an ERROR (data that skipped validation): the flag refers to a variation it lacks, or a
 * prerequisite chain loops back on itself.
 */
export type EvalErrorKind = 'MALFORMED_FLAG' | 'PREREQUISITE_CYCLE';

export interface EvalReason {
  kind: ReasonKind;
  /** RULE_MATCH: the rule that matched. */
  ruleId?: string;
  /** PREREQUISITE_FAILED: the first prerequisite that failed. */
  prerequisiteKey?: string;
  /** FALLTHROUGH: true when the variation came from the rollout. */
  inRollout?: boolean;
  /** ERROR only. */
  errorKind?: EvalErrorKind;
}

/**
 * The outcome. Results are shared and frozen (one per flag outcome, made at compile time), so
 * callers must not mutate them; `value` is the flag's own variation value.
 */
export interface EvalResult {
  value: JsonValue;
  /** The variation key; null only for an ERROR with no usable default variation. */
  variation: string | null;
  reason: EvalReason;
}

/** Read access to the other flags (same project and environment) and segments (same project). */
export interface EvalStore {
  flag(key: string): FlagDefinition | undefined;
  segment(key: string): SegmentDefinition | undefined;
}

export type EvalWarningCode =
  | 'SEGMENT_NOT_FOUND'
  | 'SEGMENT_IN_SEGMENT'
  | 'UNKNOWN_OPERATOR'
  | 'PREREQUISITE_CYCLE'
  | 'MALFORMED_FLAG';

export interface EvalWarning {
  code: EvalWarningCode;
  /** The flag being evaluated when the problem was met (a prerequisite's key, if it was there). */
  flagKey: string;
  segmentKey?: string;
  /** A sentence for the log. */
  message: string;
}

export interface EvalOptions {
  /** Spec "Evaluation facts" 4: a segmentMatch naming a deleted segment does not match, and warns. */
  onWarning?: (warning: EvalWarning) => void;
}

// ---------------------------------------------------------------------------------------------
// Compiled forms

const OP_SET: ReadonlySet<string> = new Set<string>(CLAUSE_OPS);

export interface CompiledAttributeClause {
  kind: 'attribute';
  attribute: string;
  test: ScalarTest;
  /** negate XOR (op is notIn): applied to the "any element matches" outcome. */
  invert: boolean;
  /**
   * Attribute, operator, negate and values: two clauses with the same signature match the same
   * contexts (plan.ts evaluates them once per context).
   */
  signature: string;
}

export interface CompiledSegmentClause {
  kind: 'segment';
  segmentKeys: readonly string[];
  negate: boolean;
  /** Where the clause sits, for warnings: `flag "f" rule "r1"`. */
  where: string;
  /** Segment keys and negate (see CompiledAttributeClause.signature). */
  signature: string;
}

/** A clause that can never match (unknown operator, segmentMatch inside a segment). */
interface CompiledBrokenClause {
  kind: 'broken';
  warning: Omit<EvalWarning, 'flagKey'>;
}

export type CompiledClause = CompiledAttributeClause | CompiledSegmentClause | CompiledBrokenClause;

interface CompiledRule {
  clauses: readonly CompiledClause[];
  result: EvalResult;
}

interface CompiledPrerequisite {
  flagKey: string;
  variation: string;
  failed: EvalResult;
}

/** A flag prepared for evaluation. Opaque outside this module; build with compileFlag. */
export interface CompiledFlag {
  readonly key: string;
  readonly enabled: boolean;
  readonly off: EvalResult;
  readonly fallthrough: EvalResult;
  readonly prerequisites: readonly CompiledPrerequisite[];
  /** context key → TARGET_MATCH result; the first target listing a key wins. */
  readonly targets: ReadonlyMap<string, EvalResult> | undefined;
  readonly rules: readonly CompiledRule[];
  /** Running sums of weight/100000 (LaunchDarkly's accumulation), and the result of each entry. */
  readonly rolloutThresholds: readonly number[];
  readonly rolloutResults: readonly EvalResult[];
  readonly bucketBy: string;
  readonly hashPrefix: string;
  /** Set when the flag refers to variations it lacks (it skipped validation). */
  readonly malformed: string | undefined;
}

export interface CompiledSegment {
  readonly key: string;
  readonly included: ReadonlySet<string>;
  readonly excluded: ReadonlySet<string>;
  readonly rules: readonly (readonly CompiledClause[])[];
}

function freezeResult(value: JsonValue, variation: string | null, reason: EvalReason): EvalResult {
  return Object.freeze({ value, variation, reason: Object.freeze(reason) });
}

function compileClause(c: Clause, where: string, inSegment: boolean): CompiledClause {
  const op: string = c.op;
  if (!OP_SET.has(op)) {
    return {
      kind: 'broken',
      warning: {
        code: 'UNKNOWN_OPERATOR',
        message: `${where}: unknown operator ${JSON.stringify(op)}; the clause does not match`,
      },
    };
  }
  const known = op as ClauseOp;
  if (known === 'segmentMatch') {
    if (inSegment) {
      return {
        kind: 'broken',
        warning: {
          code: 'SEGMENT_IN_SEGMENT',
          message: `${where}: segmentMatch inside a segment is not supported; the clause does not match`,
        },
      };
    }
    const segmentKeys = [...c.values];
    const negate = c.negate === true;
    return { kind: 'segment', segmentKeys, negate, where, signature: `${negate}\u0000${JSON.stringify(segmentKeys)}` };
  }
  const negate = c.negate === true;
  return {
    kind: 'attribute',
    attribute: c.attribute,
    test: compileScalarTest(known, c.values),
    invert: negate !== (known === 'notIn'),
    signature: `${known}\u0000${negate}\u0000${JSON.stringify(c.attribute)}\u0000${JSON.stringify(c.values)}`,
  };
}

const flagCache = new WeakMap<FlagDefinition, CompiledFlag>();
const segmentCache = new WeakMap<SegmentDefinition, CompiledSegment>();

/**
 * Prepares a flag for evaluation (cached by object identity: a stored flag is never mutated in
 * place; an update is a new object). `evaluate` calls this itself; call it ahead of time to move
 * the cost out of the first evaluation.
 */
export function compileFlag(flag: FlagDefinition): CompiledFlag {
  const cached = flagCache.get(flag);
  if (cached) return cached;
  const byKey = new Map<string, JsonValue>();
  for (const v of flag.variations) if (!byKey.has(v.key)) byKey.set(v.key, v.value);
  let malformed: string | undefined;
  const defaultOk = byKey.has(flag.defaultVariation);
  const defaultValue = defaultOk ? (byKey.get(flag.defaultVariation) as JsonValue) : null;
  const defaultKey = defaultOk ? flag.defaultVariation : null;
  if (!defaultOk)
    malformed =
      `flag ${JSON.stringify(flag.key)} has no variation ` +
      `${JSON.stringify(flag.defaultVariation)} (its defaultVariation)`;
  const errorResult = freezeResult(defaultValue, defaultKey, { kind: 'ERROR', errorKind: 'MALFORMED_FLAG' });
  // An outcome naming a missing variation evaluates to ERROR (validation refuses such flags).
  const result = (variation: string, reason: EvalReason): EvalResult => {
    if (!byKey.has(variation)) {
      malformed ??= `flag ${JSON.stringify(flag.key)} has no variation ${JSON.stringify(variation)}`;
      return errorResult;
    }
    return freezeResult(byKey.get(variation) as JsonValue, variation, reason);
  };
  const fromDefault = (reason: EvalReason): EvalResult =>
    defaultOk ? freezeResult(defaultValue, defaultKey, reason) : errorResult;

  let targets: Map<string, EvalResult> | undefined;
  for (const t of flag.targets) {
    const r = result(t.variation, { kind: 'TARGET_MATCH' });
    for (const k of t.contextKeys) {
      targets ??= new Map();
      if (!targets.has(k)) targets.set(k, r);
    }
  }

  const rolloutThresholds: number[] = [];
  const rolloutResults: EvalResult[] = [];
  let sum = 0;
  for (const e of flag.rollout) {
    sum += e.weight / ROLLOUT_TOTAL;
    rolloutThresholds.push(sum);
    rolloutResults.push(result(e.variation, { kind: 'FALLTHROUGH', inRollout: true }));
  }

  const compiled: CompiledFlag = {
    key: flag.key,
    enabled: flag.enabled,
    off: fromDefault({ kind: 'OFF' }),
    fallthrough: fromDefault({ kind: 'FALLTHROUGH' }),
    prerequisites: flag.prerequisites.map((p) => ({
      flagKey: p.flagKey,
      variation: p.variation,
      failed: fromDefault({ kind: 'PREREQUISITE_FAILED', prerequisiteKey: p.flagKey }),
    })),
    targets,
    rules: flag.rules.map((r) => ({
      clauses: r.clauses.map((c) =>
        compileClause(c, `flag ${JSON.stringify(flag.key)} rule ${JSON.stringify(r.id)}`, false),
      ),
      result: result(r.variation, { kind: 'RULE_MATCH', ruleId: r.id }),
    })),
    rolloutThresholds,
    rolloutResults,
    bucketBy: flag.bucketBy ?? 'key',
    hashPrefix: hashPrefix(flag.key, flag.seed),
    malformed,
  };
  flagCache.set(flag, compiled);
  return compiled;
}

/** Prepares a segment (cached by object identity, like flags). */
export function compileSegment(segment: SegmentDefinition): CompiledSegment {
  const cached = segmentCache.get(segment);
  if (cached) return cached;
  const compiled: CompiledSegment = {
    key: segment.key,
    included: new Set(segment.included),
    excluded: new Set(segment.excluded),
    rules: segment.rules.map((r, i) =>
      r.clauses.map((c) => compileClause(c, `segment ${JSON.stringify(segment.key)} rules[${i}]`, true)),
    ),
  };
  segmentCache.set(segment, compiled);
  return compiled;
}

// ---------------------------------------------------------------------------------------------
// Matching

function isScalar(v: unknown): v is Scalar {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** The context key as a string (targets and segment lists hold strings), or undefined. */
export function contextKey(context: EvalContext): string | undefined {
  const k: unknown = context.key;
  return typeof k === 'string' ? k : typeof k === 'number' ? String(k) : undefined;
}

/**
 * ../shared/specs/DECISIONS.md: an attribute the context lacks never matches, negated or not; an array attribute
 * matches when any element matches; `negate` inverts. Only strings, numbers, booleans and arrays
 * count as present (so inherited members such as `toString` read as missing).
 */
export function attributeClauseMatches(c: CompiledAttributeClause, context: EvalContext): boolean {
  const v: unknown = context[c.attribute];
  let any = false;
  if (isScalar(v)) any = c.test(v);
  else if (Array.isArray(v)) {
    for (const el of v) {
      if (isScalar(el) && c.test(el)) {
        any = true;
        break;
      }
    }
  } else return false;
  return any !== c.invert;
}

/** Segment membership: excluded > included > rules (OR of rules, AND of clauses within one). */
function segmentContains(
  seg: CompiledSegment,
  context: EvalContext,
  flagKey: string,
  opts: EvalOptions | undefined,
): boolean {
  const key = contextKey(context);
  if (key !== undefined) {
    if (seg.excluded.has(key)) return false;
    if (seg.included.has(key)) return true;
  }
  for (const clauses of seg.rules) {
    if (allClausesMatch(clauses, context, undefined, flagKey, opts)) return true;
  }
  return false;
}

function clauseMatches(
  c: CompiledClause,
  context: EvalContext,
  store: EvalStore | undefined,
  flagKey: string,
  opts: EvalOptions | undefined,
): boolean {
  switch (c.kind) {
    case 'attribute':
      return attributeClauseMatches(c, context);
    case 'segment': {
      // The context is a member of any listed segment; a missing segment does not match (spec
      // "Evaluation facts" 4) and is reported.
      let member = false;
      for (const segmentKey of c.segmentKeys) {
        const seg = store?.segment(segmentKey);
        if (seg === undefined) {
          opts?.onWarning?.({
            code: 'SEGMENT_NOT_FOUND',
            flagKey,
            segmentKey,
            message: `${c.where}: segment ${JSON.stringify(segmentKey)} not found; treated as not matching`,
          });
          continue;
        }
        if (segmentContains(compileSegment(seg), context, flagKey, opts)) {
          member = true;
          break;
        }
      }
      return member !== c.negate;
    }
    case 'broken':
      opts?.onWarning?.({ ...c.warning, flagKey });
      return false;
    default:
      return unreachable(c);
  }
}

function allClausesMatch(
  clauses: readonly CompiledClause[],
  context: EvalContext,
  store: EvalStore | undefined,
  flagKey: string,
  opts: EvalOptions | undefined,
): boolean {
  for (const c of clauses) if (!clauseMatches(c, context, store, flagKey, opts)) return false;
  return true;
}

/**
 * The index of the rollout entry for a context (the flag has one at least): the first whose
 * running sum exceeds the bucket, else the last.
 */
export function rolloutIndex(f: CompiledFlag, context: EvalContext): number {
  const v = bucketableValue(context[f.bucketBy]);
  const bucket = v === undefined ? 0 : bucketOfHashInput(f.hashPrefix + v);
  const thresholds = f.rolloutThresholds;
  for (let i = 0; i < thresholds.length; i++) {
    if (bucket < (thresholds[i] as number)) return i;
  }
  return thresholds.length - 1;
}

/** The rollout entry's result for a context (rolloutIndex). */
function rolloutResult(f: CompiledFlag, context: EvalContext): EvalResult {
  return f.rolloutResults[rolloutIndex(f, context)] as EvalResult;
}

const PREREQUISITE_CYCLE_RESULT = freezeResult(null, null, { kind: 'ERROR', errorKind: 'PREREQUISITE_CYCLE' });

/**
 * The flags already evaluated for one context against one store state, shared by the flags of one
 * evaluate-all: a flag listed as a prerequisite by many flags (or on a long chain) is evaluated
 * once, so the work is linear in flags plus prerequisite edges. Valid for one context and one
 * unchanged store only; make a new one per request.
 *
 * Exactness: a memoised result is a flag's result evaluated on its own, which is what any
 * evaluation of it yields unless a prerequisite cycle is met (the result of a flag on a loop
 * depends on where the loop was entered). Cycles are refused at write time; when one is met
 * anyway, the memo is abandoned (`cycle`) and that flag and every later one are evaluated alone,
 * exactly as without a memo.
 */
export class EvalMemo {
  /**
   * Compiled flag → its result for this context (only results computed without meeting a cycle).
   * Made on first use, like `active`: most requests evaluate no flag with prerequisites.
   */
  results: Map<CompiledFlag, EvalResult> | undefined;
  /** Keys of the flags being evaluated on the current prerequisite path (the cycle check, O(1)). */
  active: Set<string> | undefined;
  /** A prerequisite cycle was met: the memo is no longer used. */
  cycle = false;
  /** Flag evaluations run through the memo (memo hits excluded): what tests and benchmarks count. */
  evaluations = 0;
  /** Warnings of the flag being evaluated, held until it is known that no cycle voids its evaluation. */
  held: EvalWarning[] | undefined;
  private holdingOpts: EvalOptions | undefined;

  /** Options that hold warnings in `held` instead of reporting them. */
  holding(): EvalOptions {
    this.holdingOpts ??= { onWarning: (w) => (this.held ??= []).push(w) };
    return this.holdingOpts;
  }
}

/** One flag through the memo: a hit, or an evaluation recorded unless a cycle was met in it. */
function evaluateMemoised(
  f: CompiledFlag,
  context: EvalContext,
  store: EvalStore,
  opts: EvalOptions | undefined,
  memo: EvalMemo,
): EvalResult {
  const results = (memo.results ??= new Map());
  const hit = results.get(f);
  if (hit !== undefined) return hit;
  const active = (memo.active ??= new Set());
  memo.evaluations++;
  active.add(f.key);
  const r = evaluateCompiled(f, context, store, opts, undefined, memo);
  active.delete(f.key);
  if (!memo.cycle) results.set(f, r);
  return r;
}

function evaluateCompiled(
  f: CompiledFlag,
  context: EvalContext,
  store: EvalStore,
  opts: EvalOptions | undefined,
  chain: string[] | undefined,
  memo: EvalMemo | undefined,
): EvalResult {
  if (f.malformed !== undefined) opts?.onWarning?.({ code: 'MALFORMED_FLAG', flagKey: f.key, message: f.malformed });
  // 1. enabled: false → defaultVariation, OFF.
  if (!f.enabled) return f.off;

  // 2. Prerequisites, recursively: missing, disabled or another variation → PREREQUISITE_FAILED.
  // `chain` holds the flags being evaluated above this one; it is only built when a prerequisite
  // has prerequisites of its own (a leaf cannot close a loop), keeping the common case
  // allocation-free.
  for (const p of f.prerequisites) {
    const pre = store.flag(p.flagKey);
    if (pre === undefined || !pre.enabled) return p.failed;
    if (memo !== undefined) {
      // Through the memo: `active` holds this flag and those above it. A loop voids the memo (the
      // caller evaluates again without it, which reports the loop); the value returned is unused.
      if (memo.active?.has(p.flagKey) === true) {
        memo.cycle = true;
        return PREREQUISITE_CYCLE_RESULT;
      }
      const r = evaluateMemoised(compileFlag(pre), context, store, opts, memo);
      if (memo.cycle) return r;
      if (r.variation !== p.variation) return p.failed;
      continue;
    }
    if (p.flagKey === f.key || (chain !== undefined && chain.includes(p.flagKey))) {
      // A loop that skipped the write-time check: never infinite recursion. Inside a chain the
      // looping flag yields no variation, so every flag on the loop fails its prerequisite; the
      // flag asked for reports PREREQUISITE_FAILED.
      opts?.onWarning?.({
        code: 'PREREQUISITE_CYCLE',
        flagKey: f.key,
        message: `prerequisite cycle ${[...(chain ?? []), f.key, p.flagKey].join(' -> ')}; the prerequisite fails`,
      });
      return chain === undefined ? p.failed : PREREQUISITE_CYCLE_RESULT;
    }
    const pc = compileFlag(pre);
    let r: EvalResult;
    if (pc.prerequisites.length === 0) r = evaluateCompiled(pc, context, store, opts, undefined, undefined);
    else {
      const path = chain ?? [];
      path.push(f.key);
      try {
        r = evaluateCompiled(pc, context, store, opts, path, undefined);
      } finally {
        path.pop();
      }
    }
    if (r.variation !== p.variation) return p.failed;
  }

  // 3. Targets (highest priority among a flag's parts).
  if (f.targets !== undefined) {
    const key = contextKey(context);
    if (key !== undefined) {
      const hit = f.targets.get(key);
      if (hit !== undefined) return hit;
    }
  }

  // 4. Rules in order; all clauses of a rule must match.
  for (const rule of f.rules) {
    if (allClausesMatch(rule.clauses, context, store, f.key, opts)) return rule.result;
  }

  // 5. A non-empty rollout → bucketed variation; 6. else defaultVariation.
  if (f.rolloutResults.length > 0) return rolloutResult(f, context);
  return f.fallthrough;
}

/**
 * Evaluates `flag` for `context` (../shared/specs/DECISIONS.md "Evaluation, in order"). `store` resolves
 * prerequisite flags (same project and environment) and segments (same project). Never throws on
 * bad data: unparsable clause values do not match, a deleted segment does not match and warns,
 * a flag naming a variation it lacks yields reason ERROR. With `memo` (one per context, see
 * EvalMemo), prerequisites already evaluated for this context are not evaluated again.
 */
export function evaluate(
  flag: FlagDefinition,
  context: EvalContext,
  store: EvalStore,
  opts?: EvalOptions,
  memo?: EvalMemo,
): EvalResult {
  const f = compileFlag(flag);
  // A flag without prerequisites costs less than a memo round trip (and cannot meet a cycle).
  if (memo === undefined || memo.cycle || f.prerequisites.length === 0)
    return evaluateCompiled(f, context, store, opts, undefined, undefined);
  const hit = memo.results?.get(f);
  if (hit !== undefined) return hit;
  const report = opts?.onWarning;
  const r = evaluateMemoised(f, context, store, report === undefined ? opts : memo.holding(), memo);
  const held = memo.held;
  memo.held = undefined;
  if (!memo.cycle) {
    if (held !== undefined && report !== undefined) for (const w of held) report(w);
    return r;
  }
  // A cycle met under this flag: evaluated again alone, as without a memo (which reports it).
  return evaluateCompiled(f, context, store, opts, undefined, undefined);
}

/**
 * Evaluates several flags for one context, keyed by flag key (the evaluate endpoint's `flags`
 * object). `flagKeys` limits the set (unknown keys are skipped); results are the shared frozen
 * outcomes of `evaluate`. Prerequisites are evaluated once each (an EvalMemo for the call; pass
 * your own to count evaluations).
 */
export function evaluateAll(
  flags: Iterable<FlagDefinition>,
  context: EvalContext,
  store: EvalStore,
  opts?: EvalOptions,
  flagKeys?: readonly string[],
  memo: EvalMemo = new EvalMemo(),
): Record<string, EvalResult> {
  const wanted = flagKeys === undefined ? undefined : new Set(flagKeys);
  const out: Record<string, EvalResult> = {};
  for (const f of flags) {
    if (wanted !== undefined && !wanted.has(f.key)) continue;
    out[f.key] = evaluate(f, context, store, opts, memo);
  }
  return out;
}
