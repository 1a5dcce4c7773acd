// The replication page's model (web/replication/model.ts) without a browser: snapshots, event
// application, seq gaps, events_dropped, and the buffering that keeps a resync from losing events.
import t from 'tap';
import {
  applyEvent,
  ClusterBook,
  fromState,
  linkCut,
  nodeLabel,
  partitionRequest,
  type ClusterModel,
  type ClusterStateWire,
  type FrameWire,
  type NodeStatusWire,
} from '../../web/replication/model.js';

const cid = 'c-1';

function node(id: string, role: string, state = 'online', extra: Partial<NodeStatusWire> = {}): NodeStatusWire {
  return { id, role, state, commit_index: 0, last_applied: 0, leader_id: '', lag: 0, ...extra };
}

function state(strategy: string, nodes: NodeStatusWire[], extra: Partial<ClusterStateWire> = {}): ClusterStateWire {
  return {
    id: cid,
    config: { strategy },
    node_ids: nodes.map((n) => n.id),
    nodes: Object.fromEntries(nodes.map((n) => [n.id, n])),
    partitions: {},
    created: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}

const raft3 = (): ClusterModel =>
  fromState(state('raft', [node('n1', 'leader'), node('n2', 'follower'), node('n3', 'follower')], { leader_id: 'n1' }));

let seq = 0;
const ev = (type: string, node_id?: string, data?: Record<string, unknown>, s?: number): FrameWire => {
  const f: FrameWire = { type, cluster_id: cid, timestamp: '2026-01-01T00:00:01.000Z', seq: s ?? ++seq };
  if (node_id !== undefined) f.node_id = node_id;
  if (data !== undefined) f.data = data;
  return f;
};

t.test('node labels follow the page contract: id, role, then paused, crashed or removed', async (t) => {
  const base = fromState(state('raft', [node('n1', 'leader')])).nodes['n1']!;
  const cases: Array<{ name: string; patch: object; label: string }> = [
    { name: 'an online leader', patch: {}, label: 'n1 leader' },
    { name: 'a paused follower', patch: { role: 'follower', state: 'paused' }, label: 'n1 follower paused' },
    { name: 'a crashed node', patch: { state: 'crashed' }, label: 'n1 leader crashed' },
    { name: 'a removed node', patch: { removed: true, state: 'offline' }, label: 'n1 leader removed' },
    { name: 'an offline node counts as removed', patch: { state: 'offline' }, label: 'n1 leader removed' },
    { name: 'an unresponsive node says so', patch: { state: 'unresponsive' }, label: 'n1 leader unresponsive' },
  ];
  for (const c of cases) t.equal(nodeLabel({ ...base, ...c.patch }), c.label, c.name);
});

t.test('events change the model as the event says', async (t) => {
  const cases: Array<{
    name: string;
    start: () => ClusterModel;
    frames: FrameWire[];
    check: (m: ClusterModel) => void;
  }> = [
    {
      name: 'a pause marks the node paused and a resume brings it back',
      start: raft3,
      frames: [ev('node_state_changed', 'n2', { state: 'paused' })],
      check: (m) => t.equal(nodeLabel(m.nodes['n2']!), 'n2 follower paused'),
    },
    {
      name: 'a crash marks the node crashed',
      start: raft3,
      frames: [ev('node_crashed', 'n3', { reason: 'killed' })],
      check: (m) => t.equal(m.nodes['n3']!.state, 'crashed'),
    },
    {
      name: 'a removal keeps the node, marked removed',
      start: raft3,
      frames: [ev('node_state_changed', 'n3', { state: 'offline', reason: 'removed' })],
      check: (m) => {
        t.equal(nodeLabel(m.nodes['n3']!), 'n3 follower removed');
        t.same(m.nodeIds, ['n1', 'n2', 'n3']);
      },
    },
    {
      name: 'an added node appears with an unknown role until the state says more',
      start: raft3,
      frames: [ev('node_state_changed', 'n4', { state: 'online', reason: 'added' })],
      check: (m) => t.equal(nodeLabel(m.nodes['n4']!), 'n4 unknown'),
    },
    {
      name: 'a single_leader failover makes the new node leader and the old one a follower',
      start: () =>
        fromState(state('single_leader', [node('n1', 'leader'), node('n2', 'follower')], { leader_id: 'n1' })),
      frames: [ev('leader_elected', 'n2', { epoch: 1, reason: 'failover' })],
      check: (m) => {
        t.equal(m.leaderId, 'n2');
        t.equal(m.nodes['n2']!.role, 'leader');
        t.equal(m.nodes['n1']!.role, 'follower');
      },
    },
    {
      name: 'a raft election keeps the old leader saying leader, marked stale',
      start: raft3,
      frames: [ev('leader_elected', 'n2', { term: 2 })],
      check: (m) => {
        t.equal(m.leaderId, 'n2');
        t.equal(m.nodes['n1']!.role, 'leader');
        t.equal(m.nodes['n1']!.staleLeader, true);
      },
    },
    {
      name: 'a partition is recorded and cuts exactly the links across it',
      start: raft3,
      frames: [ev('partition_created', undefined, { partition_id: 'p1', group_a: ['n1'], group_b: ['n2', 'n3'] })],
      check: (m) => {
        t.same(m.partitions['p1'], { id: 'p1', groupA: ['n1'], groupB: ['n2', 'n3'] });
        t.equal(linkCut(m, 'n1', 'n2'), true);
        t.equal(linkCut(m, 'n3', 'n1'), true);
        t.equal(linkCut(m, 'n2', 'n3'), false);
      },
    },
    {
      name: 'a healed partition is gone',
      start: raft3,
      frames: [
        ev('partition_created', undefined, { partition_id: 'p1', group_a: ['n1'], group_b: ['n2', 'n3'] }),
        ev('partition_healed', undefined, { partition_id: 'p1' }),
      ],
      check: (m) => {
        t.same(m.partitions, {});
        t.equal(linkCut(m, 'n1', 'n2'), false);
      },
    },
    {
      name: "replication advances a node's indexes, never back",
      start: raft3,
      frames: [ev('entry_replicated', 'n2', { index: 7 }), ev('entry_replicated', 'n2', { index: 5 })],
      check: (m) => {
        t.equal(m.nodes['n2']!.lastApplied, 7);
        t.equal(m.nodes['n2']!.commitIndex, 7);
      },
    },
    {
      name: "follower lag is taken from the leader's report",
      start: raft3,
      frames: [ev('follower_lag', 'n3', { leader: 'n1', lag_entries: 4, lag_ms: 20 })],
      check: (m) => t.equal(m.nodes['n3']!.lag, 4),
    },
    {
      name: 'activity events change nothing but the count',
      start: raft3,
      frames: [ev('write_received', 'n1', { key: 'k', op: 'write' })],
      check: (m) => {
        t.equal(m.eventsApplied, 1);
        t.same(m.nodes, raft3().nodes);
      },
    },
  ];
  for (const c of cases) {
    t.test(c.name, async () => {
      let m = c.start();
      for (const f of c.frames) m = applyEvent(m, f).model;
      c.check(m);
    });
  }
});

t.test('a seq gap asks for a resync; consecutive seqs do not', async (t) => {
  const m = raft3();
  const first = applyEvent(m, ev('write_received', 'n1', {}, 10));
  t.equal(first.resync, null, 'the first event after a snapshot sets the count');
  t.equal(first.model.lastSeq, 10);
  const next = applyEvent(first.model, ev('write_received', 'n1', {}, 11));
  t.equal(next.resync, null);
  const gap = applyEvent(next.model, ev('node_state_changed', 'n2', { state: 'paused' }, 14));
  t.equal(gap.resync, 'lost_events');
  t.equal(gap.model.nodes['n2']!.state, 'paused', 'the event past the gap is still applied');
  t.equal(
    applyEvent(gap.model, ev('write_received', 'n1', {}, 14)).resync,
    'lost_events',
    'a repeated seq is a gap too',
  );
});

t.test('events that say less than happened ask for the state', async (t) => {
  const m = raft3();
  t.equal(applyEvent(m, ev('leader_elected', 'n2', { term: 3 })).resync, 'incomplete', 'raft roles after an election');
  t.equal(applyEvent(m, ev('membership_changed', undefined, { voters: ['n1', 'n2'] })).resync, 'incomplete');
  t.equal(applyEvent(m, ev('node_state_changed', 'n2', { state: 'online', reason: 'restarted' })).resync, 'incomplete');
  t.equal(applyEvent(m, ev('node_state_changed', 'n2', { state: 'paused' })).resync, null);
});

t.test('a snapshot keeps nodes the page knew as removed and takes the rest from the state', async (t) => {
  const before = raft3();
  const after = fromState(
    state('raft', [node('n1', 'follower'), node('n2', 'leader', 'online', { commit_index: 9 })], { leader_id: 'n2' }),
    before,
  );
  t.same(after.nodeIds, ['n1', 'n2', 'n3']);
  t.equal(nodeLabel(after.nodes['n3']!), 'n3 follower removed');
  t.equal(after.nodes['n2']!.commitIndex, 9);
  t.equal(after.leaderId, 'n2');
  t.equal(after.lastSeq, null, 'a snapshot carries no seq');
});

t.test('partition requests isolate the selection from the other live nodes', async (t) => {
  const m = applyEvent(raft3(), ev('node_state_changed', 'n3', { state: 'offline', reason: 'removed' })).model;
  const cases: Array<{ name: string; selected: string[]; want: unknown }> = [
    {
      name: 'one node against the rest',
      selected: ['n1'],
      want: { ok: true, body: { group_a: ['n1'], group_b: ['n2'] } },
    },
    {
      name: 'removed nodes are on neither side',
      selected: ['n2', 'n3'],
      want: { ok: true, body: { group_a: ['n2'], group_b: ['n1'] } },
    },
    { name: 'nothing selected', selected: [], want: { ok: false } },
    { name: 'everything selected', selected: ['n1', 'n2'], want: { ok: false } },
  ];
  for (const c of cases) t.match(partitionRequest(m, c.selected), c.want, c.name);
});

t.test('the book', async (t) => {
  t.test('a cluster_created frame adds the cluster at once and asks for its state', async (t) => {
    const book = new ClusterBook();
    const actions = book.applyFrame({
      type: 'cluster_created',
      cluster_id: 'c9',
      seq: 1,
      data: { strategy: 'raft', node_ids: ['n1', 'n2'] },
    });
    t.same(actions, [{ kind: 'resync', clusterId: 'c9', reason: 'unknown_cluster' }]);
    t.same(book.get('c9')?.nodeIds, ['n1', 'n2']);
    t.equal(book.get('c9')?.strategy, 'raft');
  });

  t.test('events_dropped asks for one cluster, or for all of them', async (t) => {
    const book = new ClusterBook();
    t.same(book.applyFrame({ type: 'events_dropped', cluster_id: cid, seq: 40, data: { count: 3 } }), [
      { kind: 'resync', clusterId: cid, reason: 'lost_events' },
    ]);
    t.same(book.applyFrame({ type: 'events_dropped', data: { count: 3, last_seq: { [cid]: 40 } } }), [
      { kind: 'resync_all' },
    ]);
  });

  t.test('frames during a resync are kept and replayed on the snapshot, with no second fetch', async (t) => {
    const book = new ClusterBook();
    book.finishResyncAll([state('raft', [node('n1', 'leader'), node('n2', 'follower')], { leader_id: 'n1' })]);
    book.beginResync(cid);
    t.same(book.applyFrame(ev('node_state_changed', 'n2', { state: 'paused' }, 50)), [], 'buffered, not applied');
    t.same(book.applyFrame(ev('write_received', 'n1', {}, 60)), [], 'even past a gap: the fetch is already running');
    t.equal(book.get(cid)?.nodes['n2']?.state, 'online', 'not applied before the snapshot');
    // The snapshot was taken before the pause took effect: the replay brings the pause back.
    book.finishResync(cid, state('raft', [node('n1', 'leader'), node('n2', 'follower')], { leader_id: 'n1' }));
    t.equal(book.get(cid)?.nodes['n2']?.state, 'paused');
    t.equal(book.get(cid)?.lastSeq, 60);
  });

  t.test('a cluster whose state is gone is dropped', async (t) => {
    const book = new ClusterBook();
    book.finishResyncAll([state('raft', [node('n1', 'leader')])]);
    book.beginResync(cid);
    book.finishResync(cid, null);
    t.equal(book.get(cid), undefined);
  });

  t.test('the list replaces every cluster and replays what arrived while it was fetched', async (t) => {
    const book = new ClusterBook();
    book.finishResyncAll([
      state('raft', [node('n1', 'leader')]),
      { ...state('raft', [node('n1', 'leader')]), id: 'old' },
    ]);
    book.beginResyncAll();
    t.same(
      book.applyFrame({
        type: 'cluster_created',
        cluster_id: 'new',
        seq: 1,
        data: { strategy: 'leaderless', node_ids: ['n1'] },
      }),
      [],
    );
    t.same(book.applyFrame(ev('node_crashed', 'n1', {}, 5)), []);
    book.finishResyncAll([state('raft', [node('n1', 'leader')])]);
    t.same([...book.clusters().keys()].sort(), [cid, 'new'], 'the deleted cluster is gone, the new one kept');
    t.equal(book.get(cid)?.nodes['n1']?.state, 'crashed');
  });

  t.test('events of an unknown cluster ask for it once', async (t) => {
    const book = new ClusterBook();
    t.same(book.applyFrame({ type: 'write_received', cluster_id: 'x', seq: 3 }), [
      { kind: 'resync', clusterId: 'x', reason: 'unknown_cluster' },
    ]);
    book.beginResync('x');
    t.same(book.applyFrame({ type: 'write_received', cluster_id: 'x', seq: 4 }), [], 'already being fetched');
  });

  t.test(
    'the buffer of a resync is bounded: at the bound all frames are kept, past it the state is fetched again',
    async (t) => {
      const max = ClusterBook.bufferedFramesMax;
      const run = (frames: number) => {
        const book = new ClusterBook();
        book.finishResyncAll([state('raft', [node('n1', 'leader'), node('n2', 'follower')])]);
        book.beginResync(cid);
        for (let i = 1; i <= frames; i++) {
          book.applyFrame(
            i === 1 ? ev('node_state_changed', 'n2', { state: 'paused' }, i) : ev('write_received', 'n1', {}, i),
          );
        }
        const actions = book.finishResync(cid, state('raft', [node('n1', 'leader'), node('n2', 'follower')]));
        return { actions, model: book.get(cid) };
      };
      const at = run(max);
      t.same(at.actions, [], 'exactly bufferedFramesMax frames: no second fetch');
      t.equal(at.model?.nodes['n2']?.state, 'paused', 'the first frame was kept and replayed');
      t.equal(at.model?.lastSeq, max);
      const past = run(max + 1);
      t.same(
        past.actions,
        [{ kind: 'resync', clusterId: cid, reason: 'lost_events' }],
        'one more: frames were cut, fetch again',
      );
      t.equal(past.model?.nodes['n2']?.state, 'online', 'the cut frame was not replayed');
      t.equal(past.model?.lastSeq, max + 1, 'the frames after the cut were');
    },
  );

  t.test('a snapshot sets the seq and the links, and only frames past its seq are replayed', async (t) => {
    const book = new ClusterBook();
    book.finishResyncAll([state('raft', [node('n1', 'leader'), node('n2', 'follower')])]);
    book.beginResync(cid);
    book.applyFrame(ev('node_state_changed', 'n2', { state: 'paused' }, 30));
    book.applyFrame(ev('node_state_changed', 'n2', { state: 'online' }, 31));
    book.applyFrame(ev('node_crashed', 'n1', {}, 32));
    const snap = {
      cluster_id: cid,
      seq: 31,
      state: state('raft', [node('n1', 'leader'), node('n2', 'follower', 'online')]),
      links: [
        { from: 'n1', to: 'n2', latency_ms: 40, drop_rate: 0 },
        { from: 'n2', to: 'n1', latency_ms: 0, drop_rate: 0.5 },
        { from: 'n1', to: 'n1', latency_ms: 0, drop_rate: 0 },
      ],
    };
    t.same(book.finishResync(cid, snap), []);
    const m = book.get(cid)!;
    t.equal(m.nodes['n2']!.state, 'online', 'frames up to the snapshot seq are already in it');
    t.equal(m.nodes['n1']!.state, 'crashed', 'the frame past it is applied');
    t.equal(m.lastSeq, 32);
    t.same(
      m.links,
      { 'n1 n2': { latencyMs: 40, dropRate: 0 }, 'n2 n1': { latencyMs: 0, dropRate: 0.5 } },
      'only links with a setting',
    );
    t.equal(applyEvent(m, ev('write_received', 'n1', {}, 33)).resync, null, 'the next live frame continues the count');
    t.equal(applyEvent(m, ev('write_received', 'n1', {}, 35)).resync, 'lost_events');
  });

  t.test(
    'a snapshot keeps the partitions and links objects while they are the same (the links redraw on change only)',
    async (t) => {
      const book = new ClusterBook();
      const part = { p1: { id: 'p1', group_a: { n1: true }, group_b: { n2: true } } };
      const snap = (commit: number, latency: number) => ({
        cluster_id: cid,
        seq: 40 + commit,
        state: state('raft', [node('n1', 'leader', 'online', { commit_index: commit }), node('n2', 'follower')], {
          partitions: part,
        }),
        links: [{ from: 'n1', to: 'n2', latency_ms: latency, drop_rate: 0 }],
      });
      book.finishResyncAll([state('raft', [node('n1', 'leader'), node('n2', 'follower')])]);
      book.beginResync(cid);
      book.finishResync(cid, snap(1, 40));
      const first = book.get(cid)!;
      book.beginResync(cid);
      book.finishResync(cid, snap(2, 40));
      const second = book.get(cid)!;
      t.not(second, first, 'a commit index moved: a new model');
      t.equal(second.partitions, first.partitions, 'the same partitions: the same object');
      t.equal(second.links, first.links, 'the same link settings: the same object');
      book.beginResync(cid);
      book.finishResync(cid, snap(3, 50));
      const third = book.get(cid)!;
      t.not(third.links, second.links, 'a latency changed: a new links object');
      t.same(third.links, { 'n1 n2': { latencyMs: 50, dropRate: 0 } });
      t.equal(third.partitions, second.partitions);
    },
  );

  t.test('a snapshot that changes nothing leaves the model and the version alone', async (t) => {
    const book = new ClusterBook();
    const st = state('raft', [node('n1', 'leader'), node('n2', 'follower')], { leader_id: 'n1' });
    book.finishResyncAll([st]);
    const before = book.get(cid);
    const v = book.version;
    book.beginResync(cid);
    book.finishResync(cid, st);
    t.equal(book.get(cid), before, 'the same object');
    t.equal(book.version, v, 'no change to draw');
    book.beginResync(cid);
    book.finishResync(cid, state('raft', [node('n1', 'leader'), node('n2', 'candidate')], { leader_id: 'n1' }));
    t.equal(book.get(cid)?.nodes['n2']?.role, 'candidate', 'a role that changed without an event is picked up');
    t.equal(book.version, v + 1);
  });

  t.test('the version moves on every change and only then', async (t) => {
    const book = new ClusterBook();
    book.finishResyncAll([state('raft', [node('n1', 'leader'), node('n2', 'follower')])]);
    const v = book.version;
    book.applyFrame(ev('node_state_changed', 'n2', { state: 'paused' }, 1));
    t.equal(book.version, v + 1);
    book.applyFrame({ type: 'events_dropped', cluster_id: cid, data: { count: 1 } });
    t.equal(book.version, v + 1);
  });
});
