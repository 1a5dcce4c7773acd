/**
 * The feature-flag data model (spec "Resources and their fields", camelCase JSON): flags with typed
 * variations referenced by key, targets, prerequisites, ordered rules, a rollout, and segments.
 * These are plain data types only; the TypeBox body schemas live in schemas.ts, the write-time
 * rules in validate.ts, and evaluation in ../eval/evaluate.ts.
 */

/** Flag types (spec: boolean, string, integer, json). */
export type FlagType = 'boolean' | 'string' | 'integer' | 'json';
export const FLAG_TYPES: readonly FlagType[] = ['boolean', 'string', 'integer', 'json'];

/** Clause operators, the complete list of ../shared/specs/DECISIONS.md "Feature flags". */
export type ClauseOp =
  | 'in'
  | 'notIn'
  | 'startsWith'
  | 'endsWith'
  | 'contains'
  | 'matches'
  | 'lt'
  | 'lte'
  | 'gt'
  | 'gte'
  | 'before'
  | 'after'
  | 'semverEq'
  | 'semverLt'
  | 'semverLte'
  | 'semverGt'
  | 'semverGte'
  | 'segmentMatch';
export const CLAUSE_OPS: readonly ClauseOp[] = [
  'in',
  'notIn',
  'startsWith',
  'endsWith',
  'contains',
  'matches',
  'lt',
  'lte',
  'gt',
  'gte',
  'before',
  'after',
  'semverEq',
  'semverLt',
  'semverLte',
  'semverGt',
  'semverGte',
  'segmentMatch',
];

/** Any JSON value (a json flag's variation value). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };

export interface Variation {
  key: string;
  /** Typed per the flag's type: boolean, string, safe integer, or any JSON value. */
  value: JsonValue;
}

/** Individual context-key overrides; the highest-priority part of a flag. */
export interface Target {
  contextKeys: string[];
  /** A variation key. */
  variation: string;
}

/** Another flag (same project and environment) that must evaluate to `variation`. */
export interface Prerequisite {
  flagKey: string;
  variation: string;
}

/**
 * One condition on a context attribute. `values` are strings (numbers are sent as strings);
 * for `segmentMatch` the attribute is '' and the values are segment keys.
 */
export interface Clause {
  attribute: string;
  op: ClauseOp;
  values: string[];
  /** Inverts the clause; a clause on an attribute the context lacks still never matches. */
  negate?: boolean;
}

/** A flag rule: all clauses must match (AND); rules are tried in order. */
export interface Rule {
  id: string;
  clauses: Clause[];
  variation: string;
}

/** An integer share of 100000; a flag's entries sum to exactly 100000. */
export interface RolloutEntry {
  variation: string;
  weight: number;
}

/** The total of a rollout's weights (spec Limits: rollout weights sum to 100000). */
export const ROLLOUT_TOTAL = 100000;

/**
 * A flag's definition: everything a client writes. The service adds `version`, `createdAt` and
 * `updatedAt` (see Flag); evaluation needs only the definition.
 */
export interface FlagDefinition {
  key: string;
  name: string;
  type: FlagType;
  enabled: boolean;
  defaultVariation: string;
  variations: Variation[];
  targets: Target[];
  prerequisites: Prerequisite[];
  rules: Rule[];
  rollout: RolloutEntry[];
  /** Attribute to bucket on; absent means the context key. */
  bucketBy?: string;
  /** Hash seed override; absent means the flag key is the salt. */
  seed?: string;
}

/** A stored flag, as the API returns it. */
export interface Flag extends FlagDefinition {
  /** Monotonically increasing, starting at 1. */
  version: number;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601. */
  updatedAt: string;
}

/** A segment rule: all clauses must match (AND); a segment's rules are ORed. */
export interface SegmentRule {
  /** Optional label, carried through unchanged; not used by evaluation. */
  id?: string;
  clauses: Clause[];
}

export interface SegmentDefinition {
  key: string;
  name: string;
  /** Context keys always in the segment (priority over rules). */
  included: string[];
  /** Context keys never in the segment; overrides included and rules. */
  excluded: string[];
  rules: SegmentRule[];
}

/** A stored segment (per project), as the API returns it. */
export interface Segment extends SegmentDefinition {
  version: number;
  createdAt: string;
  updatedAt: string;
}

/**
 * An evaluation context: a flat JSON object, LaunchDarkly-style `{key, kind?, name?, ...custom}`.
 * Clause attributes name its top-level fields; values are strings, numbers, booleans or arrays.
 */
export type ContextValue = string | number | boolean | null | ContextValue[];
export interface EvalContext {
  key?: string;
  kind?: string;
  [attribute: string]: ContextValue | undefined;
}

/** One write-time validation failure. `message` is complete and names the field first. */
export interface FieldError {
  /** Path of the offending field, e.g. `rules[0].clauses[1].op`, `rollout`, `key`. */
  field: string;
  /** e.g. `rollout: weights must sum to 100000 (got 99999)` */
  message: string;
}
