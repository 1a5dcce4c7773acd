/**
 * Every cap and default of the clock lab in one place, units in the names. These are the limits
 * the README documents; what falls off a cap is dropped and counted, never kept without bound.
 * Nothing here is behaviour: the cores and the HTTP layer import the numbers.
 */

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

/** Snapshots running at once; one more is a 409. */
export const snapshotsRunningMax = 16;
/** Snapshots kept (running or finished); the oldest finished one is evicted past it and counted. */
export const snapshotsKeptMax = 64;

/** Keys in the KV store; a write creating one more is a 409. */
export const kvKeysMax = 10_000;
/** Longest key, characters. */
export const kvKeyCharsMax = 256;
/** Longest value, characters. */
export const kvValueCharsMax = 16_384;
/** Concurrent versions (siblings) kept for one key under keep_all; past it the write is a 409. */
export const kvSiblingsMax = 64;

/** Event bus publish buffer (the spec's 4096): events published but not yet fanned out. */
export const busBufferMax = 4096;
/** Events kept for replay to a newly connected WebSocket client. */
export const busHistoryMax = 1000;
/** WebSocket ping interval (WSPingInterval), ms. */
export const wsPingIntervalMsDefault = 30_000;
/** WebSocket pong deadline (WSPongDeadline), ms. */
export const wsPongDeadlineMsDefault = 60_000;
/** Bytes a WebSocket client may have queued before further events to it are dropped. */
export const wsClientQueueBytesDefault = 1024 * 1024;

/** Live mode: how often the fabric is driven from the real clock, ms. */
export const liveTickMs = 5;
/** Virtual time a scenario may spend settling one step before giving up, ms. */
export const scenarioSettleMsMax = 60_000;
/** Balance each process starts with (config `initial_balance`). */
export const initialBalanceDefault = 100;
