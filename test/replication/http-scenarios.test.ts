/**
 * Black-box tests of the teaching scenarios through the real server: the catalogue, the 201 with
 * the provisioned cluster, narration and verdict on /ws and at GET clusters/{id}/scenario, every
 * scenario's verdict passing on a correct run (run concurrently in small batches), the comparison
 * cluster of QuorumTuning cleaned up, a run stopped by deleting its cluster, and the 404s.
 */
import t, { type Test } from 'tap';
import { api, eventually, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';

const names = [
  'ReplicationLag',
  'SyncVsAsync',
  'LeaderFailover',
  'MultiLeaderConflict',
  'SplitBrain',
  'QuorumTuning',
  'ReadRepair',
  'NetworkPartitionHeal',
  'CascadingFailure',
  'ThunderingHerd',
  'HotKeyZipfian',
  'NetworkFlapping',
  'ClockSkewLWW',
  'CorruptReplica',
];

async function run(name: string): Promise<any> {
  const r = await c.post(`${V}/scenarios/${name}/run`);
  if (r.status !== 201) throw new Error(`run ${name}: ${r.status} ${r.text}`);
  return r.body;
}

async function finished(id: string, ms = 45_000): Promise<any> {
  return eventually(
    async () => {
      const r = await c.get(`${V}/clusters/${id}/scenario`);
      return r.status === 200 && r.body.status !== 'running' ? r.body : undefined;
    },
    ms,
    200,
  );
}

function checkReport(t: Test, name: string, state: any, report: any): void {
  t.equal(report.scenario, name, `${name}: the report names the scenario`);
  t.equal(report.cluster_id, state.id, `${name}: and the cluster`);
  t.equal(report.status, 'finished', `${name}: ran to its end${report.error ? ` (${report.error})` : ''}`);
  t.ok(report.steps.length >= 2, `${name}: narrated ${report.steps.length} steps`);
  t.same(
    report.steps.map((s: any) => s.step),
    report.steps.map((_: unknown, i: number) => i + 1),
    `${name}: steps are numbered in order`,
  );
  t.ok(
    report.steps.every((s: any) => typeof s.text === 'string' && s.text.length > 10 && typeof s.at === 'string'),
    `${name}: each step has text and a time`,
  );
  t.match(
    report.verdict,
    { scenario: name, expected: String, actual: String, passed: Boolean },
    `${name}: verdict shape`,
  );
  t.ok(report.verdict.checks.length >= 2, `${name}: the verdict rests on ${report.verdict.checks.length} checks`);
  t.equal(
    report.verdict.passed,
    report.verdict.checks.every((k: any) => k.passed),
    `${name}: passed is the conjunction of its checks`,
  );
  const failed = report.verdict.checks.filter((k: any) => !k.passed).map((k: any) => `${k.name}: ${k.detail}`);
  t.equal(report.verdict.passed, true, `${name}: the lesson showed (${failed.join('; ') || 'all checks passed'})`);
  t.ok(typeof report.elapsed_ms === 'number' && report.finished_at, `${name}: timed`);
}

t.test('GET /scenarios lists the fourteen scenarios with their strategy, description and node count', async (t) => {
  const r = await c.get(`${V}/scenarios`);
  t.equal(r.status, 200);
  t.same(
    r.body.map((s: any) => s.name),
    names,
    'the contract names, in order',
  );
  for (const s of r.body) {
    t.match(
      s,
      {
        name: String,
        strategy: /^(single_leader|multi_leader|leaderless|raft)$/,
        description: String,
        node_count: Number,
      },
      `${s.name}: Scenario shape`,
    );
    t.ok(s.description.length > 40, `${s.name}: described`);
    t.equal(s.config.strategy, s.strategy, `${s.name}: its config matches`);
  }
  const byName = Object.fromEntries(r.body.map((s: any) => [s.name, s]));
  t.match(byName.ReplicationLag, { strategy: 'single_leader', node_count: 4 });
  t.match(byName.MultiLeaderConflict, {
    strategy: 'multi_leader',
    node_count: 3,
    config: { conflict_resolver: 'lww' },
  });
  t.match(byName.ReadRepair, {
    strategy: 'leaderless',
    node_count: 5,
    config: { quorum_n: 5, quorum_w: 3, quorum_r: 3 },
  });
  t.match(byName.ClockSkewLWW, { strategy: 'leaderless', node_count: 3 });
  for (const s of r.body.filter((x: any) => x.strategy === 'leaderless')) {
    t.ok(s.config.quorum_w + s.config.quorum_r > s.config.quorum_n, `${s.name}: W + R > N`);
  }
});

t.test('unknown scenarios and clusters without a scenario answer 404', async (t) => {
  const r = await c.post(`${V}/scenarios/NoSuchScenario/run`);
  t.equal(r.status, 404);
  t.match(r.body.error, /NoSuchScenario.*not found.*ReplicationLag/, 'names the known scenarios');
  t.equal((await c.get(`${V}/clusters/no-such-cluster/scenario`)).status, 404, 'unknown cluster');
  const plain = await c.post(`${V}/clusters`, { strategy: 'leaderless', node_count: 3 });
  const s = await c.get(`${V}/clusters/${plain.body.id}/scenario`);
  t.equal(s.status, 404, 'a cluster that ran no scenario');
  t.match(s.body.error, /did not run a scenario/);
  t.equal((await c.get(`${V}/clusters`)).body.length, 1, 'the refused run provisioned nothing');
  t.equal((await c.del(`${V}/clusters/${plain.body.id}`)).status, 204);
});

t.test('ReplicationLag: 201 with the cluster at once, narration and verdict on /ws and in the report', async (t) => {
  const ws = await wsCollect(`${srv.base.replace('http', 'ws')}/ws`);
  t.teardown(() => ws.close());
  const state = await run('ReplicationLag');
  t.match(
    state,
    { id: String, config: { strategy: 'single_leader', node_count: 4, replication_mode: 'async' }, leader_id: 'n1' },
    'the provisioned ClusterState',
  );
  t.same(state.node_ids, ['n1', 'n2', 'n3', 'n4']);
  const early = await c.get(`${V}/clusters/${state.id}/scenario`);
  t.equal(early.status, 200, 'the report exists at once');
  t.equal(early.body.status, 'running', 'and says running');
  t.ok(Array.isArray(early.body.steps), 'with the steps so far');
  const verdict = await ws.waitFor((m) => m.type === 'scenario_verdict' && m.cluster_id === state.id, 30_000);
  const steps = ws.messages.filter((m) => m.type === 'scenario_step' && m.cluster_id === state.id);
  t.ok(steps.length >= 3, `${steps.length} scenario_step events`);
  t.ok(
    steps.every(
      (m: any) =>
        m.data.scenario === 'ReplicationLag' &&
        typeof m.data.step === 'number' &&
        typeof m.data.text === 'string' &&
        typeof m.timestamp === 'string',
    ),
    'each step event carries scenario, step and text',
  );
  t.match(
    verdict.data,
    { scenario: 'ReplicationLag', expected: String, actual: String, passed: true },
    'the verdict event',
  );
  const report = await finished(state.id);
  checkReport(t, 'ReplicationLag', state, report);
  t.same(
    report.steps.map((s: any) => s.text),
    steps.map((m: any) => m.data.text),
    'the report holds the same narration as the events',
  );
  t.equal(report.verdict.actual, verdict.data.actual, 'and the same verdict');
  t.match(report.verdict.actual, /n4 was \d+ entries behind/, 'the verdict reports the lag it measured');
  const st = (await c.get(`${V}/clusters/${state.id}/state`)).body;
  t.equal(st.nodes.n4.lag, 0, 'the follower is caught up at the end');
  t.equal((await c.del(`${V}/clusters/${state.id}`)).status, 204);
});

// The other thirteen, a few at a time (each cluster is 3-5 worker threads; the machine has 2 cores).
const batches = [
  ['SyncVsAsync', 'LeaderFailover', 'MultiLeaderConflict', 'SplitBrain', 'ClockSkewLWW'],
  ['QuorumTuning', 'ReadRepair', 'NetworkPartitionHeal', 'CorruptReplica'],
  ['CascadingFailure', 'ThunderingHerd', 'HotKeyZipfian', 'NetworkFlapping'],
];
const reports = new Map<string, { state: any; report: any }>();

for (const batch of batches) {
  t.test(`${batch.join(', ')}: each plays in the background and its verdict passes`, async (t) => {
    const started = await Promise.all(batch.map(async (name) => ({ name, state: await run(name) })));
    for (const { name, state } of started) {
      const def = (await c.get(`${V}/scenarios`)).body.find((s: any) => s.name === name);
      t.equal(state.config.strategy, def.strategy, `${name}: provisioned with its strategy`);
      t.equal(state.node_ids.length, def.node_count, `${name}: and its node count`);
    }
    const done = await Promise.all(
      started.map(async ({ name, state }) => ({ name, state, report: await finished(state.id) })),
    );
    for (const { name, state, report } of done) {
      checkReport(t, name, state, report);
      reports.set(name, { state, report });
    }
    // The clusters are left as the scenarios left them; free the worker threads for the next batch.
    for (const { state } of done) await c.del(`${V}/clusters/${state.id}`);
  });
}

t.test('the verdicts carry what was measured', async (t) => {
  const get = (n: string): any => reports.get(n)?.report;
  t.match(
    get('SyncVsAsync')?.verdict.actual,
    /average write latency async [\d.]+ ms, sync [\d.]+ ms/,
    'SyncVsAsync: latencies',
  );
  t.match(get('LeaderFailover')?.verdict.actual, /leader n1 -> n\d/, 'LeaderFailover: the promotion');
  t.match(
    get('LeaderFailover')?.verdict.actual,
    /2 of 2 acknowledged writes lost/,
    'LeaderFailover: the orphaned writes',
  );
  t.match(
    get('MultiLeaderConflict')?.verdict.actual,
    /sim_conflicts_total = [1-9]/,
    'MultiLeaderConflict: conflicts counted in /metrics',
  );
  t.match(get('ReadRepair')?.verdict.actual, /[1-9]\d* repairs/, 'ReadRepair: repairs counted');
  t.match(
    get('ThunderingHerd')?.verdict.actual,
    /[1-9]\d* drops in ClusterState, [1-9]\d* in sim_dropped_messages_total/,
    'ThunderingHerd: back-pressure drops counted',
  );
  t.match(
    get('NetworkFlapping')?.verdict.actual,
    /[1-9]\d* messages dropped by the drop rate/,
    'NetworkFlapping: drops on the flapping link',
  );
  t.match(get('ClockSkewLWW')?.verdict.actual, /draft \d+ < published \d+/, 'ClockSkewLWW: the timestamps');
});

t.test('QuorumTuning compares against a legal second cluster and deletes it at the end', async (t) => {
  const entry = reports.get('QuorumTuning');
  t.ok(entry, 'QuorumTuning ran');
  const report = entry?.report;
  t.equal(report.comparison_cluster_ids.length, 1, 'one comparison cluster');
  const other = report.comparison_cluster_ids[0];
  t.equal((await c.get(`${V}/clusters/${other}/state`)).status, 404, 'it is gone');
  t.match(report.steps[0].text, /N5 W2 R3 is refused: 400/, 'an overlap-free quorum was refused like any cluster body');
  t.match(report.verdict.actual, /write latency W1 [\d.]+ ms vs W5 [\d.]+ ms/, 'write latencies compared');
  t.match(report.verdict.actual, /read latency R1 [\d.]+ ms vs R5 [\d.]+ ms/, 'read latencies compared');
  t.equal(entry?.state.config.quorum_w, 1, 'this cluster is the W1 R5 side');
});

t.test('deleting the cluster mid-run stops the script quietly and records aborted', async (t) => {
  const state = await run('CascadingFailure');
  await eventually(
    async () => ((await c.get(`${V}/clusters/${state.id}/scenario`)).body.steps.length >= 1 ? true : undefined),
    10_000,
    25,
  );
  t.equal((await c.del(`${V}/clusters/${state.id}`)).status, 204);
  const report = await finished(state.id, 10_000);
  t.equal(report.status, 'aborted', 'aborted');
  t.match(report.error, /deleted/, 'says why');
  t.notOk(report.verdict, 'no verdict for an interrupted run');
  const frozen = report.steps.length;
  await sleep(500);
  t.equal((await c.get(`${V}/clusters/${state.id}/scenario`)).body.steps.length, frozen, 'no step is added afterwards');
  t.equal((await c.get(`${V}/clusters`)).body.length, 0, 'nothing is left running');
  const health = await c.get('/healthz');
  t.equal(health.status, 200, 'the server is fine');
});
