/**
 * Clause operators compiled once per clause (../shared/specs/DECISIONS.md "Clause operators"): value sets,
 * parsed numbers, dates and versions, and regexes are prepared at compile time so matching a
 * context is a few comparisons. Each compiled operator tests one scalar attribute value against
 * all of the clause's values ("values match when any value matches"); unparsable values and bad
 * regexes simply never match and never throw. Attribute lookup, arrays, negate and segmentMatch
 * are the evaluator's (evaluate.ts).
 */
import { setFlagsFromString } from 'node:v8';
import semver from 'semver';
import type { ClauseOp } from '../model/types.js';
import { unreachable } from '../../util/assert.js';
import { regexCacheEntriesMax, versionCacheEntriesMax } from '../limits.js';

/** A context attribute value that operators look at (array elements are tested one by one). */
export type Scalar = string | number | boolean;
export type ScalarTest = (v: Scalar) => boolean;

const never: ScalarTest = () => false;

// ---- numbers: "numbers are sent as strings"; an attribute may be a number or a numeric string.

/** A finite number from a number or a numeric string ('' and ' ' are not numbers), else NaN. */
export function toNumber(v: Scalar): number {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string' || v.trim() === '') return NaN;
  const n = Number(v);
  return Number.isFinite(n) ? n : NaN;
}

// ---- dates: RFC 3339 date-time or Unix milliseconds.

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const UNIX_MS = /^-?\d+(?:\.\d+)?$/;

/** Two (or n) decimal digits at `at`; the caller has matched RFC3339, so they are digits. */
function digits(s: string, at: number, n: number): number {
  let v = 0;
  for (let i = at; i < at + n; i++) v = v * 10 + (s.charCodeAt(i) - 48);
  return v;
}

/**
 * An RFC 3339 date-time (already matched by RFC3339) in epoch ms, read field by field: no
 * allocation, several times cheaper than Date.parse on the hot path. Fractions beyond
 * milliseconds are truncated; out-of-range fields (month 13, minute 60) are NaN, never guessed.
 */
function parseRfc3339(s: string): number {
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  const second = digits(s, 17, 2);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return NaN;
  let i = 19;
  let ms = 0;
  if (s.charCodeAt(i) === 46 /* . */) {
    i++;
    let scale = 100;
    while (i < s.length) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) break;
      ms += (c - 48) * scale;
      scale /= 10;
      i++;
    }
    ms = Math.floor(ms);
  }
  let offsetMinutes = 0;
  const sign = s.charCodeAt(i);
  if (sign === 43 /* + */ || sign === 45 /* - */) {
    const oh = digits(s, i + 1, 2);
    const om = digits(s, i + 4, 2);
    if (oh > 23 || om > 59) return NaN;
    offsetMinutes = (sign === 43 ? 1 : -1) * (oh * 60 + om);
  }
  let t: number;
  if (year >= 100) t = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  else {
    // Date.UTC reads years 0..99 as 1900..1999; setUTCFullYear takes them literally.
    const d = new Date(0);
    d.setUTCFullYear(year, month - 1, day);
    t = d.setUTCHours(hour, minute, second, ms);
  }
  return t - offsetMinutes * 60000;
}

/** Milliseconds since the epoch from an RFC 3339 date-time, Unix ms (number or string), else NaN. */
export function toEpochMs(v: Scalar): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : NaN;
  if (typeof v !== 'string') return NaN;
  if (RFC3339.test(v)) return parseRfc3339(v);
  if (UNIX_MS.test(v)) return Number(v);
  return NaN;
}

// ---- versions: the semver package, with `2` and `2.1` read as 2.0.0 and 2.1.0.

const PARTIAL_VERSION = /^v?(\d+)(\.\d+)?([-+].*)?$/;

/** A semantic version, completing missing minor/patch with zeros; undefined when unparsable. */
export function parseVersion(v: Scalar): semver.SemVer | undefined {
  if (typeof v === 'boolean') return undefined;
  const s = String(v);
  const full = semver.parse(s);
  if (full) return full;
  const m = PARTIAL_VERSION.exec(s);
  if (!m) return undefined;
  return semver.parse(`${m[1]}${m[2] ?? '.0'}.0${m[3] ?? ''}`) ?? undefined;
}

/** Attribute versions repeat (app versions), so their parses are cached, with a cap. */
const versionCache = new Map<string, semver.SemVer | null>();
function cachedVersion(v: Scalar): semver.SemVer | undefined {
  if (typeof v !== 'string') return parseVersion(v);
  let hit = versionCache.get(v);
  if (hit === undefined) {
    if (versionCache.size >= versionCacheEntriesMax) versionCache.clear();
    hit = parseVersion(v) ?? null;
    versionCache.set(v, hit);
  }
  return hit ?? undefined;
}

// ---- regexes: compiled once; an invalid pattern is remembered as such and never matches.

const regexCache = new Map<string, RegExp | null>();
/**
 * `matches` patterns come from editors and run against any caller's context, so they must not
 * backtrack catastrophically (`^(a+)+$` on "aaaa…!" would stall the whole service). V8's linear-time
 * engine (the `l` flag, enabled once here) runs them in time linear in the input; patterns it
 * cannot run that way (backreferences, lookaround) never match, like any unusable pattern.
 */
let linearFlag: 'l' | '' | undefined;
function linear(): 'l' | '' {
  if (linearFlag === undefined) {
    try {
      setFlagsFromString('--enable-experimental-regexp-engine');
      new RegExp('a', 'l');
      linearFlag = 'l';
    } catch {
      linearFlag = '';
    }
  }
  return linearFlag;
}

export function compileRegex(pattern: string): RegExp | undefined {
  let hit = regexCache.get(pattern);
  if (hit === undefined) {
    if (regexCache.size >= regexCacheEntriesMax) regexCache.clear();
    const flags = linear();
    try {
      // Without the linear engine (never on Node 20 here), refuse nested quantifiers outright.
      hit = flags === '' && /\([^)]*[+*][^)]*\)[+*{]/.test(pattern) ? null : new RegExp(pattern, flags);
    } catch {
      hit = null;
    }
    regexCache.set(pattern, hit);
  }
  return hit ?? undefined;
}

function anyOfStrings(values: readonly string[], pred: (attr: string, value: string) => boolean): ScalarTest {
  if (values.length === 0) return never;
  if (values.length === 1) {
    const only = values[0] as string;
    return (v) => typeof v === 'string' && pred(v, only);
  }
  return (v) => {
    if (typeof v !== 'string') return false;
    for (const value of values) if (pred(v, value)) return true;
    return false;
  };
}

function numericTest(
  values: readonly string[],
  cmp: (a: number, b: number) => boolean,
  parse: (v: Scalar) => number,
): ScalarTest {
  const parsed = values.map(parse).filter((n) => !Number.isNaN(n));
  if (parsed.length === 0) return never;
  return (v) => {
    const a = parse(v);
    if (Number.isNaN(a)) return false;
    for (const b of parsed) if (cmp(a, b)) return true;
    return false;
  };
}

function versionTest(values: readonly string[], ok: (c: number) => boolean): ScalarTest {
  const parsed = values.map(parseVersion).filter((x): x is semver.SemVer => x !== undefined);
  if (parsed.length === 0) return never;
  return (v) => {
    const a = cachedVersion(v);
    if (a === undefined) return false;
    for (const b of parsed) if (ok(a.compare(b))) return true;
    return false;
  };
}

/**
 * Equality for `in`/`notIn`: strings compare exactly; a number attribute equals a value that
 * parses to the same number ("5" and "5.0" both match 5); a boolean equals "true"/"false".
 */
function membershipTest(values: readonly string[]): ScalarTest {
  if (values.length === 0) return never;
  const strings = new Set(values);
  const numbers = new Set(values.map(toNumber).filter((n) => !Number.isNaN(n)));
  if (values.length === 1) {
    const only = values[0] as string;
    const num = toNumber(only);
    return (v) =>
      typeof v === 'string' ? v === only : typeof v === 'number' ? v === num : (v ? 'true' : 'false') === only;
  }
  return (v) =>
    typeof v === 'string' ? strings.has(v) : typeof v === 'number' ? numbers.has(v) : strings.has(v ? 'true' : 'false');
}

/**
 * The per-value test for an operator other than segmentMatch. `notIn` is compiled as `in` and
 * inverted by the evaluator over the whole attribute (an array attribute is "not in" when none of
 * its elements is in the values), so it reads as the negation of `in` a user expects.
 * String operators (startsWith, endsWith, contains, matches) look at string values only.
 */
export function compileScalarTest(op: Exclude<ClauseOp, 'segmentMatch'>, values: readonly string[]): ScalarTest {
  switch (op) {
    case 'in':
    case 'notIn':
      return membershipTest(values);
    case 'startsWith':
      return anyOfStrings(values, (a, b) => a.startsWith(b));
    case 'endsWith':
      return anyOfStrings(values, (a, b) => a.endsWith(b));
    case 'contains':
      return anyOfStrings(values, (a, b) => a.includes(b));
    case 'matches': {
      const regexes = values.map(compileRegex).filter((r): r is RegExp => r !== undefined);
      if (regexes.length === 0) return never;
      return (v) => {
        if (typeof v !== 'string') return false;
        for (const re of regexes) if (re.test(v)) return true;
        return false;
      };
    }
    case 'lt':
      return numericTest(values, (a, b) => a < b, toNumber);
    case 'lte':
      return numericTest(values, (a, b) => a <= b, toNumber);
    case 'gt':
      return numericTest(values, (a, b) => a > b, toNumber);
    case 'gte':
      return numericTest(values, (a, b) => a >= b, toNumber);
    case 'before':
      return numericTest(values, (a, b) => a < b, toEpochMs);
    case 'after':
      return numericTest(values, (a, b) => a > b, toEpochMs);
    case 'semverEq':
      return versionTest(values, (c) => c === 0);
    case 'semverLt':
      return versionTest(values, (c) => c < 0);
    case 'semverLte':
      return versionTest(values, (c) => c <= 0);
    case 'semverGt':
      return versionTest(values, (c) => c > 0);
    case 'semverGte':
      return versionTest(values, (c) => c >= 0);
    default:
      return unreachable(op);
  }
}
