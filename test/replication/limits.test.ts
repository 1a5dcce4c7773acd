/**
 * The replication limits (src/replication/limits.ts, protocol/timings.ts): every place a cluster is
 * configured refuses invalid timings with the reason (the deterministic fabric, the live Cluster, the
 * server), at and just past each relation (heartbeat < election timeout min <= max); the swarms only
 * draw timings that pass; the env-read fabric caps; and the configuration defaults come from limits.ts.
 */
import t from 'tap';
import { DetCluster } from '../../src/fabric/deterministic.js';
import { Cluster } from '../../src/replication/cluster.js';
import { clusterConfig, effectiveConfig } from '../../src/replication/config.js';
import { coreTimingsDefault, defaultTimings, type CoreTimings } from '../../src/replication/core.js';
import { createSingleLeaderCore } from '../../src/replication/cores/single-leader.js';
import {
  electionTimeoutMsMaxDefault,
  electionTimeoutMsMinDefault,
  fabricInboxMessagesMaxDefault,
  fabricLimitsFromEnv,
  fabricLinkQueueMessagesMaxDefault,
  heartbeatMsDefault,
  interRegionLatencyMsDefault,
  nodeCountDefault,
  nodeCountLeaderlessDefault,
  quorumNLeaderlessDefault,
  regionsDefault,
  validateTimings,
} from '../../src/replication/limits.js';
import { startReplicationSim } from '../../src/replication/server.js';
import { swarmProfile } from '../../src/replication/swarm/raft-swarm.js';
import { silentLogger } from '../../src/util/logger.js';

const min = electionTimeoutMsMinDefault;
const max = electionTimeoutMsMaxDefault;

/** At and just past each relation; `error` is what the refusal must name. */
const relationCases: Array<{ name: string; over: Partial<CoreTimings>; error?: RegExp }> = [
  { name: 'the defaults', over: {} },
  { name: 'heartbeat one below the minimum election timeout', over: { heartbeatMs: min - 1 } },
  {
    name: 'heartbeat equal to the minimum election timeout',
    over: { heartbeatMs: min },
    error: /heartbeatMs \(150\) must be less than electionTimeoutMsMin \(150\)/,
  },
  {
    name: 'heartbeat above the minimum election timeout',
    over: { heartbeatMs: min + 1 },
    error: /heartbeatMs .* must be less than electionTimeoutMsMin/,
  },
  { name: 'minimum equal to maximum', over: { electionTimeoutMsMin: max } },
  {
    name: 'minimum one above maximum',
    over: { electionTimeoutMsMin: max + 1 },
    error: /electionTimeoutMsMin \(301\) must be at most electionTimeoutMsMax \(300\)/,
  },
  { name: 'a negative heartbeat', over: { heartbeatMs: -1 }, error: /heartbeatMs must be a positive number/ },
  {
    name: 'an infinite request timeout',
    over: { requestTimeoutMs: Infinity },
    error: /requestTimeoutMs must be a positive number/,
  },
  {
    name: 'a fractional batch size',
    over: { maxEntriesPerMessage: 1.5 },
    error: /maxEntriesPerMessage must be an integer/,
  },
];

t.test('the default timings hold the relations the load-time checks assert', async (t) => {
  t.ok(heartbeatMsDefault < electionTimeoutMsMinDefault, 'heartbeat < election timeout min');
  t.ok(electionTimeoutMsMinDefault <= electionTimeoutMsMaxDefault, 'election timeout min <= max');
  t.same(validateTimings(coreTimingsDefault), { ok: true });
  t.equal(defaultTimings, coreTimingsDefault, 'the old name is the same object');
  t.ok(Object.isFrozen(coreTimingsDefault), 'the defaults cannot be changed by a caller');
});

t.test('validateTimings at and past each relation', async (t) => {
  for (const c of relationCases) {
    const r = validateTimings({ ...coreTimingsDefault, ...c.over });
    if (c.error) t.match(r, { ok: false, error: c.error }, c.name);
    else t.same(r, { ok: true }, c.name);
  }
});

t.test('DetCluster refuses invalid timings with the reason and runs valid ones', async (t) => {
  const config = clusterConfig({ strategy: 'single_leader' });
  for (const c of relationCases) {
    const build = (): DetCluster =>
      new DetCluster({
        factory: createSingleLeaderCore,
        nodeIds: ['n1', 'n2', 'n3'],
        config,
        seed: 1,
        timings: c.over,
      });
    if (c.error) {
      t.throws(build, { name: 'RangeError', message: c.error }, c.name);
    } else {
      const cluster = build();
      const reply = cluster.runUntilReply(cluster.client('n1', { op: 'write', key: 'k', value: 'v' }), 2_000);
      t.equal(reply?.ok, true, `${c.name}: a write succeeds`);
    }
  }
});

t.test('a live Cluster refuses invalid timings before it starts anything', async (t) => {
  const config = clusterConfig({ strategy: 'single_leader' });
  const hooks = { event: () => {}, nodeExit: () => {} };
  for (const c of relationCases.filter((x) => x.error)) {
    t.throws(
      () => new Cluster(config, { ...coreTimingsDefault, ...c.over }, hooks),
      { name: 'RangeError', message: c.error },
      c.name,
    );
  }
});

t.test('the server refuses to start with invalid timings, naming the relation', async (t) => {
  await t.rejects(
    startReplicationSim({ port: 0, host: '127.0.0.1', logger: silentLogger(), timings: { heartbeatMs: min } }),
    /invalid replication timings: heartbeatMs \(150\) must be less than electionTimeoutMsMin \(150\)/,
  );
  await t.rejects(
    startReplicationSim({
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger(),
      timings: { electionTimeoutMsMin: max + 1 },
    }),
    /electionTimeoutMsMin \(301\) must be at most electionTimeoutMsMax \(300\)/,
  );
});

t.test('every timing profile the raft swarm draws (seeds 1-500) is valid', async (t) => {
  const bad: string[] = [];
  const drawn = new Set<string>();
  for (let seed = 1; seed <= 500; seed++) {
    const timings = { ...coreTimingsDefault, ...swarmProfile(seed).timings };
    drawn.add(`${timings.heartbeatMs}/${timings.electionTimeoutMsMin}/${timings.electionTimeoutMsMax}`);
    const r = validateTimings(timings);
    if (!r.ok) bad.push(`seed ${seed}: ${r.error}`);
  }
  t.same(bad, [], 'no seed draws timings a DetCluster would refuse');
  t.ok(drawn.size >= 2, `several timer profiles are drawn (${[...drawn].join(', ')})`);
});

t.test('fabric caps come from FABRIC_LINK_QUEUE_MAX and FABRIC_INBOX_MAX when positive integers', async (t) => {
  const defaults = { linkQueueMax: fabricLinkQueueMessagesMaxDefault, inboxMax: fabricInboxMessagesMaxDefault };
  const cases: Array<{ env: Record<string, string>; want: { linkQueueMax: number; inboxMax: number } }> = [
    { env: {}, want: defaults },
    { env: { FABRIC_LINK_QUEUE_MAX: '8', FABRIC_INBOX_MAX: '1' }, want: { linkQueueMax: 8, inboxMax: 1 } },
    { env: { FABRIC_LINK_QUEUE_MAX: '0', FABRIC_INBOX_MAX: '-3' }, want: defaults },
    { env: { FABRIC_LINK_QUEUE_MAX: '2.5', FABRIC_INBOX_MAX: 'many' }, want: defaults },
  ];
  for (const c of cases) t.same(fabricLimitsFromEnv(c.env), c.want, JSON.stringify(c.env));
});

t.test('configuration defaults are the limits.ts constants', async (t) => {
  const leaderless = effectiveConfig({ strategy: 'leaderless' });
  const raft = effectiveConfig({ strategy: 'raft' });
  t.match(leaderless, {
    ok: true,
    config: {
      node_count: nodeCountLeaderlessDefault,
      quorum_n: quorumNLeaderlessDefault,
      regions: regionsDefault,
      inter_region_latency_ms: interRegionLatencyMsDefault,
    },
  });
  t.match(raft, { ok: true, config: { node_count: nodeCountDefault, quorum_n: nodeCountDefault } });
  t.match(
    effectiveConfig({ strategy: 'leaderless', node_count: 2 }),
    { ok: true, config: { quorum_n: 2 } },
    'N is capped by node_count',
  );
});
