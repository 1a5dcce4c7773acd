/**
 * Unit checks of src/flags/limits.ts as the one home of the flag service's caps and defaults: the
 * objects other modules hand around (stream and store defaults, the key pattern) are built from its
 * constants, at and one past each bound.
 */
import t from 'tap';
import * as L from '../../src/flags/limits.js';
import { isValidKey, KEY_PATTERN } from '../../src/flags/model/validate.js';
import { defaultStreamLimits } from '../../src/flags/stream/hub.js';
import { defaultStoreLimits } from '../../src/flags/store/types.js';
import { accessTokenCharsMax, accessTokenTtlSec, refreshTokenTtlSec } from '../../src/flags/auth/tokens.js';

t.test('keys: keyCharsMax characters are a key, one more is not', async (t) => {
  t.ok(isValidKey('k'.repeat(L.keyCharsMax)), `${L.keyCharsMax} characters`);
  t.notOk(isValidKey('k'.repeat(L.keyCharsMax + 1)), `${L.keyCharsMax + 1} characters`);
  t.notOk(isValidKey(''), 'empty');
  t.equal(KEY_PATTERN.source, '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', 'the pattern the spec states');
});

t.test('stream, store and token defaults are the limits.ts constants', async (t) => {
  t.same(defaultStreamLimits, {
    replayLogEntriesMax: L.sseReplayLogEntriesMaxDefault,
    replayLogBytesMax: L.sseReplayLogBytesMaxDefault,
    clientsMax: L.sseClientsMaxDefault,
    heartbeatMs: L.sseHeartbeatMsDefault,
    drainTimeoutMs: L.sseDrainTimeoutMsDefault,
    replayBytesMax: L.sseClientBufferBytesDefault,
  });
  t.same(defaultStoreLimits, {
    auditRecordsPerProjectMax: L.auditRecordsPerProjectMaxDefault,
    changeFeedRowsMax: L.changeFeedRowsMax,
  });
  t.same(
    [accessTokenCharsMax, accessTokenTtlSec, refreshTokenTtlSec],
    [L.accessTokenCharsMax, L.accessTokenTtlSec, L.refreshTokenTtlSec],
  );
});

t.test('the relations the load-time checks assert', async (t) => {
  t.ok(L.auditPageRecordsDefault <= L.auditPageRecordsMax, 'default audit page <= max');
  t.ok(
    2 * L.sseHeartbeatMsDefault <= L.sdkReadTimeoutMsDefault,
    'an SDK hears two heartbeats before it calls the stream dead',
  );
  t.ok(
    L.sdkBackoffMsMin <= L.sdkBackoffMsInitialDefault && L.sdkBackoffMsInitialDefault <= L.sdkBackoffMsMaxDefault,
    'backoff min <= initial <= max',
  );
  t.ok(L.envBytesMin <= L.sseClientBufferBytesDefault, 'the byte defaults pass their own minimum');
});
