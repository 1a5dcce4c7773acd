import t from 'tap';
import { openPostgresStore } from '../../src/flags/store/postgres.js';
import { runStoreConformance } from './store-conformance.js';
import { pgServer, pgSkipReason, reportPgSkip } from './fixtures/pg-harness.js';
import { boolFlag, openStream, startHarness } from './fixtures/helpers.js';

const server = await pgServer(t);
const skipReason = pgSkipReason();
if (!server) {
  reportPgSkip(t, 'PostgreSQL store conformance and multi-instance tests', skipReason ?? 'no PostgreSQL server');
} else {
  runStoreConformance(t, {
    async open(limits) {
      const url = await server.freshDatabase();
      const store = await openPostgresStore(url, limits ? { limits } : {});
      return { store, reopen: () => openPostgresStore(url, limits ? { limits } : {}) };
    },
  });

  t.test("two stores on one database see each other's commits through LISTEN/NOTIFY", async (t) => {
    const url = await server.freshDatabase();
    const a = await openPostgresStore(url);
    const b = await openPostgresStore(url);
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    let notices = 0;
    b.onCommit(() => notices++);
    const r = await a.createSegment(
      'p',
      { key: 's', name: 's', included: [], excluded: [], rules: [] },
      { actor: 'x', at: '2024-01-01T00:00:00.000Z' },
    );
    t.ok(r.ok);
    for (let i = 0; i < 200 && notices === 0; i++) await new Promise((res) => setTimeout(res, 10));
    t.ok(notices >= 1, 'b was notified');
    const seen = await b.changesSince(0, 10);
    t.same(
      seen.map((c) => c.key),
      ['s'],
    );
  });
}

if (server) {
  t.test(
    'two server instances on one PostgreSQL: a change made through one reaches the SSE clients of the other',
    async (t) => {
      const url = await server.freshDatabase();
      const a = await startHarness(t, { DATABASE_URL: url });
      const b = await startHarness(t, { DATABASE_URL: url });
      const tokA = await a.login();
      const tokB = await b.login();
      await a.call('POST', '/api/v1/projects/web/environments/prod/flags', { token: tokA, body: boolFlag('a') });
      const envs = (await b.call('GET', '/api/v1/projects/web/environments', { token: tokB })).body as Array<{
        sdkKey: string;
      }>;
      const key = envs[0]?.sdkKey ?? '';
      const onB = await openStream(b.base, key);
      const onA = await openStream(a.base, key);
      t.teardown(() => {
        onA.close();
        onB.close();
      });
      const putB = await onB.next();
      t.equal(putB.event, 'put');
      t.ok(
        (JSON.parse(putB.data) as { data: { flags: Record<string, unknown> } }).data.flags['a'],
        'b sees what a wrote',
      );
      await onA.next();

      await a.call('PUT', '/api/v1/projects/web/environments/prod/flags/a', {
        token: tokA,
        body: boolFlag('a', { enabled: false }),
      });
      const patch = await onB.next();
      t.equal(patch.event, 'patch', 'a write through a reaches a client of b');
      t.equal((JSON.parse(patch.data) as { data: { version: number } }).data.version, 2);
      await b.call('POST', '/api/v1/projects/web/segments', { token: tokB, body: { key: 's' } });
      const segPatch = await onA.next((e) => e.event === 'patch' && e.data.includes('/segments/s'));
      t.ok(segPatch, 'a segment created through b reaches a client of a');
      const patchOnA = onA.events.find((e) => e.data.includes('"version":2'));
      t.equal(patchOnA?.id, patch.id, 'both instances use the same event ids');

      // Resume on the other instance: the ids are global, so b can replay what the client missed on a.
      const lastOnA = segPatch.id ?? '';
      onA.close();
      await b.call('DELETE', '/api/v1/projects/web/environments/prod/flags/a', { token: tokB });
      const resumed = await openStream(b.base, key, { 'last-event-id': lastOnA });
      t.teardown(() => resumed.close());
      const missed = await resumed.next();
      t.equal(missed.event, 'delete', 'resumed on b with an id from a, only the missed delete arrives');
      const evalB = await b.call('POST', '/sdk/v1/evaluate', {
        headers: { authorization: key },
        body: { context: { key: 'u' } },
      });
      t.same((evalB.body as { flags: Record<string, unknown> }).flags, {}, 'b evaluates the shared state');
    },
  );
}
