/**
 * Black-box tests of the replication simulator's edge (issue 16): bounded timestamps (corrupt) and
 * an HLC that cannot be pinned from outside, a /ws capped in clients that tells slow clients what
 * they lost (events_dropped, seq), and every request string bounded, with the most complex accepted
 * key and value read back through every path that returns it. The real server over real sockets.
 */
import net from 'node:net';
import t from 'tap';
import WebSocket from 'ws';
import { api, eventually, sleep, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import {
  batchEntriesMax,
  clientIdCharsMax,
  clockSkewMsMax,
  clusterIdCharsMax,
  corruptTimestampAheadMsMax,
  hlcMaxOffsetMs,
  keyCharsMax,
  latencyMsMax,
  nodeIdCharsMax,
  partitionGroupNodesMax,
  valueCharsMax,
} from '../../src/replication/limits.js';

const wsClientsMax = 4;
const srv = await startReplSim({ REPLSIM_WS_CLIENTS_MAX: String(wsClientsMax) });
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';
const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

async function newCluster(body: Record<string, unknown>): Promise<any> {
  const r = await c.post(`${V}/clusters`, body);
  if (r.status !== 201) throw new Error(`cluster not created: ${r.status} ${r.text}`);
  return r.body;
}
const q = (s: string): string => encodeURIComponent(s);

// ------------------------------------------------------------------ time (point 6)

t.test("corrupt accepts only integer timestamps at most a day ahead (the issue's 1.23e38 is a 400)", async (t) => {
  const cl = await newCluster({ strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  t.equal(
    (await c.post(`${V}/clusters/${cl.id}/write`, { key: 'k', value: 'good', target_node_id: 'n1' })).status,
    200,
  );
  const nowNs = Date.now() * 1e6;
  const dayNs = corruptTimestampAheadMsMax * 1e6;
  const cases: Array<{ name: string; ts: unknown; status: number; error?: RegExp }> = [
    { name: "the issue's reproduction, 1.23e38", ts: 1.23e38, status: 400, error: /at most 86400000 ms ahead/ },
    { name: 'two days ahead', ts: nowNs + 2 * dayNs, status: 400, error: /ms ahead of the node's clock/ },
    { name: 'a fraction', ts: 1.5, status: 400, error: /timestamp: must be integer/ },
    { name: 'a negative timestamp', ts: -5, status: 400, error: /timestamp/ },
    { name: 'an hour ago', ts: nowNs - 3_600_000 * 1e6, status: 200 },
    { name: 'a day ahead less a minute (accepted: the bound is a day)', ts: nowNs + dayNs - 60_000 * 1e6, status: 200 },
  ];
  for (const k of cases) {
    const r = await c.post(`${V}/clusters/${cl.id}/nodes/n2/corrupt`, { key: 'k', value: 'bad', timestamp: k.ts });
    t.equal(r.status, k.status, `${k.name}: ${k.status}`);
    if (k.error) t.match(r.body?.error, k.error, `${k.name}: the error says why`);
  }
});

t.test("a far-future timestamp spread by anti-entropy cannot pin any node's hybrid logical clock", async (t) => {
  const cl = await newCluster({ strategy: 'leaderless', node_count: 3, quorum_n: 3, quorum_w: 2, quorum_r: 2 });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  t.equal(
    (await c.post(`${V}/clusters/${cl.id}/write`, { key: 'doc', value: 'v1', target_node_id: 'n1' })).status,
    200,
  );
  // 23 h ahead: accepted by corrupt, far beyond the max offset any peer adopts.
  const farNs = (Date.now() + 23 * 3_600_000) * 1e6;
  const corrupted = await c.post(`${V}/clusters/${cl.id}/nodes/n1/corrupt`, {
    key: 'doc',
    value: 'from the future',
    timestamp: farNs,
  });
  t.equal(corrupted.status, 200, 'the corrupt route takes a timestamp within a day');
  const ae = await c.post(`${V}/clusters/${cl.id}/anti-entropy`);
  t.equal(ae.status, 200, 'an anti-entropy round ran');
  // The far-future copy is newer under LWW, so it spreads: every replica saw the timestamp.
  await eventually(async () => {
    const stores = await Promise.all(['n2', 'n3'].map((n) => c.get(`${V}/clusters/${cl.id}/nodes/${n}/store`)));
    return stores.every((s) => s.body.doc?.timestamp === farNs);
  }, 5000);
  for (const node of ['n1', 'n2', 'n3']) {
    const w = await c.post(`${V}/clusters/${cl.id}/write`, { key: `after-${node}`, value: 'x', target_node_id: node });
    t.equal(w.status, 200, `a later write coordinated by ${node} succeeds`);
    const aheadMs = w.body.entry.timestamp / 1e6 - Date.now();
    t.ok(
      aheadMs < hlcMaxOffsetMs,
      `${node}'s next timestamp is not pinned to the far-future value (${Math.round(aheadMs)} ms ahead)`,
    );
  }
  const m = await c.get(`${V}/simulation/metrics`);
  const refused = Object.values(m.body[cl.id].nodes as Record<string, { hlc_remote_refused: number }>).reduce(
    (s, x) => s + x.hlc_remote_refused,
    0,
  );
  t.ok(refused > 0, `the refusals are counted in the nodes' status (hlc_remote_refused = ${refused})`);
});

for (const strategy of ['single_leader', 'multi_leader', 'leaderless', 'raft'] as const) {
  t.test(
    `${strategy}: a node skewed a day ahead cannot drag its peers' clocks with its replication messages`,
    async (t) => {
      const cl = await newCluster({ strategy, node_count: 3, ...(strategy === 'leaderless' ? { quorum_n: 3 } : {}) });
      t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
      const C = `${V}/clusters/${cl.id}`;
      const writer =
        strategy === 'raft'
          ? ((await eventually(async () => (await c.get(`${C}/state`)).body.leader_id, 5000)) as string)
          : 'n1';
      t.equal(
        (await c.post(`${C}/nodes/${writer}/clock-skew`, { ms: clockSkewMsMax })).status,
        200,
        `${writer} runs a day ahead`,
      );
      const w = await c.post(`${C}/write`, { key: 'ahead', value: 'x', target_node_id: writer });
      t.equal(w.status, 200, 'its write succeeds');
      t.ok(w.body.entry.timestamp / 1e6 - Date.now() > clockSkewMsMax - 60_000, 'stamped a day ahead');
      const others = (cl.node_ids as string[]).filter((n) => n !== writer);
      // Every peer receives the day-ahead timestamp (append, replicate, put or heartbeat) and refuses to adopt it.
      const refusedBy = await eventually(async () => {
        const m = (await c.get(`${V}/simulation/metrics`)).body[cl.id].nodes as Record<
          string,
          { hlc_remote_refused?: number }
        >;
        return others.every((n) => (m[n]?.hlc_remote_refused ?? 0) > 0) ? m : undefined;
      }, 5000);
      t.ok(
        others.every((n) => (refusedBy[n]?.hlc_remote_refused ?? 0) > 0),
        `${others.join(' and ')} counted the refusal`,
      );
      if (strategy === 'multi_leader' || strategy === 'leaderless') {
        const next = await c.post(`${C}/write`, { key: 'after', value: 'y', target_node_id: others[0] });
        t.equal(next.status, 200, `${others[0]} writes next`);
        t.ok(
          next.body.entry.timestamp / 1e6 - Date.now() < hlcMaxOffsetMs,
          `${others[0]}'s timestamp follows its own clock, not the day-ahead one`,
        );
      }
    },
  );
}

t.test('clock skew is bounded to a day either way (clockSkewMsMax)', async (t) => {
  const cl = await newCluster({ strategy: 'single_leader' });
  t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
  for (const [ms, status] of [
    [clockSkewMsMax, 200],
    [-clockSkewMsMax, 200],
    [clockSkewMsMax + 1, 400],
    [-clockSkewMsMax - 1, 400],
  ] as const) {
    const r = await c.post(`${V}/clusters/${cl.id}/nodes/n2/clock-skew`, { ms });
    t.equal(r.status, status, `skew ${ms}: ${status}`);
  }
  await c.post(`${V}/clusters/${cl.id}/nodes/n2/clock-skew`, { ms: 0 });
});

// ------------------------------------------------------------------ /ws (point 7)

/** A WebSocket client that handshakes over a raw socket and then reads only when told to. */
async function rawWs(path: string): Promise<{ sock: net.Socket; frames: () => any[]; resume: () => void }> {
  const sock = net.connect(srv.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', () => resolve());
    sock.once('error', reject);
  });
  sock.write(
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  let buf = Buffer.alloc(0);
  const head = await new Promise<string>((resolve) => {
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      sock.pause();
      const h = buf.subarray(0, end).toString();
      buf = buf.subarray(end + 4);
      resolve(h);
    };
    sock.on('data', onData);
  });
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`upgrade refused: ${head}`);
  const out: any[] = [];
  const parse = (): void => {
    // Server frames are unmasked: FIN/opcode, 7/16/64-bit length, payload.
    for (;;) {
      if (buf.length < 2) return;
      const op = (buf[0] as number) & 0x0f;
      let len = (buf[1] as number) & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      if (buf.length < off + len) return;
      if (op === 1) out.push(JSON.parse(buf.subarray(off, off + len).toString('utf8')));
      buf = buf.subarray(off + len);
    }
  };
  return {
    sock,
    frames: () => out,
    resume: () => {
      sock.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        parse();
      });
      parse();
      sock.resume();
    },
  };
}

const wsDroppedTotal = async (): Promise<number> =>
  Number(/^sim_ws_events_dropped_total (\d+)/m.exec((await c.get('/metrics')).text)?.[1] ?? 0);

t.test(
  'slow /ws clients lose events (counted) and, once they read, get events_dropped with the count; seq shows the gap',
  async (t) => {
    const cl = await newCluster({ strategy: 'single_leader' });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const watching = await rawWs(`/ws?cluster_id=${cl.id}`);
    const everything = await rawWs('/ws');
    t.teardown(() => {
      watching.sock.destroy();
      everything.sock.destroy();
    });
    const before = await wsDroppedTotal();
    // Flood: each entry's write_received event carries its 900-character key (~1 KB a frame).
    let dropped = 0;
    for (let i = 0; i < 40 && dropped < 2000; i++) {
      const entries = Array.from({ length: batchEntriesMax }, (_, j) => ({
        key: `${i}.${j}.${'k'.repeat(900)}`,
        value: 'v',
      }));
      const r = await c.post(`${V}/clusters/${cl.id}/write-batch`, { entries });
      t.equal(r.status, 200, `flood batch ${i}`, { diagnostic: r.status !== 200 });
      if (r.status !== 200) break;
      dropped = (await wsDroppedTotal()) - before;
    }
    t.ok(dropped > 0, `events were dropped for the clients that do not read (${dropped}) and counted`);
    watching.resume();
    everything.resume();
    const noticeOf = (cl2: typeof watching): any => cl2.frames().find((f) => f.type === 'events_dropped');
    await eventually(() => noticeOf(watching) && noticeOf(everything), 15_000);
    const one = noticeOf(watching);
    const all = noticeOf(everything);
    t.match(
      one,
      { type: 'events_dropped', cluster_id: cl.id, timestamp: /^\d{4}-/, data: { count: Number } },
      'the notice in the /ws envelope style',
    );
    t.ok(one.data.count > 0, `the cluster watcher is told how many it lost (${one.data.count})`);
    t.ok(all.data.count > 0, `so is the client watching every cluster (${all.data.count})`);
    t.type(all.data.last_seq?.[cl.id], 'number', "the all-clusters notice gives each cluster's latest seq");
    // seq: +1 per event of the cluster; the events missing before the notice are exactly the count.
    const frames = watching.frames();
    const idx = frames.indexOf(one);
    const events = frames.slice(0, idx).filter((f) => f.type !== 'events_dropped');
    t.ok(events.length > 0 && events.every((f) => Number.isInteger(f.seq)), 'every event frame carries an integer seq');
    t.ok(
      events.every((f, i) => i === 0 || f.seq > events[i - 1].seq),
      'seq increases',
    );
    const first = events[0].seq as number;
    t.equal(
      one.seq - first + 1 - events.length,
      one.data.count,
      'the gaps in seq up to the notice add up to the dropped count',
    );
  },
);

t.test('the /ws client cap refuses one client too many with 503 {error}, and frees a slot on close', async (t) => {
  const open = await Promise.all(
    Array.from({ length: wsClientsMax }, () => wsCollect(`ws://127.0.0.1:${srv.port}/ws`)),
  );
  const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${srv.port}/ws`);
    ws.once('open', () => reject(new Error('the client past the cap was admitted')));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.once('error', () => undefined);
  });
  t.equal(refused.status, 503, `client ${wsClientsMax + 1} is refused with 503`);
  t.match(
    JSON.parse(refused.body),
    { error: /too many \/ws clients \(4 of 4\).*REPLSIM_WS_CLIENTS_MAX/ },
    'the error names the cap and how to raise it',
  );
  (open[0] as { close: () => void }).close();
  const again = await eventually(async () => {
    try {
      return await wsCollect(`ws://127.0.0.1:${srv.port}/ws`);
    } catch {
      return undefined;
    }
  }, 5000);
  t.ok(again, 'a slot is free again once a client closed');
  again.close();
  for (const o of open.slice(1)) o.close();
  await sleep(50);
});

// ------------------------------------------------------------------ bounded input (point 1)

t.test(
  'every request string and array is bounded: at the limit accepted, past it a 400 naming the bound',
  async (t) => {
    const cl = await newCluster({ strategy: 'multi_leader', node_count: 2 });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const C = `${V}/clusters/${cl.id}`;
    const s = (n: number, ch = 'a'): string => ch.repeat(n);
    const tooLong = (field: string, n: number): RegExp =>
      new RegExp(`${field.replace(/[[\].]/g, '\\$&')}: must not have more than ${n} (characters|items)`);
    // `other`: a request at the limit that is still refused for another reason (named nodes that do not exist).
    type Case = {
      name: string;
      method: 'POST' | 'GET' | 'DELETE';
      path: string;
      body?: unknown;
      over: boolean;
      error?: RegExp;
      other?: RegExp;
    };
    const cases: Case[] = [
      {
        name: 'write key at the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: s(keyCharsMax) },
        over: false,
      },
      {
        name: 'write key past the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: s(keyCharsMax + 1) },
        over: true,
        error: tooLong('key', keyCharsMax),
      },
      {
        name: 'write value at the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'v', value: s(valueCharsMax) },
        over: false,
      },
      {
        name: 'write value past the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'v', value: s(valueCharsMax + 1) },
        over: true,
        error: tooLong('value', valueCharsMax),
      },
      {
        name: 'write client_id at the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'c', client_id: s(clientIdCharsMax) },
        over: false,
      },
      {
        name: 'write client_id past the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'c', client_id: s(clientIdCharsMax + 1) },
        over: true,
        error: tooLong('client_id', clientIdCharsMax),
      },
      {
        name: 'write target_node_id at the limit (unknown: 404)',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 't', target_node_id: s(nodeIdCharsMax) },
        over: false,
      },
      {
        name: 'write target_node_id past the limit',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 't', target_node_id: s(nodeIdCharsMax + 1) },
        over: true,
        error: tooLong('target_node_id', nodeIdCharsMax),
      },
      {
        name: 'a lone surrogate in a key',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'a\ud800b' },
        over: true,
        error: /key: must be well-formed Unicode/,
      },
      {
        name: 'a lone surrogate in a value',
        method: 'POST',
        path: `${C}/write`,
        body: { key: 'k', value: '\udc00' },
        over: true,
        error: /value: must be well-formed Unicode/,
      },
      {
        name: 'batch entries at the limit',
        method: 'POST',
        path: `${C}/write-batch`,
        body: { entries: Array.from({ length: batchEntriesMax }, (_, i) => ({ key: `b${i}` })) },
        over: false,
      },
      {
        name: 'batch entries past the limit',
        method: 'POST',
        path: `${C}/write-batch`,
        body: { entries: Array.from({ length: batchEntriesMax + 1 }, (_, i) => ({ key: `b${i}` })) },
        over: true,
        error: tooLong('entries', batchEntriesMax),
      },
      {
        name: 'batch entry key past the limit',
        method: 'POST',
        path: `${C}/write-batch`,
        body: { entries: [{ key: 'ok' }, { key: s(keyCharsMax + 1) }] },
        over: true,
        error: tooLong('entries[1].key', keyCharsMax),
      },
      {
        name: 'batch client_id past the limit',
        method: 'POST',
        path: `${C}/write-batch`,
        body: { entries: [{ key: 'ok' }], client_id: s(clientIdCharsMax + 1) },
        over: true,
        error: tooLong('client_id', clientIdCharsMax),
      },
      {
        name: 'a lone surrogate in a batch entry',
        method: 'POST',
        path: `${C}/write-batch`,
        body: { entries: [{ key: 'ok' }, { key: 'x', value: '\ud83d' }] },
        over: true,
        error: /entries\[1\]\.value: must be well-formed/,
      },
      {
        name: 'read key at the limit (absent: 404)',
        method: 'GET',
        path: `${C}/read?key=${s(keyCharsMax)}`,
        over: false,
      },
      {
        name: 'read key past the limit',
        method: 'GET',
        path: `${C}/read?key=${s(keyCharsMax + 1)}`,
        over: true,
        error: tooLong('key', keyCharsMax),
      },
      {
        name: 'read node_id past the limit',
        method: 'GET',
        path: `${C}/read?key=k&node_id=${s(nodeIdCharsMax + 1)}`,
        over: true,
        error: tooLong('node_id', nodeIdCharsMax),
      },
      {
        name: 'read client_id at the limit',
        method: 'GET',
        path: `${C}/read?key=k&client_id=${s(clientIdCharsMax)}`,
        over: false,
      },
      {
        name: 'read client_id past the limit',
        method: 'GET',
        path: `${C}/read?key=k&client_id=${s(clientIdCharsMax + 1)}`,
        over: true,
        error: tooLong('client_id', clientIdCharsMax),
      },
      { name: 'delete key at the limit', method: 'DELETE', path: `${C}/kv?key=${s(keyCharsMax)}`, over: false },
      {
        name: 'delete key past the limit',
        method: 'DELETE',
        path: `${C}/kv?key=${s(keyCharsMax + 1)}`,
        over: true,
        error: tooLong('key', keyCharsMax),
      },
      {
        name: 'delete node_id past the limit',
        method: 'DELETE',
        path: `${C}/kv?key=k&node_id=${s(nodeIdCharsMax + 1)}`,
        over: true,
        error: tooLong('node_id', nodeIdCharsMax),
      },
      {
        name: 'delete client_id past the limit',
        method: 'DELETE',
        path: `${C}/kv?key=k&client_id=${s(clientIdCharsMax + 1)}`,
        over: true,
        error: tooLong('client_id', clientIdCharsMax),
      },
      {
        name: 'placement key at the limit',
        method: 'GET',
        path: `${C}/placement?key=${s(keyCharsMax)}&n=1`,
        over: false,
      },
      {
        name: 'placement key past the limit',
        method: 'GET',
        path: `${C}/placement?key=${s(keyCharsMax + 1)}&n=1`,
        over: true,
        error: tooLong('key', keyCharsMax),
      },
      {
        name: 'partition group at the limit (unknown nodes)',
        method: 'POST',
        path: `${C}/network/partition`,
        body: { group_a: Array.from({ length: partitionGroupNodesMax }, (_, i) => `x${i}`), group_b: ['n2'] },
        over: false,
        other: /node x0 is not in cluster/,
      },
      {
        name: 'partition group past the limit',
        method: 'POST',
        path: `${C}/network/partition`,
        body: { group_a: Array.from({ length: partitionGroupNodesMax + 1 }, (_, i) => `x${i}`), group_b: ['n2'] },
        over: true,
        error: tooLong('group_a', partitionGroupNodesMax),
      },
      {
        name: 'partition node id past the limit',
        method: 'POST',
        path: `${C}/network/partition`,
        body: { group_a: ['n1'], group_b: [s(nodeIdCharsMax + 1)] },
        over: true,
        error: tooLong('group_b[0]', nodeIdCharsMax),
      },
      {
        name: 'latency at the limit',
        method: 'POST',
        path: `${C}/network/latency`,
        body: { from: 'n1', to: 'n2', ms: latencyMsMax },
        over: false,
      },
      {
        name: 'latency past the limit',
        method: 'POST',
        path: `${C}/network/latency`,
        body: { from: 'n1', to: 'n2', ms: latencyMsMax + 1 },
        over: true,
        error: /ms: must be <= 60000/,
      },
      {
        name: 'latency from past the limit',
        method: 'POST',
        path: `${C}/network/latency`,
        body: { from: s(nodeIdCharsMax + 1), to: 'n2', ms: 1 },
        over: true,
        error: tooLong('from', nodeIdCharsMax),
      },
      {
        name: 'drop to past the limit',
        method: 'POST',
        path: `${C}/network/drop`,
        body: { from: 'n1', to: s(nodeIdCharsMax + 1), rate: 0 },
        over: true,
        error: tooLong('to', nodeIdCharsMax),
      },
      {
        name: 'resolve node_id past the limit',
        method: 'POST',
        path: `${C}/conflicts/resolve`,
        body: { node_id: s(nodeIdCharsMax + 1), key: 'k', choice: 'local' },
        over: true,
        error: tooLong('node_id', nodeIdCharsMax),
      },
      {
        name: 'resolve key past the limit',
        method: 'POST',
        path: `${C}/conflicts/resolve`,
        body: { node_id: 'n1', key: s(keyCharsMax + 1), choice: 'local' },
        over: true,
        error: tooLong('key', keyCharsMax),
      },
      {
        name: 'inter-region latency past the limit',
        method: 'POST',
        path: `${V}/clusters`,
        body: { strategy: 'leaderless', inter_region_latency_ms: latencyMsMax + 1 },
        over: true,
        error: /inter_region_latency_ms: must be <= 60000/,
      },
    ];
    for (const k of cases) {
      const r =
        k.method === 'GET'
          ? await c.get(k.path)
          : k.method === 'DELETE'
            ? await c.del(k.path)
            : await c.post(k.path, k.body);
      if (k.over) {
        t.equal(r.status, 400, `${k.name}: 400`);
        t.match(r.body?.error, k.error ?? /./, `${k.name}: the error names the bound`);
      } else if (k.other) {
        t.match(r.body?.error, k.other, `${k.name}: refused for its own reason only (${r.status})`);
        t.notMatch(r.body?.error ?? '', /must not have more than/, `${k.name}: no limit error`);
      } else {
        t.not(r.status, 400, `${k.name}: not refused by the bound (${r.status})`);
        t.ok(r.status < 500, `${k.name}: no server error`);
        t.notMatch(r.body?.error ?? '', /must not have more than/, `${k.name}: no limit error`);
      }
    }
    // /ws?cluster_id= is bounded too.
    const atLimit = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${s(clusterIdCharsMax)}`);
    atLimit.close();
    const past = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${s(clusterIdCharsMax + 1)}`).then(
      () => 0,
      (e: { status?: number }) => e.status ?? -1,
    );
    t.equal(past, 400, `a /ws cluster_id past ${clusterIdCharsMax} characters is refused with 400`);
  },
);

/** The most complex key and value the API accepts: every class of character, at the length limits. */
function complexString(chars: number, seed: string): string {
  const pieces = [
    seed,
    '\u0000',
    '\u0001',
    '\u001f',
    '\u007f',
    '\u0085',
    '\u2028',
    '\u200b',
    'é',
    '€',
    '😀',
    '"',
    '\\',
    '/',
    '\n',
    '\t',
    '%',
    '&',
    '=',
    '+',
    '#',
    '?',
    ' ',
  ];
  let out = '';
  for (let i = 0; out.length < chars; i++) {
    const p = pieces[i % pieces.length] as string;
    if (out.length + p.length > chars) out += 'z';
    else out += p;
  }
  return out;
}

for (const strategy of ['single_leader', 'multi_leader', 'leaderless', 'raft'] as const) {
  t.test(`${strategy}: the most complex accepted key and value are served back by every path`, async (t) => {
    const cl = await newCluster({ strategy, node_count: 3, ...(strategy === 'leaderless' ? { quorum_n: 3 } : {}) });
    t.teardown(() => c.del(`${V}/clusters/${cl.id}`));
    const C = `${V}/clusters/${cl.id}`;
    const key = complexString(keyCharsMax, 'K');
    // The largest value whose JSON body still fits the 1 MiB body cap, with every class of character.
    const value = complexString(Math.min(valueCharsMax, 300_000), 'V');
    const clientId = complexString(clientIdCharsMax, 'C');
    t.equal(key.length, keyCharsMax, 'the key is exactly at the limit');
    const ws = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${cl.id}`);
    t.teardown(() => ws.close());
    const leader =
      strategy === 'raft'
        ? ((await eventually(async () => (await c.get(`${C}/state`)).body.leader_id, 5000)) as string)
        : 'n1';
    const w = await c.post(`${C}/write`, { key, value, client_id: clientId, target_node_id: leader });
    t.equal(w.status, 200, 'written');
    t.equal(w.body.entry.key, key, 'the write answer carries the key');
    t.equal(unb64(w.body.entry.value), value, 'and the value');
    // read
    const r = await eventually(async () => {
      const x = await c.get(`${C}/read?key=${q(key)}&node_id=${leader}&client_id=${q(clientId)}`);
      return x.status === 200 ? x : undefined;
    }, 5000);
    t.equal(r.body.entry.key, key, 'read: the key comes back');
    t.equal(r.body.entry.value, b64(value), 'read: the value comes back byte for byte');
    // node store and log on every node (replication carried it)
    for (const node of cl.node_ids as string[]) {
      const store = await eventually(async () => {
        const x = await c.get(`${C}/nodes/${node}/store`);
        return x.body?.[key] ? x : undefined;
      }, 5000);
      t.equal(store.body[key].value, b64(value), `${node} store: the value under the exact key`);
      const log = await c.get(`${C}/nodes/${node}/log`);
      t.equal(log.status, 200, `${node} log: served`);
      t.ok(log.text.includes(JSON.stringify(key).slice(1, -1)), `${node} log: the key appears in it`);
    }
    // /ws events
    const ev = await ws.waitFor((m) => m.type === 'write_received' && m.data?.key === key);
    t.equal(ev.data.key, key, '/ws: write_received carries the exact key');
    // history and linearizability check
    const lin = await c.get(`${C}/linearizable`);
    t.equal(
      lin.status,
      200,
      `linearizability check answered (${lin.body?.linearizable ?? lin.body?.verdict ?? lin.text.slice(0, 80)})`,
    );
    // convergence report, with the key diverged: a stale copy on one node lists it
    const conv = await c.get(`${C}/convergence`);
    t.equal(conv.status, 200, 'convergence report served');
    t.equal(conv.body.converged, true, 'and the replicas agree on the complex key');
    if (strategy === 'leaderless') {
      const bad = await c.post(`${C}/nodes/n2/corrupt`, { key, value: 'rot' });
      t.equal(bad.status, 200, 'one replica corrupted');
      const diverged = await c.get(`${C}/convergence`);
      const d = diverged.body.diverged.find((x: { key: string }) => x.key === key);
      t.ok(d, 'the convergence report lists the complex key as diverged, exactly');
    }
  });
}
