/**
 * The message flow on a Canvas 2D, under the topology's SVG: messages as dots moving along the
 * links, coloured by type, dropped ones stopping at the break with an x and fading, the busiest
 * links' rates written beside them and listed for screen readers. Fed by the store's `link_stats`
 * frames through flow-model.ts; the animation runs only while the page is visible and something
 * moves, and draws one path per colour with no allocation per dot.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { decodeLinkStats, dotPosition, FlowModel, typeFamilies, type Point } from './flow-model.js';
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
    const ax = new Float32Array(8192);
    const ay = new Float32Array(8192);
    const bx = new Float32Array(8192);
    const by = new Float32Array(8192);
    const known = new Uint8Array(8192);
    const pa: Point = { x: 0, y: 0 };
    const pb: Point = { x: 0, y: 0 };
    const out = { x: 0, y: 0, alpha: 1, stoppedAtDrop: false };
    let labels: Rate[] = [];
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
    };
    resize();
    const ro = new ResizeObserver(() => {
      resize();
      if (!running) draw(performance.now());
    });
    ro.observe(canvas);

    const geometry = (): void => {
      for (const l of model.links.values()) {
        if (known[l.index] === 1) continue;
        const a = pos.get(l.from);
        const b = pos.get(l.to);
        known[l.index] = 1;
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
      const s = Math.min(w / viewW, h / viewH);
      ctx.setTransform(dpr * s, 0, 0, dpr * s, (dpr * (w - viewW * s)) / 2, (dpr * (h - viewH * s)) / 2);
      const n = model.count;
      // One path per colour: the dots still moving.
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
            ctx.beginPath();
            any = true;
          }
          ctx.rect(out.x - dotHalf, out.y - dotHalf, 2 * dotHalf, 2 * dotHalf);
        }
        if (any) {
          ctx.fillStyle = model.typeColors[t] as string;
          ctx.fill();
        }
      }
      // Dropped dots: stopped at the break, an x over them, fading (few: drawn one by one).
      ctx.lineWidth = 1.5;
      for (let i = 0; i < n; i++) {
        if ((model.dotDropAt[i] as number) > 1) continue;
        const li = model.dotLink[i] as number;
        pa.x = ax[li] as number;
        pa.y = ay[li] as number;
        pb.x = bx[li] as number;
        pb.y = by[li] as number;
        if (!dotPosition(model, i, now, pa, pb, inset, out) || !out.stoppedAtDrop) continue;
        ctx.globalAlpha = out.alpha;
        ctx.fillStyle = model.typeColors[model.dotType[i] as number] as string;
        ctx.fillRect(out.x - dotHalf, out.y - dotHalf, 2 * dotHalf, 2 * dotHalf);
        ctx.strokeStyle = '#dc2626';
        ctx.beginPath();
        ctx.moveTo(out.x - 4, out.y - 4);
        ctx.lineTo(out.x + 4, out.y + 4);
        ctx.moveTo(out.x + 4, out.y - 4);
        ctx.lineTo(out.x - 4, out.y + 4);
        ctx.stroke();
      }
      ctx.globalAlpha = 1;
      // The busiest links' rates, at their middles.
      if (labels.length > 0) {
        ctx.font = '11px system-ui, sans-serif';
        ctx.textAlign = 'center';
        for (const r of labels) {
          const a = pos.get(r.a);
          const b = pos.get(r.b);
          if (!a || !b) continue;
          const text = `${rateText(r.ratePerS)}/s`;
          const x = (a.x + b.x) / 2;
          const y = (a.y + b.y) / 2 + 14;
          ctx.fillStyle = 'rgba(255,255,255,0.8)';
          ctx.fillRect(x - 3 - text.length * 3, y - 10, 6 + text.length * 6, 13);
          ctx.fillStyle = r.dropShare > 0.01 ? '#b91c1c' : '#0f172a';
          ctx.fillText(text, x, y);
        }
      }
      drawMsSum += performance.now() - started;
      drawCount++;
    };

    const refreshLabels = (now: number): void => {
      if (now - lastLabelsMs < flowLabelRefreshMs) return;
      lastLabelsMs = now;
      labels = model.busiest(flowLabelsMax);
      setRates(labels);
      setTotal(model.totalRatePerS());
      canvas.dataset['dots'] = String(model.count);
      canvas.dataset['spawned'] = String(model.spawned);
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
        labels = model.busiest(flowLabelsMax);
        setRates(labels);
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
