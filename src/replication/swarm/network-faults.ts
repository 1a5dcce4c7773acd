/**
 * The network faults every seeded swarm injects, in one place: a random partition with the chosen
 * node on the smaller side, heal, a one-way drop rate, a one-way latency. Each consumes the seeded
 * random source in a fixed order, so a swarm's trace (and its replay) depends only on its seed.
 * Node faults (pause, crash, restart) and what a strategy does about them stay in each swarm.
 */
import type { DetCluster } from '../../fabric/deterministic.js';
import type { NodeId } from '../core.js';
import type { Rng } from '../../util/rng.js';

export type NetworkFault = 'partition' | 'heal' | 'drop' | 'latency';

/** Heals every partition of the fabric. */
export function healAll(c: DetCluster): void {
  for (const pid of c.fabric.partitions().keys()) c.fabric.heal(pid);
}

/** Applies one network fault around `node` (and `other`, for the one-way link faults). */
export function applyNetworkFault(
  c: DetCluster,
  rng: Rng,
  kind: NetworkFault,
  ids: readonly NodeId[],
  node: NodeId,
  other: NodeId,
): void {
  switch (kind) {
    case 'partition': {
      healAll(c);
      // A random split with the chosen node on the smaller side.
      const rest = ids
        .filter((id) => id !== node)
        .map((id) => ({ id, r: rng.next() }))
        .sort((x, y) => x.r - y.r);
      const cut = rng.range(0, Math.floor((ids.length - 1) / 2));
      c.fabric.partition(
        [node, ...rest.slice(0, cut).map((x) => x.id)],
        rest.slice(cut).map((x) => x.id),
      );
      return;
    }
    case 'heal':
      healAll(c);
      return;
    case 'drop':
      if (node !== other) c.fabric.setDropRate(node, other, rng.chance(0.3) ? 1 : rng.next() * 0.5);
      return;
    case 'latency':
      if (node !== other) c.fabric.setLatency(node, other, rng.range(20, 200));
      return;
  }
}
