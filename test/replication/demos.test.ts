import t from 'tap';
import { existsSync } from 'node:fs';
import {
  Acceptor,
  compareBallots,
  defaultSwimParams,
  runDetsim,
  runPaxos,
  simulate,
  type PaxosMsg,
  encodeRecord,
  MvccStore,
  replayLog,
  runMvcc,
  runSwim,
  runTwoPhaseCommit,
  runWal,
} from '../../src/replication/demos/index.js';
import { Narrator, type Outgoing } from '../../src/replication/demos/runtime.js';
import { SeededRng } from '../../src/util/rng.js';
import { Coordinator, type CoordinatorLogRecord, type TwoPcMsg } from '../../src/replication/demos/twopc.js';

const seeds = (n: number, from = 1): number[] => Array.from({ length: n }, (_, i) => from + i);

t.test('two-phase commit', async (t) => {
  const committedValues = { p1: { alice: '70' }, p2: { bob: '60' }, p3: { carol: '20' } };
  const cases = [
    {
      name: 'without a crash the transaction commits and nobody blocks',
      crash: false,
      blocked: false,
      recovered: false,
    },
    {
      name:
        'with the coordinator crashing after the votes, participants block holding locks until ' +
        'it recovers and commits',
      crash: true,
      blocked: true,
      recovered: true,
    },
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
        t.ok(
          r.locks.every((l) => l.released_at_ms !== null),
          `every lock released (${ctx})`,
        );
        if (c.crash) {
          t.same(r.blocked_participants, ['p1', 'p2', 'p3'], ctx);
          t.ok(r.coordinator_crashed_at_ms !== null && r.coordinator_recovered_at_ms !== null, ctx);
          // Locks are held across the whole outage: no participant may release before the coordinator returns.
          t.ok(
            r.locks.every((l) => (l.released_at_ms as number) >= (r.coordinator_recovered_at_ms as number)),
            `locks outlast the outage (${ctx})`,
          );
          t.ok(r.max_lock_held_ms >= 600, ctx);
          t.equal(r.client_read.outcome, 'locked', `a read during the outage is refused (${ctx})`);
          t.same(
            r.coordinator_log.map((l) => l.kind),
            ['begin', 'decision', 'end'],
            ctx,
          );
          t.ok(r.messages_lost_to_crash > 0, `queries to the dead coordinator are lost (${ctx})`);
        } else {
          t.same(r.blocked_participants, [], ctx);
          t.equal(r.coordinator_crashed_at_ms, null, ctx);
          t.ok(r.max_lock_held_ms < 100, `locks are short-lived (${ctx})`);
          t.same(
            r.client_read,
            { key: 'alice', participant: 'p1', at_ms: r.client_read.at_ms, outcome: 'value', value: '70' },
            ctx,
          );
        }
        t.ok(r.narrative.length > 5 && r.narrative.some((s) => s.startsWith('t=')), ctx);
      }
    });
  }

  t.test(
    'a restarted coordinator finishes what its log says and presumes abort when no decision was logged',
    async (t) => {
      const begin: CoordinatorLogRecord = {
        kind: 'begin',
        tx: 'tx1',
        at: 0,
        participants: ['p1', 'p2'],
        writes: { p1: { a: '1' }, p2: { b: '2' } },
      };
      const cases: Array<{ name: string; log: CoordinatorLogRecord[]; sent: string[]; logged: string[] }> = [
        {
          name: 'begin only: presumed abort',
          log: [begin],
          sent: ['p1:abort', 'p2:abort'],
          logged: ['begin', 'decision'],
        },
        {
          name: 'commit logged: commit re-sent',
          log: [begin, { kind: 'decision', tx: 'tx1', at: 5, decision: 'commit' }],
          sent: ['p1:commit', 'p2:commit'],
          logged: ['begin', 'decision'],
        },
        {
          name: 'abort logged: abort re-sent',
          log: [begin, { kind: 'decision', tx: 'tx1', at: 5, decision: 'abort' }],
          sent: ['p1:abort', 'p2:abort'],
          logged: ['begin', 'decision'],
        },
        {
          name: 'ended: nothing to do',
          log: [begin, { kind: 'decision', tx: 'tx1', at: 5, decision: 'commit' }, { kind: 'end', tx: 'tx1', at: 9 }],
          sent: [],
          logged: ['begin', 'decision', 'end'],
        },
      ];
      for (const c of cases) {
        const disk = { log: c.log.map((r) => ({ ...r })) };
        const coord = new Coordinator('c', disk, 'none', new Narrator(), 100);
        const out: Array<Outgoing<TwoPcMsg>> = [];
        coord.drain(out);
        t.same(
          out.map((o) => `${o.to}:${o.msg.t === 'decision' ? o.msg.decision : o.msg.t}`),
          c.sent,
          c.name,
        );
        t.same(
          disk.log.map((r) => r.kind),
          c.logged,
          `${c.name}: log`,
        );
        if (c.name.startsWith('begin only'))
          t.same(
            disk.log[1],
            { kind: 'decision', tx: 'tx1', at: 100, decision: 'abort' },
            'the presumed abort is forced to the log',
          );
      }
    },
  );

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
    for (const c of cases)
      t.equal(store.visible(c.key, c.snapshot)?.value, c.want, `${c.key} at snapshot ${c.snapshot}`);
  });

  t.test(
    'over many seeds the long reader stays on its snapshot, a new reader sees new values, and the first committer wins',
    async (t) => {
      const winners = new Set<string>();
      for (const seed of seeds(100)) {
        const r = runMvcc({ seed });
        const ctx = `seed ${seed}; replay with runMvcc({seed: ${seed}})`;
        t.equal(r.snapshot_stable, true, `snapshot stable (${ctx})`);
        t.ok(r.commits_during_reader >= 2, `commits happened while the reader ran (${ctx})`);
        t.ok(
          r.reader.reads.filter((x) => x.key === 'x').every((x) => x.value === '100'),
          ctx,
        );
        t.equal(r.new_reader_sees_new_values, true, ctx);
        t.equal(r.write_conflict_detected, true, ctx);
        t.equal(r.first_committer_wins, true, ctx);
        t.not(r.write_conflict.winner, r.write_conflict.loser, ctx);
        const winnerValue = r.write_conflict.winner === 'T3' ? '175' : '190';
        t.equal(r.new_reader.reads.find((x) => x.key === 'x')?.value, winnerValue, ctx);
        t.same(
          r.versions['x']?.map((v) => v.value),
          ['100', '150', winnerValue],
          ctx,
        );
        winners.add(r.write_conflict.winner ?? 'none');
      }
      t.same([...winners].sort(), ['T3', 'T4'], 'the race goes either way depending on latencies');
    },
  );
});

t.test('write-ahead log durability', async (t) => {
  t.test('replaying a log keeps every whole, checksummed record and stops at a torn or corrupt one', async (t) => {
    const a = encodeRecord({ seq: 1, key: 'k1', value: 'v1' });
    const b = encodeRecord({ seq: 2, key: 'k2', value: 'v2' });
    const c = encodeRecord({ seq: 3, key: 'k3', value: 'v3' });
    const corrupt = b.replace('v2', 'v9');
    const cases = [
      { name: 'an empty log', text: '', seqs: [], tail: 0 },
      { name: 'three whole records', text: a + b + c, seqs: [1, 2, 3], tail: 0 },
      { name: 'a final record torn mid-write', text: a + b + c.slice(0, 7), seqs: [1, 2], tail: 7 },
      {
        name: 'a record whose checksum does not match',
        text: a + corrupt + c,
        seqs: [1],
        tail: corrupt.length + c.length,
      },
      { name: 'a line with a missing field', text: a + 'garbage\n' + c, seqs: [1], tail: 8 + c.length },
    ];
    for (const k of cases) {
      const r = replayLog(k.text);
      t.same(
        r.records.map((x) => x.seq),
        k.seqs,
        k.name,
      );
      t.equal(r.discarded_tail_bytes, k.tail, `${k.name}: tail bytes`);
    }
    t.same(replayLog(a).records, [{ seq: 1, key: 'k1', value: 'v1' }], 'fields survive the round trip');
  });

  const cases = [
    { mode: 'buffered' as const, lostMin: 1 },
    { mode: 'fsync' as const, lostMin: 0 },
  ];
  for (const c of cases) {
    t.test(
      `in ${c.mode} mode a crash after the last acknowledgement ` +
        `${c.mode === 'buffered' ? 'loses acknowledged writes' : 'loses nothing'}`,
      async (t) => {
        for (const seed of seeds(3)) {
          const r = await runWal({ mode: c.mode, seed });
          const ctx = `seed ${seed}; replay with runWal({mode: '${c.mode}', seed: ${seed}})`;
          t.equal(r.mode, c.mode, ctx);
          t.equal(r.acked, 10, `every write was acknowledged (${ctx})`);
          t.equal(r.recovered, r.durable_before_crash, `the replayed log holds exactly what was fsynced (${ctx})`);
          t.equal(r.lost, r.acked - r.recovered, ctx);
          t.equal(r.lost_writes.length, r.lost, ctx);
          t.equal(r.file_deleted, true, ctx);
          t.notOk(existsSync(r.file), `the temporary log file is gone (${ctx})`);
          t.ok(r.file_bytes > 0, ctx);
          if (c.mode === 'buffered') {
            t.equal(r.lost, 2, `10 writes with a flush every 4 leave 2 in memory (${ctx})`);
            t.same(
              r.lost_writes.map((w) => w.seq),
              [9, 10],
              ctx,
            );
            t.equal(r.fsync_calls, 2, ctx);
          } else {
            t.equal(r.lost, 0, ctx);
            t.equal(r.durable_before_crash, 10, ctx);
            t.equal(r.fsync_calls, 10, ctx);
          }
          t.ok(
            r.narrative.some((s) => s.includes('CRASH')),
            ctx,
          );
        }
      },
    );
  }

  t.test('waiting for fsync makes acknowledgements slower than acknowledging from memory', async (t) => {
    const buffered = await runWal({ mode: 'buffered' });
    const fsync = await runWal({ mode: 'fsync' });
    t.ok(
      fsync.ack_latency_ms.avg > buffered.ack_latency_ms.avg,
      `fsync ${fsync.ack_latency_ms.avg} ms vs buffered ${buffered.ack_latency_ms.avg} ms`,
    );
  });
});

t.test('SWIM membership', async (t) => {
  t.test(
    'over many seeds the failed member is declared dead by every live member in bounded time, and no live member is',
    async (t) => {
      const p = defaultSwimParams;
      const n = 6;
      // Bound: a member may wait up to two shuffled round-robin cycles (2(n-1) periods) before it probes
      // the failed one, one more period to suspect it, the suspicion timeout, then a few periods of gossip.
      const boundMs =
        2 * (n - 1) * p.protocolPeriodMs + p.protocolPeriodMs + p.suspicionTimeoutMs + 3 * p.protocolPeriodMs;
      let indirectSaves = 0;
      for (const seed of seeds(150)) {
        const r = runSwim({ seed });
        const ctx = `seed ${seed}; replay with runSwim({seed: ${seed}})`;
        t.equal(r.detected, true, `detected (${ctx})`);
        t.ok(
          r.detection_time_ms !== null && r.detection_time_ms <= boundMs,
          `detection in ${r.detection_time_ms} ms <= ${boundMs} ms (${ctx})`,
        );
        t.ok(r.first_suspected_at_ms !== null && r.first_suspected_at_ms > r.failed_at_ms, ctx);
        t.ok(
          Object.values(r.declared_dead_at_ms).every(
            (at) => at !== null && at >= r.failed_at_ms + p.suspicionTimeoutMs,
          ),
          `nobody declares death before a full suspicion timeout (${ctx})`,
        );
        t.equal(r.false_positives, 0, `no false positives (${ctx})`);
        indirectSaves += r.indirect_acks;
      }
      t.ok(indirectSaves > 150, `indirect pings answered for the lossy links (${indirectSaves} times)`);
    },
  );

  t.test(
    'without indirect probes the lossy link makes live members suspected and some wrongly declared dead',
    async (t) => {
      let withoutSuspicions = 0;
      let withoutFalse = 0;
      let withSuspicions = 0;
      for (const seed of seeds(40)) {
        const without = runSwim({ seed, params: { indirectProbes: 0 } });
        withoutSuspicions += without.suspicions_of_live_members;
        withoutFalse += without.false_positives;
        withSuspicions += runSwim({ seed }).suspicions_of_live_members;
      }
      t.ok(withoutSuspicions > 100, `k=0: ${withoutSuspicions} suspicions of live members`);
      t.ok(withoutFalse > 0, `k=0: ${withoutFalse} false declarations of death`);
      t.equal(withSuspicions, 0, 'k=3: no live member is ever suspected');
    },
  );

  t.test('the narrative tells the failure, the suspicion and the deaths in time order', async (t) => {
    const r = runSwim({ seed: 42 });
    const stamps = r.narrative
      .map((s) => /^t=(\d+) ms/.exec(s)?.[1])
      .filter((x): x is string => x !== undefined)
      .map(Number);
    t.same(
      stamps,
      [...stamps].sort((a, b) => a - b),
      'sentences are in virtual-time order',
    );
    t.ok(r.narrative.some((s) => s.includes('FAILS')));
    t.ok(r.narrative.some((s) => s.includes('SUSPECT')));
    t.ok(r.narrative.filter((s) => s.includes('DEAD')).length >= 5);
  });
});

t.test('single-decree Paxos', async (t) => {
  t.test('ballots order by round, then by proposer', async (t) => {
    const cases = [
      { a: { n: 1, by: 'p1' }, b: { n: 2, by: 'p1' }, sign: -1 },
      { a: { n: 2, by: 'p1' }, b: { n: 1, by: 'p9' }, sign: 1 },
      { a: { n: 3, by: 'p1' }, b: { n: 3, by: 'p2' }, sign: -1 },
      { a: { n: 3, by: 'p2' }, b: { n: 3, by: 'p2' }, sign: 0 },
    ];
    for (const c of cases)
      t.equal(Math.sign(compareBallots(c.a, c.b)), c.sign, `${c.a.n}.${c.a.by} vs ${c.b.n}.${c.b.by}`);
  });

  t.test('an acceptor keeps its promises and reports what it accepted', async (t) => {
    type Step = { from: string; msg: PaxosMsg; want: Array<Pick<Outgoing<PaxosMsg>, 'to'> & { t: PaxosMsg['t'] }> };
    const b = (n: number, by: string) => ({ n, by });
    const cases: Array<{ name: string; steps: Step[]; accepted: string | null }> = [
      {
        name: 'a first prepare is promised with nothing accepted',
        accepted: null,
        steps: [{ from: 'p1', msg: { t: 'prepare', ballot: b(1, 'p1') }, want: [{ to: 'p1', t: 'promise' }] }],
      },
      {
        name: 'a lower prepare after a higher promise is refused',
        accepted: null,
        steps: [
          { from: 'p2', msg: { t: 'prepare', ballot: b(1, 'p2') }, want: [{ to: 'p2', t: 'promise' }] },
          { from: 'p1', msg: { t: 'prepare', ballot: b(1, 'p1') }, want: [{ to: 'p1', t: 'nack' }] },
        ],
      },
      {
        name: 'an accept below the promise is refused',
        accepted: null,
        steps: [
          { from: 'p1', msg: { t: 'prepare', ballot: b(1, 'p1') }, want: [{ to: 'p1', t: 'promise' }] },
          { from: 'p2', msg: { t: 'prepare', ballot: b(2, 'p2') }, want: [{ to: 'p2', t: 'promise' }] },
          { from: 'p1', msg: { t: 'accept', ballot: b(1, 'p1'), value: 'A' }, want: [{ to: 'p1', t: 'nack' }] },
        ],
      },
      {
        name: 'an accept at the promise is accepted and announced to the learner and the proposer',
        accepted: 'B',
        steps: [
          { from: 'p2', msg: { t: 'prepare', ballot: b(2, 'p2') }, want: [{ to: 'p2', t: 'promise' }] },
          {
            from: 'p2',
            msg: { t: 'accept', ballot: b(2, 'p2'), value: 'B' },
            want: [
              { to: 'l1', t: 'accepted' },
              { to: 'p2', t: 'accepted' },
            ],
          },
        ],
      },
      {
        name: 'a later prepare is told the accepted value',
        accepted: 'B',
        steps: [
          {
            from: 'p2',
            msg: { t: 'accept', ballot: b(2, 'p2'), value: 'B' },
            want: [
              { to: 'l1', t: 'accepted' },
              { to: 'p2', t: 'accepted' },
            ],
          },
          { from: 'p3', msg: { t: 'prepare', ballot: b(3, 'p3') }, want: [{ to: 'p3', t: 'promise' }] },
        ],
      },
    ];
    for (const c of cases) {
      const acc = new Acceptor('a1', ['l1'], [], new Narrator());
      const out: Array<Outgoing<PaxosMsg>> = [];
      for (const s of c.steps) {
        acc.onMessage(s.from, s.msg, 0);
        out.length = 0;
        acc.drain(out);
        t.same(
          out.map((o) => ({ to: o.to, t: o.msg.t })),
          s.want,
          `${c.name}: ${s.msg.t} from ${s.from}`,
        );
      }
      t.equal(acc.accepted?.value ?? null, c.accepted, `${c.name}: accepted value`);
      const last = out[out.length - 1]?.msg;
      if (c.name.startsWith('a later prepare'))
        t.same(last?.t === 'promise' ? last.accepted?.value : undefined, 'B', 'the promise carries the accepted value');
    }
  });

  t.test(
    'with competing proposers, random latencies and message loss, agreement and validity hold for 240 seeds',
    async (t) => {
      let chosen = 0;
      let lossless = 0;
      const winners = new Set<string>();
      for (const seed of seeds(240)) {
        const pick = new SeededRng(seed * 7919);
        const dropRate = [0, 0.05, 0.15, 0.3][pick.int(4)] as number;
        const acceptors = pick.chance(0.5) ? 3 : 5;
        const minMs = pick.range(1, 10);
        const latency = { minMs, maxMs: minMs + pick.range(5, 80) };
        const r = runPaxos({ seed, dropRate, acceptors, latency });
        const ctx = `seed ${seed}; replay with runPaxos(${JSON.stringify({ seed, dropRate, acceptors, latency })})`;
        if (!r.safety_held || !r.validity_held) t.fail(`safety or validity broken (${ctx})`);
        const learned = Object.values(r.learners).filter((v): v is string => v !== null);
        if (learned.some((v) => v !== r.chosen_value)) t.fail(`a learner disagrees with the chosen value (${ctx})`);
        if (r.chosen_value !== null) chosen++;
        if (dropRate === 0) {
          lossless++;
          if (r.chosen_value === null || !r.late_proposer_adopted_chosen)
            t.fail(`without loss a value is chosen and the latecomer adopts it (${ctx})`);
          if (Object.values(r.learners).some((v) => v === null)) t.fail(`without loss every learner learns (${ctx})`);
        }
        if (r.chosen_value !== null) winners.add(r.chosen_value);
      }
      t.pass('every seed kept agreement and validity');
      t.ok(lossless > 30, `${lossless} lossless runs checked for liveness`);
      t.ok(chosen > 200, `a value was chosen in ${chosen}/240 runs`);
      t.ok(winners.has('A') && winners.has('B'), `either early proposer can win (${[...winners].join(', ')})`);
    },
  );

  t.test('the default run shows the duel, the choice and the latecomer re-proposing the chosen value', async (t) => {
    const r = runPaxos({});
    t.equal(r.safety_held, true);
    t.ok(r.chosen_value === 'A' || r.chosen_value === 'B');
    t.equal(r.late_proposer_adopted_chosen, true);
    const p3 = r.proposals.filter((p) => p.proposer === 'p3');
    t.ok(
      p3.length > 0 && p3.every((p) => p.value === r.chosen_value && !p.own_value),
      'p3 proposes the chosen value, not its own',
    );
    t.ok(
      r.proposals.some((p) => p.outcome === 'preempted' || p.outcome === 'timed_out') ||
        r.proposers.some((p) => p.prepares > 1),
      'the proposers really competed',
    );
    t.same(r, runPaxos({}), 'the same seed replays the same run');
  });
});

t.test('deterministic simulation', async (t) => {
  t.test(
    'the same seed replays the same trace, the next seed does not, and the replicas converge after the faults',
    async (t) => {
      for (const seed of [...seeds(20), 42, 2 ** 40 + 3]) {
        const r = runDetsim({ seed });
        const ctx = `seed ${seed}; replay with runDetsim({seed: ${seed}})`;
        t.equal(r.seed, seed, ctx);
        t.equal(r.reproducible, true, `reproducible (${ctx})`);
        t.equal(r.run1.trace_hash, r.run2.trace_hash, ctx);
        t.same(r.run1, r.run2, `every counter of the two runs matches (${ctx})`);
        t.equal(r.different_seed_differs, true, ctx);
        t.not(r.run_next_seed.trace_hash, r.run1.trace_hash, ctx);
        t.equal(r.run_next_seed.seed, seed + 1, ctx);
        t.ok(r.first_divergence_line !== null && r.first_divergence_line >= 1, ctx);
        t.ok(
          r.run1.faults > 0 && r.run1.writes > 0 && r.run1.events > r.run1.writes,
          `faults and writes happened (${ctx})`,
        );
        t.equal(r.run1.converged, true, `replicas converge once faults are cleared (${ctx})`);
        t.match(r.run1.trace_hash, /^[0-9a-f]{64}$/, ctx);
      }
    },
  );

  t.test('two simulations of one seed produce identical traces line by line', async (t) => {
    const a = simulate(7);
    const b = simulate(7);
    t.same(a.trace, b.trace);
    t.ok(a.trace.length > 50);
    t.ok(
      a.trace.some((l) => l.includes('dropped_') || l.includes('pause')),
      'the trace records injected faults',
    );
  });

  t.test('the narrative lists the faults with their virtual times and the verdicts', async (t) => {
    const r = runDetsim({ seed: 42 });
    t.ok(r.narrative.some((s) => /^t=\d+ ms: Fault: /.test(s)));
    t.ok(r.narrative.some((s) => s.includes('identical, event for event')));
    t.ok(r.narrative.some((s) => s.includes('a different history')));
  });
});
