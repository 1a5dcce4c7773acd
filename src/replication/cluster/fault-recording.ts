/**
 * A cluster's link settings and how they show in its fault log: the base latency of a link (the
 * inter-region latency, else 0), re-applying it after faults are cleared, and turning each change
 * of the fabric's fault settings into an interval of the log (a latency back to its base closes
 * one). It decides nothing about delivery: the fabric does; node faults are logged where applied.
 */
import type { Fabric, FabricFaultChange } from '../../fabric/fabric.js';
import type { WirePayload } from '../../fabric/live.js';
import { unreachable } from '../../util/assert.js';
import type { ClusterConfig, NodeId } from '../core.js';
import type { FaultLog } from '../history.js';

/** The latency a link has with no fault applied: the inter-region latency between regions, else 0. */
export function baseLatencyMs(
  config: ClusterConfig,
  regions: Readonly<Record<NodeId, number>>,
  from: NodeId,
  to: NodeId,
): number {
  if (config.regions <= 1 || regions[from] === regions[to]) return 0;
  return config.inter_region_latency_ms;
}

/** Inter-region latency is the base topology, re-applied after faults are cleared. */
export function applyRegionLatency(
  fabric: Fabric<WirePayload>,
  config: ClusterConfig,
  regions: Readonly<Record<NodeId, number>>,
): void {
  if (config.regions <= 1) return;
  const ids = fabric.nodes();
  for (const a of ids)
    for (const b of ids) {
      if (a !== b && regions[a] !== regions[b]) fabric.setLatency(a, b, config.inter_region_latency_ms);
    }
}

/** The fabric's fault settings changed: open or close the matching interval of the fault log. */
export function recordFault(
  faults: FaultLog,
  change: FabricFaultChange,
  baseLatency: (from: NodeId, to: NodeId) => number,
  now: number,
): void {
  switch (change.kind) {
    case 'latency': {
      const key = `latency ${change.from}>${change.to}`;
      if (change.ms === baseLatency(change.from, change.to)) faults.close(key, now);
      else faults.open(key, { kind: 'latency', from: change.from, to: change.to, value: change.ms }, now);
      return;
    }
    case 'drop': {
      const key = `drop ${change.from}>${change.to}`;
      if (change.rate === 0) faults.close(key, now);
      else faults.open(key, { kind: 'drop', from: change.from, to: change.to, value: change.rate }, now);
      return;
    }
    case 'partition':
      faults.open(
        `partition ${change.partitionId}`,
        {
          kind: 'partition',
          partition_id: change.partitionId,
          group_a: change.groupA,
          group_b: change.groupB,
        },
        now,
      );
      return;
    case 'heal':
      faults.close(`partition ${change.partitionId}`, now);
      return;
    case 'clear':
      faults.closeWhere((k) => /^(partition|latency|drop) /.test(k), now);
      faults.instant({ kind: 'heal' }, now);
      return;
    default:
      return unreachable(change);
  }
}

/** The fault-log keys that belong to a node: its node faults and those of its links (it was removed). */
export function isFaultOfNode(key: string, nodeId: NodeId): boolean {
  return key.endsWith(` ${nodeId}`) || key.includes(` ${nodeId}>`) || key.endsWith(`>${nodeId}`);
}
