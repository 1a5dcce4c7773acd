import t from 'tap';
import { clusterConfig } from '../../src/replication/config.js';
import { createLeaderlessCore, leaderlessDurableFold } from '../../src/replication/cores/leaderless.js';
import { createMultiLeaderCore, multiLeaderDurableFold } from '../../src/replication/cores/multi-leader.js';
import { createRaftCore, raftDurableFold } from '../../src/replication/cores/raft.js';
import { createSingleLeaderCore, singleLeaderDurableFold } from '../../src/replication/cores/single-leader.js';
import { runCoreConformance } from './core-conformance.js';

runCoreConformance(t, {
  strategy: 'single_leader',
  factory: createSingleLeaderCore,
  fold: singleLeaderDurableFold,
  config: clusterConfig({ strategy: 'single_leader', node_count: 3 }),
});

runCoreConformance(t, {
  strategy: 'multi_leader',
  factory: createMultiLeaderCore,
  fold: multiLeaderDurableFold,
  config: clusterConfig({ strategy: 'multi_leader', node_count: 3 }),
});

runCoreConformance(t, {
  strategy: 'leaderless',
  factory: createLeaderlessCore,
  fold: leaderlessDurableFold,
  config: clusterConfig({ strategy: 'leaderless', node_count: 5 }),
});

runCoreConformance(t, {
  strategy: 'raft',
  factory: createRaftCore,
  fold: raftDurableFold,
  config: clusterConfig({ strategy: 'raft', node_count: 3 }),
});
