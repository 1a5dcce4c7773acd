/**
 * Every cap, bound and default of the feature-flag service in one place, units in the names: input
 * sizes, streams, retention, auth, caches, stores and the SDK's defaults. The schemas
 * (model/schemas.ts), the write-time rules (model/validate.ts), the evaluate and auth decoders read
 * the input sizes; past any of them a request is a 400 `{error}` naming the field and the limit,
 * before anything is stored. Each other constant says what happens past it. Nothing here is
 * behaviour. The README documents the table.
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

/**
 * Default changes kept for resuming stream clients (FLAGS_SSE_REPLAY_LOG_MAX); past it the oldest
 * is forgotten, and a client that missed it gets a fresh put.
 */
export const sseReplayLogEntriesMaxDefault = 4096;
/** Default bytes those changes may take together (FLAGS_SSE_REPLAY_LOG_BYTES); past it the oldest is forgotten. */
export const sseReplayLogBytesMaxDefault = 32 * 1024 * 1024;
/** Default stream clients across all environments (FLAGS_SSE_CLIENTS_MAX); one more is refused with 503. */
export const sseClientsMaxDefault = 20_000;
/** Default interval of the stream's heartbeat comment, ms (FLAGS_SSE_HEARTBEAT_MS; 0 sends none). */
export const sseHeartbeatMsDefault = 15_000;
/** Default time a client's socket may stay unwritable, ms (FLAGS_SSE_DRAIN_TIMEOUT_MS); past it, cut off as slow. */
export const sseDrainTimeoutMsDefault = 10_000;
/** The `retry:` hint every stream sends, ms: how long an EventSource waits before it reconnects. */
export const sseRetryMs = 1000;
/** Smallest byte-size override accepted from the environment (FLAGS_SSE_*_BYTES); below it the default is used. */
export const envBytesMin = 1024;

// ---- audit and retention ------------------------------------------------------------------------

/** Audit records one `GET .../audit` page returns when `limit` is absent. */
export const auditPageRecordsDefault = 100;
/** Most audit records in one page; a larger `limit` is served as this many. */
export const auditPageRecordsMax = 500;
/** Default audit records kept per project (FLAGS_AUDIT_MAX_PER_PROJECT); past it the oldest are deleted (counted). */
export const auditRecordsPerProjectMaxDefault = 100_000;
/** Change-feed rows kept; past it the oldest are deleted, and a replica that far behind reloads in full. */
export const changeFeedRowsMax = 10_000;

// ---- auth ---------------------------------------------------------------------------------------

/** Lifetime of an access token (JWT `exp`), seconds; past it the token is a 401. */
export const accessTokenTtlSec = 3600;
/** Lifetime of a refresh token, seconds (30 days); past it /auth/refresh answers 401. */
export const refreshTokenTtlSec = 30 * 24 * 3600;
/** Longest access token looked at (ours are about 300 characters); longer ones are invalid unread. */
export const accessTokenCharsMax = 4096;
/** Verified access tokens remembered until they expire (a busy client skips HMAC + JSON); past it the oldest goes. */
export const verifiedTokensMax = 10_000;
/** FLAGS_JWT_SECRET shorter than this, bytes, is used but logged as a warning (HS256 wants at least 32). */
export const jwtSecretBytesMin = 32;
/** SDK keys whose environment is cached (keys never change owner); past it the oldest is dropped. */
export const sdkKeysCachedMax = 10_000;

// ---- evaluation ---------------------------------------------------------------------------------

/** Nesting a well-formed evaluate body can have (`{context: {attr: [scalar]}}`); deeper is a 400, refused unread. */
export const evaluateBodyDepthMax = 3;
/** An unknown flag key is logged at most once per this, ms, per key. */
export const unknownFlagWarnEveryMs = 60_000;
/** Unknown flag keys remembered for that; past it the oldest is forgotten (and may be logged again). */
export const unknownFlagWarnKeysMax = 1000;
/** Parsed versions cached (semver operators); past it the cache is cleared. */
export const versionCacheEntriesMax = 4096;
/** Compiled regexes cached (`matches`); past it the cache is cleared. */
export const regexCacheEntriesMax = 4096;

// ---- stores -------------------------------------------------------------------------------------

/** SQLite waits this long for a lock held by another connection, ms, before the write fails. */
export const sqliteBusyTimeoutMs = 5000;
/** A change feed also polls the store this often, ms (a commit wakes it at once; 0 turns polling off). */
export const changeFeedPollMsDefault = 5000;
/** Change-feed rows a replica reads per query by default; more wait for the next read. */
export const changeFeedBatchRowsMaxDefault = 500;
/** PostgreSQL: connections in the pool by default (PostgresStoreOptions.poolSize). */
export const postgresPoolConnectionsDefault = 10;
/** PostgreSQL: a lost LISTEN connection is reopened after this, ms (and again after each failure). */
export const postgresListenReconnectMs = 1000;

// ---- the TypeScript SDK -------------------------------------------------------------------------

/** waitForInitialization() gives up after this, ms, when no timeout is given. */
export const sdkInitTimeoutMsDefault = 10_000;
/** First reconnect delay, ms; it doubles per failed attempt up to sdkBackoffMsMaxDefault (full jitter). */
export const sdkBackoffMsInitialDefault = 500;
/** Longest reconnect delay, ms. */
export const sdkBackoffMsMaxDefault = 30_000;
/** Shortest reconnect delay whatever the jitter draws, ms (never a busy loop). */
export const sdkBackoffMsMin = 50;
/** A stream silent this long, ms, is taken as dead and reconnected (server heartbeat: sseHeartbeatMsDefault). */
export const sdkReadTimeoutMsDefault = 60_000;

// ---- interop: OFREP and the LaunchDarkly relay (/ld) --------------------------------------------

/**
 * LD rules one simlab rule may expand into (semverLte/semverGte become two); past it the flag is not
 * served over /ld.
 */
export const ldRulesPerSimlabRuleMax = 64;
/** Analytics events in one `POST /ld/bulk`; more is a 400. */
export const ldEventsPerPostMax = 10_000;

// ---- relations (checked at load) ----------------------------------------------------------------

/** V8's longest string (String::kMaxLength on 64-bit), in UTF-16 units. */
const v8StringCharsMax = 2 ** 29 - 24;
// The SSE put of the largest environment: every flag and every segment of its project.
invariant(
  flagsPerEnvironmentMax * flagDefinitionBytesMax + segmentsPerProjectMax * segmentDefinitionBytesMax <
    v8StringCharsMax,
  'limits: the largest environment must serialise into one string',
);
// An audit page: auditPageRecordsMax records, each with a before and an after definition.
invariant(
  auditPageRecordsMax * 2 * Math.max(flagDefinitionBytesMax, segmentDefinitionBytesMax) < v8StringCharsMax,
  'limits: an audit page must serialise',
);
invariant(variationValueBytesMax < flagDefinitionBytesMax, 'limits: one variation value fits in a flag');
invariant(auditPageRecordsDefault <= auditPageRecordsMax, 'limits: the default audit page is within the max');
// A live client must hear a heartbeat well before it gives the stream up as dead.
invariant(sseHeartbeatMsDefault * 2 <= sdkReadTimeoutMsDefault, 'limits: two heartbeats fit in the SDK read timeout');
invariant(
  sdkBackoffMsMin <= sdkBackoffMsInitialDefault && sdkBackoffMsInitialDefault <= sdkBackoffMsMaxDefault,
  'limits: backoff min <= initial <= max',
);
invariant(
  envBytesMin <= sseClientBufferBytesDefault && envBytesMin <= sseReplayLogBytesMaxDefault,
  'limits: the byte defaults pass their own minimum',
);
