/**
 * The space-time diagram: one vertical lane per process, time going down, events as dots, messages
 * as arrows from send to receive (dropped ones ending in a cross, held ones waiting in the lane's
 * hold-back band until delivered), snapshots as cuts. Virtualised: only the rows in the scroll
 * window are drawn (viewport.ts); past svgEventsMax visible events it draws on a canvas instead.
 * Hovering an event highlights its causal past and future and marks concurrent events.
 */
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { type Relation, relationTo } from './causality.js';
import type { Cut, DiagramEvent, DiagramMessage, RunModel } from './model.js';
import { channelFrom, channelTo, pickLane } from './selection.js';
import {
  type RowRange,
  laneWidth,
  messageSpan,
  rowHeightPxDefault,
  svgEventsMax,
  svgMessagesMax,
  visibleEvents,
  visibleMessages,
  visibleMessagesMax,
  visibleRows,
  zoomAt,
} from './viewport.js';

/** Height of the lane labels above the rows. */
export const headerPx = 34;
/** The diagram's visible height. */
export const diagramHeightPx = 560;
/** Zoom step of the buttons and of one wheel notch with Ctrl held. */
export const zoomStep = 1.4;

const px = (n: number): string => `${n}px`;

interface Props {
  run: RunModel;
  version: number;
  /** The cut to emphasise (chosen in the snapshots panel). */
  focusCut?: string | undefined;
}

function eventLabel(e: DiagramEvent): string {
  const detail = e.text.startsWith(e.kind) ? e.text.slice(e.kind.length).trim() : e.text;
  return `event ${e.host} ${e.kind} [${e.clock}]${detail ? ` ${detail}` : ''}`;
}

function cutLabel(c: Cut): string {
  const verdict = c.consistent === undefined ? '' : c.consistent ? ', consistent' : ', inconsistent';
  const bad = c.offending.length > 0 ? ` (offending: ${c.offending.join(', ')})` : '';
  return `snapshot ${c.id} ${c.status}${verdict}${bad}`;
}

export function Diagram({ run, version, focusCut }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [scrollLeft, setScrollLeft] = useState(0);
  const [widthPx, setWidthPx] = useState(900);
  const [rowH, setRowH] = useState(rowHeightPxDefault);
  const [hover, setHover] = useState<number | null>(null);
  const [follow, setFollow] = useState(true);
  const rows = run.rows;
  const lanesN = run.lanes.length;
  const laneW = laneWidth(widthPx, lanesN);
  const contentW = Math.max(widthPx, laneW * lanesN);
  const contentH = headerPx + rows * rowH + rowH;
  const viewH = diagramHeightPx - headerPx;
  const laneX = (lane: number): number => lane * laneW + laneW * 0.35;
  const bandX = (lane: number): number => lane * laneW + laneW * 0.7;
  const rowY = (row: number): number => row * rowH + rowH / 2;

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const measure = (): void => setWidthPx(el.clientWidth);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  // Following the live run: new rows scroll into view unless the user scrolled up.
  useEffect(() => {
    const el = scroller.current;
    if (!el || !follow) return;
    const bottom = Math.max(0, contentH - diagramHeightPx);
    if (el.scrollTop < bottom) el.scrollTop = bottom;
  }, [version, follow, contentH]);

  const range: RowRange = visibleRows({ rowHeightPx: rowH, scrollTopPx: scrollTop, heightPx: viewH }, rows);
  const visible = useMemo(() => visibleEvents(run, range), [run, version, range.from, range.to]);
  const useCanvas = visible.length > svgEventsMax;
  const msgs = useMemo(
    () => visibleMessages(run, range, useCanvas ? visibleMessagesMax : svgMessagesMax),
    [run, version, range.from, range.to, useCanvas],
  );
  const hovered = hover !== null ? run.events[hover] : undefined;
  const rel = (e: DiagramEvent): Relation | undefined =>
    hovered && hovered.causal && e.causal ? relationTo(hovered, e) : undefined;

  // Hover is found from the pointer's position (the nearest drawn event within reach), not from
  // enter/leave on each dot: one handler, and the highlight never flickers as the dots restyle.
  const onPointerMove = (ev: MouseEvent): void => {
    const svg = ev.currentTarget as SVGSVGElement;
    const box = svg.getBoundingClientRect();
    const x = ev.clientX - box.left;
    const y = ev.clientY - box.top - headerPx + scrollTop;
    const reach = Math.max(8, Math.min(6, rowH * 0.3) + 4);
    let best: number | null = null;
    let bestD = reach * reach;
    if (!useCanvas && ev.clientY - box.top > headerPx) {
      for (const i of visible) {
        const e = run.events[i] as DiagramEvent;
        const dx = (e.kind === 'held' ? bandX(e.lane) : laneX(e.lane)) - x;
        const dy = rowY(e.row) - y;
        const d = dx * dx + dy * dy;
        if (d <= bestD) {
          bestD = d;
          best = i;
        }
      }
    }
    if (best !== hover) setHover(best);
  };
  const onScroll = (): void => {
    const el = scroller.current;
    if (!el) return;
    setScrollTop(el.scrollTop);
    setScrollLeft(el.scrollLeft);
    setFollow(el.scrollTop >= contentH - diagramHeightPx - 2);
  };
  const zoom = (factor: number, anchorPx = viewH / 2): void => {
    const el = scroller.current;
    const w = zoomAt({ rowHeightPx: rowH, scrollTopPx: scrollTop, heightPx: viewH }, factor, anchorPx, rows);
    setRowH(w.rowHeightPx);
    setScrollTop(w.scrollTopPx);
    requestAnimationFrame(() => {
      if (el) el.scrollTop = w.scrollTopPx;
    });
  };
  const onWheel = (ev: WheelEvent): void => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    const el = scroller.current;
    const top = el ? el.getBoundingClientRect().top : 0;
    zoom(ev.deltaY < 0 ? zoomStep : 1 / zoomStep, ev.clientY - top - headerPx);
  };

  // Canvas drawing for zoomed-out windows (thousands of events): no labels, same geometry.
  useEffect(() => {
    const c = canvas.current;
    if (!c || !useCanvas) return;
    const ctx = c.getContext('2d');
    if (!ctx) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = Math.round(widthPx * dpr);
    c.height = Math.round(viewH * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, -scrollLeft * dpr, -scrollTop * dpr);
    ctx.clearRect(scrollLeft, scrollTop, widthPx, viewH);
    ctx.strokeStyle = 'rgba(60, 90, 160, 0.35)';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const m of msgs.messages) {
      const s = messageSpan(run, m);
      const from = run.laneIndex(m.from);
      const to = run.laneIndex(m.to);
      if (!s || from === undefined || to === undefined) continue;
      ctx.moveTo(laneX(from), rowY(s.from));
      ctx.lineTo(laneX(to), rowY(s.to));
    }
    ctx.stroke();
    const r = Math.max(1, Math.min(3, rowH * 0.4));
    let lastLane = -1;
    let lastKind = '';
    let lastY = Number.NaN;
    let lastFill = '';
    for (const i of visible) {
      const e = run.events[i] as DiagramEvent;
      const y = Math.round(rowY(e.row));
      // Zoomed out, many rows share a pixel; visibleEvents lists events lane by lane in row order, so
      // a dot where the last one of its kind was drawn is skipped: a draw costs what the window's pixels cost.
      if (e.lane === lastLane && e.kind === lastKind && y === lastY) continue;
      lastLane = e.lane;
      lastKind = e.kind;
      lastY = y;
      const fill = e.kind === 'dropped' ? '#c0392b' : e.kind === 'held' ? '#d68910' : '#1d2330';
      if (fill !== lastFill) ctx.fillStyle = lastFill = fill; // parsing a colour on every dot costs more than the dot
      ctx.fillRect((e.kind === 'held' ? bandX(e.lane) : laneX(e.lane)) - r, rowY(e.row) - r, r * 2, r * 2);
    }
  }, [useCanvas, visible, msgs, scrollTop, scrollLeft, widthPx, rowH]);

  const arrow = (m: DiagramMessage) => {
    const from = run.laneIndex(m.from);
    const to = run.laneIndex(m.to);
    if (from === undefined || to === undefined) return null;
    const send = m.send >= 0 ? run.events[m.send] : undefined;
    const held = m.held >= 0 ? run.events[m.held] : undefined;
    const end = m.end >= 0 ? run.events[m.end] : undefined;
    const x1 = laneX(from);
    const y1 = send ? rowY(send.row) : held ? rowY(held.row) - rowH : end ? rowY(end.row) - rowH : 0;
    const offending = [...run.cuts.values()].some((c) => c.offending.includes(m.id));
    const cls = `msg msg-${m.state}${offending ? ' offending' : ''}`;
    const state = m.state === 'delivered' ? '' : ` ${m.state}`;
    const label = `message ${m.id} ${m.from} → ${m.to}${state}${m.reason ? ` (${m.reason})` : ''}`;
    if (m.state === 'dropped' && end) {
      const x2 = x1 + (laneX(to) - x1) * 0.8;
      const y2 = rowY(end.row);
      const k = Math.max(3, Math.min(6, rowH * 0.3));
      return (
        <g key={m.id} role="img" aria-label={label} class={cls}>
          <line x1={x1} y1={y1} x2={x2} y2={y2} />
          <path class="cross" d={`M${x2 - k} ${y2 - k}L${x2 + k} ${y2 + k}M${x2 - k} ${y2 + k}L${x2 + k} ${y2 - k}`} />
        </g>
      );
    }
    if (held) {
      const hx = bandX(to);
      const hy = rowY(held.row);
      return (
        <g key={m.id} role="img" aria-label={label} class={cls}>
          <line x1={x1} y1={y1} x2={hx} y2={hy} marker-end="url(#arrowhead)" />
          {end && <line class="holdback" x1={hx} y1={hy} x2={laneX(to)} y2={rowY(end.row)} />}
        </g>
      );
    }
    if (end) {
      return (
        <line
          key={m.id}
          role="img"
          aria-label={label}
          class={cls}
          x1={x1}
          y1={y1}
          x2={laneX(to)}
          y2={rowY(end.row)}
          marker-end="url(#arrowhead)"
        />
      );
    }
    // In flight: a stub pointing at the receiver.
    return (
      <line
        key={m.id}
        role="img"
        aria-label={label}
        class={cls}
        x1={x1}
        y1={y1}
        x2={x1 + (laneX(to) - x1) * 0.3}
        y2={y1 + rowH * 0.8}
        marker-end="url(#arrowhead)"
      />
    );
  };

  const cutShape = (c: Cut) => {
    const pts: string[] = [];
    for (let l = 0; l < run.lanes.length; l++) {
      const lane = run.lanes[l];
      if (!lane) continue;
      const r = c.rows.get(lane.id);
      if (r === undefined) continue;
      const y = (r + 1) * rowH;
      pts.push(`${l * laneW + 4},${y} ${(l + 1) * laneW - 4},${y}`);
    }
    if (pts.length === 0) return null;
    const bad = c.consistent === false;
    const cls = `cut${bad ? ' inconsistent' : ''}${focusCut === c.id ? ' focused' : ''}`;
    return (
      <g key={`cut-${c.id}`} role="img" aria-label={cutLabel(c)} class={cls}>
        <polyline points={pts.join(' ')} />
        {c.markers.map((mk, i) => {
          const a = run.laneIndex(mk.from);
          const b = run.laneIndex(mk.to);
          if (a === undefined || b === undefined || mk.receivedRow === undefined) return null;
          return (
            <line
              key={i}
              class="marker"
              x1={laneX(a)}
              y1={(mk.sentRow + 1) * rowH}
              x2={laneX(b)}
              y2={(mk.receivedRow + 1) * rowH}
            />
          );
        })}
        <text x={4} y={(Math.min(...[...c.rows.values()]) + 1) * rowH - 3} class="cut-label">
          {c.id}
          {bad ? ' ✗' : ''}
        </text>
      </g>
    );
  };

  const cutsVisible = [...run.cuts.values()].filter((c) => {
    const rs = [...c.rows.values()];
    return rs.length > 0 && Math.max(...rs) + 1 >= range.from && Math.min(...rs) <= range.to + 1;
  });

  return (
    <div class="diagram">
      <div class="diagram-tools">
        <button type="button" onClick={() => zoom(zoomStep)}>
          Zoom in
        </button>
        <button type="button" onClick={() => zoom(1 / zoomStep)}>
          Zoom out
        </button>
        <button
          type="button"
          onClick={() => zoom(Math.max(viewH, 1) / Math.max(rows, 1) / rowH)}
          title="Fit the whole run in the window"
        >
          Fit
        </button>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow
        </label>
        <span class="muted">
          {lanesN} processes · {run.events.length} events · {run.messages.size} messages · drawn {visible.length}
          {useCanvas ? ' on canvas' : ''}
          {run.forgotten > 0 ? ` · ${run.forgotten} oldest forgotten` : ''}
        </span>
        {hovered && (
          <span class="legend">
            <span class="sw past" /> past <span class="sw future" /> future <span class="sw concurrent" /> concurrent
          </span>
        )}
      </div>
      <div
        class="diagram-scroll"
        ref={scroller}
        onScroll={onScroll}
        onWheel={onWheel}
        style={{ height: px(diagramHeightPx) }}
      >
        <div style={{ height: px(contentH), width: px(contentW), position: 'relative' }}>
          <div class="diagram-sticky" style={{ height: px(diagramHeightPx), width: px(contentW) }}>
            {useCanvas && (
              <canvas
                ref={canvas}
                aria-label="Space-time diagram overview"
                role="img"
                class="diagram-canvas"
                style={{ top: px(headerPx), left: px(scrollLeft), width: px(widthPx), height: px(viewH) }}
              />
            )}
            <svg
              aria-label="Space-time diagram"
              role="group"
              width={contentW}
              height={diagramHeightPx}
              class={hovered ? 'hovering' : ''}
              onMouseMove={onPointerMove}
              onMouseLeave={() => setHover(null)}
            >
              <defs>
                <marker
                  id="arrowhead"
                  viewBox="0 0 10 10"
                  refX="10"
                  refY="5"
                  markerUnits="userSpaceOnUse"
                  markerWidth="9"
                  markerHeight="9"
                  orient="auto"
                >
                  <path d="M0 0L10 5L0 10z" />
                </marker>
              </defs>
              <g transform={`translate(0 ${headerPx - scrollTop})`}>
                {run.lanes.map((lane, l) => (
                  <g
                    key={lane.id}
                    role="img"
                    aria-label={`process ${lane.id}`}
                    class={lane.killed ? 'lane killed' : 'lane'}
                  >
                    <rect
                      class="band"
                      x={bandX(l) - laneW * 0.1}
                      y={scrollTop - headerPx}
                      width={laneW * 0.2}
                      height={diagramHeightPx}
                    />
                    <line x1={laneX(l)} y1={scrollTop - headerPx} x2={laneX(l)} y2={scrollTop + viewH} />
                  </g>
                ))}
                {!useCanvas && msgs.messages.map(arrow)}
                {cutsVisible.map(cutShape)}
                {!useCanvas &&
                  visible.map((i) => {
                    const e = run.events[i] as DiagramEvent;
                    const r = rel(e);
                    const x = e.kind === 'held' ? bandX(e.lane) : laneX(e.lane);
                    const radius = Math.max(2, Math.min(6, rowH * 0.3));
                    return (
                      <circle
                        key={i}
                        role="img"
                        aria-label={eventLabel(e)}
                        class={`ev ev-${e.kind}${r ? ` rel-${r}` : ''}`}
                        cx={x}
                        cy={rowY(e.row)}
                        r={radius}
                      />
                    );
                  })}
                {hovered && !useCanvas && (
                  <text class="clock-tip" x={laneX(hovered.lane) + 9} y={rowY(hovered.row) - 8}>
                    {hovered.clock}
                  </text>
                )}
              </g>
              <g class="lane-heads">
                <rect x={0} y={0} width={contentW} height={headerPx} class="head-bg" />
                {run.lanes.map((lane, l) => (
                  <text key={lane.id} x={laneX(l)} y={headerPx - 12} text-anchor="middle" class="lane-name">
                    {lane.id}
                    {lane.killed ? ' ✝' : ''}
                    {channelFrom.value === lane.id ? ' ⇢' : channelTo.value === lane.id ? ' ⇠' : ''}
                  </text>
                ))}
              </g>
              <g class="lane-picks">
                {!run.readOnly &&
                  run.lanes.map((lane, l) => (
                    <rect
                      key={lane.id}
                      role="button"
                      tabIndex={0}
                      aria-label={`Pick channel end ${lane.id}`}
                      class="lane-pick"
                      x={l * laneW}
                      y={0}
                      width={laneW}
                      height={headerPx}
                      onClick={() => pickLane(lane.id)}
                      onKeyDown={(e) => {
                        if (e.key === 'Enter' || e.key === ' ') {
                          e.preventDefault();
                          pickLane(lane.id);
                        }
                      }}
                    />
                  ))}
              </g>
            </svg>
          </div>
        </div>
      </div>
    </div>
  );
}
