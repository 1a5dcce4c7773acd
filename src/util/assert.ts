/**
 * Invariant assertions that stay on in production (term never decreases, commit <= last index, ...).
 * A failed assertion is a bug in this code, never a client error: it throws AssertionFailure.
 */
export class AssertionFailure extends Error {
  override name = 'AssertionFailure';
}

export function invariant(cond: unknown, message: string | (() => string)): asserts cond {
  if (!cond) throw new AssertionFailure(typeof message === 'function' ? message() : message);
}

/** End of an exhaustive switch: the type checker proves this is never reached. */
export function unreachable(x: never): never {
  throw new AssertionFailure(`unreachable: ${JSON.stringify(x)}`);
}
