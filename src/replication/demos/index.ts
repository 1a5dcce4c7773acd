/**
 * The primitive demos of the replication simulator (GET /api/v1/demos/...): each one a small real
 * protocol run on the seeded fabric under virtual time, returning a report whose booleans are
 * computed from what happened, plus a narrative. This module only re-exports; the HTTP routes live
 * with the server.
 */
export { runTwoPhaseCommit, type TwoPcReport } from './twopc.js';
export { runMvcc, MvccStore, type MvccReport } from './mvcc.js';
export { runWal, replayLog, encodeRecord, type WalReport, type WalMode } from './wal.js';
export { runSwim, defaultSwimParams, type SwimReport, type SwimParams } from './swim.js';
export { runPaxos, Acceptor, compareBallots, type PaxosReport, type PaxosOptions, type PaxosMsg } from './paxos.js';
export { runDetsim, simulate, type DetsimReport, type DetsimRun } from './detsim.js';
