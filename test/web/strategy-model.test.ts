// The per-strategy views' rules (web/replication/strategy-model.ts) without a browser: raft votes
// and terms, the page's MD5 ring against the server's (src/replication/dynamo/ring.ts), sloppy
// quorum stand-ins, phi, conflicts by key, vector clocks as written, and clock skew badges, plus
// the raft term and vote carried from GET .../state into the page's model.
import t from 'tap';
import { createHash } from 'node:crypto';
import { HashRing, ringPosition as serverRingPosition } from '../../src/replication/dynamo/ring.js';
import { toNodeStatus } from '../../src/replication/cluster/views.js';
import type { NodeHandle } from '../../src/replication/node-handle.js';
import { fromState, sameCluster, type ClusterStateWire, type NodeView } from '../../web/replication/model.js';
import {
  byNodeId,
  conflictsByKey,
  currentSkews,
  drawnTokens,
  md5,
  parseConflicts,
  parseSkew,
  parseSuspicion,
  phiText,
  raftBadge,
  raftElection,
  ringPosition,
  ringTicksMax,
  ringTokens,
  skewBadge,
  skewInputMaxMs,
  skewOfFrame,
  sloppyQuorum,
  vclockRows,
  vclockKeysShownMax,
  mergeVoteTraffic,
  voteAskText,
  voteNamesShownMax,
  voteTraffic,
  vclockText,
} from '../../web/replication/strategy-model.js';

function nv(id: string, role: string, patch: Partial<NodeView> = {}): NodeView {
  return {
    id,
    role,
    state: 'online',
    removed: false,
    commitIndex: 0,
    lastApplied: 0,
    lag: 0,
    leaderId: '',
    staleLeader: false,
    ...patch,
  };
}

t.test('raftElection: votes of the newest term, candidates, tally, under way', async (t) => {
  const cases: Array<{ name: string; nodes: NodeView[]; term: number | null; votes: string[]; underWay: boolean }> = [
    { name: 'no raft fields', nodes: [nv('n1', 'replica')], term: null, votes: [], underWay: false },
    {
      name: 'a settled leader',
      nodes: [
        nv('n1', 'leader', { term: 2, votedFor: 'n1' }),
        nv('n2', 'follower', { term: 2, votedFor: 'n1' }),
        nv('n3', 'follower', { term: 1, votedFor: 'n3' }),
      ],
      term: 2,
      votes: ['n1>n1', 'n2>n1'],
      underWay: false,
    },
    {
      name: 'a candidate with no leader of its term',
      nodes: [
        nv('n1', 'leader', { term: 2, state: 'paused' }),
        nv('n2', 'candidate', { term: 3, votedFor: 'n2' }),
        nv('n3', 'follower', { term: 3, votedFor: 'n2' }),
      ],
      term: 3,
      votes: ['n2>n2', 'n3>n2'],
      underWay: true,
    },
    {
      name: 'a pre-candidate still holding its vote for the lost leader: no vote for one standing yet',
      nodes: [
        nv('n1', 'leader', { term: 1, votedFor: 'n1', state: 'paused' }),
        nv('n2', 'candidate', { term: 1, votedFor: 'n1' }),
      ],
      term: 1,
      votes: [],
      underWay: true,
    },
    {
      name: 'removed nodes and empty votes do not count',
      nodes: [nv('n1', 'candidate', { term: 9, removed: true }), nv('n2', 'follower', { term: 4, votedFor: '' })],
      term: 4,
      votes: [],
      underWay: false,
    },
  ];
  for (const c of cases) {
    const e = raftElection(c.nodes);
    t.equal(e.term, c.term, `${c.name}: term`);
    t.same(
      e.votes.map((v) => `${v.from}>${v.to}`),
      c.votes,
      `${c.name}: votes`,
    );
    t.equal(e.underWay, c.underWay, `${c.name}: under way`);
  }
  const e = raftElection([
    nv('n1', 'candidate', { term: 5, votedFor: 'n1' }),
    nv('n2', 'candidate', { term: 5, votedFor: 'n2' }),
    nv('n3', 'follower', { term: 5, votedFor: 'n2' }),
  ]);
  t.same(e.tally, [
    { node: 'n2', votes: 2 },
    { node: 'n1', votes: 1 },
  ]);
  t.same(e.candidates, ['n1', 'n2']);
  t.equal(
    raftBadge(nv('n1', 'follower', { term: 3, commitIndex: 7, votedFor: 'n2' })),
    'term 3 · commit 7 · voted for n2',
  );
  t.equal(raftBadge(nv('n1', 'follower', { commitIndex: 1 })), 'term ? · commit 1');
});

t.test('vote traffic from link_stats: who asks, who answers, merged over an election', async (t) => {
  const l = (from: string, to: string, by_type: Record<string, number>) => ({ from, to, by_type });
  const cases: Array<{ name: string; links: Array<ReturnType<typeof l>>; want: string[] }> = [
    {
      name: 'no vote message: nothing',
      links: [l('n1', 'n2', { append: 3 }), l('n2', 'n1', { append_resp: 3 })],
      want: [],
    },
    {
      name: 'a candidate asking three, two answering',
      links: [
        l('n3', 'n1', { vote_req: 1 }),
        l('n3', 'n2', { vote_req: 1 }),
        l('n3', 'n10', { vote_req: 1, append: 2 }),
        l('n10', 'n3', { vote_resp: 1 }),
        l('n1', 'n3', { vote_resp: 2 }),
      ],
      want: ['n3 asked 3 nodes for votes; answers from n1, n10 (2)'],
    },
    {
      name: 'a split vote: two candidates, in node order',
      links: [l('n5', 'n4', { vote_req: 1 }), l('n2', 'n1', { vote_req: 1 }), l('n1', 'n2', { vote_resp: 1 })],
      want: ['n2 asked 1 node for votes; answers from n1 (1)', 'n5 asked 1 node for votes; no answer yet'],
    },
    { name: 'zero counts are no traffic', links: [l('n1', 'n2', { vote_req: 0, vote_resp: 0 })], want: [] },
  ];
  for (const c of cases) t.same(voteTraffic(c.links).map(voteAskText), c.want, c.name);
  const first = voteTraffic([l('n3', 'n1', { vote_req: 1 }), l('n3', 'n2', { vote_req: 1 })]);
  const later = voteTraffic([
    l('n1', 'n3', { vote_resp: 1 }),
    l('n2', 'n3', { vote_resp: 1 }),
    l('n4', 'n2', { vote_req: 1 }),
  ]);
  t.same(
    mergeVoteTraffic(first, later).map(voteAskText),
    ['n3 asked 2 nodes for votes; answers from n1, n2 (2)', 'n4 asked 1 node for votes; no answer yet'],
    'answers of a later interval join the requests of an earlier one',
  );
  const many = Array.from({ length: voteNamesShownMax + 2 }, (_, i) => l(`n${i + 2}`, 'n1', { vote_resp: 1 }));
  t.match(voteAskText(voteTraffic(many)[0]!), / and 2 more \(14\)$/, 'past voteNamesShownMax names, the rest counted');
  const exact = many.slice(0, voteNamesShownMax);
  t.notMatch(voteAskText(voteTraffic(exact)[0]!), /more/, 'exactly voteNamesShownMax names: all listed');
});

t.test('the page model carries the raft term and vote from the state, and sees them change', async (t) => {
  const wire = (term: number | undefined): ClusterStateWire => ({
    id: 'c',
    config: { strategy: 'raft' },
    node_ids: ['n1'],
    nodes: {
      n1: {
        id: 'n1',
        role: 'follower',
        state: 'online',
        commit_index: 1,
        last_applied: 1,
        leader_id: '',
        lag: 0,
        ...(term !== undefined ? { term, voted_for: 'n1' } : {}),
      },
    },
    partitions: {},
    created: 'x',
  });
  const a = fromState(wire(undefined));
  const b = fromState(wire(2));
  t.equal(b.nodes['n1']?.term, 2);
  t.equal(b.nodes['n1']?.votedFor, 'n1');
  t.equal(a.nodes['n1']?.term, undefined, 'absent for a status without one');
  t.notOk(sameCluster(a, b), 'a term appearing is a change');
  t.notOk(sameCluster(b, a), 'and disappearing');
  t.notOk(sameCluster(b, fromState(wire(3))), 'a new term is a change');
  t.ok(sameCluster(b, fromState(wire(2))));
});

t.test('the server node status carries a raft term and vote, and nothing of the kind for the others', async (t) => {
  const handle = { id: 'n2' } as NodeHandle;
  const base = { role: 'follower', commit_index: 3, last_applied: 3, leader_id: 'n1' as const, lag: 0 };
  const cluster = { id: 'c', shown: 'online' as const, nodeIds: ['n1', 'n2'] };
  const cases: Array<{ name: string; status: Parameters<typeof toNodeStatus>[1]; term?: number; vote?: string }> = [
    {
      name: 'raft after voting',
      status: { ...base, term: 4, extra: { voted_for: 'n1' } },
      term: 4,
      vote: 'n1',
    },
    { name: 'raft before voting', status: { ...base, term: 1, extra: { voted_for: '' } }, term: 1, vote: '' },
    { name: 'leaderless', status: { ...base, role: 'replica', leader_id: '', extra: { keys: 0 } } },
    { name: 'a malformed vote is left out', status: { ...base, term: 2, extra: { voted_for: 7 } }, term: 2 },
  ];
  for (const c of cases) {
    const s = toNodeStatus(handle, c.status, undefined, { ...cluster, strategy: 'raft' });
    t.equal(s.term, c.term, `${c.name}: term`);
    t.equal(s.voted_for, c.vote, `${c.name}: voted_for`);
    t.equal('term' in s, c.term !== undefined, `${c.name}: term present only when known`);
  }
});

t.test('md5 and ring positions equal the server ring (node:crypto MD5)', async (t) => {
  const samples = [
    '',
    'a',
    'abc',
    'n1#vnode0',
    'x'.repeat(55),
    'x'.repeat(56),
    'x'.repeat(64),
    'héllo ✓',
    'y'.repeat(300),
  ];
  for (const s of samples) {
    t.equal(Buffer.from(md5(s)).toString('hex'), createHash('md5').update(s).digest('hex'), `md5 of ${s.length} chars`);
    t.equal(ringPosition(s), serverRingPosition(s), `position of ${s.slice(0, 12)}`);
  }
  // The full walk (preference list then stand-ins) from the page's tokens equals the server's.
  const members = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const tokens = ringTokens(members);
  t.equal(tokens.length, 5 * 128);
  const ring = new HashRing(members);
  for (const key of ['k', 'user:1', 'a-much-longer-key-0001']) {
    const pos = ringPosition(key);
    let start = tokens.findIndex((tk) => tk.pos >= pos);
    if (start < 0) start = 0;
    const walk: string[] = [];
    for (let k = 0; k < tokens.length && walk.length < members.length; k++) {
      const node = (tokens[(start + k) % tokens.length] as { node: string }).node;
      if (!walk.includes(node)) walk.push(node);
    }
    t.same(walk, ring.walk(key), `walk of ${key}`);
  }
});

t.test('drawnTokens: every member drawn, at most ringTicksMax ticks', async (t) => {
  for (const n of [1, 3, 8, 64]) {
    const members = Array.from({ length: n }, (_, i) => `n${i + 1}`);
    const d = drawnTokens(members);
    t.ok(d.length <= ringTicksMax, `${n} nodes: ${d.length} ticks`);
    t.equal(new Set(d.map((x) => x.node)).size, n, `${n} nodes: each has ticks`);
  }
  t.same(drawnTokens([]), []);
});

t.test('sloppyQuorum: stand-ins for unavailable preferred replicas', async (t) => {
  const walk = ['n3', 'n1', 'n5', 'n2', 'n4'];
  const cases: Array<{ down: string[]; sloppy: boolean; standIns: string[]; uncovered: string[] }> = [
    { down: [], sloppy: true, standIns: [], uncovered: [] },
    { down: ['n1'], sloppy: true, standIns: ['n1>n2'], uncovered: [] },
    { down: ['n1', 'n2'], sloppy: true, standIns: ['n1>n4'], uncovered: [] },
    { down: ['n1', 'n3'], sloppy: true, standIns: ['n3>n2', 'n1>n4'], uncovered: [] },
    { down: ['n1', 'n3', 'n5'], sloppy: true, standIns: ['n3>n2', 'n1>n4'], uncovered: ['n5'] },
    { down: ['n1'], sloppy: false, standIns: [], uncovered: ['n1'] },
  ];
  for (const c of cases) {
    const q = sloppyQuorum(walk, 3, new Set(c.down), c.sloppy);
    t.same(q.preferred, ['n3', 'n1', 'n5']);
    t.same(
      q.standIns.map((s) => `${s.for}>${s.by}`),
      c.standIns,
      `down ${c.down.join(',') || 'none'}${c.sloppy ? '' : ' strict'}`,
    );
    t.same(q.uncovered, c.uncovered);
  }
});

t.test('parseSuspicion and phiText', async (t) => {
  t.equal(parseSuspicion(null), null);
  t.equal(parseSuspicion({ nodes: {} }), null, 'no threshold');
  const s = parseSuspicion({
    threshold: 8,
    nodes: { n1: { phi: 0.25, suspected: false }, n2: { phi: null, suspected: true }, n3: 4 },
  });
  t.same(s?.nodes['n1'], { phi: 0.25, suspected: false });
  t.equal(s?.nodes['n2']?.phi, Number.POSITIVE_INFINITY);
  t.equal(s?.nodes['n3'], undefined, 'a malformed entry is skipped');
  t.equal(phiText(0.25), '0.3');
  t.equal(phiText(Number.POSITIVE_INFINITY), '∞');
});

t.test('vector clocks as written, and per key rows', async (t) => {
  t.equal(vclockText({ n2: 1, n10: 4, n1: 3, n3: 0 }), 'n1:3 n2:1 n10:4');
  t.equal(vclockText({}), '');
  t.equal(vclockText(undefined), '');
  const stores = new Map([
    ['n1', { k: { vclock: { n1: 2, n2: 1 } }, a: { vclock: { n1: 1 } } }],
    ['n2', { k: { vclock: { n2: 1 } } }],
  ]);
  t.same(vclockRows(stores), [
    { key: 'a', clocks: { n1: 'n1:1' } },
    { key: 'k', clocks: { n1: 'n1:2 n2:1', n2: 'n2:1' } },
  ]);
  const many = new Map([
    ['n1', Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, { vclock: { n1: 1 } }]))],
  ]);
  t.equal(vclockRows(many).length, vclockKeysShownMax, 'at most vclockKeysShownMax keys');
});

t.test('conflicts: parsed, grouped by key with a node per value', async (t) => {
  t.same(parseConflicts(null), []);
  t.same(parseConflicts({ conflicts: 'x' }), []);
  const list = parseConflicts({
    conflicts: [
      { node_id: 'n1', key: 'k', local_value: 'v-n1', remote_value: 'v-n2' },
      { node_id: 'n2', key: 'k', local_value: 'v-n2', remote_value: 'v-n1' },
      { node_id: 'n3', key: 'k', local_value: 'v-n2', remote_value: 'v-n1' },
      { node_id: 'n3', key: 'b', local_value: 'x', remote_value: 'y' },
      { node_id: 'n3', key: 7 },
    ],
  });
  t.equal(list.length, 4, 'the malformed entry is dropped');
  t.same(conflictsByKey(list), [
    { key: 'b', choices: [{ value: 'x', node: 'n3' }], nodes: ['n3'] },
    {
      key: 'k',
      choices: [
        { value: 'v-n1', node: 'n1' },
        { value: 'v-n2', node: 'n2' },
      ],
      nodes: ['n1', 'n2', 'n3'],
    },
  ]);
});

t.test('clock skew: badges, events, history faults, the input', async (t) => {
  t.equal(skewBadge(500), '+500 ms');
  t.equal(skewBadge(-20), '-20 ms');
  t.equal(skewBadge(0), '');
  t.equal(skewBadge(undefined), '');
  t.same(skewOfFrame({ type: 'clock_skew_set', node_id: 'n2', data: { skew_ms: 500 } }), { node: 'n2', ms: 500 });
  t.equal(skewOfFrame({ type: 'clock_skew_set', node_id: 'n2', data: {} }), null);
  t.equal(skewOfFrame({ type: 'leader_elected', node_id: 'n2' }), null);
  const faults = [
    { kind: 'clock_skew', node: 'n1', value: 100, end_ms: 5 },
    { kind: 'clock_skew', node: 'n2', value: 300, end_ms: null },
    { kind: 'partition' },
  ];
  t.same([...currentSkews(faults, new Map())], [['n2', 300]], 'only open skews');
  t.same(
    [...currentSkews(faults, new Map([['n3', -50]]))].sort(),
    [
      ['n2', 300],
      ['n3', -50],
    ],
    'events add',
  );
  t.same([...currentSkews(faults, new Map([['n2', 0]]))], [], 'an event back to 0 clears');
  const cases: Array<[string, number | null]> = [
    ['500', 500],
    ['-20', -20],
    ['+7', 7],
    [String(skewInputMaxMs), skewInputMaxMs],
    [String(skewInputMaxMs + 1), null],
    ['1.5', null],
    ['', null],
    ['abc', null],
  ];
  for (const [text, want] of cases) {
    const r = parseSkew(text);
    t.equal(r.ok ? r.ms : null, want, `parseSkew(${JSON.stringify(text)})`);
  }
});

t.test('byNodeId orders ids as the numeric collator does, n<digits> by number without it', async (t) => {
  const collator = new Intl.Collator('en', { numeric: true });
  const ids = ['n1', 'n2', 'n9', 'n10', 'n11', 'n64', 'n100', 'n01', 'n0', 'n', 'node-3', 'm5', 'n10a', 'N3', 'a'];
  for (const a of ids)
    for (const b of ids) t.equal(Math.sign(byNodeId(a, b)), Math.sign(collator.compare(a, b)), `${a} against ${b}`);
  t.same(['n10', 'n2', 'n1', 'n64', 'n9'].sort(byNodeId), ['n1', 'n2', 'n9', 'n10', 'n64']);
});
