import t from 'tap';
import { openPostgresStore } from '../../src/flags/store/postgres.js';
import { runStoreConformance } from './store-conformance.js';
import { pgServer } from './pg-harness.js';

const server = await pgServer(t);
if (!server) {
  t.comment('FLAGS_SKIP_PG_TESTS=1: PostgreSQL tests skipped');
} else {
  runStoreConformance(t, {
    async open(limits) {
      const url = await server.freshDatabase();
      const store = await openPostgresStore(url, limits ? { limits } : {});
      return { store, reopen: () => openPostgresStore(url, limits ? { limits } : {}) };
    },
  });

  t.test('two stores on one database see each other\'s commits through LISTEN/NOTIFY', async (t) => {
    const url = await server.freshDatabase();
    const a = await openPostgresStore(url);
    const b = await openPostgresStore(url);
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    let notices = 0;
    b.onCommit(() => notices++);
    const r = await a.createSegment('p', { key: 's', name: 's', included: [], excluded: [], rules: [] }, { actor: 'x', at: '2024-01-01T00:00:00.000Z' });
    t.ok(r.ok);
    for (let i = 0; i < 200 && notices === 0; i++) await new Promise((res) => setTimeout(res, 10));
    t.ok(notices >= 1, 'b was notified');
    const seen = await b.changesSince(0, 10);
    t.same(seen.map((c) => c.key), ['s']);
  });
}
