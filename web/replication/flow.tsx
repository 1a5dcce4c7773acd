/**
 * The message flow on a Canvas 2D, under the topology's SVG: messages as dots moving along the
 * links, coloured by type, dropped ones stopping at the break with an x and fading, the busiest
 * links' rates written beside them and listed for screen readers. Fed by the store's `link_stats`
 * frames through flow-model.ts; the animation runs only while the page is visible and something
 * moves, and draws one fill colour at a time with no allocation per dot or per frame (the labels'
 * texts and the font are made when they change).
 */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { decodeLinkStats, dotPosition, FlowModel, flowLinksMax, typeFamilies, type Point } from './flow-model.js';
import { linkId, type ClusterModel, type FrameWire } from './model.js';
import type { ReplicationStore } from './store.js';
import { layout, nodeRadius, viewH, viewW } from './topology.js';

/** Links whose rate is written on the canvas and listed (the busiest first). */
export const flowLabelsMax = 8;
/** The labels, the list and the canvas's data attributes are refreshed this often, ms. */
export const flowLabelRefreshMs = 500;
/** Half the side of a dot's square, view units. */
const dotHalf = 2.2;

type Rate = { a: string; b: string; ratePerS: number; dropShare: number };
/** A rate label as drawn: its text and colour made when the labels are refreshed, not per frame. */
type Label = Rate & { text: string; color: string };

export function MessageFlow({
  store,
  cluster,
  children,
}: {
  store: ReplicationStore;
  cluster: ClusterModel;
  children: ComponentChildren;
}): JSX.Element {
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const modelRef = useRef<FlowModel>(new FlowModel());
  const clusterRef = useRef<ClusterModel>(cluster);
  const [rates, setRates] = useState<Rate[]>([]);
  const [total, setTotal] = useState(0);
  clusterRef.current = cluster;
  const nodeKey = cluster.nodeIds.join(' ');

  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    const model = modelRef.current;
    model.clear();
    const ids = clusterRef.current.nodeIds;
    const pos = layout(ids);
    const inset = nodeRadius(ids.length);
    // Per link index: its ends (filled as links appear, so a frame never looks a name up).
    const ax = new Float32Array(flowLinksMax);
    const ay = new Float32Array(flowLinksMax);
    const bx = new Float32Array(flowLinksMax);
    const by = new Float32Array(flowLinksMax);
    let known = 0;
    const pa: Point = { x: 0, y: 0 };
    const pb: Point = { x: 0, y: 0 };
    const out = { x: 0, y: 0, alpha: 1, stoppedAtDrop: false };
    let labels: Label[] = [];
    let font = '';
    const toLabels = (rs: Rate[]): Label[] =>
      rs.map((r) => ({ ...r, text: `${rateText(r.ratePerS)}/s`, color: r.dropShare > 0.01 ? '#b91c1c' : '#0f172a' }));
    let raf = 0;
    let running = false;
    let lastLabelsMs = 0;
    let drawMsSum = 0;
    let drawCount = 0;
    let w = 0;
    let h = 0;
    let dpr = 1;

    const resize = (): void => {
      dpr = window.devicePixelRatio || 1;
      w = canvas.clientWidth;
      h = canvas.clientHeight;
      canvas.width = Math.max(1, Math.round(w * dpr));
      canvas.height = Math.max(1, Math.round(h * dpr));
      font = `${Math.round(11 * dpr)}px system-ui, sans-serif`;
    };
    resize();
    const ro = new ResizeObserver(() => {
      resize();
      if (!running) draw(performance.now());
    });
    ro.observe(canvas);

    // Links get indexes 0, 1, 2, ... as they appear: only the new ones are placed.
    const geometry = (): void => {
      for (; known < model.links.size; known++) {
        const l = model.linkAt(known);
        if (!l) break;
        const a = pos.get(l.from);
        const b = pos.get(l.to);
        // A node this view does not place (added since): its dots start and end at the centre.
        ax[l.index] = a?.x ?? viewW / 2;
        ay[l.index] = a?.y ?? viewH / 2;
        bx[l.index] = b?.x ?? viewW / 2;
        by[l.index] = b?.y ?? viewH / 2;
      }
    };

    const draw = (now: number): void => {
      const started = performance.now();
      ctx.setTransform(1, 0, 0, 1, 0, 0);
      ctx.clearRect(0, 0, canvas.width, canvas.height);
      // View units to device pixels, by hand: drawing under a scaling transform anti-aliases every
      // edge (about 3x the cost in software rendering); whole-pixel squares at identity do not.
      const s = Math.min(w / viewW, h / viewH) * dpr;
      const ox = (dpr * w - viewW * s) / 2;
      const oy = (dpr * h - viewH * s) / 2;
      const side = Math.max(3, Math.round(2 * dotHalf * s));
      const half = side / 2;
      const n = model.count;
      // One fill colour at a time: the dots still moving, as whole-pixel squares.
      for (let t = 0; t < model.typeNames.length; t++) {
        let any = false;
        for (let i = 0; i < n; i++) {
          if (model.dotType[i] !== t) continue;
          const li = model.dotLink[i] as number;
          pa.x = ax[li] as number;
          pa.y = ay[li] as number;
          pb.x = bx[li] as number;
          pb.y = by[li] as number;
          if (!dotPosition(model, i, now, pa, pb, inset, out) || out.stoppedAtDrop) continue;
          if (!any) {
            ctx.fillStyle = model.typeColors[t] as string;
            any = true;
          }
          ctx.fillRect(Math.round(ox + out.x * s - half), Math.round(oy + out.y * s - half), side, side);
        }
      }
      // Dropped dots: stopped at the break, an x over them, fading (few: drawn one by one).
      ctx.lineWidth = 1.5 * dpr;
      ctx.strokeStyle = '#dc2626';
      for (let i = 0; i < n; i++) {
        if ((model.dotDropAt[i] as number) > 1) continue;
        const li = model.dotLink[i] as number;
        pa.x = ax[li] as number;
        pa.y = ay[li] as number;
        pb.x = bx[li] as number;
        pb.y = by[li] as number;
        if (!dotPosition(model, i, now, pa, pb, inset, out) || !out.stoppedAtDrop) continue;
        const x = ox + out.x * s;
        const y = oy + out.y * s;
        const r = 4 * dpr;
        ctx.globalAlpha = out.alpha;
        ctx.fillStyle = model.typeColors[model.dotType[i] as number] as string;
        ctx.fillRect(Math.round(x - half), Math.round(y - half), side, side);
        ctx.beginPath();
        ctx.moveTo(x - r, y - r);
        ctx.lineTo(x + r, y + r);
        ctx.moveTo(x + r, y - r);
        ctx.lineTo(x - r, y + r);
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
      // The busiest links' rates, at their middles.
      if (labels.length > 0) {
        ctx.font = font;
        ctx.textAlign = 'center';
        for (let k = 0; k < labels.length; k++) {
          const r = labels[k] as Label;
          const a = pos.get(r.a);
          const b = pos.get(r.b);
          if (!a || !b) continue;
          const text = r.text;
          const x = ox + ((a.x + b.x) / 2) * s;
          const y = oy + ((a.y + b.y) / 2) * s + 14 * dpr;
          const tw = ctx.measureText(text).width;
          ctx.fillStyle = 'rgba(255,255,255,0.8)';
          ctx.fillRect(
            Math.round(x - tw / 2 - 3 * dpr),
            Math.round(y - 10 * dpr),
            Math.round(tw + 6 * dpr),
            Math.round(13 * dpr),
          );
          ctx.fillStyle = r.color;
          ctx.fillText(text, x, y);
        }
      }
      drawMsSum += performance.now() - started;
      drawCount++;
    };

    const refreshLabels = (now: number): void => {
      if (now - lastLabelsMs < flowLabelRefreshMs) return;
      lastLabelsMs = now;
      const busiest = model.busiest(flowLabelsMax);
      labels = toLabels(busiest);
      setRates(busiest);
      setTotal(model.totalRatePerS());
      canvas.dataset['dots'] = String(model.count);
      canvas.dataset['spawned'] = String(model.spawned);
      canvas.dataset['rate'] = String(Math.round(model.totalRatePerS()));
      canvas.dataset['drawMs'] = drawCount > 0 ? (drawMsSum / drawCount).toFixed(3) : '0';
      drawMsSum = 0;
      drawCount = 0;
    };

    const frame = (now: number): void => {
      raf = 0;
      model.step(now);
      geometry();
      refreshLabels(now);
      draw(now);
      if (model.active() && document.visibilityState === 'visible') raf = requestAnimationFrame(frame);
      else {
        running = false;
        const busiest = model.busiest(flowLabelsMax);
        labels = toLabels(busiest);
        setRates(busiest);
        setTotal(model.totalRatePerS());
        draw(now);
      }
    };
    const start = (): void => {
      if (running || document.visibilityState !== 'visible') return;
      running = true;
      raf = requestAnimationFrame(frame);
    };

    const onFrame = (f: FrameWire): void => {
      if (f.type !== 'link_stats' || f.cluster_id !== clusterRef.current.id) return;
      const data = decodeLinkStats(f.data);
      if (data === null) return;
      const links = clusterRef.current.links;
      model.ingest(data, performance.now(), (a, b) => links[linkId(a, b)]?.latencyMs ?? 0);
      start();
    };
    store.listeners.add(onFrame);
    const onVisible = (): void => {
      if (document.visibilityState === 'visible' && model.active()) start();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      store.listeners.delete(onFrame);
      document.removeEventListener('visibilitychange', onVisible);
      ro.disconnect();
      if (raf !== 0) cancelAnimationFrame(raf);
      model.clear();
      setRates([]);
      setTotal(0);
    };
  }, [store, cluster.id, nodeKey]);

  return (
    <>
      <div class="topo-stack">
        <canvas ref={canvasRef} class="flow" role="img" aria-label="Message flow" />
        {children}
      </div>
      <div class="flow-info">
        <p class="muted" aria-live="off">
          Messages: {rateText(total)}/s
          {typeFamilies.map((f) => (
            <span key={f.name} class="swatch">
              <span aria-hidden="true" style={{ background: f.color }} /> {f.name}
            </span>
          ))}
          <span class="swatch">
            <span aria-hidden="true" class="x">
              ×
            </span>{' '}
            dropped
          </span>
        </p>
        {rates.length > 0 && (
          <ul class="flow-rates" aria-label="Link rates">
            {rates.map((r) => (
              <li key={`${r.a} ${r.b}`}>
                {r.a} ↔ {r.b}: {rateText(r.ratePerS)} msg/s
                {r.dropShare > 0.005 ? `, ${Math.round(r.dropShare * 100)}% dropped` : ''}
              </li>
            ))}
          </ul>
        )}
      </div>
    </>
  );
}

/** A rate as a user reads it: whole numbers, thousands as k. */
export function rateText(perS: number): string {
  if (perS >= 10_000) return `${Math.round(perS / 1000)}k`;
  if (perS >= 1_000) return `${(perS / 1000).toFixed(1)}k`;
  return String(Math.round(perS));
}
