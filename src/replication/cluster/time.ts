/**
 * Time in live mode, for the cluster and the routes: a sub-millisecond wall clock for the history
 * and the fault log, and a bound on how long to wait for a node. Live mode only: the cores and the
 * deterministic runtime never read the clock (their time is injected).
 */

/** Settles with `p`'s value, or with undefined after `ms` (or when `p` rejects). */
export async function withinMs<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p.catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Sub-millisecond wall-clock time: two sequential operations never share an instant in the history. */
export const preciseNowMs = (): number => performance.timeOrigin + performance.now();
