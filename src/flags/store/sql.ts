/**
 * The store's write and read logic once, over a minimal SQL driver that SQLite and PostgreSQL both
 * implement (placeholders are `?`; the PostgreSQL driver rewrites them). It owns versions,
 * tombstones, audit records, the change feed and retention caps. It is not a driver: opening
 * connections, transactions, locking and commit notification live in sqlite.ts and postgres.ts.
 */
import type { Flag, FlagDefinition, Segment, SegmentDefinition } from '../model/types.js';
import { invariant } from '../../util/assert.js';
import type {
  AuditAction,
  AuditRecord,
  Change,
  EnvironmentInfo,
  EnvironmentSnapshot,
  FlagStore,
  FlagWriteCheck,
  SegmentWriteCheck,
  ProjectInfo,
  ResourceKind,
  Role,
  StoreLimits,
  StoreStats,
  UserRecord,
  WriteMeta,
  WriteResult,
} from './types.js';

export type Row = Record<string, unknown>;

export interface SqlTx {
  all(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  run(sql: string, params?: readonly unknown[]): Promise<number>;
}

export interface SqlDriver {
  readonly kind: 'sqlite' | 'postgres';
  /** A serialised read-write transaction: writers never interleave, so change seqs follow commit order. */
  write<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T>;
  /** A read-only transaction over one consistent snapshot. */
  read<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T>;
  /** Runs inside a write transaction that appended to the change feed. */
  announce(tx: SqlTx): Promise<void>;
  onCommit(listener: () => void): () => void;
  /** Fresh SDK keys (randomness injected, so tests may pin it). */
  newSdkKey(): string;
  close(): Promise<void>;
}

function num(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : Number(String(v));
  invariant(Number.isFinite(n), () => `expected a number from the database, got ${String(v)}`);
  return n;
}

function str(v: unknown): string {
  invariant(typeof v === 'string', () => `expected a string from the database, got ${typeof v}`);
  return v;
}

function first(rows: Row[]): Row | undefined {
  return rows[0];
}

function parseDoc<T>(v: unknown): T | null {
  return v === null || v === undefined ? null : (JSON.parse(str(v)) as T);
}

function docOrNull(v: Flag | Segment | null): string | null {
  return v === null ? null : JSON.stringify(v);
}

function toEnv(r: Row): EnvironmentInfo {
  return {
    projectKey: str(r['project_key']),
    key: str(r['key']),
    sdkKey: str(r['sdk_key']),
    createdAt: str(r['created_at']),
  };
}

function toUser(r: Row): UserRecord {
  return {
    id: str(r['id']),
    email: str(r['email']),
    role: str(r['role']) as Role,
    passwordHash: str(r['password_hash']),
    createdAt: str(r['created_at']),
  };
}

function toAudit(r: Row): AuditRecord {
  const env = r['env_key'];
  return {
    id: num(r['id']),
    projectKey: str(r['project_key']),
    // Only flag records have an environment (segments live per project).
    ...(typeof env === 'string' ? { environmentKey: env } : {}),
    actor: str(r['actor']),
    action: str(r['action']) as AuditAction,
    resource: str(r['resource']) as ResourceKind,
    resourceKey: str(r['resource_key']),
    version: num(r['version']),
    before: parseDoc<Flag | Segment>(r['before_doc']),
    after: parseDoc<Flag | Segment>(r['after_doc']),
    at: str(r['at']),
  };
}

function toChange(r: Row): Change {
  const env = r['env_key'];
  return {
    seq: num(r['seq']),
    projectKey: str(r['project_key']),
    environmentKey: typeof env === 'string' ? env : null,
    resource: str(r['resource']) as ResourceKind,
    op: str(r['op']) as Change['op'],
    key: str(r['key']),
    version: num(r['version']),
    data: parseDoc<Flag | Segment>(r['doc']),
  };
}

/** Field order of a stored flag: the definition, then what the service adds. */
function stampFlag(def: FlagDefinition, version: number, createdAt: string, updatedAt: string): Flag {
  return { ...def, version, createdAt, updatedAt };
}

function stampSegment(def: SegmentDefinition, version: number, createdAt: string, updatedAt: string): Segment {
  return { ...def, version, createdAt, updatedAt };
}

interface Tombstoned<T> {
  version: number;
  deleted: boolean;
  doc: T;
}

/** The FlagStore contract over any SqlDriver. */
export class SqlFlagStore implements FlagStore {
  readonly stats: StoreStats = { auditPruned: 0, changesPruned: 0 };

  constructor(
    private readonly db: SqlDriver,
    private readonly limits: StoreLimits,
  ) {}

  get kind(): 'sqlite' | 'postgres' {
    return this.db.kind;
  }

  // ---- projects and environments ------------------------------------------------------------

  async listProjects(): Promise<ProjectInfo[]> {
    const rows = await this.db.read((tx) => tx.all('SELECT key, created_at FROM projects ORDER BY key'));
    return rows.map((r) => ({ key: str(r['key']), createdAt: str(r['created_at']) }));
  }

  async listEnvironments(projectKey: string): Promise<EnvironmentInfo[]> {
    const rows = await this.db.read((tx) =>
      tx.all('SELECT project_key, key, sdk_key, created_at FROM environments WHERE project_key = ? ORDER BY key', [
        projectKey,
      ]),
    );
    return rows.map(toEnv);
  }

  async ensureEnvironment(projectKey: string, envKey: string, at: string): Promise<EnvironmentInfo> {
    return this.db.write((tx) => this.ensureEnv(tx, projectKey, envKey, at));
  }

  async environmentBySdkKey(sdkKey: string): Promise<EnvironmentInfo | undefined> {
    const rows = await this.db.read((tx) =>
      tx.all('SELECT project_key, key, sdk_key, created_at FROM environments WHERE sdk_key = ?', [sdkKey]),
    );
    const r = first(rows);
    return r ? toEnv(r) : undefined;
  }

  /** Projects and environments come into being on first write (../shared/specs/DECISIONS.md "Feature flags"). */
  private async ensureProject(tx: SqlTx, projectKey: string, at: string): Promise<void> {
    await tx.run('INSERT INTO projects (key, created_at) VALUES (?, ?) ON CONFLICT (key) DO NOTHING', [projectKey, at]);
  }

  private async ensureEnv(tx: SqlTx, projectKey: string, envKey: string, at: string): Promise<EnvironmentInfo> {
    await this.ensureProject(tx, projectKey, at);
    await tx.run(
      'INSERT INTO environments (project_key, key, sdk_key, created_at) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (project_key, key) DO NOTHING',
      [projectKey, envKey, this.db.newSdkKey(), at],
    );
    const r = first(
      await tx.all('SELECT project_key, key, sdk_key, created_at FROM environments WHERE project_key = ? AND key = ?', [
        projectKey,
        envKey,
      ]),
    );
    invariant(r, 'environment row exists after insert');
    return toEnv(r);
  }

  // ---- flags ------------------------------------------------------------------------------

  async listFlags(projectKey: string, envKey: string): Promise<Flag[]> {
    const rows = await this.db.read((tx) => this.liveFlags(tx, projectKey, envKey));
    return rows;
  }

  private async liveFlags(tx: SqlTx, projectKey: string, envKey: string): Promise<Flag[]> {
    const rows = await tx.all(
      'SELECT doc FROM flags WHERE project_key = ? AND env_key = ? AND deleted = 0 ORDER BY key',
      [projectKey, envKey],
    );
    return rows.map((r) => parseDoc<Flag>(r['doc']) as Flag);
  }

  async getFlag(projectKey: string, envKey: string, key: string): Promise<Flag | undefined> {
    const row = await this.db.read((tx) => this.flagRow(tx, projectKey, envKey, key));
    return row && !row.deleted ? row.doc : undefined;
  }

  private async flagRow(
    tx: SqlTx,
    projectKey: string,
    envKey: string,
    key: string,
  ): Promise<Tombstoned<Flag> | undefined> {
    const r = first(
      await tx.all('SELECT version, deleted, doc FROM flags WHERE project_key = ? AND env_key = ? AND key = ?', [
        projectKey,
        envKey,
        key,
      ]),
    );
    if (!r) return undefined;
    return { version: num(r['version']), deleted: num(r['deleted']) !== 0, doc: parseDoc<Flag>(r['doc']) as Flag };
  }

  async createFlag(
    projectKey: string,
    envKey: string,
    def: FlagDefinition,
    meta: WriteMeta,
    check?: FlagWriteCheck,
  ): Promise<WriteResult<Flag>> {
    return this.db.write(async (tx) => {
      const row = await this.flagRow(tx, projectKey, envKey, def.key);
      if (row && !row.deleted)
        return {
          ok: false,
          code: 'duplicate',
          message: `flag ${JSON.stringify(def.key)} already exists in ${projectKey}/${envKey}`,
        };
      const invalid = await this.runCheck(tx, projectKey, envKey, def, check);
      if (invalid) return invalid;
      // A re-created key continues after its tombstone: versions only increase.
      const version = row ? row.version + 1 : 1;
      const flag = stampFlag(def, version, meta.at, meta.at);
      await this.ensureEnv(tx, projectKey, envKey, meta.at);
      await this.putFlagRow(tx, projectKey, envKey, def.key, version, false, flag);
      await this.record(tx, {
        projectKey,
        envKey,
        resource: 'flag',
        action: 'create',
        key: def.key,
        version,
        before: null,
        after: flag,
        meta,
      });
      return { ok: true, value: flag };
    });
  }

  async replaceFlag(
    projectKey: string,
    envKey: string,
    def: FlagDefinition,
    meta: WriteMeta,
    check?: FlagWriteCheck,
  ): Promise<WriteResult<Flag>> {
    return this.db.write(async (tx) => {
      const row = await this.flagRow(tx, projectKey, envKey, def.key);
      if (!row || row.deleted)
        return {
          ok: false,
          code: 'not_found',
          message: `flag ${JSON.stringify(def.key)} not found in ${projectKey}/${envKey}`,
        };
      if (meta.ifVersion !== undefined && meta.ifVersion !== row.version) {
        return {
          ok: false,
          code: 'version_mismatch',
          message: `flag ${JSON.stringify(def.key)} is at version ${row.version}, not ${meta.ifVersion}`,
          currentVersion: row.version,
        };
      }
      const invalid = await this.runCheck(tx, projectKey, envKey, def, check);
      if (invalid) return invalid;
      const version = row.version + 1;
      const flag = stampFlag(def, version, row.doc.createdAt, meta.at);
      await this.putFlagRow(tx, projectKey, envKey, def.key, version, false, flag);
      await this.record(tx, {
        projectKey,
        envKey,
        resource: 'flag',
        action: 'update',
        key: def.key,
        version,
        before: row.doc,
        after: flag,
        meta,
      });
      return { ok: true, value: flag };
    });
  }

  async deleteFlag(projectKey: string, envKey: string, key: string, meta: WriteMeta): Promise<WriteResult<Flag>> {
    return this.db.write(async (tx) => {
      const row = await this.flagRow(tx, projectKey, envKey, key);
      if (!row || row.deleted)
        return {
          ok: false,
          code: 'not_found',
          message: `flag ${JSON.stringify(key)} not found in ${projectKey}/${envKey}`,
        };
      if (meta.ifVersion !== undefined && meta.ifVersion !== row.version) {
        return {
          ok: false,
          code: 'version_mismatch',
          message: `flag ${JSON.stringify(key)} is at version ${row.version}, not ${meta.ifVersion}`,
          currentVersion: row.version,
        };
      }
      // The tombstone keeps the last definition and takes the next version (the delete event's).
      const version = row.version + 1;
      await this.putFlagRow(tx, projectKey, envKey, key, version, true, row.doc);
      await this.record(tx, {
        projectKey,
        envKey,
        resource: 'flag',
        action: 'delete',
        key,
        version,
        before: row.doc,
        after: null,
        meta,
      });
      return { ok: true, value: row.doc };
    });
  }

  private async runCheck(
    tx: SqlTx,
    projectKey: string,
    envKey: string,
    def: FlagDefinition,
    check?: FlagWriteCheck,
  ): Promise<WriteResult<never> | undefined> {
    if (!check) return undefined;
    const others = (await this.liveFlags(tx, projectKey, envKey)).filter((f) => f.key !== def.key);
    const problem = check(def, others);
    return problem ? { ok: false, code: 'invalid', message: problem.message, field: problem.field } : undefined;
  }

  private async putFlagRow(
    tx: SqlTx,
    projectKey: string,
    envKey: string,
    key: string,
    version: number,
    deleted: boolean,
    doc: Flag,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO flags (project_key, env_key, key, version, deleted, doc) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_key, env_key, key)
       DO UPDATE SET version = excluded.version, deleted = excluded.deleted, doc = excluded.doc`,
      [projectKey, envKey, key, version, deleted ? 1 : 0, JSON.stringify(doc)],
    );
  }

  // ---- segments ---------------------------------------------------------------------------

  async listSegments(projectKey: string): Promise<Segment[]> {
    return this.db.read((tx) => this.liveSegments(tx, projectKey));
  }

  private async liveSegments(tx: SqlTx, projectKey: string): Promise<Segment[]> {
    const rows = await tx.all('SELECT doc FROM segments WHERE project_key = ? AND deleted = 0 ORDER BY key', [
      projectKey,
    ]);
    return rows.map((r) => parseDoc<Segment>(r['doc']) as Segment);
  }

  async getSegment(projectKey: string, key: string): Promise<Segment | undefined> {
    const row = await this.db.read((tx) => this.segmentRow(tx, projectKey, key));
    return row && !row.deleted ? row.doc : undefined;
  }

  private async segmentRow(tx: SqlTx, projectKey: string, key: string): Promise<Tombstoned<Segment> | undefined> {
    const r = first(
      await tx.all('SELECT version, deleted, doc FROM segments WHERE project_key = ? AND key = ?', [projectKey, key]),
    );
    if (!r) return undefined;
    return {
      version: num(r['version']),
      deleted: num(r['deleted']) !== 0,
      doc: parseDoc<Segment>(r['doc']) as Segment,
    };
  }

  async createSegment(
    projectKey: string,
    def: SegmentDefinition,
    meta: WriteMeta,
    check?: SegmentWriteCheck,
  ): Promise<WriteResult<Segment>> {
    return this.db.write(async (tx) => {
      const row = await this.segmentRow(tx, projectKey, def.key);
      if (row && !row.deleted)
        return {
          ok: false,
          code: 'duplicate',
          message: `segment ${JSON.stringify(def.key)} already exists in project ${projectKey}`,
        };
      if (check) {
        const live = num(
          first(
            await tx.all('SELECT COUNT(*) AS n FROM segments WHERE project_key = ? AND deleted = 0', [projectKey]),
          )?.['n'],
        );
        const problem = check(def, live);
        if (problem) return { ok: false, code: 'invalid', message: problem.message, field: problem.field };
      }
      const version = row ? row.version + 1 : 1;
      const segment = stampSegment(def, version, meta.at, meta.at);
      await this.ensureProject(tx, projectKey, meta.at);
      await this.putSegmentRow(tx, projectKey, def.key, version, false, segment);
      await this.record(tx, {
        projectKey,
        envKey: null,
        resource: 'segment',
        action: 'create',
        key: def.key,
        version,
        before: null,
        after: segment,
        meta,
      });
      return { ok: true, value: segment };
    });
  }

  async replaceSegment(projectKey: string, def: SegmentDefinition, meta: WriteMeta): Promise<WriteResult<Segment>> {
    return this.db.write(async (tx) => {
      const row = await this.segmentRow(tx, projectKey, def.key);
      if (!row || row.deleted)
        return {
          ok: false,
          code: 'not_found',
          message: `segment ${JSON.stringify(def.key)} not found in project ${projectKey}`,
        };
      if (meta.ifVersion !== undefined && meta.ifVersion !== row.version) {
        return {
          ok: false,
          code: 'version_mismatch',
          message: `segment ${JSON.stringify(def.key)} is at version ${row.version}, not ${meta.ifVersion}`,
          currentVersion: row.version,
        };
      }
      const version = row.version + 1;
      const segment = stampSegment(def, version, row.doc.createdAt, meta.at);
      await this.putSegmentRow(tx, projectKey, def.key, version, false, segment);
      await this.record(tx, {
        projectKey,
        envKey: null,
        resource: 'segment',
        action: 'update',
        key: def.key,
        version,
        before: row.doc,
        after: segment,
        meta,
      });
      return { ok: true, value: segment };
    });
  }

  async deleteSegment(projectKey: string, key: string, meta: WriteMeta): Promise<WriteResult<Segment>> {
    return this.db.write(async (tx) => {
      const row = await this.segmentRow(tx, projectKey, key);
      if (!row || row.deleted)
        return {
          ok: false,
          code: 'not_found',
          message: `segment ${JSON.stringify(key)} not found in project ${projectKey}`,
        };
      if (meta.ifVersion !== undefined && meta.ifVersion !== row.version) {
        return {
          ok: false,
          code: 'version_mismatch',
          message: `segment ${JSON.stringify(key)} is at version ${row.version}, not ${meta.ifVersion}`,
          currentVersion: row.version,
        };
      }
      // Flags whose rules reference the segment are left as they are (spec: deletion is allowed).
      const version = row.version + 1;
      await this.putSegmentRow(tx, projectKey, key, version, true, row.doc);
      await this.record(tx, {
        projectKey,
        envKey: null,
        resource: 'segment',
        action: 'delete',
        key,
        version,
        before: row.doc,
        after: null,
        meta,
      });
      return { ok: true, value: row.doc };
    });
  }

  private async putSegmentRow(
    tx: SqlTx,
    projectKey: string,
    key: string,
    version: number,
    deleted: boolean,
    doc: Segment,
  ): Promise<void> {
    await tx.run(
      `INSERT INTO segments (project_key, key, version, deleted, doc) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (project_key, key)
       DO UPDATE SET version = excluded.version, deleted = excluded.deleted, doc = excluded.doc`,
      [projectKey, key, version, deleted ? 1 : 0, JSON.stringify(doc)],
    );
  }

  // ---- audit and change feed --------------------------------------------------------------

  /** One audit record and one change-feed entry per write, in the write's transaction. */
  private async record(
    tx: SqlTx,
    w: {
      projectKey: string;
      envKey: string | null;
      resource: ResourceKind;
      action: AuditAction;
      key: string;
      version: number;
      before: Flag | Segment | null;
      after: Flag | Segment | null;
      meta: WriteMeta;
    },
  ): Promise<void> {
    await tx.run(
      `INSERT INTO audit
       (project_key, env_key, actor, action, resource, resource_key, version, before_doc, after_doc, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        w.projectKey,
        w.envKey,
        w.meta.actor,
        w.action,
        w.resource,
        w.key,
        w.version,
        docOrNull(w.before),
        docOrNull(w.after),
        w.meta.at,
      ],
    );
    const op = w.action === 'delete' ? 'delete' : 'upsert';
    const rows = await tx.all(
      'INSERT INTO changes (project_key, env_key, resource, op, key, version, doc) VALUES ' +
        '(?, ?, ?, ?, ?, ?, ?) RETURNING seq',
      [w.projectKey, w.envKey, w.resource, op, w.key, w.version, docOrNull(w.after)],
    );
    const seq = num(first(rows)?.['seq']);
    await this.prune(tx, w.projectKey, seq);
    await this.db.announce(tx);
  }

  /** Retention caps: audit per project, and the change feed (which readers consume within seconds). */
  private async prune(tx: SqlTx, projectKey: string, seq: number): Promise<void> {
    const auditCap = this.limits.auditRecordsPerProjectMax;
    const cut = first(
      await tx.all('SELECT id FROM audit WHERE project_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?', [
        projectKey,
        auditCap,
      ]),
    );
    if (cut)
      this.stats.auditPruned += await tx.run('DELETE FROM audit WHERE project_key = ? AND id <= ?', [
        projectKey,
        num(cut['id']),
      ]);
    // The change feed is trimmed in steps, not on every write.
    const feedCap = this.limits.changeFeedRowsMax;
    if (seq % 64 === 0 && seq > feedCap)
      this.stats.changesPruned += await tx.run('DELETE FROM changes WHERE seq <= ?', [seq - feedCap]);
  }

  async listAudit(projectKey: string, limit: number): Promise<AuditRecord[]> {
    invariant(Number.isInteger(limit) && limit > 0, 'audit limit is a positive integer');
    const rows = await this.db.read((tx) =>
      tx.all(
        `SELECT id, project_key, env_key, actor, action, resource, resource_key, version, before_doc, after_doc, at
         FROM audit WHERE project_key = ? ORDER BY id DESC LIMIT ?`,
        [projectKey, limit],
      ),
    );
    return rows.map(toAudit);
  }

  async snapshot(projectKey: string, envKey: string): Promise<EnvironmentSnapshot> {
    return this.db.read(async (tx) => {
      const flags = await this.liveFlags(tx, projectKey, envKey);
      const segments = await this.liveSegments(tx, projectKey);
      const seq = await this.maxSeq(tx);
      return { flags, segments, seq };
    });
  }

  private async maxSeq(tx: SqlTx): Promise<number> {
    // Trimming always keeps the newest changeFeedRowsMax rows, so MAX(seq) is the last seq issued.
    const r = first(await tx.all('SELECT MAX(seq) AS seq FROM changes'));
    return r && r['seq'] !== null && r['seq'] !== undefined ? num(r['seq']) : 0;
  }

  async latestSeq(): Promise<number> {
    return this.db.read((tx) => this.maxSeq(tx));
  }

  async changesSince(after: number, limit: number): Promise<Change[]> {
    const rows = await this.db.read((tx) =>
      tx.all(
        'SELECT seq, project_key, env_key, resource, op, key, version, doc FROM changes WHERE ' +
          'seq > ? ORDER BY seq LIMIT ?',
        [after, limit],
      ),
    );
    return rows.map(toChange);
  }

  onCommit(listener: () => void): () => void {
    return this.db.onCommit(listener);
  }

  // ---- users, refresh tokens, settings ---------------------------------------------------

  async countUsers(): Promise<number> {
    const r = first(await this.db.read((tx) => tx.all('SELECT COUNT(*) AS n FROM users')));
    return r ? num(r['n']) : 0;
  }

  async listUsers(): Promise<UserRecord[]> {
    const rows = await this.db.read((tx) =>
      tx.all('SELECT id, email, role, password_hash, created_at FROM users ORDER BY created_at, email'),
    );
    return rows.map(toUser);
  }

  async getUserByEmail(email: string): Promise<UserRecord | undefined> {
    const r = first(
      await this.db.read((tx) =>
        tx.all('SELECT id, email, role, password_hash, created_at FROM users WHERE email = ?', [email.toLowerCase()]),
      ),
    );
    return r ? toUser(r) : undefined;
  }

  async getUserById(id: string): Promise<UserRecord | undefined> {
    const r = first(
      await this.db.read((tx) =>
        tx.all('SELECT id, email, role, password_hash, created_at FROM users WHERE id = ?', [id]),
      ),
    );
    return r ? toUser(r) : undefined;
  }

  async createUser(user: UserRecord): Promise<WriteResult<UserRecord>> {
    const email = user.email.toLowerCase();
    return this.db.write(async (tx) => {
      const n = await tx.run(
        'INSERT INTO users (id, email, role, password_hash, created_at) VALUES (?, ?, ?, ?, ?) ' +
          'ON CONFLICT (email) DO NOTHING',
        [user.id, email, user.role, user.passwordHash, user.createdAt],
      );
      if (n === 0)
        return { ok: false, code: 'duplicate', message: `a user with email ${JSON.stringify(email)} already exists` };
      return { ok: true, value: { ...user, email } };
    });
  }

  async saveRefreshToken(tokenHash: string, userId: string, expiresAt: string, now: string): Promise<void> {
    await this.db.write(async (tx) => {
      await tx.run('INSERT INTO refresh_tokens (token_hash, user_id, expires_at) VALUES (?, ?, ?)', [
        tokenHash,
        userId,
        expiresAt,
      ]);
      // Expired tokens are swept as new ones arrive, so the table stays bounded by live sessions.
      await tx.run('DELETE FROM refresh_tokens WHERE expires_at <= ?', [now]);
    });
  }

  async consumeRefreshToken(tokenHash: string, now: string): Promise<string | undefined> {
    return this.db.write(async (tx) => {
      const r = first(
        await tx.all('DELETE FROM refresh_tokens WHERE token_hash = ? RETURNING user_id, expires_at', [tokenHash]),
      );
      if (!r) return undefined;
      return str(r['expires_at']) > now ? str(r['user_id']) : undefined;
    });
  }

  async settingOrInit(name: string, value: string): Promise<string> {
    return this.db.write(async (tx) => {
      await tx.run('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [name, value]);
      const r = first(await tx.all('SELECT value FROM settings WHERE name = ?', [name]));
      invariant(r, 'setting row exists after insert');
      return str(r['value']);
    });
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
