// The swarm's trace file (src/replication/swarm/trace-file.ts, `cli.js --trace-out`): equal seeds
// give equal files, recording does not change the run, events are in time order and hold what the
// page replays (nodes with roles and terms, faults), and both caps hold at and past their limit.
import t from 'tap';
import { runKvSwarm } from '../../src/replication/swarm/kv-swarm.js';
import { runRaftSwarm } from '../../src/replication/swarm/raft-swarm.js';
import {
  parseTraceLine,
  TraceRecorder,
  traceSwarmRun,
  type TraceEvent,
} from '../../src/replication/swarm/trace-file.js';

const start = 1_700_000_000_000;

t.test('trace lines become trace events (times relative to the start)', async (t) => {
  const cases: Array<{ name: string; line: string; want: TraceEvent | null }> = [
    {
      name: 'a delivery',
      line: `${start + 12} n1->n2 type=vote term=3`,
      want: { t: 12, kind: 'message', from: 'n1', to: 'n2', summary: 'type=vote term=3' },
    },
    {
      name: 'a drop with its cause',
      line: `${start + 5} n3->n1 dropped_partition`,
      want: { t: 5, kind: 'dropped', from: 'n3', to: 'n1', cause: 'dropped_partition', summary: '' },
    },
    {
      name: 'a message lost at a crashed node',
      line: `${start} n2->n4 lost_down type=append`,
      want: { t: 0, kind: 'dropped', from: 'n2', to: 'n4', cause: 'lost_down', summary: 'type=append' },
    },
    {
      name: 'a client request',
      line: `${start + 7} client n1 #4 write k1`,
      want: { t: 7, kind: 'client', node: 'n1', request: 4, op: 'write k1' },
    },
    {
      name: 'a reply',
      line: `${start + 9} reply n1 #4 not_leader`,
      want: { t: 9, kind: 'reply', node: 'n1', request: 4, outcome: 'not_leader' },
    },
    { name: 'a pause', line: `${start + 1} pause n2`, want: { t: 1, kind: 'control', node: 'n2', action: 'pause' } },
    {
      name: 'a core control command',
      line: `${start + 1} control n1 add_server`,
      want: { t: 1, kind: 'control', node: 'n1', action: 'add_server' },
    },
    { name: 'a tick is left out', line: `${start + 3} tick n1 msgs=4 replies=0 events=0`, want: null },
    { name: 'a line without a time is left out', line: 'garbage', want: null },
  ];
  for (const c of cases) t.same(parseTraceLine(c.line, start), c.want, c.name);
});

t.test('the same raft seed writes the same file; recording leaves the run unchanged', async (t) => {
  const a = traceSwarmRun('raft', 3);
  const b = traceSwarmRun('raft', 3);
  t.equal(a.text, b.text, 'byte for byte');
  t.not(traceSwarmRun('raft', 4).text, a.text, 'another seed, another file');
  t.equal(a.result.traceHash, runRaftSwarm(3).traceHash, 'same trace hash as a run without a recorder');
  const f = a.file;
  t.equal(f.format, 'simlab-swarm-trace');
  t.equal(f.version, 1);
  t.equal(f.seed, 3);
  t.equal(f.strategy, 'raft');
  t.match(f.replay, /--seed 3 --strategy raft/);
  t.same(f.nodes.slice(0, 5), ['n1', 'n2', 'n3', 'n4', 'n5']);
  t.same(JSON.parse(a.text), f, 'the text is the file');
  for (let i = 1; i < f.events.length; i++) {
    if ((f.events[i] as TraceEvent).t < (f.events[i - 1] as TraceEvent).t) {
      t.fail(`event ${i} goes back in time`);
      break;
    }
  }
  const leaders = f.events.filter((e) => e.kind === 'node' && e.role === 'leader');
  t.ok(leaders.length > 0, 'a node becomes leader');
  t.ok(
    leaders.every((e) => e.kind === 'node' && typeof e.term === 'number' && e.term > 0),
    'raft nodes carry their term',
  );
  t.ok(
    f.events.some((e) => e.kind === 'partition'),
    'seed 3 partitions the cluster',
  );
  t.ok(
    f.events.some((e) => e.kind === 'message'),
    'deliveries are there',
  );
});

t.test('a kv strategy writes its file too, and recording leaves its run unchanged', async (t) => {
  const a = traceSwarmRun('leaderless', 3);
  t.equal(a.text, traceSwarmRun('leaderless', 3).text);
  t.equal(a.result.traceHash, runKvSwarm('leaderless', 3).traceHash);
  t.equal(a.file.strategy, 'leaderless');
  t.ok(a.file.events.some((e) => e.kind === 'node'));
});

t.test('both caps hold at and past their limit, and what was left out is counted', async (t) => {
  const full = traceSwarmRun('raft', 3).file;
  const states = full.events.filter(
    (e) => e.kind !== 'message' && e.kind !== 'dropped' && e.kind !== 'client' && e.kind !== 'reply',
  );
  const traffic = full.events.length - states.length;
  for (const [stateMax, trafficMax] of [
    [states.length, traffic],
    [states.length - 1, traffic - 1],
    [10, 20],
  ] as const) {
    const rec = new TraceRecorder(stateMax, trafficMax);
    const r = runRaftSwarm(3, { observe: rec.observe });
    const f = rec.finish({
      seed: 3,
      strategy: 'raft',
      replay: '',
      config: {},
      ok: r.ok,
      verdicts: r.verdicts,
      violations: r.violations,
      traceHash: r.traceHash,
    });
    const s =
      f.events.length - f.events.filter((e) => ['message', 'dropped', 'client', 'reply'].includes(e.kind)).length;
    t.equal(s, stateMax, `state events kept at cap ${stateMax}`);
    t.equal(f.state_events_dropped, states.length - stateMax, 'the rest counted');
    t.equal(f.events.length - s, trafficMax, `traffic kept at cap ${trafficMax}`);
    t.equal(f.message_events_dropped, traffic - trafficMax, 'the rest counted');
  }
});
