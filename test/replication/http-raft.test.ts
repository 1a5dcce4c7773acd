/**
 * Black-box tests of raft clusters through the real server: election, client semantics, failover,
 * minority partitions, catch-up by InstallSnapshot, and membership changes through the log.
 */
import t from 'tap';
import { api, eventually, sleep } from '../helpers/http.js';
import { startReplSim } from '../helpers/server.js';

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';

async function raftCluster(nodeCount: number): Promise<string> {
  const r = await c.post(`${V}/clusters`, { strategy: 'raft', node_count: nodeCount });
  if (r.status !== 201) throw new Error(`create failed: ${r.text}`);
  return r.body.id;
}
async function waitLeader(id: string, ms = 3000, exclude?: string): Promise<{ leader: string; elapsed: number; state: any }> {
  const t0 = Date.now();
  const state = await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${id}/state`)).body;
    return s.leader_id && s.leader_id !== exclude ? s : undefined;
  }, ms, 20);
  return { leader: state.leader_id, elapsed: Date.now() - t0, state };
}

t.test('a 5-node raft cluster elects a leader within 3 s and serves linearizable reads and writes', async (t) => {
  const id = await raftCluster(5);
  const { leader, state } = await waitLeader(id);
  t.ok(leader, `leader ${leader} elected`);
  const roles = Object.values(state.nodes).map((n: any) => n.role).sort();
  t.same(roles, ['follower', 'follower', 'follower', 'follower', 'leader'], 'one leader, four followers');
  t.ok(Object.values(state.nodes).every((n: any) => n.leader_id === leader || n.leader_id === ''), 'followers know the leader');
  const w = await c.post(`${V}/clusters/${id}/write`, { key: 'x', value: 'one' });
  t.equal(w.status, 200, 'a write with no target goes to the leader');
  t.equal(w.body.node_id, leader);
  const r = await c.get(`${V}/clusters/${id}/read?key=x`);
  t.equal(r.status, 200);
  t.equal(Buffer.from(r.body.entry.value, 'base64').toString(), 'one', 'read returns the value just written');
  const follower = state.node_ids.find((n: string) => n !== leader);
  const fw = await c.post(`${V}/clusters/${id}/write`, { key: 'x', value: 'two', target_node_id: follower });
  t.equal(fw.status, 409, 'a follower-targeted write is 409');
  t.match(fw.body.error, new RegExp(`not leader.*${leader}`), 'and names the leader');
  const fr = await c.get(`${V}/clusters/${id}/read?key=x&node_id=${follower}`);
  t.equal(fr.status, 404, 'a follower does not serve a (possibly stale) local read');
  const del = await c.del(`${V}/clusters/${id}/kv?key=x`);
  t.equal(del.status, 200, 'deletes go through the log');
  t.equal((await c.get(`${V}/clusters/${id}/read?key=x`)).status, 404, 'the deleted key reads as not found');
  const s2 = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.ok(s2.nodes[leader].commit_index >= 2, 'commit_index advanced past the write and the delete');
  t.ok(s2.nodes[leader].last_applied >= 2, 'last_applied advanced');
  const log = (await c.get(`${V}/clusters/${id}/nodes/${leader}/log`)).body;
  t.ok(Array.isArray(log) && log.length > 0, 'the log is visible');
});

t.test('pausing the leader elects a new one within 3 s; writes work again; the old leader steps down on resume', async (t) => {
  const id = await raftCluster(5);
  const { leader: old } = await waitLeader(id);
  t.equal((await c.post(`${V}/clusters/${id}/write`, { key: 'k', value: 'before' })).status, 200);
  await c.post(`${V}/clusters/${id}/nodes/${old}/pause`);
  const { leader: fresh, elapsed } = await waitLeader(id, 3000, old);
  t.not(fresh, old, `a new leader (${fresh}) replaced ${old}`);
  t.ok(elapsed < 3000, `within 3 s (${elapsed} ms)`);
  const w = await c.post(`${V}/clusters/${id}/write`, { key: 'k', value: 'after' });
  t.equal(w.status, 200, 'writes work with the new leader');
  t.equal(w.body.node_id, fresh);
  await c.post(`${V}/clusters/${id}/nodes/${old}/resume`);
  await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${id}/state`)).body;
    return s.nodes[old].role === 'follower' && s.nodes[old].last_applied >= s.nodes[fresh].last_applied;
  }, 3000);
  t.pass('the old leader stepped down and caught up');
  const r = await c.get(`${V}/clusters/${id}/read?key=k`);
  t.equal(Buffer.from(r.body.entry.value, 'base64').toString(), 'after', 'the new value is read');
});

t.test('a minority partition cannot commit while the majority side can', async (t) => {
  const id = await raftCluster(5);
  const { leader, state } = await waitLeader(id);
  const others = state.node_ids.filter((n: string) => n !== leader);
  // The leader with one follower on the minority side; three nodes on the majority side.
  const minority = [leader, others[0]];
  const majority = others.slice(1);
  const p = await c.post(`${V}/clusters/${id}/network/partition`, { group_a: minority, group_b: majority });
  t.equal(p.status, 201);
  const stuck = await c.post(`${V}/clusters/${id}/write`, { key: 'm', value: 'minority', target_node_id: leader });
  t.equal(stuck.status, 409, 'the old leader on the minority side cannot commit');
  const { leader: majLeader } = await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${id}/state`)).body;
    const l = majority.find((n: string) => s.nodes[n].role === 'leader');
    return l ? { leader: l } : undefined;
  }, 3000);
  const ok = await c.post(`${V}/clusters/${id}/write`, { key: 'm', value: 'majority', target_node_id: majLeader });
  t.equal(ok.status, 200, `the majority side elects ${majLeader} and commits`);
  await c.del(`${V}/clusters/${id}/network/partition/${p.body.partition_id}`);
  await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${id}/state`)).body;
    return s.nodes[leader].role === 'follower' && s.nodes[leader].last_applied >= s.nodes[majLeader].last_applied;
  }, 3000);
  const r = await c.get(`${V}/clusters/${id}/read?key=m`);
  t.equal(Buffer.from(r.body.entry.value, 'base64').toString(), 'majority', 'after healing the majority value stands');
});

t.test('a follower paused through more than 30 writes catches up via snapshot', async (t) => {
  const id = await raftCluster(3);
  const { leader, state } = await waitLeader(id);
  const follower = state.node_ids.find((n: string) => n !== leader);
  await c.post(`${V}/clusters/${id}/nodes/${follower}/pause`);
  for (let i = 0; i < 45; i++) t.equal((await c.post(`${V}/clusters/${id}/write`, { key: `s${i}`, value: String(i) })).status, 200, `write ${i} commits with 2 of 3`);
  const leaderLog = (await c.get(`${V}/clusters/${id}/nodes/${leader}/log`)).body;
  t.match(leaderLog[0], { type: 'raft_snapshot' }, 'the leader compacted its log into a raftSnapshot');
  t.ok(leaderLog[0].last_included_index >= 30, `snapshot boundary ${leaderLog[0].last_included_index}`);
  await c.post(`${V}/clusters/${id}/nodes/${follower}/resume`);
  await eventually(async () => {
    const s = (await c.get(`${V}/clusters/${id}/state`)).body;
    return s.nodes[follower].last_applied >= s.nodes[leader].commit_index;
  }, 3000);
  const store = (await c.get(`${V}/clusters/${id}/nodes/${follower}/store`)).body;
  t.equal(Object.keys(store).filter((k) => k.startsWith('s')).length, 45, 'the follower has every key after InstallSnapshot');
  const flog = (await c.get(`${V}/clusters/${id}/nodes/${follower}/log`)).body;
  t.match(flog[0], { type: 'raft_snapshot' }, 'the follower log starts at a snapshot boundary');
});

t.test('membership: POST and DELETE nodes change a raft cluster through the log', async (t) => {
  const id = await raftCluster(3);
  const { leader } = await waitLeader(id);
  await c.post(`${V}/clusters/${id}/write`, { key: 'm1', value: 'v' });
  const added = await c.post(`${V}/clusters/${id}/nodes`);
  t.equal(added.status, 201, 'a node is added');
  t.equal(added.body.id, 'n4');
  await eventually(async () => (await c.get(`${V}/clusters/${id}/nodes/n4/store`)).body.m1 !== undefined, 3000);
  t.pass('the new node was caught up');
  const follower = ['n1', 'n2', 'n3'].find((n) => n !== leader) as string;
  t.equal((await c.del(`${V}/clusters/${id}/nodes/${follower}`)).status, 204, 'a follower is removed');
  const s = (await c.get(`${V}/clusters/${id}/state`)).body;
  t.equal(s.node_ids.length, 3);
  t.equal((await c.post(`${V}/clusters/${id}/write`, { key: 'm2', value: 'v' })).status, 200, 'the resized cluster commits');
  t.equal((await c.del(`${V}/clusters/${id}/nodes/${leader}`)).status, 204, 'the leader itself can be removed');
  const { leader: next } = await waitLeader(id, 3000, leader);
  t.not(next, leader, 'a new leader takes over');
  t.equal((await c.post(`${V}/clusters/${id}/write`, { key: 'm3', value: 'v' })).status, 200, 'and commits');
  await sleep(10);
});
