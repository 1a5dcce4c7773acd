/**
 * Hybrid logical clock (Kulkarni et al. 2014), packed into one number: Unix time in nanoseconds
 * at microsecond granularity, the low three decimal digits of the microsecond part acting as the
 * logical counter. Values stay strictly increasing per node, survive JSON as numbers, and a
 * skewed physical clock shows in them while the causal order (send < receive) is kept.
 */
export class HybridClock {
  /** Last issued value in HLC units (microseconds since the epoch + logical). */
  private last = 0;
  /** Physical-clock offset (ClockSkewRequest), ms. */
  skewMs = 0;

  /** A timestamp for a local event (a write) at physical time `nowMs`. Returns Unix ns. */
  tick(nowMs: number): number {
    const physical = Math.floor((nowMs + this.skewMs) * 1000);
    this.last = physical > this.last ? physical : this.last + 1;
    return this.last * 1000;
  }

  /** Merge a timestamp received from another node (Unix ns) so later local events order after it. */
  observe(remoteNs: number): void {
    // Math.round: near 1.7e18 a double cannot hold every multiple of 1000, so floor could lose a microsecond.
    const remote = Math.round(remoteNs / 1000);
    if (remote > this.last) this.last = remote;
  }

  /** The current value without advancing (Unix ns). */
  peek(): number {
    return this.last * 1000;
  }
}
