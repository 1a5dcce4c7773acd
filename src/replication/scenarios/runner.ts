/**
 * Runs one teaching scenario in the background against a cluster that already exists: gives the
 * script its context (a loopback API client, step narration, abort-aware sleep, extra clusters),
 * records every step and the verdict, and publishes them as `scenario_step` / `scenario_verdict`.
 * The verdict is made of checks the script computed from what it observed; this module only
 * combines them. It is not the HTTP layer (routes.ts) and holds no scenario logic (scripts-*.ts).
 */
import type { ClusterState } from '../../../protocol/replication.js';
import type { CoreEvent } from '../core.js';
import { SeededRng, type Rng } from '../../util/rng.js';
import { ClusterGone, type ClusterApi, type LoopbackApi } from './api-client.js';
import { scenarioLeadInMs, scenarioReportsMax, scenarioScriptMsMax } from '../limits.js';

/** One fact a script checked: `detail` says what was observed, with the measured numbers. */
export interface Check {
  name: string;
  passed: boolean;
  detail: string;
}

export interface ScriptOutcome {
  /** What the lesson predicts, in words. */
  expected: string;
  checks: Check[];
}

export interface ScenarioVerdict {
  scenario: string;
  expected: string;
  /** What actually happened: the checks' observations, failures marked. */
  actual: string;
  passed: boolean;
  checks: Check[];
}

export interface StepRecord {
  step: number;
  text: string;
  at: string;
  data?: Record<string, unknown>;
}

export type RunStatus = 'running' | 'finished' | 'aborted' | 'error';

/** GET clusters/{id}/scenario. */
export interface ScenarioRunReport {
  scenario: string;
  cluster_id: string;
  status: RunStatus;
  started_at: string;
  finished_at?: string;
  elapsed_ms?: number;
  steps: StepRecord[];
  verdict?: ScenarioVerdict;
  /** Clusters a script provisioned besides its own (QuorumTuning's comparison), deleted at the end. */
  comparison_cluster_ids: string[];
  error?: string;
}

export interface ScriptContext {
  readonly scenario: string;
  readonly api: LoopbackApi;
  /** The scenario's own cluster. */
  readonly cluster: ClusterApi;
  /** Its state as provisioned. */
  readonly state: ClusterState;
  /** Seeded per run from the cluster id, so a script's choices are reproducible from its report. */
  readonly rng: Rng;
  /** Narrates one step (recorded, and published as scenario_step). */
  step(text: string, data?: Record<string, unknown>): void;
  /** Sleeps; throws ClusterGone if the cluster was deleted meanwhile. */
  sleep(ms: number): Promise<void>;
  /** Provisions another cluster through POST /clusters; it is deleted when the script ends. */
  extraCluster(body: Record<string, unknown>): Promise<{ api: ClusterApi; state: ClusterState }>;
}

export type Script = (s: ScriptContext) => Promise<ScriptOutcome>;

export function check(name: string, passed: boolean, detail: string): Check {
  return { name, passed, detail };
}

export function verdictOf(scenario: string, outcome: ScriptOutcome): ScenarioVerdict {
  const passed = outcome.checks.length > 0 && outcome.checks.every((c) => c.passed);
  const actual = outcome.checks.map((c) => (c.passed ? c.detail : `NOT AS EXPECTED: ${c.detail}`)).join('; ');
  return { scenario, expected: outcome.expected, actual, passed, checks: outcome.checks };
}

function seedOf(id: string): number {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619) >>> 0;
  return h;
}

/** The reports of every scenario run, by cluster id (the comparison clusters point at theirs too). */
export class ScenarioRuns {
  private readonly reports = new Map<string, ScenarioRunReport>();
  evicted = 0;

  get(clusterId: string): ScenarioRunReport | undefined {
    return this.reports.get(clusterId);
  }

  private keep(id: string, r: ScenarioRunReport): void {
    if (!this.reports.has(id) && this.reports.size >= scenarioReportsMax) {
      for (const [k, v] of this.reports) {
        if (v.status !== 'running') {
          this.reports.delete(k);
          this.evicted++;
          break;
        }
      }
    }
    this.reports.set(id, r);
  }

  /** Starts `script` on the cluster `state` in the background and returns its (live) report. */
  start(opts: {
    scenario: string;
    state: ClusterState;
    api: LoopbackApi;
    publish: (clusterId: string, e: CoreEvent) => void;
    script: Script;
  }): ScenarioRunReport {
    const { scenario, state, api, publish, script } = opts;
    const clusterId = state.id;
    const report: ScenarioRunReport = {
      scenario,
      cluster_id: clusterId,
      status: 'running',
      started_at: new Date().toISOString(),
      steps: [],
      comparison_cluster_ids: [],
    };
    this.keep(clusterId, report);
    const cluster = api.cluster(clusterId);
    const extras: string[] = [];
    const started = performance.now();
    const gone = (): boolean => !api.alive(clusterId);
    const ctx: ScriptContext = {
      scenario,
      api,
      cluster,
      state,
      rng: new SeededRng(seedOf(clusterId)),
      step: (text, data) => {
        if (report.status !== 'running') return;
        const rec: StepRecord = { step: report.steps.length + 1, text, at: new Date().toISOString() };
        if (data !== undefined) rec.data = data;
        report.steps.push(rec);
        publish(clusterId, { type: 'scenario_step', data: { scenario, step: rec.step, text, ...(data ?? {}) } });
      },
      sleep: async (ms) => {
        await new Promise((r) => setTimeout(r, ms));
        if (gone()) throw new ClusterGone(clusterId);
      },
      extraCluster: async (body) => {
        const r = await api.createCluster(body);
        if (!r.ok) throw new Error(`the comparison cluster could not be created (${r.status}): ${r.error}`);
        extras.push(r.body.id);
        report.comparison_cluster_ids.push(r.body.id);
        this.keep(r.body.id, report);
        return { api: api.cluster(r.body.id), state: r.body };
      },
    };
    const finish = (status: RunStatus): void => {
      report.status = status;
      report.finished_at = new Date().toISOString();
      report.elapsed_ms = Math.round(performance.now() - started);
    };
    const run = async (): Promise<void> => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await ctx.sleep(scenarioLeadInMs);
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`the script did not finish within ${scenarioScriptMsMax} ms`)),
            scenarioScriptMsMax,
          );
        });
        const outcome = await Promise.race([script(ctx), timeout]);
        if (gone()) throw new ClusterGone(clusterId);
        const verdict = verdictOf(scenario, outcome);
        report.verdict = verdict;
        finish('finished');
        publish(clusterId, { type: 'scenario_verdict', data: { ...verdict } });
      } catch (err) {
        if (err instanceof ClusterGone || gone()) {
          // Deleted under us (ours or a comparison cluster): stop quietly.
          report.error = err instanceof ClusterGone ? err.message : `cluster ${clusterId} was deleted`;
          finish('aborted');
          return;
        }
        report.error = (err as Error).message;
        const verdict = verdictOf(scenario, {
          expected: 'the scenario runs to its end',
          checks: [check('script completed', false, `the script stopped with an error: ${report.error}`)],
        });
        report.verdict = verdict;
        finish('error');
        publish(clusterId, { type: 'scenario_verdict', data: { ...verdict } });
      } finally {
        clearTimeout(timer);
        await Promise.all(extras.map((id) => api.deleteCluster(id)));
      }
    };
    void run();
    return report;
  }
}
