/**
 * The message flow's painter: the flow model (flow-model.ts) stepped and drawn on a canvas once an
 * animation frame while something moves, with no allocation per dot or per frame (the labels' texts
 * and the font are made when they change). It runs in a dedicated worker on an OffscreenCanvas when
 * the browser can (flow.tsx hands the canvas over), so the page's main thread neither draws the dots
 * nor copies the canvas out on every frame; else in the page, the same code. It knows no DOM: what
 * it shows beside the canvas (rates, counters) goes back through `report`.
 */
import { decodeLinkStats, dotPosition, FlowModel, flowLinksMax, type Point } from './flow-model.js';
import { linkId, type LinkSetting } from './model.js';
import { layout, nodeRadius, viewH, viewW } from './topology.js';

/** Links whose rate is written on the canvas and listed (the busiest first). */
export const flowLabelsMax = 8;
/** The labels and the report are refreshed this often, ms. */
export const flowLabelRefreshMs = 500;
/** Half the side of a dot's square, view units. */
const dotHalf = 2.2;

export type Rate = { a: string; b: string; ratePerS: number; dropShare: number };
/** A rate label as drawn: its text and colour made when the labels are refreshed, not per frame. */
type Label = Rate & { text: string; color: string };

/** What the painter tells the page every flowLabelRefreshMs (and when it stops). */
export interface FlowReport {
  rates: Rate[];
  totalPerS: number;
  dots: number;
  spawned: number;
  /** Mean time to draw one frame since the last report, ms. */
  drawMs: number;
  /** Frames drawn per second since the last report (0 when stopped). */
  fps: number;
}

/** The clock and frame scheduler of the painter's thread (the page's or the worker's). */
export interface FrameClock {
  now(): number;
  request(cb: (t: number) => void): number;
  cancel(id: number): void;
}

/** The settings of links, by linkId: a dot's trip takes the link's latency. */
export type LinkSettings = Readonly<Record<string, LinkSetting>>;

/** A rate as a user reads it: whole numbers, thousands as k. */
export function rateText(perS: number): string {
  if (perS >= 10_000) return `${Math.round(perS / 1000)}k`;
  if (perS >= 1_000) return `${(perS / 1000).toFixed(1)}k`;
  return String(Math.round(perS));
}

const toLabels = (rs: Rate[]): Label[] =>
  rs.map((r) => ({ ...r, text: `${rateText(r.ratePerS)}/s`, color: r.dropShare > 0.01 ? '#b91c1c' : '#0f172a' }));

export class FlowPainter {
  private readonly model = new FlowModel();
  private readonly ctx: CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null;
  private readonly pos: Map<string, Point>;
  private readonly inset: number;
  // Per link index: its ends (filled as links appear, so a frame never looks a name up).
  private readonly ax = new Float32Array(flowLinksMax);
  private readonly ay = new Float32Array(flowLinksMax);
  private readonly bx = new Float32Array(flowLinksMax);
  private readonly by = new Float32Array(flowLinksMax);
  private known = 0;
  private readonly pa: Point = { x: 0, y: 0 };
  private readonly pb: Point = { x: 0, y: 0 };
  private readonly out = { x: 0, y: 0, alpha: 1, stoppedAtDrop: false };
  private labels: Label[] = [];
  private font = '';
  private raf = 0;
  private running = false;
  private visible = true;
  private lastLabelsMs = 0;
  private drawMsSum = 0;
  private drawCount = 0;
  private w = 0;
  private h = 0;
  private dpr = 1;
  private links: LinkSettings = {};
  private readonly latency = (a: string, b: string): number => this.links[linkId(a, b)]?.latencyMs ?? 0;

  constructor(
    private readonly canvas: HTMLCanvasElement | OffscreenCanvas,
    ids: readonly string[],
    private readonly report: (r: FlowReport) => void,
    private readonly clock: FrameClock,
  ) {
    this.ctx = canvas.getContext('2d') as CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D | null;
    this.pos = layout(ids);
    this.inset = nodeRadius(ids.length);
  }

  /** The canvas's box changed (CSS px and device pixel ratio). */
  resize(w: number, h: number, dpr: number): void {
    this.dpr = dpr || 1;
    this.w = w;
    this.h = h;
    this.canvas.width = Math.max(1, Math.round(w * this.dpr));
    this.canvas.height = Math.max(1, Math.round(h * this.dpr));
    this.font = `${Math.round(11 * this.dpr)}px system-ui, sans-serif`;
    if (!this.running) this.draw(this.clock.now());
  }

  /** A link_stats frame's data (as the socket gave it) and the links' settings as the model has them. */
  ingest(data: unknown, links: LinkSettings): void {
    const d = decodeLinkStats(data);
    if (d === null) return;
    this.links = links;
    this.model.ingest(d, this.clock.now(), this.latency);
    this.start();
  }

  setVisible(visible: boolean): void {
    this.visible = visible;
    if (visible && this.model.active()) this.start();
  }

  /** Stops the animation and forgets the dots. */
  stop(): void {
    if (this.raf !== 0) this.clock.cancel(this.raf);
    this.raf = 0;
    this.running = false;
    this.model.clear();
  }

  private start(): void {
    if (this.running || !this.visible) return;
    this.running = true;
    this.raf = this.clock.request(this.frame);
  }

  private readonly frame = (now: number): void => {
    this.raf = 0;
    this.model.step(now);
    this.geometry();
    this.refreshLabels(now);
    this.draw(now);
    if (this.model.active() && this.visible) this.raf = this.clock.request(this.frame);
    else {
      this.running = false;
      this.lastLabelsMs = 0;
      this.refreshLabels(now);
      this.draw(now);
    }
  };

  // Links get indexes 0, 1, 2, ... as they appear: only the new ones are placed.
  private geometry(): void {
    const { model, pos } = this;
    for (; this.known < model.links.size; this.known++) {
      const l = model.linkAt(this.known);
      if (!l) break;
      const a = pos.get(l.from);
      const b = pos.get(l.to);
      // A node this view does not place (added since): its dots start and end at the centre.
      this.ax[l.index] = a?.x ?? viewW / 2;
      this.ay[l.index] = a?.y ?? viewH / 2;
      this.bx[l.index] = b?.x ?? viewW / 2;
      this.by[l.index] = b?.y ?? viewH / 2;
    }
  }

  private refreshLabels(now: number): void {
    const since = now - this.lastLabelsMs;
    if (this.running && since < flowLabelRefreshMs) return;
    const busiest = this.model.busiest(flowLabelsMax);
    this.labels = toLabels(busiest);
    this.report({
      rates: busiest,
      totalPerS: this.model.totalRatePerS(),
      dots: this.model.count,
      spawned: this.model.spawned,
      drawMs: this.drawCount > 0 ? this.drawMsSum / this.drawCount : 0,
      fps: this.running && this.lastLabelsMs > 0 && since > 0 ? (this.drawCount * 1000) / since : 0,
    });
    this.lastLabelsMs = now;
    this.drawMsSum = 0;
    this.drawCount = 0;
  }

  private draw(now: number): void {
    const { ctx, canvas, model, ax, ay, bx, by, pa, pb, out, inset, w, h, dpr } = this;
    if (!ctx) return;
    const started = this.clock.now();
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
    const labels = this.labels;
    if (labels.length > 0) {
      ctx.font = this.font;
      ctx.textAlign = 'center';
      for (let k = 0; k < labels.length; k++) {
        const r = labels[k] as Label;
        const a = this.pos.get(r.a);
        const b = this.pos.get(r.b);
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
    this.drawMsSum += this.clock.now() - started;
    this.drawCount++;
  }
}

/** What the page sends the flow's worker. */
export type FlowWorkerMessage =
  | { t: 'init'; canvas: OffscreenCanvas; ids: string[]; w: number; h: number; dpr: number }
  | { t: 'resize'; w: number; h: number; dpr: number }
  | { t: 'stats'; data: unknown; links?: LinkSettings }
  | { t: 'visible'; visible: boolean };

/** The flow's side of a dedicated worker (main.tsx calls it when the bundle runs as the worker). */
export function runFlowWorker(scope: {
  onmessage: ((e: MessageEvent) => void) | null;
  postMessage(m: FlowReport): void;
}): void {
  const g = globalThis as unknown as {
    requestAnimationFrame(cb: (t: number) => void): number;
    cancelAnimationFrame(id: number): void;
  };
  const clock: FrameClock = {
    now: () => performance.now(),
    request: (cb) => g.requestAnimationFrame(cb),
    cancel: (id) => g.cancelAnimationFrame(id),
  };
  let painter: FlowPainter | null = null;
  let links: LinkSettings = {};
  scope.onmessage = (e: MessageEvent): void => {
    const m = e.data as FlowWorkerMessage;
    if (m.t === 'init') {
      painter?.stop();
      painter = new FlowPainter(m.canvas, m.ids, (r) => scope.postMessage(r), clock);
      painter.resize(m.w, m.h, m.dpr);
    } else if (m.t === 'resize') painter?.resize(m.w, m.h, m.dpr);
    else if (m.t === 'stats') {
      if (m.links) links = m.links;
      painter?.ingest(m.data, links);
    } else painter?.setVisible(m.visible);
  };
}
