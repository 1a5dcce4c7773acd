/**
 * The replication simulator service: builds the HTTP app and registers its route modules (thin:
 * decode, call the cluster, map outcome codes to statuses with statusOf from errors.ts, the one
 * table), the /ws event stream (routes/ws-hub.ts) and /metrics. What the modules share is in
 * routes/context.ts; clusters and their node actors live in cluster.ts; protocol logic in the cores.
 */
import v8 from 'node:v8';
import type { Logger } from '../util/logger.js';
import { HttpApp, healthRoutes } from '../http/index.js';
import type { ClusterState } from '../../protocol/replication.js';
import { builtPageDir, serveBuiltPage } from '../http/static.js';
import { packageVersion, serveOpenApi } from '../http/openapi.js';
import { clustersMaxDefault, validateTimings, wsClientsMaxFromEnv } from './limits.js';
import type { Cluster } from './cluster.js';
import { actorPool } from './node-handle.js';
import { defaultTimings, type CoreTimings } from './core.js';
import { registerCheckerRoutes } from './checkers/routes.js';
import { registerDemoRoutes } from './demos/routes.js';
import { registerScenarioRoutes } from './scenarios/routes.js';
import { createRouteContext } from './routes/context.js';
import { registerSimulationRoutes } from './routes/simulation.js';
import { registerClusterRoutes } from './routes/clusters.js';
import { registerKvRoutes } from './routes/kv.js';
import { registerStrategyViewRoutes } from './routes/strategy-views.js';
import { registerNodeRoutes } from './routes/nodes.js';
import { registerNetworkRoutes } from './routes/network.js';
import { registerHistoryRoutes } from './routes/history.js';

export interface ReplSimOptions {
  port: number;
  host?: string;
  logger: Logger;
  timings?: Partial<CoreTimings>;
  /** Max clusters at once (each node is a worker thread). */
  clustersMax?: number;
  /** Max /ws clients at once (default REPLSIM_WS_CLIENTS_MAX, else limits.ts wsClientsMaxDefault). */
  wsClientsMax?: number;
  /** The built page served at `/` (default dist/web/replication of this checkout; scripts/build-web.mjs). */
  webDir?: string;
}

export interface ReplSimHandle {
  port: number;
  app: HttpApp;
  clusters: Map<string, Cluster>;
  close(): Promise<void>;
}

/**
 * V8 flags for every node actor (worker isolates read them when they start, so they are set before
 * the pool's first). `--no-memory-reducer`: V8's memory reducer runs full GCs on an isolate some
 * seconds after its allocation slows down, which is the normal state of a node in a quiet cluster;
 * with hundreds of actors those GCs kept the "idle" workers busy (40 clusters x 5 nodes right after
 * creation: 15-44% of a core with no writes, 0.1% without it) and under writes they delayed acks
 * past single_leader's retransmit timer (1.2-1.6x the 8 peer messages per write). The flag is the
 * process's, the front's heap included. It costs memory: quiet heaps are no longer shrunk (40 x 5
 * idle: 2.03-2.04 GiB RSS against 1.89-1.93, about 0.7 MiB more per node). REPLSIM_ACTOR_V8_FLAGS
 * replaces the list ('' for none). issue 20 point 2.
 */
const actorV8Flags = (process.env['REPLSIM_ACTOR_V8_FLAGS'] ?? '--no-memory-reducer').split(' ').filter(Boolean);

export async function startReplicationSim(opts: ReplSimOptions): Promise<ReplSimHandle> {
  for (const flag of actorV8Flags) v8.setFlagsFromString(flag);
  const log = opts.logger;
  const timings: CoreTimings = { ...defaultTimings, ...(opts.timings ?? {}) };
  const timingsOk = validateTimings(timings);
  if (!timingsOk.ok) throw new Error(`invalid replication timings: ${timingsOk.error}`);
  const app = new HttpApp({ name: 'replsim', logger: log, cors: { origins: '*' } });
  const ctx = createRouteContext({
    app,
    log,
    timings,
    clustersMax: opts.clustersMax ?? clustersMaxDefault,
    wsClientsMax: opts.wsClientsMax ?? wsClientsMaxFromEnv(),
  });
  const { clusters, publish } = ctx;
  healthRoutes(app, ctx.metrics.registry, () => true);
  // GET /openapi.json and /docs: generated from the route table when first asked (src/http/openapi.ts).
  serveOpenApi(app, {
    title: 'simlab replication simulator',
    version: packageVersion(),
    description: 'Clusters of replicated key-value nodes: strategies, faults, histories and checkers.',
  });
  // The web page at GET / (src/http/static.ts; 503 naming `make build` until it is built).
  serveBuiltPage(app, { dir: opts.webDir ?? builtPageDir('replication'), page: 'replication' });

  registerSimulationRoutes(ctx);
  registerClusterRoutes(ctx);
  registerKvRoutes(ctx);
  registerStrategyViewRoutes(ctx);
  registerNodeRoutes(ctx);
  registerNetworkRoutes(ctx);
  registerCheckerRoutes({ app, clusters, publish, checkNodeRoom: ctx.checkNodeRoom });
  registerDemoRoutes(app);
  let boundPort = 0;
  registerScenarioRoutes({
    app,
    clusters,
    publish,
    createCluster: ctx.provision,
    selfBase: () => `http://127.0.0.1:${boundPort}`,
  });
  registerHistoryRoutes(ctx);
  ctx.events.register(app, ctx.clustersMax);

  const port = await app.listen(opts.port, opts.host ?? '0.0.0.0');
  boundPort = port;
  actorPool.warm();
  return {
    port,
    app,
    clusters,
    close: async () => {
      ctx.events.close();
      app.close();
      await Promise.all([...clusters.keys()].map((id) => ctx.deleteCluster(id)));
      await actorPool.drain();
    },
  };
}

export type { ClusterState };
