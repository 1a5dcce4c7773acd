/**
 * Cluster configuration: fills defaults (limits.ts) and checks ranges exactly as
 * ../shared/specs/DECISIONS.md settles them, returning a value or an error message that names the
 * field and the bound (never throwing). Protocol timings are checked by validateTimings() instead.
 */
import type { ClusterConfigBody } from '../../protocol/replication.js';
import type { ClusterConfig } from './core.js';
import {
  interRegionLatencyMsDefault,
  nodeCountDefault,
  nodeCountLeaderlessDefault,
  nodeCountMax,
  quorumNLeaderlessDefault,
  regionsDefault,
} from './limits.js';

export { nodeCountMax };

export function effectiveConfig(
  body: ClusterConfigBody,
): { ok: true; config: ClusterConfig } | { ok: false; error: string } {
  const strategy = body.strategy;
  const defaultCount = strategy === 'leaderless' ? nodeCountLeaderlessDefault : nodeCountDefault;
  const nodeCount = body.node_count === undefined || body.node_count < 1 ? defaultCount : body.node_count;
  if (nodeCount > nodeCountMax)
    return { ok: false, error: `node_count must be between 1 and ${nodeCountMax} (got ${nodeCount})` };
  const n = body.quorum_n ?? (strategy === 'leaderless' ? Math.min(quorumNLeaderlessDefault, nodeCount) : nodeCount);
  const majority = Math.floor(n / 2) + 1;
  const w = body.quorum_w ?? majority;
  const r = body.quorum_r ?? majority;
  if (strategy === 'leaderless') {
    if (n < 1 || n > nodeCount)
      return { ok: false, error: `quorum_n must be between 1 and node_count (${nodeCount}) (got ${n})` };
    if (w < 1 || w > n) return { ok: false, error: `quorum_w must be between 1 and quorum_n (${n}) (got ${w})` };
    if (r < 1 || r > n) return { ok: false, error: `quorum_r must be between 1 and quorum_n (${n}) (got ${r})` };
    if (w + r <= n)
      return {
        ok: false,
        error:
          'quorum_w + quorum_r must be greater than quorum_n so that read and write quorums ' +
          `overlap (W=${w} + R=${r} <= N=${n})`,
      };
  }
  const regions = body.regions ?? regionsDefault;
  if (regions < 1 || regions > nodeCount)
    return { ok: false, error: `regions must be between 1 and node_count (${nodeCount}) (got ${regions})` };
  return {
    ok: true,
    config: {
      strategy,
      node_count: nodeCount,
      replication_mode: body.replication_mode ?? 'async',
      conflict_resolver: body.conflict_resolver ?? 'lww',
      quorum_n: n,
      quorum_w: w,
      quorum_r: r,
      regions,
      inter_region_latency_ms: body.inter_region_latency_ms ?? interRegionLatencyMsDefault,
      consistency_level: body.consistency_level ?? 'quorum',
      read_repair_mode: body.read_repair_mode ?? 'async',
      sloppy_quorum: body.sloppy_quorum ?? true,
    },
  };
}

/** The effective configuration for internal callers (simulations, demos, benchmarks); throws on an invalid body. */
export function clusterConfig(body: ClusterConfigBody): ClusterConfig {
  const eff = effectiveConfig(body);
  if (!eff.ok) throw new Error(eff.error);
  return eff.config;
}
