/**
 * Typed values as the checker compares them: EDN's (and JSON's) data, decoded into plain,
 * structured-clone-safe JavaScript data, with one equality used by every model. It is not a
 * parser (edn.ts reads text) and knows nothing of operations or models.
 *
 * Equality follows Clojure's `=` where the data allows it: 1 and "1" differ, :a and "a" differ,
 * nil is its own value, vectors and lists are equal when their elements are ([1 2] = (1 2)),
 * maps and sets compare by content regardless of order. Numbers compare by numeric value, as in
 * JSON: 1 and 1.0 are the same value (the EDN reader does not keep the difference; Clojure's `=`
 * would tell them apart). An integer beyond 2^53 stays exact (`{bigint}`), one within it is a
 * plain number, so 1N = 1 as in Clojure.
 */

/** A value read or written. `null` is Jepsen's nil: absent (a key never written or deleted). */
export type Value = null | boolean | number | string | readonly Value[] | Compound;

/**
 * EDN's other data: each a one-field tagged object, so none can be mistaken for another or for a
 * vector. `map` keeps its entries in the order read (equality ignores the order).
 */
export type Compound =
  | { readonly map: ReadonlyArray<readonly [Value, Value]> }
  | { readonly set: readonly Value[] }
  | { readonly keyword: string }
  | { readonly symbol: string }
  | { readonly char: string }
  | { readonly bigint: string }
  | { readonly tag: string; readonly value: Value };

/**
 * A canonical text of `v`: equal values (in the sense above) give the same text, different ones
 * different texts. Used to compare, intern and hash compound values; primitives need none.
 */
export function valueKey(v: Value): string {
  if (v === null) return 'n';
  switch (typeof v) {
    case 'boolean':
      return v ? 'T' : 'F';
    case 'number':
      return `d${v === 0 ? 0 : v}`; // -0 is 0
    case 'string':
      return `s${JSON.stringify(v)}`;
    default:
      break;
  }
  if (Array.isArray(v)) return `[${(v as readonly Value[]).map(valueKey).join(' ')}]`;
  const c = v as Compound;
  if ('map' in c)
    return `{${c.map
      .map(([k, x]) => `${valueKey(k)} ${valueKey(x)}`)
      .sort()
      .join(',')}}`;
  if ('set' in c) return `#{${c.set.map(valueKey).sort().join(',')}}`;
  if ('keyword' in c) return `:${JSON.stringify(c.keyword)}`;
  if ('symbol' in c) return `y${JSON.stringify(c.symbol)}`;
  if ('char' in c) return `c${JSON.stringify(c.char)}`;
  if ('bigint' in c) return `d${c.bigint}`;
  return `#${JSON.stringify(c.tag)}${valueKey(c.value)}`;
}

/** Value equality for every model (see the module comment). */
export function valueEquals(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    const xs = a as readonly Value[];
    const ys = b as readonly Value[];
    if (xs.length !== ys.length) return false;
    for (let i = 0; i < xs.length; i++) if (!valueEquals(xs[i] as Value, ys[i] as Value)) return false;
    return true;
  }
  return valueKey(a) === valueKey(b);
}

/** True when `v` is an ordered sequence (EDN vector or list, JSON array). */
export function isSequence(v: Value): v is readonly Value[] {
  return Array.isArray(v);
}

const charNames: Readonly<Record<string, string>> = { ' ': 'space', '\n': 'newline', '\r': 'return', '\t': 'tab' };

/** `v` as EDN text, for messages: nil, 1, "s", [1 2], {:a 1}, #{1}, :k, \c, 12345678901234567890N. */
export function showValue(v: Value): string {
  if (v === null) return 'nil';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object') return String(v);
  if (Array.isArray(v)) return `[${(v as readonly Value[]).map(showValue).join(' ')}]`;
  const c = v as Compound;
  if ('map' in c) return `{${c.map.map(([k, x]) => `${showValue(k)} ${showValue(x)}`).join(', ')}}`;
  if ('set' in c) return `#{${c.set.map(showValue).join(' ')}}`;
  if ('keyword' in c) return `:${c.keyword}`;
  if ('symbol' in c) return c.symbol;
  if ('char' in c) return `\\${charNames[c.char] ?? c.char}`;
  if ('bigint' in c) return `${c.bigint}N`;
  return `#${c.tag} ${showValue(c.value)}`;
}
