/**
 * Every size limit of the feature-flag service's input in one place, units in the names. The
 * schemas (model/schemas.ts), the write-time rules (model/validate.ts), the evaluate and auth
 * decoders read these numbers; past any of them a request is a 400 `{error}` naming the field and
 * the limit, before anything is stored. Nothing here is behaviour. The README documents the table.
 *
 * Why these values: every stored object must stay servable inside every answer that wraps it (the
 * SSE `put` carries every flag and segment of an environment; an audit page carries 500 records of
 * two definitions each), and V8 cannot build a string longer than about 2^29 characters. The
 * per-definition byte caps times the count caps keep the largest such answer well under that; the
 * load-time checks at the end of this file keep the relation true when a number changes.
 */
import { invariant } from '../util/assert.js';

// ---- keys and names ---------------------------------------------------------------------------

/** Flag, segment, project, environment and prerequisite keys: `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`. */
export const keyCharsMax = 128;
/** A flag's or segment's display name. */
export const nameCharsMax = 256;

// ---- flags --------------------------------------------------------------------------------------

/** Variations of one flag. */
export const variationsPerFlagMax = 100;
/** A variation's key. */
export const variationKeyCharsMax = 128;
/** One variation value, serialised as JSON (a string flag's value included), in bytes (UTF-8). */
export const variationValueBytesMax = 64 * 1024;
/**
 * Nesting of a json flag's variation value: `{}` or `[]` is depth 1, `{"a": []}` depth 2. A request
 * body nests the value three levels deeper (`{"variations": [{"value": ...}]}`), the answers that
 * serve it at most five (`{"data": {"flags": {"k": {"variations": [{"value": ...}]}}}}`), so this
 * stays well inside the HTTP edge's body nesting limit and any serialiser's.
 */
export const jsonValueDepthMax = 32;
/** Target entries of one flag. */
export const targetsPerFlagMax = 100;
/** Context keys across all targets of one flag. */
export const targetContextKeysPerFlagMax = 10_000;
/** A context key (in targets and in segment included/excluded lists). */
export const contextKeyCharsMax = 256;
/** Prerequisites of one flag. */
export const prerequisitesPerFlagMax = 50;
/** Rules of one flag or one segment. */
export const rulesPerDefinitionMax = 200;
/** A rule id (flag and segment rules). */
export const ruleIdCharsMax = 128;
/** Clauses of one rule. */
export const clausesPerRuleMax = 50;
/** Values of one clause. */
export const clauseValuesMax = 1000;
/** One clause value (a regex, a version, a segment key, a string to compare). */
export const clauseValueCharsMax = 1024;
/** A context attribute name (clause `attribute`, `bucketBy`, evaluate context field names). */
export const attributeCharsMax = 256;
/** Rollout entries of one flag. */
export const rolloutEntriesMax = 100;
/** A flag's `seed`. */
export const seedCharsMax = 256;
/** A whole flag definition, serialised as JSON, in bytes (UTF-8). */
export const flagDefinitionBytesMax = 256 * 1024;
/** Live flags in one environment; creating one more is a 400. */
export const flagsPerEnvironmentMax = 1000;

// ---- segments -----------------------------------------------------------------------------------

/** Context keys in a segment's `included` list, and separately in its `excluded` list. */
export const segmentContextKeysMax = 10_000;
/** A whole segment definition, serialised as JSON, in bytes (UTF-8). */
export const segmentDefinitionBytesMax = 256 * 1024;
/** Live segments in one project; creating one more is a 400. */
export const segmentsPerProjectMax = 500;

// ---- evaluation requests ------------------------------------------------------------------------

/** Attributes of an evaluation context (key and kind included). */
export const contextAttributesMax = 256;
/** One string attribute value of a context (and each string inside an array attribute). */
export const contextValueCharsMax = 16 * 1024;
/** Elements of one array attribute of a context. */
export const contextArrayItemsMax = 1000;
/** `flagKeys` of one evaluate request. */
export const evaluateFlagKeysMax = flagsPerEnvironmentMax;

// ---- users and login ----------------------------------------------------------------------------

/** An email address (RFC 5321's path limit). */
export const emailCharsMax = 254;
/** Passwords: at least this many characters, on every path that sets one. */
export const passwordCharsMin = 8;
/** Passwords: at most this many characters, on every path that sets or checks one (longer is never hashed). */
export const passwordCharsMax = 1024;
/** A refresh token presented to /auth/refresh (ours are 43 characters). */
export const refreshTokenCharsMax = 256;
/** Login attempts per client address per window (FLAGS_LOGIN_ATTEMPTS_PER_MINUTE overrides). */
export const loginAttemptsPerAddressMax = 10;
/** Login attempts per account (email, whatever its address) per window (FLAGS_LOGIN_ATTEMPTS_PER_ACCOUNT overrides). */
export const loginAttemptsPerAccountMax = 20;
/** The login limiters' sliding window, ms. */
export const loginWindowMs = 60_000;
/** Addresses, and separately accounts, the login limiters remember (least recently seen evicted, counted). */
export const loginLimiterEntriesMax = 10_000;

// ---- streams ------------------------------------------------------------------------------------

/** Unsent bytes a stream client may have pending (in the process) before it is disconnected as slow. */
export const sseClientBufferBytesDefault = 512 * 1024;

// ---- relations (checked at load) ----------------------------------------------------------------

/** V8's longest string (String::kMaxLength on 64-bit), in UTF-16 units. */
const v8StringCharsMax = 2 ** 29 - 24;
// The SSE put of the largest environment: every flag and every segment of its project.
invariant(
  flagsPerEnvironmentMax * flagDefinitionBytesMax + segmentsPerProjectMax * segmentDefinitionBytesMax < v8StringCharsMax,
  'limits: the largest environment must serialise into one string',
);
// An audit page: 500 records, each with a before and an after definition.
invariant(500 * 2 * Math.max(flagDefinitionBytesMax, segmentDefinitionBytesMax) < v8StringCharsMax, 'limits: an audit page must serialise');
invariant(variationValueBytesMax < flagDefinitionBytesMax, 'limits: one variation value fits in a flag');
