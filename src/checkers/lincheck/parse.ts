/**
 * Parsers from Jepsen's history formats to the checker's generic history: the jepsen.util log
 * lines of the etcd tests (`INFO  jepsen.util - 3 :ok :cas [1 2]`) and EDN histories, read with
 * a real EDN reader (edn.ts): one map per line (`{:process 0, :type :ok, :f :get, :key "k",
 * :value "x"}`), Jepsen 0.3's `#jepsen.history.Op{...}` records, or one vector (or list) of them
 * for the whole file. Values keep their EDN types (value.ts). Parsing is total: anything it cannot
 * read is a returned error with its line, never a throw and never a skipped line. No checking here.
 *
 * Only client operations are kept: an operation whose :process is a keyword (Jepsen's :nemesis)
 * is not part of the client history and is counted in `skipped`, as are the jepsen.util log's
 * lines from other loggers.
 */
import type { CasInput, History, OpKind, OpStatus } from './history.js';
import { readForm, scanEdn, type EdnSpan } from './edn.js';
import { isSequence, showValue, valueKey, type Value } from './value.js';

export type ParseResult =
  | { ok: true; history: History /** Records or lines that are not client operations. */; skipped: number }
  | {
      ok: false /** 1-based line of the problem. */;
      line: number;
      reason: string /** `line N: reason`. */;
      error: string;
    };

interface MutableOp {
  client: string | number;
  key: string;
  kind: OpKind;
  input: Value;
  output: Value;
  invokeTime: number;
  completeTime: number | undefined;
  status: OpStatus;
}

/** Jepsen's :f names, with the kv workload's get/put as read/write. */
const kindOfF: Readonly<Record<string, OpKind>> = {
  read: 'read',
  get: 'read',
  write: 'write',
  put: 'write',
  delete: 'delete',
  cas: 'cas',
  append: 'append',
};

const typeOfT: Readonly<Record<string, 'invoke' | OpStatus>> = {
  invoke: 'invoke',
  ok: 'ok',
  fail: 'fail',
  info: 'info',
};

/** The tag of Jepsen 0.3's operation records. */
export const jepsenOpTag = 'jepsen.history.Op';

function failure(line: number, reason: string): ParseResult {
  return { ok: false, line, reason, error: `line ${line}: ${reason}` };
}

/**
 * Picks the format from the first character that is not blank, a comma or an EDN comment:
 * `{`, `[`, `(` or `#` is EDN, anything else the jepsen.util log. A leading byte-order mark is
 * ignored. Text with no characters at all is an empty history.
 */
export function parseHistory(text: string): ParseResult {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const first = /^(?:[\s,]|;[^\n]*)*(\S)/.exec(body);
  if (first === null) return { ok: true, history: [], skipped: 0 };
  return '{[(#'.includes(first[1] as string) ? parseEdnHistory(body) : parseJepsenLog(body);
}

/**
 * Pairs invocations with completions per process (Jepsen: a process has at most one operation
 * outstanding). An invocation never completed is `info`: its outcome is unknown.
 */
class HistoryBuilder {
  readonly ops: MutableOp[] = [];
  private readonly pending = new Map<string | number, number>();
  /** The operation the last successful invoke or complete was about. */
  lastIndex = -1;

  invoke(client: string | number, key: string, kind: OpKind, value: Value, time: number): string | undefined {
    let input: Value = null;
    if (kind === 'cas') {
      if (!isSequence(value) || value.length !== 2) return `a cas takes [expected new], not ${showValue(value)}`;
      input = [value[0] as Value, value[1] as Value] satisfies CasInput;
    } else if (kind === 'write' || kind === 'append') {
      input = value;
    }
    this.lastIndex = this.ops.length;
    this.pending.set(client, this.ops.length);
    this.ops.push({
      client,
      key,
      kind,
      input,
      output: null,
      invokeTime: time,
      completeTime: undefined,
      status: 'info',
    });
    return undefined;
  }

  complete(client: string | number, kind: OpKind, status: OpStatus, value: Value, time: number): string | undefined {
    const index = this.pending.get(client);
    if (index === undefined) return `process ${String(client)} completes an operation it never invoked`;
    const op = this.ops[index] as MutableOp;
    if (op.kind !== kind) return `process ${String(client)} invoked ${op.kind} but completes ${kind}`;
    this.pending.delete(client);
    this.lastIndex = index;
    op.status = status;
    if (status === 'ok') {
      op.completeTime = time;
      // A read returns its value; an ok cas swapped (a failed compare is reported as :fail).
      if (kind === 'read') op.output = value;
      else if (kind === 'cas') op.output = true;
    }
    return undefined;
  }
}

/** Integers of at most 15 digits: always exact as doubles. */
const smallInteger = /^-?(?:0|[1-9]\d{0,14})$/;
const smallIntegerPair = /^\[(-?(?:0|[1-9]\d{0,14}))[ ,]+(-?(?:0|[1-9]\d{0,14}))\]$/;

/**
 * A jepsen.util log's value field as a typed value. nil, small integers, pairs of them and plain
 * keywords (everything in the etcd logs) are read directly, exactly as the EDN reader would read
 * them, because the reader costs far more than these few patterns; anything else goes to it.
 */
function readValueText(text: string): { ok: true; value: Value } | { ok: false; error: string } {
  if (text === '' || text === 'nil') return { ok: true, value: null };
  if (smallInteger.test(text)) return { ok: true, value: Number(text) };
  const pair = smallIntegerPair.exec(text);
  if (pair !== null) return { ok: true, value: [Number(pair[1]), Number(pair[2])] };
  if (/^:[A-Za-z][\w.*+!?-]*$/.test(text)) return { ok: true, value: { keyword: text.slice(1) } };
  const scanned = scanEdn(text);
  if (!scanned.ok) return { ok: false, error: scanned.error.replace(/ at line 1 column/, ' at column') };
  const forms = scanned.scan.forms;
  if (forms.length !== 1) return { ok: false, error: `expected one EDN value, found ${forms.length}` };
  return readForm(text, forms[0] as EdnSpan, scanned.scan.bigIntegerEnds);
}

/**
 * `INFO  jepsen.util - <process> <type> <f> <value>`; lines from other loggers, and operations of
 * a keyword process (`:nemesis`), are skipped and counted. Times are line numbers (0-based).
 */
export function parseJepsenLog(text: string): ParseResult {
  const builder = new HistoryBuilder();
  const lines = text.split('\n');
  let skipped = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const at = line.indexOf('jepsen.util - ');
    if (at < 0) {
      if (line.trim() !== '') skipped++;
      continue;
    }
    const fields = /^(\S+)\s+:(\w+)\s+:([\w-]+)\s*(.*?)\s*$/.exec(line.slice(at + 'jepsen.util - '.length));
    const fail = (why: string): ParseResult => failure(i + 1, `${why}: ${line.trim()}`);
    if (fields === null) return fail('expected "<process> :<type> :<f> <value>"');
    const [, procText, typeText, fText, valueText] = fields as unknown as [string, string, string, string, string];
    if (procText.startsWith(':')) {
      skipped++;
      continue;
    }
    const type = typeOfT[typeText];
    const kind = kindOfF[fText];
    if (type === undefined) return fail(`unknown type :${typeText}`);
    if (kind === undefined) return fail(`unknown operation :${fText}`);
    const value = readValueText(valueText);
    if (!value.ok) return fail(value.error);
    const client = /^\d+$/.test(procText) ? Number(procText) : procText;
    const err =
      type === 'invoke'
        ? builder.invoke(client, '', kind, value.value, i)
        : builder.complete(client, kind, type, value.value, i);
    if (err !== undefined) return fail(err);
  }
  return { ok: true, history: builder.ops, skipped };
}

/** One operation record's fields (undefined: absent), as read from a map or a #jepsen.history.Op. */
interface OpRecord {
  readonly line: number;
  readonly process: Value | undefined;
  readonly type: Value | undefined;
  readonly f: Value | undefined;
  readonly key: Value | undefined;
  readonly value: Value | undefined;
  readonly time: Value | undefined;
}

/** A record form's fields by keyword name, or why it is not a record. */
function recordFields(value: Value): Map<string, Value> | string {
  let map: Value = value;
  if (typeof value === 'object' && value !== null && !isSequence(value) && 'tag' in value) {
    if (value.tag !== jepsenOpTag) return `expected a map or #${jepsenOpTag}{...}, not a #${value.tag} value`;
    map = value.value;
  }
  if (typeof map !== 'object' || map === null || isSequence(map) || !('map' in map)) {
    return `expected an operation map {...} or #${jepsenOpTag}{...}, not ${showValue(map).slice(0, 60)}`;
  }
  const fields = new Map<string, Value>();
  for (const [k, v] of map.map) {
    if (typeof k !== 'object' || k === null || !('keyword' in k))
      return `an operation's keys must be keywords, not ${showValue(k)}`;
    fields.set(k.keyword, v);
  }
  return fields;
}

const keywordName = (v: Value | undefined): string | undefined =>
  typeof v === 'object' && v !== null && 'keyword' in v ? v.keyword : undefined;

const C_TAB = 9;
const C_CR = 13;
const C_SPACE = 32;
const C_QUOTE = 34;
const C_COMMA = 44;
const C_MINUS = 45;
const C_0 = 48;
const C_9 = 57;
const C_COLON = 58;
const C_BACKSLASH = 92;
const C_OPEN_BRACE = 123;
const C_CLOSE_BRACE = 125;
const C_LF = 10;

const isSeparator = (c: number): boolean => c === C_SPACE || c === C_COMMA || c === C_TAB || c === C_CR;
const isNameStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isNameChar = (c: number): boolean => isNameStart(c) || (c >= C_0 && c <= C_9) || c === 95 || c === C_MINUS;
/** A token ends at a separator, the map's closing brace or the end of the line. */
const endsToken = (c: number): boolean => isSeparator(c) || c === C_CLOSE_BRACE || c === C_LF || Number.isNaN(c);

/**
 * The line Jepsen's kv histories are made of, `{:process P, :type :T, :f :F, :key "K", :value V}`
 * with V nil, a string without escapes or an integer of at most 15 digits, and its line break.
 */
const usualLine = new RegExp(
  String.raw`\{:process (0|[1-9]\d{0,14}), :type :(invoke|ok|fail|info), :f :([a-z]+), ` +
    String.raw`:key "([^"\\\n]*)", :value (?:(nil)|"([^"\\\n]*)"|(0|-?[1-9]\d{0,14}))\}[ \t,\r]*(?:\n|$)`,
  'y',
);

/**
 * The fast path for the common shape, one flat operation map per line whose values are nil,
 * booleans, integers of at most 15 digits, plain keywords (letters, digits, `_`, `-`) and strings
 * without escapes: read straight from the characters into the history the general reader would
 * build from the same text. Anything else (a vector, a comment, an escape, a duplicate key, a form
 * across lines, a record the history refuses) makes it answer undefined, and the whole text goes
 * to the general reader, which reports any error in its own order.
 */
function readFlatHistory(text: string): ParseResult | undefined {
  const ops = new OpsBuilder();
  let skipped = 0;
  let clientRecords = 0;
  // Each operation's :time at its invocation and at its completion, NaN when absent; used
  // instead of line numbers when every client record has one.
  let timedRecords = 0;
  const invokeTimes: number[] = [];
  const completeTimes: number[] = [];
  const keys: string[] = [];
  const n = text.length;
  let line = 0;
  let i = 0;
  while (i < n) {
    line++;
    let process: Value | undefined;
    let type: Value | undefined;
    let f: Value | undefined;
    let key: Value | undefined;
    let value: Value | undefined;
    let time: Value | undefined;
    // The usual line, whole, by one regular expression (native code from the first lines on).
    usualLine.lastIndex = i;
    const m = usualLine.exec(text);
    if (m !== null) {
      process = Number(m[1]);
      type = commonKeywords.get(m[2] as string);
      f = commonKeywords.get(m[3] as string) ?? { keyword: m[3] as string };
      key = m[4];
      value = m[5] !== undefined ? null : m[6] !== undefined ? m[6] : Number(m[7]);
      i = usualLine.lastIndex;
    } else {
      let c = text.charCodeAt(i);
      while (isSeparator(c)) c = text.charCodeAt(++i);
      if (c === C_LF) {
        i++;
        continue;
      }
      if (i >= n) break;
      if (c !== C_OPEN_BRACE) return undefined;
      i++;
      let others: string[] | undefined;
      for (;;) {
        c = text.charCodeAt(i);
        while (isSeparator(c)) c = text.charCodeAt(++i);
        if (c === C_CLOSE_BRACE) {
          i++;
          break;
        }
        // A keyword key, then at least one separator.
        if (c !== C_COLON || !isNameStart(text.charCodeAt(i + 1))) return undefined;
        const keyStart = i + 1;
        i += 2;
        while (isNameChar(text.charCodeAt(i))) i++;
        const keyEnd = i;
        if (!isSeparator(text.charCodeAt(i))) return undefined;
        c = text.charCodeAt(++i);
        while (isSeparator(c)) c = text.charCodeAt(++i);
        const len = keyEnd - keyStart;
        // :key strings repeat on every line: shared, not sliced out each time.
        const keyLike = len === 3 && text.startsWith('key', keyStart);
        let v: Value;
        if (c === C_QUOTE) {
          const start = i + 1;
          let j = start;
          let d = text.charCodeAt(j);
          while (d !== C_QUOTE) {
            if (d === C_BACKSLASH || d === C_LF || Number.isNaN(d)) return undefined;
            d = text.charCodeAt(++j);
          }
          v = keyLike ? sharedText(keys, text, start, j) : text.slice(start, j);
          i = j + 1;
        } else if (c === C_COLON) {
          if (!isNameStart(text.charCodeAt(i + 1))) return undefined;
          const start = i + 1;
          i += 2;
          while (isNameChar(text.charCodeAt(i))) i++;
          v = keywordValue(text, start, i);
        } else if (c === C_MINUS || (c >= C_0 && c <= C_9)) {
          const start = i;
          if (c === C_MINUS) i++;
          const first = i;
          while (text.charCodeAt(i) >= C_0 && text.charCodeAt(i) <= C_9) i++;
          const digits = i - first;
          // 0, or 1-15 digits without a leading zero; -0 and the rest go to the general reader.
          if (digits === 0 || digits > 15 || (text.charCodeAt(first) === C_0 && (digits > 1 || c === C_MINUS)))
            return undefined;
          v = Number(text.slice(start, i));
        } else if (text.startsWith('nil', i)) {
          v = null;
          i += 3;
        } else if (text.startsWith('true', i)) {
          v = true;
          i += 4;
        } else if (text.startsWith('false', i)) {
          v = false;
          i += 5;
        } else {
          return undefined;
        }
        if (!endsToken(text.charCodeAt(i)) || text.charCodeAt(i) === C_LF) return undefined;
        // The key, by length first (no string is built for the six known names); a repeat is an error.
        if (len === 7 && text.startsWith('process', keyStart)) {
          if (process !== undefined) return undefined;
          process = v;
        } else if (len === 4 && text.startsWith('type', keyStart)) {
          if (type !== undefined) return undefined;
          type = v;
        } else if (len === 1 && text.charCodeAt(keyStart) === 102 /* f */) {
          if (f !== undefined) return undefined;
          f = v;
        } else if (len === 3 && text.startsWith('key', keyStart)) {
          if (key !== undefined) return undefined;
          key = v;
        } else if (len === 5 && text.startsWith('value', keyStart)) {
          if (value !== undefined) return undefined;
          value = v;
        } else if (len === 4 && text.startsWith('time', keyStart)) {
          if (time !== undefined) return undefined;
          time = v;
        } else {
          const name = text.slice(keyStart, keyEnd);
          others ??= [];
          if (others.includes(name)) return undefined;
          others.push(name);
        }
      }
      // Only separators may follow the map on its line.
      c = text.charCodeAt(i);
      while (isSeparator(c)) c = text.charCodeAt(++i);
      if (i < n && c !== C_LF) return undefined;
      i++;
    }
    // Jepsen's client operations are those of integer processes; :nemesis and its like are not.
    if (keywordName(process) !== undefined) {
      skipped++;
      continue;
    }
    clientRecords++;
    // A problem in the records: the general reader finds it again and reports it in its order.
    if (ops.add(process, type, f, key, value, line - 1) !== undefined) return undefined;
    const t = typeof time === 'number' ? time : NaN;
    if (typeof time === 'number') timedRecords++;
    const at = ops.builder.lastIndex;
    if (type !== undefined && keywordName(type) === 'invoke') invokeTimes[at] = t;
    else completeTimes[at] = t;
  }
  const history = ops.builder.ops;
  if (clientRecords > 0 && timedRecords === clientRecords) {
    for (let k = 0; k < history.length; k++) {
      const op = history[k] as MutableOp;
      op.invokeTime = invokeTimes[k] as number;
      if (op.completeTime !== undefined) op.completeTime = completeTimes[k] as number;
    }
  }
  return { ok: true, history, skipped };
}

/** The keywords every history repeats, one shared value each rather than one per operation. */
const commonKeywords: ReadonlyMap<string, Value> = new Map(
  ['invoke', 'ok', 'fail', 'info', 'read', 'write', 'cas', 'get', 'put', 'append', 'delete', 'nemesis'].map((k) => [
    k,
    Object.freeze({ keyword: k }),
  ]),
);

function keywordValue(text: string, start: number, end: number): Value {
  const name = text.slice(start, end);
  return commonKeywords.get(name) ?? { keyword: name };
}

/** `text[start, end)` as one of the strings in `seen` when it is there (at most 64 are kept). */
function sharedText(seen: string[], text: string, start: number, end: number): string {
  const len = end - start;
  for (const k of seen) if (k.length === len && text.startsWith(k, start)) return k;
  const k = text.slice(start, end);
  if (seen.length < 64) seen.push(k);
  return k;
}

/**
 * EDN operations with :process, :type, :f, :value and optionally :key (default the single key
 * "") and :time: one map per line, Jepsen 0.3's `#jepsen.history.Op{...}` records, or one vector
 * or list of either for the whole file. Times are the operations' :time when every client
 * operation has one, otherwise their order in the file (their 0-based line numbers when each
 * starts on its own line).
 */
export function parseEdnHistory(text: string): ParseResult {
  const fast = readFlatHistory(text);
  if (fast !== undefined) return fast;
  const scanned = scanEdn(text);
  if (!scanned.ok) {
    const hint = /^\s*\{\s*"/.test(text) ? ' (this looks like JSON; lincheck reads EDN maps with keyword keys)' : '';
    return failure(scanned.line, `${scanned.error}${hint}`);
  }
  const { forms, bigIntegerEnds } = scanned.scan;
  const only = forms[0];
  const spans: readonly EdnSpan[] =
    forms.length === 1 && only !== undefined && only.elements !== null ? only.elements : forms;
  const records: OpRecord[] = [];
  let skipped = 0;
  for (const span of spans) {
    const read = readForm(text, span, bigIntegerEnds);
    if (!read.ok) return failure(span.line, read.error);
    const fields = recordFields(read.value);
    if (typeof fields === 'string') return failure(span.line, fields);
    // Jepsen's client operations are those of integer processes; :nemesis and its like are not.
    if (keywordName(fields.get('process')) !== undefined) {
      skipped++;
      continue;
    }
    records.push({
      line: span.line,
      process: fields.get('process'),
      type: fields.get('type'),
      f: fields.get('f'),
      key: fields.get('key'),
      value: fields.get('value'),
      time: fields.get('time'),
    });
  }
  const allTimed = records.length > 0 && records.every((r) => typeof r.time === 'number');
  const ownLines = new Set(records.map((r) => r.line)).size === records.length;
  const ops = new OpsBuilder();
  for (let k = 0; k < records.length; k++) {
    const r = records[k] as OpRecord;
    const time = allTimed ? (r.time as number) : ownLines ? r.line - 1 : k;
    const err = ops.add(r.process, r.type, r.f, r.key, r.value, time);
    if (err !== undefined) return failure(r.line, err);
  }
  return { ok: true, history: ops.builder.ops, skipped };
}

/** Client records, one at a time, into a history: each record's fields checked, keys told apart. */
class OpsBuilder {
  readonly builder = new HistoryBuilder();
  private readonly keyIds = new Map<string, string>();

  /** Adds one client record (fields undefined when absent); why it cannot be, if it cannot. */
  add(
    proc: Value | undefined,
    typeValue: Value | undefined,
    fValue: Value | undefined,
    keyValue: Value | undefined,
    recordValue: Value | undefined,
    time: number,
  ): string | undefined {
    const typeName = keywordName(typeValue);
    const fName = keywordName(fValue);
    if (proc === undefined) return 'missing :process';
    if (!(typeof proc === 'number' && Number.isSafeInteger(proc)) && typeof proc !== 'string')
      return `:process must be an integer (or a keyword for a non-client such as :nemesis), not ${showValue(proc)}`;
    if (typeName === undefined) return typeValue !== undefined ? ':type must be a keyword' : 'missing :type';
    if (fName === undefined) return fValue !== undefined ? ':f must be a keyword' : 'missing :f';
    const type = typeOfT[typeName];
    const kind = kindOfF[fName];
    if (type === undefined) return `unknown type :${typeName}`;
    if (kind === undefined) return `unknown operation :${fName}`;
    let key = '';
    if (keyValue !== undefined) {
      key = typeof keyValue === 'string' ? keyValue : showValue(keyValue);
      // Every string key is told apart by its text alone; another value by its canonical text.
      const id = typeof keyValue === 'string' ? 's' : valueKey(keyValue);
      const before = this.keyIds.get(key);
      if (before !== undefined && before !== id)
        return `two different keys both read as ${JSON.stringify(key)} (a string and another type)`;
      if (before === undefined) this.keyIds.set(key, id);
    }
    const value = recordValue ?? null;
    return type === 'invoke'
      ? this.builder.invoke(proc, key, kind, value, time)
      : this.builder.complete(proc, kind, type, value, time);
  }
}
