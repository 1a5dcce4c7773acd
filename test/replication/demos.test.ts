import t from 'tap';
import { MvccStore, runMvcc, runTwoPhaseCommit } from '../../src/replication/demos/index.js';
import { Narrator } from '../../src/replication/demos/runtime.js';

const seeds = (n: number, from = 1): number[] => Array.from({ length: n }, (_, i) => from + i);

t.test('two-phase commit', async (t) => {
  const committedValues = { p1: { alice: '70' }, p2: { bob: '60' }, p3: { carol: '20' } };
  const cases = [
    { name: 'without a crash the transaction commits and nobody blocks', crash: false, blocked: false, recovered: false },
    { name: 'with the coordinator crashing after the votes, participants block holding locks until it recovers and commits', crash: true, blocked: true, recovered: true },
  ];
  for (const c of cases) {
    t.test(c.name, async (t) => {
      for (const seed of seeds(25)) {
        const r = runTwoPhaseCommit({ crash: c.crash, seed });
        const ctx = `seed ${seed}; replay with runTwoPhaseCommit({crash: ${c.crash}, seed: ${seed}})`;
        t.equal(r.crash, c.crash, ctx);
        t.equal(r.committed, true, `committed (${ctx})`);
        t.equal(r.decision, 'commit', ctx);
        t.equal(r.blocked, c.blocked, `blocked (${ctx})`);
        t.equal(r.recovered, c.recovered, `recovered (${ctx})`);
        t.same(r.final_values, committedValues, `final values (${ctx})`);
        t.ok(r.locks.every((l) => l.released_at_ms !== null), `every lock released (${ctx})`);
        if (c.crash) {
          t.same(r.blocked_participants, ['p1', 'p2', 'p3'], ctx);
          t.ok(r.coordinator_crashed_at_ms !== null && r.coordinator_recovered_at_ms !== null, ctx);
          // Locks are held across the whole outage: no participant may release before the coordinator returns.
          t.ok(r.locks.every((l) => (l.released_at_ms as number) >= (r.coordinator_recovered_at_ms as number)), `locks outlast the outage (${ctx})`);
          t.ok(r.max_lock_held_ms >= 600, ctx);
          t.equal(r.client_read.outcome, 'locked', `a read during the outage is refused (${ctx})`);
          t.same(r.coordinator_log.map((l) => l.kind), ['begin', 'decision', 'end'], ctx);
          t.ok(r.messages_lost_to_crash > 0, `queries to the dead coordinator are lost (${ctx})`);
        } else {
          t.same(r.blocked_participants, [], ctx);
          t.equal(r.coordinator_crashed_at_ms, null, ctx);
          t.ok(r.max_lock_held_ms < 100, `locks are short-lived (${ctx})`);
          t.same(r.client_read, { key: 'alice', participant: 'p1', at_ms: r.client_read.at_ms, outcome: 'value', value: '70' }, ctx);
        }
        t.ok(r.narrative.length > 5 && r.narrative.some((s) => s.startsWith('t=')), ctx);
      }
    });
  }

  t.test('the same seed gives the same report', async (t) => {
    t.same(runTwoPhaseCommit({ crash: true, seed: 7 }), runTwoPhaseCommit({ crash: true, seed: 7 }));
  });
});

t.test('MVCC snapshot isolation', async (t) => {
  t.test('a snapshot read returns the newest version committed at or before the snapshot', async (t) => {
    const store = new MvccStore('db', new Narrator());
    store.load('T0', { x: 'a' }); // ts 1
    store.load('T1', { x: 'b' }); // ts 2
    store.load('T2', { y: 'c' }); // ts 3
    store.load('T3', { x: 'd' }); // ts 4
    const cases = [
      { key: 'x', snapshot: 0, want: undefined },
      { key: 'x', snapshot: 1, want: 'a' },
      { key: 'x', snapshot: 2, want: 'b' },
      { key: 'x', snapshot: 3, want: 'b' },
      { key: 'x', snapshot: 9, want: 'd' },
      { key: 'y', snapshot: 2, want: undefined },
      { key: 'y', snapshot: 3, want: 'c' },
    ];
    for (const c of cases) t.equal(store.visible(c.key, c.snapshot)?.value, c.want, `${c.key} at snapshot ${c.snapshot}`);
  });

  t.test('over many seeds the long reader stays on its snapshot, a new reader sees new values, and the first committer wins', async (t) => {
    const winners = new Set<string>();
    for (const seed of seeds(100)) {
      const r = runMvcc({ seed });
      const ctx = `seed ${seed}; replay with runMvcc({seed: ${seed}})`;
      t.equal(r.snapshot_stable, true, `snapshot stable (${ctx})`);
      t.ok(r.commits_during_reader >= 2, `commits happened while the reader ran (${ctx})`);
      t.ok(r.reader.reads.filter((x) => x.key === 'x').every((x) => x.value === '100'), ctx);
      t.equal(r.new_reader_sees_new_values, true, ctx);
      t.equal(r.write_conflict_detected, true, ctx);
      t.equal(r.first_committer_wins, true, ctx);
      t.not(r.write_conflict.winner, r.write_conflict.loser, ctx);
      const winnerValue = r.write_conflict.winner === 'T3' ? '175' : '190';
      t.equal(r.new_reader.reads.find((x) => x.key === 'x')?.value, winnerValue, ctx);
      t.same(r.versions['x']?.map((v) => v.value), ['100', '150', winnerValue], ctx);
      winners.add(r.write_conflict.winner ?? 'none');
    }
    t.same([...winners].sort(), ['T3', 'T4'], 'the race goes either way depending on latencies');
  });
});
