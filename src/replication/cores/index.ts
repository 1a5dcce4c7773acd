/**
 * Which core runs which strategy. Loaders are lazy so a worker imports only its own strategy's
 * code (worker start-up time and memory matter: a benchmark runs 300 of them). A strategy whose
 * core has not landed is refused at cluster creation with 400 `strategy X is not implemented yet`.
 */
import type { CoreFactory, Strategy } from '../core.js';

const loaders: Record<Strategy, (() => Promise<CoreFactory>) | undefined> = {
  single_leader: async () => (await import('./single-leader.js')).createSingleLeaderCore,
  raft: async () => (await import('./raft.js')).createRaftCore,
  leaderless: async () => (await import('./leaderless.js')).createLeaderlessCore,
  multi_leader: async () => (await import('./multi-leader.js')).createMultiLeaderCore,
};

export function isImplemented(strategy: Strategy): boolean {
  return loaders[strategy] !== undefined;
}

export async function loadCore(strategy: Strategy): Promise<CoreFactory> {
  const load = loaders[strategy];
  if (!load) throw new Error(`strategy ${strategy} is not implemented yet`);
  return load();
}
