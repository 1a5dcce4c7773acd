/**
 * Histories out (interop.md "Histories"): the pure Jepsen conversion (history-export.ts, table
 * driven), then GET .../history?format=edn|json on the real server for every strategy, with no
 * fault, a partition and a paused node, each export checked by lincheck (its API) and by Porcupine
 * (../shared/tools, built into a temp dir when `go` is on the PATH), whose verdicts must agree.
 * Porcupine's kv parser skips lines it does not match, so the test counts the lines its regexes
 * match: every line must.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { api, eventually, sleep } from '../helpers/http.js';
import { repoRoot, startReplSim } from '../helpers/server.js';
import type { HistoryOp } from '../../src/replication/history.js';
import { ednString, toEdnHistory, toJsonHistory } from '../../src/replication/history-export.js';
import { checkHistory, kvModel, parseHistory } from '../../src/checkers/lincheck/index.js';

const op = (o: Partial<HistoryOp> & Pick<HistoryOp, 'kind' | 'invokeMs' | 'completeMs'>): HistoryOp => ({
  client: 'c1',
  node: 'n1',
  key: 'k',
  value: null,
  outcome: 'ok',
  ...o,
});

// ---- the real server, lincheck and Porcupine

/** Porcupine's kv parser's regexes (porcupine-cli/models.go parseKvLog), to count what it reads. */
const porcupineKvLine = [
  /{:process (\d+), :type :invoke, :f :get, :key "(.*)", :value nil}/,
  /{:process (\d+), :type :invoke, :f :put, :key "(.*)", :value "(.*)"}/,
  /{:process (\d+), :type :invoke, :f :append, :key "(.*)", :value "(.*)"}/,
  /{:process (\d+), :type :ok, :f :get, :key ".*", :value "(.*)"}/,
  /{:process (\d+), :type :ok, :f :put, :key ".*", :value ".*"}/,
  /{:process (\d+), :type :ok, :f :append, :key ".*", :value ".*"}/,
];

const tmp = mkdtempSync(path.join(os.tmpdir(), 'history-interop-'));
t.teardown(() => rmSync(tmp, { recursive: true, force: true }));

/** Builds porcupine-cli into tmp; undefined (and a note) when Go is not installed. */
function buildPorcupine(): string | undefined {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const script = path.join(repoRoot, '../shared/tools/build-porcupine.sh');
  if (!existsSync(script)) return undefined;
  execFileSync(script, { env: { ...process.env, PORCUPINE_BIN_DIR: tmp }, stdio: ['ignore', 'ignore', 'inherit'] });
  return path.join(tmp, 'porcupine-cli');
}
const porcupine = buildPorcupine();

/**
 * Porcupine has no pending operations: an invoke without a completion would be read as a return.
 * Completing each pending put at the very end is the same history (a write that may or may not
 * have happened can always be placed after everything else, where no read sees it).
 */
function closePending(edn: string): string {
  const open = new Map<string, string>();
  for (const line of edn.split('\n')) {
    const m = /^{:process (\d+), :type :(\w+), (.*)}$/.exec(line);
    if (m === null) continue;
    if (m[2] === 'invoke') open.set(m[1] as string, m[3] as string);
    else open.delete(m[1] as string);
  }
  let tail = '';
  for (const [p, rest] of open) tail += `{:process ${p}, :type :ok, ${rest}}\n`;
  return edn + tail;
}

const srv = await startReplSim();
t.teardown(() => srv.stop());
const c = api(srv.base);
const V = '/api/v1';

type Fault = 'none' | 'partition' | 'pause';
const strategies = ['single_leader', 'multi_leader', 'leaderless', 'raft'] as const;
const clients = 3;
const opsPerClient = 24;

/** How long a fault lasts, ms (healed by a timer: a client may be waiting on the paused node). */
const faultMs = 400;

/**
 * Three clients doing reads, writes and deletes on two keys at random nodes; the fault after a third of them.
 * Returns how many operations were acknowledged (a 2xx): each of those must be in the EDN export (a failed
 * operation is left out by Jepsen's convention, so under a fault fewer than all of them are).
 */
async function workload(id: string, fault: Fault): Promise<number> {
  let acknowledged = 0;
  const count = (r: { status: number }): void => {
    if (r.status >= 200 && r.status < 300) acknowledged++;
  };
  const nodes = ['n1', 'n2', 'n3'];
  const faultAt = Math.floor(opsPerClient / 3);
  let healed: Promise<unknown> = Promise.resolve();
  const client = async (ci: number): Promise<void> => {
    for (let i = 0; i < opsPerClient; i++) {
      if (ci === 0 && i === faultAt && fault !== 'none') {
        let heal: () => Promise<unknown>;
        if (fault === 'partition') {
          const p = await c.post(`${V}/clusters/${id}/network/partition`, { group_a: ['n1'], group_b: ['n2', 'n3'] });
          heal = () => c.del(`${V}/clusters/${id}/network/partition/${p.body.partition_id}`);
        } else {
          await c.post(`${V}/clusters/${id}/nodes/n1/pause`);
          heal = () => c.post(`${V}/clusters/${id}/nodes/n1/resume`);
        }
        healed = sleep(faultMs).then(heal);
      }
      const key = `k${(ci + i) % 2}`;
      const node = nodes[(ci * 7 + i) % 3] as string;
      const client_id = `c${ci}`;
      const r = (ci + 3 * i) % 5;
      if (r < 2) {
        count(
          await c.post(`${V}/clusters/${id}/write`, { key, value: `c${ci}-${i}`, client_id, target_node_id: node }),
        );
      } else if (r < 4) {
        count(await c.get(`${V}/clusters/${id}/read?key=${key}&node_id=${node}&client_id=${client_id}`));
      } else {
        count(await c.del(`${V}/clusters/${id}/kv?key=${key}&node_id=${node}&client_id=${client_id}`));
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, ci) => client(ci)));
  await healed;
  return acknowledged;
}

for (const strategy of strategies) {
  t.test(`${strategy}: the EDN export is read whole by Porcupine and lincheck, and they agree`, async (t) => {
    for (const fault of ['none', 'partition', 'pause'] as const) {
      const cl = await c.post(`${V}/clusters`, { strategy, node_count: 3 });
      t.equal(cl.status, 201, `${fault}: cluster created`);
      const id = cl.body.id as string;
      if (strategy === 'raft') {
        await eventually(async () => (await c.get(`${V}/clusters/${id}/state`)).body?.leader_id, 10_000);
      }
      const acknowledged = await workload(id, fault);
      await sleep(10);
      const r = await c.get(`${V}/clusters/${id}/history?format=edn`);
      await c.del(`${V}/clusters/${id}`);
      t.equal(r.status, 200, `${fault}: format=edn answers`);
      t.match(String(r.headers['content-type']), /^application\/edn/, `${fault}: as application/edn`);
      const lines = r.text.trimEnd().split('\n');
      const invokes = lines.filter((l) => l.includes(':type :invoke')).length;
      t.ok(
        acknowledged > 0 && invokes >= acknowledged,
        `${fault}: every acknowledged operation exported (${invokes} invocations, ${acknowledged} acknowledged)`,
      );

      const parsed = parseHistory(r.text);
      if (!parsed.ok) {
        t.fail(`${fault}: lincheck cannot read line ${parsed.line}: ${parsed.reason}`);
        continue;
      }
      t.equal(parsed.history.length, invokes, `${fault}: lincheck read every operation`);
      const verdict = checkHistory(parsed.history, kvModel).verdict;
      t.not(verdict, 'unknown', `${fault}: lincheck decides (${verdict})`);

      if (porcupine === undefined) continue;
      const closed = closePending(r.text);
      const closedLines = closed.trimEnd().split('\n');
      const matched = closedLines.filter((l) => porcupineKvLine.some((re) => re.test(l))).length;
      t.equal(matched, closedLines.length, `${fault}: Porcupine's parser matches every line (${matched})`);
      const file = path.join(tmp, `${strategy}-${fault}.edn`);
      writeFileSync(file, closed);
      const out = execFileSync(porcupine, ['--model', 'kv', file], { encoding: 'utf8' });
      const m = /^\S+ (linearizable|not-linearizable|unknown) /m.exec(out);
      t.equal(m?.[1], verdict, `${fault}: Porcupine agrees with lincheck (${verdict})`);
    }
  });
}

t.test('format=json is interop.md array; no format is the page; a bad format is a 400', async (t) => {
  const cl = await c.post(`${V}/clusters`, { strategy: 'single_leader', node_count: 3 });
  const id = cl.body.id as string;
  t.teardown(() => c.del(`${V}/clusters/${id}`));
  await c.post(`${V}/clusters/${id}/write`, { key: 'a', value: '1', client_id: 'x' });
  await c.get(`${V}/clusters/${id}/read?key=nope&client_id=x`);
  const j = await c.get(`${V}/clusters/${id}/history?format=json`);
  t.equal(j.status, 200);
  t.same(
    (j.body as Array<Record<string, unknown>>).map(({ time: _t, ...rest }) => rest),
    [
      { process: 0, type: 'invoke', f: 'put', key: 'a', value: '1' },
      { process: 0, type: 'ok', f: 'put', key: 'a', value: '1' },
      { process: 0, type: 'invoke', f: 'get', key: 'nope', value: null },
      { process: 0, type: 'ok', f: 'get', key: 'nope', value: '' },
    ],
  );
  t.ok(
    (j.body as Array<{ time: number }>).every((e) => typeof e.time === 'number'),
    'each event has its time',
  );
  const page = await c.get(`${V}/clusters/${id}/history`);
  t.equal(page.body.total, 2, 'no format: the paged view');
  t.same((await c.get(`${V}/clusters/${id}/history?format=page`)).body.ops, page.body.ops, 'format=page is the same');
  const one = await c.get(`${V}/clusters/${id}/history?format=edn&since=1&limit=1`);
  t.equal(one.text.trimEnd().split('\n').length, 2, 'since and limit page the export too');
  const bad = await c.get(`${V}/clusters/${id}/history?format=xml`);
  t.equal(bad.status, 400);
  t.match(bad.body, { error: /format: must be one of json, edn, page/ });
});

// ---- the pure conversion

t.test('EDN export: Jepsen op maps in interop.md field order and conventions', async (t) => {
  const cases: Array<[string, HistoryOp[], string[]]> = [
    [
      'a write and a read, one client',
      [
        op({ kind: 'write', value: 'v', invokeMs: 1, completeMs: 2 }),
        op({ kind: 'read', result: 'v', invokeMs: 3, completeMs: 4 }),
      ],
      [
        '{:process 0, :type :invoke, :f :put, :key "k", :value "v"}',
        '{:process 0, :type :ok, :f :put, :key "k", :value "v"}',
        '{:process 0, :type :invoke, :f :get, :key "k", :value nil}',
        '{:process 0, :type :ok, :f :get, :key "k", :value "v"}',
      ],
    ],
    [
      'a read of a missing key returns "", a delete is a put of ""',
      [
        op({ kind: 'read', result: null, invokeMs: 1, completeMs: 2 }),
        op({ kind: 'delete', invokeMs: 3, completeMs: 4 }),
      ],
      [
        '{:process 0, :type :invoke, :f :get, :key "k", :value nil}',
        '{:process 0, :type :ok, :f :get, :key "k", :value ""}',
        '{:process 0, :type :invoke, :f :put, :key "k", :value ""}',
        '{:process 0, :type :ok, :f :put, :key "k", :value ""}',
      ],
    ],
    [
      'a failed operation is left out',
      [
        op({ kind: 'write', value: 'x', invokeMs: 1, completeMs: 2, outcome: 'fail' }),
        op({ kind: 'write', value: 'y', invokeMs: 3, completeMs: 4 }),
      ],
      [
        '{:process 0, :type :invoke, :f :put, :key "k", :value "y"}',
        '{:process 0, :type :ok, :f :put, :key "k", :value "y"}',
      ],
    ],
    [
      'an indeterminate write stays an invoke; the client goes on under a new process',
      [
        op({ kind: 'write', value: 'x', invokeMs: 1, completeMs: 2, outcome: 'info' }),
        op({ kind: 'write', value: 'y', invokeMs: 3, completeMs: 4 }),
      ],
      [
        '{:process 0, :type :invoke, :f :put, :key "k", :value "x"}',
        '{:process 1, :type :invoke, :f :put, :key "k", :value "y"}',
        '{:process 1, :type :ok, :f :put, :key "k", :value "y"}',
      ],
    ],
    [
      'an indeterminate read is left out',
      [op({ kind: 'read', result: null, invokeMs: 1, completeMs: 2, outcome: 'info' })],
      [],
    ],
    [
      'overlapping operations of one client run under two processes; touching counts as overlapping',
      [
        op({ kind: 'write', value: 'a', invokeMs: 1, completeMs: 5 }),
        op({ kind: 'write', value: 'b', invokeMs: 2, completeMs: 3 }),
        op({ kind: 'read', result: 'a', invokeMs: 5, completeMs: 6, client: 'c2' }),
      ],
      [
        '{:process 0, :type :invoke, :f :put, :key "k", :value "a"}',
        '{:process 1, :type :invoke, :f :put, :key "k", :value "b"}',
        '{:process 1, :type :ok, :f :put, :key "k", :value "b"}',
        '{:process 2, :type :invoke, :f :get, :key "k", :value nil}',
        '{:process 0, :type :ok, :f :put, :key "k", :value "a"}',
        '{:process 2, :type :ok, :f :get, :key "k", :value "a"}',
      ],
    ],
    [
      'strings are EDN-escaped',
      [op({ kind: 'write', key: 'q"\\', value: 'a\nb', invokeMs: 1, completeMs: 2 })],
      [
        '{:process 0, :type :invoke, :f :put, :key "q\\"\\\\", :value "a\\nb"}',
        '{:process 0, :type :ok, :f :put, :key "q\\"\\\\", :value "a\\nb"}',
      ],
    ],
  ];
  for (const [name, ops, lines] of cases) {
    const edn = toEdnHistory(ops);
    t.same(edn === '' ? [] : edn.trimEnd().split('\n'), lines, name);
    t.ok(edn === '' || edn.endsWith('\n'), `${name}: every line ends in a newline`);
  }
  t.equal(ednString('\u0001'), '"\\u0001"', 'other control characters as \\uXXXX');
  const parsed = parseHistory(toEdnHistory(cases.flatMap(([, ops]) => ops.map((o) => ({ ...o, key: 'k' })))));
  t.ok(parsed.ok, 'lincheck reads the export of every case');
});

t.test('JSON export: every operation, fail and info included', async (t) => {
  const events = toJsonHistory([
    op({ kind: 'write', value: 'x', invokeMs: 1, completeMs: 2, outcome: 'fail' }),
    op({ kind: 'write', value: 'y', invokeMs: 3, completeMs: 4, outcome: 'info' }),
    op({ kind: 'read', result: null, invokeMs: 5, completeMs: 6 }),
  ]);
  t.same(events, [
    { process: 0, type: 'invoke', f: 'put', key: 'k', value: 'x', time: 1 },
    { process: 0, type: 'fail', f: 'put', key: 'k', value: 'x', time: 2 },
    { process: 0, type: 'invoke', f: 'put', key: 'k', value: 'y', time: 3 },
    { process: 0, type: 'info', f: 'put', key: 'k', value: 'y', time: 4 },
    { process: 1, type: 'invoke', f: 'get', key: 'k', value: null, time: 5 },
    { process: 1, type: 'ok', f: 'get', key: 'k', value: '', time: 6 },
  ]);
});
