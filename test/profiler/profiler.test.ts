import t from 'tap';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { isLoopbackHost, parseProfileSeconds, parseProfilerAddr, startProfiler } from '../../src/profiler/index.js';
import { silentLogger } from '../../src/util/logger.js';

t.test('addresses are decoded, and only loopback hosts are accepted', async (t) => {
  const cases: Array<{ addr: string; ok: boolean; host?: string; port?: number; error?: RegExp }> = [
    { addr: '127.0.0.1:6060', ok: true, host: '127.0.0.1', port: 6060 },
    { addr: '127.3.4.5:0', ok: true, host: '127.3.4.5', port: 0 },
    { addr: 'localhost:7000', ok: true, host: '127.0.0.1', port: 7000 },
    { addr: 'LOCALHOST:7000', ok: true, host: '127.0.0.1', port: 7000 },
    { addr: '[::1]:6060', ok: true, host: '::1', port: 6060 },
    { addr: '0.0.0.0:6060', ok: false, error: /loopback/ },
    { addr: '10.1.2.3:6060', ok: false, error: /loopback/ },
    { addr: '192.0.2.2:6060', ok: false, error: /loopback/ },
    { addr: 'example.com:6060', ok: false, error: /loopback/ },
    { addr: 'localhost.example.com:6060', ok: false, error: /loopback/ },
    { addr: '[::]:6060', ok: false, error: /loopback/ },
    { addr: '[fe80::1]:6060', ok: false, error: /loopback/ },
    { addr: '128.0.0.1:6060', ok: false, error: /loopback/ },
    { addr: '6060', ok: false, error: /host:port/ },
    { addr: ':6060', ok: false, error: /host:port/ },
    { addr: '127.0.0.1:', ok: false, error: /host:port/ },
    { addr: '127.0.0.1:99999', ok: false, error: /0\.\.65535/ },
  ];
  for (const c of cases) {
    const r = parseProfilerAddr(c.addr);
    if (c.ok) t.same(r, { ok: true, host: c.host, port: c.port }, `${c.addr} is accepted as ${c.host}:${c.port}`);
    else t.match(r, { ok: false, error: c.error }, `${c.addr} is refused`);
  }
  t.ok(isLoopbackHost('::ffff:127.0.0.1'), 'an IPv4-mapped loopback address is loopback');
  t.notOk(isLoopbackHost('::ffff:10.0.0.1'), 'an IPv4-mapped private address is not');
});

t.test('profile durations are bounded to whole seconds in 1..60', async (t) => {
  const cases: Array<{ raw: string | null; seconds?: number }> = [
    { raw: null, seconds: 5 },
    { raw: '', seconds: 5 },
    { raw: '1', seconds: 1 },
    { raw: '60', seconds: 60 },
    { raw: '0' },
    { raw: '61' },
    { raw: '-1' },
    { raw: '1.5' },
    { raw: 'abc' },
    { raw: '1e1' },
    { raw: ' 3' },
  ];
  for (const c of cases) {
    const r = parseProfileSeconds(c.raw);
    if (c.seconds !== undefined)
      t.same(r, { ok: true, seconds: c.seconds }, `seconds=${JSON.stringify(c.raw)} gives ${c.seconds}`);
    else t.match(r, { ok: false, error: /between 1 and 60/ }, `seconds=${JSON.stringify(c.raw)} is refused`);
  }
});

t.test('start-up refuses a non-loopback address with a clear error', async (t) => {
  for (const addr of ['0.0.0.0:0', '10.1.2.3:0', 'db.internal:0', '[::]:0']) {
    await t.rejects(startProfiler(addr, silentLogger()), /loopback/, `${addr} is refused at start-up`);
  }
});

t.test('the profiler serves a CPU profile and a heap snapshot on loopback only', async (t) => {
  const p = await startProfiler('127.0.0.1:0', silentLogger());
  t.teardown(() => p.close());
  const base = `http://127.0.0.1:${p.port}`;
  t.equal(p.host, '127.0.0.1', 'the bound address is the loopback one asked for');
  t.ok(p.port > 0, 'port 0 picks a free port');

  const index = await fetch(`${base}/`);
  t.equal(index.status, 200, 'the index page answers');
  t.match(
    await index.text(),
    /\/debug\/pprof\/profile\?seconds=.*\/debug\/pprof\/heap/s,
    'the index links both profiles',
  );

  const errorCases: Array<{ path: string; status: number; error: RegExp }> = [
    { path: '/debug/pprof/profile?seconds=0', status: 400, error: /between 1 and 60/ },
    { path: '/debug/pprof/profile?seconds=61', status: 400, error: /between 1 and 60/ },
    { path: '/debug/pprof/profile?seconds=abc', status: 400, error: /between 1 and 60/ },
    { path: '/debug/pprof/nothing', status: 404, error: /no such profiler endpoint/ },
  ];
  for (const c of errorCases) {
    const r = await fetch(base + c.path);
    t.equal(r.status, c.status, `${c.path} answers ${c.status}`);
    t.match(((await r.json()) as { error: string }).error, c.error, `${c.path} says why`);
  }
  const post = await fetch(`${base}/debug/pprof/heap`, { method: 'POST' });
  t.equal(post.status, 405, 'a POST is refused with 405');
  await post.arrayBuffer();

  // Keep the event loop busy so the profile has samples with real frames.
  const burn = setInterval(() => {
    let x = 0;
    for (let i = 0; i < 200_000; i++) x += Math.sqrt(i);
    if (x < 0) t.fail('unreachable');
  }, 5);
  const first = fetch(`${base}/debug/pprof/profile?seconds=1`);
  await new Promise((r) => setTimeout(r, 200));
  const second = await fetch(`${base}/debug/pprof/profile?seconds=1`);
  t.equal(second.status, 409, 'a second profile while one runs is refused with 409');
  t.match(((await second.json()) as { error: string }).error, /already running/, 'the 409 says why');
  const res = await first;
  clearInterval(burn);
  t.equal(res.status, 200, 'the CPU profile is served');
  t.match(
    res.headers.get('content-disposition') ?? '',
    /attachment; filename="cpu-.*\.cpuprofile"/,
    'it downloads as a .cpuprofile',
  );
  const cpu = (await res.json()) as {
    nodes: Array<{ id: number; callFrame: { functionName: string } }>;
    samples: number[];
    startTime: number;
    endTime: number;
  };
  t.ok(Array.isArray(cpu.nodes) && cpu.nodes.length > 1, 'the profile has call-tree nodes');
  t.ok(Array.isArray(cpu.samples) && cpu.samples.length > 0, 'the profile has samples');
  const ids = new Set(cpu.nodes.map((n) => n.id));
  t.ok(
    cpu.samples.every((s) => ids.has(s)),
    'every sample names a node of the tree',
  );
  const spanMs = (cpu.endTime - cpu.startTime) / 1000;
  t.ok(spanMs >= 900 && spanMs < 5000, `the profile spans about one second (${spanMs.toFixed(0)} ms)`);

  const again = await fetch(`${base}/debug/pprof/profile?seconds=1`);
  t.equal(again.status, 200, 'once the first profile is done, another can run');
  await again.arrayBuffer();

  const heap = await fetch(`${base}/debug/pprof/heap`);
  t.equal(heap.status, 200, 'the heap snapshot is served');
  t.match(
    heap.headers.get('content-disposition') ?? '',
    /attachment; filename="heap-.*\.heapsnapshot"/,
    'it downloads as a .heapsnapshot',
  );
  const snap = JSON.parse(await heap.text()) as {
    snapshot: { meta: { node_fields: string[] }; node_count: number };
    nodes: number[];
    strings: string[];
  };
  t.ok(Array.isArray(snap.snapshot.meta.node_fields), 'the snapshot carries its meta description');
  t.ok(
    snap.snapshot.node_count > 1000 &&
      snap.nodes.length === snap.snapshot.node_count * snap.snapshot.meta.node_fields.length,
    'the node table matches the declared node count',
  );
  t.ok(snap.strings.length > 100, 'the snapshot has its string table');
});

t.test('the profiler is never reachable on a non-loopback interface', async (t) => {
  const p = await startProfiler('localhost:0', silentLogger());
  t.teardown(() => p.close());
  t.equal(p.host, '127.0.0.1', 'localhost binds the IPv4 loopback address');
  const external = Object.values(networkInterfaces())
    .flat()
    .filter((i) => i && !i.internal && i.family === 'IPv4')
    .map((i) => i?.address as string);
  if (external.length === 0) {
    t.comment('this machine has no non-loopback IPv4 interface: only the bound address is checked');
  }
  for (const host of external) {
    const outcome = await new Promise<string>((resolve) => {
      const s = net.connect({ host, port: p.port });
      s.once('connect', () => {
        s.destroy();
        resolve('connected');
      });
      s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      s.setTimeout(2000, () => {
        s.destroy();
        resolve('timeout');
      });
    });
    t.not(outcome, 'connected', `a connection to ${host}:${p.port} is refused (${outcome})`);
  }
  const local = await fetch(`http://127.0.0.1:${p.port}/debug/pprof`);
  t.equal(local.status, 200, 'while the loopback address answers');
  await local.arrayBuffer();
});
