/**
 * The "Time travel" panel: a slider named "Time" and buttons "Step back", "Step forward" and "Live"
 * over the record of the cluster on screen (the topology then draws the state at that point), and
 * "Open trace" to play a swarm trace file (`cli.js --trace-out`) read-only, with its own topology.
 * Recording and replay are timeline.ts's; this file only draws them and holds the chosen point.
 */
import { signal, type Signal } from '@preact/signals';
import type { JSX } from 'preact';
import type { ClusterModel } from './model.js';
import type { ReplicationStore } from './store.js';
import { loadTrace, timelineEntriesMax, traceFileBytesMax, type LoadedTrace, type ReplayState } from './timeline.js';
import { Topology } from './topology.js';

/** The live record's point on screen (counting the points cut from its front), or null: live. */
export const travelPoint: Signal<number | null> = signal(null);
/** The cluster whose record travelPoint is in. */
const travelCluster: Signal<string | null> = signal(null);
export const openedTrace: Signal<LoadedTrace | null> = signal(null);
export const tracePoint: Signal<number> = signal(0);
const traceError: Signal<string | null> = signal(null);

/** Violations listed in the trace banner (the file holds up to the run's own cap). */
export const violationsShownMax = 10;

const clamp = (i: number, lo: number, hi: number): number => Math.max(lo, Math.min(hi, i));

/** The model the topology draws for `c`: as it was at the chosen point, or live. */
export function travelledModel(store: ReplicationStore, c: ClusterModel): ClusterModel {
  void store.recorderVersion.value;
  const p = travelPoint.value;
  const tl = store.recorder.timeline;
  if (p === null || travelCluster.value !== c.id || store.recorder.clusterId !== c.id || tl.length === 0) return c;
  return tl.stateAt(clamp(p - tl.dropped, 0, tl.length - 1)).model;
}

function clockOf(at: number): string {
  return new Date(at).toISOString().slice(11, 23);
}

function termsText(s: ReplayState): string {
  const ids = s.model.nodeIds.filter((id) => s.terms[id] !== undefined);
  return ids.map((id) => `${id}:${s.terms[id]}`).join(' ');
}

export function TimeTravelPanel({ store }: { store: ReplicationStore }): JSX.Element {
  void store.recorderVersion.value;
  const trace = openedTrace.value;
  const rec = store.recorder;
  if (!trace && travelPoint.value !== null && travelCluster.value !== rec.clusterId) travelPoint.value = null;
  const tl = trace ? trace.timeline : rec.timeline;
  const n = tl.length;
  const live = !trace && travelPoint.value === null;
  const idx = trace
    ? clamp(tracePoint.value, 0, Math.max(n - 1, 0))
    : live
      ? n - 1
      : clamp((travelPoint.value as number) - tl.dropped, 0, n - 1);
  const go = (i: number): void => {
    if (n === 0) return;
    const j = clamp(i, 0, n - 1);
    if (trace) tracePoint.value = j;
    else {
      travelCluster.value = rec.clusterId;
      travelPoint.value = rec.timeline.dropped + j;
    }
  };
  const backToLive = (): void => {
    openedTrace.value = null;
    traceError.value = null;
    travelPoint.value = null;
  };
  const open = async (input: HTMLInputElement): Promise<void> => {
    const file = input.files?.[0];
    if (!file) return;
    if (file.size > traceFileBytesMax) {
      traceError.value = `${file.name} is over ${traceFileBytesMax} bytes`;
      return;
    }
    const r = loadTrace(await file.text());
    input.value = '';
    if ('error' in r) {
      traceError.value = `${file.name}: ${r.error}`;
      return;
    }
    traceError.value = null;
    openedTrace.value = r;
    tracePoint.value = 0;
  };
  const entry = n > 0 ? tl.entry(idx) : undefined;
  const where =
    entry === undefined
      ? 'nothing recorded yet'
      : `point ${idx + 1} of ${n} · ${trace ? `t = ${entry.at} ms` : clockOf(entry.at)} · ${entry.label}`;
  const state = trace && n > 0 ? trace.timeline.stateAt(idx) : null;
  const traffic = trace ? trace.traffic[idx] : undefined;
  return (
    <section class="panel time-travel" aria-labelledby="travel-h" style={{ marginTop: '12px' }}>
      <h2 id="travel-h">Time travel</h2>
      <div class="row">
        <label class="travel-slider">
          Time
          <input
            type="range"
            min={0}
            max={Math.max(n - 1, 0)}
            value={Math.max(idx, 0)}
            disabled={n < 2}
            aria-valuetext={live ? `live, ${where}` : where}
            onInput={(e) => go(Number((e.currentTarget as HTMLInputElement).value))}
          />
        </label>
        <button type="button" class="secondary" disabled={n < 2 || idx <= 0} onClick={() => go(idx - 1)}>
          Step back
        </button>
        <button type="button" class="secondary" disabled={live || idx >= n - 1} onClick={() => go(idx + 1)}>
          Step forward
        </button>
        <button type="button" disabled={live} onClick={backToLive}>
          Live
        </button>
        <label>
          Open trace
          <input
            type="file"
            accept=".json,application/json"
            onChange={(e) => void open(e.currentTarget as HTMLInputElement)}
          />
        </label>
      </div>
      <p class="muted travel-where">
        {live
          ? `live · ${n} points recorded of the cluster on screen (the last ${timelineEntriesMax} kept)`
          : `${trace ? 'trace' : 'replaying'} · ${where}`}
      </p>
      {traceError.value !== null && <p class="error">{traceError.value}</p>}
      {trace && state && (
        <section class="trace-replay" aria-label="Trace replay">
          <p class="trace-banner">
            Read-only replay of a deterministic run: seed {trace.info.seed}, strategy {trace.info.strategy},{' '}
            {trace.info.ok ? 'passed' : 'FAILED'}
            {trace.info.dropped > 0 ? ` (${trace.info.dropped} events past the file's caps left out)` : ''}. Replay it
            with <code>{trace.info.replay}</code>
          </p>
          {trace.info.violations.length > 0 && (
            <ul class="trace-violations" aria-label="Violations">
              {trace.info.violations.slice(0, violationsShownMax).map((v) => (
                <li key={v}>{v}</li>
              ))}
            </ul>
          )}
          <p class="muted">
            {state.model.leaderId !== null ? `leader ${state.model.leaderId}` : 'no leader'}
            {termsText(state) !== '' ? ` · terms ${termsText(state)}` : ''}
          </p>
          <Topology cluster={state.model} />
          {traffic && (
            <>
              <p class="muted">
                Since the previous point: {traffic.delivered} messages delivered, {traffic.dropped} dropped
              </p>
              {traffic.latest.length > 0 && (
                <ul class="trace-messages" aria-label="Latest messages before this point">
                  {traffic.latest.map((l, i) => (
                    <li key={`${i} ${l}`}>
                      <code>{l}</code>
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
        </section>
      )}
    </section>
  );
}
