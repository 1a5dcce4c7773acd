// ShiViz interchange of the clock lab: the codec (src/clocklab/shiviz.ts, shared by the server and
// the page), the server's recorder, the page's read-only run from a log (web/clocklab/model.ts
// fromShiViz), the round trip lab run → log → run, and the routes GET /api/v1/export/shiviz and
// POST /api/v1/import/shiviz over real sockets (directly and through the proxy).
import t from 'tap';
import { Lab } from '../../src/clocklab/lab.js';
import { startClockLab } from '../../src/clocklab/server.js';
import {
  ShiVizRecorder,
  formatShiViz,
  parseShiViz,
  shivizEventsMax,
  shivizHostCharsMax,
  shivizLogCharsMax,
  shivizTextCharsMax,
  type ShiVizEvent,
} from '../../src/clocklab/shiviz.js';
import { silentLogger } from '../../src/util/logger.js';
import { SeededRng } from '../../src/util/rng.js';
import { vectorText } from '../../web/clocklab/causality.js';
import { type DiagramEvent, RunModel, fromShiViz } from '../../web/clocklab/model.js';
import { api, request } from '../helpers/http.js';

const ok = <T>(r: { ok: true; value: T } | { ok: false; error: { message: string } }): T => {
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
};

/** A lab whose events feed both the server's recorder and the page's model, as `/ws` frames. */
function twinLab(seed = 3): { lab: Lab; recorder: ShiVizRecorder; model: RunModel } {
  const recorder = new ShiVizRecorder();
  const model = new RunModel();
  let seq = 0;
  const lab = new Lab({
    rng: new SeededRng(seed),
    config: { initialProcesses: ['p1', 'p2', 'p3'].map((id) => ({ id, clock_type: 'vector' as const })) },
    emit: (type, data) => {
      const copy = JSON.parse(JSON.stringify(data)) as Record<string, unknown>;
      recorder.onEvent(type, copy);
      model.apply({ type, seq: ++seq, data: copy });
    },
  });
  return { lab, recorder, model };
}

function busyRun(lab: Lab): void {
  ok(lab.setChannelFaults('p1', 'p3', { delay_ms: 300 }));
  ok(lab.send('p1', 'p3', 'slow'));
  ok(lab.internalEvent('p3', 'work'));
  ok(lab.send('p1', 'p2', 'a'));
  lab.advance(20);
  ok(lab.send('p2', 'p3', 'overtakes'));
  ok(lab.broadcast('p3', 'to all'));
  lab.runUntilQuiet(2000);
  ok(lab.kvWrite('x', 'v1', 'p1'));
  ok(lab.kvRead('x', 'p2'));
}

/** What must survive a round trip: lanes, each lane's events (kind and vector clock), the arrows. */
function signature(m: RunModel): { lanes: string[]; events: string[]; messages: string[] } {
  return {
    lanes: m.lanes.map((l) => l.id),
    events: m.lanes.flatMap((l) =>
      l.events
        .map((i) => m.events[i] as DiagramEvent)
        .filter((e) => e.causal)
        .map((e) => `${e.host} ${e.kind} ${vectorText(e.vector)} ${e.text}`),
    ),
    messages: [...m.messages.values()]
      .filter((x) => x.state === 'delivered')
      .map((x) => `${x.id} ${x.from}->${x.to} ${m.events[x.send]?.text ?? '?'} => ${m.events[x.end]?.text ?? '?'}`)
      .sort(),
  };
}

t.test('the codec: two lines per event, as ShiViz reads them', async (t) => {
  const events: ShiVizEvent[] = [
    { host: 'p1', clock: { p1: 1 }, text: 'send m1 to p2' },
    { host: 'p2', clock: { p1: 1, p2: 1, p3: 0 }, text: 'receive m1 from p1' },
    { host: 'p3', clock: { p3: 1 }, text: 'a text\nover two lines' },
  ];
  const text = formatShiViz(events);
  t.equal(
    text,
    'p1 {"p1":1}\nsend m1 to p2\np2 {"p1":1,"p2":1}\nreceive m1 from p1\np3 {"p3":1}\na text over two lines\n',
    'zero entries left out, one line of text per event',
  );
  const back = parseShiViz(text);
  t.ok(back.ok);
  if (back.ok)
    t.same(
      back.events.map((e) => [e.host, e.clock, e.text]),
      [
        ['p1', { p1: 1 }, 'send m1 to p2'],
        ['p2', { p1: 1, p2: 1 }, 'receive m1 from p1'],
        ['p3', { p3: 1 }, 'a text over two lines'],
      ],
    );
  t.equal(formatShiViz([]), '', 'an empty run is an empty log');
  const cases: Array<{ name: string; text: string; want: number | { line: number; error: RegExp } }> = [
    { name: 'CRLF line ends', text: 'a {"a":1}\r\nx\r\nb {"b":1}\r\ny\r\n', want: 2 },
    { name: 'blank lines between events', text: '\na {"a":1}\nx\n\n\nb {"b":1}\ny', want: 2 },
    {
      name: 'a header line (ShiViz regex) and a blank line first',
      text: '(?<host>\\S*) (?<clock>{.*})\\n(?<event>.*)\n\na {"a":1}\nx\n',
      want: 1,
    },
    { name: 'an empty event text', text: 'a {"a":1}\n\n', want: 1 },
    {
      name: 'no host line',
      text: 'a {"a":1}\nx\nnonsense\ny\n',
      want: { line: 3, error: /host and a JSON vector clock/ },
    },
    { name: 'bad JSON', text: 'a {"a":1,}\nx\n', want: { line: 1, error: /not valid JSON/ } },
    { name: 'a negative entry', text: 'a {"a":-1}\nx\n', want: { line: 1, error: /non-negative integer/ } },
    { name: 'a fractional entry', text: 'a {"a":1.5}\nx\n', want: { line: 1, error: /non-negative integer/ } },
    { name: 'a text entry', text: 'a {"a":"1"}\nx\n', want: { line: 1, error: /non-negative integer/ } },
    {
      name: 'the text line missing at the end',
      text: 'a {"a":1}\nx\nb {"b":1}',
      want: { line: 4, error: /text line is missing/ },
    },
    {
      name: `a host of ${shivizHostCharsMax} characters`,
      text: `${'h'.repeat(shivizHostCharsMax)} {"a":1}\nx\n`,
      want: 1,
    },
    {
      name: `a host of ${shivizHostCharsMax + 1} characters`,
      text: `${'h'.repeat(shivizHostCharsMax + 1)} {"a":1}\nx\n`,
      want: { line: 1, error: /more than 64 characters/ },
    },
    {
      name: `a text of ${shivizTextCharsMax} characters`,
      text: `a {"a":1}\n${'t'.repeat(shivizTextCharsMax)}\n`,
      want: 1,
    },
    {
      name: `a text of ${shivizTextCharsMax + 1} characters`,
      text: `a {"a":1}\n${'t'.repeat(shivizTextCharsMax + 1)}\n`,
      want: { line: 2, error: /more than 4096 characters/ },
    },
  ];
  for (const k of cases) {
    const r = parseShiViz(k.text);
    if (typeof k.want === 'number') t.same(r.ok ? r.events.length : r, k.want, k.name);
    else {
      t.notOk(r.ok, k.name);
      if (!r.ok) {
        t.equal(r.line, k.want.line, `${k.name}: line ${k.want.line}`);
        t.match(r.error, k.want.error, `${k.name}: ${r.error}`);
      }
    }
  }
});

t.test('the codec limits: events and characters, at and past', async (t) => {
  const pair = 'a {"a":1}\nx\n';
  const at = parseShiViz(pair.repeat(shivizEventsMax));
  t.same(at.ok ? at.events.length : at, shivizEventsMax, `${shivizEventsMax} events are read`);
  const past = parseShiViz(pair.repeat(shivizEventsMax + 1));
  t.same(past.ok ? 'ok' : [past.line, past.error], [
    shivizEventsMax * 2 + 1,
    `the log has more than ${shivizEventsMax} events`,
  ]);
  const huge = parseShiViz('x'.repeat(shivizLogCharsMax + 1));
  t.same(huge.ok ? 'ok' : huge.error, `the log has more than ${shivizLogCharsMax} characters`);
});

t.test('the recorder: one ShiViz event per clock event, with texts the page reads back', async (t) => {
  const { lab, recorder } = twinLab();
  busyRun(lab);
  const texts = recorder.log().map((e) => `${e.host} ${e.text}`);
  t.same(texts.slice(0, 4), ['p1 send m1 to p3', 'p3 internal work', 'p1 send m2 to p2', 'p2 receive m2 from p1']);
  t.ok(texts.includes('p3 send m4 to p1, m5 to p2'), 'a broadcast is one send event naming every copy');
  t.ok(texts.includes('p3 deliver m3 from p2'), 'a message out of the hold-back queue is delivered');
  t.ok(texts.includes('p1 kv_write x=v1') && texts.includes('p2 kv_read x'), 'KV writes and reads');
  for (const e of recorder.log())
    t.ok((e.clock[e.host] ?? 0) > 0, `${e.host} ${e.text}: its own entry counts its events`);
  lab.reset(true);
  t.equal(recorder.size, 0, 'a reset starts a new run');

  const small = new ShiVizRecorder(10);
  for (let i = 1; i <= 10; i++) small.onEvent('clock_tick', { process: 'p1', cause: 'internal', clock: { p1: i } });
  t.same([small.size, small.forgotten], [10, 0], 'at the cap nothing is forgotten');
  small.onEvent('clock_tick', { process: 'p1', cause: 'internal', clock: { p1: 11 } });
  t.same([small.size, small.forgotten], [10, 1], 'past it the oldest tenth goes');
  t.same(small.log()[0]?.clock, { p1: 2 });

  // The character bound: one event of host p1, text `internal`, clock {p1: n} is 2 + 8 + 4 + 14 = 28.
  const tight = new ShiVizRecorder(1000, 28 * 10);
  for (let i = 1; i <= 10; i++) tight.onEvent('clock_tick', { process: 'p1', cause: 'internal', clock: { p1: i } });
  t.same([tight.size, tight.heldChars, tight.forgotten], [10, 280, 0], 'at the character cap nothing is forgotten');
  tight.onEvent('clock_tick', { process: 'p1', cause: 'internal', clock: { p1: 11 } });
  t.same([tight.size, tight.heldChars, tight.forgotten], [10, 280, 1], 'past it the oldest tenth goes');
});

t.test('round trip: the lab’s run, exported and loaded back, is the same diagram', async (t) => {
  const { lab, recorder, model } = twinLab();
  busyRun(lab);
  const fromModel = formatShiViz(model.toShiViz());
  t.equal(formatShiViz(recorder.log()), fromModel, 'the server’s export and the page’s run write the same log');
  const parsed = parseShiViz(fromModel);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  const back = fromShiViz(parsed.events);
  t.equal(back.readOnly, true, 'a loaded log is read-only');
  t.same(signature(back), signature(model), 'same lanes, events, clocks and arrows');
  t.equal(
    back.apply({ type: 'clock_tick', seq: 1, data: { process: 'p1', cause: 'internal', clock: { p1: 99 } } }),
    false,
    'live frames do not touch it',
  );
  t.equal(formatShiViz(back.toShiViz()), fromModel, 'and exporting it again writes the same log');
  for (const msg of back.messages.values()) {
    t.ok((back.events[msg.end]?.row ?? 0) > (back.events[msg.send]?.row ?? 0), `${msg.id}: arrows point down`);
  }
});

t.test('a foreign ShiViz log: messages inferred from the clocks', async (t) => {
  // a → b → c, a relayed through b: c learns of a only through b, so a → c is not a message.
  const log = [
    'a {"a":1}',
    'start',
    'b {"b":1}',
    'idle',
    'b {"a":1,"b":2}',
    'got it',
    'c {"a":1,"b":2,"c":1}',
    'got it too',
    'a {"a":2}',
    'local',
  ].join('\n');
  const parsed = parseShiViz(log);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  const run = fromShiViz(parsed.events);
  t.same(
    run.lanes.map((l) => l.id),
    ['a', 'b', 'c'],
  );
  const arrows = [...run.messages.values()].map((m) => `${m.from}->${m.to}`).sort();
  t.same(arrows, ['a->b', 'b->c'], 'direct messages only');
  const kinds = run.events.map((e) => `${e.host}:${e.kind}`);
  t.same(kinds.filter((k) => k.endsWith('receive')).sort(), ['b:receive', 'c:receive']);
  const c = run.events.find((e) => e.host === 'c') as DiagramEvent;
  const b2 = run.events.find((e) => e.text === 'got it') as DiagramEvent;
  t.ok(c.row > b2.row, 'the receive is below its send');
});

t.test('the routes: export the run, import a log (directly and through the proxy)', async (t) => {
  const handle = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '5' },
    logger: silentLogger(),
  });
  t.teardown(() => handle.close());
  const base = `http://127.0.0.1:${handle.port}`;
  const proxy = `http://127.0.0.1:${handle.proxyPort}`;
  const c = api(base);
  t.equal((await c.post('/api/v1/processes/p3/event', { label: 'work' })).status, 200);
  t.equal((await c.post('/api/v1/messages', { from: 'p1', to: 'p2', payload: 'hi' })).status, 202);
  let exported = '';
  for (let i = 0; i < 100; i++) {
    const r = await c.get('/api/v1/export/shiviz');
    exported = r.text;
    if (exported.includes('receive m1 from p1')) {
      t.match(String(r.headers['content-type']), /^text\/plain/);
      t.match(String(r.headers['content-disposition']), /attachment; filename="clocklab-run.log"/);
      break;
    }
    await new Promise((res) => setTimeout(res, 20));
  }
  t.equal(exported, 'p3 {"p3":1}\ninternal work\np1 {"p1":1}\nsend m1 to p2\np2 {"p1":1,"p2":1}\nreceive m1 from p1\n');
  const viaProxy = await request(proxy, 'GET', '/api/v1/export/shiviz');
  t.same([viaProxy.status, viaProxy.text], [200, exported], 'the proxy passes the export through');

  const imported = await request(base, 'POST', '/api/v1/import/shiviz', exported, { 'content-type': 'text/plain' });
  t.equal(imported.status, 200);
  t.same(imported.body.hosts, ['p3', 'p1', 'p2']);
  t.equal(imported.body.read_only, true);
  t.same(imported.body.events[2], { host: 'p2', clock: { p1: 1, p2: 1 }, text: 'receive m1 from p1' });
  const proxied = await request(proxy, 'POST', '/api/v1/import/shiviz', exported, { 'content-type': 'text/plain' });
  t.same([proxied.status, proxied.body.events.length], [200, 3], 'and the import');

  const bad = await request(base, 'POST', '/api/v1/import/shiviz', 'p1 {"p1":1}\nx\nnot a host line\ny\n');
  t.equal(bad.status, 400);
  t.match(bad.body.error, /^line 3: expected a host and a JSON vector clock/);
  const big = await request(base, 'POST', '/api/v1/import/shiviz', 'x'.repeat(1024 * 1024 + 1));
  t.equal(big.status, 413, 'a log over the 1 MiB body cap is refused');

  t.equal((await c.post('/api/v1/simulation/reset')).status, 200);
  t.equal((await c.get('/api/v1/export/shiviz')).text, '', 'a reset starts a new run');
});
