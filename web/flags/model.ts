/**
 * The flags console's pure logic, testable without a browser: the environment's flags as the
 * stream delivers them (put/patch/delete applied to a map), the list filter, rollout weights and
 * their percentages, the bucket ruler's geometry, the audit diff, which form field an API error
 * names, JSON variation parsing, and the token refresh schedule. No DOM, no fetch, no signals.
 */
import type { Flag, JsonValue, RolloutEntry, Segment } from '../../src/flags/model/types.js';

export type {
  Clause,
  ClauseOp,
  Flag,
  FlagType,
  JsonValue,
  Prerequisite,
  RolloutEntry,
  Rule,
  Segment,
  SegmentRule,
  Target,
  Variation,
} from '../../src/flags/model/types.js';
export { CLAUSE_OPS, FLAG_TYPES, ROLLOUT_TOTAL } from '../../src/flags/model/types.js';

/** Rollout weights are integer shares of this total (the API's rule). */
export const rolloutTotal = 100_000;
/**
 * Flag rows the table renders at once; "Show more" adds as many again. Rendering all 2,000 rows
 * of a large environment made every search keystroke cost the whole table (see
 * benchmarks/web-flags-console.ts); a search narrows the list instead.
 */
export const flagRowsPageMax = 50;
/** Contexts kept in the debugger's "recent" list. */
export const recentContextsMax = 10;
/** Audit records fetched per load (the API allows up to 500). */
export const auditPageRecords = 100;
/** Changes listed per audit record at most (a huge JSON variation diff is cut, and says so). */
export const diffEntriesMax = 200;
/** The access token is refreshed this long before it expires... */
export const tokenRefreshLeadMs = 60_000;
/** ...but never sooner than this after it was issued (a very short lifetime still gets a pause). */
export const tokenRefreshMinDelayMs = 5_000;

// ---- stream ------------------------------------------------------------------------------------

export interface EnvData {
  flags: Map<string, Flag>;
  segments: Map<string, Segment>;
}

export function emptyEnv(): EnvData {
  return { flags: new Map(), segments: new Map() };
}

/**
 * Applies one SDK-stream event (`put` replaces everything; `patch` with path `/flags/k` or
 * `/segments/k` sets one; `delete` removes one unless the held copy is newer). Returns a new value
 * (never mutates), or the same one for events it does not know.
 */
export function applyStreamEvent(env: EnvData, event: string, data: string): EnvData {
  let body: unknown;
  try {
    body = JSON.parse(data);
  } catch {
    return env;
  }
  if (typeof body !== 'object' || body === null) return env;
  const b = body as { path?: unknown; data?: unknown; version?: unknown };
  if (event === 'put') {
    const d = (b.data ?? {}) as { flags?: Record<string, Flag>; segments?: Record<string, Segment> };
    return { flags: new Map(Object.entries(d.flags ?? {})), segments: new Map(Object.entries(d.segments ?? {})) };
  }
  if (typeof b.path !== 'string') return env;
  const m = /^\/(flags|segments)\/(.+)$/.exec(b.path);
  if (!m) return env;
  const kind = m[1] === 'flags' ? 'flags' : 'segments';
  const key = m[2] as string;
  const map = new Map<string, Flag | Segment>(env[kind]);
  if (event === 'patch' && typeof b.data === 'object' && b.data !== null) {
    const held = map.get(key);
    const next = b.data as Flag | Segment;
    if (held && held.version > next.version) return env;
    map.set(key, next);
  } else if (event === 'delete') {
    const held = map.get(key);
    if (held && typeof b.version === 'number' && held.version > b.version) return env;
    map.delete(key);
  } else return env;
  return kind === 'flags'
    ? { ...env, flags: map as Map<string, Flag> }
    : { ...env, segments: map as Map<string, Segment> };
}

// ---- list --------------------------------------------------------------------------------------

/** Tags a flag shows in the list (the model has no free-form tags: these are derived from its parts). */
export function flagTags(f: Flag): string[] {
  const tags: string[] = [f.type];
  if (f.targets.length > 0) tags.push('targets');
  if (f.rules.length > 0) tags.push('rules');
  if (f.rollout.length > 0) tags.push('rollout');
  if (f.prerequisites.length > 0) tags.push('prerequisites');
  if (f.rules.some((r) => r.clauses.some((c) => c.op === 'segmentMatch'))) tags.push('segments');
  return tags;
}

/**
 * The flags matching a search, sorted by key. Each word must match the key, the name, a tag, or
 * a status (`on` / `off`); `tag:x` needs tag x exactly.
 */
export function filterFlags(flags: Iterable<Flag>, query: string): Flag[] {
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== '');
  const out: Flag[] = [];
  for (const f of flags) {
    const tags = flagTags(f);
    const hay = [f.key.toLowerCase(), f.name.toLowerCase(), ...tags, f.enabled ? 'on' : 'off'];
    const ok = words.every((w) => (w.startsWith('tag:') ? tags.includes(w.slice(4)) : hay.some((h) => h.includes(w))));
    if (ok) out.push(f);
  }
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** The rows of a filtered list the table shows after `pages` presses of "Show more" (0: the first page). */
export function flagsPage<T>(
  matching: readonly T[],
  pages: number,
  perPage = flagRowsPageMax,
): { rows: T[]; hidden: number } {
  const rows = matching.slice(0, perPage * (Math.max(0, pages) + 1));
  return { rows, hidden: matching.length - rows.length };
}

// ---- rollout -----------------------------------------------------------------------------------

export function rolloutSum(entries: readonly RolloutEntry[]): number {
  return entries.reduce((n, e) => n + e.weight, 0);
}

/** What is wrong with a rollout before it is sent, in the API's words; undefined when fine or empty. */
export function rolloutProblem(entries: readonly RolloutEntry[], variationKeys: readonly string[]): string | undefined {
  if (entries.length === 0) return undefined;
  for (const [i, e] of entries.entries()) {
    if (!Number.isSafeInteger(e.weight) || e.weight < 0)
      return `rollout[${i}].weight: must be a non-negative integer (got ${e.weight})`;
    if (!variationKeys.includes(e.variation))
      return `rollout[${i}].variation: no variation ${JSON.stringify(e.variation)}`;
  }
  const sum = rolloutSum(entries);
  if (sum !== rolloutTotal) return `rollout: weights must sum to ${rolloutTotal} (got ${sum})`;
  return undefined;
}

/** A weight as a percentage with up to 3 decimals (30000 → "30"). */
export function weightToPercent(weight: number): string {
  return String(Math.round((weight / rolloutTotal) * 100 * 1000) / 1000);
}

/** A percentage typed by a user → a weight (integer share of 100000); NaN when not a number in 0..100. */
export function percentToWeight(text: string): number {
  const p = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(p) || p < 0 || p > 100) return Number.NaN;
  return Math.round(p * (rolloutTotal / 100));
}

/** One variation's range on the ruler, as fractions of [0, 1). */
export interface RulerSpan {
  variation: string;
  start: number;
  end: number;
}

/** The rollout laid out on [0, 1): each entry's span in order (the walk evaluation makes). */
export function rulerSpans(entries: readonly RolloutEntry[]): RulerSpan[] {
  const spans: RulerSpan[] = [];
  let at = 0;
  for (const e of entries) {
    const end = at + e.weight / rolloutTotal;
    spans.push({ variation: e.variation, start: at, end });
    at = end;
  }
  return spans;
}

/**
 * The entry a bucket falls in, the evaluator's rule: the first whose running sum exceeds the
 * bucket, else the last (rounding). -1 for an empty rollout.
 */
export function spanOfBucket(entries: readonly RolloutEntry[], bucket: number): number {
  if (entries.length === 0) return -1;
  let sum = 0;
  for (const [i, e] of entries.entries()) {
    sum += e.weight / rolloutTotal;
    if (bucket < sum) return i;
  }
  return entries.length - 1;
}

/** 0xFFFFFFFFFFFFFFF: LaunchDarkly's bucket scale (15 hex digits). */
const longScale = 0xfffffffffffffff;

/** The bucket in [0, 1] from a SHA-1 hex digest (its first 15 hex digits over the scale). */
export function bucketFromSha1Hex(hex: string): number {
  return parseInt(hex.substring(0, 15), 16) / longScale;
}

/** The hash input for a context's bucket, or undefined when the attribute has no bucketable value (bucket 0). */
export function bucketHashInput(
  flag: Pick<Flag, 'key' | 'seed' | 'bucketBy'>,
  context: Record<string, unknown>,
): string | undefined {
  const v = context[flag.bucketBy ?? 'key'];
  let s: string | undefined;
  if (typeof v === 'string') s = v;
  else if (typeof v === 'number' && Number.isInteger(v)) s = String(v);
  if (s === undefined) return undefined;
  return flag.seed === undefined ? `${flag.key}.${flag.key}.${s}` : `${flag.seed}.${s}`;
}

// ---- audit diff --------------------------------------------------------------------------------

export interface DiffEntry {
  path: string;
  kind: 'added' | 'removed' | 'changed';
  before?: unknown;
  after?: unknown;
}

/** Fields every write changes: left out of diffs (they say nothing about the change). */
const diffIgnored = new Set(['version', 'updatedAt', 'createdAt']);

/**
 * The leaf-level differences between two JSON values, as `a.b[2].c` paths, at most `max` entries
 * (then a last entry says how many more were cut).
 */
export function diffJson(before: unknown, after: unknown, max = diffEntriesMax): DiffEntry[] {
  const out: DiffEntry[] = [];
  let cut = 0;
  const push = (e: DiffEntry): void => {
    if (out.length < max) out.push(e);
    else cut++;
  };
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const walk = (a: unknown, b: unknown, path: string, top: boolean): void => {
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        const p = `${path}[${i}]`;
        if (i >= a.length) push({ path: p, kind: 'added', after: b[i] });
        else if (i >= b.length) push({ path: p, kind: 'removed', before: a[i] });
        else walk(a[i], b[i], p, false);
      }
      return;
    }
    if (isObj(a) && isObj(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const k of keys) {
        if (top && diffIgnored.has(k)) continue;
        const p = path === '' ? k : `${path}.${k}`;
        if (!(k in a)) push({ path: p, kind: 'added', after: b[k] });
        else if (!(k in b)) push({ path: p, kind: 'removed', before: a[k] });
        else walk(a[k], b[k], p, false);
      }
      return;
    }
    if (JSON.stringify(a) !== JSON.stringify(b))
      push({ path: path === '' ? '(value)' : path, kind: 'changed', before: a, after: b });
  };
  if (before === null || before === undefined) {
    if (after !== null && after !== undefined) push({ path: '(created)', kind: 'added', after });
  } else if (after === null || after === undefined) push({ path: '(deleted)', kind: 'removed', before });
  else walk(before, after, '', true);
  if (cut > 0) out.push({ path: `(${cut} more changes not shown)`, kind: 'changed' });
  return out;
}

/** A value in a diff line, short. */
export function shortJson(v: unknown, charsMax = 80): string {
  const s = v === undefined ? '' : JSON.stringify(v);
  return s.length > charsMax ? `${s.slice(0, charsMax - 1)}…` : s;
}

// ---- errors and inputs -------------------------------------------------------------------------

/**
 * The field an API validation error names: the API writes `rules[0].clauses[1].op: ...`,
 * `rollout: ...`, `variations[2].value: ...`. Undefined when the message names no field.
 */
export function errorField(message: string): string | undefined {
  const m = /^([A-Za-z][A-Za-z0-9]*(?:\[\d+\]|\.[A-Za-z][A-Za-z0-9]*)*):\s/.exec(message);
  return m ? m[1] : undefined;
}

/**
 * The form field an error belongs beside: the longest of `fields` that is the error's field or a
 * prefix of it (`rules[0].clauses[1].values[0]` is shown beside `rules[0].clauses[1].values`).
 */
export function fieldForError(message: string, fields: readonly string[]): string | undefined {
  const f = errorField(message);
  if (f === undefined) return undefined;
  let best: string | undefined;
  for (const c of fields) {
    const prefix = f === c || f.startsWith(`${c}[`) || f.startsWith(`${c}.`);
    if (prefix && (best === undefined || c.length > best.length)) best = c;
  }
  return best;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A JSON text typed by a user; the error names the line and column when JSON.parse gives a position. */
export function parseJsonText(text: string): Parsed<JsonValue> {
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const pos = /position (\d+)/.exec(msg);
    if (pos) {
      const before = text.slice(0, Number(pos[1]));
      const line = before.split('\n').length;
      const col = Number(pos[1]) - before.lastIndexOf('\n');
      return { ok: false, error: `invalid JSON at line ${line}, column ${col}: ${msg}` };
    }
    return { ok: false, error: `invalid JSON: ${msg}` };
  }
}

/** A variation value typed in the editor, converted to the flag's type. */
export function parseVariationValue(type: Flag['type'], text: string): Parsed<JsonValue> {
  switch (type) {
    case 'boolean':
      if (text === 'true' || text === 'false') return { ok: true, value: text === 'true' };
      return { ok: false, error: 'must be true or false' };
    case 'integer': {
      const n = Number(text.trim());
      if (text.trim() === '' || !Number.isSafeInteger(n))
        return { ok: false, error: `must be an integer (got ${JSON.stringify(text)})` };
      return { ok: true, value: n };
    }
    case 'string':
      return { ok: true, value: text };
    case 'json':
      return parseJsonText(text);
  }
}

/** A variation value shown in the editor's text box. */
export function variationText(type: Flag['type'], v: JsonValue): string {
  if (type === 'string' && typeof v === 'string') return v;
  return type === 'json' ? JSON.stringify(v, null, 2) : JSON.stringify(v);
}

/** The debugger's context: a flat JSON object. */
export function parseContext(text: string): Parsed<Record<string, unknown>> {
  const p = parseJsonText(text);
  if (!p.ok) return p;
  if (typeof p.value !== 'object' || p.value === null || Array.isArray(p.value))
    return { ok: false, error: 'the context must be a JSON object, e.g. {"key": "user-1"}' };
  return { ok: true, value: p.value as Record<string, unknown> };
}

/** Recent contexts, newest first, without duplicates, at most recentContextsMax. */
export function rememberContext(recent: readonly string[], text: string): string[] {
  const compact = JSON.stringify(JSON.parse(text));
  return [compact, ...recent.filter((r) => r !== compact)].slice(0, recentContextsMax);
}

/** Comma- or newline-separated list typed by a user → its trimmed non-empty items. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** When to refresh an access token that lives `expiresInSec` from now. */
export function refreshDelayMs(expiresInSec: number): number {
  return Math.max(tokenRefreshMinDelayMs, expiresInSec * 1000 - tokenRefreshLeadMs);
}
