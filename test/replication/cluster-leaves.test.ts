/**
 * The pure leaves split out of src/replication/cluster.ts (cluster/): single-leader failover's
 * choice, the fault log's link settings, the operation history's counters and outcomes, and a raft
 * status's voters. Table cases, no workers and no server.
 */
import t from 'tap';
import type { ClientOp, ClientReply, ClusterConfig, CoreStatus, Version } from '../../src/replication/core.js';
import { failoverChoice } from '../../src/replication/cluster/failover.js';
import { baseLatencyMs, isFaultOfNode, recordFault } from '../../src/replication/cluster/fault-recording.js';
import { OperationHistory } from '../../src/replication/cluster/operation-history.js';
import { raftVotersOf } from '../../src/replication/cluster/raft-membership.js';
import { FaultLog } from '../../src/replication/history.js';

const status = (lastApplied: number, lastEntryEpoch?: number): CoreStatus => {
  const s: CoreStatus = { role: 'follower', commit_index: 0, last_applied: lastApplied, leader_id: '', lag: 0 };
  if (lastEntryEpoch !== undefined) s.extra = { last_entry_epoch: lastEntryEpoch };
  return s;
};

t.test('failoverChoice promotes the most up-to-date log', async (t) => {
  const cases: Array<{ name: string; answered: Array<{ id: string; status: CoreStatus }>; want: string | undefined }> =
    [
      { name: 'nobody answered: no leader', answered: [], want: undefined },
      {
        name: 'a newer last-entry epoch wins over more entries (single_leader swarm, seed 1653)',
        answered: [
          { id: 'n1', status: status(9, 1) },
          { id: 'n2', status: status(5, 2) },
        ],
        want: 'n2',
      },
      {
        name: 'same epoch: more applied entries win',
        answered: [
          { id: 'n1', status: status(3, 2) },
          { id: 'n3', status: status(4, 2) },
        ],
        want: 'n3',
      },
      {
        name: 'a tie goes to the lower node number (n2 before n10, not by string order)',
        answered: [
          { id: 'n10', status: status(4) },
          { id: 'n2', status: status(4) },
        ],
        want: 'n2',
      },
    ];
  for (const c of cases) t.equal(failoverChoice(c.answered), c.want, c.name);
});

t.test('isFaultOfNode: a node fault or a link fault of that node, never of a longer id', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['pause n1', 'n1', true],
    ['pause n11', 'n1', false],
    ['latency n1>n2', 'n1', true],
    ['latency n1>n2', 'n2', true],
    ['drop n11>n2', 'n1', false],
    ['drop n2>n11', 'n1', false],
    ['partition p1', 'n1', false],
  ];
  for (const [key, node, want] of cases) t.equal(isFaultOfNode(key, node), want, `${key} of ${node}`);
});

t.test('recordFault turns fabric changes into fault intervals', async (t) => {
  const config = { regions: 2, inter_region_latency_ms: 40 } as ClusterConfig;
  const regions = { n1: 0, n2: 1, n3: 0 };
  const base = (from: string, to: string): number => baseLatencyMs(config, regions, from, to);
  t.equal(base('n1', 'n2'), 40, 'across regions: the inter-region latency');
  t.equal(base('n1', 'n3'), 0, 'within a region: 0');

  const log = new FaultLog(16);
  recordFault(log, { kind: 'latency', from: 'n1', to: 'n3', ms: 100 }, base, 1);
  recordFault(log, { kind: 'drop', from: 'n1', to: 'n2', rate: 0.5 }, base, 2);
  recordFault(log, { kind: 'partition', partitionId: 'p1', groupA: ['n1'], groupB: ['n2'] }, base, 3);
  t.same(
    log.active().map((f) => f.kind),
    ['latency', 'drop', 'partition'],
  );
  recordFault(log, { kind: 'latency', from: 'n1', to: 'n3', ms: 0 }, base, 4);
  recordFault(log, { kind: 'heal', partitionId: 'p1' }, base, 5);
  t.same(
    log.active().map((f) => f.kind),
    ['drop'],
    'a latency back to its base and a healed partition close their intervals',
  );
  recordFault(log, { kind: 'latency', from: 'n1', to: 'n2', ms: 40 }, base, 6);
  t.same(
    log.active().map((f) => f.kind),
    ['drop'],
    'setting the inter-region base latency is no fault',
  );
  recordFault(log, { kind: 'clear' }, base, 7);
  t.same(log.active(), [], 'clear closes every network fault');
  const last = log.list().at(-1);
  t.equal(last?.kind, 'heal');
  t.equal(last?.start_ms, 7);
  t.equal(last?.end_ms, 7, 'heal is an instant');
});

t.test('OperationHistory counts outcomes and records what a checker needs', async (t) => {
  const version = (key: string, value: string): Version => ({
    key,
    value,
    tombstone: false,
    timestamp: 0,
    node_id: 'n1',
    version: 1,
    vclock: {},
  });
  const okEntry = (key: string, value: string): ClientReply => ({
    id: 1,
    ok: true,
    result: { kind: 'entry', entry: version(key, value), node_id: 'n1' },
  });
  const failed = (code: 'not_found' | 'timeout' | 'quorum_not_met', indeterminate = false): ClientReply => {
    const r: ClientReply = { id: 1, ok: false, code, error: code };
    if (indeterminate) r.indeterminate = true;
    return r;
  };
  const h = new OperationHistory(100);
  const record = (op: ClientOp, r: ClientReply): void => h.record('c1', 'n1', op, r, 1, 2);
  record({ op: 'write', key: 'a', value: 'x' }, okEntry('a', 'x'));
  record({ op: 'write', key: 'a', value: 'y' }, failed('timeout', true));
  record({ op: 'delete', key: 'a' }, failed('quorum_not_met'));
  record({ op: 'read', key: 'a' }, okEntry('a', 'x'));
  record({ op: 'read', key: 'b' }, failed('not_found'));
  record({ op: 'read', key: 'c' }, failed('timeout'));
  const batch: ClientReply = { id: 1, ok: true, result: { kind: 'batch', entries: [] } };
  record(
    {
      op: 'batch',
      entries: [
        { key: 'p', value: '1' },
        { key: 'q', value: '2' },
      ],
    },
    batch,
  );
  t.equal(h.writes, 2, 'the write and the batch succeeded');
  t.equal(h.writeFailures, 2, 'the indeterminate write and the failed delete');
  t.equal(h.reads, 1);
  const ops = h.toArray();
  t.same(
    ops.map((o) => [o.kind, o.key, o.outcome]),
    [
      ['write', 'a', 'ok'],
      ['write', 'a', 'info'],
      ['delete', 'a', 'fail'],
      ['read', 'a', 'ok'],
      ['read', 'b', 'ok'],
      ['write', 'p', 'ok'],
      ['write', 'q', 'ok'],
    ],
    'a read that failed other than not_found is not recorded; a batch is one write per entry',
  );
  t.equal(ops[4]?.result, null, 'a not_found read saw nothing');
  const page = h.page(5, 10);
  t.same([page.first, page.ops.length, page.firstIndex, page.nextIndex], [5, 2, 0, 7]);
});

t.test('raftVotersOf reads the voters a status reports, ignoring anything else', async (t) => {
  t.same(raftVotersOf({ ...status(0), extra: { voters: ['n1', 2, 'n3'] } }), ['n1', 'n3']);
  t.same(raftVotersOf(status(0)), []);
});
