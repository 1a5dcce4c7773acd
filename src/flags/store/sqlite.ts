/**
 * The embedded SQLite driver (better-sqlite3, WAL journal, synchronous=FULL so an acknowledged
 * write survives a crash). One connection serves one process: transactions are serialised by an
 * async mutex, and commit notifications are local (several instances need PostgreSQL).
 * It holds no store logic; that is sql.ts.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { SqlFlagStore, type Row, type SqlDriver, type SqlTx } from './sql.js';
import { defaultStoreLimits, type StoreLimits } from './types.js';
import { sqliteBusyTimeoutMs } from '../limits.js';

const schema = `
CREATE TABLE IF NOT EXISTS projects (key TEXT PRIMARY KEY, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS environments (
  project_key TEXT NOT NULL, key TEXT NOT NULL, sdk_key TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL,
  PRIMARY KEY (project_key, key));
CREATE TABLE IF NOT EXISTS flags (
  project_key TEXT NOT NULL, env_key TEXT NOT NULL, key TEXT NOT NULL,
  version INTEGER NOT NULL, deleted INTEGER NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (project_key, env_key, key));
CREATE TABLE IF NOT EXISTS segments (
  project_key TEXT NOT NULL, key TEXT NOT NULL,
  version INTEGER NOT NULL, deleted INTEGER NOT NULL, doc TEXT NOT NULL,
  PRIMARY KEY (project_key, key));
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT, project_key TEXT NOT NULL, env_key TEXT, actor TEXT NOT NULL,
  action TEXT NOT NULL, resource TEXT NOT NULL, resource_key TEXT NOT NULL, version INTEGER NOT NULL,
  before_doc TEXT, after_doc TEXT, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_by_project ON audit (project_key, id);
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, project_key TEXT NOT NULL, env_key TEXT, resource TEXT NOT NULL,
  op TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT);
CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, role TEXT NOT NULL, password_hash TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refresh_tokens (
  token_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** Runs async critical sections one after another (FIFO). */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

type Param = string | number | bigint | null | Buffer;

function toParams(params: readonly unknown[] | undefined): Param[] {
  if (!params) return [];
  return params.map((p) => (p === undefined ? null : typeof p === 'boolean' ? (p ? 1 : 0) : (p as Param)));
}

class SqliteDriver implements SqlDriver {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly mutex = new Mutex();
  private readonly listeners = new Set<() => void>();
  private announced = false;
  private closed = false;
  private readonly tx: SqlTx;

  constructor(
    file: string,
    readonly newSdkKey: () => string,
  ) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma(`busy_timeout = ${sqliteBusyTimeoutMs}`);
    this.db.exec(schema);
    const stmt = (sql: string): Database.Statement => {
      let s = this.statements.get(sql);
      if (!s) {
        s = this.db.prepare(sql);
        this.statements.set(sql, s);
      }
      return s;
    };
    this.tx = {
      all: async (sql, params) => {
        const s = stmt(sql);
        if (s.reader) return s.all(...toParams(params)) as Row[];
        s.run(...toParams(params));
        return [];
      },
      run: async (sql, params) => {
        const s = stmt(sql);
        if (s.reader) return s.all(...toParams(params)).length;
        return s.run(...toParams(params)).changes;
      },
    };
  }

  write<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    return this.mutex.run(async () => {
      this.db.exec('BEGIN IMMEDIATE');
      let result: T;
      try {
        result = await fn(this.tx);
        this.db.exec('COMMIT');
      } catch (err) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        this.announced = false;
        throw err;
      }
      if (this.announced) {
        this.announced = false;
        for (const l of [...this.listeners]) l();
      }
      return result;
    });
  }

  read<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    // Same mutex: the one connection must never show a reader a half-done write transaction.
    return this.mutex.run(async () => {
      this.db.exec('BEGIN');
      try {
        return await fn(this.tx);
      } finally {
        if (this.db.inTransaction) this.db.exec('COMMIT');
      }
    });
  }

  async announce(): Promise<void> {
    this.announced = true;
  }

  onCommit(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): Promise<void> {
    return this.mutex.run(async () => {
      if (this.closed) return;
      this.closed = true;
      this.listeners.clear();
      this.db.close();
    });
  }
}

export interface SqliteStoreOptions {
  limits?: Partial<StoreLimits>;
  newSdkKey?: () => string;
}

export function openSqliteStore(file: string, opts: SqliteStoreOptions = {}): SqlFlagStore {
  const driver = new SqliteDriver(file, opts.newSdkKey ?? defaultSdkKey);
  return new SqlFlagStore(driver, { ...defaultStoreLimits, ...opts.limits });
}

export function defaultSdkKey(): string {
  return `sdk-${randomUUID()}`;
}
