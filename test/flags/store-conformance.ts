/**
 * The one persistence suite every FlagStore passes (SQLite and PostgreSQL run it from their own test
 * files). It speaks only the FlagStore interface: versions, tombstones, 404/409/412 outcomes, audit
 * order and caps, the ordered change feed, users, single-use refresh tokens, settings, and that
 * everything survives closing and reopening the store. Not a test file itself (no `.test.`).
 */
import type { Test } from 'tap';
import type { FlagDefinition, SegmentDefinition } from '../../src/flags/model/types.js';
import type { FlagStore, StoreLimits, WriteMeta } from '../../src/flags/store/types.js';

export interface StoreHarness {
  /** A fresh, empty store. */
  open(limits?: Partial<StoreLimits>): Promise<{ store: FlagStore; reopen: () => Promise<FlagStore> }>;
}

export function flagDef(key: string, over: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key,
    name: key,
    type: 'boolean',
    enabled: true,
    defaultVariation: 'off',
    variations: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    targets: [],
    prerequisites: [],
    rules: [],
    rollout: [],
    ...over,
  };
}

export function segmentDef(key: string, over: Partial<SegmentDefinition> = {}): SegmentDefinition {
  return { key, name: key, included: [], excluded: [], rules: [], ...over };
}

const t0 = '2024-01-01T00:00:00.000Z';
const t1 = '2024-01-02T00:00:00.000Z';
const t2 = '2024-01-03T00:00:00.000Z';
const meta = (at: string, over: Partial<WriteMeta> = {}): WriteMeta => ({ actor: 'ann@example.com', at, ...over });

export function runStoreConformance(t: Test, h: StoreHarness): void {
  t.test('a created flag gets version 1 and timestamps, and reads back identically', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    const r = await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    t.ok(r.ok);
    if (!r.ok) return;
    t.equal(r.value.version, 1);
    t.equal(r.value.createdAt, t0);
    t.equal(r.value.updatedAt, t0);
    t.same(await store.getFlag('p', 'prod', 'a'), r.value);
    t.same(await store.listFlags('p', 'prod'), [r.value]);
    t.equal(await store.getFlag('p', 'staging', 'a'), undefined, 'flags are per environment');
    t.same(await store.listFlags('p', 'staging'), []);
  });

  t.test('write outcomes: duplicate create, unknown key, If-Match mismatch', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    const cases: Array<{ name: string; run: () => Promise<{ ok: boolean; code?: string }>; code: string }> = [
      {
        name: 'create of an existing key',
        run: () => store.createFlag('p', 'prod', flagDef('a'), meta(t1)),
        code: 'duplicate',
      },
      {
        name: 'replace of an unknown key',
        run: () => store.replaceFlag('p', 'prod', flagDef('zz'), meta(t1)),
        code: 'not_found',
      },
      { name: 'delete of an unknown key', run: () => store.deleteFlag('p', 'prod', 'zz', meta(t1)), code: 'not_found' },
      {
        name: 'replace with a stale If-Match',
        run: () => store.replaceFlag('p', 'prod', flagDef('a'), meta(t1, { ifVersion: 7 })),
        code: 'version_mismatch',
      },
      {
        name: 'delete with a stale If-Match',
        run: () => store.deleteFlag('p', 'prod', 'a', meta(t1, { ifVersion: 7 })),
        code: 'version_mismatch',
      },
      {
        name: 'segment create of an existing key',
        run: async () => {
          await store.createSegment('p', segmentDef('s'), meta(t0));
          return store.createSegment('p', segmentDef('s'), meta(t1));
        },
        code: 'duplicate',
      },
      {
        name: 'segment replace of an unknown key',
        run: () => store.replaceSegment('p', segmentDef('nope'), meta(t1)),
        code: 'not_found',
      },
      {
        name: 'segment delete of an unknown key',
        run: () => store.deleteSegment('p', 'nope', meta(t1)),
        code: 'not_found',
      },
      {
        name: 'segment replace with a stale If-Match',
        run: () => store.replaceSegment('p', segmentDef('s'), meta(t1, { ifVersion: 3 })),
        code: 'version_mismatch',
      },
    ];
    for (const c of cases) {
      const r = await c.run();
      t.equal(r.ok, false, c.name);
      t.equal((r as { code?: string }).code, c.code, c.name);
    }
    const a = await store.getFlag('p', 'prod', 'a');
    t.equal(a?.version, 1, 'failed writes change nothing');
  });

  t.test(
    'a segment creation check sees the live segment count in its transaction and can refuse the write',
    async (t) => {
      const { store } = await h.open();
      t.teardown(() => store.close());
      const seen: number[] = [];
      const atMostTwo = (_def: unknown, live: number) => {
        seen.push(live);
        return live >= 2 ? { field: 'key', message: 'key: at most 2' } : undefined;
      };
      await store.createSegment('p', segmentDef('a'), meta(t0), atMostTwo);
      await store.createSegment('p', segmentDef('b'), meta(t0), atMostTwo);
      await store.createSegment('other', segmentDef('x'), meta(t0), atMostTwo);
      const refused = await store.createSegment('p', segmentDef('c'), meta(t1), atMostTwo);
      t.match(refused, { ok: false, code: 'invalid', message: 'key: at most 2', field: 'key' });
      t.same(
        (await store.listSegments('p')).map((s) => s.key),
        ['a', 'b'],
        'nothing stored',
      );
      await store.deleteSegment('p', 'a', meta(t1));
      t.ok(
        (await store.createSegment('p', segmentDef('c'), meta(t2), atMostTwo)).ok,
        'a deleted segment does not count',
      );
      t.same(seen, [0, 1, 0, 2, 1], 'counts per project, live ones only');
    },
  );

  t.test('replace bumps the version, keeps createdAt, moves updatedAt, and honours a matching If-Match', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    const r = await store.replaceFlag(
      'p',
      'prod',
      flagDef('a', { enabled: false, name: 'A' }),
      meta(t1, { ifVersion: 1 }),
    );
    t.ok(r.ok);
    if (!r.ok) return;
    t.equal(r.value.version, 2);
    t.equal(r.value.createdAt, t0);
    t.equal(r.value.updatedAt, t1);
    t.equal(r.value.enabled, false);
    t.equal(r.value.name, 'A');
    const r2 = await store.replaceFlag('p', 'prod', flagDef('a'), meta(t2));
    t.equal(r2.ok && r2.value.version, 3);
  });

  t.test('a deleted key is gone, and re-creating it continues the version sequence', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    await store.replaceFlag('p', 'prod', flagDef('a'), meta(t1));
    const d = await store.deleteFlag('p', 'prod', 'a', meta(t1));
    t.ok(d.ok);
    t.equal(await store.getFlag('p', 'prod', 'a'), undefined);
    t.same(await store.listFlags('p', 'prod'), []);
    const again = await store.deleteFlag('p', 'prod', 'a', meta(t1));
    t.equal(!again.ok && again.code, 'not_found');
    const re = await store.createFlag('p', 'prod', flagDef('a'), meta(t2));
    t.ok(re.ok && re.value.version > 3, 'after versions 1, 2 and the tombstone 3 comes 4');
    t.equal(re.ok && re.value.createdAt, t2);

    await store.createSegment('p', segmentDef('s'), meta(t0));
    await store.deleteSegment('p', 's', meta(t1));
    t.equal(await store.getSegment('p', 's'), undefined);
    const rs = await store.createSegment('p', segmentDef('s'), meta(t2));
    t.equal(rs.ok && rs.value.version, 3);
  });

  t.test('the write check sees the other flags and can refuse the write', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    await store.createFlag('p', 'prod', flagDef('b'), meta(t0));
    let seen: string[] = [];
    const r = await store.createFlag('p', 'prod', flagDef('c'), meta(t0), (cand, others) => {
      seen = others.map((f) => f.key);
      return cand.key === 'c'
        ? { field: 'prerequisites', message: 'prerequisites: prerequisite cycle c -> a -> c' }
        : undefined;
    });
    t.same(seen, ['a', 'b']);
    t.equal(!r.ok && r.code, 'invalid');
    t.equal(!r.ok && r.code === 'invalid' && r.field, 'prerequisites');
    t.equal(await store.getFlag('p', 'prod', 'c'), undefined);
    const u = await store.replaceFlag('p', 'prod', flagDef('a'), meta(t1), (_c, others) => {
      seen = others.map((f) => f.key);
      return undefined;
    });
    t.ok(u.ok);
    t.same(seen, ['b'], 'the flag being replaced is not among the others');
  });

  t.test(
    'projects and environments come into being on first write, each environment with its own SDK key',
    async (t) => {
      const { store } = await h.open();
      t.teardown(() => store.close());
      t.same(await store.listProjects(), []);
      await store.createFlag('web', 'prod', flagDef('a'), meta(t0));
      await store.createFlag('web', 'staging', flagDef('a'), meta(t0));
      await store.createSegment('mobile', segmentDef('s'), meta(t1));
      const failed = await store.replaceFlag('ghost', 'prod', flagDef('a'), meta(t1));
      t.notOk(failed.ok);
      t.same(
        (await store.listProjects()).map((p) => p.key),
        ['mobile', 'web'],
        'a failed write creates nothing',
      );
      const envs = await store.listEnvironments('web');
      t.same(
        envs.map((e) => e.key),
        ['prod', 'staging'],
      );
      t.same(await store.listEnvironments('mobile'), [], 'segments live per project, not per environment');
      const [prod, staging] = envs;
      t.ok(prod && staging && prod.sdkKey !== staging.sdkKey);
      t.same(await store.environmentBySdkKey(prod?.sdkKey ?? ''), prod);
      t.equal(await store.environmentBySdkKey('no-such-key'), undefined);
      const explicit = await store.ensureEnvironment('mobile', 'dev', t2);
      t.equal(explicit.projectKey, 'mobile');
      t.same(await store.ensureEnvironment('mobile', 'dev', t2), explicit, 'ensureEnvironment is idempotent');
    },
  );

  t.test('segments: create, read, list, replace, delete', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    const c = await store.createSegment('p', segmentDef('beta', { included: ['u1'] }), meta(t0));
    t.ok(c.ok && c.value.version === 1);
    await store.createSegment('p', segmentDef('alpha'), meta(t0));
    t.same(
      (await store.listSegments('p')).map((s) => s.key),
      ['alpha', 'beta'],
    );
    const r = await store.replaceSegment('p', segmentDef('beta', { excluded: ['u2'] }), meta(t1, { ifVersion: 1 }));
    t.ok(r.ok);
    const got = await store.getSegment('p', 'beta');
    t.same(got?.included, [], 'PUT replaces the whole definition');
    t.same(got?.excluded, ['u2']);
    t.equal(got?.version, 2);
    t.equal(got?.createdAt, t0);
    t.equal(got?.updatedAt, t1);
    t.ok((await store.deleteSegment('p', 'beta', meta(t2))).ok);
    t.same(
      (await store.listSegments('p')).map((s) => s.key),
      ['alpha'],
    );
  });

  t.test('audit: one record per write, newest first, limited, with before and after', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    await store.replaceFlag('p', 'prod', flagDef('a', { enabled: false }), meta(t1));
    await store.createSegment('p', segmentDef('s'), meta(t1));
    await store.deleteFlag('p', 'prod', 'a', meta(t2));
    await store.createFlag('other', 'prod', flagDef('x'), meta(t2));
    await store.createFlag('p', 'prod', flagDef('a'), meta(t2), () => ({ field: 'key', message: 'key: refused' }));
    const all = await store.listAudit('p', 100);
    t.same(
      all.map((a) => `${a.action} ${a.resource} ${a.resourceKey} v${a.version}`),
      ['delete flag a v3', 'create segment s v1', 'update flag a v2', 'create flag a v1'],
    );
    const [del, seg, upd, cre] = all;
    t.equal(del?.before?.version, 2);
    t.equal(del?.after, null);
    t.equal(cre?.before, null);
    t.equal(cre?.after?.version, 1);
    t.equal((upd?.before as { enabled?: boolean } | null)?.enabled, true);
    t.equal((upd?.after as { enabled?: boolean } | null)?.enabled, false);
    t.equal(upd?.environmentKey, 'prod');
    t.equal(seg?.environmentKey, undefined, 'segment records have no environment');
    t.equal(cre?.actor, 'ann@example.com');
    t.equal(cre?.at, t0);
    t.ok(
      all.every((a, i) => i === 0 || (all[i - 1]?.id ?? 0) > a.id),
      'ids decrease down the list',
    );
    t.same(
      (await store.listAudit('p', 2)).map((a) => a.id),
      all.slice(0, 2).map((a) => a.id),
    );
    t.equal((await store.listAudit('other', 100)).length, 1);
    t.same(await store.listAudit('nobody', 100), []);
  });

  t.test('audit and the change feed are capped, and what falls off is counted', async (t) => {
    const { store } = await h.open({ auditRecordsPerProjectMax: 5, changeFeedRowsMax: 10 });
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    for (let i = 0; i < 69; i++) await store.replaceFlag('p', 'prod', flagDef('a'), meta(t1));
    const audit = await store.listAudit('p', 500);
    t.equal(audit.length, 5);
    t.equal(audit[0]?.version, 70);
    t.equal(store.stats.auditPruned, 65);
    t.ok(store.stats.changesPruned > 0, 'old feed rows were trimmed');
    t.equal(
      await store.latestSeq(),
      (await store.changesSince(0, 1000)).at(-1)?.seq,
      'the newest change survives trimming',
    );
  });

  t.test('the change feed is ordered, carries the written data, and snapshots name their position', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    let commits = 0;
    const off = store.onCommit(() => commits++);
    t.equal(await store.latestSeq(), 0);
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    await store.createSegment('p', segmentDef('s'), meta(t0));
    const snap = await store.snapshot('p', 'prod');
    await store.deleteFlag('p', 'prod', 'a', meta(t1));
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0), () => ({ field: 'key', message: 'key: no' }));
    const changes = await store.changesSince(0, 100);
    t.same(
      changes.map((c) => `${c.op} ${c.resource} ${c.key} ${c.environmentKey ?? '-'} v${c.version}`),
      ['upsert flag a prod v1', 'upsert segment s - v1', 'delete flag a prod v2'],
    );
    t.ok(
      changes.every((c, i) => i === 0 || c.seq > (changes[i - 1]?.seq ?? 0)),
      'seqs increase',
    );
    t.equal(changes[0]?.data?.key, 'a');
    t.equal(changes[2]?.data, null, 'a delete carries no data');
    t.equal(snap.seq, changes[1]?.seq);
    t.same(
      snap.flags.map((f) => f.key),
      ['a'],
    );
    t.same(
      snap.segments.map((s) => s.key),
      ['s'],
    );
    t.same(
      (await store.changesSince(changes[1]?.seq ?? 0, 100)).map((c) => c.seq),
      [changes[2]?.seq],
    );
    t.equal((await store.changesSince(0, 2)).length, 2, 'the limit applies');
    t.equal(await store.latestSeq(), changes[2]?.seq);
    // PostgreSQL delivers commit notices asynchronously (LISTEN/NOTIFY).
    for (let i = 0; i < 100 && commits < 3; i++) await new Promise((r) => setTimeout(r, 10));
    t.ok(commits >= 3, `a commit notice per write (${commits})`);
    off();
  });

  t.test('concurrent writes each get their own version and feed position', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    const results = await Promise.all(
      Array.from({ length: 20 }, () => store.replaceFlag('p', 'prod', flagDef('a'), meta(t1))),
    );
    const versions = results.map((r) => (r.ok ? r.value.version : -1)).sort((x, y) => x - y);
    t.same(
      versions,
      Array.from({ length: 20 }, (_, i) => i + 2),
    );
    const feed = await store.changesSince(0, 100);
    t.same(
      feed.map((c) => c.version),
      Array.from({ length: 21 }, (_, i) => i + 1),
      'feed order is version order',
    );
  });

  t.test('users: created once per email (case-insensitive), found by email and id', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    t.equal(await store.countUsers(), 0);
    const u = { id: 'u1', email: 'Ann@Example.com', role: 'admin' as const, passwordHash: 'scrypt$x', createdAt: t0 };
    const r = await store.createUser(u);
    t.ok(r.ok);
    t.equal(r.ok && r.value.email, 'ann@example.com');
    const dup = await store.createUser({ ...u, id: 'u2', email: 'ANN@example.com' });
    t.equal(!dup.ok && dup.code, 'duplicate');
    t.equal((await store.getUserByEmail('ann@EXAMPLE.com'))?.id, 'u1');
    t.equal((await store.getUserById('u1'))?.role, 'admin');
    t.equal(await store.getUserById('u2'), undefined);
    await store.createUser({ ...u, id: 'u3', email: 'bob@example.com', role: 'viewer' });
    t.equal(await store.countUsers(), 2);
    t.same(
      (await store.listUsers()).map((x) => x.email),
      ['ann@example.com', 'bob@example.com'],
    );
  });

  t.test('refresh tokens are single use and expire', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    await store.saveRefreshToken('h1', 'u1', t1, t0);
    await store.saveRefreshToken('h2', 'u1', t1, t0);
    t.equal(await store.consumeRefreshToken('h1', t0), 'u1');
    t.equal(await store.consumeRefreshToken('h1', t0), undefined, 'second use refused');
    t.equal(await store.consumeRefreshToken('h2', t2), undefined, 'expired token refused');
    t.equal(await store.consumeRefreshToken('nope', t0), undefined);
  });

  t.test('a setting keeps its first value', async (t) => {
    const { store } = await h.open();
    t.teardown(() => store.close());
    t.equal(await store.settingOrInit('jwt_secret', 'first'), 'first');
    t.equal(await store.settingOrInit('jwt_secret', 'second'), 'first');
  });

  t.test('everything survives closing and reopening the store', async (t) => {
    const { store, reopen } = await h.open();
    await store.createFlag('p', 'prod', flagDef('a'), meta(t0));
    await store.replaceFlag('p', 'prod', flagDef('a', { enabled: false }), meta(t1));
    await store.createSegment('p', segmentDef('s', { included: ['k'] }), meta(t1));
    await store.createUser({ id: 'u1', email: 'ann@example.com', role: 'editor', passwordHash: 'h', createdAt: t0 });
    await store.settingOrInit('jwt_secret', 'sekrit');
    await store.saveRefreshToken('h1', 'u1', t2, t0);
    const seq = await store.latestSeq();
    const sdkKey = (await store.listEnvironments('p'))[0]?.sdkKey;
    await store.close();
    const again = await reopen();
    t.teardown(() => again.close());
    t.equal((await again.getFlag('p', 'prod', 'a'))?.version, 2);
    t.equal((await again.getFlag('p', 'prod', 'a'))?.enabled, false);
    t.same((await again.getSegment('p', 's'))?.included, ['k']);
    t.equal((await again.listAudit('p', 10)).length, 3);
    t.equal((await again.getUserByEmail('ann@example.com'))?.role, 'editor');
    t.equal(await again.settingOrInit('jwt_secret', 'other'), 'sekrit');
    t.equal(await again.latestSeq(), seq);
    t.equal((await again.listEnvironments('p'))[0]?.sdkKey, sdkKey);
    t.equal(await again.consumeRefreshToken('h1', t1), 'u1');
    const next = await again.replaceFlag('p', 'prod', flagDef('a'), meta(t2));
    t.equal(next.ok && next.value.version, 3, 'versions continue after a restart');
    t.ok((await again.latestSeq()) > seq, 'feed seqs continue after a restart');
  });
}
