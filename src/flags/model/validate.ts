/**
 * Write-time validation of flag and segment definitions: every rule of ../shared/specs/DECISIONS.md "Feature
 * flags" (key format, typed variations, variation references, rollout weights, rule ids,
 * operators, prerequisites and their cycles). Each failure is a value `{field, message}`, never an
 * exception. It is not the body-shape check (schemas.ts does that) and it does no I/O: other
 * flags are reached only through the `lookupFlag` callback the service supplies.
 */
import {
  CLAUSE_OPS,
  FLAG_TYPES,
  ROLLOUT_TOTAL,
  type Clause,
  type ClauseOp,
  type FieldError,
  type FlagDefinition,
  type FlagType,
  type Prerequisite,
  type SegmentDefinition,
  type Variation,
} from './types.js';
import { unreachable } from '../../util/assert.js';
import {
  flagDefinitionBytesMax,
  jsonValueDepthMax,
  keyCharsMax,
  segmentDefinitionBytesMax,
  targetContextKeysPerFlagMax,
  variationValueBytesMax,
} from '../limits.js';

/** ../shared/specs/DECISIONS.md: keys are URL-safe, `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$` (keyCharsMax = 128). */
export const KEY_PATTERN = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${keyCharsMax - 1}}$`);

const OP_SET: ReadonlySet<string> = new Set<string>(CLAUSE_OPS);

/** What validation needs to know about another flag of the same project and environment. */
export interface PrerequisiteView {
  variations: readonly Pick<Variation, 'key'>[];
  prerequisites: readonly Prerequisite[];
}

export interface FlagValidationContext {
  /**
   * The other flags of the same project and environment (the flag being written excluded or not:
   * its own entry is ignored). Enables the prerequisite-variation and cycle checks; without it
   * only the self-reference check runs.
   */
  lookupFlag?: (key: string) => PrerequisiteView | undefined;
}

function err(field: string, message: string): FieldError {
  return { field, message: `${field}: ${message}` };
}

function quote(s: string): string {
  return JSON.stringify(s);
}

export function isValidKey(key: unknown): key is string {
  return typeof key === 'string' && KEY_PATTERN.test(key);
}

function keyError(field: string, key: unknown): FieldError | undefined {
  if (isValidKey(key)) return undefined;
  return err(
    field,
    `must be 1 to ${keyCharsMax} letters, digits, '.', '_' or '-', starting with a letter or digit (got ` +
      `${JSON.stringify(key)})`,
  );
}

/**
 * Nesting depth of a JSON value, counted without recursion and without looking deeper than
 * `stopAt` (so a value nested 100,000 levels costs as much as one nested stopAt + 1): scalars are
 * 0, `[]` and `{}` are 1, `[[1]]` is 2. Returns stopAt + 1 for anything deeper than stopAt.
 */
export function jsonDepth(value: unknown, stopAt = jsonValueDepthMax): number {
  let deepest = 0;
  const stack: Array<{ v: unknown; d: number }> = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop() as { v: unknown; d: number };
    if (typeof v !== 'object' || v === null) continue;
    const depth = d + 1;
    if (depth > stopAt) return stopAt + 1;
    if (depth > deepest) deepest = depth;
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push({ v: c, d: depth });
  }
  return deepest;
}

/** UTF-8 bytes of a value serialised as JSON; call only on values whose depth was checked. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '');
}

/** Spec table "Flag types and the type of a variation value". */
function valueMatchesType(type: FlagType, value: unknown): boolean {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'integer':
      // An integer number, and one that survives a JSON round trip exactly.
      return typeof value === 'number' && Number.isSafeInteger(value);
    case 'json':
      return value !== undefined;
    default:
      return unreachable(type);
  }
}

const TYPE_WORDS: Record<FlagType, string> = {
  boolean: 'true or false',
  string: 'a string',
  integer: 'an integer',
  json: 'a JSON value',
};

/**
 * Clause checks shared by flag rules and segment rules: operator from the list, a non-empty
 * attribute (except segmentMatch, whose attribute is ''), string values.
 */
function validateClause(field: string, c: Clause, where: 'flag' | 'segment', out: FieldError[]): void {
  const op: unknown = c.op;
  if (typeof op !== 'string' || !OP_SET.has(op)) {
    out.push(err(`${field}.op`, `unknown operator ${JSON.stringify(op)} (expected one of ${CLAUSE_OPS.join(', ')})`));
  } else if ((op as ClauseOp) === 'segmentMatch') {
    // Segments do not nest: a segment's membership never depends on another segment's.
    if (where === 'segment') out.push(err(`${field}.op`, 'segmentMatch cannot be used inside a segment'));
    else if (c.values.length === 0) out.push(err(`${field}.values`, 'segmentMatch needs at least one segment key'));
  } else if (typeof c.attribute !== 'string' || c.attribute === '') {
    out.push(err(`${field}.attribute`, `must name a context attribute for operator ${op}`));
  }
  if (!Array.isArray(c.values)) out.push(err(`${field}.values`, 'must be an array of strings'));
  else
    c.values.forEach((v, i) => {
      if (typeof v !== 'string')
        out.push(err(`${field}.values[${i}]`, 'must be a string (numbers are sent as strings)'));
    });
  if (c.negate !== undefined && typeof c.negate !== 'boolean')
    out.push(err(`${field}.negate`, 'must be true or false'));
}

/**
 * Finds a prerequisite cycle through the flag being written (../shared/specs/DECISIONS.md: cycles are refused at
 * write time). `prereqs` are the flag's new prerequisites; every other flag's are read through
 * `lookup` (the flags of the same project and environment; missing flags end a path). Returns the
 * cycle as keys, first and last equal to `flagKey` (e.g. ['a', 'b', 'c', 'a']), or null.
 */
export function findPrerequisiteCycle(
  flagKey: string,
  prereqs: readonly Prerequisite[],
  lookup: (key: string) => { prerequisites: readonly Prerequisite[] } | undefined,
): string[] | null {
  // Depth-first search from flagKey; only a path back to flagKey matters (any other cycle among
  // existing flags was refused when it was written, and is cut off by `done` if it exists anyway).
  const done = new Set<string>();
  const path: string[] = [flagKey];
  const onPath = new Set<string>([flagKey]);
  const visit = (edges: readonly Prerequisite[]): boolean => {
    for (const p of edges) {
      if (p.flagKey === flagKey) {
        path.push(flagKey);
        return true;
      }
      if (done.has(p.flagKey) || onPath.has(p.flagKey)) continue;
      const next = lookup(p.flagKey);
      if (next === undefined) {
        done.add(p.flagKey);
        continue;
      }
      path.push(p.flagKey);
      onPath.add(p.flagKey);
      if (visit(next.prerequisites)) return true;
      path.pop();
      onPath.delete(p.flagKey);
      done.add(p.flagKey);
    }
    return false;
  };
  return visit(prereqs) ? path : null;
}

/**
 * Every write-time rule of ../shared/specs/DECISIONS.md for one flag definition. Returns [] when valid; otherwise
 * every failure found, each naming its field.
 */
export function validateFlag(flag: FlagDefinition, ctx: FlagValidationContext = {}): FieldError[] {
  const out: FieldError[] = [];
  const ke = keyError('key', flag.key);
  if (ke) out.push(ke);
  if (typeof flag.name !== 'string') out.push(err('name', 'must be a string'));
  const typeOk = (FLAG_TYPES as readonly unknown[]).includes(flag.type);
  if (!typeOk) out.push(err('type', `must be one of ${FLAG_TYPES.join(', ')} (got ${JSON.stringify(flag.type)})`));
  if (typeof flag.enabled !== 'boolean') out.push(err('enabled', 'must be true or false'));

  // Variations: at least one, keys non-empty and unique, each value of the flag's type.
  const variationKeys = new Set<string>();
  if (flag.variations.length === 0) out.push(err('variations', 'at least one variation is required'));
  flag.variations.forEach((v, i) => {
    if (typeof v.key !== 'string' || v.key === '') out.push(err(`variations[${i}].key`, 'must be a non-empty string'));
    else if (variationKeys.has(v.key)) out.push(err(`variations[${i}].key`, `duplicate variation key ${quote(v.key)}`));
    else variationKeys.add(v.key);
    // Size before type: the type message quotes the value, which must be small and shallow first.
    if (jsonDepth(v.value) > jsonValueDepthMax) {
      out.push(
        err(
          `variations[${i}].value`,
          `must nest at most ${jsonValueDepthMax} levels of arrays and objects (the limit)`,
        ),
      );
      return;
    }
    const bytes = jsonBytes(v.value);
    if (bytes > variationValueBytesMax) {
      out.push(
        err(
          `variations[${i}].value`,
          `must be at most ${variationValueBytesMax} bytes as JSON (the limit; got ${bytes})`,
        ),
      );
      return;
    }
    if (typeOk && !valueMatchesType(flag.type, v.value)) {
      out.push(
        err(
          `variations[${i}].value`,
          `must be ${TYPE_WORDS[flag.type]} for ${flag.type === 'integer' ? 'an' : 'a'} ` +
            `${flag.type} flag (got ${JSON.stringify(v.value) ?? 'nothing'})`,
        ),
      );
    }
  });
  const known = [...variationKeys].map(quote).join(', ');
  const checkRef = (field: string, ref: string): void => {
    if (!variationKeys.has(ref))
      out.push(err(field, `no variation with key ${quote(ref)} (variations are ${known || 'none'})`));
  };

  checkRef('defaultVariation', flag.defaultVariation);

  // Targets: each names an existing variation; a context key is targeted at most once.
  const targetedCount = flag.targets.reduce((n, t) => n + t.contextKeys.length, 0);
  if (targetedCount > targetContextKeysPerFlagMax) {
    out.push(
      err(
        'targets',
        `must name at most ${targetContextKeysPerFlagMax} context keys in all (the limit; got ${targetedCount})`,
      ),
    );
  }
  const targeted = new Map<string, number>();
  flag.targets.forEach((t, i) => {
    checkRef(`targets[${i}].variation`, t.variation);
    t.contextKeys.forEach((k, j) => {
      const field = `targets[${i}].contextKeys[${j}]`;
      if (typeof k !== 'string' || k === '') out.push(err(field, 'must be a non-empty string'));
      else if (targeted.has(k))
        out.push(err(field, `context key ${quote(k)} is already targeted by targets[${targeted.get(k)}]`));
      else targeted.set(k, i);
    });
  });

  // Prerequisites: well-formed keys, not the flag itself, no duplicates, the named variation
  // exists on the prerequisite flag when that flag exists, and no cycle back to this flag.
  const lookup = ctx.lookupFlag;
  const otherFlag = lookup ? (key: string) => (key === flag.key ? undefined : lookup(key)) : undefined;
  const seenPrereqs = new Set<string>();
  flag.prerequisites.forEach((p, i) => {
    const field = `prerequisites[${i}]`;
    const pke = keyError(`${field}.flagKey`, p.flagKey);
    if (pke) {
      out.push(pke);
      return;
    }
    if (p.flagKey === flag.key) {
      out.push(err(`${field}.flagKey`, 'a flag cannot be its own prerequisite'));
      return;
    }
    if (seenPrereqs.has(p.flagKey)) out.push(err(`${field}.flagKey`, `${quote(p.flagKey)} is already a prerequisite`));
    seenPrereqs.add(p.flagKey);
    const pre = otherFlag?.(p.flagKey);
    if (pre && !pre.variations.some((v) => v.key === p.variation)) {
      const theirs = pre.variations.map((v) => quote(v.key)).join(', ');
      out.push(
        err(
          `${field}.variation`,
          `flag ${quote(p.flagKey)} has no variation ${quote(p.variation)} (its variations are ${theirs || 'none'})`,
        ),
      );
    }
  });
  if (otherFlag && !flag.prerequisites.some((p) => p.flagKey === flag.key)) {
    const cycle = findPrerequisiteCycle(flag.key, flag.prerequisites, otherFlag);
    if (cycle) out.push(err('prerequisites', `prerequisite cycle ${cycle.join(' -> ')}`));
  }

  // Rules: ids non-empty and unique, an existing variation, valid clauses.
  const ruleIds = new Set<string>();
  flag.rules.forEach((r, i) => {
    const field = `rules[${i}]`;
    if (typeof r.id !== 'string' || r.id === '') out.push(err(`${field}.id`, 'must be a non-empty string'));
    else if (ruleIds.has(r.id)) out.push(err(`${field}.id`, `duplicate rule id ${quote(r.id)}`));
    else ruleIds.add(r.id);
    checkRef(`${field}.variation`, r.variation);
    r.clauses.forEach((c, j) => validateClause(`${field}.clauses[${j}]`, c, 'flag', out));
  });

  // Rollout: existing variations, non-negative integer weights summing to exactly 100000.
  let sum = 0;
  let weightsOk = true;
  flag.rollout.forEach((e, i) => {
    checkRef(`rollout[${i}].variation`, e.variation);
    if (!Number.isSafeInteger(e.weight) || e.weight < 0) {
      out.push(
        err(
          `rollout[${i}].weight`,
          `must be a non-negative integer share of ${ROLLOUT_TOTAL} (got ${JSON.stringify(e.weight)})`,
        ),
      );
      weightsOk = false;
    } else sum += e.weight;
  });
  if (flag.rollout.length > 0 && weightsOk && sum !== ROLLOUT_TOTAL) {
    out.push(err('rollout', `weights must sum to ${ROLLOUT_TOTAL} (got ${sum})`));
  }

  if (flag.bucketBy !== undefined && (typeof flag.bucketBy !== 'string' || flag.bucketBy === '')) {
    out.push(err('bucketBy', 'must name a context attribute (omit it to bucket by the context key)'));
  }
  if (flag.seed !== undefined && typeof flag.seed !== 'string') out.push(err('seed', 'must be a string'));
  // The whole definition last, once every part is known to be bounded (and shallow).
  if (out.length === 0) {
    const bytes = jsonBytes(flag);
    if (bytes > flagDefinitionBytesMax)
      out.push(
        err('body', `the flag must be at most ${flagDefinitionBytesMax} bytes as JSON (the limit; got ${bytes})`),
      );
  }
  return out;
}

/** The write-time rules for a segment: key format, string context keys, valid clauses. */
export function validateSegment(segment: SegmentDefinition): FieldError[] {
  const out: FieldError[] = [];
  const ke = keyError('key', segment.key);
  if (ke) out.push(ke);
  if (typeof segment.name !== 'string') out.push(err('name', 'must be a string'));
  for (const list of ['included', 'excluded'] as const) {
    segment[list].forEach((k, i) => {
      if (typeof k !== 'string' || k === '') out.push(err(`${list}[${i}]`, 'must be a non-empty string'));
    });
  }
  segment.rules.forEach((r, i) => {
    r.clauses.forEach((c, j) => validateClause(`rules[${i}].clauses[${j}]`, c, 'segment', out));
  });
  if (out.length === 0) {
    const bytes = jsonBytes(segment);
    if (bytes > segmentDefinitionBytesMax)
      out.push(
        err('body', `the segment must be at most ${segmentDefinitionBytesMax} bytes as JSON (the limit; got ${bytes})`),
      );
  }
  return out;
}
