/**
 * The PostgreSQL driver (pg), chosen when DATABASE_URL is set so several instances serve one data
 * set. Writers take one transaction-scoped advisory lock, so change seqs are issued in commit order
 * and a snapshot's MAX(seq) never skips a later-committing lower seq. Commits are announced with
 * NOTIFY and every instance LISTENs, which is how a change made through one instance reaches the SSE
 * clients of all the others. It holds no store logic; that is sql.ts.
 */
import pg from 'pg';
import type { Logger } from '../../util/logger.js';
import { SqlFlagStore, type Row, type SqlDriver, type SqlTx } from './sql.js';
import { defaultSdkKey } from './sqlite.js';
import { defaultStoreLimits, type StoreLimits } from './types.js';
import { postgresListenReconnectMs, postgresPoolConnectionsDefault } from '../limits.js';

const channel = 'flags_changes';
/** Arbitrary constants naming our advisory locks (writers; schema migration). */
const writeLockKey = 7_020_501;
const schemaLockKey = 7_020_502;

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
  id BIGSERIAL PRIMARY KEY, project_key TEXT NOT NULL, env_key TEXT, actor TEXT NOT NULL,
  action TEXT NOT NULL, resource TEXT NOT NULL, resource_key TEXT NOT NULL, version INTEGER NOT NULL,
  before_doc TEXT, after_doc TEXT, at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_by_project ON audit (project_key, id);
CREATE TABLE IF NOT EXISTS changes (
  seq BIGSERIAL PRIMARY KEY, project_key TEXT NOT NULL, env_key TEXT, resource TEXT NOT NULL,
  op TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, doc TEXT);
CREATE TABLE IF NOT EXISTS users (
  id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, role TEXT NOT NULL, password_hash TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS refresh_tokens (
  token_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** `?` placeholders → `$1, $2, ...` (our SQL has no `?` inside literals). */
const rewritten = new Map<string, string>();
function toPg(sql: string): string {
  let out = rewritten.get(sql);
  if (out === undefined) {
    let i = 0;
    out = sql.replace(/\?/g, () => `$${++i}`);
    rewritten.set(sql, out);
  }
  return out;
}

function txOver(client: pg.PoolClient): SqlTx {
  return {
    all: async (sql, params) => (await client.query(toPg(sql), params ? [...params] : [])).rows as Row[],
    run: async (sql, params) => (await client.query(toPg(sql), params ? [...params] : [])).rowCount ?? 0,
  };
}

class PostgresDriver implements SqlDriver {
  readonly kind = 'postgres' as const;
  private readonly listeners = new Set<() => void>();
  private listenClient: pg.Client | undefined;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
    private readonly logger: Logger | undefined,
    readonly newSdkKey: () => string,
  ) {}

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      // Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog: one migrator at a time.
      await client.query('SELECT pg_advisory_lock($1)', [schemaLockKey]);
      try {
        await client.query(schema);
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [schemaLockKey]);
      }
    } finally {
      client.release();
    }
  }

  async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', () => this.emit());
    client.on('error', (err) => {
      this.logger?.warn({ err }, 'flags: LISTEN connection lost; reconnecting');
      this.scheduleReconnect();
    });
    await client.connect();
    await client.query(`LISTEN ${channel}`);
    this.listenClient = client;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    const old = this.listenClient;
    this.listenClient = undefined;
    old?.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      this.listen().then(
        // Whatever was committed while we were deaf is read now.
        () => this.emit(),
        () => this.scheduleReconnect(),
      );
    }, postgresListenReconnectMs);
    this.reconnectTimer.unref();
  }

  private emit(): void {
    for (const l of [...this.listeners]) l();
  }

  async write<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      try {
        // Serialise writers: seqs follow commit order (see the file comment).
        await client.query('SELECT pg_advisory_xact_lock($1)', [writeLockKey]);
        const result = await fn(txOver(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      client.release();
    }
  }

  async read<T>(fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        return await fn(txOver(client));
      } finally {
        await client.query('COMMIT').catch(() => undefined);
      }
    } finally {
      client.release();
    }
  }

  async announce(tx: SqlTx): Promise<void> {
    // Delivered to every listener, this instance included, only when the transaction commits.
    await tx.all(`SELECT pg_notify('${channel}', '')`);
  }

  onCommit(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    await this.listenClient?.end().catch(() => undefined);
    await this.pool.end();
  }
}

export interface PostgresStoreOptions {
  limits?: Partial<StoreLimits>;
  newSdkKey?: () => string;
  logger?: Logger;
  poolSize?: number;
}

export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<SqlFlagStore> {
  const pool = new pg.Pool({ connectionString: url, max: opts.poolSize ?? postgresPoolConnectionsDefault });
  pool.on('error', (err) => opts.logger?.warn({ err }, 'flags: idle PostgreSQL connection failed'));
  const driver = new PostgresDriver(pool, url, opts.logger, opts.newSdkKey ?? defaultSdkKey);
  try {
    await driver.migrate();
    await driver.listen();
  } catch (err) {
    await driver.close().catch(() => undefined);
    throw err;
  }
  return new SqlFlagStore(driver, { ...defaultStoreLimits, ...opts.limits });
}
