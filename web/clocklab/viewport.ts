/**
 * Virtualised drawing of the space-time diagram: which rows, events and messages fall inside the
 * visible window for a scroll position and zoom, found by binary search per lane, so a 20 × 5,000
 * run costs what one screen costs. Also the zoom and scroll arithmetic. Pure: numbers in, indices
 * out; the diagram component draws them.
 */
import type { DiagramEvent, DiagramMessage, RunModel } from './model.js';

/** Pixels per row at the default zoom, and the bounds of zooming. */
export const rowHeightPxDefault = 28;
export const rowHeightPxMin = 0.02;
export const rowHeightPxMax = 80;
/** Lanes are at least this wide; more lanes than fit scroll sideways. */
export const laneWidthPxMin = 56;
/** Rows drawn beyond each edge of the window, so a short scroll shows no blank band. */
export const overscanRows = 4;
/**
 * Past this many visible events the diagram draws on a canvas, without per-event labels: at 1,500
 * SVG dots a zoom step took 150 ms (p95) in Chromium on this loaded 2-core machine.
 */
export const svgEventsMax = 800;
/** Messages drawn at most in one window on the canvas (the rest are counted). */
export const visibleMessagesMax = 20_000;
/** Messages drawn at most as SVG arrows in one window. */
export const svgMessagesMax = 1_000;

export interface Window {
  rowHeightPx: number;
  scrollTopPx: number;
  heightPx: number;
}

export interface RowRange {
  from: number;
  to: number;
}

export function clampRowHeight(px: number): number {
  return Math.min(rowHeightPxMax, Math.max(rowHeightPxMin, px));
}

/** Rows intersecting the window, overscan included, clipped to the run. */
export function visibleRows(w: Window, totalRows: number): RowRange {
  const from = Math.max(0, Math.floor(w.scrollTopPx / w.rowHeightPx) - overscanRows);
  const to = Math.min(totalRows - 1, Math.ceil((w.scrollTopPx + w.heightPx) / w.rowHeightPx) + overscanRows);
  return { from, to };
}

/** First position in `sorted` (event indices in row order) whose row is ≥ `row`. */
export function lowerBound(events: readonly DiagramEvent[], sorted: readonly number[], row: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((events[sorted[mid] as number] as DiagramEvent).row < row) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Event indices with rows in the range, lane by lane. */
export function visibleEvents(run: RunModel, r: RowRange): number[] {
  const out: number[] = [];
  if (r.to < r.from) return out;
  for (const lane of run.lanes) {
    for (let i = lowerBound(run.events, lane.events, r.from); i < lane.events.length; i++) {
      const idx = lane.events[i] as number;
      if ((run.events[idx] as DiagramEvent).row > r.to) break;
      out.push(idx);
    }
  }
  return out;
}

/** Rows a message's line spans: from its send (or its first known event) to its end (or the run's end). */
export function messageSpan(run: RunModel, m: DiagramMessage): RowRange | undefined {
  const rowOf = (i: number): number | undefined => (i >= 0 ? run.events[i]?.row : undefined);
  const start = rowOf(m.send) ?? rowOf(m.held) ?? rowOf(m.end);
  if (start === undefined) return undefined;
  const end = rowOf(m.end) ?? rowOf(m.held) ?? start + 1;
  return { from: start, to: Math.max(start, end) };
}

/** Messages whose line crosses the range, at most `max` of them, and how many crossed in all. */
export function visibleMessages(
  run: RunModel,
  r: RowRange,
  max = visibleMessagesMax,
): { messages: DiagramMessage[]; total: number } {
  const messages: DiagramMessage[] = [];
  let total = 0;
  for (const m of run.messages.values()) {
    const s = messageSpan(run, m);
    if (!s || s.to < r.from || s.from > r.to) continue;
    total++;
    if (messages.length < max) messages.push(m);
  }
  return { messages, total };
}

/**
 * Zooms by `factor` keeping the row under `anchorPx` (pixels from the window's top) where it is;
 * answers the new row height and scroll position.
 */
export function zoomAt(w: Window, factor: number, anchorPx: number, totalRows: number): Window {
  const rowHeightPx = clampRowHeight(w.rowHeightPx * factor);
  const anchorRow = (w.scrollTopPx + anchorPx) / w.rowHeightPx;
  const maxScroll = Math.max(0, totalRows * rowHeightPx - w.heightPx);
  const scrollTopPx = Math.min(maxScroll, Math.max(0, anchorRow * rowHeightPx - anchorPx));
  return { rowHeightPx, scrollTopPx, heightPx: w.heightPx };
}

/** Lane width filling `widthPx`, never narrower than the minimum. */
export function laneWidth(widthPx: number, lanes: number): number {
  return Math.max(laneWidthPxMin, lanes === 0 ? widthPx : widthPx / lanes);
}
