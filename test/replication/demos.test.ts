import t from 'tap';
import { runTwoPhaseCommit } from '../../src/replication/demos/index.js';

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
