/**
 * The history view: one lane per client with invoke-to-complete bars, a fault lane, zoom and
 * scroll in time, and the checkers on the picture (linearizability with the operations that
 * cannot be ordered highlighted and explained, convergence, invariants). It pages through
 * GET .../history?since= when /ws reports activity on the cluster (at most once a second, only
 * while the page is visible); the rules (merge, layout, witness) live in history-model.ts.
 */
import { signal, useSignal, type Signal } from '@preact/signals';
import { useEffect, useMemo, useRef } from 'preact/hooks';
import type { JSX } from 'preact';
import { api } from '../shared/api.js';
import type { FrameWire } from './model.js';
import type { ReplicationStore } from './store.js';
import {
  clientLanes,
  divergedText,
  emptyHistory,
  faultRows,
  faultText,
  findReported,
  findWitness,
  mergePage,
  opShortText,
  opText,
  timeExtent,
  visibleOps,
  xOf,
  zoom,
  type ConvergenceWire,
  type FaultWire,
  type HistoryBuffer,
  type HistoryPageWire,
  type HistoryRecordWire,
  type LinearizabilityWire,
  type TimeWindow,
} from './history-model.js';
import { cpath } from './ui-state.js';

/** History is fetched at most this often (and only after /ws reported activity on the cluster). */
export const historyFetchEveryMs = 1_000;
/** Even with no event (latency and skew changes publish none), the history is fetched this often. */
export const historyQuietFetchMs = 5_000;
/** Operations one fetch asks for (the server's default page), and pages one tick follows at most. */
export const historyPageOps = 1_000;
export const historyPagesPerTickMax = 5;
/** On first sight of a cluster, only its last this-many operations are fetched. */
export const historyInitialOpsMax = 5_000;
/** Bars drawn at most (virtualisation: the rest of the window is summarised, zoom in to see it). */
export const barsDrawnMax = 400;
/** The window shown when following the newest operations, and its bounds when zooming. */
export const followSpanMsDefault = 10_000;
export const spanMsMin = 1;
/** Drawing units: the SVG is scaled to the panel's width. */
const widthUnits = 1000;
const labelUnits = 80;
const laneUnits = 22;
const axisUnits = 18;

/** The faults the history view knows of (the node drawer reads a node's clock skew from them). */
export const historyFaults: Signal<readonly FaultWire[]> = signal([]);

export function HistoryPanel({ store, clusterId }: { store: ReplicationStore; clusterId: string }): JSX.Element {
  const buffer = useSignal<HistoryBuffer>(emptyHistory);
  const follow = useSignal(true);
  const spanMs = useSignal(followSpanMsDefault);
  const manual = useSignal<TimeWindow | null>(null);
  const witness = useSignal<ReadonlySet<number>>(new Set());
  const fetchError = useSignal<string | null>(null);
  /** When the buffer was last fetched: open faults are drawn up to it (not to each render's now). */
  const fetchedAt = useSignal(0);
  /** Fetches what arrived since the last page (the checkers call it before they read the buffer). */
  const refresh = useRef<() => Promise<void>>(() => Promise.resolve());

  useEffect(() => {
    let dirty = true;
    let inFlight = false;
    let last = 0;
    let stopped = false;
    const unsubscribe = store.socket.subscribe((raw) => {
      const f = raw as FrameWire;
      if (
        f !== null &&
        typeof f === 'object' &&
        f.type !== 'link_stats' &&
        (f.cluster_id === clusterId || f.type === 'events_dropped')
      )
        dirty = true;
    });
    const pull = async (): Promise<void> => {
      inFlight = true;
      last = Date.now();
      dirty = false;
      let b = buffer.value;
      if (b.nextSince === 0 && b.ops.length === 0) {
        // First sight: where the history ends, to start near it.
        const probe = await api.get<HistoryPageWire>(
          `${cpath(clusterId, '/history')}?since=${Number.MAX_SAFE_INTEGER}&limit=1`,
        );
        if (probe.ok)
          b = { ...b, nextSince: Math.max(probe.body.ops_dropped, probe.body.total - historyInitialOpsMax) };
      }
      for (let i = 0; i < historyPagesPerTickMax && !stopped; i++) {
        const r = await api.get<HistoryPageWire>(
          `${cpath(clusterId, '/history')}?since=${b.nextSince}&limit=${historyPageOps}`,
        );
        if (!r.ok) {
          fetchError.value = `history: ${r.error}`;
          break;
        }
        fetchError.value = null;
        b = mergePage(b, r.body);
        if (r.body.next_since >= r.body.total) break;
      }
      if (!stopped) {
        fetchedAt.value = Date.now();
        buffer.value = b;
        historyFaults.value = b.faults;
      }
      inFlight = false;
    };
    refresh.current = async () => {
      while (inFlight && !stopped) await new Promise((r) => setTimeout(r, 20));
      await pull();
    };
    const tick = (): void => {
      if (inFlight || document.visibilityState !== 'visible') return;
      if (dirty || Date.now() - last >= historyQuietFetchMs) void pull();
    };
    tick();
    const timer = setInterval(tick, historyFetchEveryMs);
    return () => {
      stopped = true;
      clearInterval(timer);
      unsubscribe();
      historyFaults.value = [];
    };
  }, [store, clusterId]);

  const b = buffer.value;
  const now = fetchedAt.value;
  const extent = timeExtent(b, now);
  const win: TimeWindow | null =
    extent === null
      ? null
      : follow.value || manual.value === null
        ? { start: extent.t1 - spanMs.value, end: extent.t1 }
        : manual.value;
  const setWindow = (w: TimeWindow): void => {
    follow.value = false;
    manual.value = w;
    spanMs.value = w.end - w.start;
  };

  // The page re-renders on every model flush (50 ms under load): the same vnode lets Preact skip
  // the timeline unless what it draws changed.
  const w0 = win?.start ?? 0;
  const w1 = win?.end ?? 0;
  const t0 = extent?.t0 ?? 0;
  const timeline = useMemo(
    () => <Timeline buffer={b} win={{ start: w0, end: w1 }} t0={t0} witness={witness.value} now={now} />,
    [b, w0, w1, t0, witness.value, now],
  );
  return (
    <section class="panel history" role="region" aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <div class="row">
        <button
          type="button"
          class="secondary"
          disabled={win === null}
          onClick={() => win && setWindow(zoom(win, 0.5, win.end - (win.end - win.start) / 2, spanMsMin))}
        >
          Zoom in
        </button>
        <button type="button" class="secondary" disabled={win === null} onClick={() => win && setWindow(zoom(win, 2))}>
          Zoom out
        </button>
        <button
          type="button"
          class="secondary"
          disabled={win === null}
          onClick={() => win && setWindow(pan(win, -0.5))}
        >
          Earlier
        </button>
        <button type="button" class="secondary" disabled={win === null} onClick={() => win && setWindow(pan(win, 0.5))}>
          Later
        </button>
        <button
          type="button"
          class="secondary"
          disabled={extent === null}
          onClick={() => extent && setWindow({ start: extent.t0, end: extent.t1 })}
        >
          Whole history
        </button>
        <label>
          <input
            type="checkbox"
            checked={follow.value}
            onChange={(e) => {
              follow.value = (e.currentTarget as HTMLInputElement).checked;
            }}
          />
          Follow newest
        </label>
        <span class="muted">
          {b.ops.length} ops shown of {b.total}
          {b.missed > 0 ? ` (${b.missed} older not held)` : ''}
          {win !== null ? ` · window ${fmtSpan(win.end - win.start)}` : ''}
        </span>
        {fetchError.value !== null && <span class="error">{fetchError.value}</span>}
      </div>
      {win === null || extent === null ? (
        <p class="muted">No client operation or fault yet: write or read from the console.</p>
      ) : (
        timeline
      )}
      <Checkers
        clusterId={clusterId}
        buffer={buffer}
        witness={witness}
        onFocus={setWindow}
        refresh={() => refresh.current()}
      />
    </section>
  );
}

const pan = (w: TimeWindow, by: number): TimeWindow => {
  const d = (w.end - w.start) * by;
  return { start: w.start + d, end: w.end + d };
};

const fmtSpan = (ms: number): string =>
  ms >= 1000 ? `${(ms / 1000).toFixed(ms >= 10_000 ? 0 : 1)} s` : `${ms.toFixed(ms >= 10 ? 0 : 2)} ms`;

function Timeline({
  buffer,
  win,
  t0,
  witness,
  now,
}: {
  buffer: HistoryBuffer;
  win: TimeWindow;
  t0: number;
  witness: ReadonlySet<number>;
  now: number;
}): JSX.Element {
  const lanes = clientLanes(buffer.ops);
  const { shown, hidden } = visibleOps(buffer.ops, win, barsDrawnMax);
  // Highlighted operations are drawn even past the cap.
  if (witness.size > 0) for (const o of buffer.ops) if (witness.has(o.index) && !shown.includes(o)) shown.push(o);
  const faults = faultRows(buffer.faults, win, now);
  const faultRowCount = Math.max(1, ...faults.map((f) => f.row + 1));
  const plot = widthUnits - labelUnits;
  const x = (t: number): number => labelUnits + Math.max(-2, Math.min(plot + 2, xOf(t, win, plot)));
  const laneY = new Map(lanes.map((l, i) => [l, axisUnits + i * laneUnits]));
  const faultTop = axisUnits + lanes.length * laneUnits;
  const height = faultTop + faultRowCount * laneUnits + 4;
  return (
    <>
      <svg class="history" viewBox={`0 0 ${widthUnits} ${height}`} aria-label="History timeline" role="group">
        <Axis win={win} t0={t0} plot={plot} />
        {lanes.map((l) => (
          <g key={l} role="img" aria-label={`client ${l}`}>
            <line
              class="lane"
              x1={labelUnits}
              x2={widthUnits}
              y1={(laneY.get(l) ?? 0) + laneUnits / 2}
              y2={(laneY.get(l) ?? 0) + laneUnits / 2}
            />
            <text class="lane-label" x={2} y={(laneY.get(l) ?? 0) + 15}>
              {l.length > 12 ? `${l.slice(0, 11)}…` : l}
            </text>
          </g>
        ))}
        {shown.map((o) => (
          <Bar key={o.index} op={o} x={x} y={laneY.get(o.process) ?? 0} hot={witness.has(o.index)} t0={t0} />
        ))}
        <g role="img" aria-label="faults lane">
          <line class="lane" x1={labelUnits} x2={widthUnits} y1={faultTop} y2={faultTop} />
          <text class="lane-label" x={2} y={faultTop + 15}>
            faults
          </text>
        </g>
        {faults.map(({ fault, row, end }) => {
          const x1 = x(fault.start_ms);
          const x2 = Math.max(x1 + 3, x(end));
          const y = faultTop + row * laneUnits + 2;
          const until =
            fault.end_ms === null ? ', ongoing' : fault.kind === 'heal' ? '' : ` to ${secs(fault.end_ms, t0)}`;
          const label = `fault ${faultText(fault)} from ${secs(fault.start_ms, t0)}${until}`;
          return (
            <g key={fault.index} role="img" aria-label={label} class={`fault ${fault.kind}`}>
              <title>{label}</title>
              <rect x={x1} y={y} width={x2 - x1} height={laneUnits - 4} rx={2} />
              <text x={Math.max(x1, labelUnits) + 3} y={y + 13}>
                {faultText(fault)}
              </text>
            </g>
          );
        })}
      </svg>
      {hidden > 0 && <p class="muted">{hidden} more operations in this window are not drawn: zoom in.</p>}
    </>
  );
}

const secs = (ms: number, t0: number): string => `${((ms - t0) / 1000).toFixed(3)} s`;

function Axis({ win, t0, plot }: { win: TimeWindow; t0: number; plot: number }): JSX.Element {
  const ticks = 5;
  const out: JSX.Element[] = [];
  for (let i = 0; i <= ticks; i++) {
    const t = win.start + ((win.end - win.start) * i) / ticks;
    const xx = labelUnits + (plot * i) / ticks;
    out.push(
      <g key={i} aria-hidden="true">
        <line class="tick" x1={xx} x2={xx} y1={axisUnits - 4} y2={axisUnits} />
        <text class="tick" x={Math.min(xx, widthUnits - 40)} y={12}>
          {secs(t, t0)}
        </text>
      </g>,
    );
  }
  return <g>{out}</g>;
}

function Bar({
  op,
  x,
  y,
  hot,
  t0,
}: {
  op: HistoryRecordWire;
  x: (t: number) => number;
  y: number;
  hot: boolean;
  t0: number;
}): JSX.Element {
  const x1 = x(op.invoke_ms);
  const x2 = Math.max(x1 + 2, x(op.complete_ms));
  const when = `${secs(op.invoke_ms, t0)} to ${secs(op.complete_ms, t0)}`;
  const label = `${hot ? 'cannot be ordered: ' : ''}${opText(op)}, ${when}`;
  return (
    <g role="img" aria-label={label} class={`op ${op.f} ${op.type}${hot ? ' witness' : ''}`}>
      <title>{label}</title>
      <rect x={x1} y={y + 3} width={x2 - x1} height={laneUnits - 6} rx={2} />
      <text x={Math.max(x1, labelUnits) + 2} y={y + 15}>
        {opShortText(op)}
        {op.type !== 'ok' ? ` ${op.type === 'info' ? '?' : '✗'}` : ''}
      </text>
    </g>
  );
}

// ---- the checkers ----

interface Verdict {
  text: string;
  bad: boolean;
  details: string[];
}

function Checkers({
  clusterId,
  buffer,
  witness,
  onFocus,
  refresh,
}: {
  clusterId: string;
  buffer: Signal<HistoryBuffer>;
  witness: Signal<ReadonlySet<number>>;
  onFocus: (w: TimeWindow) => void;
  refresh: () => Promise<void>;
}): JSX.Element {
  const lin = useSignal<Verdict | null>(null);
  const conv = useSignal<Verdict | null>(null);
  const inv = useSignal<Verdict | null>(null);
  const busy = useSignal<string | null>(null);
  const mounted = useRef(true);
  useEffect(() => () => void (mounted.current = false), []);

  const checkLin = async (): Promise<void> => {
    busy.value = 'linearizability';
    const r = await api.get<LinearizabilityWire>(cpath(clusterId, '/linearizable'));
    busy.value = null;
    if (!mounted.current) return;
    witness.value = new Set();
    if (!r.ok) {
      lin.value = { text: `linearizability check failed: ${r.error}`, bad: true, details: [] };
      return;
    }
    const body = r.body;
    if (body.verdict === 'linearizable') {
      lin.value = {
        text: `linearizable: ${body.ops} operations over ${body.keys} keys`,
        bad: false,
        details: body.note ? [body.note] : [],
      };
      return;
    }
    if (body.verdict === 'unknown' || body.violation === undefined) {
      lin.value = { text: `verdict unknown${body.note ? `: ${body.note}` : ''}`, bad: false, details: [] };
      return;
    }
    // The culprit must be in the page's copy: fetch what arrived since the last poll first.
    await refresh();
    if (!mounted.current) return;
    const ops = buffer.value.ops;
    const culprit = findReported(ops, body.violation.op);
    if (culprit === undefined) {
      lin.value = {
        text: `not linearizable: ${body.violation.message}`,
        bad: true,
        details: body.violation.linearizable_prefix,
      };
      return;
    }
    const ext = timeExtent(buffer.value);
    const w = findWitness(ops, culprit, ext?.t0 ?? culprit.invoke_ms);
    witness.value = new Set(w.indexes);
    const chosen = ops.filter((o) => w.indexes.includes(o.index));
    lin.value = {
      text: `not linearizable: ${w.reason}`,
      bad: true,
      details: [
        `${w.proven ? 'These' : 'The checker names the last one; these'} ${chosen.length} operation(s) ` +
          'cannot be ordered:',
        ...chosen.map((o) => opText(o)),
      ],
    };
    // Show them: the window over the witness, with a margin.
    const s = Math.min(...chosen.map((o) => o.invoke_ms));
    const e = Math.max(...chosen.map((o) => o.complete_ms));
    const margin = Math.max(1, (e - s) * 0.15);
    onFocus({ start: s - margin, end: e + margin });
  };

  const checkConv = async (): Promise<void> => {
    busy.value = 'convergence';
    const r = await api.get<ConvergenceWire>(cpath(clusterId, '/convergence'));
    busy.value = null;
    if (!mounted.current) return;
    if (!r.ok) conv.value = { text: `convergence check failed: ${r.error}`, bad: true, details: [] };
    else if (r.body.converged)
      conv.value = {
        text: `converged: all ${r.body.keys} keys agree across ${r.body.replicas.join(', ')}`,
        bad: false,
        details: r.body.note ? [r.body.note] : [],
      };
    else
      conv.value = {
        text: `diverged: ${r.body.diverged_total} of ${r.body.keys} keys differ`,
        bad: true,
        details: [...r.body.diverged.slice(0, 20).map(divergedText), ...(r.body.note ? [r.body.note] : [])],
      };
  };

  const checkInv = async (): Promise<void> => {
    busy.value = 'invariants';
    const r = await api.get<{ ok: boolean; violations: string[]; note?: string }>(cpath(clusterId, '/invariants'));
    busy.value = null;
    if (!mounted.current) return;
    if (!r.ok) inv.value = { text: `invariants check failed: ${r.error}`, bad: true, details: [] };
    else
      inv.value = {
        text: r.body.ok ? 'invariants hold' : `${r.body.violations.length} invariant(s) violated`,
        bad: !r.body.ok,
        details: r.body.violations,
      };
  };

  return (
    <div class="checkers">
      <div class="row">
        <button type="button" disabled={busy.value !== null} onClick={() => void checkLin()}>
          Check linearizability
        </button>
        <button type="button" class="secondary" disabled={busy.value !== null} onClick={() => void checkConv()}>
          Check convergence
        </button>
        <button type="button" class="secondary" disabled={busy.value !== null} onClick={() => void checkInv()}>
          Check invariants
        </button>
        {busy.value !== null && <span class="muted">checking {busy.value}…</span>}
      </div>
      <div class="verdicts" aria-live="polite">
        <VerdictView name="Linearizability" v={lin.value} />
        <VerdictView name="Convergence" v={conv.value} />
        <VerdictView name="Invariants" v={inv.value} />
      </div>
    </div>
  );
}

function VerdictView({ name, v }: { name: string; v: Verdict | null }): JSX.Element | null {
  if (v === null) return null;
  return (
    <div class={`hverdict ${v.bad ? 'bad' : 'good'}`}>
      <strong>{name}:</strong> <span>{v.text}</span>
      {v.details.length > 0 && (
        <ul>
          {v.details.map((d, i) => (
            <li key={i}>{d}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
