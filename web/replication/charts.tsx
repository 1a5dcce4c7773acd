/**
 * Time-series charts for the console's load view, drawn by uPlot (bundled from node_modules, its
 * CSS too): one chart per measure over a rolling window, its latest values in its accessible name
 * and in a legend line. It only draws what it is handed; load.tsx gathers the series.
 */
import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** Height of a chart's plot, px. */
export const chartHeightPx = 120;

export interface SeriesSpec {
  label: string;
  color: string;
  /** How a value reads in the legend and the name: `12.3 ms`, `450 ops/s`. */
  unit: string;
}

/** A value as the legend writes it. */
export function valueText(v: number | null | undefined, unit: string): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return `– ${unit}`;
  const shown = Math.abs(v) >= 100 ? Math.round(v).toString() : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2);
  return `${shown} ${unit}`;
}

/**
 * One chart. `xs` are Unix seconds; `ys[k]` the k-th series, aligned with `xs` (null: no value).
 * The plot is made once and fed with setData; a resize of its box resizes it.
 */
export function TimeChart({
  title,
  series,
  xs,
  ys,
  windowS,
}: {
  title: string;
  /** The x axis always spans this many seconds up to the newest point (a rolling window). */
  windowS: number;
  series: readonly SeriesSpec[];
  xs: readonly number[];
  ys: ReadonlyArray<ReadonlyArray<number | null>>;
}): JSX.Element {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: chartHeightPx,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: true, range: (_u, _min, max) => [max - windowS, max] } },
      axes: [
        { stroke: '#475569', grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' } },
        { stroke: '#475569', grid: { stroke: '#e2e8f0' }, ticks: { stroke: '#cbd5e1' }, size: 48 },
      ],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, spanGaps: false }))],
    };
    const p = new uPlot(opts, [[], ...series.map(() => [])] as unknown as uPlot.AlignedData, el);
    plot.current = p;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== p.width) p.setSize({ width: w, height: chartHeightPx });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      p.destroy();
      plot.current = null;
    };
    // The series are fixed per chart.
  }, []);

  useEffect(() => {
    plot.current?.setData([xs, ...ys] as unknown as uPlot.AlignedData);
    // A new point comes with a new xs (the columns are replaced together): other renders redraw nothing.
  }, [xs]);

  const latest = series.map((s, k) => {
    const col = ys[k] ?? [];
    let v: number | null = null;
    for (let i = col.length - 1; i >= 0 && v === null; i--) v = col[i] ?? null;
    return `${s.label} ${valueText(v, s.unit)}`;
  });
  return (
    <figure class="chart">
      <figcaption>
        {title}
        <span class="chart-legend">
          {series.map((s, k) => (
            <span key={s.label}>
              <span class="swatch-line" aria-hidden="true" style={{ background: s.color }} />
              {latest[k]}
            </span>
          ))}
        </span>
      </figcaption>
      <div
        ref={box}
        class="chart-plot"
        role="img"
        aria-label={`${title}: ${latest.join(', ')}`}
        data-points={String(xs.length)}
      />
    </figure>
  );
}
