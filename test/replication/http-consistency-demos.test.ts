/**
 * Black-box tests of the consistency demos (POST clusters/{id}/demo/read-your-writes,
 * monotonic-reads, consistent-prefix) through the real server: the outcome per cluster type
 * (async single-leader violates read-your-writes and monotonic reads, sync and raft keep them),
 * the report's shape and its agreement with what it observed, and the 400/404/409 answers.
 */
import t, { type Test } from 'tap';
import { api, eventually } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';
const demos = ['read-your-writes', 'monotonic-reads', 'consistent-prefix'] as const;

async function cluster(body: Record<string, unknown>): Promise<string> {
  const r = await c.post(`${V}/clusters`, body);
  if (r.status !== 201) throw new Error(`create failed: ${r.text}`);
  return r.body.id;
}

/** Runs a demo; on a raft cluster a 409 (an election under load) is retried once. */
async function demo(id: string, kind: string, retry409 = false): Promise<{ status: number; body: any }> {
  let r = await c.post(`${V}/clusters/${id}/demo/${kind}`);
  if (r.status === 409 && retry409) r = await c.post(`${V}/clusters/${id}/demo/${kind}`);
  return r;
}

function checkShape(t: Test, r: any, kind: string, strategy: string): void {
  t.equal(r.demo, kind, `${kind}: names the demo`);
  t.equal(r.strategy, strategy, `${kind}: names the strategy`);
  t.type(r.held, 'boolean', `${kind}: held is a boolean`);
  t.equal(r.verdict, r.held ? 'held' : 'violated', `${kind}: verdict matches held`);
  t.ok(typeof r.explanation === 'string' && r.explanation.length > 40, `${kind}: explains the outcome`);
  t.ok(Array.isArray(r.narrative) && r.narrative.length >= 2, `${kind}: narrates the steps`);
  t.ok(r.writes.length >= 2, `${kind}: reports its writes`);
  for (const w of r.writes) {
    t.match(
      w,
      { node_id: String, key: String, value: String, timestamp: Number, latency_ms: Number, at: String },
      `${kind}: write record`,
    );
  }
  t.ok(r.reads.length >= 1, `${kind}: reports its reads`);
  for (const x of r.reads) {
    t.match(x, { purpose: String, asked_node: String, key: String, at: String }, `${kind}: read record`);
    t.ok(['value', 'not_found', 'refused'].includes(x.outcome), `${kind}: read outcome ${x.outcome}`);
    if (x.outcome === 'value')
      t.ok(
        typeof x.value === 'string' && typeof x.timestamp === 'number' && typeof x.served_by === 'string',
        `${kind}: a served read has value, timestamp and node`,
      );
  }
  t.match(
    r.lag,
    { from: String, to: String, injected_ms: Number, previous_ms: Number },
    `${kind}: reports the injected lag`,
  );
  t.ok(r.lag.injected_ms > r.lag.previous_ms, `${kind}: the link was slowed`);
  t.equal(r.lag.restored, true, `${kind}: the previous latency was restored`);
}

/** The verdict must agree with the reads it reports. */
function checkVerdictAgainstReads(t: Test, r: any): void {
  const served = r.reads.filter((x: any) => x.outcome !== 'refused');
  switch (r.demo) {
    case 'read-your-writes': {
      const own = r.writes[1];
      const read = served.find((x: any) => x.purpose.startsWith('read your own write'));
      t.equal(
        r.held,
        read.outcome === 'value' && read.timestamp >= own.timestamp,
        'read-your-writes: held exactly when the read saw the write',
      );
      break;
    }
    case 'monotonic-reads': {
      const first = served.find((x: any) => x.purpose.startsWith('first read'));
      const second = served.find((x: any) => x.purpose.startsWith('second read'));
      const backwards =
        second.timestamp === null
          ? first.timestamp !== null
          : first.timestamp !== null && second.timestamp < first.timestamp;
      t.equal(r.held, !backwards, 'monotonic-reads: violated exactly when the second read went back in time');
      break;
    }
    case 'consistent-prefix': {
      const gap = r.observations.some((o: any) => !o.visible.every((s: number, i: number) => s === i + 1));
      t.equal(r.held, !gap, 'consistent-prefix: violated exactly when an observation showed a gap');
      t.equal(r.prefix_violations > 0, gap, 'prefix_violations counts the gaps');
      t.same(
        r.sequence.map((m: any) => m.seq),
        [1, 2, 3],
        'the ordered sequence is reported',
      );
      t.type(r.observer, 'string', 'names the observer');
      break;
    }
  }
}

t.test(
  'on an async single-leader cluster read-your-writes and monotonic reads are violated, consistent prefix holds',
  async (t) => {
    const id = await cluster({ strategy: 'single_leader', node_count: 3, replication_mode: 'async' });
    for (const kind of demos) {
      const r = await demo(id, kind);
      t.equal(r.status, 200, `${kind}: 200`);
      checkShape(t, r.body, kind, 'single_leader');
      checkVerdictAgainstReads(t, r.body);
      t.equal(r.body.replication_mode, 'async', `${kind}: names the replication mode`);
    }
    const ryw = (await demo(id, 'read-your-writes')).body;
    t.equal(ryw.verdict, 'violated', 'read-your-writes is violated');
    t.match(ryw.explanation, /violated/, 'the explanation says so');
    const stale = ryw.reads.find((x: any) => x.purpose === 'read your own write');
    t.equal(stale.asked_node, ryw.lag.to, 'the stale read came from the lagging replica');
    t.not(stale.value, ryw.writes[1].value, 'and did not return the write');
    const later = ryw.reads.find((x: any) => x.purpose === 'read again after the lag');
    t.equal(later.value, ryw.writes[1].value, 'after the lag the replica returns the write (eventual consistency)');
    const mr = (await demo(id, 'monotonic-reads')).body;
    t.equal(mr.verdict, 'violated', 'monotonic reads are violated');
    const cp = (await demo(id, 'consistent-prefix')).body;
    t.equal(cp.verdict, 'held', 'consistent prefix holds: one ordered log');
    t.same(cp.observed_order, [1, 2, 3], 'the observer saw the messages in order');
  },
);

t.test('on a sync single-leader cluster all three guarantees hold, at the cost of write latency', async (t) => {
  const id = await cluster({ strategy: 'single_leader', node_count: 3, replication_mode: 'sync' });
  for (const kind of demos) {
    const r = await demo(id, kind);
    t.equal(r.status, 200, `${kind}: 200`);
    checkShape(t, r.body, kind, 'single_leader');
    checkVerdictAgainstReads(t, r.body);
    t.equal(r.body.verdict, 'held', `${kind} holds`);
  }
  const ryw = (await demo(id, 'read-your-writes')).body;
  t.ok(
    ryw.writes[1].latency_ms >= ryw.lag.injected_ms * 0.8,
    `the sync write waited for the slow link (${ryw.writes[1].latency_ms} ms)`,
  );
});

t.test('on a raft cluster reads go through the leader (ReadIndex): all three guarantees hold', async (t) => {
  const id = await cluster({ strategy: 'raft', node_count: 3 });
  await eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body.leader_id, 5000, 50);
  for (const kind of demos) {
    const r = await demo(id, kind, true);
    t.equal(r.status, 200, `${kind}: 200 (${r.body?.error ?? ''})`);
    checkShape(t, r.body, kind, 'raft');
    checkVerdictAgainstReads(t, r.body);
    t.equal(r.body.verdict, 'held', `${kind} holds`);
  }
  const ryw = (await demo(id, 'read-your-writes', true)).body;
  const refused = ryw.reads.find((x: any) => x.outcome === 'refused');
  t.ok(refused, 'the lagging follower refused the read');
  t.match(refused.error, /not leader|no leader/, 'because it is not the leader');
  t.match(ryw.explanation, /ReadIndex/, 'the explanation names ReadIndex');
});

t.test(
  'on multi-leader and leaderless clusters every demo reports a verdict that agrees with its observations',
  async (t) => {
    const ml = await cluster({ strategy: 'multi_leader', node_count: 3 });
    const ll = await cluster({ strategy: 'leaderless', node_count: 5 });
    for (const [id, strategy] of [
      [ml, 'multi_leader'],
      [ll, 'leaderless'],
    ] as const) {
      for (const kind of demos) {
        const r = await demo(id, kind);
        t.equal(r.status, 200, `${strategy} ${kind}: 200`);
        checkShape(t, r.body, kind, strategy);
        checkVerdictAgainstReads(t, r.body);
      }
    }
    const mlRyw = (await demo(ml, 'read-your-writes')).body;
    t.equal(mlRyw.verdict, 'violated', 'multi-leader: a read at another leader misses your write');
    const llRyw = (await demo(ll, 'read-your-writes')).body;
    t.equal(llRyw.verdict, 'held', 'leaderless with W + R > N: the quorum read sees your write');
    const cp = (await demo(ml, 'consistent-prefix')).body;
    t.not(
      cp.sequence[0].node_id,
      cp.sequence[1].node_id,
      'multi-leader: the reply is written on another node than the question',
    );
  },
);

t.test(
  'the demos answer 404 for an unknown cluster, 400 with fewer than two online nodes, 409 when the demo write fails',
  async (t) => {
    for (const kind of demos) {
      const r = await demo('no-such-cluster', kind);
      t.equal(r.status, 404, `${kind}: unknown cluster 404`);
      t.match(r.body, { error: /not found/ }, `${kind}: says so`);
    }
    const one = await cluster({ strategy: 'single_leader', node_count: 1 });
    for (const kind of demos) {
      const r = await demo(one, kind);
      t.equal(r.status, 400, `${kind}: one-node cluster 400`);
      t.match(r.body.error, /at least 2 online nodes/, `${kind}: explains the minimum`);
    }
    const two = await cluster({ strategy: 'multi_leader', node_count: 2 });
    t.equal((await c.post(`${V}/clusters/${two}/nodes/n2/pause`)).status, 200);
    t.equal((await demo(two, 'monotonic-reads')).status, 400, 'a paused node does not count as online');
    // sync replication with a partitioned follower: the demo write times out (409) and the link is restored.
    const sync = await cluster({ strategy: 'single_leader', node_count: 3, replication_mode: 'sync' });
    t.equal(
      (await c.post(`${V}/clusters/${sync}/network/partition`, { group_a: ['n1'], group_b: ['n2'] })).status,
      201,
    );
    const r = await demo(sync, 'read-your-writes');
    t.equal(r.status, 409, 'the failed write is a 409');
    t.match(r.body.error, /demo write on n1 failed.*sync replication timed out/, 'naming the write and the cause');
    t.equal((await c.del(`${V}/clusters/${sync}/network/faults`)).status, 200);
    const ok = await demo(sync, 'read-your-writes');
    t.equal(ok.status, 200, 'after healing the demo runs');
    t.equal(ok.body.verdict, 'held', 'and sync replication keeps read-your-writes');
  },
);
