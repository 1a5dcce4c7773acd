/**
 * HTTP routes of the teaching scenarios (GET /api/v1/scenarios, POST /api/v1/scenarios/{name}/run,
 * GET /api/v1/clusters/{id}/scenario) and the consistency demos (POST clusters/{id}/demo/...).
 * Registered by server.ts.
 */
import type { HttpApp } from '../../http/index.js';
import type { ClusterConfigBody, ClusterState } from '../../../protocol/replication.js';
import type { Cluster } from '../cluster.js';
import type { CoreEvent } from '../core.js';

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

export function registerScenarioRoutes(_ctx: ScenarioContext): void {
  // Filled in by the scenarios work (issue 7).
}
