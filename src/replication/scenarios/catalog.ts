/**
 * The fourteen teaching scenarios (names are the contract, ../shared/specs/DECISIONS.md): for each, the cluster it
 * provisions (validated like any POST /clusters body), a one-paragraph description, and its script.
 * Only data; running them is runner.ts's job.
 */
import type { ClusterConfigBody } from '../../../protocol/replication.js';
import type { Script } from './runner.js';
import { leaderFailover, multiLeaderConflict, replicationLag, splitBrain, syncVsAsync } from './scripts-leader.js';
import {
  cascadingFailure,
  clockSkewLWW,
  corruptReplica,
  hotKeyZipfian,
  networkFlapping,
  networkPartitionHeal,
  quorumTuning,
  readRepair,
  thunderingHerd,
} from './scripts-leaderless.js';

export type ScenarioName =
  | 'ReplicationLag'
  | 'SyncVsAsync'
  | 'LeaderFailover'
  | 'MultiLeaderConflict'
  | 'SplitBrain'
  | 'QuorumTuning'
  | 'ReadRepair'
  | 'NetworkPartitionHeal'
  | 'CascadingFailure'
  | 'ThunderingHerd'
  | 'HotKeyZipfian'
  | 'NetworkFlapping'
  | 'ClockSkewLWW'
  | 'CorruptReplica';

export interface ScenarioDef {
  name: ScenarioName;
  description: string;
  config: ClusterConfigBody & { node_count: number };
  script: Script;
}

/** GET /api/v1/scenarios: Scenario {name, strategy, description, node_count} plus the cluster config it provisions. */
export interface ScenarioInfo {
  name: ScenarioName;
  strategy: string;
  description: string;
  node_count: number;
  config: ClusterConfigBody;
}

const leaderless5 = { strategy: 'leaderless', node_count: 5, quorum_n: 3, quorum_w: 2, quorum_r: 2 } as const;

export const scenarios: readonly ScenarioDef[] = [
  {
    name: 'ReplicationLag',
    description:
      'Asynchronous single-leader replication with one follower behind a 500 ms link: writes are acknowledged at ' +
      'once, the slow follower serves stale reads and reports lag, then catches up.',
    config: { strategy: 'single_leader', node_count: 4, replication_mode: 'async' },
    script: replicationLag,
  },
  {
    name: 'SyncVsAsync',
    description:
      'The same writes under async and then sync replication with slow follower links: sync writes cost the link ' +
      'delay but are on every follower when acknowledged; async writes are fast but not yet replicated.',
    config: { strategy: 'single_leader', node_count: 3, replication_mode: 'async' },
    script: syncVsAsync,
  },
  {
    name: 'LeaderFailover',
    description:
      'The leader acknowledges writes its followers have not received, then stops; the most up-to-date follower is ' +
      'promoted and those acknowledged writes are orphaned.',
    config: { strategy: 'single_leader', node_count: 4, replication_mode: 'async' },
    script: leaderFailover,
  },
  {
    name: 'MultiLeaderConflict',
    description:
      'Every node is isolated and writes the same key; after healing the concurrent versions are detected as ' +
      'conflicts and last-writer-wins keeps one everywhere.',
    config: { strategy: 'multi_leader', node_count: 3, conflict_resolver: 'lww' },
    script: multiLeaderConflict,
  },
  {
    name: 'SplitBrain',
    description:
      'A 2-2 partition of a multi-leader cluster: both halves accept conflicting writes, then the partition heals ' +
      'and anti-entropy reconciles them (one update of the conflicting key is lost, the rest survives).',
    config: { strategy: 'multi_leader', node_count: 4, conflict_resolver: 'lww' },
    script: splitBrain,
  },
  {
    name: 'QuorumTuning',
    description:
      'N5 W1 R5 (this cluster) against N5 W5 R1 (a comparison cluster, deleted at the end) with one slow replica: ' +
      'small W makes writes fast, small R makes reads fast, and W + R > N keeps both reading the latest write; W + ' +
      'R <= N is refused.',
    config: { strategy: 'leaderless', node_count: 5, quorum_n: 5, quorum_w: 1, quorum_r: 5 },
    script: quorumTuning,
  },
  {
    name: 'ReadRepair',
    description:
      'N5 W3 R3: two replicas are cut off while a key is overwritten; after healing a quorum read returns the new ' +
      'value and read repair brings the stale replicas up to date.',
    config: { strategy: 'leaderless', node_count: 5, quorum_n: 5, quorum_w: 3, quorum_r: 3, read_repair_mode: 'async' },
    script: readRepair,
  },
  {
    name: 'NetworkPartitionHeal',
    description:
      'A 2-3 partition with N3 W3 R2: the majority side keeps accepting writes (with hinted stand-ins), the ' +
      'minority side cannot; after healing anti-entropy converges every replica.',
    config: { strategy: 'leaderless', node_count: 5, quorum_n: 3, quorum_w: 3, quorum_r: 2 },
    script: networkPartitionHeal,
  },
  {
    name: 'CascadingFailure',
    description:
      'Nodes fail one after another: sloppy quorum and hinted handoff keep writes going while W nodes are up; ' +
      'below that writes are refused; after recovery the hints are handed off.',
    config: { ...leaderless5 },
    script: cascadingFailure,
  },
  {
    name: 'ThunderingHerd',
    description:
      '50 concurrent writes to one key: every request is answered, last-writer-wins keeps one value on every ' +
      'replica, and back-pressure drops are counted, never silent.',
    config: { ...leaderless5 },
    script: thunderingHerd,
  },
  {
    name: 'HotKeyZipfian',
    description:
      "Skewed load, 80% on one key and the rest Zipf-distributed: the hot key's replicas apply far more versions " +
      'than any other node.',
    config: { ...leaderless5 },
    script: hotKeyZipfian,
  },
  {
    name: 'NetworkFlapping',
    description:
      "One link's drop rate toggles between 1.0 and 0.0 while writes continue: every write succeeds, the fabric " +
      'counts the drops, and the replicas converge afterwards.',
    config: { ...leaderless5 },
    script: networkFlapping,
  },
  {
    name: 'ClockSkewLWW',
    description:
      "One node's clock runs 5 s behind; a write it makes after reading another node's write still gets the larger " +
      'hybrid-logical-clock timestamp, so last-writer-wins keeps the causally later write.',
    config: { strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 },
    script: clockSkewLWW,
  },
  {
    name: 'CorruptReplica',
    description:
      "One replica's copy is overwritten with an older, wrong value; the convergence check flags it and a Merkle " +
      'anti-entropy round heals it.',
    config: { ...leaderless5 },
    script: corruptReplica,
  },
];

const byName = new Map<string, ScenarioDef>(scenarios.map((d) => [d.name, d]));
const byLowerName = new Map<string, ScenarioDef>(scenarios.map((d) => [d.name.toLowerCase(), d]));

/** Exact name first; a name differing only in case is accepted too. */
export function findScenario(name: string): ScenarioDef | undefined {
  return byName.get(name) ?? byLowerName.get(name.toLowerCase());
}

export function scenarioInfo(d: ScenarioDef): ScenarioInfo {
  return {
    name: d.name,
    strategy: d.config.strategy,
    description: d.description,
    node_count: d.config.node_count,
    config: d.config,
  };
}
