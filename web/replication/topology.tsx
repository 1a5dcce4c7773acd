/**
 * The topology of one cluster: nodes on a circle as SVG buttons (role colour, state, selection) and
 * the links between live nodes (cut by a partition, slowed or lossy). Up to svgLinksNodesMax live
 * nodes every link is an SVG button; past it (2,016 links at 64 nodes) the links are painted once
 * on a canvas under the SVG, picked by hit-testing a click, and only the chosen link and those with
 * settings keep SVG buttons. It draws and selects; faults are applied by controls.tsx, the message
 * flow is drawn by flow.tsx, the geometry and link rules live in topology-model.ts.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useRef } from 'preact/hooks';
import { linkCut, linkId, nodeLabel, type ClusterModel, type NodeView } from './model.js';
import { pure } from './pure.js';
import {
  layout,
  linkAt,
  linkLook,
  linksFocusableNodesMax,
  liveNodes,
  nodeRadius,
  svgLinksNodesMax,
  svgLinksShown,
  viewH,
  viewW,
  type Point,
} from './topology-model.js';
import { chosenLink, selectedNodes, selectNode } from './ui-state.js';

export { layout, nodeRadius, viewH, viewW } from './topology-model.js';

function roleColor(n: NodeView): string {
  if (n.removed || n.state !== 'online') return '#64748b';
  switch (n.role) {
    case 'leader':
      return n.staleLeader ? '#6d28d9' : '#1d4ed8';
    case 'candidate':
    case 'pre_candidate':
      return '#a16207';
    case 'unknown':
      return '#475569';
    default:
      return '#0f766e';
  }
}

/** Drawn over the nodes in the same view units (strategy-views.tsx: raft votes and terms, clock skew badges). */
export type TopologyOverlay = (props: {
  cluster: ClusterModel;
  pos: ReadonlyMap<string, Point>;
  r: number;
}) => JSX.Element;

const toggleLink = (a: string, b: string): void => {
  const cur = chosenLink.value;
  const same = cur !== null && ((cur[0] === a && cur[1] === b) || (cur[0] === b && cur[1] === a));
  chosenLink.value = same ? null : [a, b];
};

export function Topology({
  cluster,
  overlay: Overlay,
}: {
  cluster: ClusterModel;
  overlay?: TopologyOverlay;
}): JSX.Element {
  const ids = cluster.nodeIds;
  const idsKey = ids.join(' ');
  // Keyed by the ids' text: a snapshot brings a new array of the same ids every second.
  const pos = useMemo(() => layout(ids), [idsKey]);
  const live = useMemo(() => liveNodes(cluster), [cluster.nodes, idsKey]);
  const liveKey = live.join(' ');
  const nodeR = nodeRadius(ids.length);
  const painted = live.length > svgLinksNodesMax;
  const linkFocusable = painted || live.length <= linksFocusableNodesMax;
  const chosen = chosenLink.value;
  // The links change only with the live nodes, the partitions, the link settings and the choice:
  // kept as the same vnodes otherwise, so the frequent index updates (every replicated entry) do
  // not diff them on each redraw.
  const links = useMemo(() => {
    const pairs: Array<[string, string]> = [];
    if (painted) pairs.push(...svgLinksShown(cluster, live, chosen));
    else
      for (let i = 0; i < live.length; i++)
        for (let j = i + 1; j < live.length; j++) pairs.push([live[i] as string, live[j] as string]);
    return pairs.map(([a, b]) => {
      const look = linkLook(cluster, a, b);
      const pa = pos.get(a) as Point;
      const pb = pos.get(b) as Point;
      return (
        <Link
          key={`${a}-${b}`}
          a={a}
          b={b}
          x1={pa.x}
          y1={pa.y}
          x2={pb.x}
          y2={pb.y}
          cls={`link${look.cut ? ' cut' : ''}${look.slow ? ' slow' : ''}${look.lossy ? ' lossy' : ''}`}
          note={look.note}
          label={look.label}
          chosen={chosen !== null && ((chosen[0] === a && chosen[1] === b) || (chosen[0] === b && chosen[1] === a))}
          focusable={linkFocusable}
        />
      );
    });
  }, [liveKey, pos, cluster.links, cluster.partitions, chosen, linkFocusable, painted]);

  const svgRef = useRef<SVGSVGElement>(null);
  /** The painted link under a pointer event, or null (a node's or nothing). */
  const hit = (e: MouseEvent): [string, string] | null => {
    const svg = svgRef.current;
    const target = e.target as Element | null;
    if (!svg || !painted || target?.closest('[role="button"]')) return null;
    const m = svg.getScreenCTM();
    if (!m) return null;
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    return linkAt(pos, live, p.x, p.y, nodeR);
  };

  const sel = selectedNodes.value;
  return (
    <div class="topo-box">
      {painted && <LinkCanvas cluster={cluster} pos={pos} live={live} liveKey={liveKey} chosen={chosen} />}
      <svg
        ref={svgRef}
        class={`topology${painted ? ' painted' : ''}`}
        viewBox={`0 0 ${viewW} ${viewH}`}
        role="group"
        aria-label={`Topology of cluster ${cluster.id}`}
        onClick={
          painted
            ? (e) => {
                const l = hit(e);
                if (l !== null) toggleLink(l[0], l[1]);
              }
            : undefined
        }
        onPointerMove={
          painted
            ? (e) => {
                const on = hit(e) !== null;
                const svg = svgRef.current;
                if (svg && svg.classList.contains('on-link') !== on) svg.classList.toggle('on-link', on);
              }
            : undefined
        }
      >
        {/* The painted links' click target (the canvas under the SVG takes no pointer events). */}
        {painted && <rect class="links-hit" x={0} y={0} width={viewW} height={viewH} />}
        <g>{links}</g>
        <g>
          {ids.map((id) => {
            const n = cluster.nodes[id] as NodeView;
            const p = pos.get(id) as Point;
            return (
              <Node
                key={id}
                id={id}
                label={nodeLabel(n)}
                role={n.role}
                fill={roleColor(n)}
                removed={n.removed}
                extra={n.removed || n.state === 'offline' ? 'removed' : n.state !== 'online' ? n.state : ''}
                x={p.x}
                y={p.y}
                r={nodeR}
                selected={sel.includes(id)}
              />
            );
          })}
        </g>
        {Overlay && <Overlay cluster={cluster} pos={pos} r={nodeR} />}
      </svg>
    </div>
  );
}

/** Link styles as the CSS draws the SVG ones (replication.css, svg.topology .link ...), in paint order. */
const paintedStyles = [
  { name: 'plain', color: '#94a3b8', width: 1.5, dash: [] as number[], alpha: 0.45 },
  { name: 'cut', color: '#b91c1c', width: 1.5, dash: [5, 4], alpha: 1 },
  { name: 'slow', color: '#a16207', width: 3, dash: [], alpha: 1 },
  { name: 'lossy', color: '#7c3aed', width: 1.5, dash: [2, 3], alpha: 1 },
] as const;

/**
 * Every link of a large cluster, painted on a canvas under the SVG: one path per style, redrawn
 * only when the live nodes, partitions, link settings, choice or the box's size change. The canvas
 * itself is not shown (visibility: hidden; it keeps its box, its data-links and data-cut): an image
 * of it is. A shown 2D canvas is copied out again on every frame the page paints, unchanged or not
 * (Chromium, software rendering: about 1 to 2 ms a frame for this one under the moving dots); an
 * image is decoded once per repaint of the links.
 */
function LinkCanvas({
  cluster,
  pos,
  live,
  liveKey,
  chosen,
}: {
  cluster: ClusterModel;
  pos: ReadonlyMap<string, Point>;
  live: readonly string[];
  liveKey: string;
  chosen: readonly [string, string] | null;
}): JSX.Element {
  const ref = useRef<HTMLCanvasElement>(null);
  const imgRef = useRef<HTMLImageElement>(null);
  const paint = useRef<() => void>(() => undefined);
  paint.current = () => {
    const canvas = ref.current;
    const ctx = canvas?.getContext('2d');
    if (!canvas || !ctx) return;
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    const cw = Math.max(1, Math.round(w * dpr));
    const ch = Math.max(1, Math.round(h * dpr));
    if (canvas.width !== cw || canvas.height !== ch) {
      canvas.width = cw;
      canvas.height = ch;
    } else ctx.clearRect(0, 0, cw, ch);
    // The SVG's viewBox mapping (xMidYMid meet), by hand.
    const s = Math.min(w / viewW, h / viewH) * dpr;
    const ox = (cw - viewW * s) / 2;
    const oy = (ch - viewH * s) / 2;
    const buckets: Array<Array<[Point, Point]>> = paintedStyles.map(() => []);
    const partitioned = Object.keys(cluster.partitions).length > 0;
    for (let i = 0; i < live.length; i++) {
      const a = live[i] as string;
      const pa = pos.get(a);
      if (!pa) continue;
      for (let j = i + 1; j < live.length; j++) {
        const b = live[j] as string;
        const pb = pos.get(b);
        if (!pb) continue;
        const fab = cluster.links[linkId(a, b)];
        const fba = cluster.links[linkId(b, a)];
        let k = 0;
        if ((fab?.dropRate ?? 0) > 0 || (fba?.dropRate ?? 0) > 0) k = 3;
        else if ((fab?.latencyMs ?? 0) > 0 || (fba?.latencyMs ?? 0) > 0) k = 2;
        else if (partitioned && linkCut(cluster, a, b)) k = 1;
        (buckets[k] as Array<[Point, Point]>).push([pa, pb]);
      }
    }
    ctx.lineCap = 'butt';
    paintedStyles.forEach((st, k) => {
      const lines = buckets[k] as Array<[Point, Point]>;
      if (lines.length === 0) return;
      ctx.beginPath();
      for (const [p, q] of lines) {
        ctx.moveTo(ox + p.x * s, oy + p.y * s);
        ctx.lineTo(ox + q.x * s, oy + q.y * s);
      }
      ctx.globalAlpha = st.alpha;
      ctx.strokeStyle = st.color;
      ctx.lineWidth = st.width * s;
      ctx.setLineDash(st.dash.map((d) => d * s));
      ctx.stroke();
    });
    ctx.globalAlpha = 1;
    ctx.setLineDash([]);
    canvas.dataset['links'] = String(buckets.reduce((n, b) => n + b.length, 0));
    canvas.dataset['cut'] = String((buckets[1] as unknown[]).length);
    // The page's CSP allows data: images (not blob:).
    const img = imgRef.current;
    if (img) img.src = canvas.toDataURL('image/png');
  };
  useEffect(() => {
    paint.current();
  }, [liveKey, pos, cluster.links, cluster.partitions, chosen]);
  useEffect(() => {
    const canvas = ref.current;
    if (!canvas) return;
    const ro = new ResizeObserver(() => paint.current());
    ro.observe(canvas);
    return () => ro.disconnect();
  }, []);
  return (
    <>
      <canvas ref={ref} class="links" aria-hidden="true" />
      <img ref={imgRef} class="links" alt="" aria-hidden="true" />
    </>
  );
}

const Link = pure(function Link(props: {
  a: string;
  b: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  cls: string;
  note: string;
  label: string;
  chosen: boolean;
  focusable: boolean;
}): JSX.Element {
  const { a, b, x1, y1, x2, y2, cls, note, label, chosen, focusable } = props;
  const open = (): void => toggleLink(a, b);
  return (
    <g
      class={`${cls}${chosen ? ' chosen' : ''}`}
      role="button"
      tabindex={focusable ? 0 : -1}
      aria-label={label}
      aria-pressed={chosen}
      onClick={open}
      onKeyDown={(e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          open();
        }
      }}
    >
      <line class="shown" x1={x1} y1={y1} x2={x2} y2={y2} />
      <line class="hit" x1={x1} y1={y1} x2={x2} y2={y2} />
      {/* A target at the middle: the link's box is never empty (a level line has no height); a click lands here. */}
      <circle class="hit" cx={(x1 + x2) / 2} cy={(y1 + y2) / 2} r={7} />
      {note !== '' && (
        <text x={(x1 + x2) / 2} y={(y1 + y2) / 2 - 4} text-anchor="middle" aria-hidden="true">
          {note}
        </text>
      )}
    </g>
  );
}, 'Link');

/** One node's shape: props are primitives, so a node redraws only when what it shows changes. */
const Node = pure(function Node(props: {
  id: string;
  label: string;
  role: string;
  fill: string;
  removed: boolean;
  extra: string;
  x: number;
  y: number;
  r: number;
  selected: boolean;
}): JSX.Element {
  const { id, label, role, fill, removed, extra, x, y, r, selected } = props;
  const act = (additive: boolean): void => selectNode(id, additive);
  return (
    <g
      class={`node${selected ? ' selected' : ''}`}
      role="button"
      // Lower-case on SVG: Preact sets SVG attributes by name, and `tabIndex` there is not `tabindex`.
      tabindex={0}
      aria-label={label}
      aria-pressed={selected}
      onClick={(e) => act(e.shiftKey)}
      onKeyDown={(e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          act(e.shiftKey);
        }
      }}
    >
      <circle cx={x} cy={y} r={r} fill={fill} stroke-dasharray={removed ? '4 3' : undefined} />
      {/* One text whose words are the label's, in its order (axe: label-content-name-mismatch). */}
      <text x={x} y={y + 4} text-anchor="middle" aria-hidden="true">
        <tspan class="id">{id}</tspan>{' '}
        <tspan x={x} dy={r + 10}>
          {role}
        </tspan>
        {extra !== '' && (
          <>
            {' '}
            <tspan x={x} dy={14}>
              {extra}
            </tspan>
          </>
        )}
      </text>
    </g>
  );
}, 'Node');

export function Legend(): JSX.Element {
  return (
    <p class="legend muted">
      <span>
        Click a node to select it, shift-click to add one; click a link to set its latency and drop rate (or select its
        two nodes and press Open link).
      </span>
      <span style={{ color: '#1d4ed8' }}>● leader</span>
      <span style={{ color: '#0f766e' }}>● follower / replica</span>
      <span style={{ color: '#a16207' }}>● candidate</span>
      <span style={{ color: '#475569' }}>● paused, crashed, removed</span>
      <span style={{ color: '#b91c1c' }}>- - partitioned link</span>
    </p>
  );
}
