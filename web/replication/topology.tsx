/**
 * The topology of one cluster as SVG: nodes on a circle (role colour, state, selection) and every
 * link between live nodes (cut by a partition, slowed or lossy), each an accessible button. It
 * draws and selects; faults are applied by controls.tsx. Message flow is drawn elsewhere (Canvas).
 */
import type { JSX } from 'preact';
import { useMemo } from 'preact/hooks';
import { linkCut, linkId, nodeLabel, type ClusterModel, type LinkSetting, type NodeView } from './model.js';
import { chosenLink, selectedNodes, selectNode } from './ui-state.js';

/** Links get a place in the tab order only in clusters this small (all pairs would be hundreds of stops). */
export const linksFocusableNodesMax = 8;

export const viewW = 600;
export const viewH = 440;

interface Point {
  x: number;
  y: number;
}

/** Where each node is drawn, in view units (the message flow draws its dots on the same places). */
export function layout(ids: readonly string[]): Map<string, Point> {
  const out = new Map<string, Point>();
  const n = ids.length;
  const r = Math.min(viewW, viewH) / 2 - 50;
  ids.forEach((id, i) => {
    const a = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    out.set(id, { x: viewW / 2 + r * Math.cos(a), y: viewH / 2 + r * Math.sin(a) });
  });
  return out;
}

/** A node's radius in view units for a cluster of `n` nodes. */
export const nodeRadius = (n: number): number => Math.max(12, Math.min(28, 260 / Math.max(n, 1)));

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

export function Topology({
  cluster,
  overlay: Overlay,
}: {
  cluster: ClusterModel;
  overlay?: TopologyOverlay;
}): JSX.Element {
  const ids = cluster.nodeIds;
  const pos = useMemo(() => layout(ids), [ids]);
  const live = ids.filter((id) => !(cluster.nodes[id] as NodeView).removed);
  const liveKey = live.join(' ');
  const nodeR = nodeRadius(ids.length);
  const linkFocusable = live.length <= linksFocusableNodesMax;
  const chosen = chosenLink.value;
  // The links change only with the live nodes, the partitions, the link settings and the choice:
  // kept as the same vnodes otherwise, so the frequent index updates (every replicated entry) do
  // not diff all n(n-1)/2 of them (2016 at 64 nodes) on each redraw.
  const links = useMemo(() => {
    const out: JSX.Element[] = [];
    for (let i = 0; i < live.length; i++) {
      for (let j = i + 1; j < live.length; j++) {
        const a = live[i] as string;
        const b = live[j] as string;
        const fab = cluster.links[linkId(a, b)];
        const fba = cluster.links[linkId(b, a)];
        out.push(
          <Link
            key={`${a}-${b}`}
            a={a}
            b={b}
            pa={pos.get(a) as Point}
            pb={pos.get(b) as Point}
            cut={linkCut(cluster, a, b)}
            fab={fab}
            fba={fba}
            chosen={chosen !== null && chosen[0] === a && chosen[1] === b}
            focusable={linkFocusable}
          />,
        );
      }
    }
    return out;
  }, [liveKey, pos, cluster.links, cluster.partitions, chosen, linkFocusable]);
  const sel = selectedNodes.value;
  return (
    <svg
      class="topology"
      viewBox={`0 0 ${viewW} ${viewH}`}
      role="group"
      aria-label={`Topology of cluster ${cluster.id}`}
    >
      <g>{links}</g>
      <g>
        {ids.map((id) => (
          <Node
            key={id}
            node={cluster.nodes[id] as NodeView}
            p={pos.get(id) as Point}
            r={nodeR}
            selected={sel.includes(id)}
          />
        ))}
      </g>
      {Overlay && <Overlay cluster={cluster} pos={pos} r={nodeR} />}
    </svg>
  );
}

function faultText(f: LinkSetting | undefined): string {
  if (!f) return '';
  const parts: string[] = [];
  if (f.latencyMs > 0) parts.push(`${f.latencyMs} ms`);
  if (f.dropRate > 0) parts.push(`drop ${Math.round(f.dropRate * 100)}%`);
  return parts.join(', ');
}

function Link(props: {
  a: string;
  b: string;
  pa: Point;
  pb: Point;
  cut: boolean;
  fab: LinkSetting | undefined;
  fba: LinkSetting | undefined;
  chosen: boolean;
  focusable: boolean;
}): JSX.Element {
  const { a, b, pa, pb, cut, fab, fba, chosen, focusable } = props;
  const slow = (fab?.latencyMs ?? 0) > 0 || (fba?.latencyMs ?? 0) > 0;
  const lossy = (fab?.dropRate ?? 0) > 0 || (fba?.dropRate ?? 0) > 0;
  const cls = `link${cut ? ' cut' : ''}${slow ? ' slow' : ''}${lossy ? ' lossy' : ''}${chosen ? ' chosen' : ''}`;
  const ab = faultText(fab);
  const ba = faultText(fba);
  // The visible note is part of the name (axe: label-content-name-mismatch), so it carries the directions.
  const note =
    ab === ba
      ? ab
      : [ab !== '' ? `${a}→${b} ${ab}` : '', ba !== '' ? `${b}→${a} ${ba}` : ''].filter((x) => x !== '').join('; ');
  const label = `link ${a} ${b}${cut ? ' partitioned' : ''}${note !== '' ? ` ${note}` : ''}`;
  const open = (): void => {
    chosenLink.value = chosen ? null : [a, b];
  };
  return (
    <g
      class={cls}
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
      <line class="shown" x1={pa.x} y1={pa.y} x2={pb.x} y2={pb.y} />
      <line class="hit" x1={pa.x} y1={pa.y} x2={pb.x} y2={pb.y} />
      {/* A target at the middle: the link's box is never empty (a level line has no height); a click lands here. */}
      <circle class="hit" cx={(pa.x + pb.x) / 2} cy={(pa.y + pb.y) / 2} r={7} />
      {note !== '' && (
        <text x={(pa.x + pb.x) / 2} y={(pa.y + pb.y) / 2 - 4} text-anchor="middle" aria-hidden="true">
          {note}
        </text>
      )}
    </g>
  );
}

function Node({ node, p, r, selected }: { node: NodeView; p: Point; r: number; selected: boolean }): JSX.Element {
  const label = nodeLabel(node);
  const act = (additive: boolean): void => selectNode(node.id, additive);
  const extra = node.removed || node.state === 'offline' ? 'removed' : node.state !== 'online' ? node.state : '';
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
      <circle cx={p.x} cy={p.y} r={r} fill={roleColor(node)} stroke-dasharray={node.removed ? '4 3' : undefined} />
      {/* One text whose words are the label's, in its order (axe: label-content-name-mismatch). */}
      <text x={p.x} y={p.y + 4} text-anchor="middle" aria-hidden="true">
        <tspan class="id">{node.id}</tspan>{' '}
        <tspan x={p.x} dy={r + 10}>
          {node.role}
        </tspan>
        {extra !== '' && (
          <>
            {' '}
            <tspan x={p.x} dy={14}>
              {extra}
            </tspan>
          </>
        )}
      </text>
    </g>
  );
}

export function Legend(): JSX.Element {
  return (
    <p class="legend muted">
      <span>Click a node to select it, shift-click to add one; click a link to set its latency and drop rate.</span>
      <span style={{ color: '#1d4ed8' }}>● leader</span>
      <span style={{ color: '#0f766e' }}>● follower / replica</span>
      <span style={{ color: '#a16207' }}>● candidate</span>
      <span style={{ color: '#475569' }}>● paused, crashed, removed</span>
      <span style={{ color: '#b91c1c' }}>- - partitioned link</span>
    </p>
  );
}
