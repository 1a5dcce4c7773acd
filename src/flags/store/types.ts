/**
 * The one asynchronous storage interface of the flag service, implemented by SQLite (default) and
 * PostgreSQL (when DATABASE_URL is set); both pass test/flags/store-conformance.ts. It persists
 * definitions, audit records, users, refresh tokens, settings and an ordered change feed. It does not
 * validate flag bodies (the API does that before calling it) and it never reads the clock: callers
 * pass the write time in `WriteMeta.at`.
 */
import type { Flag, FlagDefinition, FieldError, Segment, SegmentDefinition } from '../model/types.js';
import { auditRecordsPerProjectMaxDefault, changeFeedRowsMax } from '../limits.js';

export interface ProjectInfo {
  key: string;
  createdAt: string;
}

export interface EnvironmentInfo {
  projectKey: string;
  key: string;
  /** The key SDKs present on /sdk/v1/* routes. */
  sdkKey: string;
  createdAt: string;
}

export type AuditAction = 'create' | 'update' | 'delete';
export type ResourceKind = 'flag' | 'segment';

/** One audit record (../shared/specs/DECISIONS.md "Feature flags" → Audit). `environmentKey` only for flags. */
export interface AuditRecord {
  id: number;
  projectKey: string;
  environmentKey?: string;
  actor: string;
  action: AuditAction;
  resource: ResourceKind;
  resourceKey: string;
  version: number;
  before: Flag | Segment | null;
  after: Flag | Segment | null;
  at: string;
}

/**
 * One entry of the ordered change feed. `seq` is global and strictly increasing in commit order
 * (writers serialise), so it doubles as the SSE event id. Deletes carry the tombstone version.
 */
export interface Change {
  seq: number;
  projectKey: string;
  /** null for a segment (segments live per project). */
  environmentKey: string | null;
  resource: ResourceKind;
  op: 'upsert' | 'delete';
  key: string;
  version: number;
  data: Flag | Segment | null;
}

export type Role = 'viewer' | 'editor' | 'admin';

export interface UserRecord {
  id: string;
  email: string;
  role: Role;
  /** `scrypt$N$r$p$salt$hash`, see ../auth/password.ts. Never the clear password. */
  passwordHash: string;
  createdAt: string;
}

export interface WriteMeta {
  /** Who writes (a user's email); goes to the audit record. */
  actor: string;
  /** ISO 8601 write time; becomes createdAt/updatedAt and the audit `at`. */
  at: string;
  /** If-Match: the write happens only when the stored version equals this. */
  ifVersion?: number;
}

/** Domain outcomes of a write, as values (never exceptions). */
export type WriteFailure =
  | { ok: false; code: 'not_found'; message: string }
  | { ok: false; code: 'duplicate'; message: string }
  | { ok: false; code: 'version_mismatch'; message: string; currentVersion: number }
  | { ok: false; code: 'invalid'; message: string; field: string };

export type WriteResult<T> = { ok: true; value: T } | WriteFailure;

/**
 * A check run inside the write transaction against the environment's other live flags (prerequisite
 * cycles are refused at write time, and the check must see what the write will commit next to).
 */
export type FlagWriteCheck = (candidate: FlagDefinition, others: readonly Flag[]) => FieldError | undefined;

/** A check run inside a segment creation's transaction, given the project's live segment count. */
export type SegmentWriteCheck = (candidate: SegmentDefinition, liveSegments: number) => FieldError | undefined;

export interface EnvironmentSnapshot {
  flags: Flag[];
  segments: Segment[];
  /** Every change with seq <= this is reflected in flags/segments; none after it is. */
  seq: number;
}

/** Counters of what fell off a retention cap (exported as metrics). */
export interface StoreStats {
  auditPruned: number;
  changesPruned: number;
}

export interface FlagStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly stats: StoreStats;

  listProjects(): Promise<ProjectInfo[]>;
  listEnvironments(projectKey: string): Promise<EnvironmentInfo[]>;
  /** Creates the project and environment if absent (explicit creation; writes do it implicitly). */
  ensureEnvironment(projectKey: string, envKey: string, at: string): Promise<EnvironmentInfo>;
  environmentBySdkKey(sdkKey: string): Promise<EnvironmentInfo | undefined>;

  listFlags(projectKey: string, envKey: string): Promise<Flag[]>;
  getFlag(projectKey: string, envKey: string, key: string): Promise<Flag | undefined>;
  createFlag(
    projectKey: string,
    envKey: string,
    def: FlagDefinition,
    meta: WriteMeta,
    check?: FlagWriteCheck,
  ): Promise<WriteResult<Flag>>;
  replaceFlag(
    projectKey: string,
    envKey: string,
    def: FlagDefinition,
    meta: WriteMeta,
    check?: FlagWriteCheck,
  ): Promise<WriteResult<Flag>>;
  deleteFlag(projectKey: string, envKey: string, key: string, meta: WriteMeta): Promise<WriteResult<Flag>>;

  listSegments(projectKey: string): Promise<Segment[]>;
  getSegment(projectKey: string, key: string): Promise<Segment | undefined>;
  createSegment(
    projectKey: string,
    def: SegmentDefinition,
    meta: WriteMeta,
    check?: SegmentWriteCheck,
  ): Promise<WriteResult<Segment>>;
  replaceSegment(projectKey: string, def: SegmentDefinition, meta: WriteMeta): Promise<WriteResult<Segment>>;
  deleteSegment(projectKey: string, key: string, meta: WriteMeta): Promise<WriteResult<Segment>>;

  /** Newest first, at most `limit`. */
  listAudit(projectKey: string, limit: number): Promise<AuditRecord[]>;

  /** Flags of the environment and segments of its project, consistent with one feed position. */
  snapshot(projectKey: string, envKey: string): Promise<EnvironmentSnapshot>;
  /** The highest committed change seq (0 when none). */
  latestSeq(): Promise<number>;
  /** Changes with seq > after, oldest first, at most limit. */
  changesSince(after: number, limit: number): Promise<Change[]>;
  /** Called (without data) whenever changes may have been committed, by this or another instance. */
  onCommit(listener: () => void): () => void;

  countUsers(): Promise<number>;
  listUsers(): Promise<UserRecord[]>;
  getUserByEmail(email: string): Promise<UserRecord | undefined>;
  getUserById(id: string): Promise<UserRecord | undefined>;
  createUser(user: UserRecord): Promise<WriteResult<UserRecord>>;

  /** Also sweeps tokens that expired by `now`. */
  saveRefreshToken(tokenHash: string, userId: string, expiresAt: string, now: string): Promise<void>;
  /** Deletes the token and returns its user when it existed and had not expired (single use). */
  consumeRefreshToken(tokenHash: string, now: string): Promise<string | undefined>;

  /** Stores `value` under `name` unless a value is already there; returns the stored value. */
  settingOrInit(name: string, value: string): Promise<string>;

  close(): Promise<void>;
}

/** Retention caps (../shared/specs/DECISIONS.md: every list that can grow has a cap; what falls off is counted). */
export interface StoreLimits {
  auditRecordsPerProjectMax: number;
  changeFeedRowsMax: number;
}

export const defaultStoreLimits: StoreLimits = {
  auditRecordsPerProjectMax: auditRecordsPerProjectMaxDefault,
  changeFeedRowsMax,
};
