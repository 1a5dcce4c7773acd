// Time travel (web/replication/timeline.ts) without a browser: what is recorded, the bound, and that
// the state rebuilt at any point equals the state the live model had then, for live frames (with
// snapshots no frame explains) and for a trace file written by the swarm.
import t from 'tap';
import {
  fromState,
  nodeLabel,
  type ClusterModel,
  type FrameWire,
  type NodeStatusWire,
} from '../../web/replication/model.js';
import {
  applyFrame,
  checkpointEveryEntries,
  liveTimeline,
  loadTrace,
  sameState,
  Timeline,
  timelineEntriesMax,
  traceMessagesPerPointMax,
  type ReplayState,
} from '../../web/replication/timeline.js';
import { traceSwarmRun } from '../../src/replication/swarm/trace-file.js';
import { SeededRng } from '../../src/util/rng.js';

const cid = 'c-1';
const ids = ['n1', 'n2', 'n3', 'n4', 'n5'];

function node(id: string, role: string, state = 'online'): NodeStatusWire {
  return { id, role, state, commit_index: 0, last_applied: 0, leader_id: '', lag: 0 };
}

function snapshotModel(roles: Record<string, string>, states: Record<string, string> = {}): ClusterModel {
  return fromState({
    id: cid,
    config: { strategy: 'raft' },
    node_ids: ids,
    nodes: Object.fromEntries(ids.map((id) => [id, node(id, roles[id] ?? 'follower', states[id] ?? 'online')])),
    partitions: {},
    created: '2026-01-01T00:00:00.000Z',
  });
}

let seq = 0;
function frame(type: string, node_id: string | undefined, data: Record<string, unknown> = {}): FrameWire {
  const f: FrameWire = { type, cluster_id: cid, seq: ++seq, data };
  if (node_id !== undefined) f.node_id = node_id;
  return f;
}

/** A seeded stream of what the page sees: events of every kind the model applies, and snapshots. */
function liveStream(seed: number, n: number): Array<{ frame: FrameWire | null; state: ReplayState }> {
  const rng = new SeededRng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[rng.range(0, xs.length - 1)] as T;
  let s: ReplayState = { model: snapshotModel({ n1: 'leader' }), terms: {} };
  const out: Array<{ frame: FrameWire | null; state: ReplayState }> = [{ frame: null, state: s }];
  let index = 0;
  let pid = 0;
  for (let i = 0; i < n; i++) {
    const r = rng.next();
    if (r < 0.08) {
      // A snapshot after lost events: roles the frames never said.
      const roles = Object.fromEntries(ids.map((id) => [id, pick(['follower', 'candidate', 'leader'])]));
      s = { model: snapshotModel(roles), terms: s.terms };
      out.push({ frame: null, state: s });
      continue;
    }
    let f: FrameWire;
    if (r < 0.2) f = frame('node_state_changed', pick(ids), { state: pick(['paused', 'online']) });
    else if (r < 0.3) f = frame('leader_elected', pick(ids), { term: rng.range(1, 9) });
    else if (r < 0.38)
      f = frame('partition_created', undefined, { partition_id: `p${++pid}`, group_a: [pick(ids)], group_b: ['n5'] });
    else if (r < 0.45) f = frame('partition_healed', undefined, { partition_id: `p${rng.range(1, Math.max(pid, 1))}` });
    else if (r < 0.5) f = frame('node_crashed', pick(ids));
    else if (r < 0.85) f = frame('entry_replicated', pick(ids), { index: ++index });
    else f = frame('write_received', pick(ids), { key: 'k' });
    s = applyFrame(s, f);
    out.push({ frame: f, state: s });
  }
  return out;
}

t.test('recording keeps a point only when what is shown changed', async (t) => {
  const tl = liveTimeline();
  const s0: ReplayState = { model: snapshotModel({ n1: 'leader' }), terms: {} };
  t.ok(tl.record(1, 'snapshot', null, s0), 'the first state is kept');
  t.equal(tl.entry(0)?.checkpoint, s0, 'as a checkpoint');
  const w = frame('write_received', 'n1', { key: 'k' });
  t.notOk(tl.record(2, w.type, w, applyFrame(s0, w)), 'a write changes nothing shown: not kept');
  const p = frame('node_state_changed', 'n2', { state: 'paused' });
  const s1 = applyFrame(s0, p);
  t.ok(tl.record(3, p.type, p, s1), 'a pause is kept');
  t.equal(tl.entry(1)?.checkpoint, null, 'as its step only: the frame explains it');
  t.equal(tl.entry(1)?.step, p);
  const s2: ReplayState = { model: snapshotModel({ n3: 'leader' }, { n2: 'paused' }), terms: {} };
  t.ok(tl.record(4, 'snapshot', null, s2));
  t.ok(tl.entry(2)?.checkpoint !== null, 'a snapshot no frame explains is a checkpoint');
  t.equal(tl.length, 3);
  t.equal(nodeLabel(tl.stateAt(1).model.nodes['n2']!), 'n2 follower paused');
  t.equal(nodeLabel(tl.stateAt(0).model.nodes['n2']!), 'n2 follower', 'before the pause');
  t.throws(() => tl.stateAt(3), RangeError, 'no point past the end');
});

t.test('the state rebuilt at every point equals the live state then', async (t) => {
  for (const seed of [1, 2, 3]) {
    const tl = liveTimeline();
    const kept: ReplayState[] = [];
    for (const [i, x] of liveStream(seed, 2_000).entries()) {
      if (tl.record(i, x.frame?.type ?? 'snapshot', x.frame, x.state)) kept.push(x.state);
    }
    t.equal(tl.length, kept.length, `seed ${seed}: ${kept.length} points`);
    let bad = -1;
    for (let i = 0; i < kept.length && bad < 0; i++) if (!sameState(tl.stateAt(i), kept[i]!)) bad = i;
    t.equal(bad, -1, `seed ${seed}: every point rebuilt as it was`);
    let checkpoints = 0;
    for (let i = 0; i < tl.length; i++) if (tl.entry(i)?.checkpoint) checkpoints++;
    t.ok(checkpoints < kept.length / 2, 'most points are steps, not whole states');
    let gap = 0;
    let maxGap = 0;
    for (let i = 0; i < tl.length; i++) {
      gap = tl.entry(i)?.checkpoint ? 0 : gap + 1;
      maxGap = Math.max(maxGap, gap);
    }
    t.ok(maxGap < checkpointEveryEntries, `a checkpoint at least every ${checkpointEveryEntries} entries`);
  }
});

t.test('the bound: at most entriesMax points, the oldest cut, the rest still rebuilt exactly', async (t) => {
  const cases = [
    { name: 'a small bound', max: 40, every: 8 },
    { name: 'bound equal to the interval', max: 8, every: 8 },
    { name: 'every point a checkpoint', max: 10, every: 1 },
  ];
  for (const c of cases) {
    const tl = new Timeline(applyFrame, c.max, c.every);
    const kept: ReplayState[] = [];
    let maxLen = 0;
    for (const [i, x] of liveStream(7, 600).entries()) {
      if (tl.record(i, 'x', x.frame, x.state)) kept.push(x.state);
      maxLen = Math.max(maxLen, tl.length);
    }
    t.equal(maxLen, c.max, `${c.name}: never more than ${c.max}`);
    t.ok(tl.length > c.max - c.every, `${c.name}: cut a checkpoint interval at most`);
    t.equal(tl.dropped + tl.length, kept.length, `${c.name}: what was cut is counted`);
    t.ok(tl.entry(0)?.checkpoint, `${c.name}: the oldest point kept is a checkpoint`);
    const tail = kept.slice(tl.dropped);
    t.ok(
      tail.every((s, i) => sameState(tl.stateAt(i), s)),
      `${c.name}: the points kept are rebuilt as they were`,
    );
  }
  t.throws(() => new Timeline(applyFrame, 4, 8), RangeError, 'a bound below the interval is refused');
  t.equal(new Timeline(applyFrame).entriesMax, timelineEntriesMax, 'the default bound is the named one');
});

t.test('a trace file written by the swarm loads and replays: nodes, a leader with its term, partitions', async (t) => {
  const { text, file } = traceSwarmRun('raft', 3);
  const loaded = loadTrace(text);
  if ('error' in loaded) throw new Error(loaded.error);
  t.equal(loaded.info.seed, 3);
  t.equal(loaded.info.strategy, 'raft');
  t.match(loaded.info.replay, /--seed 3/);
  const tl = loaded.timeline;
  t.ok(tl.length > 10, `${tl.length} points`);
  const first = tl.stateAt(0).model;
  t.same(first.nodeIds.slice(0, 1), ['n1']);
  let leaderAt = -1;
  let partitionAt = -1;
  for (let i = 0; i < tl.length; i++) {
    const s = tl.stateAt(i);
    if (leaderAt < 0 && s.model.leaderId !== null) leaderAt = i;
    if (partitionAt < 0 && Object.keys(s.model.partitions).length > 0) partitionAt = i;
  }
  t.ok(leaderAt >= 0, 'a leader appears');
  const atLeader = tl.stateAt(leaderAt);
  const leader = atLeader.model.leaderId as string;
  t.equal(atLeader.model.nodes[leader]?.role, 'leader');
  t.ok((atLeader.terms[leader] ?? 0) > 0, 'with its term');
  t.ok(partitionAt >= 0, 'a partition is replayed');
  const last = tl.stateAt(tl.length - 1).model;
  t.same(
    last.nodeIds.filter((id) => !last.nodes[id]?.removed),
    file.nodes.filter((id) => {
      const ev = [...file.events].reverse().find((e) => e.kind === 'node' && e.node === id);
      return ev !== undefined && ev.kind === 'node' && ev.state !== 'removed';
    }),
    'the last point holds the nodes the run ended with',
  );
  t.equal(loaded.traffic.length, tl.length, 'traffic for every point');
  const lastAt = tl.entry(tl.length - 1)?.at ?? 0;
  const count = (kind: string): number => file.events.filter((e) => e.kind === kind && e.t <= lastAt).length;
  t.equal(
    loaded.traffic.reduce((n, x) => n + x.delivered, 0),
    count('message'),
    'every delivery up to the last point counted once',
  );
  t.equal(
    loaded.traffic.reduce((n, x) => n + x.dropped, 0),
    count('dropped'),
    'every drop counted once',
  );
  t.ok(
    loaded.traffic.every((x) => x.latest.length <= traceMessagesPerPointMax),
    'message lines per point are capped',
  );
  t.same(loaded.info.violations, file.violations, 'the violations travel with the trace');
});

t.test('files that are not traces are refused with a reason', async (t) => {
  const cases = [
    { name: 'not JSON', text: '{', error: /not JSON/ },
    { name: 'another format', text: '{"format":"shiviz"}', error: /format/ },
    { name: 'another version', text: '{"format":"simlab-swarm-trace","version":2}', error: /version 2/ },
    { name: 'no events', text: '{"format":"simlab-swarm-trace","version":1,"seed":1}', error: /needs seed/ },
  ];
  for (const c of cases) {
    const r = loadTrace(c.text);
    t.ok('error' in r && c.error.test(r.error), c.name);
  }
});
