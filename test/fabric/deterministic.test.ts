import t from 'tap';
import { DetCluster, summarize, type DetClusterOptions } from '../../src/fabric/deterministic.js';
import {
  emptyOutput,
  type ClientRequest,
  type ClusterConfig,
  type ControlCommand,
  type ControlResult,
  type CoreOptions,
  type CoreOutput,
  type CoreStatus,
  type NodeCore,
  type NodeId,
  type Version,
} from '../../src/replication/core.js';
import type { Rng } from '../../src/util/rng.js';
import { withStatus } from '../helpers/status.js';

/**
 * A 10 s heartbeat silences the counter's pings; DetCluster validates timings like etcd's
 * Config.validate (heartbeat < election timeout min <= max), so the election timeouts, which this
 * core never reads, are raised above it.
 */
const quietElections = { electionTimeoutMsMin: 20_000, electionTimeoutMsMax: 20_000 };

/**
 * A tiny replicated counter, enough to exercise the runtime: a write bumps the local counter, is
 * broadcast as 'put' and answered once a majority (self included) acked, or 'timeout' after
 * requestTimeoutMs. Every heartbeat (jittered by the core's rng) it pings one random peer, which
 * echoes. Its counter and store survive a crash through persistentState().
 */
type CounterMsg =
  | { type: 'put'; key: string; value: string; seq: number; req: number }
  | { type: 'ack'; req: number }
  | { type: 'ping'; n: number }
  | { type: 'pong'; n: number };

interface Persisted {
  counter: number;
  store: Record<string, string>;
}

class CounterCore implements NodeCore {
  readonly id: NodeId;
  counter = 0;
  pongs = 0;
  peersSeen: NodeId[];
  readonly restoredFrom: Persisted | undefined;
  private store: Record<string, string> = {};
  private pending = new Map<number, { acks: number; deadline: number }>();
  private nextPingAt: number;
  private out: CoreOutput = emptyOutput();
  private readonly rng: Rng;
  private readonly opts: CoreOptions;

  constructor(opts: CoreOptions) {
    this.id = opts.id;
    this.opts = opts;
    this.rng = opts.rng;
    this.peersSeen = opts.peers;
    const p = opts.persisted as Persisted | undefined;
    this.restoredFrom = p;
    if (p) {
      this.counter = p.counter;
      this.store = { ...p.store };
    }
    this.nextPingAt = opts.now + this.jitter();
  }

  private jitter(): number {
    return this.rng.range(this.opts.timings.heartbeatMs, this.opts.timings.heartbeatMs * 2);
  }

  private others(): NodeId[] {
    return this.peersSeen.filter((p) => p !== this.id);
  }

  private majority(): number {
    return Math.floor(this.peersSeen.length / 2) + 1;
  }

  onClient(req: ClientRequest, now: number): void {
    if (req.op.op !== 'write') {
      this.out.replies.push({ id: req.id, ok: false, code: 'unsupported', error: 'writes only' });
      return;
    }
    this.counter++;
    this.store[req.op.key] = req.op.value;
    this.pending.set(req.id, { acks: 1, deadline: now + this.opts.timings.requestTimeoutMs });
    for (const to of this.others()) {
      const msg: CounterMsg = { type: 'put', key: req.op.key, value: req.op.value, seq: this.counter, req: req.id };
      this.out.messages.push({ to, msg });
    }
    this.checkQuorum(req.id);
  }

  private checkQuorum(req: number): void {
    const p = this.pending.get(req);
    if (p && p.acks >= this.majority()) {
      this.pending.delete(req);
      this.out.replies.push({ id: req, ok: true, result: { kind: 'batch', entries: [] } });
      this.out.events.push({ type: 'quorum_achieved', data: { req } });
    }
  }

  onMessage(from: NodeId, raw: unknown, _now: number): void {
    const msg = raw as CounterMsg;
    switch (msg.type) {
      case 'put':
        this.store[msg.key] = msg.value;
        this.counter++;
        this.out.messages.push({ to: from, msg: { type: 'ack', req: msg.req } });
        break;
      case 'ack': {
        const p = this.pending.get(msg.req);
        if (p) {
          p.acks++;
          this.checkQuorum(msg.req);
        }
        break;
      }
      case 'ping':
        this.out.messages.push({ to: from, msg: { type: 'pong', n: msg.n } });
        break;
      case 'pong':
        this.pongs++;
        break;
    }
  }

  onTick(now: number): void {
    for (const [req, p] of [...this.pending]) {
      if (p.deadline <= now) {
        this.pending.delete(req);
        this.out.replies.push({ id: req, ok: false, code: 'timeout', error: 'no majority', indeterminate: true });
      }
    }
    if (this.nextPingAt <= now) {
      const others = this.others();
      if (others.length > 0) {
        const to = others[this.rng.int(others.length)] as NodeId;
        this.out.messages.push({ to, msg: { type: 'ping', n: this.rng.int(1000) } });
      }
      this.nextPingAt = now + this.jitter();
    }
  }

  nextDeadline(): number {
    let d = this.nextPingAt;
    for (const p of this.pending.values()) if (p.deadline < d) d = p.deadline;
    return d;
  }

  drain(out: CoreOutput): void {
    out.messages.push(...this.out.messages);
    out.replies.push(...this.out.replies);
    out.events.push(...this.out.events);
    this.out = emptyOutput();
  }

  control(cmd: ControlCommand, _now: number): ControlResult {
    if (cmd.kind === 'peers') {
      this.peersSeen = cmd.peers;
      return { ok: true };
    }
    return { ok: false, code: 'unsupported', error: `unsupported ${cmd.kind}` };
  }

  status(_now: number): CoreStatus {
    return { role: 'replica', commit_index: this.counter, last_applied: this.counter, leader_id: '', lag: 0 };
  }

  logView(): unknown[] {
    return [];
  }

  storeView(): Record<string, Version> {
    const out: Record<string, Version> = {};
    for (const [key, value] of Object.entries(this.store)) {
      out[key] = { key, value, tombstone: false, timestamp: 0, node_id: this.id, version: 1, vclock: {} };
    }
    return out;
  }

  persistentState(): Persisted {
    return { counter: this.counter, store: { ...this.store } };
  }
}

const config: ClusterConfig = {
  strategy: 'leaderless',
  node_count: 3,
  replication_mode: 'async',
  conflict_resolver: 'lww',
  quorum_n: 3,
  quorum_w: 2,
  quorum_r: 2,
  regions: 1,
  inter_region_latency_ms: 80,
  consistency_level: 'quorum',
  read_repair_mode: 'async',
  sloppy_quorum: true,
};

function cluster(over: Partial<DetClusterOptions> = {}): DetCluster {
  return new DetCluster({
    factory: (o) => new CounterCore(o),
    nodeIds: ['n1', 'n2', 'n3', 'n4', 'n5'],
    config,
    seed: 1,
    timings: { heartbeatMs: 20, requestTimeoutMs: 300 },
    ...over,
  });
}

function counter(c: DetCluster, id: string): CounterCore {
  return c.core(id) as CounterCore;
}

/** Drives a cluster through 3 s of virtual time with random faults chosen from the runtime's rng. */
function chaos(
  seed: number,
  encode = false,
  traceLinesMax?: number,
): { hash: string; lines: number; replies: number; c: DetCluster } {
  const c = cluster({ seed, encode, ...(traceLinesMax !== undefined ? { traceLinesMax } : {}) });
  const ids = c.nodeIds();
  const reqs: number[] = [];
  for (let round = 0; round < 60; round++) {
    const r = c.rng;
    const a = ids[r.int(ids.length)] as string;
    const b = ids[r.int(ids.length)] as string;
    switch (r.int(8)) {
      case 0:
        c.fabric.setLatency(a, b, r.int(80));
        break;
      case 1:
        c.fabric.setDropRate(a, b, r.next() * 0.5);
        break;
      case 2:
        if (c.fabric.partitions().size === 0)
          c.fabric.partition(
            [a],
            ids.filter((x) => x !== a),
          );
        else c.fabric.clearFaults();
        break;
      case 3:
        if (c.state(a) === 'paused') c.resume(a);
        else c.pause(a);
        break;
      case 4:
        if (c.state(a) === 'offline') c.restart(a);
        else c.crash(a);
        break;
      default:
        reqs.push(c.client(a, { op: 'write', key: `k${r.int(5)}`, value: `v${round}` }));
    }
    c.runFor(r.int(100));
  }
  for (const id of ids) {
    c.restart(id);
    c.resume(id);
  }
  c.fabric.clearFaults();
  c.runFor(1000);
  const replies = reqs.filter((id) => c.reply(id) !== undefined).length;
  return { hash: c.traceHash(), lines: c.trace.length, replies, c };
}

t.test('the same seed yields the identical trace; different seeds differ', async (t) => {
  const seeds = [1, 2, 3, 42, 9001];
  const hashes = new Set<string>();
  for (const seed of seeds) {
    const a = chaos(seed);
    const b = chaos(seed);
    t.equal(a.hash, b.hash, `seed ${seed} replays (replay: chaos(${seed}))`);
    t.same(a.c.trace, b.c.trace, `seed ${seed}: line-for-line equal`);
    t.same(a.c.fabric.stats(), b.c.fabric.stats(), `seed ${seed}: equal fabric counters`);
    t.ok(a.lines > 200, `seed ${seed}: a real run (${a.lines} trace lines)`);
    t.equal(a.replies, b.replies);
    hashes.add(a.hash);
  }
  t.equal(hashes.size, seeds.length, 'every seed produced its own trace');
});

t.test('the chaos run really injects faults and every client request is answered', async (t) => {
  const run = chaos(42);
  const s = run.c.fabric.stats();
  t.ok(s.dropped_rate + s.dropped_partition > 0, 'some messages were lost to faults');
  t.ok(
    run.c.trace.some((l) => / crash n\d/.test(l)),
    'some node crashed',
  );
  t.ok(
    run.c.trace.some((l) => / pause n\d/.test(l)),
    'some node paused',
  );
  // The counter core answers every request (quorum, or timeout on a tick), unless it crashes first.
  const trace = run.c.trace;
  let asked = 0;
  let unexplained = 0;
  for (const [i, l] of trace.entries()) {
    const m = / client (n\d) #(\d+) /.exec(l);
    if (!m) continue;
    asked++;
    if (run.c.reply(Number(m[2])) !== undefined) continue;
    const crashedLater = trace.slice(i + 1).some((x) => x.endsWith(` crash ${m[1]}`));
    if (!crashedLater) unexplained++;
  }
  t.ok(asked >= 10, `${asked} client requests were made`);
  t.equal(unexplained, 0, 'every unanswered request went to a node that crashed before answering');
  t.ok(
    run.c.events.every((e) => typeof e.at === 'number' && e.node_id !== undefined),
    'events carry time and node',
  );
});

t.test('the trace hash covers lines past the in-memory cap', async (t) => {
  const full = chaos(8);
  const hashOnly = chaos(8, false, 0);
  const capped = chaos(8, false, 10);
  t.equal(hashOnly.lines, 0, 'no lines kept');
  t.equal(capped.lines, 10);
  t.equal(capped.c.traceDropped, full.lines - 10, 'lines past the cap are counted');
  t.equal(hashOnly.hash, full.hash);
  t.equal(capped.hash, full.hash);
  const { createHash } = await import('node:crypto');
  t.equal(
    full.hash,
    createHash('sha256')
      .update(full.c.trace.map((l) => `${l}\n`).join(''))
      .digest('hex'),
    'sha256 of the lines, newline-terminated',
  );
});

t.test('trace lines and hash are exact for any text: non-ASCII, astral, lone surrogates, cuts', async (t) => {
  const { createHash } = await import('node:crypto');
  // Keys and values reach the trace through the client line and the summary of each 'put'.
  const texts = [
    'plain',
    'café ünï',
    '…x',
    '😀 astral',
    'lone \ud800 high',
    'lone \udc00 low',
    `${'y'.repeat(23)}😀tail`, // the 24-character cut falls inside the pair: a lone high surrogate
    `${'z'.repeat(22)}😀tail`, // the cut keeps the pair whole
    'ß'.repeat(40),
    'line\nbreak',
  ];
  for (const [i, text] of texts.entries()) {
    const c = cluster({ seed: 3 });
    c.runFor(50);
    const id = c.client('n1', { op: 'write', key: text, value: `${text}#${i}` });
    c.runUntilReply(id, 1000);
    c.runFor(100);
    const lines = c.trace;
    const joined = lines.map((l) => `${l}\n`).join('');
    t.equal(c.traceHash(), createHash('sha256').update(joined).digest('hex'), `${i}: hash of the lines`);
    t.ok(
      lines.some((l) => l.endsWith(` client n1 #${id} write ${text}`)),
      `${i}: the client line keeps the key as it is`,
    );
    const put = { type: 'put', key: text, value: `${text}#${i}`, seq: 1, req: id };
    t.ok(
      lines.some((l) => l.endsWith(`n1->n2 ${summarize(put)}`)),
      `${i}: the delivery line is the message's summary`,
    );
    const again = cluster({ seed: 3, traceLinesMax: 0 });
    again.runFor(50);
    again.runUntilReply(again.client('n1', { op: 'write', key: text, value: `${text}#${i}` }), 1000);
    again.runFor(100);
    t.equal(again.traceHash(), c.traceHash(), `${i}: the same hash with no line kept`);
    const heard: string[] = [];
    const recorded = cluster({ seed: 3 });
    recorded.onTraceLine = (l) => heard.push(l);
    recorded.runFor(50);
    recorded.runUntilReply(recorded.client('n1', { op: 'write', key: text, value: `${text}#${i}` }), 1000);
    recorded.runFor(100);
    t.same(heard, lines, `${i}: the line listener hears the kept lines`);
  }
});

t.test('msgpack encoding, like the live wire, does not change the run', async (t) => {
  for (const seed of [5, 6]) {
    const plain = chaos(seed, false);
    const encoded = chaos(seed, true);
    t.equal(encoded.hash, plain.hash, `seed ${seed}: encoded and plain traces match`);
  }
});

t.test('virtual time: a write across a 40 ms link is answered exactly one round trip later', async (t) => {
  const c = cluster({
    nodeIds: ['n1', 'n2', 'n3'],
    timings: { heartbeatMs: 10_000, requestTimeoutMs: 1000, ...quietElections },
  });
  const start = c.now;
  t.equal(start, 1_700_000_000_000, 'default virtual epoch');
  for (const [a, b] of [
    ['n1', 'n2'],
    ['n2', 'n1'],
    ['n1', 'n3'],
    ['n3', 'n1'],
  ] as const)
    c.fabric.setLatency(a, b, 40);
  c.fabric.setLatency('n1', 'n3', 70);
  const id = c.client('n1', { op: 'write', key: 'k', value: 'v' });
  t.equal(c.reply(id), undefined, 'no reply before the acks arrive');
  const reply = c.runUntilReply(id, 500);
  t.equal(reply?.ok, true);
  t.equal(c.now - start, 80, 'majority of 3 reached with the first ack (40 + 40)');
  t.ok(c.trace.includes(`${start + 40} n1->n2 type=put key=k value=v seq=1 req=${id}`), 'trace shows the delivery');
  t.ok(c.events.some((e) => e.type === 'quorum_achieved' && e.node_id === 'n1' && e.at === start + 80));
});

t.test('runUntilReply gives up at its deadline; step reports when nothing is pending', async (t) => {
  const c = cluster({ nodeIds: ['n1', 'n2', 'n3'], timings: { heartbeatMs: 20, requestTimeoutMs: 10_000 } });
  c.fabric.partition(['n1'], ['n2', 'n3']);
  const start = c.now;
  const id = c.client('n1', { op: 'write', key: 'k', value: 'v' });
  t.equal(c.runUntilReply(id, 250), undefined);
  t.equal(c.now, start + 250, 'clock left at the deadline');
  const idle = cluster({ nodeIds: ['n1'], timings: { heartbeatMs: 20 } });
  idle.crash('n1');
  t.equal(idle.step(), false, 'no core and no message: nothing to do');
  t.equal(idle.nextEventAt(), Infinity);
});

t.test('crash keeps persistentState and restart rebuilds the core from it', async (t) => {
  const c = cluster({ nodeIds: ['n1', 'n2', 'n3'] });
  for (let i = 0; i < 3; i++) {
    const id = c.client('n1', { op: 'write', key: `k${i}`, value: `v${i}` });
    t.equal(c.runUntilReply(id, 1000)?.ok, true, `write ${i} acknowledged`);
  }
  const before = counter(c, 'n2').counter;
  t.equal(before, 3, 'n2 saw three puts');
  c.crash('n2');
  t.equal(c.state('n2'), 'offline');
  t.throws(() => c.core('n2'), 'a crashed core is gone');
  const refused = c.client('n2', { op: 'write', key: 'x', value: 'y' });
  t.match(
    withStatus(c.reply(refused), 'write'),
    { ok: false, code: 'paused', status: 409 },
    'a down node refuses clients',
  );
  t.match(withStatus(c.control('n2', { kind: 'clock_skew', ms: 5 }), 'control'), { ok: false, status: 409 });
  const lostBefore = c.lostToCrashed;
  const id = c.client('n1', { op: 'write', key: 'k9', value: 'v9' });
  t.equal(c.runUntilReply(id, 1000)?.ok, true, 'majority without n2');
  t.ok(c.lostToCrashed > lostBefore, 'messages to the crashed node are lost and counted');
  c.restart('n2');
  t.equal(c.state('n2'), 'online');
  const n2 = counter(c, 'n2');
  t.same(n2.restoredFrom, { counter: 3, store: { k0: 'v0', k1: 'v1', k2: 'v2' } }, 'restart got the persisted state');
  t.equal(n2.counter, 3);
  t.equal(n2.storeView()['k1']?.value, 'v1');
  t.equal(n2.storeView()['k9'], undefined, 'the write made while down did not reach it');
});

t.test('a paused node gets no ticks, refuses clients, and receives held messages in order on resume', async (t) => {
  const c = cluster({
    nodeIds: ['n1', 'n2', 'n3'],
    timings: { heartbeatMs: 10_000, requestTimeoutMs: 5000, ...quietElections },
  });
  c.pause('n3');
  t.equal(c.state('n3'), 'paused');
  t.match(withStatus(c.reply(c.client('n3', { op: 'write', key: 'a', value: 'b' })), 'write'), {
    ok: false,
    code: 'paused',
    status: 409,
  });
  for (let i = 0; i < 3; i++) c.client('n1', { op: 'write', key: 'k', value: `v${i}` });
  c.runFor(100);
  t.equal(counter(c, 'n3').counter, 0, 'nothing delivered while paused');
  t.equal(c.fabric.stats().queued_in_inboxes, 3);
  c.resume('n3');
  c.runFor(1);
  t.equal(counter(c, 'n3').counter, 3);
  t.equal(counter(c, 'n3').storeView()['k']?.value, 'v2', 'puts applied in send order');
});

t.test('addNode and removeNode update the membership every running core sees', async (t) => {
  const c = cluster({ nodeIds: ['n1', 'n2', 'n3'] });
  c.addNode('n4');
  t.same(c.nodeIds(), ['n1', 'n2', 'n3', 'n4']);
  t.same(counter(c, 'n1').peersSeen, ['n1', 'n2', 'n3', 'n4']);
  t.same(counter(c, 'n4').peersSeen, ['n1', 'n2', 'n3', 'n4'], 'the new core starts with the full list');
  c.removeNode('n2');
  t.same(counter(c, 'n3').peersSeen, ['n1', 'n3', 'n4']);
  t.notOk(c.fabric.hasNode('n2'));
  t.equal(c.state('n2'), undefined);
  t.match(withStatus(c.reply(c.client('n2', { op: 'write', key: 'a', value: 'b' })), 'write'), {
    ok: false,
    status: 404,
  });
  const id = c.client('n4', { op: 'write', key: 'a', value: 'b' });
  t.equal(c.runUntilReply(id, 1000)?.ok, true, 'the new member replicates');
  c.runFor(500);
  t.ok(counter(c, 'n4').pongs > 0, 'the new member pings its peers');
});

t.test('summarize renders messages compactly and deterministically', async (t) => {
  const cases: Array<{ msg: unknown; want: string }> = [
    {
      msg: { type: 'append', term: 3, entries: [1, 2, 3], meta: { a: 1 }, gone: undefined },
      want: 'type=append term=3 entries=[3] meta={..}',
    },
    { msg: { v: 'x'.repeat(30) }, want: `v=${'x'.repeat(24)}…` },
    { msg: 7, want: '7' },
    { msg: null, want: 'null' },
    { msg: [1, 2], want: '[2]' },
    { msg: new Uint8Array(4), want: 'bytes(4)' },
  ];
  for (const c of cases) t.equal(summarize(c.msg), c.want);
});

/**
 * The counter with a durable hand-off: each drain that changed the persistent state emits one
 * record holding it (a checkpoint each time: enough for the runtime). With `recordsMax`, records
 * past that many are not emitted, as a core that misses durable changes would.
 */
class DurableCounterCore extends CounterCore {
  private emitted = '';
  private records = 0;
  constructor(
    opts: CoreOptions,
    private readonly recordsMax = Infinity,
  ) {
    super(opts);
  }

  override drain(out: CoreOutput): void {
    super.drain(out);
    const now = JSON.stringify(this.persistentState());
    if (now === this.emitted) return;
    this.emitted = now;
    if (++this.records > this.recordsMax) return;
    (out.durable ??= []).push({ state: JSON.parse(now) as Persisted });
  }
}

const counterFold = {
  fold: (_state: unknown, r: unknown): unknown => (r as { state: Persisted }).state,
  isCheckpoint: (): boolean => true,
};

t.test(
  'with a durable fold, a crash keeps the fold of the drained records and a restart is built from it',
  async (t) => {
    const c = cluster({ factory: (o) => new DurableCounterCore(o), durableFold: counterFold });
    for (let i = 0; i < 3; i++)
      t.ok(c.runUntilReply(c.client('n1', { op: 'write', key: `k${i}`, value: `v${i}` }), 1000)?.ok);
    t.same(c.durableState('n1'), counter(c, 'n1').persistentState(), 'storage holds what the core would persist');
    c.crash('n1');
    c.restart('n1');
    t.same(
      counter(c, 'n1').restoredFrom,
      { counter: 3, store: { k0: 'v0', k1: 'v1', k2: 'v2' } },
      'restarted from the fold',
    );
    const none = cluster({ factory: (o) => new DurableCounterCore(o) });
    t.equal(none.durableState('n1'), undefined, 'without a fold, nothing is kept but persistentState() at the crash');
  },
);

t.test('a crash whose fold misses a durable record is refused (a core bug, not a fault)', async (t) => {
  const c = cluster({ factory: (o) => new DurableCounterCore(o, 1), durableFold: counterFold });
  for (let i = 0; i < 3; i++)
    t.ok(c.runUntilReply(c.client('n1', { op: 'write', key: `k${i}`, value: `v${i}` }), 1000)?.ok);
  t.throws(
    () => c.crash('n1'),
    /fold of its durable records differs/,
    'the changes after the first record are missing',
  );
});
