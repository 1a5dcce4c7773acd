/**
 * Every cap and default of the clock lab in one place, units in the names. These are the limits
 * the README documents; what falls off a cap is dropped and counted, never kept without bound.
 * Nothing here is behaviour: the cores and the HTTP layer import the numbers.
 */

/**
 * Text limits. "Characters" are Unicode code points, as the body schemas count them (a character
 * outside the BMP counts once); every one is checked at the edge and refused with 400 naming it.
 */
/** Longest process id (letters, digits, '_', '.', '-', starting with a letter or digit). */
export const processIdCharsMax = 64;
/** Longest label of an internal event. */
export const eventLabelCharsMax = 256;
/** Longest scenario name in a path (the names themselves are short; a longer one is a 400, not a 404 echoing it). */
export const scenarioNameCharsMax = 64;
/** Longest snapshot id in a path (ids are "s1", "s2", ...). */
export const snapshotIdCharsMax = 32;
/** Longest partition id in a path (ids are the fabric's short names). */
export const partitionIdCharsMax = 32;
/** Largest entry of a version vector given to a KV write (JSON numbers past it lose integer precision). */
export const kvVersionCounterMax = Number.MAX_SAFE_INTEGER;
/** Largest amount moved by one message (the bank-transfer demo). */
export const messageAmountMax = 1_000_000_000;

/** Most processes alive or killed in one simulation (killed ids stay reserved until reset). */
export const processCountMax = 256;
/** Longest application payload, in characters (larger bodies are a 400). */
export const payloadCharsMax = 4096;
/** Held-back messages per process; past it a newly arriving message is dropped (`holdback_full`). */
export const holdBackDepthMax = 1024;
/** Messages waiting in the reorder stage (all channels together); past it a message is dropped. */
export const reorderDepthMax = 4096;
/** Default largest extra delay of a reordering channel, ms. */
export const reorderWindowMsDefault = 100;
/** Largest channel delay accepted, ms. */
export const channelDelayMsMax = 60_000;
/** Default one-way delay of every channel, ms (config `channels.default_delay_ms`). */
export const channelDelayMsDefault = 10;
/** Messages in flight on one fabric link. */
export const linkQueueMax = 1024;
/**
 * Estimated bytes held by undelivered application messages (in flight, reordering, held back),
 * all channels together; a send past it is a 409. Each message carries its payload, a vector and
 * the sender's RST SENT matrix (up to n² numbers: 512 KiB at 256 processes), so a count of
 * messages alone bounds nothing. VC_UNDELIVERED_BYTES_MAX overrides it.
 */
export const undeliveredBytesMax = 256 * 1024 * 1024;
/**
 * Processes in a simulation that holds a matrix clock (a matrix has n² entries, shown in full on every event
 * and answer).
 */
export const matrixSimulationProcessesMax = 32;

/** Snapshots running at once; one more is a 409. */
export const snapshotsRunningMax = 16;
/** Snapshots kept (running or finished); the oldest finished one is evicted past it and counted. */
export const snapshotsKeptMax = 64;
/**
 * Channel records held by all kept snapshots together (a snapshot of n processes holds n(n−1),
 * 65,280 at 256): 64 snapshots of 64 processes, or 4 of 256. Past it the oldest finished ones are
 * evicted (counted); when running ones alone hold it, a new snapshot is a 409.
 */
export const snapshotChannelsKeptMax = 262_144;
/**
 * In-transit messages one snapshot records before the markers close its channels; past it the snapshot is
 * given up as incomplete.
 */
export const snapshotRecordedMessagesMax = 65_536;

/** Keys in the KV store; a write creating one more is a 409. */
export const kvKeysMax = 10_000;
/** Longest key, characters. */
export const kvKeyCharsMax = 256;
/** Longest value, characters. */
export const kvValueCharsMax = 16_384;
/** Concurrent versions (siblings) kept for one key under keep_all; past it the write is a 409. */
export const kvSiblingsMax = 64;
/**
 * All stored values together, UTF-16 units (keys × siblings × value length would otherwise allow
 * about 10^10); a write that would pass it is a 409. A merged value is held to kvValueCharsMax.
 */
export const kvStoreCharsMax = 32 * 1024 * 1024;

/** Event bus publish buffer (the spec's 4096): events published but not yet fanned out. */
export const busBufferMax = 4096;
/** Events kept for replay to a newly connected WebSocket client. */
export const busHistoryMax = 1000;
/**
 * Serialized size of that history, characters (events can be large: KV siblings, matrices); the oldest go
 * first past it.
 */
export const busHistoryCharsMax = 8 * 1024 * 1024;
/** WebSocket ping interval (WSPingInterval), ms. */
export const wsPingIntervalMsDefault = 30_000;
/** WebSocket pong deadline (WSPongDeadline), ms. */
export const wsPongDeadlineMsDefault = 60_000;
/** WebSocket clients of /ws at once (VC_WS_CLIENTS_MAX); one more is refused with 503. */
export const wsClientsMaxDefault = 1024;
/** Bytes a WebSocket client may have queued before further events to it are dropped. */
export const wsClientQueueBytesDefault = 1024 * 1024;

/** Live mode: how often the fabric is driven from the real clock, ms. */
export const liveTickMs = 5;
/** Virtual time a scenario may spend settling one step before giving up, ms. */
export const scenarioSettleMsMax = 60_000;
/** Balance each process starts with (config `initial_balance`). */
export const initialBalanceDefault = 100;

/** Proxy: an upstream WebSocket without any browser is closed after this time, ms (a reload reuses it meanwhile). */
export const proxyIdleUpstreamMs = 10_000;
/**
 * Proxy: upstream WebSockets to the lab, one per distinct credentials (Authorization, Origin, token); one
 * more is a 503.
 */
export const proxyUpstreamsMax = 16;
/**
 * Proxy: the lab must answer a forwarded request (else 504) or a WebSocket handshake (else 502) within this
 * time, ms.
 */
export const proxyRequestTimeoutMs = 30_000;
/** Proxy: largest answer of the lab relayed to a browser (else 502), bytes. */
export const proxyResponseBytesMax = 64 * 1024 * 1024;
/** Proxy: largest refusal body of a WebSocket upgrade read from the lab, bytes. */
export const proxyRefusalBytesMax = 64 * 1024;
