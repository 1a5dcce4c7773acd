import t from 'tap';
import { replayCommand, runRaftSwarm, swarmProfile } from '../../src/replication/swarm/raft-swarm.js';
import { checkRegisterHistory, type RegisterOp } from '../../src/replication/swarm/register-lincheck.js';

/** Seeds per `make test`; RAFT_SWARM_SEEDS / RAFT_SWARM_FIRST_SEED widen or move the window. */
const seeds = Number(process.env.RAFT_SWARM_SEEDS ?? 500);
const firstSeed = Number(process.env.RAFT_SWARM_FIRST_SEED ?? 1);

t.test('the register checker accepts linearizable histories and refuses the others', async (t) => {
  const w = (client: string, value: string | null, invoke: number, complete: number): RegisterOp => ({
    client,
    key: 'k',
    kind: 'write',
    value,
    invoke,
    complete,
  });
  const r = (client: string, value: string | null, invoke: number, complete: number): RegisterOp => ({
    client,
    key: 'k',
    kind: 'read',
    value,
    invoke,
    complete,
  });
  const cases: Array<{ name: string; history: RegisterOp[]; ok: boolean }> = [
    { name: 'a read after a completed write sees it', history: [w('a', '1', 0, 10), r('b', '1', 20, 30)], ok: true },
    {
      name: 'a read after a completed write cannot see the old value',
      history: [w('a', '1', 0, 10), r('b', null, 20, 30)],
      ok: false,
    },
    {
      name: 'a read concurrent with a write may see either value',
      history: [w('a', '1', 0, 50), r('b', null, 10, 20), r('c', '1', 30, 40)],
      ok: true,
    },
    {
      name: 'once a read saw the new value a later read cannot see the old one',
      history: [w('a', '1', 0, 100), r('b', '1', 10, 20), r('c', null, 30, 40)],
      ok: false,
    },
    {
      name: 'an indeterminate write may never happen',
      history: [w('a', '1', 0, Infinity), r('b', null, 20, 30)],
      ok: true,
    },
    {
      name: 'an indeterminate write may happen late',
      history: [w('a', '1', 0, Infinity), r('b', null, 20, 30), r('b', '1', 40, 50)],
      ok: true,
    },
    {
      name: 'an indeterminate write cannot happen before it was invoked',
      history: [r('b', '1', 0, 10), w('a', '1', 20, Infinity)],
      ok: false,
    },
    { name: 'a value nobody wrote is never read', history: [w('a', '1', 0, 10), r('b', '2', 20, 30)], ok: false },
    {
      name: 'a delete is a write of nothing',
      history: [w('a', '1', 0, 10), w('a', null, 20, 30), r('b', null, 40, 50)],
      ok: true,
    },
    {
      name: 'two sequential writes cannot be observed in reverse',
      history: [w('a', '1', 0, 10), w('a', '2', 20, 30), r('b', '2', 40, 50), r('b', '1', 60, 70)],
      ok: false,
    },
  ];
  for (const c of cases) t.equal(checkRegisterHistory(c.history).ok, c.ok, c.name);
  const twoKeys = checkRegisterHistory([
    { client: 'a', key: 'x', kind: 'write', value: '1', invoke: 0, complete: 10 },
    { client: 'b', key: 'y', kind: 'read', value: null, invoke: 20, complete: 30 },
  ]);
  t.same([twoKeys.ok, twoKeys.keys], [true, 2], 'keys are checked independently');
});

t.test('one seed replays exactly: same trace hash, same verdicts', async (t) => {
  const a = runRaftSwarm(7);
  const b = runRaftSwarm(7);
  const c = runRaftSwarm(8);
  t.equal(a.traceHash, b.traceHash);
  t.same(a.verdicts, b.verdicts);
  t.same(a.history, b.history);
  t.not(a.traceHash, c.traceHash, 'another seed, another run');
  t.not(JSON.stringify(swarmProfile(7)), JSON.stringify(swarmProfile(8)), 'and another fault mix');
});

t.test(`raft keeps its safety properties and recovers, over ${seeds} seeded fault schedules`, async (t) => {
  let failed = 0;
  const totals = {
    ops: 0,
    elections: 0,
    faults: 0,
    snapshots: 0,
    indeterminate: 0,
    configChanges: 0,
    nodesRemoved: 0,
    nodesAdded: 0,
  };
  for (let seed = firstSeed; seed < firstSeed + seeds; seed++) {
    const r = runRaftSwarm(seed);
    totals.ops += r.stats.ops;
    totals.elections += r.stats.elections;
    totals.faults += r.stats.faults;
    totals.snapshots += r.stats.snapshotsInstalled;
    totals.indeterminate += r.stats.indeterminate;
    totals.configChanges += r.stats.configChanges;
    totals.nodesRemoved += r.stats.nodesRemoved;
    totals.nodesAdded += r.stats.nodesAdded;
    if (!r.ok) {
      failed++;
      t.fail(`seed ${seed}: ${r.violations.join(' | ')}\n  replay: ${replayCommand(seed)}`);
      if (failed >= 5) break;
    }
  }
  t.equal(
    failed,
    0,
    'every seed passed (election safety, log matching, leader completeness, state-machine safety, linearizability, ' +
      'liveness after heal, one configuration agreed by every live node with removed nodes gone, convergence)',
  );
  // The runs must actually exercise the protocol, or passing means little.
  t.ok(totals.elections > seeds * 2, `leaders changed often (${totals.elections} elections)`);
  t.ok(totals.snapshots > seeds, `InstallSnapshot was exercised (${totals.snapshots} installs)`);
  t.ok(totals.configChanges > seeds, `membership changed under faults (${totals.configChanges} committed changes)`);
  t.ok(totals.nodesRemoved > seeds / 2, `committed removals stopped nodes (${totals.nodesRemoved})`);
  t.ok(totals.nodesAdded > seeds / 2, `new nodes joined (${totals.nodesAdded})`);
  t.ok(totals.indeterminate > 0, `some writes had unknown outcomes (${totals.indeterminate})`);
  t.ok(totals.ops > seeds * 50, `clients did real work (${totals.ops} operations)`);
});
