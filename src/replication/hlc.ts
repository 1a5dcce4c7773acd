/**
 * Hybrid logical clock (Kulkarni et al. 2014), packed into one number: Unix time in nanoseconds
 * at microsecond granularity, the low three decimal digits of the microsecond part acting as the
 * logical counter. Values stay strictly increasing per node, survive JSON as numbers, and a
 * skewed physical clock shows in them while the causal order (send < receive) is kept.
 *
 * A remote timestamp is adopted only when it is at most hlcMaxOffsetMs ahead of this node's
 * physical clock (CockroachDB's max offset): a far-future value (a corrupted replica, a bad peer)
 * is refused and counted, so no single value can pin the clock. Pure: time is always injected.
 * It does not decide what happens to the message that carried the value (the cores still apply it).
 */
import { hlcMaxOffsetMs } from './limits.js';

/** What `observe` did with a remote timestamp. */
export type ObserveOutcome =
  /** The remote value was ahead of the clock and within the max offset: the clock moved to it. */
  | 'adopted'
  /** Not ahead of the clock: nothing to do. */
  | 'behind'
  /** Further ahead of this node's physical clock than the max offset: not adopted, counted. */
  | 'refused_ahead'
  /** Not a finite, non-negative number: not adopted, counted. */
  | 'refused_invalid';

/** Nanoseconds in one millisecond. HLC values are Unix ns, physical times are ms. */
const nsPerMs = 1_000_000;

/**
 * Classifies a remote HLC timestamp (Unix ns) against this node's physical time `physicalMs`
 * (already skewed) and its last issued value `lastNs`: the clock's receive rule with the max-offset
 * bound, as a pure function so it can be tested case by case.
 */
export function classifyRemote(
  remoteNs: number,
  lastNs: number,
  physicalMs: number,
  maxOffsetMs = hlcMaxOffsetMs,
): ObserveOutcome {
  if (typeof remoteNs !== 'number' || !Number.isFinite(remoteNs) || remoteNs < 0) return 'refused_invalid';
  if (remoteNs > (physicalMs + maxOffsetMs) * nsPerMs) return 'refused_ahead';
  return remoteNs > lastNs ? 'adopted' : 'behind';
}

/**
 * Why a timestamp given from outside the cluster (the corrupt debugging route) is refused, or null
 * when it is acceptable: an integer number of Unix ns, not negative, at most `aheadMsMax` ahead of
 * `ceilingNs` (the node's current HLC or physical time, whichever is later). HLC values (~1.7e18)
 * are beyond Number.MAX_SAFE_INTEGER, so "safe" here means a finite integer within that window.
 */
export function externalTimestampProblem(ts: unknown, ceilingNs: number, aheadMsMax: number): string | null {
  if (typeof ts !== 'number' || !Number.isInteger(ts)) {
    return `timestamp must be an integer number of Unix nanoseconds (got ${String(ts).slice(0, 40)})`;
  }
  if (ts < 0) return `timestamp must not be negative (got ${ts})`;
  const maxNs = ceilingNs + aheadMsMax * nsPerMs;
  if (ts > maxNs) {
    return `timestamp must be at most ${aheadMsMax} ms ahead of the node's clock (at most ${maxNs}, got ${ts})`;
  }
  return null;
}

export class HybridClock {
  /** Last issued value in HLC units (microseconds since the epoch + logical). */
  private last = 0;
  /** Physical-clock offset (ClockSkewRequest), ms. */
  skewMs = 0;
  /** Remote timestamps not adopted: too far ahead (max offset) or not a valid number. */
  remoteRefused = 0;

  constructor(private readonly maxOffsetMs = hlcMaxOffsetMs) {}

  /** A timestamp for a local event (a write) at physical time `nowMs`. Returns Unix ns. */
  tick(nowMs: number): number {
    const physical = Math.floor((nowMs + this.skewMs) * 1000);
    this.last = physical > this.last ? physical : this.last + 1;
    return this.last * 1000;
  }

  /**
   * Merge a timestamp received from another node (Unix ns) so later local events order after it,
   * unless it lies more than the max offset ahead of this node's physical clock at `nowMs`.
   */
  observe(remoteNs: number, nowMs: number): ObserveOutcome {
    const outcome = classifyRemote(remoteNs, this.last * 1000, nowMs + this.skewMs, this.maxOffsetMs);
    if (outcome === 'adopted') {
      // Math.round: near 1.7e18 a double cannot hold every multiple of 1000, so floor could lose a microsecond.
      const remote = Math.round(remoteNs / 1000);
      if (remote > this.last) this.last = remote;
    } else if (outcome !== 'behind') {
      this.remoteRefused++;
    }
    return outcome;
  }

  /** The current value without advancing (Unix ns). */
  peek(): number {
    return this.last * 1000;
  }

  /** The later of the last issued value and the physical clock at `nowMs` (Unix ns). */
  ceiling(nowMs: number): number {
    return Math.max(this.last * 1000, Math.floor((nowMs + this.skewMs) * 1000) * 1000);
  }
}
