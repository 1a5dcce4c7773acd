/**
 * simlab flags and segments → LaunchDarkly's flag and segment JSON (the server-side SDKs' data
 * model), so an official LaunchDarkly SDK evaluates them as /sdk/v1/evaluate does. Pure: no I/O,
 * no state; the relay (./relay.ts) decides when to translate and what to send. It is not an
 * evaluator. Where the two models differ, see LD_APPROXIMATIONS below (also in the README).
 */
import type { Clause, Flag, FlagDefinition, JsonValue, Segment } from '../model/types.js';
import { parseVersion, toEpochMs, toNumber } from '../eval/operators.js';
import { ldRulesPerSimlabRuleMax } from '../limits.js';

/*
 * What LaunchDarkly's JSON cannot say exactly, and how the relay serves it (documented in the README):
 * - contexts: a simlab context is LD's single-kind context of kind "user" (LD's default kind for
 *   targets and clauses without contextKind); other kinds do not see targets or clause attributes.
 * - `notIn` is `in` with `negate` flipped; `in` values are sent as the strings plus the numbers and
 *   booleans simlab's `in` also accepts for them ("5" → "5" and 5, "true" → "true" and true).
 * - numeric (`lt`...), date (`before`/`after`) and semver operators: the values are converted
 *   (numbers, epoch ms, canonical versions); on the context side LD only compares JSON numbers
 *   (not numeric strings), dates as numbers or strings Date.parse reads, versions as strings
 *   without a leading `v`. `semverLte`/`semverGte` (LD has no such operators) become two rules
 *   (`semVerLessThan` or `semVerEqual`), or two negated clauses when the clause is negated.
 * - `matches`: LD runs JavaScript's backtracking RegExp; simlab's linear engine refuses
 *   backreferences and lookaround (they never match in simlab).
 * - segments: simlab's `excluded` beats `included`, LD checks `included` first, so keys in both
 *   are left out of `included`. A clause simlab never matches (unknown operator, segmentMatch
 *   inside a segment) becomes `in` with no values, which never matches in LD either.
 * - `seed`: LD hashes `{seed}.{value}` only for a numeric seed; a seed that is a canonical integer
 *   is sent as LD's `seed`, a seed of the form `{flagKey}.{rest}` as `salt: rest`; a flag with
 *   any other seed is not served (the SDK answers its default: flag not found).
 * - a flag naming a variation it lacks (it skipped validation) is not served.
 * - `version`: LD's SDKs ignore a patch whose version is not higher than the one they hold, and a
 *   flag's LD form also changes when a prerequisite's variations move; so the relay sends the
 *   change-feed position at which the LD form last changed, not simlab's per-flag version.
 * - a rule whose expansion would exceed ldRulesPerSimlabRuleMax LD rules: the flag is not served;
 *   in a segment, that rule never matches.
 */

export interface LdClause {
  attribute: string;
  op: string;
  values: JsonValue[];
  negate: boolean;
}

export interface LdRule {
  id: string;
  clauses: LdClause[];
  variation: number;
  trackEvents: boolean;
}

export interface LdRollout {
  variations: Array<{ variation: number; weight: number }>;
  bucketBy?: string;
  seed?: number;
}

export interface LdFlag {
  key: string;
  version: number;
  on: boolean;
  salt: string;
  variations: JsonValue[];
  offVariation: number;
  fallthrough: { variation: number } | { rollout: LdRollout };
  targets: Array<{ values: string[]; variation: number }>;
  contextTargets: never[];
  prerequisites: Array<{ key: string; variation: number }>;
  rules: LdRule[];
  trackEvents: boolean;
  trackEventsFallthrough: boolean;
  clientSide: boolean;
  deleted: boolean;
}

export interface LdSegment {
  key: string;
  version: number;
  salt: string;
  included: string[];
  excluded: string[];
  includedContexts: never[];
  excludedContexts: never[];
  rules: Array<{ id: string; clauses: LdClause[] }>;
  unbounded: boolean;
  deleted: boolean;
}

export type Translation<T> = { ok: true; value: T } | { ok: false; code: 'unrepresentable'; reason: string };

/** LD operator names for the operators that map one to one. */
const LD_OPS: Readonly<Record<string, string>> = {
  startsWith: 'startsWith',
  endsWith: 'endsWith',
  contains: 'contains',
  matches: 'matches',
  lt: 'lessThan',
  lte: 'lessThanOrEqual',
  gt: 'greaterThan',
  gte: 'greaterThanOrEqual',
  before: 'before',
  after: 'after',
  semverEq: 'semVerEqual',
  semverLt: 'semVerLessThan',
  semverGt: 'semVerGreaterThan',
};

/** A clause that never matches in LD (matchAny over no values is false, and it is not negated). */
const neverClause = (): LdClause => ({ attribute: 'key', op: 'in', values: [], negate: false });

/** simlab's `in` values as LD's typed values: the strings, plus the numbers and booleans they equal. */
function membershipValues(values: readonly string[]): JsonValue[] {
  const out: JsonValue[] = [];
  for (const s of values) {
    out.push(s);
    const n = toNumber(s);
    if (!Number.isNaN(n)) out.push(n);
    if (s === 'true') out.push(true);
    else if (s === 'false') out.push(false);
  }
  return out;
}

function finiteNumbers(values: readonly string[], parse: (s: string) => number): number[] {
  return values.map(parse).filter((n) => !Number.isNaN(n));
}

function versions(values: readonly string[]): string[] {
  return values.flatMap((s) => {
    const v = parseVersion(s);
    return v === undefined ? [] : [v.version];
  });
}

/**
 * One simlab clause → LD clauses in disjunctive form: a list of alternatives, each a list of
 * clauses that must all match. Almost every clause is one alternative of one clause.
 */
export function translateClause(c: Clause, inSegment: boolean): LdClause[][] {
  const negate = c.negate === true;
  const attribute = c.attribute;
  switch (c.op) {
    case 'in':
    case 'notIn':
      return [[{ attribute, op: 'in', values: membershipValues(c.values), negate: negate !== (c.op === 'notIn') }]];
    case 'segmentMatch':
      return [[inSegment ? neverClause() : { attribute: 'key', op: 'segmentMatch', values: [...c.values], negate }]];
    case 'lt':
    case 'lte':
    case 'gt':
    case 'gte':
      return [[{ attribute, op: LD_OPS[c.op] as string, values: finiteNumbers(c.values, toNumber), negate }]];
    case 'before':
    case 'after':
      return [[{ attribute, op: LD_OPS[c.op] as string, values: finiteNumbers(c.values, toEpochMs), negate }]];
    case 'semverEq':
    case 'semverLt':
    case 'semverGt':
      return [[{ attribute, op: LD_OPS[c.op] as string, values: versions(c.values), negate }]];
    case 'semverLte':
    case 'semverGte': {
      const v = versions(c.values);
      const strict = c.op === 'semverLte' ? 'semVerLessThan' : 'semVerGreaterThan';
      const a: LdClause = { attribute, op: strict, values: v, negate };
      const b: LdClause = { attribute, op: 'semVerEqual', values: v, negate };
      // (lt or eq); negated: not lt and not eq. A missing attribute fails both forms, as in simlab.
      return negate ? [[a, b]] : [[a], [b]];
    }
    case 'startsWith':
    case 'endsWith':
    case 'contains':
    case 'matches':
      return [[{ attribute, op: LD_OPS[c.op] as string, values: [...c.values], negate }]];
    default:
      // An operator this version does not know: simlab's clause never matches.
      return [[neverClause()]];
  }
}

/**
 * A conjunction of simlab clauses → its LD alternatives (the product of each clause's
 * alternatives), or undefined past `ldRulesPerSimlabRuleMax`.
 */
export function translateClauses(clauses: readonly Clause[], inSegment: boolean): LdClause[][] | undefined {
  let alts: LdClause[][] = [[]];
  for (const c of clauses) {
    const options = translateClause(c, inSegment);
    if (alts.length * options.length > ldRulesPerSimlabRuleMax) return undefined;
    alts = alts.flatMap((prefix) => options.map((o) => [...prefix, ...o]));
  }
  return alts;
}

/** The index of each variation key (the first, as simlab's evaluator resolves duplicates). */
export function variationIndexes(flag: FlagDefinition): Map<string, number> {
  const idx = new Map<string, number>();
  flag.variations.forEach((v, i) => {
    if (!idx.has(v.key)) idx.set(v.key, i);
  });
  return idx;
}

/** LD's seed/salt for simlab's hash prefix, or undefined when LD cannot produce it. */
function seedAndSalt(flag: FlagDefinition): { salt: string; seed?: number } | undefined {
  const seed = flag.seed;
  if (seed === undefined) return { salt: flag.key };
  const n = Number(seed);
  // LD: `seed ? Number(seed) : key.salt`, so 0 cannot be a seed.
  if (/^-?[1-9]\d*$/.test(seed) && Number.isSafeInteger(n) && String(n) === seed) return { salt: flag.key, seed: n };
  if (seed.startsWith(`${flag.key}.`)) return { salt: seed.slice(flag.key.length + 1) };
  return undefined;
}

/**
 * A flag → LD's flag JSON. `prerequisiteIndex` resolves a prerequisite's variation key to its
 * index in that flag (-1 when the flag or the variation is missing: the prerequisite never holds,
 * as in simlab). `version` is what the relay sends (see the note on versions above).
 */
export function translateFlag(
  flag: FlagDefinition,
  version: number,
  prerequisiteIndex: (flagKey: string, variation: string) => number,
): Translation<LdFlag> {
  const idx = variationIndexes(flag);
  const at = (variation: string): number | undefined => idx.get(variation);
  const refuse = (reason: string): Translation<LdFlag> => ({ ok: false, code: 'unrepresentable', reason });
  const def = at(flag.defaultVariation);
  if (def === undefined) return refuse(`it has no variation ${JSON.stringify(flag.defaultVariation)}`);
  const hash = seedAndSalt(flag);
  if (hash === undefined) return refuse(`LaunchDarkly cannot hash with its seed ${JSON.stringify(flag.seed)}`);

  const targets: LdFlag['targets'] = [];
  for (const t of flag.targets) {
    const v = at(t.variation);
    if (v === undefined) return refuse(`a target names the missing variation ${JSON.stringify(t.variation)}`);
    targets.push({ values: [...t.contextKeys], variation: v });
  }
  const rules: LdRule[] = [];
  for (const r of flag.rules) {
    const v = at(r.variation);
    if (v === undefined) return refuse(`rule ${JSON.stringify(r.id)} names a missing variation`);
    const alts = translateClauses(r.clauses, false);
    if (alts === undefined)
      return refuse(`rule ${JSON.stringify(r.id)} needs more than ${ldRulesPerSimlabRuleMax} LaunchDarkly rules`);
    alts.forEach((clauses, i) =>
      rules.push({ id: i === 0 ? r.id : `${r.id}#${i + 1}`, clauses, variation: v, trackEvents: false }),
    );
  }
  let fallthrough: LdFlag['fallthrough'] = { variation: def };
  if (flag.rollout.length > 0) {
    const variations: LdRollout['variations'] = [];
    for (const e of flag.rollout) {
      const v = at(e.variation);
      if (v === undefined) return refuse(`the rollout names the missing variation ${JSON.stringify(e.variation)}`);
      variations.push({ variation: v, weight: e.weight });
    }
    const rollout: LdRollout = { variations };
    if (flag.bucketBy !== undefined && flag.bucketBy !== 'key') rollout.bucketBy = flag.bucketBy;
    if (hash.seed !== undefined) rollout.seed = hash.seed;
    fallthrough = { rollout };
  }
  return {
    ok: true,
    value: {
      key: flag.key,
      version,
      on: flag.enabled,
      salt: hash.salt,
      variations: flag.variations.map((v) => v.value),
      offVariation: def,
      fallthrough,
      targets,
      contextTargets: [],
      prerequisites: flag.prerequisites.map((p) => ({
        key: p.flagKey,
        variation: prerequisiteIndex(p.flagKey, p.variation),
      })),
      rules,
      trackEvents: false,
      trackEventsFallthrough: false,
      clientSide: false,
      deleted: false,
    },
  };
}

/** A segment → LD's segment JSON (rules expanded like a flag's; a rule past the cap never matches). */
export function translateSegment(segment: Segment | SegmentLike, version: number): LdSegment {
  const excluded = new Set(segment.excluded);
  const rules: LdSegment['rules'] = [];
  segment.rules.forEach((r, i) => {
    const id = r.id ?? `rule-${i}`;
    const alts = translateClauses(r.clauses, true) ?? [[neverClause()]];
    alts.forEach((clauses, j) => rules.push({ id: j === 0 ? id : `${id}#${j + 1}`, clauses }));
  });
  return {
    key: segment.key,
    version,
    salt: segment.key,
    included: segment.included.filter((k) => !excluded.has(k)),
    excluded: [...segment.excluded],
    includedContexts: [],
    excludedContexts: [],
    rules,
    unbounded: false,
    deleted: false,
  };
}

type SegmentLike = Pick<Segment, 'key' | 'included' | 'excluded' | 'rules'>;

/** The prerequisite resolver over a set of flags: variation key → index, -1 when missing. */
export function prerequisiteIndexer(flags: ReadonlyMap<string, Flag | FlagDefinition>) {
  return (flagKey: string, variation: string): number => {
    const f = flags.get(flagKey);
    if (f === undefined) return -1;
    return variationIndexes(f).get(variation) ?? -1;
  };
}
