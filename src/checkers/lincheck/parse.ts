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

  invoke(client: string | number, key: string, kind: OpKind, value: Value, time: number): string | undefined {
    let input: Value = null;
    if (kind === 'cas') {
      if (!isSequence(value) || value.length !== 2) return `a cas takes [expected new], not ${showValue(value)}`;
      input = [value[0] as Value, value[1] as Value] satisfies CasInput;
    } else if (kind === 'write' || kind === 'append') {
      input = value;
    }
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

interface RecordFields {
  readonly line: number;
  readonly fields: Map<string, Value>;
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

/**
 * EDN operations with :process, :type, :f, :value and optionally :key (default the single key
 * "") and :time: one map per line, Jepsen 0.3's `#jepsen.history.Op{...}` records, or one vector
 * or list of either for the whole file. Times are the operations' :time when every client
 * operation has one, otherwise their order in the file (their 0-based line numbers when each
 * starts on its own line).
 */
export function parseEdnHistory(text: string): ParseResult {
  const scanned = scanEdn(text);
  if (!scanned.ok) {
    const hint = /^\s*\{\s*"/.test(text) ? ' (this looks like JSON; lincheck reads EDN maps with keyword keys)' : '';
    return failure(scanned.line, `${scanned.error}${hint}`);
  }
  const { forms, bigIntegerEnds } = scanned.scan;
  const only = forms[0];
  const spans: readonly EdnSpan[] =
    forms.length === 1 && only !== undefined && only.elements !== null ? only.elements : forms;
  const records: RecordFields[] = [];
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
    records.push({ line: span.line, fields });
  }
  const allTimed = records.length > 0 && records.every((r) => typeof r.fields.get('time') === 'number');
  const ownLines = new Set(records.map((r) => r.line)).size === records.length;
  const builder = new HistoryBuilder();
  const keyIds = new Map<string, string>();
  for (let k = 0; k < records.length; k++) {
    const { line, fields } = records[k] as RecordFields;
    const fail = (why: string): ParseResult => failure(line, why);
    const proc = fields.get('process');
    const typeName = keywordName(fields.get('type'));
    const fName = keywordName(fields.get('f'));
    if (proc === undefined) return fail('missing :process');
    if (!(typeof proc === 'number' && Number.isSafeInteger(proc)) && typeof proc !== 'string') {
      return fail(
        `:process must be an integer (or a keyword for a non-client such as :nemesis), not ${showValue(proc)}`,
      );
    }
    if (typeName === undefined) return fail(fields.has('type') ? ':type must be a keyword' : 'missing :type');
    if (fName === undefined) return fail(fields.has('f') ? ':f must be a keyword' : 'missing :f');
    const type = typeOfT[typeName];
    const kind = kindOfF[fName];
    if (type === undefined) return fail(`unknown type :${typeName}`);
    if (kind === undefined) return fail(`unknown operation :${fName}`);
    const keyValue = fields.get('key');
    let key = '';
    if (keyValue !== undefined) {
      key = typeof keyValue === 'string' ? keyValue : showValue(keyValue);
      const id = valueKey(keyValue);
      const before = keyIds.get(key);
      if (before !== undefined && before !== id)
        return fail(`two different keys both read as ${JSON.stringify(key)} (a string and another type)`);
      keyIds.set(key, id);
    }
    const time = allTimed ? (fields.get('time') as number) : ownLines ? line - 1 : k;
    const value = fields.get('value') ?? null;
    const err =
      type === 'invoke'
        ? builder.invoke(proc, key, kind, value, time)
        : builder.complete(proc, kind, type, value, time);
    if (err !== undefined) return fail(err);
  }
  return { ok: true, history: builder.ops, skipped };
}
