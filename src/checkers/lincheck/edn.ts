/**
 * Strict EDN reading for Jepsen histories: the edn-data package builds the values, and a scan
 * of the text first checks what edn-data lets pass and says where each top-level form (and each
 * element of a top-level vector or list) starts. It reads text into typed values (value.ts) and
 * knows nothing of operations; parse.ts turns the forms into a history.
 *
 * Why the scan: edn-data 1.2.2 accepts `[1 2)` as a list, drops the odd form of `{:a}`, ignores a
 * stray `}`, stops reading at a stray `)`, returns null for an unterminated string, mangles the
 * character literal `\(`, reads `07` and `1.2.3` as symbols, rounds integers beyond 2^53 without
 * a word, and reports no positions. The scan refuses all of these with a line and column (an
 * integer beyond 2^53 is read exactly, as if written with EDN's N suffix).
 */
import { parseEDNString } from 'edn-data';
import { showValue, valueKey, type Value } from './value.js';

/** Where a form is in the text: [start, end) offsets, its 1-based line and column. */
export interface EdnSpan {
  readonly start: number;
  readonly end: number;
  readonly line: number;
}

/** A top-level form; for a vector or list, its elements' spans too (a history as one vector). */
export interface EdnTopForm extends EdnSpan {
  readonly elements: readonly EdnSpan[] | null;
}

export interface EdnScan {
  readonly forms: readonly EdnTopForm[];
  /** End offsets of integer literals beyond 2^53 written without N: read exactly as bigints. */
  readonly bigIntegerEnds: readonly number[];
}

export type EdnScanResult = { ok: true; scan: EdnScan } | { ok: false; line: number; error: string };

const SPACE = 32;
const TAB = 9;
const LF = 10;
const CR = 13;
const COMMA = 44;
const QUOTE = 34;
const SEMICOLON = 59;
const BACKSLASH = 92;
const HASH = 35;
const OPEN_PAREN = 40;
const CLOSE_PAREN = 41;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
/**
 * Deepest nesting of collections and #tags the reader takes: a Jepsen operation is a map holding
 * values a few levels deep; far deeper text is refused before any recursive step could overflow.
 */
export const ednNestingDepthMax = 64;

/** A set's opener (`#{`) in the scan's frame stack; closes with `}` like a map. */
const OPEN_SET = -1;

/** Whitespace as edn-data knows it (EDN also allows form feed; edn-data would read it as a symbol). */
const isSpace = (c: number): boolean => c === SPACE || c === COMMA || c === LF || c === TAB || c === CR;
/** Characters that end a token (as in edn-data's reader). */
const isDelimiter = (c: number): boolean =>
  isSpace(c) ||
  c === QUOTE ||
  c === SEMICOLON ||
  c === OPEN_PAREN ||
  c === CLOSE_PAREN ||
  c === OPEN_BRACKET ||
  c === CLOSE_BRACKET ||
  c === OPEN_BRACE ||
  c === CLOSE_BRACE;

const intPattern = /^[-+]?(0|[1-9][0-9]*)$/;
const bigintPattern = /^[-+]?(0|[1-9][0-9]*)N$/;
/** edn-data's float syntax (M, BigDecimal, is read as a double). */
const floatPattern = /^[-+]?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?(0|[1-9][0-9]*))?M?$/;
const symbolPattern = /^(?:[A-Za-z*!_?$%&=<>\/]|[-+.](?![0-9]))[A-Za-z0-9*!_?$%&=<>.+\-\/:#']*$/;
const keywordPattern = /^:[A-Za-z0-9*!_?$%&=<>.+\-\/'][A-Za-z0-9*!_?$%&=<>.+\-\/:#']*$/;
const tagPattern = /^[A-Za-z][A-Za-z0-9*!_?$%&=<>.+\-\/:#']*$/;
const namedChars = new Set(['space', 'newline', 'return', 'tab']);
const stringEscapes = new Set(['t', 'r', 'n', 'b', 'f', '\\', '"']);

class ScanError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

interface Frame {
  readonly open: number;
  readonly start: number;
  readonly line: number;
  readonly column: number;
  count: number;
}

interface Prefix {
  readonly depth: number;
  readonly discard: boolean;
  readonly start: number;
  readonly line: number;
}

/**
 * Checks `text` as a sequence of EDN forms and returns where the top-level ones are. Refuses,
 * with a line and column, anything edn-data would misread (see the module comment).
 */
export function scanEdn(text: string): EdnScanResult {
  const forms: EdnTopForm[] = [];
  const bigIntegerEnds: number[] = [];
  const frames: Frame[] = [];
  const prefixes: Prefix[] = [];
  let elements: EdnSpan[] | null = null;
  let line = 1;
  let lineStart = 0;
  const n = text.length;
  const fail = (at: number, message: string): never => {
    throw new ScanError(line, `${message} at line ${line} column ${at - lineStart + 1}`);
  };

  /** A form ended at `end`: apply pending #tags, drop it after a #_, count it otherwise. */
  const formDone = (start: number, end: number, startLine: number): void => {
    const depth = frames.length;
    let spanStart = start;
    let spanLine = startLine;
    while (prefixes.length > 0 && (prefixes[prefixes.length - 1] as Prefix).depth === depth) {
      const p = prefixes.pop() as Prefix;
      if (p.discard) {
        if (depth === 0) elements = null;
        return; // `#_ form` reads as nothing; earlier #tags wait for the next form
      }
      spanStart = p.start;
      spanLine = p.line;
    }
    if (depth === 0) {
      forms.push({ start: spanStart, end, line: spanLine, elements });
      elements = null;
      return;
    }
    const frame = frames[depth - 1] as Frame;
    frame.count++;
    if (depth === 1 && elements !== null) elements.push({ start: spanStart, end, line: spanLine });
  };
  const nest = (at: number): void => {
    if (frames.length + prefixes.length >= ednNestingDepthMax)
      fail(at, `nested deeper than ${ednNestingDepthMax} levels (collections and #tags)`);
  };
  const openDescription = (f: Frame): string =>
    `${f.open === OPEN_SET ? '#{' : String.fromCharCode(f.open)} opened at line ${f.line} column ${f.column}`;

  try {
    let i = 0;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === LF) {
        line++;
        lineStart = ++i;
        continue;
      }
      if (isSpace(c)) {
        i++;
        continue;
      }
      if (c === SEMICOLON) {
        while (i < n && text.charCodeAt(i) !== LF) i++;
        continue;
      }
      if (c === QUOTE) {
        const start = i;
        const startLine = line;
        i++;
        for (;;) {
          if (i >= n) {
            line = startLine;
            fail(start, 'unterminated string');
          }
          const s = text.charCodeAt(i);
          if (s === QUOTE) break;
          if (s === LF) {
            line++;
            lineStart = i + 1;
          } else if (s === BACKSLASH) {
            const e = text[i + 1] ?? '';
            if (e === 'u') {
              if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail(i, 'a \\u escape takes four hex digits');
              i += 4;
            } else if (!stringEscapes.has(e)) {
              fail(i, `unknown string escape \\${e}`);
            }
            i++;
          }
          i++;
        }
        i++;
        formDone(start, i, startLine);
        continue;
      }
      if (c === OPEN_PAREN || c === OPEN_BRACKET || c === OPEN_BRACE) {
        nest(i);
        if (frames.length === 0 && c !== OPEN_BRACE) elements = [];
        frames.push({ open: c, start: i, line, column: i - lineStart + 1, count: 0 });
        i++;
        continue;
      }
      if (c === CLOSE_PAREN || c === CLOSE_BRACKET || c === CLOSE_BRACE) {
        const frame = frames[frames.length - 1];
        const want =
          frame === undefined
            ? -2
            : frame.open === OPEN_PAREN
              ? CLOSE_PAREN
              : frame.open === OPEN_BRACKET
                ? CLOSE_BRACKET
                : CLOSE_BRACE;
        if (frame === undefined) fail(i, `unmatched ${String.fromCharCode(c)}`);
        const f = frame as Frame;
        if (c !== want) fail(i, `${String.fromCharCode(c)} does not close the ${openDescription(f)}`);
        const last = prefixes[prefixes.length - 1];
        if (last !== undefined && last.depth === frames.length)
          fail(i, `${last.discard ? '#_' : 'a #tag'} with no form after it`);
        if (f.open === OPEN_BRACE && f.count % 2 !== 0)
          fail(i, `a map needs key-value pairs, but this one holds ${f.count} forms`);
        frames.pop();
        i++;
        formDone(f.start, i, f.line);
        continue;
      }
      if (c === HASH) {
        const next = text.charCodeAt(i + 1);
        nest(i);
        if (next === OPEN_BRACE) {
          frames.push({ open: OPEN_SET, start: i, line, column: i - lineStart + 1, count: 0 });
          i += 2;
          continue;
        }
        if (next === 95 /* _ */) {
          prefixes.push({ depth: frames.length, discard: true, start: i, line });
          i += 2;
          continue;
        }
        let end = i + 1;
        while (end < n && !isDelimiter(text.charCodeAt(end))) end++;
        const tag = text.slice(i + 1, end);
        if (next === HASH) fail(i, `${text.slice(i, end)} (symbolic values such as ##Inf and ##NaN) is not supported`);
        if (!tagPattern.test(tag) || tag.endsWith('#')) fail(i, `cannot read the tag #${tag}`);
        prefixes.push({ depth: frames.length, discard: false, start: i, line });
        i = end;
        continue;
      }
      // A token: a character literal, or nil/true/false, a number, a keyword or a symbol.
      const start = i;
      let end = c === BACKSLASH ? i + 2 : i + 1;
      while (end < n && !isDelimiter(text.charCodeAt(end))) end++;
      const token = text.slice(start, Math.min(end, n));
      if (c === BACKSLASH) {
        const name = token.slice(1);
        const plain = name.length === 1 && !isDelimiter(name.charCodeAt(0));
        if (!plain && !namedChars.has(name) && !/^u[0-9a-fA-F]{4}$/.test(name))
          fail(i, `cannot read the character literal ${token}`);
      } else if (token === 'nil' || token === 'true' || token === 'false' || bigintPattern.test(token)) {
        // fine as it is
      } else if (intPattern.test(token)) {
        if (!Number.isSafeInteger(Number(token))) bigIntegerEnds.push(end);
      } else if (floatPattern.test(token)) {
        if (!Number.isFinite(Number(token.replace(/M$/, '')))) fail(i, `the number ${token} is out of range`);
      } else if (token.endsWith('#') || !(token.startsWith(':') ? keywordPattern : symbolPattern).test(token)) {
        const shown = token.length > 40 ? `${token.slice(0, 40)}...` : token;
        const code = token.charCodeAt(0);
        fail(
          i,
          code < 32 || code === 127
            ? `unexpected control character U+${code.toString(16).padStart(4, '0')}`
            : `cannot read ${JSON.stringify(shown)}`,
        );
      }
      i = end;
      formDone(start, end, line);
    }
    const open = frames[frames.length - 1];
    if (open !== undefined) {
      line = open.line;
      throw new ScanError(open.line, `the ${openDescription(open)} is never closed`);
    }
    const dangling = prefixes[prefixes.length - 1];
    if (dangling !== undefined) {
      line = dangling.line;
      throw new ScanError(
        dangling.line,
        `${dangling.discard ? '#_' : 'a #tag'} at line ${dangling.line} has no form after it`,
      );
    }
  } catch (e) {
    if (e instanceof ScanError) return { ok: false, line: e.line, error: e.message };
    throw e;
  }
  return { ok: true, scan: { forms, bigIntegerEnds } };
}

/** What edn-data returns with its default options (maps as pairs, keywords as {key}, ...). */
type Raw = unknown;

class ValueError extends Error {}

/** Keeps #inst as a tagged value (edn-data's default would make a Date, which compares by identity). */
const parseOptions = { tagHandlers: { inst: (val: unknown): unknown => ({ tag: 'inst', val }) } };

/**
 * The value of one form the scan found, as a typed value; an error (a duplicate map key, say)
 * is a message. `bigIntegerEnds` comes from the same scan.
 */
export function readForm(
  text: string,
  span: EdnSpan,
  bigIntegerEnds: readonly number[],
): { ok: true; value: Value } | { ok: false; error: string } {
  let src = text.slice(span.start, span.end);
  const big = bigIntegerEnds.filter((end) => end > span.start && end <= span.end);
  for (let k = big.length - 1; k >= 0; k--) {
    const at = (big[k] as number) - span.start;
    src = `${src.slice(0, at)}N${src.slice(at)}`;
  }
  try {
    return { ok: true, value: fromEdn(parseEDNString(src, parseOptions)) };
  } catch (e) {
    if (e instanceof ValueError) return { ok: false, error: e.message };
    // edn-data throws plain Errors (or TypeErrors) on input the scan should have refused.
    return { ok: false, error: `cannot read the form: ${e instanceof Error ? e.message : String(e)}` };
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/** edn-data's value as a typed value; refuses duplicate map keys and set elements, as EDN does. */
export function fromEdn(raw: Raw): Value {
  if (raw === null || typeof raw === 'boolean' || typeof raw === 'string') return raw;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw new ValueError(`the number ${raw} is out of range`);
    return raw;
  }
  if (typeof raw === 'bigint') {
    const n = Number(raw);
    return Number.isSafeInteger(n) ? n : { bigint: raw.toString() };
  }
  if (Array.isArray(raw)) return raw.map(fromEdn);
  if (isObject(raw)) {
    if (Array.isArray(raw.list)) return raw.list.map(fromEdn);
    if (Array.isArray(raw.map)) {
      const seen = new Set<string>();
      const map = (raw.map as Array<[Raw, Raw]>).map(([k, v]): [Value, Value] => {
        const key = fromEdn(k);
        // Keyword keys (every Jepsen record's) need no canonical text to be told apart.
        const id = typeof key === 'object' && key !== null && 'keyword' in key ? `:${key.keyword}` : valueKey(key);
        if (seen.has(id)) throw new ValueError(`the map has the key ${showValue(key)} twice`);
        seen.add(id);
        return [key, fromEdn(v)];
      });
      return { map };
    }
    if (Array.isArray(raw.set)) {
      const set = raw.set.map(fromEdn);
      if (new Set(set.map(valueKey)).size !== set.length) throw new ValueError('the set holds an element twice');
      return { set };
    }
    if (typeof raw.key === 'string') return { keyword: raw.key };
    if (typeof raw.sym === 'string') return { symbol: raw.sym };
    if (typeof raw.char === 'string') return { char: raw.char };
    if (typeof raw.tag === 'string' && 'val' in raw) return { tag: raw.tag, value: fromEdn(raw.val) };
  }
  throw new ValueError(`cannot represent ${String(raw)}`);
}
