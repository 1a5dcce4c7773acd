/**
 * What every request a leaderless node coordinates has, whether a write or a read: its ids, its
 * timers and its placement (groups, slots, the nodes it involved). Data only; the write and read
 * specifics live in write-op.ts and read-op.ts, and the core owns the map of requests in flight.
 */
import type { Placement } from './placement.js';
import type { ReadOp } from './read-op.js';
import type { WriteOp } from './write-op.js';

export interface OpBase extends Placement {
  /** The coordinator's id for this request's fabric round trips (not the client's request id). */
  roundTripId: number;
  /** The client's request id (a batch's entries share their batch's). */
  requestId: number;
  key: string;
  startedAt: number;
  /** Past it the request fails (quorum_not_met) or answers with what it knows. */
  deadline: number;
  /** Past it, silent slots get stand-ins (sloppy quorum) or digest readers are asked in full. */
  probeAt: number;
}

export type Op = WriteOp | ReadOp;
