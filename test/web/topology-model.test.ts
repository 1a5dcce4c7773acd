// The topology's rules (web/replication/topology-model.ts) without a browser: how a link is named
// and drawn, which links of a large (canvas-painted) cluster keep an SVG button, and which link a
// pointer is on when the links are painted (hit-testing), at and past their bounds.
import t from 'tap';
import {
  fromSnapshot,
  type ClusterModel,
  type NodeStatusWire,
  type SnapshotWire,
} from '../../web/replication/model.js';
import {
  layout,
  linkAt,
  linkHitDistance,
  linkLook,
  liveNodes,
  nodeRadius,
  svgLinksNodesMax,
  svgLinksShown,
  svgLinksShownMax,
  viewH,
  viewW,
} from '../../web/replication/topology-model.js';

const node = (id: string, state = 'online'): NodeStatusWire => ({
  id,
  role: id === 'n1' ? 'leader' : 'follower',
  state,
  commit_index: 0,
  last_applied: 0,
  leader_id: 'n1',
  lag: 0,
});

function cluster(
  n: number,
  opts: {
    partitions?: Array<[string[], string[]]>;
    links?: Array<[string, string, number, number]>;
    offline?: string[];
  } = {},
): ClusterModel {
  const ids = Array.from({ length: n }, (_, i) => `n${i + 1}`);
  const snap: SnapshotWire = {
    cluster_id: 'c1',
    seq: 1,
    state: {
      id: 'c1',
      config: { strategy: 'raft' },
      node_ids: ids,
      nodes: Object.fromEntries(ids.map((id) => [id, node(id, opts.offline?.includes(id) ? 'offline' : 'online')])),
      partitions: Object.fromEntries(
        (opts.partitions ?? []).map(([a, b], i) => [
          `p${i + 1}`,
          {
            id: `p${i + 1}`,
            group_a: Object.fromEntries(a.map((x) => [x, true])),
            group_b: Object.fromEntries(b.map((x) => [x, true])),
          },
        ]),
      ),
      created: '2026-01-01T00:00:00.000Z',
    },
    links: (opts.links ?? []).map(([from, to, latency_ms, drop_rate]) => ({ from, to, latency_ms, drop_rate })),
  };
  return fromSnapshot(snap);
}

t.test('a link is named and styled from its partitions and settings', async (t) => {
  const cases: Array<{ name: string; m: ClusterModel; a: string; b: string; label: string; style: string }> = [
    { name: 'a plain link', m: cluster(3), a: 'n1', b: 'n2', label: 'link n1 n2', style: '' },
    {
      name: 'a link across a partition',
      m: cluster(3, { partitions: [[['n1'], ['n2', 'n3']]] }),
      a: 'n1',
      b: 'n2',
      label: 'link n1 n2 partitioned',
      style: 'cut',
    },
    {
      name: 'a link on one side of a partition',
      m: cluster(3, { partitions: [[['n1'], ['n2', 'n3']]] }),
      a: 'n2',
      b: 'n3',
      label: 'link n2 n3',
      style: '',
    },
    {
      name: 'the same setting both ways is written once',
      m: cluster(3, {
        links: [
          ['n1', 'n2', 40, 0.25],
          ['n2', 'n1', 40, 0.25],
        ],
      }),
      a: 'n1',
      b: 'n2',
      label: 'link n1 n2 40 ms, drop 25%',
      style: 'slow lossy',
    },
    {
      name: 'one direction only names it',
      m: cluster(3, { links: [['n2', 'n1', 15, 0]] }),
      a: 'n1',
      b: 'n2',
      label: 'link n1 n2 n2→n1 15 ms',
      style: 'slow',
    },
  ];
  for (const c of cases) {
    const look = linkLook(c.m, c.a, c.b);
    t.equal(look.label, c.label, c.name);
    const style = [look.cut ? 'cut' : '', look.slow ? 'slow' : '', look.lossy ? 'lossy' : '']
      .filter((x) => x !== '')
      .join(' ');
    t.equal(style, c.style, `${c.name}: style`);
  }
});

t.test('a large cluster keeps SVG buttons for the chosen link and the links with settings only', async (t) => {
  t.equal(svgLinksNodesMax, 12, 'links are painted past 12 live nodes');
  const m = cluster(64, {
    links: [
      ['n9', 'n3', 10, 0],
      ['n3', 'n9', 10, 0],
      ['n40', 'n2', 0, 0.5],
    ],
    partitions: [[['n1'], ['n2']]],
  });
  const live = liveNodes(m);
  t.same(
    svgLinksShown(m, live, null),
    [
      ['n2', 'n40'],
      ['n3', 'n9'],
    ],
    'both directions of a pair are one link, in the nodes order; a cut link is painted only',
  );
  t.same(
    svgLinksShown(m, live, ['n64', 'n7']),
    [
      ['n7', 'n64'],
      ['n2', 'n40'],
      ['n3', 'n9'],
    ],
    'the chosen link first',
  );
  t.same(svgLinksShown(m, live, ['n3', 'n9'])[0], ['n3', 'n9'], 'a chosen link with settings is listed once');
  t.equal(svgLinksShown(m, live, ['n3', 'n9']).length, 2);
  // At and past the bound: every pair of n1..n9 with a setting is 36 pairs; 32 are kept.
  const many: Array<[string, string, number, number]> = [];
  for (let i = 1; i <= 9; i++) for (let j = i + 1; j <= 9; j++) many.push([`n${i}`, `n${j}`, 5, 0]);
  const crowded = cluster(64, { links: many });
  t.equal(many.length, 36);
  t.equal(svgLinksShown(crowded, liveNodes(crowded), null).length, svgLinksShownMax, 'at most svgLinksShownMax');
  const exact = cluster(64, { links: many.slice(0, svgLinksShownMax) });
  t.equal(svgLinksShown(exact, liveNodes(exact), null).length, svgLinksShownMax, 'exactly the bound: all kept');
  t.same(svgLinksShown(m, ['n1', 'n2'], ['n1', 'n99']), [], 'a chosen link to a node not live is not drawn');
});

t.test('hit-testing a painted link: the nearest line within reach, nodes excluded', async (t) => {
  // Four nodes at hand-placed points (a regular circle has many lines through one point).
  const pos = new Map([
    ['a', { x: 100, y: 100 }],
    ['b', { x: 300, y: 100 }],
    ['c', { x: 300, y: 300 }],
    ['d', { x: 100, y: 300 }],
  ]);
  const live = ['a', 'b', 'c', 'd'];
  const r = 10;
  const cases: Array<{ name: string; x: number; y: number; want: [string, string] | null }> = [
    { name: 'on the top edge', x: 200, y: 100, want: ['a', 'b'] },
    { name: 'near the right edge', x: 296, y: 200, want: ['b', 'c'] },
    { name: 'on a diagonal, away from the centre', x: 150, y: 150, want: ['a', 'c'] },
    { name: 'closer to the top edge than to the diagonal', x: 130, y: 104, want: ['a', 'b'] },
    { name: 'on a node: the node, not a link', x: 103, y: 98, want: null },
    { name: 'inside, far from every line', x: 200, y: 150, want: null },
    { name: 'outside the nodes: nothing', x: 20, y: 20, want: null },
    { name: 'at the reach from the top edge', x: 200, y: 100 - linkHitDistance, want: ['a', 'b'] },
    { name: 'past the reach from the top edge', x: 200, y: 100 - linkHitDistance - 0.5, want: null },
    { name: 'just outside a node, on its line', x: 100 + r + 1, y: 100, want: ['a', 'b'] },
  ];
  for (const c of cases) t.same(linkAt(pos, live, c.x, c.y, r), c.want, c.name);
  t.same(linkAt(pos, ['a', 'b', 'c'], 100, 250, r), null, 'a node not live draws no link (d is out)');
  t.same(linkAt(pos, live, 200, 100 - 3, r, 2), null, 'a smaller reach, given: past it');

  // The page's own layout of 64 nodes, one removed: a chord's middle hits a link, a node is a node.
  const m = cluster(64, { offline: ['n33'] });
  const ring = liveNodes(m);
  t.notOk(ring.includes('n33'), 'a removed node has no links');
  const at = layout(m.nodeIds);
  const p1 = at.get('n1')!;
  const p17 = at.get('n17')!;
  t.ok(linkAt(at, ring, (p1.x + p17.x) / 2, (p1.y + p17.y) / 2, nodeRadius(64)) !== null, 'a chord is hit');
  t.equal(linkAt(at, ring, at.get('n2')!.x, at.get('n2')!.y, nodeRadius(64)), null, 'a node is not a link');
  t.equal(linkAt(at, ring, viewW - 1, viewH - 1, nodeRadius(64)), null, 'the corner of the view: nothing');
});
