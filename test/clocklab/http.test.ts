import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startClockLab, type ClockLabHandle } from '../../src/clocklab/server.js';
import { silentLogger } from '../../src/util/logger.js';
import { api, eventually, request, sleep, wsCollect } from '../helpers/http.js';

async function start(
  env: Record<string, string> = {},
): Promise<{ lab: ClockLabHandle; base: string; proxy: string; ws: string; c: ReturnType<typeof api> }> {
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '7', ...env },
    logger: silentLogger(),
  });
  const base = `http://127.0.0.1:${lab.port}`;
  return { lab, base, proxy: `http://127.0.0.1:${lab.proxyPort}`, ws: `ws://127.0.0.1:${lab.port}/ws`, c: api(base) };
}

const metric = (text: string, name: string): number => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
};

t.test('the clock lab over HTTP and WebSocket', async (t) => {
  const { lab, base, ws: wsUrl, c } = await start();
  t.teardown(() => lab.close());
  const events = await wsCollect(wsUrl);
  t.teardown(() => events.close());

  t.test('health, readiness and metrics answer', async (t) => {
    const h = await c.get('/healthz');
    t.same([h.status, h.body], [200, { status: 'ok' }]);
    t.equal((await c.get('/readyz')).status, 200);
    const m = await c.get('/metrics');
    t.equal(m.status, 200);
    for (const name of ['vc_ws_clients_connected', 'vc_ws_events_dropped_total', 'vc_event_bus_publish_drops'])
      t.match(m.text, new RegExp(`^${name} `, 'm'), `${name} is exported`);
    t.equal(metric(m.text, 'vc_ws_clients_connected'), 1, 'the one WebSocket client is counted');
  });

  t.test('processes: spawn, list, get, internal event, kill, and every bad input', async (t) => {
    const list = await c.get('/api/v1/processes');
    t.same(
      list.body.processes.map((p: any) => p.id),
      ['p1', 'p2', 'p3'],
      'the default configuration starts p1..p3',
    );
    const created = await c.post('/api/v1/processes', { id: 'm1', clock_type: 'matrix' });
    t.equal(created.status, 201);
    t.same([created.body.id, created.body.clock_type, created.body.status], ['m1', 'matrix', 'alive']);
    t.ok(
      created.body.matrix && created.body.known_by_all,
      'a matrix process shows its matrix and what all are known to have seen',
    );
    const s = await c.post('/api/v1/processes', { id: 's1', clock_type: 'scalar' });
    t.equal(s.body.clock, 0, 'a scalar clock starts at 0');
    const ev = await c.post('/api/v1/processes/s1/event', { label: 'work' });
    t.same([ev.status, ev.body.clock], [200, 1], 'an internal event ticks the clock (IR1)');
    const ev2 = await c.post('/api/v1/processes/p1/event');
    t.same([ev2.status, ev2.body.clock.p1], [200, 1], 'the event body is optional');
    await events.waitFor((m) => m.type === 'clock_tick' && m.data.process === 's1' && m.data.cause === 'internal');
    const cases: Array<{ name: string; run: () => Promise<any>; status: number; error: RegExp }> = [
      {
        name: 'a duplicate spawn is 409',
        run: () => c.post('/api/v1/processes', { id: 'm1' }),
        status: 409,
        error: /already exists/,
      },
      {
        name: 'an invalid id is 400',
        run: () => c.post('/api/v1/processes', { id: 'bad id!' }),
        status: 400,
        error: /^id: /,
      },
      {
        name: 'an unknown clock type is 400',
        run: () => c.post('/api/v1/processes', { id: 'x', clock_type: 'hybrid' }),
        status: 400,
        error: /clock_type: must be one of/,
      },
      {
        name: 'an unknown field is 400',
        run: () => c.post('/api/v1/processes', { id: 'x', colour: 'red' }),
        status: 400,
        error: /^colour: /,
      },
      {
        name: 'malformed JSON is 400',
        run: () => c.post('/api/v1/processes', '{"id":'),
        status: 400,
        error: /malformed JSON/,
      },
      { name: 'a missing body is 400', run: () => c.post('/api/v1/processes'), status: 400, error: /required/ },
      {
        name: 'an unknown process is 404',
        run: () => c.get('/api/v1/processes/nobody'),
        status: 404,
        error: /not found/,
      },
      {
        name: 'an invalid id in the path is 400',
        run: () => c.get('/api/v1/processes/%20bad'),
        status: 400,
        error: /not a valid process id/,
      },
      {
        name: 'an event for an unknown process is 404',
        run: () => c.post('/api/v1/processes/nobody/event', {}),
        status: 404,
        error: /not found/,
      },
      {
        name: 'an event body with a wrong type is 400',
        run: () => c.post('/api/v1/processes/p1/event', { label: 5 }),
        status: 400,
        error: /^label: /,
      },
      { name: 'an unknown route is 404', run: () => c.get('/api/v1/nothing'), status: 404, error: /no route/ },
      {
        name: 'a body over 1 MiB is 413',
        run: () => c.post('/api/v1/processes', { id: 'big', pad: 'x'.repeat(1024 * 1024 + 10) }),
        status: 413,
        error: /exceeds/,
      },
    ];
    for (const k of cases) {
      const r = await k.run();
      t.equal(r.status, k.status, k.name);
      t.match(r.body?.error, k.error, `${k.name}: the error says why`);
      t.match(String(r.headers['content-type']), /application\/json/, `${k.name}: the error is JSON`);
    }
    const kill = await c.del('/api/v1/processes/s1');
    t.equal(kill.status, 204);
    t.equal((await c.get('/api/v1/processes/s1')).body.status, 'killed', 'a killed process stays listed as killed');
    t.equal((await c.del('/api/v1/processes/s1')).status, 409, 'killing twice is 409');
    t.equal((await c.post('/api/v1/processes/s1/event', {})).status, 409, 'a killed process has no events');
    t.equal((await c.post('/api/v1/processes', { id: 's1' })).status, 409, 'a killed id is not reused before reset');
    await events.waitFor((m) => m.type === 'process_killed' && m.data.process === 's1');
  });

  t.test('messages travel over the channels and every step is an event', async (t) => {
    const sent = await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: 'hello', amount: 10 });
    t.equal(sent.status, 202);
    t.same([sent.body.from, sent.body.to, sent.body.status], ['p1', 'p2', 'in_flight']);
    t.ok(sent.body.clock.p1 >= 1, 'the sender’s clock after the send is returned');
    const id = sent.body.id;
    const delivered = await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === id);
    t.same([delivered.data.from, delivered.data.payload, delivered.data.amount], ['p1', 'hello', 10]);
    t.ok(events.messages.some((m) => m.type === 'message_sent' && m.data.id === id));
    const p2 = await c.get('/api/v1/processes/p2');
    t.same(
      [p2.body.balance, p2.body.vector.p1 >= sent.body.vector.p1],
      [110, true],
      'the receiver merged the sender’s vector and got the amount',
    );
    const b = await c.post('/api/v1/broadcast', { from: 'p3', payload: 'to all' });
    t.equal(b.status, 202);
    t.same(
      b.body.messages.map((m: any) => m.to).sort(),
      ['m1', 'p1', 'p2'],
      'a broadcast goes to every other alive process',
    );
    const cases: Array<{ name: string; body: unknown; status: number; error: RegExp }> = [
      {
        name: 'an unknown receiver is 404',
        body: { from: 'p1', to: 'zz', payload: 'x' },
        status: 404,
        error: /zz not found/,
      },
      {
        name: 'a message to oneself is 400',
        body: { from: 'p1', to: 'p1', payload: 'x' },
        status: 400,
        error: /itself/,
      },
      { name: 'a missing payload is 400', body: { from: 'p1', to: 'p2' }, status: 400, error: /payload: is required/ },
      {
        name: 'a negative amount is 400',
        body: { from: 'p1', to: 'p2', payload: 'x', amount: -1 },
        status: 400,
        error: /^amount: /,
      },
      {
        name: 'overdrawing is 409',
        body: { from: 'p1', to: 'p2', payload: 'x', amount: 100000 },
        status: 409,
        error: /insufficient balance/,
      },
      { name: 'a killed receiver is 409', body: { from: 'p1', to: 's1', payload: 'x' }, status: 409, error: /killed/ },
    ];
    for (const k of cases) {
      const r = await c.post('/api/v1/messages', k.body);
      t.equal(r.status, k.status, k.name);
      t.match(r.body.error, k.error, k.name);
    }
    t.equal(
      (await c.post('/api/v1/broadcast', { from: 'nobody', payload: 'x' })).status,
      404,
      'a broadcast from an unknown process is 404',
    );
  });

  t.test('channel faults, partitions and clearing them', async (t) => {
    const f = await c.post('/api/v1/channels/p1/p2/faults', { delay_ms: 150 });
    t.same([f.status, f.body.delay_ms], [200, 150]);
    const sent = await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: 'slow' });
    const at = Date.now();
    await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === sent.body.id);
    t.ok(Date.now() - at >= 120, 'the delay holds the message back');
    await c.post('/api/v1/channels/p1/p3/faults', { drop_rate: 1 });
    const lost = await c.post('/api/v1/messages', { from: 'p1', to: 'p3', payload: 'lost' });
    t.same([lost.body.status, lost.body.drop_reason], ['dropped', 'drop_rate']);
    await events.waitFor(
      (m) => m.type === 'message_dropped' && m.data.id === lost.body.id && m.data.reason === 'drop_rate',
    );
    const list = await c.get('/api/v1/channels');
    t.ok(
      list.body.channels.some((ch: any) => ch.from === 'p1' && ch.to === 'p3' && ch.drop_rate === 1),
      'the channel list shows the fault',
    );
    const part = await c.post('/api/v1/partition', { side_a: ['p1'], side_b: ['p2', 'p3'] });
    t.equal(part.status, 201);
    const across = await c.post('/api/v1/messages', { from: 'p2', to: 'p1', payload: 'across' });
    t.same(across.body.drop_reason, 'partition');
    t.equal((await c.get('/api/v1/simulation/state')).body.partitions.length, 1);
    const cases: Array<{ name: string; run: () => Promise<any>; status: number; error: RegExp }> = [
      {
        name: 'a fault body with nothing in it is 400',
        run: () => c.post('/api/v1/channels/p1/p2/faults', {}),
        status: 400,
        error: /at least one/,
      },
      {
        name: 'a drop rate above 1 is 400',
        run: () => c.post('/api/v1/channels/p1/p2/faults', { drop_rate: 1.5 }),
        status: 400,
        error: /^drop_rate: /,
      },
      {
        name: 'a negative delay is 400',
        run: () => c.post('/api/v1/channels/p1/p2/faults', { delay_ms: -5 }),
        status: 400,
        error: /^delay_ms: /,
      },
      {
        name: 'reorder must be a boolean',
        run: () => c.post('/api/v1/channels/p1/p2/faults', { reorder: 'yes' }),
        status: 400,
        error: /^reorder: /,
      },
      {
        name: 'a channel of an unknown process is 404',
        run: () => c.post('/api/v1/channels/p1/zz/faults', { delay_ms: 1 }),
        status: 404,
        error: /zz not found/,
      },
      {
        name: 'a channel from a process to itself is 400',
        run: () => c.post('/api/v1/channels/p1/p1/faults', { delay_ms: 1 }),
        status: 400,
        error: /two different/,
      },
      {
        name: 'overlapping partition sides are 400',
        run: () => c.post('/api/v1/partition', { side_a: ['p1'], side_b: ['p1'] }),
        status: 400,
        error: /disjoint/,
      },
      {
        name: 'an empty partition side is 400',
        run: () => c.post('/api/v1/partition', { side_a: [], side_b: ['p1'] }),
        status: 400,
        error: /^side_a: /,
      },
      {
        name: 'a partition naming an unknown process is 404',
        run: () => c.post('/api/v1/partition', { side_a: ['zz'], side_b: ['p1'] }),
        status: 404,
        error: /not found/,
      },
      {
        name: 'healing an unknown partition is 404',
        run: () => c.del('/api/v1/partition/p99'),
        status: 404,
        error: /not found/,
      },
    ];
    for (const k of cases) {
      const r = await k.run();
      t.equal(r.status, k.status, k.name);
      t.match(r.body.error, k.error, k.name);
    }
    t.equal((await c.del(`/api/v1/partition/${part.body.id}`)).status, 204, 'a partition heals by id');
    const cleared = await c.del('/api/v1/faults');
    t.equal(cleared.status, 200);
    t.ok(cleared.body.cleared_channels >= 2);
    const after = await c.post('/api/v1/messages', { from: 'p1', to: 'p3', payload: 'after' });
    await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === after.body.id);
    t.pass('after clearing, a previously lossy channel delivers');
  });

  t.test('switching delivery mode shows the causal violation the hold-back queue prevents', async (t) => {
    const bad = await c.put('/api/v1/delivery', { mode: 'sometimes' });
    t.same([bad.status, bad.body.error], [400, 'mode: must be one of "causal", "immediate"']);
    for (const mode of ['immediate', 'causal']) {
      const r = await c.put('/api/v1/delivery', { mode });
      t.same([r.status, r.body.mode, (await c.get('/api/v1/delivery')).body.mode], [200, mode, mode]);
      await c.post('/api/v1/channels/p1/p3/faults', { delay_ms: 300 });
      const cause = await c.post('/api/v1/messages', { from: 'p1', to: 'p3', payload: `cause-${mode}` });
      const copy = await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: `copy-${mode}` });
      await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === copy.body.id);
      const effect = await c.post('/api/v1/messages', { from: 'p2', to: 'p3', payload: `effect-${mode}` });
      await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === cause.body.id, 3000);
      await events.waitFor((m) => m.type === 'message_delivered' && m.data.id === effect.body.id, 3000);
      const order = events.messages
        .filter(
          (m) =>
            m.type === 'message_delivered' && m.data.to === 'p3' && [cause.body.id, effect.body.id].includes(m.data.id),
        )
        .map((m) => m.data.id);
      if (mode === 'immediate') {
        t.same(order, [effect.body.id, cause.body.id], 'immediate: the effect overtakes its cause');
        t.ok(
          events.messages.some((m) => m.type === 'causal_violation' && m.data.id === effect.body.id),
          'and a causal_violation is published',
        );
      } else {
        t.same(order, [cause.body.id, effect.body.id], 'causal: the effect waits');
        t.ok(
          events.messages.some((m) => m.type === 'message_held' && m.data.id === effect.body.id),
          'in the hold-back queue (message_held)',
        );
      }
    }
    await c.del('/api/v1/faults');
  });

  t.test('global snapshots: start, show, verify, incomplete after a kill, discarded on reset', async (t) => {
    const s = await c.post('/api/v1/processes/p1/snapshot');
    t.equal(s.status, 201);
    t.match(s.body.id, /^s\d+$/);
    const done = await events.waitFor((m) => m.type === 'snapshot_complete' && m.data.snapshot === s.body.id);
    t.equal(done.data.consistent, true);
    for (const prefix of ['/api/v1', '']) {
      const view = await c.get(`${prefix}/snapshots/${s.body.id}`);
      t.same([view.status, view.body.status], [200, 'complete'], `GET ${prefix}/snapshots/{id}`);
      t.ok(view.body.processes.p2 && Array.isArray(view.body.channels), 'it records process states and channels');
      const v = await c.get(`${prefix}/snapshots/${s.body.id}/verify`);
      t.same([v.status, v.body.consistent, v.body.complete], [200, true, true], `GET ${prefix}/snapshots/{id}/verify`);
    }
    const unprefixed = await c.post('/processes/p2/snapshot');
    t.equal(unprefixed.status, 201, 'the unprefixed start endpoint works too');
    t.ok(
      events.messages.some((m) => m.type === 'marker_sent') &&
        events.messages.some((m) => m.type === 'marker_received'),
    );
    t.ok((await c.get('/api/v1/snapshots')).body.snapshots.length >= 2);

    await c.post('/api/v1/processes', { id: 'victim' });
    await c.post('/api/v1/channels/p1/victim/faults', { delay_ms: 500 });
    const s2 = await c.post('/api/v1/processes/p1/snapshot');
    t.equal((await c.del('/api/v1/processes/victim')).status, 204);
    await events.waitFor((m) => m.type === 'snapshot_incomplete' && m.data.snapshot === s2.body.id);
    await sleep(100);
    const v2 = await c.get(`/snapshots/${s2.body.id}/verify`);
    t.same([v2.body.consistent, v2.body.complete], [false, false]);
    t.match(v2.body.reasons.join(' '), /victim was killed after the snapshot began/);
    t.equal((await c.post('/api/v1/processes/zz/snapshot')).status, 404, 'a snapshot from an unknown process is 404');
    t.equal((await c.post('/api/v1/processes/victim/snapshot')).status, 409, 'a snapshot from a killed process is 409');
    t.equal((await c.get('/api/v1/snapshots/s999/verify')).status, 404, 'an unknown snapshot is 404');
    const reset = await c.post('/api/v1/simulation/reset');
    t.equal(reset.status, 200);
    t.ok(reset.body.discarded_snapshots.includes(s2.body.id), 'reset discards the orphaned snapshot');
    t.equal((await c.get(`/snapshots/${s2.body.id}`)).status, 404);
    const state = await c.get('/api/v1/simulation/state');
    t.same(
      state.body.processes.map((p: any) => p.id),
      ['p1', 'p2', 'p3'],
      'reset restores the configured processes',
    );
  });

  t.test('the KV store: writes, reads with a reader, conflicts, stale writes, bad input', async (t) => {
    const w1 = await c.put('/api/v1/kv/x', { value: 'a', writer: 'p1' });
    t.same([w1.status, w1.body.outcome, w1.body.versions.length, w1.body.conflict], [200, 'created', 1, false]);
    const r = await c.get('/api/v1/kv/x');
    t.same(Object.keys(r.body).sort(), ['conflict', 'key', 'versions']);
    t.same(
      [r.body.versions[0].value, r.body.versions[0].writer, r.body.versions[0].version],
      ['a', 'p1', { p1: w1.body.written.version.p1 }],
    );
    const conflict = await c.put('/api/v1/kv/x', { value: 'b', writer: 'p2' });
    t.same(
      [conflict.body.outcome, conflict.body.conflict, conflict.body.versions.length],
      ['conflict', true, 2],
      'a write by a process that never saw x is concurrent',
    );
    await events.waitFor((m) => m.type === 'kv_conflict' && m.data.key === 'x');
    const read = await c.get('/api/v1/kv/x?reader=p3');
    t.equal(read.body.versions.length, 2);
    const w3 = await c.put('/api/v1/kv/x', { value: 'c', writer: 'p3' });
    t.same(
      [w3.body.outcome, w3.body.versions.length, w3.body.conflict],
      ['replaced', 1, false],
      'after reading both siblings p3’s write replaces them',
    );
    const stale = await c.put('/api/v1/kv/x', { value: 'old', writer: 'p1', version: { p1: 1 } });
    t.same([stale.status, /stale write/.test(stale.body.error)], [409, true], 'a replayed dominated write is stale');
    await events.waitFor((m) => m.type === 'kv_write' && m.data.key === 'x');
    const cases: Array<{ name: string; run: () => Promise<any>; status: number; error: RegExp }> = [
      { name: 'an unknown key is 404', run: () => c.get('/api/v1/kv/nope'), status: 404, error: /nope not found/ },
      {
        name: 'an unknown writer is 404',
        run: () => c.put('/api/v1/kv/x', { value: 'v', writer: 'zz' }),
        status: 404,
        error: /zz not found/,
      },
      {
        name: 'a missing value is 400',
        run: () => c.put('/api/v1/kv/x', { writer: 'p1' }),
        status: 400,
        error: /value: is required/,
      },
      {
        name: 'a non-string value is 400',
        run: () => c.put('/api/v1/kv/x', { value: 3, writer: 'p1' }),
        status: 400,
        error: /^value: /,
      },
      {
        name: 'an unknown reader is 404',
        run: () => c.get('/api/v1/kv/x?reader=zz'),
        status: 404,
        error: /zz not found/,
      },
      { name: 'an invalid reader is 400', run: () => c.get('/api/v1/kv/x?reader=%20'), status: 400, error: /reader/ },
      {
        name: 'a version naming an unknown process is 400',
        run: () => c.put('/api/v1/kv/x', { value: 'v', writer: 'p1', version: { q9: 1 } }),
        status: 400,
        error: /unknown process/,
      },
      { name: 'a too long key is 400', run: () => c.get(`/api/v1/kv/${'k'.repeat(300)}`), status: 400, error: /key/ },
    ];
    for (const k of cases) {
      const res = await k.run();
      t.equal(res.status, k.status, k.name);
      t.match(res.body.error, k.error, k.name);
    }
    t.ok((await c.get('/api/v1/kv')).body.keys.includes('x'));
  });

  t.test('scenarios are listed and each runs to a passing verdict, narrated on /ws', async (t) => {
    const list = await c.get('/api/v1/scenarios');
    const names = list.body.scenarios.map((s: any) => s.name);
    t.same(names, [
      'BasicLamport',
      'Snapshot3P',
      'FalseConflict',
      'ConcurrentWrites',
      'CausalViolation',
      'CausalDelivery',
      'MatrixGC',
      'PartitionAndHeal',
    ]);
    for (const name of names) {
      const r = await c.post(`/api/v1/scenarios/${name}/run`);
      t.same([r.status, r.body.verdict.passed], [200, true], `${name}: ${r.body.verdict?.summary}`);
      await events.waitFor((m) => m.type === 'scenario_verdict' && m.data.scenario === name);
    }
    t.equal(
      (await c.get('/api/v1/kv/x')).status,
      404,
      'each run reset the simulation: the KV store of earlier scenarios is gone',
    );
    t.ok(events.messages.filter((m) => m.type === 'scenario_step').length >= 8 * 2);
    t.equal((await c.post('/api/v1/scenarios/Nope/run')).status, 404);
    await c.post('/api/v1/simulation/reset');
  });

  t.test('the event stream: envelope, increasing seq, history replay on connect', async (t) => {
    const env = events.messages[events.messages.length - 1];
    t.same(Object.keys(env).sort(), ['data', 'seq', 'ts', 'type']);
    const seqs = events.messages.map((m) => m.seq);
    t.ok(
      seqs.every((s, i) => i === 0 || s > (seqs[i - 1] as number)),
      'seq increases',
    );
    const late = await wsCollect(wsUrl);
    await late.waitFor((m) => m.seq === env.seq, 2000);
    t.ok(late.messages.length >= 100, `a new client gets the recent history (${late.messages.length} events)`);
    late.close();
  });
});

t.test('authentication, origins, the proxy, ping/pong and the caps', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'clocklab-'));
  const configPath = join(dir, 'lab.yaml');
  writeFileSync(
    configPath,
    'processes:\n  - id: a\n    clock_type: scalar\n  - b\n' +
      '  - { id: c, clock_type: matrix }\nkv:\n  conflict_strategy: lww\nchannels:\n' +
      '  default_delay_ms: 2\n',
  );
  const {
    lab,
    base,
    proxy,
    ws: wsUrl,
    c,
  } = await start({
    VC_API_TOKENS: 'alice:s3cret,bob:hunter2',
    VC_ALLOWED_ORIGINS: 'http://good.example,http://localhost:3001',
    // Generous here: a loaded machine must not close the proxy's upstream socket mid-test. The
    // pong-deadline test below starts its own lab with short intervals.
    VC_WS_PING_INTERVAL_MS: '1000',
    VC_WS_PONG_DEADLINE_MS: '10000',
    CONFIG_PATH: configPath,
  });
  t.teardown(() => lab.close());
  const auth = { authorization: 'Bearer alice:s3cret' };
  const good = { ...auth, origin: 'http://good.example' };

  t.test('every route but health and metrics needs a valid bearer token', async (t) => {
    t.equal((await c.get('/healthz')).status, 200);
    t.equal((await c.get('/readyz')).status, 200);
    t.equal((await c.get('/metrics')).status, 200);
    const cases: Array<{ name: string; headers: Record<string, string>; status: number }> = [
      { name: 'no token is 401', headers: {}, status: 401 },
      { name: 'a wrong secret is 401', headers: { authorization: 'Bearer alice:wrong' }, status: 401 },
      { name: 'a non-bearer scheme is 401', headers: { authorization: 'Basic YWxpY2U6czNjcmV0' }, status: 401 },
      { name: 'a listed token passes', headers: auth, status: 200 },
      { name: 'the second listed token passes', headers: { authorization: 'Bearer bob:hunter2' }, status: 200 },
    ];
    for (const k of cases) {
      const r = await c.get('/api/v1/processes', k.headers);
      t.equal(r.status, k.status, k.name);
      if (k.status === 401)
        t.ok(r.body.error && r.headers['www-authenticate'] === 'Bearer', `${k.name}: JSON error and WWW-Authenticate`);
    }
    t.equal((await c.post('/processes/a/snapshot')).status, 401, 'the unprefixed snapshot route is protected too');
  });

  t.test('the YAML configuration sets the initial processes and the conflict strategy', async (t) => {
    const ps = await c.get('/api/v1/processes', auth);
    t.same(
      ps.body.processes.map((p: any) => [p.id, p.clock_type]),
      [
        ['a', 'scalar'],
        ['b', 'vector'],
        ['c', 'matrix'],
      ],
    );
    await c.post('/api/v1/processes/b/event', {}, auth);
    await c.put('/api/v1/kv/k', { value: 'from-a', writer: 'a' }, auth);
    const w = await c.put('/api/v1/kv/k', { value: 'from-b', writer: 'b' }, auth);
    t.same(
      [w.body.outcome, w.body.resolved_by, w.body.versions.length],
      ['conflict', 'lww', 1],
      'lww resolves the concurrent write automatically',
    );
  });

  t.test('the WebSocket refuses bad origins with 403 and missing tokens with 401', async (t) => {
    const cases: Array<{ name: string; url: string; headers: Record<string, string>; status: number }> = [
      {
        name: 'an origin not listed is 403',
        url: wsUrl,
        headers: { ...auth, origin: 'http://evil.example' },
        status: 403,
      },
      { name: 'a missing origin is 403 when origins are configured', url: wsUrl, headers: auth, status: 403 },
      {
        name: 'a listed origin without a token is 401',
        url: wsUrl,
        headers: { origin: 'http://good.example' },
        status: 401,
      },
    ];
    for (const k of cases) {
      const err = await wsCollect(k.url, k.headers).then(
        () => undefined,
        (e: { status?: number }) => e,
      );
      t.equal(err?.status, k.status, k.name);
    }
    const ok = await wsCollect(wsUrl, good);
    t.pass('a listed origin with the Authorization header connects');
    ok.close();
    const viaQuery = await wsCollect(`${wsUrl}?token=bob:hunter2`, { origin: 'http://good.example' });
    t.pass('the token may also come as ?token= (browsers cannot set headers on WebSockets)');
    viaQuery.close();
  });

  t.test(
    'the proxy serves the page and forwards REST with its Authorization header and WebSocket traffic',
    async (t) => {
      const page = await request(proxy, 'GET', '/');
      t.equal(page.status, 200);
      t.match(page.text, /<title>Clock lab<\/title>/);
      const p = api(proxy);
      t.equal((await p.get('/api/v1/processes')).status, 401, 'without the header the lab refuses, through the proxy');
      const listed = await p.get('/api/v1/processes', auth);
      t.same([listed.status, listed.body.processes.length], [200, 3], 'the Authorization header is forwarded');
      const created = await p.post('/api/v1/processes', { id: 'via-proxy' }, auth);
      t.equal(created.status, 201, 'bodies are forwarded');
      t.equal(
        (await p.post('/api/v1/processes', { id: 'via-proxy' }, auth)).status,
        409,
        'error statuses come back unchanged',
      );
      t.equal((await p.get('/api/v1/kv/zzz', auth)).body.error, 'key zzz not found');
      t.equal((await p.get('/healthz')).status, 200);

      const pws = `ws://127.0.0.1:${new URL(proxy).port}/ws`;
      const refused = await wsCollect(pws, { ...auth, origin: 'http://evil.example' }).then(
        () => undefined,
        (e: { status?: number }) => e,
      );
      t.equal(refused?.status, 403, 'the lab’s 403 reaches the browser through the proxy');
      const noToken = await wsCollect(pws, { origin: 'http://localhost:3001' }).then(
        () => undefined,
        (e: { status?: number }) => e,
      );
      t.equal(noToken?.status, 401, 'and so does its 401');
      const stream = await wsCollect(pws, { ...auth, origin: 'http://localhost:3001' });
      t.ok(
        await stream.waitFor((m) => m.type === 'process_spawned' && m.data.process === 'via-proxy'),
        'history is replayed through the proxy',
      );
      const sent = await p.post('/api/v1/messages', { from: 'a', to: 'b', payload: 'through the proxy' }, auth);
      t.equal(sent.status, 202);
      const got = await stream.waitFor((m) => m.type === 'message_delivered' && m.data.id === sent.body.id);
      t.equal(got.data.payload, 'through the proxy', 'live events stream through the proxy');
      stream.ws.send('hello from the browser');
      await sleep(50);
      t.equal(
        stream.ws.readyState,
        WebSocket.OPEN,
        'a frame from the browser does not close the stream (the lab reads none, so the proxy forwards none)',
      );
      stream.close();
    },
  );

  t.test('a client that never answers pings is closed after the pong deadline; one that does stays', async (t) => {
    const short = await start({
      VC_API_TOKENS: 'alice:s3cret,bob:hunter2',
      VC_ALLOWED_ORIGINS: 'http://good.example,http://localhost:3001',
      VC_WS_PING_INTERVAL_MS: '40',
      VC_WS_PONG_DEADLINE_MS: '150',
    });
    t.teardown(() => short.lab.close());
    const wsUrl = short.ws;
    const c = short.c;
    const silent = new WebSocket(wsUrl, { headers: good, autoPong: false });
    const opened = new Promise((r) => silent.once('open', r));
    const closed = new Promise<number>((resolve) => silent.on('close', (code) => resolve(code)));
    const polite = await wsCollect(wsUrl, good);
    await opened;
    const at = Date.now();
    await closed;
    t.ok(Date.now() - at >= 100, 'closed only after the deadline');
    t.equal(polite.ws.readyState, WebSocket.OPEN, 'the client answering pings stays connected');
    const m = await c.get('/metrics');
    t.ok(metric(m.text, 'vc_ws_pong_timeouts_total') >= 1, 'the timeout is counted');
    polite.close();
  });
});

t.test('the bus buffer and per-client queues are bounded and their drops are counted', async (t) => {
  const { lab, ws: wsUrl, c } = await start({ VC_WS_CLIENT_QUEUE_BYTES: '65536' });
  t.teardown(() => lab.close());
  const slow = new WebSocket(wsUrl);
  await new Promise((r) => slow.once('open', r));
  (slow as unknown as { _socket: { pause(): void } })._socket.pause(); // a client that stops reading
  for (let i = 0; i < 100; i++) await c.post('/api/v1/processes', { id: `n${i}` });
  // Large broadcasts to 102 processes, then a 103-process snapshot: tens of thousands of events in bursts.
  for (let i = 0; i < 6; i++) await c.post('/api/v1/broadcast', { from: 'n0', payload: 'x'.repeat(4000) });
  const s = await c.post('/api/v1/processes/n1/snapshot');
  t.equal(s.status, 201);
  let last = '';
  const m = await eventually(async () => {
    const r = await c.get('/metrics');
    last =
      `bus drops ${metric(r.text, 'vc_event_bus_publish_drops')}, client drops ` +
      `${metric(r.text, 'vc_ws_events_dropped_total')}`;
    return metric(r.text, 'vc_event_bus_publish_drops') > 0 && metric(r.text, 'vc_ws_events_dropped_total') > 0
      ? r
      : undefined;
  }, 5000).catch((err: Error) => {
    throw new Error(`${err.message}: ${last}`);
  });
  t.ok(
    metric(m.text, 'vc_event_bus_publish_drops') > 0,
    `the bus dropped ${metric(m.text, 'vc_event_bus_publish_drops')} events past its 4096 buffer`,
  );
  t.ok(
    metric(m.text, 'vc_ws_events_dropped_total') > 0,
    `the stalled client lost ${metric(m.text, 'vc_ws_events_dropped_total')} events`,
  );
  const v = await eventually(async () => {
    const r = await c.get(`/snapshots/${s.body.id}/verify`);
    return r.body.complete ? r : undefined;
  }, 5000);
  t.equal(v.body.consistent, true, 'the 103-process snapshot completes consistent despite the event losses');
  slow.terminate();
});

t.test('a bad configuration stops the start with a message naming the problem', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'clocklab-bad-'));
  const cases: Array<{ name: string; env: Record<string, string>; error: RegExp }> = [
    {
      name: 'an unknown strategy',
      env: {
        CONFIG_PATH: (writeFileSync(join(dir, 'a.yaml'), 'kv:\n  conflict_strategy: newest\n'), join(dir, 'a.yaml')),
      },
      error: /kv\.conflict_strategy: must be one of/,
    },
    { name: 'a missing file', env: { CONFIG_PATH: join(dir, 'missing.yaml') }, error: /cannot read/ },
    {
      name: 'a duplicate process',
      env: { CONFIG_PATH: (writeFileSync(join(dir, 'b.yaml'), 'processes: [p1, p1]\n'), join(dir, 'b.yaml')) },
      error: /p1 is listed twice/,
    },
    { name: 'a malformed token list', env: { VC_API_TOKENS: 'justaname' }, error: /name:secret/ },
    { name: 'a bad port', env: { PORT: 'eighty' }, error: /PORT must be an integer/ },
  ];
  for (const k of cases) {
    await t.rejects(
      startClockLab({ port: k.env['PORT'] ? undefined : 0, proxyPort: false, env: k.env, logger: silentLogger() }),
      k.error,
      k.name,
    );
  }
});
