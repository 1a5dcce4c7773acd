/**
 * How the cores fail a per-step invariant check: `if (!ok) invariantBroken(message)`, the message
 * built only when the check fails. The cores check their invariants after every step, and
 * util/assert's `invariant(ok, () => message)` allocates its closure on every call, passing or not;
 * this helper is the allocation-free form. It throws the same AssertionFailure (a bug, never a 4xx).
 */
import { AssertionFailure } from '../../util/assert.js';

export function invariantBroken(message: string): never {
  throw new AssertionFailure(message);
}
