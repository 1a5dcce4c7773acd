/**
 * The topology's geometry and link rules as pure functions: where nodes sit, how each link is drawn
 * (cut, slow, lossy, its note and accessible name), which links get an SVG element of their own in a
 * large cluster (whose links are painted on a canvas), and which link a pointer is on (hit-testing
 * the canvas). No DOM and no signals: topology.tsx draws with these, the unit tests check them.
 */
import { linkCut, linkId, type ClusterModel, type LinkSetting, type NodeView } from './model.js';

export const viewW = 600;
export const viewH = 440;

/**
 * Clusters with at most this many live nodes draw every link as an SVG button (66 links at 12);
 * larger ones paint their links on a canvas (2,016 at 64 nodes) and keep SVG buttons only for the
 * links in svgLinksShown (chosen, or with a latency or drop rate set).
 */
export const svgLinksNodesMax = 12;
/** Links get a place in the tab order only in clusters this small (all pairs would be hundreds of stops). */
export const linksFocusableNodesMax = 8;
/** In a large cluster, links kept as SVG buttons at most (the chosen one first, then those with settings). */
export const svgLinksShownMax = 32;
/** A pointer this close to a link's line (view units) is on it: half the SVG hit stroke's width. */
export const linkHitDistance = 7;

export interface Point {
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

/** The nodes that are still members (links are drawn between these only). */
export function liveNodes(m: ClusterModel): string[] {
  return m.nodeIds.filter((id) => !(m.nodes[id] as NodeView).removed);
}

function faultText(f: LinkSetting | undefined): string {
  if (!f) return '';
  const parts: string[] = [];
  if (f.latencyMs > 0) parts.push(`${f.latencyMs} ms`);
  if (f.dropRate > 0) parts.push(`drop ${Math.round(f.dropRate * 100)}%`);
  return parts.join(', ');
}

/** How the link between `a` and `b` (either direction) is drawn and named. */
export interface LinkLook {
  cut: boolean;
  slow: boolean;
  lossy: boolean;
  /** The visible note (latency, drop rate; per direction when they differ), '' when none. */
  note: string;
  /** The accessible name: `link <a> <b>[ partitioned][ <note>]` (the page contract's tests read it). */
  label: string;
}

export function linkLook(m: ClusterModel, a: string, b: string): LinkLook {
  const fab = m.links[linkId(a, b)];
  const fba = m.links[linkId(b, a)];
  const cut = linkCut(m, a, b);
  const slow = (fab?.latencyMs ?? 0) > 0 || (fba?.latencyMs ?? 0) > 0;
  const lossy = (fab?.dropRate ?? 0) > 0 || (fba?.dropRate ?? 0) > 0;
  const ab = faultText(fab);
  const ba = faultText(fba);
  // The visible note is part of the name (axe: label-content-name-mismatch), so it carries the directions.
  const note =
    ab === ba
      ? ab
      : [ab !== '' ? `${a}→${b} ${ab}` : '', ba !== '' ? `${b}→${a} ${ba}` : ''].filter((x) => x !== '').join('; ');
  const label = `link ${a} ${b}${cut ? ' partitioned' : ''}${note !== '' ? ` ${note}` : ''}`;
  return { cut, slow, lossy, note, label };
}

/**
 * The links of a large cluster that keep an SVG button: the chosen one, then every pair with a
 * latency or drop rate set (in the live order), svgLinksShownMax at most. Pairs as [a, b] in the
 * order of `live` (a before b), as the full drawing names them.
 */
export function svgLinksShown(
  m: ClusterModel,
  live: readonly string[],
  chosen: readonly [string, string] | null,
): Array<[string, string]> {
  const rank = new Map(live.map((id, i) => [id, i]));
  const ordered = (x: string, y: string): [string, string] | null => {
    const i = rank.get(x);
    const j = rank.get(y);
    if (i === undefined || j === undefined || i === j) return null;
    return i < j ? [x, y] : [y, x];
  };
  const out: Array<[string, string]> = [];
  const seen = new Set<string>();
  const add = (p: [string, string] | null): void => {
    if (p === null || out.length >= svgLinksShownMax) return;
    const k = linkId(p[0], p[1]);
    if (seen.has(k)) return;
    seen.add(k);
    out.push(p);
  };
  if (chosen !== null) add(ordered(chosen[0], chosen[1]));
  const set = Object.keys(m.links)
    .map((k) => k.split(' ') as [string, string])
    .map(([x, y]) => ordered(x, y))
    .filter((p): p is [string, string] => p !== null)
    .sort(
      (p, q) =>
        (rank.get(p[0]) as number) - (rank.get(q[0]) as number) ||
        (rank.get(p[1]) as number) - (rank.get(q[1]) as number),
    );
  for (const p of set) add(p);
  return out;
}

/** Squared distance from (x, y) to the segment p-q. */
function segmentDistance2(x: number, y: number, p: Point, q: Point): number {
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  const len2 = dx * dx + dy * dy;
  const t = len2 === 0 ? 0 : Math.max(0, Math.min(1, ((x - p.x) * dx + (y - p.y) * dy) / len2));
  const ex = p.x + t * dx - x;
  const ey = p.y + t * dy - y;
  return ex * ex + ey * ey;
}

/**
 * The link under the point (x, y) in view units: the nearest line within `maxDistance`, or null.
 * A point on a node (within radius `r` of its centre) is the node's, not a link's.
 */
export function linkAt(
  pos: ReadonlyMap<string, Point>,
  live: readonly string[],
  x: number,
  y: number,
  r: number,
  maxDistance = linkHitDistance,
): [string, string] | null {
  for (const id of live) {
    const p = pos.get(id);
    if (p && (p.x - x) ** 2 + (p.y - y) ** 2 <= r * r) return null;
  }
  let best: [string, string] | null = null;
  let bestD = maxDistance * maxDistance;
  for (let i = 0; i < live.length; i++) {
    const a = pos.get(live[i] as string);
    if (!a) continue;
    for (let j = i + 1; j < live.length; j++) {
      const b = pos.get(live[j] as string);
      if (!b) continue;
      const d = segmentDistance2(x, y, a, b);
      if (d <= bestD) {
        bestD = d;
        best = [live[i] as string, live[j] as string];
      }
    }
  }
  return best;
}
