/**
 * A real PostgreSQL for the flag tests: DATABASE_URL when the caller exported one (`make test` does
 * `eval "$(scripts/pg-test.sh start)"`), otherwise a throw-away cluster that scripts/pg-test.sh
 * installs and starts for this test file and stops at its end. Each caller gets its own fresh
 * database on that server. FLAGS_SKIP_PG_TESTS=1 skips the PostgreSQL tests explicitly.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Test } from 'tap';

const script = fileURLToPath(new URL('../../scripts/pg-test.sh', import.meta.url));

export interface PgServer {
  /** URL of a new, empty database on the server. */
  freshDatabase(): Promise<string>;
}

/** Starts (or finds) the server; registers its teardown on `t`. Returns undefined when skipped. */
export async function pgServer(t: Test): Promise<PgServer | undefined> {
  if (process.env['FLAGS_SKIP_PG_TESTS'] === '1') return undefined;
  let baseUrl = process.env['DATABASE_URL'];
  if (!baseUrl) {
    // Installing PostgreSQL on a fresh machine takes a while: generous timeout.
    const out = execFileSync('bash', [script, 'start'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 });
    const url = /DATABASE_URL=(\S+)/.exec(out)?.[1];
    const dir = /PG_TEST_DIR=(\S+)/.exec(out)?.[1];
    if (!url || !dir) throw new Error(`scripts/pg-test.sh start printed no DATABASE_URL:\n${out}`);
    baseUrl = url;
    t.teardown(() => {
      execFileSync('bash', [script, 'stop', dir], { stdio: 'ignore', timeout: 60_000 });
    });
  }
  const created: string[] = [];
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  t.teardown(async () => {
    for (const db of created) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  });
  let n = 0;
  const base = new URL(baseUrl);
  return {
    async freshDatabase() {
      const name = `flags_test_${process.pid}_${Date.now().toString(36)}_${++n}`;
      await admin.query(`CREATE DATABASE ${name}`);
      created.push(name);
      const u = new URL(base.href);
      u.pathname = `/${name}`;
      return u.href;
    },
  };
}
