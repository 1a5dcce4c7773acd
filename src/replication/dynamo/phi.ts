/**
 * The phi-accrual failure detector (Hayashibara et al. 2004), in the form Cassandra and Akka use:
 * heartbeat inter-arrival times are modelled as a normal distribution and phi = -log10(P(a
 * heartbeat arrives later than now)). Time is always the injected `now` (ms); no clock is read here.
 * Not a membership protocol: it only says how suspicious a silent peer is.
 */

export interface PhiOptions {
  /** phi at or above this means suspected; 8 is customary (Cassandra, Akka). */
  threshold: number;
  /** Inter-arrival samples kept (a sliding window). */
  windowSize: number;
  /** Floor on the standard deviation, so a perfectly regular sender is not suspected after one late beat. */
  minStdDeviationMs: number;
  /** Added to the mean: a pause this long is tolerated before phi climbs (Akka's acceptable-heartbeat-pause). */
  acceptablePauseMs: number;
  /** The expected heartbeat interval, used to seed the window before real samples arrive. */
  firstIntervalMs: number;
  /** Longer gaps are not samples but a reconnection (a resumed node): they reset without skewing the mean. */
  maxSampleMs: number;
}

export const defaultPhiOptions: PhiOptions = {
  threshold: 8,
  windowSize: 100,
  minStdDeviationMs: 100,
  acceptablePauseMs: 500,
  firstIntervalMs: 100,
  maxSampleMs: 2000,
};

/** Above the largest phi of a peer heard from within the mean interval (log10(2) = 0.30103). */
const phiBelowMeanMax = 0.5;

export class PhiAccrualDetector {
  /**
   * The window of inter-arrival samples as a ring (`count` of them, the oldest at `head`): the same
   * samples, added and dropped in the same order as a list with push and shift, without moving the
   * window on every heartbeat.
   */
  private readonly samples: number[] = [];
  private head = 0;
  private count = 0;
  private sum = 0;
  private sumSq = 0;
  private last: number;
  /** phi() of the last `now` asked while no heartbeat came in since (NaN: none): a step asks many times. */
  private phiAt = Number.NaN;
  private phiValue = 0;

  /** `now` is when monitoring starts: a peer never heard from becomes suspected like a silent one. */
  constructor(
    now: number,
    readonly opts: PhiOptions = defaultPhiOptions,
  ) {
    this.last = now;
    // Bootstrap as Akka does: two samples around the expected interval give a mean and a spread.
    const first = opts.firstIntervalMs;
    this.push(first - first / 4);
    this.push(first + first / 4);
  }

  private push(interval: number): void {
    const size = this.opts.windowSize + 1;
    // Room for windowSize + 1 samples: the new one is in before the oldest goes, as with push then shift.
    if (this.count < size) this.samples[(this.head + this.count) % size] = interval;
    this.count++;
    this.sum += interval;
    this.sumSq += interval * interval;
    if (this.count > this.opts.windowSize) {
      const old = this.samples[this.head] as number;
      this.head = (this.head + 1) % size;
      this.count--;
      this.sum -= old;
      this.sumSq -= old * old;
    }
    this.phiAt = Number.NaN;
  }

  /** Records a heartbeat arriving at `now`. */
  heartbeat(now: number): void {
    const interval = now - this.last;
    if (interval >= 0 && interval <= this.opts.maxSampleMs) this.push(interval);
    if (now > this.last) {
      this.last = now;
      this.phiAt = Number.NaN;
    }
  }

  /** Time of the last heartbeat. */
  lastHeartbeat(): number {
    return this.last;
  }

  /** phi at `now`: 0 right after a heartbeat, growing the longer the peer stays silent. */
  phi(now: number): number {
    if (now === this.phiAt) return this.phiValue;
    const phi = this.phiOf(now);
    this.phiAt = now;
    this.phiValue = phi;
    return phi;
  }

  private phiOf(now: number): number {
    const n = this.count;
    const mean = this.sum / n + this.opts.acceptablePauseMs;
    const variance = Math.max(0, this.sumSq / n - (this.sum / n) ** 2);
    const std = Math.max(Math.sqrt(variance), this.opts.minStdDeviationMs);
    const elapsed = Math.max(0, now - this.last);
    // Logistic approximation of the normal CDF (Akka's PhiAccrualFailureDetector), stable in the tail.
    const y = (elapsed - mean) / std;
    // P(later) = e / (1 + e) with ln e = -y(1.5976 + 0.070566 y^2); taken in logs so a long silence
    // gives a large finite phi instead of -log10(0).
    const lnE = -y * (1.5976 + 0.070566 * y * y);
    if (elapsed > mean) return (-lnE + Math.log1p(Math.exp(lnE))) / Math.LN10;
    const e = Math.exp(lnE);
    return -Math.log10(1 - 1 / (1 + e));
  }

  /**
   * phi(now) >= threshold. A peer heard from within the mean interval (plus the acceptable pause)
   * has phi <= log10(2) (phiOf's second branch: e >= 1, so 1 - 1/(1 + e) >= 1/2), below any
   * threshold above that: it is not suspected, and its phi is left to be computed when asked.
   */
  suspected(now: number): boolean {
    if (now !== this.phiAt && this.opts.threshold > phiBelowMeanMax) {
      const mean = this.sum / this.count + this.opts.acceptablePauseMs;
      if (Math.max(0, now - this.last) <= mean) return false;
    }
    return this.phi(now) >= this.opts.threshold;
  }
}
