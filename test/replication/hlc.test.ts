/**
 * Table-driven tests of the hybrid logical clock's receive rule with a max offset (hlc.ts), of the
 * bound on timestamps given from outside (the corrupt route), and of the replication limits'
 * timing validation (limits.ts).
 */
import t from 'tap';
import {
  classifyRemote,
  externalTimestampProblem,
  HybridClock,
  type ObserveOutcome,
} from '../../src/replication/hlc.js';
import { corruptTimestampAheadMsMax, hlcMaxOffsetMs, validateTimings } from '../../src/replication/limits.js';
import { defaultTimings, type CoreTimings } from '../../src/replication/core.js';

const nowMs = 1_700_000_000_000;
const ns = (ms: number): number => ms * 1_000_000;

t.test('classifyRemote: the receive rule with a max offset', async (t) => {
  const cases: Array<{ name: string; remoteNs: number; lastNs: number; physicalMs: number; want: ObserveOutcome }> = [
    {
      name: 'a remote value just ahead of the clock is adopted',
      remoteNs: ns(nowMs) + 5_000,
      lastNs: ns(nowMs),
      physicalMs: nowMs,
      want: 'adopted',
    },
    {
      name: 'a remote value exactly max offset ahead of the physical clock is adopted',
      remoteNs: ns(nowMs + hlcMaxOffsetMs),
      lastNs: 0,
      physicalMs: nowMs,
      want: 'adopted',
    },
    {
      name: 'a remote value one microsecond past the max offset is refused',
      remoteNs: ns(nowMs + hlcMaxOffsetMs) + 1_000,
      lastNs: 0,
      physicalMs: nowMs,
      want: 'refused_ahead',
    },
    {
      name: 'a remote value a day ahead is refused',
      remoteNs: ns(nowMs + 86_400_000),
      lastNs: ns(nowMs),
      physicalMs: nowMs,
      want: 'refused_ahead',
    },
    {
      name: "the issue's 1.23e38 is refused",
      remoteNs: 1.23e38,
      lastNs: ns(nowMs),
      physicalMs: nowMs,
      want: 'refused_ahead',
    },
    {
      name: 'a remote value behind the clock changes nothing',
      remoteNs: ns(nowMs) - 1000,
      lastNs: ns(nowMs),
      physicalMs: nowMs,
      want: 'behind',
    },
    {
      name: 'a remote value equal to the clock changes nothing',
      remoteNs: ns(nowMs),
      lastNs: ns(nowMs),
      physicalMs: nowMs,
      want: 'behind',
    },
    {
      name: 'a node 5 s behind (ClockSkewLWW) still adopts a peer 5 s ahead of it',
      remoteNs: ns(nowMs),
      lastNs: 0,
      physicalMs: nowMs - 5_000,
      want: 'adopted',
    },
    { name: 'Infinity is invalid', remoteNs: Infinity, lastNs: 0, physicalMs: nowMs, want: 'refused_invalid' },
    { name: 'NaN is invalid', remoteNs: NaN, lastNs: 0, physicalMs: nowMs, want: 'refused_invalid' },
    { name: 'a negative value is invalid', remoteNs: -1, lastNs: 0, physicalMs: nowMs, want: 'refused_invalid' },
  ];
  for (const c of cases) t.equal(classifyRemote(c.remoteNs, c.lastNs, c.physicalMs), c.want, c.name);
});

t.test('a far-future remote timestamp cannot pin the clock; refusals are counted', async (t) => {
  const cases: Array<{ name: string; remoteNs: number; skewMs: number; pinned: boolean }> = [
    { name: 'a day ahead', remoteNs: ns(nowMs + 86_400_000), skewMs: 0, pinned: false },
    { name: '1.23e38', remoteNs: 1.23e38, skewMs: 0, pinned: false },
    { name: 'just past the max offset', remoteNs: ns(nowMs + hlcMaxOffsetMs + 1), skewMs: 0, pinned: false },
    {
      name: 'within the max offset (adopted: later writes order after it)',
      remoteNs: ns(nowMs + 1_000),
      skewMs: 0,
      pinned: true,
    },
    {
      name: 'a day ahead of a node skewed a day ahead (within its own offset)',
      remoteNs: ns(nowMs + 86_400_000 + 500),
      skewMs: 86_400_000,
      pinned: true,
    },
  ];
  for (const c of cases) {
    const clock = new HybridClock();
    clock.skewMs = c.skewMs;
    clock.tick(nowMs);
    const outcome = clock.observe(c.remoteNs, nowMs);
    const next = clock.tick(nowMs + 1);
    if (c.pinned) {
      t.equal(outcome, 'adopted', `${c.name}: adopted`);
      t.ok(next > c.remoteNs, `${c.name}: the next local event orders after it`);
      t.equal(clock.remoteRefused, 0, `${c.name}: nothing counted`);
    } else {
      t.equal(outcome, 'refused_ahead', `${c.name}: refused`);
      t.ok(next <= ns(nowMs + c.skewMs + 1), `${c.name}: the next local event follows the physical clock (${next})`);
      t.equal(clock.remoteRefused, 1, `${c.name}: counted once`);
    }
  }
});

t.test('the clock stays strictly increasing across ticks and observes', async (t) => {
  const clock = new HybridClock();
  let prev = 0;
  const steps: Array<['tick' | 'observe', number]> = [
    ['tick', nowMs],
    ['tick', nowMs],
    ['observe', ns(nowMs + 10)],
    ['tick', nowMs],
    ['observe', 1e30],
    ['tick', nowMs - 5],
    ['tick', nowMs + 20],
  ];
  for (const [kind, v] of steps) {
    if (kind === 'observe') clock.observe(v, nowMs);
    else {
      const ts = clock.tick(v);
      t.ok(ts > prev, `tick at ${v} (${ts}) is after ${prev}`);
      prev = ts;
    }
  }
  t.equal(clock.remoteRefused, 1, 'only 1e30 was refused');
});

t.test('externalTimestampProblem: safe integers no more than the limit ahead', async (t) => {
  const ceiling = ns(nowMs);
  const aheadMs = corruptTimestampAheadMsMax;
  const cases: Array<{ name: string; ts: unknown; ok: boolean; msg?: RegExp }> = [
    { name: 'the current time is fine', ts: ceiling, ok: true },
    { name: 'an old timestamp is fine', ts: ceiling - ns(3_600_000), ok: true },
    { name: 'zero is fine', ts: 0, ok: true },
    { name: 'exactly a day ahead is fine', ts: ceiling + ns(aheadMs), ok: true },
    {
      name: 'a day and a millisecond ahead is refused',
      ts: ceiling + ns(aheadMs + 1),
      ok: false,
      msg: /at most 86400000 ms ahead/,
    },
    { name: '1.23e38 is refused', ts: 1.23e38, ok: false, msg: /ms ahead/ },
    { name: 'a fraction is refused', ts: 1.5, ok: false, msg: /integer/ },
    { name: 'a negative value is refused', ts: -1000, ok: false, msg: /negative/ },
    { name: 'Infinity is refused', ts: Infinity, ok: false, msg: /integer/ },
    { name: 'NaN is refused', ts: NaN, ok: false, msg: /integer/ },
    { name: 'a string is refused', ts: '1700000000000000000', ok: false, msg: /integer/ },
  ];
  for (const c of cases) {
    const p = externalTimestampProblem(c.ts, ceiling, aheadMs);
    if (c.ok) t.equal(p, null, c.name);
    else t.match(p, c.msg ?? /./, c.name);
  }
});

t.test('validateTimings refuses timings that would make followers elect against a live leader', async (t) => {
  const cases: Array<{ name: string; over: Partial<CoreTimings>; error?: RegExp }> = [
    { name: 'the defaults are valid', over: {} },
    {
      name: 'heartbeat equal to the minimum election timeout',
      over: { heartbeatMs: 150 },
      error: /heartbeatMs \(150\) must be less than electionTimeoutMsMin \(150\)/,
    },
    {
      name: 'minimum above maximum',
      over: { electionTimeoutMsMin: 400 },
      error: /electionTimeoutMsMin \(400\) must be at most electionTimeoutMsMax \(300\)/,
    },
    { name: 'min equal to max is allowed', over: { electionTimeoutMsMin: 300 } },
    {
      name: 'a zero request timeout',
      over: { requestTimeoutMs: 0 },
      error: /requestTimeoutMs must be a positive number/,
    },
    { name: 'a NaN retransmit period', over: { retransmitMs: NaN }, error: /retransmitMs must be a positive number/ },
    {
      name: 'a fractional snapshot period',
      over: { snapshotEveryEntries: 2.5 },
      error: /snapshotEveryEntries must be an integer/,
    },
    {
      name: 'zero entries per message',
      over: { maxEntriesPerMessage: 0 },
      error: /maxEntriesPerMessage must be a positive number/,
    },
  ];
  for (const c of cases) {
    const r = validateTimings({ ...defaultTimings, ...c.over });
    if (!c.error) t.same(r, { ok: true }, c.name);
    else t.match(r, { ok: false, error: c.error }, c.name);
  }
});
