/**
 * statusOf, the one code → HTTP status table of the replication edge (src/replication/errors.ts):
 * every code under every operation kind, including the odd cases the spec forces (every read
 * failure is 404; a missing key is 404 on read but 400 on delete). Pure, no server.
 */
import t from 'tap';
import type { ErrorCode } from '../../src/replication/core.js';
import { errorCodes, opKinds, ReplicationError, statusOf, type OpKind } from '../../src/replication/errors.js';

/** The status each code gets on writes, deletes, batches and controls (../shared/specs/DECISIONS.md). */
const expectedNonRead: Record<ErrorCode, number> = {
  not_leader: 409,
  no_leader: 409,
  timeout: 409,
  quorum_not_met: 409,
  not_found: 404,
  paused: 409,
  bad_request: 400,
  unsupported: 400,
  refused: 409,
  storage_full: 507,
  node_crashed: 409,
};

t.test('the table covers every code and every operation kind', async (t) => {
  t.same([...errorCodes].sort(), Object.keys(expectedNonRead).sort(), 'this test lists every ErrorCode');
  t.same([...opKinds].sort(), ['batch', 'control', 'delete', 'read', 'write']);
});

t.test('statusOf: every code × operation kind', async (t) => {
  for (const code of errorCodes) {
    for (const op of opKinds) {
      const want = op === 'read' ? 404 : expectedNonRead[code];
      t.equal(statusOf(code, op), want, `${code} on ${op} is ${want}`);
    }
  }
});

t.test('the odd cases the spec forces', async (t) => {
  const cases: Array<{ name: string; code: ErrorCode; op: OpKind; status: number }> = [
    { name: 'a missing key query on read is 404', code: 'bad_request', op: 'read', status: 404 },
    { name: 'a missing key query on delete is 400', code: 'bad_request', op: 'delete', status: 400 },
    { name: 'a paused node refuses a read with 404', code: 'paused', op: 'read', status: 404 },
    { name: 'a paused node refuses a write with 409', code: 'paused', op: 'write', status: 409 },
    { name: 'an unmet read quorum is 404', code: 'quorum_not_met', op: 'read', status: 404 },
    { name: 'an unmet write quorum is 409', code: 'quorum_not_met', op: 'write', status: 409 },
    { name: 'a crashed node answers a read with 404', code: 'node_crashed', op: 'read', status: 404 },
    { name: 'a sync timeout (indeterminate) is 409', code: 'timeout', op: 'write', status: 409 },
    { name: 'a full node refuses a write with 507', code: 'storage_full', op: 'write', status: 507 },
    { name: 'a full node refuses an atomic batch with 507', code: 'storage_full', op: 'batch', status: 507 },
    { name: 'an unknown node on a control is 404', code: 'not_found', op: 'control', status: 404 },
  ];
  for (const c of cases) t.equal(statusOf(c.code, c.op), c.status, c.name);
});

t.test('ReplicationError carries a code, never a status', async (t) => {
  const err = new ReplicationError('no_leader', 'no leader elected yet');
  t.ok(err instanceof Error);
  t.equal(err.code, 'no_leader');
  t.equal(err.message, 'no leader elected yet');
  t.notOk('status' in err, "the status is the edge's call");
  t.equal(statusOf(err.code, 'control'), 409);
});
