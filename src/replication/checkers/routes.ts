/**
 * HTTP routes of the cluster checkers (convergence, linearizability, invariants, Merkle
 * anti-entropy, safe add-node). Registered by server.ts; the checking logic lives beside this file.
 */
import type { HttpApp } from '../../http/index.js';
import type { Cluster } from '../cluster.js';

export interface CheckerContext {
  app: HttpApp;
  clusters: Map<string, Cluster>;
  /** Publishes an event on /ws for a cluster. */
  publish: (clusterId: string, e: { type: string; node_id?: string; data?: Record<string, unknown> }) => void;
}

export function registerCheckerRoutes(_ctx: CheckerContext): void {
  // Filled in by the checkers work (issue 4).
}
