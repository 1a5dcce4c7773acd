/**
 * TypeBox 1.x schemas for the flag and segment request bodies (create = POST, replace = PUT),
 * compiled once, plus `normalizeFlag`/`normalizeSegment`, which fill the defaults of a full
 * replacement. Schemas check shape and types only; the cross-field rules (variation references,
 * weight sums, cycles) are in validate.ts, and decode.ts chains the three for the service.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { invariant } from '../../util/assert.js';
import {
  attributeCharsMax,
  clauseValueCharsMax,
  clauseValuesMax,
  clausesPerRuleMax,
  contextKeyCharsMax,
  keyCharsMax,
  nameCharsMax,
  prerequisitesPerFlagMax,
  rolloutEntriesMax,
  ruleIdCharsMax,
  rulesPerDefinitionMax,
  seedCharsMax,
  segmentContextKeysMax,
  targetContextKeysPerFlagMax,
  targetsPerFlagMax,
  variationKeyCharsMax,
  variationsPerFlagMax,
} from '../limits.js';
import {
  CLAUSE_OPS,
  FLAG_TYPES,
  type Clause,
  type FlagDefinition,
  type JsonValue,
  type Rule,
  type SegmentDefinition,
} from './types.js';

export const ClauseSchema = Type.Object(
  {
    attribute: Type.String({ maxLength: attributeCharsMax }),
    op: Type.Enum([...CLAUSE_OPS]),
    values: Type.Array(Type.String({ maxLength: clauseValueCharsMax }), { maxItems: clauseValuesMax }),
    negate: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const VariationSchema = Type.Object(
  { key: Type.String({ maxLength: variationKeyCharsMax }), value: Type.Unknown() },
  { additionalProperties: false },
);

export const TargetSchema = Type.Object(
  {
    contextKeys: Type.Array(Type.String({ maxLength: contextKeyCharsMax }), { maxItems: targetContextKeysPerFlagMax }),
    variation: Type.String({ maxLength: variationKeyCharsMax }),
  },
  { additionalProperties: false },
);

export const PrerequisiteSchema = Type.Object(
  { flagKey: Type.String({ maxLength: keyCharsMax }), variation: Type.String({ maxLength: variationKeyCharsMax }) },
  { additionalProperties: false },
);

/** A rule in a body: `id` may be omitted, normalizeFlag then assigns `rule-{n}`. */
export const RuleSchema = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: ruleIdCharsMax })),
    clauses: Type.Array(ClauseSchema, { maxItems: clausesPerRuleMax }),
    variation: Type.String({ maxLength: variationKeyCharsMax }),
  },
  { additionalProperties: false },
);

export const RolloutEntrySchema = Type.Object(
  { variation: Type.String({ maxLength: variationKeyCharsMax }), weight: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);

export const SegmentRuleSchema = Type.Object(
  {
    id: Type.Optional(Type.String({ maxLength: ruleIdCharsMax })),
    clauses: Type.Array(ClauseSchema, { maxItems: clausesPerRuleMax }),
  },
  { additionalProperties: false },
);

/**
 * Fields the server owns. A client that GETs a flag, edits it and PUTs it back resends them;
 * they are accepted and ignored (the server assigns version and timestamps), so that round trip
 * works while a misspelt field (`rule` for `rules`) is still refused rather than silently
 * resetting the real one to its default.
 */
const serverOwnedFields = {
  version: Type.Optional(Type.Unknown()),
  createdAt: Type.Optional(Type.Unknown()),
  updatedAt: Type.Optional(Type.Unknown()),
  projectKey: Type.Optional(Type.Unknown()),
  environmentKey: Type.Optional(Type.Unknown()),
};

const flagDefinitionFields = {
  name: Type.Optional(Type.String({ maxLength: nameCharsMax })),
  type: Type.Enum([...FLAG_TYPES]),
  enabled: Type.Optional(Type.Boolean()),
  defaultVariation: Type.String({ maxLength: variationKeyCharsMax }),
  variations: Type.Array(VariationSchema, { maxItems: variationsPerFlagMax }),
  targets: Type.Optional(Type.Array(TargetSchema, { maxItems: targetsPerFlagMax })),
  prerequisites: Type.Optional(Type.Array(PrerequisiteSchema, { maxItems: prerequisitesPerFlagMax })),
  rules: Type.Optional(Type.Array(RuleSchema, { maxItems: rulesPerDefinitionMax })),
  rollout: Type.Optional(Type.Array(RolloutEntrySchema, { maxItems: rolloutEntriesMax })),
  // null is accepted as "absent" for the two optional scalars.
  bucketBy: Type.Optional(Type.Union([Type.String({ maxLength: attributeCharsMax }), Type.Null()])),
  seed: Type.Optional(Type.Union([Type.String({ maxLength: seedCharsMax }), Type.Null()])),
};

/** POST flags: key, type, variations and defaultVariation required (spec "Create requires"). */
export const FlagCreateBodySchema = Type.Object(
  { key: Type.String(), ...flagDefinitionFields, ...serverOwnedFields },
  { additionalProperties: false },
);

/**
 * PUT flags/{flagKey}: the complete definition without key (a resent key must equal the path's;
 * decode.ts checks that). Same required fields as create, minus key.
 */
export const FlagPutBodySchema = Type.Object(
  { key: Type.Optional(Type.String()), ...flagDefinitionFields, ...serverOwnedFields },
  { additionalProperties: false },
);

const segmentDefinitionFields = {
  name: Type.Optional(Type.String({ maxLength: nameCharsMax })),
  included: Type.Optional(
    Type.Array(Type.String({ maxLength: contextKeyCharsMax }), { maxItems: segmentContextKeysMax }),
  ),
  excluded: Type.Optional(
    Type.Array(Type.String({ maxLength: contextKeyCharsMax }), { maxItems: segmentContextKeysMax }),
  ),
  rules: Type.Optional(Type.Array(SegmentRuleSchema, { maxItems: rulesPerDefinitionMax })),
};

/** POST segments: key required, the rest defaults to empty (name defaults to the key). */
export const SegmentCreateBodySchema = Type.Object(
  { key: Type.String(), ...segmentDefinitionFields, ...serverOwnedFields },
  { additionalProperties: false },
);

/** PUT segments/{segmentKey}: full replacement, key optional (must equal the path's). */
export const SegmentPutBodySchema = Type.Object(
  { key: Type.Optional(Type.String()), ...segmentDefinitionFields, ...serverOwnedFields },
  { additionalProperties: false },
);

export type FlagCreateBody = Type.Static<typeof FlagCreateBodySchema>;
export type FlagPutBody = Type.Static<typeof FlagPutBodySchema>;
export type SegmentCreateBody = Type.Static<typeof SegmentCreateBodySchema>;
export type SegmentPutBody = Type.Static<typeof SegmentPutBodySchema>;

/** Compiled once at load; `.Check(value)` and `.Errors(value)`. */
export const FlagCreateBodyValidator = Compile(FlagCreateBodySchema);
export const FlagPutBodyValidator = Compile(FlagPutBodySchema);
export const SegmentCreateBodyValidator = Compile(SegmentCreateBodySchema);
export const SegmentPutBodyValidator = Compile(SegmentPutBodySchema);

function normalizeClause(c: Clause | Type.Static<typeof ClauseSchema>): Clause {
  const out: Clause = { attribute: c.attribute, op: c.op, values: [...c.values] };
  if (c.negate === true) out.negate = true;
  return out;
}

/**
 * Deterministic ids for rules sent without one: `rule-{n}` (1-based position), skipping any id
 * another rule of the same flag already uses, so the result never collides.
 */
function normalizeRules(rules: readonly Type.Static<typeof RuleSchema>[]): Rule[] {
  const taken = new Set<string>();
  for (const r of rules) if (r.id !== undefined) taken.add(r.id);
  return rules.map((r, i) => {
    let id = r.id;
    if (id === undefined) {
      let n = i + 1;
      while (taken.has(`rule-${n}`)) n++;
      id = `rule-${n}`;
      taken.add(id);
    }
    return { id, clauses: r.clauses.map(normalizeClause), variation: r.variation };
  });
}

/**
 * Fills defaults for a schema-checked body. PUT is a full replacement (../shared/specs/DECISIONS.md): a missing
 * optional field resets to its default (enabled false; targets, prerequisites, rules, rollout [];
 * name = key; bucketBy and seed absent), it is never kept from `existing`. `existing` (the flag at
 * the PUT path) supplies only the key. Server-owned fields in the body are dropped.
 */
export function normalizeFlag(body: FlagCreateBody | FlagPutBody, existing?: { key: string }): FlagDefinition {
  const key = existing?.key ?? body.key;
  invariant(key !== undefined, 'normalizeFlag: a PUT body needs the existing flag for its key');
  const flag: FlagDefinition = {
    key,
    name: body.name ?? key,
    type: body.type,
    enabled: body.enabled ?? false,
    defaultVariation: body.defaultVariation,
    variations: body.variations.map((v) => ({ key: v.key, value: v.value as JsonValue })),
    targets: (body.targets ?? []).map((t) => ({ contextKeys: [...t.contextKeys], variation: t.variation })),
    prerequisites: (body.prerequisites ?? []).map((p) => ({ flagKey: p.flagKey, variation: p.variation })),
    rules: normalizeRules(body.rules ?? []),
    rollout: (body.rollout ?? []).map((r) => ({ variation: r.variation, weight: r.weight })),
  };
  if (typeof body.bucketBy === 'string') flag.bucketBy = body.bucketBy;
  if (typeof body.seed === 'string') flag.seed = body.seed;
  return flag;
}

/** Segment defaults, same full-replacement rule: name = key, included/excluded/rules []. */
export function normalizeSegment(
  body: SegmentCreateBody | SegmentPutBody,
  existing?: { key: string },
): SegmentDefinition {
  const key = existing?.key ?? body.key;
  invariant(key !== undefined, 'normalizeSegment: a PUT body needs the existing segment for its key');
  return {
    key,
    name: body.name ?? key,
    included: [...(body.included ?? [])],
    excluded: [...(body.excluded ?? [])],
    rules: (body.rules ?? []).map((r) => {
      const rule: SegmentDefinition['rules'][number] = { clauses: r.clauses.map(normalizeClause) };
      if (r.id !== undefined) rule.id = r.id;
      return rule;
    }),
  };
}

// ---- evaluation requests (../shared/specs/DECISIONS.md "Evaluation API": `{context, flagKeys?}`)

const ContextScalarSchema = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

/**
 * A context: a flat JSON object, `{key?, kind?, name?, ...custom}`, whose attribute values are
 * strings, numbers, booleans, null or arrays of those (../shared/specs/DECISIONS.md "A context is").
 */
export const EvalContextSchema = Type.Object(
  { key: Type.Optional(Type.String()), kind: Type.Optional(Type.String()) },
  { additionalProperties: Type.Union([ContextScalarSchema, Type.Array(ContextScalarSchema)]) },
);

export const EvaluateBodySchema = Type.Object(
  { context: EvalContextSchema, flagKeys: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false },
);

export const EvaluateBodyValidator = Compile(EvaluateBodySchema);
