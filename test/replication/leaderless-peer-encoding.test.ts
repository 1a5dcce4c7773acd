/**
 * Leaderless node actors encode their peer messages with msgpack's smallest map headers (fixmap;
 * protocol/actor.ts encodeCompact): the fabric still reads every message's type from its bytes
 * (link_stats by_type), peers still decode them (writes reach a quorum, reads see them), and a
 * 1-key write's put stays under msgpackr's 180-byte key-cache limit. The real server over real sockets.
 */
import t from 'tap';
import { api, wsCollect } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';
import { decode, encode, encodeCompact } from '../../protocol/actor.js';
import { messageKindTag, kindName } from '../../src/replication/link-stats.js';

interface LinkEntry {
  from: string;
  to: string;
  by_type?: Record<string, number>;
}

t.test('a fixmap-encoded put: the same value, its type readable, under 180 bytes', async (t) => {
  const put = {
    kind: 'put',
    roundTripId: 123_456,
    version: {
      key: 'bench',
      value: 'a-value-of-some-thirty-two-bytes',
      tombstone: false,
      timestamp: 1_765_052_400_123 * 65_536 + 5,
      node_id: 'n1',
      version: 123_456,
      vclock: { n1: 123_456 },
    },
    hintFor: null,
    ack: true,
    repair: false,
  };
  const bytes = encodeCompact(put);
  t.same(decode(bytes), put, 'the same message once decoded');
  t.ok(bytes.length < 180, `${bytes.length} bytes, under msgpackr's key-cache limit`);
  t.ok(encode(put).length >= 180, 'map16 headers put it past the limit (why fixmaps)');
  t.equal(kindName(messageKindTag(bytes)), 'put', 'the fabric reads its type');
  t.equal(messageKindTag(bytes), messageKindTag(encode(put)), 'the same type tag as with map16 headers');
});

t.test('a leaderless cluster over real actors: writes, reads and link types as before', async (t) => {
  const srv = await startReplSim();
  t.teardown(() => srv.stop());
  const c = api(srv.base);
  const V = '/api/v1';
  const r = await c.post(`${V}/clusters`, {
    strategy: 'leaderless',
    node_count: 3,
    quorum_n: 3,
    quorum_w: 2,
    quorum_r: 2,
  });
  t.equal(r.status, 201);
  const id = r.body.id as string;
  t.teardown(() => c.del(`${V}/clusters/${id}`));
  const ws = await wsCollect(`ws://127.0.0.1:${srv.port}/ws?cluster_id=${id}&link_stats=1`);
  t.teardown(() => ws.close());
  for (let i = 0; i < 10; i++) {
    const w = await c.post(`${V}/clusters/${id}/write`, { key: 'bench', value: `value-${i}` });
    t.equal(w.status, 200, `write ${i}`);
  }
  const read = await c.get(`${V}/clusters/${id}/read?key=bench`);
  t.equal(read.status, 200);
  const value = Buffer.from(String(read.body.entry?.value), 'base64').toString();
  t.equal(value, 'value-9', 'a quorum read sees the last write');
  const typed = (type: string) => (m: { type: string; data: { links: LinkEntry[] } }) =>
    m.type === 'link_stats' && m.data.links.some((l) => (l.by_type?.[type] ?? 0) > 0);
  await ws.waitFor(typed('put'));
  await ws.waitFor(typed('put_ack'));
  await ws.waitFor(typed('heartbeat'));
  const other = ws.messages.filter(
    (m) => m.type === 'link_stats' && m.data.links.some((l: LinkEntry) => (l.by_type?.['other'] ?? 0) > 0),
  );
  t.equal(other.length, 0, 'no message counted as of an unknown type');
});
