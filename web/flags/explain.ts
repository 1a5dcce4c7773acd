/**
 * Why a context got its variation, worked out in the page: each rule of a flag checked clause by
 * clause against the context (the evaluator's rules: a missing attribute never matches, negated or
 * not; an array matches when any element does; segments by excluded > included > rules), with the
 * value that made each clause match or fail. The service's reason names the rule (its id); this
 * module singles out the clauses and values inside it. Pure: no DOM, no fetch; it mirrors
 * src/flags/eval/operators.ts (which needs Node) and a test checks both agree.
 */
import semverParse from 'semver/functions/parse.js';
import type { SemVer } from 'semver';
import type { Clause, Flag, Segment } from './model.js';

type Scalar = string | number | boolean;

/** One clause's outcome for a context. */
export interface ClauseExplanation {
  index: number;
  matched: boolean;
  /** A sentence: the context's value and what it was compared with, e.g. `version "2.1.0" semverGte 2.0.0`. */
  detail: string;
}

/** One rule's outcome: matched when every clause matched (clauses are ANDed). */
export interface RuleExplanation {
  index: number;
  id: string;
  matched: boolean;
  clauses: ClauseExplanation[];
}

// ---- operators (the service's, operators.ts) ---------------------------------------------------

function toNumber(v: Scalar): number {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string' || v.trim() === '') return Number.NaN;
  const n = Number(v);
  return Number.isFinite(n) ? n : Number.NaN;
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
const unixMs = /^-?\d+(?:\.\d+)?$/;

/** An RFC 3339 date-time (matched by rfc3339) in epoch ms, field by field; out-of-range fields give NaN. */
function parseRfc3339(s: string): number {
  const d = (at: number, n: number): number => Number(s.slice(at, at + n));
  const [year, month, day, hour, minute, second] = [d(0, 4), d(5, 2), d(8, 2), d(11, 2), d(14, 2), d(17, 2)];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return Number.NaN;
  let i = 19;
  let ms = 0;
  if (s[i] === '.') {
    i++;
    let scale = 100;
    while (i < s.length && s[i] !== undefined && /\d/.test(s[i] as string)) {
      ms += Number(s[i]) * scale;
      scale /= 10;
      i++;
    }
    ms = Math.floor(ms);
  }
  let offsetMinutes = 0;
  if (s[i] === '+' || s[i] === '-') {
    const oh = d(i + 1, 2);
    const om = d(i + 4, 2);
    if (oh > 23 || om > 59) return Number.NaN;
    offsetMinutes = (s[i] === '+' ? 1 : -1) * (oh * 60 + om);
  }
  let t: number;
  if (year >= 100) t = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  else {
    const date = new Date(0);
    date.setUTCFullYear(year, month - 1, day);
    t = date.setUTCHours(hour, minute, second, ms);
  }
  return t - offsetMinutes * 60000;
}

function toEpochMs(v: Scalar): number {
  if (typeof v === 'number') return Number.isFinite(v) ? v : Number.NaN;
  if (typeof v !== 'string') return Number.NaN;
  if (rfc3339.test(v)) return parseRfc3339(v);
  if (unixMs.test(v)) return Number(v);
  return Number.NaN;
}

const partialVersion = /^v?(\d+)(\.\d+)?([-+].*)?$/;

function parseVersion(v: Scalar): SemVer | undefined {
  if (typeof v === 'boolean') return undefined;
  const s = String(v);
  const full = semverParse(s);
  if (full) return full;
  const m = partialVersion.exec(s);
  if (!m) return undefined;
  return semverParse(`${m[1]}${m[2] ?? '.0'}.0${m[3] ?? ''}`) ?? undefined;
}

/**
 * The service runs `matches` on V8's linear-time engine, where backreferences and lookaround are
 * unusable (such a pattern never matches); the page refuses the same patterns.
 */
function compileRegex(pattern: string): RegExp | undefined {
  if (/\\[1-9]|\\k<|\(\?<?[=!]/.test(pattern)) return undefined;
  try {
    return new RegExp(pattern);
  } catch {
    return undefined;
  }
}

/** The first of `values` that `v` satisfies under `op` (notIn tested as in), or undefined. */
function firstMatchingValue(op: Exclude<Clause['op'], 'segmentMatch'>, values: readonly string[], v: Scalar) {
  const str = (pred: (a: string, b: string) => boolean): string | undefined =>
    typeof v === 'string' ? values.find((b) => pred(v, b)) : undefined;
  const num = (parse: (x: Scalar) => number, cmp: (a: number, b: number) => boolean): string | undefined => {
    const a = parse(v);
    if (Number.isNaN(a)) return undefined;
    return values.find((b) => {
      const n = parse(b);
      return !Number.isNaN(n) && cmp(a, n);
    });
  };
  const ver = (ok: (c: number) => boolean): string | undefined => {
    const a = parseVersion(v);
    if (a === undefined) return undefined;
    return values.find((b) => {
      const p = parseVersion(b);
      return p !== undefined && ok(a.compare(p));
    });
  };
  switch (op) {
    case 'in':
    case 'notIn':
      return values.find((b) =>
        typeof v === 'string' ? v === b : typeof v === 'number' ? v === toNumber(b) : (v ? 'true' : 'false') === b,
      );
    case 'startsWith':
      return str((a, b) => a.startsWith(b));
    case 'endsWith':
      return str((a, b) => a.endsWith(b));
    case 'contains':
      return str((a, b) => a.includes(b));
    case 'matches':
      return str((a, b) => compileRegex(b)?.test(a) === true);
    case 'lt':
      return num(toNumber, (a, b) => a < b);
    case 'lte':
      return num(toNumber, (a, b) => a <= b);
    case 'gt':
      return num(toNumber, (a, b) => a > b);
    case 'gte':
      return num(toNumber, (a, b) => a >= b);
    case 'before':
      return num(toEpochMs, (a, b) => a < b);
    case 'after':
      return num(toEpochMs, (a, b) => a > b);
    case 'semverEq':
      return ver((c) => c === 0);
    case 'semverLt':
      return ver((c) => c < 0);
    case 'semverLte':
      return ver((c) => c <= 0);
    case 'semverGt':
      return ver((c) => c > 0);
    case 'semverGte':
      return ver((c) => c >= 0);
  }
}

const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

function contextKey(context: Record<string, unknown>): string | undefined {
  const k = context['key'];
  return typeof k === 'string' ? k : typeof k === 'number' ? String(k) : undefined;
}

// ---- clauses and segments ----------------------------------------------------------------------

/** Why a context is in a segment (`included`, `rule 2`), or undefined when it is not. */
export function segmentMembership(segment: Segment, context: Record<string, unknown>): string | undefined {
  const key = contextKey(context);
  if (key !== undefined) {
    if (segment.excluded.includes(key)) return undefined;
    if (segment.included.includes(key)) return 'included';
  }
  const i = segment.rules.findIndex((r) =>
    r.clauses.every((c, j) => explainClause(c, j, context, new Map(), true).matched),
  );
  return i >= 0 ? `rule ${i + 1}` : undefined;
}

const show = (v: unknown): string => JSON.stringify(v);

/**
 * One clause against a context. `segments` resolves segmentMatch (a missing segment does not
 * match); inside a segment (`inSegment`) a segmentMatch never matches, as in the service.
 */
export function explainClause(
  clause: Clause,
  index: number,
  context: Record<string, unknown>,
  segments: ReadonlyMap<string, Segment>,
  inSegment = false,
): ClauseExplanation {
  const not = clause.negate === true ? 'not ' : '';
  const op = clause.op;
  if (op === 'segmentMatch') {
    if (inSegment) return { index, matched: false, detail: 'segmentMatch inside a segment never matches' };
    let member: string | undefined;
    const missing: string[] = [];
    for (const k of clause.values) {
      const seg = segments.get(k);
      if (seg === undefined) {
        missing.push(k);
        continue;
      }
      const why = segmentMembership(seg, context);
      if (why !== undefined) {
        member = `in segment ${k} (${why})`;
        break;
      }
    }
    const gone = missing.length > 0 ? `; no segment ${missing.join(', ')}` : '';
    const inAny = member !== undefined;
    return {
      index,
      matched: inAny !== (clause.negate === true),
      detail: `${not}segmentMatch ${clause.values.join(', ')}: ${member ?? 'in none of them'}${gone}`,
    };
  }
  const v = context[clause.attribute];
  const against = `${not}${op} ${clause.values.join(', ')}`;
  if (!isScalar(v) && !Array.isArray(v))
    return { index, matched: false, detail: `${clause.attribute} is missing (never matches): ${against}` };
  const elements = Array.isArray(v) ? v.filter(isScalar) : [v];
  let hit: { element: Scalar; value: string } | undefined;
  for (const el of elements) {
    const value = firstMatchingValue(op, clause.values, el);
    if (value !== undefined) {
      hit = { element: el, value };
      break;
    }
  }
  const invert = (clause.negate === true) !== (op === 'notIn');
  const matched = (hit !== undefined) !== invert;
  const got = `${clause.attribute} ${show(v)}`;
  const why =
    hit !== undefined
      ? `${Array.isArray(v) ? `element ${show(hit.element)} ` : ''}${op === 'notIn' ? 'in' : op} ${hit.value}`
      : `no value satisfies ${op === 'notIn' ? 'in' : op}`;
  return { index, matched, detail: `${got} ${against} (${why})` };
}

/** Every rule of the flag checked against the context, in order, with every clause's outcome. */
export function explainRules(
  flag: Pick<Flag, 'rules'>,
  context: Record<string, unknown>,
  segments: ReadonlyMap<string, Segment>,
): RuleExplanation[] {
  return flag.rules.map((r, index) => {
    const clauses = r.clauses.map((c, j) => explainClause(c, j, context, segments));
    return { index, id: r.id, matched: clauses.every((c) => c.matched), clauses };
  });
}

/**
 * The rules that decided a RULE_MATCH or a fall-through, as a user reads them: every rule before
 * the one the service names (each with the clause that failed it), then that rule with all its
 * clauses (all matched). For a reason naming no rule, every rule (none matched). Also says whether
 * the page's own check agrees with the service (it disagrees only when they run different rules).
 */
export function explainReason(
  flag: Pick<Flag, 'rules'>,
  context: Record<string, unknown>,
  segments: ReadonlyMap<string, Segment>,
  ruleId: string | undefined,
): { rules: RuleExplanation[]; matchedIndex: number; agrees: boolean } {
  const all = explainRules(flag, context, segments);
  const firstMatch = all.findIndex((r) => r.matched);
  if (ruleId === undefined) return { rules: all, matchedIndex: -1, agrees: firstMatch === -1 };
  const at = all.findIndex((r) => r.id === ruleId);
  return { rules: at >= 0 ? all.slice(0, at + 1) : all, matchedIndex: at, agrees: at >= 0 && firstMatch === at };
}
