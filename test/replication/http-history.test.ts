/**
 * Black-box tests of what a page needs to watch a cluster (issue 17, server support): link_stats
 * frames on /ws (per-link aggregates every ~100 ms whose counts add up, by message type, drops by
 * cause), GET .../history (client operations and fault intervals, paged with since and limit),
 * GET .../snapshot (state, links, active faults, the event seq it stands at), seq on every /ws
 * frame, and the 400s and 404s of all of it. The real server over real sockets.
 */
import t from 'tap';
import WebSocket from 'ws';
import { api, eventually, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import { historyPageOpsMax, wsBatchMsMax } from '../../src/replication/limits.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';
const wsUrl = (q: string): string => `ws://127.0.0.1:${srv.port}/ws${q}`;

async function newCluster(body: Record<string, unknown>): Promise<any> {
  const r = await c.post(`${V}/clusters`, body);
  if (r.status !== 201) throw new Error(`cluster not created: ${r.status} ${r.text}`);
  return r.body;
}

interface LinkEntry {
  from: string;
  to: string;
  sent: number;
  delivered: number;
  dropped?: Record<string, number>;
  bytes: number;
  by_type?: Record<string, number>;
  in_flight: number;
}
const lost = (l: LinkEntry): number => Object.values(l.dropped ?? {}).reduce((a, b) => a + b, 0);

t.test(
  'link_stats: a frame about every 100 ms per watched cluster, by link and type, counts that add up, seq everywhere',
  async (t) => {
    const cl = await newCluster({ strategy: 'raft', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const ws = await wsCollect(wsUrl(`?cluster_id=${cl.id}&link_stats=1`));
    t.teardown(() => ws.close());
    const plain = await wsCollect(wsUrl(`?cluster_id=${cl.id}`));
    t.teardown(() => plain.close());
    const leader = await eventually(
      async () => (await c.get(`${V}/clusters/${cl.id}/state`)).body?.leader_id as string | undefined,
      10_000,
    );
    for (let i = 0; i < 20; i++)
      t.equal((await c.post(`${V}/clusters/${cl.id}/write`, { key: `k${i}`, value: `v${i}` })).status, 200);
    await ws.waitFor(
      (m) => m.type === 'link_stats' && m.data.links.some((l: LinkEntry) => (l.by_type?.['append'] ?? 0) > 0),
    );
    await sleep(1000);

    const frames = ws.messages.filter((m) => m.type === 'link_stats');
    t.ok(frames.length >= 5, `several link_stats frames (${frames.length})`);
    const f0 = frames[0];
    t.match(
      f0,
      {
        type: 'link_stats',
        cluster_id: cl.id,
        timestamp: /^\d{4}-/,
        seq: Number,
        data: { interval_ms: Number, links: Array },
      },
      'the frame in the /ws envelope style',
    );
    const intervals = frames.map((f) => f.data.interval_ms as number).sort((a, b) => a - b);
    const median = intervals[Math.floor(intervals.length / 2)] as number;
    t.ok(median >= 90 && median <= 400, `frames come about every 100 ms (median interval_ms ${median})`);

    // Per link, each interval's sent - delivered - dropped is the change of in_flight.
    const lastInFlight = new Map<string, number>();
    let checked = 0;
    for (const f of frames) {
      for (const l of f.data.links as LinkEntry[]) {
        const key = `${l.from}>${l.to}`;
        t.ok(l.from !== l.to && /^n\d+$/.test(l.from) && /^n\d+$/.test(l.to), 'links join two nodes', {
          diagnostic: false,
        });
        t.equal(
          Object.values(l.by_type ?? {}).reduce((a, b) => a + b, 0),
          l.sent,
          `${key}: by_type adds up to sent`,
        );
        const prev = lastInFlight.get(key);
        if (prev !== undefined) {
          t.equal(
            l.sent - l.delivered - lost(l),
            l.in_flight - prev,
            `${key}: sent - delivered - dropped = change of in_flight`,
          );
          checked++;
        }
        lastInFlight.set(key, l.in_flight);
      }
    }
    t.ok(checked > 0, `the identity was checked on ${checked} link intervals`);
    const types = new Set(
      frames.flatMap((f) => (f.data.links as LinkEntry[]).flatMap((l) => Object.keys(l.by_type ?? {}))),
    );
    t.ok(types.has('append') || types.has('heartbeat'), `raft's message types are named (${[...types].join(', ')})`);
    t.ok(
      frames.some((f) => (f.data.links as LinkEntry[]).some((l) => l.from === leader && l.bytes > 0)),
      'bytes are counted',
    );

    // Every frame has a seq; link_stats carry the cluster's latest event seq without advancing it.
    t.ok(
      ws.messages.every((m) => Number.isInteger(m.seq)),
      'every /ws frame carries an integer seq',
    );
    const events = ws.messages.filter((m) => m.type !== 'link_stats');
    t.ok(
      events.length > 0 && events.every((e, i) => i === 0 || e.seq === events[i - 1].seq + 1),
      'event seqs have no gaps: link_stats frames do not take a seq',
    );
    let lastEventSeq = 0;
    for (const m of ws.messages) {
      if (m.type === 'link_stats')
        t.ok(m.seq >= lastEventSeq, 'a link_stats frame carries the seq of the events before it', {
          diagnostic: false,
        });
      else lastEventSeq = m.seq;
    }
    t.notOk(
      plain.messages.some((m) => m.type === 'link_stats'),
      'a client that did not ask for link_stats gets none',
    );
    t.ok(plain.messages.length > 0, 'but it gets the events');

    // A partition: drops by cause on the links that cross it.
    const others = ['n1', 'n2', 'n3'].filter((n) => n !== leader);
    const p = await c.post(`${V}/clusters/${cl.id}/network/partition`, { group_a: [leader], group_b: others });
    t.equal(p.status, 201);
    const crossing = await ws.waitFor(
      (m) => m.type === 'link_stats' && m.data.links.some((l: LinkEntry) => (l.dropped?.['partition'] ?? 0) > 0),
      5000,
    );
    const cut = (crossing.data.links as LinkEntry[]).filter((l) => (l.dropped?.['partition'] ?? 0) > 0);
    t.ok(
      cut.every((l) => (l.from === leader) !== (l.to === leader)),
      'only links that cross the partition drop with cause partition',
    );
    t.equal((await c.del(`${V}/clusters/${cl.id}/network/partition/${p.body.partition_id}`)).status, 204);
  },
);

t.test('link_stats for every cluster with cluster_id absent; a bad link_stats value is a 400', async (t) => {
  const cl = await newCluster({ strategy: 'raft', node_count: 3 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  const all = await wsCollect(wsUrl('?link_stats=true'));
  t.teardown(() => all.close());
  const frame = await all.waitFor((m) => m.type === 'link_stats' && m.cluster_id === cl.id);
  t.ok(frame.data.links.length > 0, "an all-clusters watcher gets the cluster's link_stats");
  const later = await newCluster({ strategy: 'raft', node_count: 3 });
  t.teardown(() => c.del(`${V}/clusters/${later.id}`));
  await all.waitFor((m) => m.type === 'link_stats' && m.cluster_id === later.id);
  t.pass('and those of a cluster created after it connected');
  for (const bad of ['yes', '2', '']) {
    const status = await wsCollect(wsUrl(`?link_stats=${bad}`)).then(
      (w) => {
        w.close();
        return 101;
      },
      (e: { status?: number }) => e.status ?? -1,
    );
    if (bad === '') t.equal(status, 400, 'an empty link_stats is refused with 400');
    else t.equal(status, 400, `link_stats=${bad} is refused with 400`);
  }
  const off = await wsCollect(wsUrl(`?cluster_id=${cl.id}&link_stats=0`));
  t.teardown(() => off.close());
  await sleep(400);
  t.notOk(
    off.messages.some((m) => m.type === 'link_stats'),
    'link_stats=0 means none',
  );
});

t.test(
  'watch_links narrows link_stats to chosen clusters on an open socket; a bad message gets an error frame',
  async (t) => {
    const a = await newCluster({ strategy: 'raft', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${a.id}`));
    const b = await newCluster({ strategy: 'raft', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${b.id}`));
    const ws = await wsCollect(wsUrl(''));
    t.teardown(() => ws.close());
    await sleep(300);
    t.notOk(
      ws.messages.some((m) => m.type === 'link_stats'),
      'no link_stats before asking',
    );
    ws.ws.send(JSON.stringify({ type: 'watch_links', cluster_ids: [a.id] }));
    await ws.waitFor((m) => m.type === 'link_stats' && m.cluster_id === a.id);
    await sleep(400);
    const linkFrames = (): any[] => ws.messages.filter((m) => m.type === 'link_stats');
    t.ok(
      linkFrames().every((m) => m.cluster_id === a.id),
      "only the chosen cluster's link_stats",
    );
    ws.ws.send(JSON.stringify({ type: 'watch_links', cluster_ids: null }));
    await ws.waitFor((m) => m.type === 'link_stats' && m.cluster_id === b.id);
    t.pass('null: every cluster');
    ws.ws.send(JSON.stringify({ type: 'watch_links', cluster_ids: [] }));
    await sleep(300);
    const n = linkFrames().length;
    await sleep(400);
    t.equal(linkFrames().length, n, '[]: none');
    for (const bad of [
      'not json',
      JSON.stringify({ type: 'nope' }),
      JSON.stringify({ type: 'watch_links', cluster_ids: 'x' }),
    ]) {
      const before = ws.messages.length;
      ws.ws.send(bad);
      const err = await ws.waitFor((m) => m.type === 'error' && ws.messages.indexOf(m) >= before);
      t.match(err, { type: 'error', error: /watch_links/ }, `${bad}: an error frame that says what to send`);
    }
  },
);

t.test(
  'op_events=0: no frame per client operation, ops counted in link_stats, its own gap-free seq (snapshot too)',
  async (t) => {
    const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const id = cl.id as string;
    const page = await wsCollect(wsUrl(`?cluster_id=${id}&link_stats=1&op_events=0`));
    t.teardown(() => page.close());
    const tool = await wsCollect(wsUrl(`?cluster_id=${id}`));
    t.teardown(() => tool.close());
    for (let i = 0; i < 10; i++) await c.post(`${V}/clusters/${id}/write`, { key: `k${i}`, value: 'v' });
    await c.get(`${V}/clusters/${id}/read?key=k1`);
    // A follower refuses a write: a failure.
    await c.post(`${V}/clusters/${id}/write`, { key: 'k', value: 'v', target_node_id: 'n2' });
    await c.post(`${V}/clusters/${id}/nodes/n3/pause`);
    await c.post(`${V}/clusters/${id}/nodes/n3/resume`);
    await page.waitFor((m) => m.type === 'node_state_changed' && m.data.state === 'online');
    await eventually(() => {
      const ops = page.messages.filter((m) => m.type === 'link_stats' && m.data.ops).map((m) => m.data.ops);
      return (
        ops.reduce((a, o) => a + o.writes, 0) === 10 &&
        ops.reduce((a, o) => a + o.reads, 0) === 1 &&
        ops.reduce((a, o) => a + o.write_failures, 0) === 1
      );
    }, 5000);
    t.pass('link_stats frames count the 10 writes, 1 read and 1 failed write');
    t.notOk(
      page.messages.some((m) => m.type === 'write_received' || m.type === 'read_received'),
      'no op events for op_events=0',
    );
    t.ok(tool.messages.filter((m) => m.type === 'write_received').length >= 10, 'a default client still gets them');
    const pageEvents = page.messages.filter((m) => m.type !== 'link_stats');
    t.ok(
      pageEvents.length >= 2 && pageEvents.every((e, i) => i === 0 || e.seq === pageEvents[i - 1].seq + 1),
      'the op_events=0 stream has no gaps',
    );
    const toolEvents = tool.messages.filter((m) => m.type !== 'link_stats');
    t.ok(
      toolEvents.every((e, i) => i === 0 || e.seq === toolEvents[i - 1].seq + 1),
      'nor does the default one',
    );
    const last = pageEvents[pageEvents.length - 1];
    t.ok(
      page.messages.filter((m) => m.type === 'link_stats').every((m) => m.seq <= last.seq),
      'link_stats frames carry the op_events=0 numbering',
    );
    const snap = await c.get(`${V}/clusters/${id}/snapshot?op_events=0`);
    t.equal(snap.body.seq, last.seq, 'snapshot?op_events=0 gives the seq in that numbering');
    const snapAll = await c.get(`${V}/clusters/${id}/snapshot`);
    t.equal(snapAll.body.seq, toolEvents[toolEvents.length - 1].seq, 'and without it, the default numbering');
    t.equal(
      (await c.get(`${V}/clusters/${id}/snapshot?op_events=maybe`)).status,
      400,
      'a bad op_events is a 400 on the snapshot',
    );
    const refused = await wsCollect(wsUrl(`?op_events=2`)).then(
      (w) => {
        w.close();
        return 101;
      },
      (e: { status?: number }) => e.status ?? -1,
    );
    t.equal(refused, 400, 'and on /ws');
  },
);

t.test(
  'batch_ms: the frames of each window in one JSON array message, in order, gap-free; bounds refused',
  async (t) => {
    const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const id = cl.id as string;
    const batched = await wsCollect(wsUrl(`?cluster_id=${id}&link_stats=1&batch_ms=${wsBatchMsMax}`));
    t.teardown(() => batched.close());
    const plain = await wsCollect(wsUrl(`?cluster_id=${id}`));
    t.teardown(() => plain.close());
    const writes = 20;
    await Promise.all(
      Array.from({ length: writes }, (_, i) => c.post(`${V}/clusters/${id}/write`, { key: `k${i}`, value: 'v' })),
    );
    const flat = (): any[] => batched.messages.flatMap((m) => (Array.isArray(m) ? m : [m]));
    await eventually(() => flat().filter((m) => m.type === 'write_received').length === writes, 5000);
    t.ok(
      batched.messages.length > 0 && batched.messages.every((m) => Array.isArray(m)),
      'every message of a batching client is an array of frames',
    );
    t.ok(
      batched.messages.some((m) => m.length > 1),
      `several frames share a message (${batched.messages.map((m) => m.length).join(', ')})`,
    );
    const events = flat().filter((m) => m.type !== 'link_stats');
    t.ok(
      events.every((e, i) => i === 0 || e.seq === events[i - 1].seq + 1),
      'the events inside the batches are in order, with no gap',
    );
    t.ok(
      flat().some((m) => m.type === 'link_stats'),
      'link_stats frames ride in the batches too',
    );
    await eventually(() => plain.messages.filter((m) => m.type === 'write_received').length === writes, 5000);
    const plainEvents = plain.messages.filter((m) => m.type !== 'link_stats');
    t.same(
      events.slice(0, plainEvents.length).map((e) => [e.type, e.seq]),
      plainEvents.map((e) => [e.type, e.seq]),
      'the same events as a client without batches, one message each',
    );
    t.ok(!plain.messages.some((m) => Array.isArray(m)), 'a client without batch_ms gets no array');
    const status = (q: string): Promise<number> =>
      wsCollect(wsUrl(q)).then(
        (w) => {
          w.close();
          return 101;
        },
        (e: { status?: number }) => e.status ?? -1,
      );
    t.equal(await status(`?batch_ms=${wsBatchMsMax}`), 101, 'batch_ms at its max is taken');
    t.equal(await status(`?batch_ms=${wsBatchMsMax + 1}`), 400, 'past it: 400');
    t.equal(await status('?batch_ms=-1'), 400, 'a negative batch_ms: 400');
    t.equal(await status('?batch_ms=soon'), 400, 'a word: 400');
    t.equal(await status('?batch_ms=0'), 101, '0 (no batches) is taken');
  },
);

t.test(
  'history: every client operation with its process, f, value and times, paged with since and limit',
  async (t) => {
    const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    t.equal((await c.get(`${V}/clusters/${cl.id}/history`)).body.total, 0, 'a new cluster has no history');
    for (let i = 0; i < 5; i++)
      await c.post(`${V}/clusters/${cl.id}/write`, { key: `k${i}`, value: `v${i}`, client_id: 'alice' });
    await c.get(`${V}/clusters/${cl.id}/read?key=k1&client_id=bob`);
    await c.get(`${V}/clusters/${cl.id}/read?key=absent&client_id=bob`);
    await c.del(`${V}/clusters/${cl.id}/kv?key=k0&client_id=carol`);
    const h = await c.get(`${V}/clusters/${cl.id}/history`);
    t.equal(h.status, 200);
    t.match(h.body, {
      cluster_id: cl.id,
      time_unit: 'ms',
      from_index: 0,
      next_since: 8,
      total: 8,
      ops_dropped: 0,
      faults: Array,
      faults_dropped: 0,
    });
    const ops = h.body.ops as any[];
    t.same(
      ops.map((o) => [o.index, o.process, o.f, o.key, o.value, o.type]),
      [
        [0, 'alice', 'write', 'k0', 'v0', 'ok'],
        [1, 'alice', 'write', 'k1', 'v1', 'ok'],
        [2, 'alice', 'write', 'k2', 'v2', 'ok'],
        [3, 'alice', 'write', 'k3', 'v3', 'ok'],
        [4, 'alice', 'write', 'k4', 'v4', 'ok'],
        [5, 'bob', 'read', 'k1', 'v1', 'ok'],
        [6, 'bob', 'read', 'absent', null, 'ok'],
        [7, 'carol', 'delete', 'k0', null, 'ok'],
      ],
      'writes, reads (with the value read, null when not found) and deletes, in order',
    );
    const now = Date.now();
    t.ok(
      ops.every((o) => o.invoke_ms <= o.complete_ms && Math.abs(o.invoke_ms - now) < 60_000 && o.node === 'n1'),
      'times in ms since the epoch, invoke before complete, the serving node',
    );
    t.ok(
      ops.every((o, i) => i === 0 || o.invoke_ms >= ops[i - 1].complete_ms),
      'sequential operations do not overlap',
    );

    const page = await c.get(`${V}/clusters/${cl.id}/history?since=2&limit=3`);
    t.same(
      page.body.ops.map((o: any) => o.index),
      [2, 3, 4],
    );
    t.equal(page.body.next_since, 5);
    const paged: any[] = [];
    for (let since = 0; ; ) {
      const r = await c.get(`${V}/clusters/${cl.id}/history?since=${since}&limit=3`);
      paged.push(...r.body.ops);
      if (r.body.next_since === r.body.total) break;
      since = r.body.next_since;
    }
    t.same(paged, ops, 'paging through with next_since gives the whole history');
    t.same((await c.get(`${V}/clusters/${cl.id}/history?since=8`)).body.ops, [], 'since at the end: nothing new');
    t.equal(
      (await c.get(`${V}/clusters/${cl.id}/history?limit=${historyPageOpsMax}`)).status,
      200,
      `limit ${historyPageOpsMax} (historyPageOpsMax) is accepted`,
    );

    const bad: Array<[string, RegExp]> = [
      ['since=-1', /since/],
      ['since=abc', /since/],
      ['since=1.5', /since/],
      ['limit=0', /limit/],
      [`limit=${historyPageOpsMax + 1}`, /limit: must be an integer from 1 to 10000/],
      ['format=xml', /format: must be one of json/],
    ];
    for (const [q, msg] of bad) {
      const r = await c.get(`${V}/clusters/${cl.id}/history?${q}`);
      t.equal(r.status, 400, `${q} is a 400`);
      t.match(r.body, { error: msg }, `${q}: the error names the parameter`);
    }
    const unknown = await c.get(`${V}/clusters/00000000-0000-0000-0000-000000000000/history`);
    t.equal(unknown.status, 404, 'an unknown cluster is a 404');
    t.match(unknown.body, { error: /not found/ });
    t.equal(
      (await c.get(`${V}/clusters/00000000-0000-0000-0000-000000000000/history?limit=0`)).status,
      404,
      'the 404 comes before the query is checked',
    );
  },
);

t.test('history: fault intervals for pause, crash, stall, partition, latency, drop, clock skew and heal', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  const id = cl.id as string;
  const ws = await wsCollect(wsUrl(`?cluster_id=${id}`));
  t.teardown(() => ws.close());
  const ok = async (p: Promise<{ status: number; text: string }>, status: number, what: string): Promise<void> => {
    const r = await p;
    t.equal(r.status, status, `${what}: ${r.text}`);
  };
  await ok(c.post(`${V}/clusters/${id}/nodes/n2/pause`), 200, 'pause');
  await ok(c.post(`${V}/clusters/${id}/nodes/n2/resume`), 200, 'resume');
  const part = await c.post(`${V}/clusters/${id}/network/partition`, { group_a: ['n1'], group_b: ['n2', 'n3'] });
  await ok(c.del(`${V}/clusters/${id}/network/partition/${part.body.partition_id}`), 204, 'heal one partition');
  await ok(c.post(`${V}/clusters/${id}/network/latency`, { from: 'n1', to: 'n2', ms: 40 }), 200, 'latency');
  await ok(c.post(`${V}/clusters/${id}/network/drop`, { from: 'n2', to: 'n3', rate: 0.5 }), 200, 'drop');
  await ok(
    c.post(`${V}/clusters/${id}/network/partition`, { group_a: ['n3'], group_b: ['n1'] }),
    201,
    'a second partition',
  );
  await ok(c.del(`${V}/clusters/${id}/network/faults`), 200, 'heal everything');
  await ok(c.post(`${V}/clusters/${id}/nodes/n3/clock-skew`, { ms: 5000 }), 200, 'clock skew');
  await ok(c.post(`${V}/clusters/${id}/nodes/n3/stall`, { ms: 50 }), 202, 'stall');
  await ok(c.post(`${V}/clusters/${id}/nodes/n2/crash`), 200, 'crash');
  await ok(c.post(`${V}/clusters/${id}/nodes/n2/restart`), 200, 'restart');
  await sleep(150);
  const faults = (await c.get(`${V}/clusters/${id}/history`)).body.faults as any[];
  t.same(
    faults.map((f) => f.kind),
    ['pause', 'partition', 'latency', 'drop', 'partition', 'heal', 'clock_skew', 'stall', 'crash'],
    'one interval per fault, in the order applied',
  );
  t.same(
    faults.map((f) => f.index),
    faults.map((_, i) => i),
    'indexed from 0',
  );
  const [pause, p1, lat, drop, p2, heal, skew, stall, crash] = faults;
  t.match(pause, { kind: 'pause', node: 'n2', start_ms: Number, end_ms: Number });
  t.match(p1, { partition_id: part.body.partition_id, group_a: ['n1'], group_b: ['n2', 'n3'], end_ms: Number });
  t.match(lat, { from: 'n1', to: 'n2', value: 40, end_ms: Number });
  t.match(drop, { from: 'n2', to: 'n3', value: 0.5, end_ms: Number });
  t.equal(p2.end_ms, heal.start_ms, 'DELETE network/faults ends the network faults when it heals');
  t.equal(lat.end_ms, heal.start_ms);
  t.equal(heal.end_ms, heal.start_ms, 'heal is an instant');
  t.match(skew, { node: 'n3', value: 5000, end_ms: null }, 'a clock skew lasts until set back to 0');
  t.match(stall, { node: 'n3', value: 50, end_ms: Number }, 'a stall ends when the node wakes');
  t.ok(stall.end_ms - stall.start_ms >= 40, 'the stall lasted about its ms');
  t.match(crash, { node: 'n2', end_ms: Number }, 'a crash ends at the restart');
  t.ok(
    faults.every((f) => f.end_ms === null || f.end_ms >= f.start_ms),
    'no interval ends before it starts',
  );
  await ok(c.post(`${V}/clusters/${id}/nodes/n3/clock-skew`, { ms: 0 }), 200, 'skew back to 0');
  const after = (await c.get(`${V}/clusters/${id}/history`)).body.faults as any[];
  const events = ws.messages.map((m) => m.type);
  for (const type of ['link_latency_set', 'link_drop_set', 'network_faults_cleared', 'clock_skew_set']) {
    t.ok(events.includes(type), `a ${type} event on /ws`);
  }
  t.match(
    ws.messages.find((m) => m.type === 'link_latency_set'),
    { data: { from: 'n1', to: 'n2', ms: 40 } },
  );
  t.match(
    ws.messages.find((m) => m.type === 'clock_skew_set'),
    { node_id: 'n3', data: { skew_ms: 5000 } },
  );
  t.type(after[6].end_ms, 'number', 'setting the skew back to 0 closes its interval');
});

t.test('snapshot: state, links, active faults and history length, with the event seq it stands at', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader', node_count: 3 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  const id = cl.id as string;
  // link_stats=1: messages are counted by type (by_type) while someone watches the links.
  const ws = await wsCollect(wsUrl(`?cluster_id=${id}&link_stats=1`));
  t.teardown(() => ws.close());
  for (let i = 0; i < 5; i++) await c.post(`${V}/clusters/${id}/write`, { key: `k${i}`, value: 'v' });
  await c.post(`${V}/clusters/${id}/network/latency`, { from: 'n1', to: 'n3', ms: 30 });
  await c.post(`${V}/clusters/${id}/nodes/n2/pause`);
  const part = await c.post(`${V}/clusters/${id}/network/partition`, { group_a: ['n1'], group_b: ['n2'] });
  await ws.waitFor((m) => m.type === 'partition_created');
  await sleep(200);
  const lastSeq = Math.max(...ws.messages.filter((m) => m.type !== 'link_stats').map((m) => m.seq as number));
  const s = await c.get(`${V}/clusters/${id}/snapshot`);
  t.equal(s.status, 200);
  t.match(s.body, {
    cluster_id: id,
    timestamp: /^\d{4}-/,
    state: { id, node_ids: ['n1', 'n2', 'n3'], leader_id: 'n1' },
    links: Array,
    faults: Array,
    history: { total: 5, ops_dropped: 0 },
  });
  t.ok(s.body.seq >= lastSeq, `the snapshot stands at or after the last event seen (${s.body.seq} >= ${lastSeq})`);
  t.equal(s.body.state.nodes.n2.state, 'paused', 'per-node status as /state shows it');
  t.ok(part.body.partition_id in s.body.state.partitions, 'the partitions');
  t.same(s.body.faults.map((f: any) => f.kind).sort(), ['latency', 'partition', 'pause'], 'the faults in force');
  const links = s.body.links as any[];
  t.match(
    links.find((l) => l.from === 'n1' && l.to === 'n3'),
    { latency_ms: 30, drop_rate: 0, blocked: false },
  );
  t.match(
    links.find((l) => l.from === 'n1' && l.to === 'n2'),
    { blocked: true },
    'a link the partition cuts is blocked',
  );
  t.match(
    links.find((l) => l.from === 'n1' && l.to === 'n3'),
    { blocked: false },
    'one it does not cut is not',
  );
  for (const l of links) {
    const dropped = l.dropped.rate + l.dropped.partition + l.dropped.full;
    t.equal(
      l.sent,
      l.delivered + dropped + l.in_flight,
      `${l.from}>${l.to}: since creation, sent = delivered + dropped + in_flight`,
    );
  }
  t.ok(
    links.some((l) => l.from === 'n1' && l.sent > 0 && l.bytes > 0 && (l.by_type.append ?? 0) > 0),
    "the leader's replication traffic is counted, by type",
  );
  const h = await c.get(`${V}/clusters/${id}/history`);
  t.equal(s.body.history.total, h.body.total, 'the history length matches the history endpoint');
  const unknown = await c.get(`${V}/clusters/00000000-0000-0000-0000-000000000000/snapshot`);
  t.equal(unknown.status, 404, 'an unknown cluster is a 404');
  t.match(unknown.body, { error: /not found/ });
});

t.test('a /ws client that closes stops link_stats work: no frames to a later plain client', async (t) => {
  const cl = await newCluster({ strategy: 'raft', node_count: 3 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  const watcher = await wsCollect(wsUrl(`?cluster_id=${cl.id}&link_stats=1`));
  await watcher.waitFor((m) => m.type === 'link_stats');
  await new Promise<void>((resolve) => {
    watcher.ws.once('close', () => resolve());
    watcher.close();
  });
  const plain = new WebSocket(wsUrl(`?cluster_id=${cl.id}`));
  const seen: string[] = [];
  plain.on('message', (d) => seen.push(JSON.parse(d.toString()).type));
  await new Promise((r) => plain.once('open', r));
  await sleep(400);
  plain.close();
  t.notOk(seen.includes('link_stats'), 'no link_stats once nobody asks for them');
});
