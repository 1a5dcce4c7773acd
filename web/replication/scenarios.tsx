/**
 * Scenarios and demos from the page: a `Scenario` select listing the API's teaching scenarios
 * (GET /api/v1/scenarios), the consistency demos (on the cluster shown) and the primitive demos
 * (no cluster), a "Run scenario" button, and the "Narration" region with the steps and the
 * verdict. A scenario's steps arrive as `scenario_step` events on /ws while it plays (its report,
 * GET clusters/{id}/scenario, fills any step the socket missed); the demos answer with their whole
 * narrative at the end, which the region says. It runs nothing itself: the server plays them.
 */
import type { JSX } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../shared/api.js';
import type { ClusterModel, ClusterStateWire, FrameWire } from './model.js';
import type { ReplicationStore } from './store.js';
import { chosenLink, cpath, selectedCluster, selectedNodes } from './ui-state.js';
import {
  consistencyDemos,
  demoVerdict,
  earlyFramesMax,
  mergeSteps,
  primitiveDemos,
  scenarioVerdictLines,
  scenarioVerdictWaitMs,
  type Choice,
  type CheckWire,
  type Narration,
  type ScenarioInfoWire,
  type ScenarioReportWire,
  type VerdictWire,
} from './scenarios-logic.js';

function stepOf(f: FrameWire): { n: number; text: string } | null {
  const n = f.data?.['step'];
  const text = f.data?.['text'];
  return typeof n === 'number' && typeof text === 'string' ? { n, text } : null;
}

function verdictOfFrame(f: FrameWire): VerdictWire | null {
  const d = f.data;
  if (!d || typeof d['passed'] !== 'boolean' || !Array.isArray(d['checks'])) return null;
  return {
    expected: typeof d['expected'] === 'string' ? d['expected'] : '',
    actual: typeof d['actual'] === 'string' ? d['actual'] : '',
    passed: d['passed'],
    checks: (d['checks'] as unknown[]).filter(
      (c): c is CheckWire => c !== null && typeof c === 'object' && typeof (c as CheckWire).name === 'string',
    ),
  };
}

export function ScenarioPanel({
  store,
  current,
}: {
  store: ReplicationStore;
  current: ClusterModel | null;
}): JSX.Element {
  const [scenarioList, setScenarioList] = useState<Choice[]>([]);
  const [listError, setListError] = useState<string | null>(null);
  const [choice, setChoice] = useState('');
  const [narration, setNarration] = useState<Narration | null>(null);
  const runId = useRef<string | null>(null);
  const early = useRef<FrameWire[]>([]);
  const currentRef = useRef(current);
  /** Takes the frames of a run that came before its id was known, and reads its report once. */
  const adopt = useRef<((id: string) => void) | null>(null);
  currentRef.current = current;

  useEffect(() => {
    let live = true;
    void api.get<ScenarioInfoWire[]>('/api/v1/scenarios').then((r) => {
      if (!live) return;
      if (!r.ok || !Array.isArray(r.body)) {
        setListError(`scenarios: ${r.ok ? 'not a list' : r.error}`);
        return;
      }
      const list = r.body.map(
        (s): Choice => ({
          value: `scenario:${s.name}`,
          label: `${s.name} (${s.strategy}, ${s.node_count} nodes)`,
          description: s.description,
          group: 'scenario',
        }),
      );
      setScenarioList(list);
      setChoice((c) => (c === '' ? (list[0]?.value ?? consistencyDemos[0]?.value ?? '') : c));
    });
    return () => {
      live = false;
    };
  }, []);

  // Steps and the verdict of the running scenario, as they are published.
  useEffect(() => {
    const readReport = async (id: string): Promise<void> => {
      const r = await api.get<ScenarioReportWire>(cpath(id, '/scenario'));
      if (!r.ok || runId.current !== id) return;
      const rep = r.body;
      setNarration((n) => {
        if (n === null || n.clusterId !== id) return n;
        const steps = mergeSteps(
          n.steps,
          rep.steps.map((s) => ({ n: s.step, text: s.text })),
        );
        if (rep.status === 'running') return { ...n, steps };
        const verdict = rep.verdict ? scenarioVerdictLines(rep.verdict) : n.verdict;
        const note = rep.status === 'aborted' ? `aborted: ${rep.error ?? 'the cluster was deleted'}` : n.note;
        return { ...n, steps, verdict, status: rep.status === 'finished' ? 'finished' : 'error', note };
      });
    };
    const onFrame = (f: FrameWire): void => {
      if (f.type === 'events_dropped' && runId.current !== null) {
        void readReport(runId.current);
        return;
      }
      if (f.type !== 'scenario_step' && f.type !== 'scenario_verdict') return;
      const id = runId.current;
      if (id === null || f.cluster_id !== id) {
        early.current.push(f);
        if (early.current.length > earlyFramesMax) early.current.shift();
        return;
      }
      apply(f);
    };
    const apply = (f: FrameWire): void => {
      if (f.type === 'scenario_step') {
        const s = stepOf(f);
        if (s) setNarration((n) => (n && n.clusterId === f.cluster_id ? { ...n, steps: mergeSteps(n.steps, [s]) } : n));
      } else {
        const v = verdictOfFrame(f);
        if (v) {
          setNarration((n) =>
            n && n.clusterId === f.cluster_id ? { ...n, status: 'finished', verdict: scenarioVerdictLines(v) } : n,
          );
          // The report completes any step the socket lost.
          if (f.cluster_id !== undefined) void readReport(f.cluster_id);
        }
      }
    };
    store.listeners.add(onFrame);
    adopt.current = (id: string) => {
      const mine = early.current.filter((f) => f.cluster_id === id);
      early.current = early.current.filter((f) => f.cluster_id !== id);
      for (const f of mine) apply(f);
      void readReport(id);
    };
    return () => {
      store.listeners.delete(onFrame);
      adopt.current = null;
    };
  }, [store]);

  const all = [...scenarioList, ...consistencyDemos, ...primitiveDemos];
  const chosen = all.find((c) => c.value === choice);
  const running = narration?.status === 'running';

  const run = async (): Promise<void> => {
    if (!chosen) return;
    const [kind, id] = [
      chosen.value.slice(0, chosen.value.indexOf(':')),
      chosen.value.slice(chosen.value.indexOf(':') + 1),
    ];
    if (kind === 'scenario') {
      runId.current = null;
      setNarration({
        title: id,
        status: 'running',
        steps: [],
        verdict: null,
        note: 'creating its cluster…',
        clusterId: null,
      });
      const r = await api.post<ClusterStateWire>(`/api/v1/scenarios/${encodeURIComponent(id)}/run`);
      if (!r.ok) {
        setNarration({
          title: id,
          status: 'error',
          steps: [],
          verdict: null,
          note: `could not start: ${r.error}`,
          clusterId: null,
        });
        return;
      }
      const cid = r.body.id;
      runId.current = cid;
      setNarration({
        title: id,
        status: 'running',
        steps: [],
        verdict: null,
        note: `playing on cluster ${cid} (shown above); steps appear as the server narrates them`,
        clusterId: cid,
      });
      selectedCluster.value = cid;
      selectedNodes.value = [];
      chosenLink.value = null;
      void store.resync(cid);
      adopt.current?.(cid);
      // A verdict normally arrives as an event; without one (socket down), the report is read once.
      setTimeout(() => {
        if (runId.current === cid) adopt.current?.(cid);
      }, scenarioVerdictWaitMs);
      return;
    }
    runId.current = null;
    if (kind === 'consistency') {
      const c = currentRef.current;
      if (c === null) {
        setNarration({
          title: id,
          status: 'error',
          steps: [],
          verdict: null,
          note: 'this demo runs on the cluster shown: create or pick one first (two online nodes at least)',
          clusterId: null,
        });
        return;
      }
      setNarration({
        title: `${id} on ${c.id}`,
        status: 'running',
        steps: [],
        verdict: null,
        note: `running on cluster ${c.id} (it slows one link for a moment); this demo reports its steps at its end`,
        clusterId: c.id,
      });
      const r = await api.post<{ held: boolean; verdict: string; explanation: string; narrative: string[] }>(
        cpath(c.id, `/demo/${id}`),
      );
      store.refreshSoon(c.id, 0);
      setNarration(
        r.ok
          ? {
              title: `${id} on ${c.id}`,
              status: 'finished',
              steps: r.body.narrative.map((text, i) => ({ n: i + 1, text })),
              verdict: { passed: r.body.held, lines: [`The guarantee ${r.body.verdict}.`, r.body.explanation] },
              note: 'the demo answered with its whole narrative at its end: the steps are shown as they came back',
              clusterId: c.id,
            }
          : {
              title: id,
              status: 'error',
              steps: [],
              verdict: null,
              note: `the demo failed: ${r.error}`,
              clusterId: c.id,
            },
      );
      return;
    }
    const demo = primitiveDemos.find((d) => d.value === chosen.value);
    if (!demo) return;
    setNarration({
      title: demo.label,
      status: 'running',
      steps: [],
      verdict: null,
      note: 'running on the simulated network (no cluster); this demo reports its steps at its end',
      clusterId: null,
    });
    const r = await api.get<Record<string, unknown>>(demo.path);
    const narrative = r.ok && Array.isArray(r.body['narrative']) ? (r.body['narrative'] as unknown[]) : [];
    setNarration(
      r.ok
        ? {
            title: demo.label,
            status: 'finished',
            steps: narrative.map((text, i) => ({ n: i + 1, text: String(text) })),
            verdict: demoVerdict(demo.value, r.body),
            note: 'the demo answered with its whole narrative at its end: the steps are shown as they came back',
            clusterId: null,
          }
        : {
            title: demo.label,
            status: 'error',
            steps: [],
            verdict: null,
            note: `the demo failed: ${r.error}`,
            clusterId: null,
          },
    );
  };

  const group = (g: Choice['group']): Choice[] => all.filter((c) => c.group === g);
  return (
    <section class="panel scenarios" aria-labelledby="scenarios-h">
      <h2 id="scenarios-h">Scenarios and demos</h2>
      <div class="row">
        <label>
          Scenario
          <select value={choice} onChange={(e) => setChoice((e.currentTarget as HTMLSelectElement).value)}>
            <optgroup label="Scenarios (each on a new cluster)">
              {group('scenario').map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </optgroup>
            <optgroup label="Consistency demos (on the cluster shown)">
              {group('consistency').map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </optgroup>
            <optgroup label="Primitive demos (no cluster)">
              {group('demo').map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </optgroup>
          </select>
        </label>
        <button type="button" disabled={!chosen || running} onClick={() => void run()}>
          Run scenario
        </button>
        {listError !== null && <span class="error">{listError}</span>}
      </div>
      {chosen && <p class="muted scenario-desc">{chosen.description}</p>}
      {/* Focusable: it scrolls, and a keyboard user must be able to scroll it (axe: scrollable-region-focusable). */}
      <div role="region" aria-label="Narration" class="narration" aria-live="polite" tabIndex={0}>
        {narration === null ? (
          <p class="muted">Pick a scenario or a demo and run it: its steps and verdict appear here.</p>
        ) : (
          <>
            <h3>
              {narration.title} · {narration.status === 'running' ? 'playing…' : narration.status}
            </h3>
            {narration.note !== null && <p class="muted">{narration.note}</p>}
            <ol class="steps">
              {narration.steps.map((s) => (
                <li key={s.n} value={s.n}>
                  {s.text}
                </li>
              ))}
            </ol>
            {narration.verdict !== null && (
              <div class={`verdict ${narration.verdict.passed === false ? 'failed' : 'passed'}`}>
                <p>
                  <strong>
                    Verdict:{' '}
                    {narration.verdict.passed === null
                      ? 'see the outcome'
                      : narration.verdict.passed
                        ? 'as expected'
                        : 'not as expected'}
                  </strong>
                </p>
                {narration.verdict.lines.map((l, i) => (
                  <p key={i}>{l}</p>
                ))}
              </div>
            )}
          </>
        )}
      </div>
    </section>
  );
}
