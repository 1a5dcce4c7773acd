import t from 'tap';
import { join } from 'node:path';
import { openSqliteStore } from '../../src/flags/store/sqlite.js';
import { runStoreConformance } from './store-conformance.js';

let n = 0;
const dir = t.testdir({});

runStoreConformance(t, {
  async open(limits) {
    const file = join(dir, `flags-${++n}.db`);
    const store = openSqliteStore(file, limits ? { limits } : {});
    return { store, reopen: async () => openSqliteStore(file, limits ? { limits } : {}) };
  },
});

t.test('the SQLite file uses the WAL journal', async (t) => {
  const Database = (await import('better-sqlite3')).default;
  const file = join(dir, 'wal.db');
  const store = openSqliteStore(file);
  await store.close();
  const db = new Database(file, { readonly: true });
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();
});
