/**
 * The message flow on a Canvas 2D, under the topology's SVG: messages as dots moving along the
 * links, coloured by type, dropped ones stopping at the break with an x and fading, the busiest
 * links' rates written beside them and listed for screen readers. Fed by the store's `link_stats`
 * frames; drawn by flow-paint.ts's FlowPainter, in a dedicated worker on an OffscreenCanvas where
 * the browser has one (this bundle, run as a worker: main.tsx), so the dots move without the page's
 * main thread drawing or copying the canvas on every frame; in the page otherwise. The animation
 * runs only while the page is visible and something moves.
 */
import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { typeFamilies } from './flow-model.js';
import { FlowPainter, type FlowReport, type FlowWorkerMessage, type Rate, rateText } from './flow-paint.js';
import type { ClusterModel, FrameWire } from './model.js';
import type { ReplicationStore } from './store.js';

/** What the effect drives: the painter in the page, or the worker's through messages. */
interface PainterPort {
  resize(w: number, h: number, dpr: number): void;
  ingest(data: unknown, links: ClusterModel['links']): void;
  setVisible(visible: boolean): void;
  stop(): void;
}

/** Whether the flow can be drawn in a worker (OffscreenCanvas handed over, module workers). */
const workerFlow = (canvas: HTMLCanvasElement): boolean =>
  typeof canvas.transferControlToOffscreen === 'function' && typeof Worker === 'function';

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
  const clusterRef = useRef<ClusterModel>(cluster);
  const [rates, setRates] = useState<Rate[]>([]);
  const [total, setTotal] = useState(0);
  clusterRef.current = cluster;
  const nodeKey = cluster.nodeIds.join(' ');
  // A canvas handed to a worker cannot be handed again: another cluster (or node set) gets a new one.
  const canvasKey = `${cluster.id} ${nodeKey}`;

  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const ids = [...clusterRef.current.nodeIds];
    const onReport = (r: FlowReport): void => {
      setRates(r.rates);
      setTotal(r.totalPerS);
      canvas.dataset['dots'] = String(r.dots);
      canvas.dataset['spawned'] = String(r.spawned);
      canvas.dataset['rate'] = String(Math.round(r.totalPerS));
      canvas.dataset['drawMs'] = r.drawMs.toFixed(3);
      canvas.dataset['fps'] = r.fps.toFixed(1);
    };
    const box = (): { w: number; h: number; dpr: number } => ({
      w: canvas.clientWidth,
      h: canvas.clientHeight,
      dpr: window.devicePixelRatio || 1,
    });
    let port: PainterPort;
    if (workerFlow(canvas)) {
      canvas.dataset['painter'] = 'worker';
      const off = canvas.transferControlToOffscreen();
      const worker = new Worker(new URL(import.meta.url), { type: 'module', name: 'message-flow' });
      worker.onmessage = (e: MessageEvent) => onReport(e.data as FlowReport);
      const send = (m: FlowWorkerMessage, transfer: Transferable[] = []): void => worker.postMessage(m, transfer);
      send({ t: 'init', canvas: off, ids, ...box() }, [off]);
      // The links' settings go along only when they change (a new object: model.ts keeps it otherwise).
      let sentLinks: ClusterModel['links'] | null = null;
      port = {
        resize: (w, h, dpr) => send({ t: 'resize', w, h, dpr }),
        ingest: (data, links) => {
          send(links === sentLinks ? { t: 'stats', data } : { t: 'stats', data, links });
          sentLinks = links;
        },
        setVisible: (visible) => send({ t: 'visible', visible }),
        stop: () => worker.terminate(),
      };
    } else {
      canvas.dataset['painter'] = 'page';
      const painter = new FlowPainter(canvas, ids, onReport, {
        now: () => performance.now(),
        request: (cb) => requestAnimationFrame(cb),
        cancel: (id) => cancelAnimationFrame(id),
      });
      const b = box();
      painter.resize(b.w, b.h, b.dpr);
      port = painter;
    }
    const ro = new ResizeObserver(() => {
      const b = box();
      port.resize(b.w, b.h, b.dpr);
    });
    ro.observe(canvas);

    const onFrame = (f: FrameWire): void => {
      if (f.type !== 'link_stats' || f.cluster_id !== clusterRef.current.id) return;
      port.ingest(f.data, clusterRef.current.links);
    };
    store.listeners.add(onFrame);
    const onVisible = (): void => port.setVisible(document.visibilityState === 'visible');
    onVisible();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      store.listeners.delete(onFrame);
      document.removeEventListener('visibilitychange', onVisible);
      ro.disconnect();
      port.stop();
      setRates([]);
      setTotal(0);
    };
  }, [store, cluster.id, nodeKey]);

  return (
    <>
      <div class="topo-stack">
        <canvas key={canvasKey} ref={canvasRef} class="flow" role="img" aria-label="Message flow" />
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
