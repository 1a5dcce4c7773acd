/**
 * Parsers from Jepsen's history formats to the checker's generic history: the jepsen.util log
 * lines of the etcd tests (`INFO  jepsen.util - 3 :ok :cas [1 2]`) and one-EDN-map-per-line
 * histories (`{:process 0, :type :ok, :f :get, :key "k", :value "x"}`). Parsing is total: a
 * malformed line is a returned error with its line number, never a throw. No checking happens here.
 */
import type { CasInput, History, HistoryOp, OpKind, OpStatus, Value } from './history.js';

export type ParseResult = { ok: true; history: History } | { ok: false; error: string };

/** An EDN value as far as Jepsen histories use it. Keywords keep their colon (`:ok`). */
type Edn = Value | { keyword: string } | Edn[];

interface MutableOp {
  client: string | number;
  key: string;
  kind: OpKind;
  input: Value | CasInput;
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

/** Picks the format from the first non-blank line: `{` is EDN, anything else the jepsen.util log. */
export function parseHistory(text: string): ParseResult {
  const first = /^\s*(\S)/m.exec(text);
  if (first === null) return { ok: true, history: [] };
  return first[1] === '{' ? parseEdnHistory(text) : parseJepsenLog(text);
}

/**
 * Pairs invocations with completions per process (Jepsen: a process has at most one operation
 * outstanding). An invocation never completed is `info`: its outcome is unknown.
 */
class HistoryBuilder {
  readonly ops: MutableOp[] = [];
  private readonly pending = new Map<string | number, number>();

  invoke(client: string | number, key: string, kind: OpKind, value: Edn, time: number): string | undefined {
    let input: Value | CasInput = null;
    if (kind === 'cas') {
      if (!Array.isArray(value) || value.length !== 2) return 'a cas takes [expected new]';
      input = [plain(value[0] as Edn), plain(value[1] as Edn)];
    } else if (kind === 'write' || kind === 'append') {
      input = plain(value);
    }
    this.pending.set(client, this.ops.length);
    this.ops.push({ client, key, kind, input, output: null, invokeTime: time, completeTime: undefined, status: 'info' });
    return undefined;
  }

  complete(client: string | number, kind: OpKind, status: OpStatus, value: Edn, time: number): string | undefined {
    const index = this.pending.get(client);
    if (index === undefined) return `process ${String(client)} completes an operation it never invoked`;
    const op = this.ops[index] as MutableOp;
    if (op.kind !== kind) return `process ${String(client)} invoked ${op.kind} but completes ${kind}`;
    this.pending.delete(client);
    op.status = status;
    if (status === 'ok') {
      op.completeTime = time;
      // A read returns its value; an ok cas swapped (a failed compare is reported as :fail).
      if (kind === 'read') op.output = plain(value);
      else if (kind === 'cas') op.output = true;
    }
    return undefined;
  }
}

function plain(v: Edn): Value {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return JSON.stringify(v.map((x) => plain(x)));
  return v.keyword;
}

/** `INFO  jepsen.util - <process> <type> <f> <value>`; lines from other loggers are skipped. */
export function parseJepsenLog(text: string): ParseResult {
  const builder = new HistoryBuilder();
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const at = line.indexOf('jepsen.util - ');
    if (at < 0) continue;
    const fields = /^(\S+)\s+:(\w+)\s+:([\w-]+)\s*(.*?)\s*$/.exec(line.slice(at + 'jepsen.util - '.length));
    const fail = (why: string): ParseResult => ({ ok: false, error: `line ${i + 1}: ${why}: ${line.trim()}` });
    if (fields === null) return fail('expected "<process> :<type> :<f> <value>"');
    const [, procText, typeText, fText, valueText] = fields as unknown as [string, string, string, string, string];
    const type = typeOfT[typeText];
    const kind = kindOfF[fText];
    if (type === undefined) return fail(`unknown type :${typeText}`);
    if (kind === undefined) return fail(`unknown operation :${fText}`);
    const value = readEdn(valueText === '' ? 'nil' : valueText);
    if (!value.ok) return fail(value.error);
    if (value.value instanceof Map) return fail('a value cannot be a map');
    const client = /^\d+$/.test(procText) ? Number(procText) : procText;
    const err = type === 'invoke'
      ? builder.invoke(client, '', kind, value.value, i)
      : builder.complete(client, kind, type, value.value, i);
    if (err !== undefined) return fail(err);
  }
  return { ok: true, history: builder.ops };
}

/**
 * One EDN map per line with :process, :type, :f, :value and optionally :key (default the single
 * key ""). Times are the records' :time when every record has one, otherwise their line order.
 */
export function parseEdnHistory(text: string): ParseResult {
  const records: Array<{ line: number; map: Map<string, Edn> }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    const parsed = readEdn(line);
    if (!parsed.ok) return { ok: false, error: `line ${i + 1}: ${parsed.error}` };
    if (!(parsed.value instanceof Map)) return { ok: false, error: `line ${i + 1}: expected a map {...}` };
    records.push({ line: i, map: parsed.value });
  }
  const allTimed = records.length > 0 && records.every((r) => typeof r.map.get(':time') === 'number');
  const builder = new HistoryBuilder();
  for (const { line, map } of records) {
    const fail = (why: string): ParseResult => ({ ok: false, error: `line ${line + 1}: ${why}` });
    const proc = map.get(':process');
    const typeKw = map.get(':type');
    const fKw = map.get(':f');
    if (typeof proc !== 'number' && typeof proc !== 'string' && !isKeyword(proc)) return fail('missing :process');
    if (!isKeyword(typeKw)) return fail('missing :type');
    if (!isKeyword(fKw)) return fail('missing :f');
    const type = typeOfT[typeKw.keyword.slice(1)];
    const kind = kindOfF[fKw.keyword.slice(1)];
    if (type === undefined) return fail(`unknown type ${typeKw.keyword}`);
    if (kind === undefined) return fail(`unknown operation ${fKw.keyword}`);
    const keyValue = map.get(':key');
    const key = keyValue === undefined ? '' : String(plain(keyValue));
    const client = isKeyword(proc) ? proc.keyword : proc;
    const time = allTimed ? (map.get(':time') as number) : line;
    const value = map.get(':value') ?? null;
    const err = type === 'invoke'
      ? builder.invoke(client, key, kind, value, time)
      : builder.complete(client, kind, type, value, time);
    if (err !== undefined) return fail(err);
  }
  return { ok: true, history: builder.ops };
}

function isKeyword(v: unknown): v is { keyword: string } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Map) && 'keyword' in v;
}

type EdnDoc = Edn | Map<string, Edn>;

/** Characters that end an EDN atom: whitespace, comma, brackets, braces, parentheses, quote. */
const delimiter = new Uint8Array(128);
for (const c of ' \t\r\n\f\v,[]{}()"') delimiter[c.charCodeAt(0)] = 1;
const isDelimiter = (code: number): boolean => code < 128 && delimiter[code] === 1;
const isBlank = (code: number): boolean => code === 32 || code === 44 || (code >= 9 && code <= 13);
const numberPattern = /^[-+]?\d+(\.\d+)?([eE][-+]?\d+)?[NM]?$/;

/**
 * A small reader for the EDN Jepsen writes: nil, booleans, integers and decimals, strings with
 * escapes, keywords, vectors/lists, and a top-level map with keyword keys. Commas are
 * whitespace, as in EDN.
 */
class EdnReader {
  private pos = 0;

  constructor(private readonly src: string) {}

  read(): EdnDoc {
    this.skip();
    let result: EdnDoc;
    if (this.src.charCodeAt(this.pos) === 123 /* { */) {
      this.pos++;
      const map = new Map<string, Edn>();
      for (;;) {
        this.skip();
        if (this.pos >= this.src.length) throw new SyntaxError('missing }');
        if (this.src.charCodeAt(this.pos) === 125 /* } */) {
          this.pos++;
          break;
        }
        const k = this.value();
        if (!isKeyword(k)) throw new SyntaxError('map keys must be keywords');
        map.set(k.keyword, this.value());
      }
      result = map;
    } else {
      result = this.value();
    }
    this.skip();
    if (this.pos < this.src.length) throw new SyntaxError(`unexpected text after the value at column ${this.pos + 1}`);
    return result;
  }

  private skip(): void {
    while (this.pos < this.src.length && isBlank(this.src.charCodeAt(this.pos))) this.pos++;
  }

  private value(): Edn {
    this.skip();
    const c = this.src.charCodeAt(this.pos);
    if (c === 34 /* " */) return this.string();
    if (c === 91 /* [ */ || c === 40 /* ( */) {
      const close = c === 91 ? 93 : 41;
      this.pos++;
      const items: Edn[] = [];
      for (;;) {
        this.skip();
        if (this.pos >= this.src.length) throw new SyntaxError(`missing ${String.fromCharCode(close)}`);
        if (this.src.charCodeAt(this.pos) === close) {
          this.pos++;
          return items;
        }
        items.push(this.value());
      }
    }
    if (c === 123 /* { */) throw new SyntaxError('nested maps are not supported');
    return this.atom();
  }

  private string(): string {
    const src = this.src;
    let pos = this.pos + 1;
    let out = '';
    let run = pos;
    for (;;) {
      if (pos >= src.length) throw new SyntaxError('unterminated string');
      const c = src.charCodeAt(pos);
      if (c === 34 /* " */) break;
      if (c === 92 /* \\ */) {
        out += src.slice(run, pos);
        const e = src[pos + 1] ?? '';
        out += e === 'n' ? '\n' : e === 't' ? '\t' : e === 'r' ? '\r' : e;
        pos += 2;
        run = pos;
      } else {
        pos++;
      }
    }
    this.pos = pos + 1;
    return out + src.slice(run, pos);
  }

  private atom(): Edn {
    const start = this.pos;
    while (this.pos < this.src.length && !isDelimiter(this.src.charCodeAt(this.pos))) this.pos++;
    const tok = this.src.slice(start, this.pos);
    if (tok === '') {
      const found = this.pos < this.src.length ? JSON.stringify(this.src[this.pos]) : 'the end of the line';
      throw new SyntaxError(`unexpected ${found} at column ${this.pos + 1}`);
    }
    if (tok === 'nil') return null;
    if (tok === 'true') return true;
    if (tok === 'false') return false;
    if (tok.charCodeAt(0) === 58 /* : */) return { keyword: tok };
    if (numberPattern.test(tok)) return Number(tok.replace(/[NM]$/, ''));
    return tok;
  }
}

/** Reads one EDN value; a syntax error is a returned message. */
function readEdn(src: string): { ok: true; value: EdnDoc } | { ok: false; error: string } {
  try {
    return { ok: true, value: new EdnReader(src).read() };
  } catch (e) {
    if (e instanceof SyntaxError) return { ok: false, error: e.message };
    throw e;
  }
}
