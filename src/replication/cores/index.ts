/**
 * Which core runs which strategy, and the DurableFold that rebuilds a restarted node of it from
 * its durable records. Loaders are lazy so a worker imports only its own strategy's code (worker
 * start-up time and memory matter: a benchmark runs 300 of them). A strategy whose core has not
 * landed is refused at cluster creation with 400 `strategy X is not implemented yet`; one without
 * a fold cannot restart a crashed node (409 at the edge).
 */
import type { CoreFactory, DurableFold, Strategy } from '../core.js';

export interface StrategyModule {
  factory: CoreFactory;
  /** Rebuilds CoreOptions.persisted from durable records; undefined: restart is not supported. */
  fold: DurableFold | undefined;
}

const loaders: Record<Strategy, (() => Promise<StrategyModule>) | undefined> = {
  single_leader: async () => {
    const m = await import('./single-leader.js');
    return { factory: m.createSingleLeaderCore, fold: m.singleLeaderDurableFold };
  },
  raft: async () => {
    const m = await import('./raft.js');
    return { factory: m.createRaftCore, fold: m.raftDurableFold };
  },
  leaderless: async () => {
    const m = await import('./leaderless.js');
    return { factory: m.createLeaderlessCore, fold: m.leaderlessDurableFold };
  },
  multi_leader: async () => {
    const m = await import('./multi-leader.js');
    return { factory: m.createMultiLeaderCore, fold: m.multiLeaderDurableFold };
  },
};

/** Strategies whose crashed nodes can be restarted (a DurableFold exists); kept in step with the loaders. */
const restartable: Record<Strategy, boolean> = {
  single_leader: true,
  multi_leader: true,
  leaderless: true,
  raft: true,
};

export function isImplemented(strategy: Strategy): boolean {
  return loaders[strategy] !== undefined;
}

export function canRestart(strategy: Strategy): boolean {
  return restartable[strategy];
}

export async function loadStrategy(strategy: Strategy): Promise<StrategyModule> {
  const load = loaders[strategy];
  if (!load) throw new Error(`strategy ${strategy} is not implemented yet`);
  return load();
}

export async function loadCore(strategy: Strategy): Promise<CoreFactory> {
  return (await loadStrategy(strategy)).factory;
}
