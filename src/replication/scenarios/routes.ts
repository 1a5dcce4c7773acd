/**
 * HTTP routes of the teaching scenarios (GET /api/v1/scenarios, POST /api/v1/scenarios/{name}/run,
 * GET /api/v1/clusters/{id}/scenario) and the consistency demos (POST clusters/{id}/demo/...).
 * Registered by server.ts. Thin: scenario scripts live in scripts-*.ts and run in runner.ts, the
 * demos in consistency.ts; both drive the cluster through the public API over loopback.
 *
 * GET clusters/{id}/scenario answers the run's report (ScenarioRunReport in runner.ts):
 *   { scenario, cluster_id, status: "running" | "finished" | "aborted" | "error", started_at,
 *     finished_at?, elapsed_ms?, steps: [{step, text, at, data?}], comparison_cluster_ids: [id],
 *     verdict?: {scenario, expected, actual, passed, checks: [{name, passed, detail}]}, error? }
 * 404 for a cluster that ran no scenario. The report outlives its cluster (a deleted cluster's run
 * reads `aborted`), up to scenarioReportsMax reports (limits.ts).
 */
import { HttpError, type HttpApp } from '../../http/index.js';
import type { ClusterConfigBody, ClusterState } from '../../../protocol/replication.js';
import type { Cluster } from '../cluster.js';
import type { CoreEvent } from '../core.js';
import { ClusterGone, LoopbackApi } from './api-client.js';
import { findScenario, scenarioInfo, scenarios } from './catalog.js';
import { runConsistencyDemo, demoKinds, type DemoKind } from './consistency.js';
import { ScenarioRuns } from './runner.js';

export interface ScenarioContext {
  app: HttpApp;
  clusters: Map<string, Cluster>;
  /** Publishes an event on /ws for a cluster (scenario_step, scenario_verdict, ...). */
  publish: (clusterId: string, e: CoreEvent) => void;
  /** Creates a cluster exactly as POST /clusters does (same validation); throws HttpError on bad config. */
  createCluster: (body: ClusterConfigBody) => Promise<{ cluster: Cluster; state: ClusterState }>;
  /** Loopback base URL of this server (e.g. http://127.0.0.1:8090), for scripts that drive the public API. */
  selfBase: () => string;
}

export function registerScenarioRoutes(ctx: ScenarioContext): void {
  const { app, clusters } = ctx;
  const api = new LoopbackApi(ctx.selfBase, (id) => clusters.has(id));
  const runs = new ScenarioRuns();
  /** One demo at a time per cluster: each one slows a link and restores it afterwards. */
  const demoQueue = new Map<string, Promise<unknown>>();

  app.get('/api/v1/scenarios', () => ({ status: 200, body: scenarios.map(scenarioInfo) }), {
    summary: 'List the teaching scenarios',
  });

  app.post(
    '/api/v1/scenarios/:name/run',
    async (req) => {
      const name = req.params['name'] ?? '';
      const def = findScenario(name);
      if (!def)
        throw new HttpError(
          404,
          `scenario ${JSON.stringify(name.slice(0, 64))} not found; known scenarios: ` +
            `${scenarios.map((d) => d.name).join(', ')}`,
        );
      const { state } = await ctx.createCluster(def.config);
      runs.start({ scenario: def.name, state, api, publish: ctx.publish, script: def.script });
      return { status: 201, body: state };
    },
    { summary: 'Run a scenario to its verdict' },
  );

  app.get(
    '/api/v1/clusters/:id/scenario',
    (req) => {
      const id = req.params['id'] ?? '';
      const report = runs.get(id);
      if (!report) {
        throw new HttpError(
          404,
          clusters.has(id)
            ? `cluster ${id} did not run a scenario`
            : `cluster ${id} not found (and no scenario report is kept for it)`,
        );
      }
      return { status: 200, body: report };
    },
    { summary: 'The scenario a cluster was created by, and its steps' },
  );

  const demo = (kind: DemoKind) => async (req: { params: Record<string, string> }) => {
    const id = req.params['id'] ?? '';
    const cluster = clusters.get(id);
    if (!cluster) throw new HttpError(404, `cluster ${id} not found`);
    const before = demoQueue.get(id) ?? Promise.resolve();
    const run = before
      .catch(() => undefined)
      .then(() =>
        runConsistencyDemo(kind, {
          api: api.cluster(id),
          currentLatencyMs: (from, to) => clusters.get(id)?.fabric.latency(from, to) ?? 0,
        }),
      );
    demoQueue.set(id, run);
    try {
      return await run;
    } catch (err) {
      if (err instanceof ClusterGone) throw new HttpError(404, `cluster ${id} not found (deleted during the demo)`);
      throw err;
    } finally {
      if (demoQueue.get(id) === run) demoQueue.delete(id);
    }
  };
  for (const kind of demoKinds) {
    app.post(`/api/v1/clusters/:id/demo/${kind}`, demo(kind), {
      summary: `Run the ${kind.replaceAll('-', ' ')} consistency demo on this cluster, step by step with its verdict`,
    });
  }
}
