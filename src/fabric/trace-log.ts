/**
 * The deterministic runtime's trace (deterministic.ts): its lines written as UTF-8 bytes into one
 * buffer, fed to a sha256 a chunk at a time, the kept lines decoded only when read; and the
 * summary of a message written straight into it. The bytes are exactly those of the line strings
 * the runtime wrote before (issue 20, point 6): the hash of a seed's run did not change.
 */
import { createHash, type Hash } from 'node:crypto';
import { hasOwnProperty } from '../util/own.js';

/**
 * Trace bytes gathered before they are fed to the hash (and, for kept lines, stored as one buffer):
 * one hash update and one stored chunk per ~32 KiB instead of one per line.
 */
export const traceChunkBytes = 32_768;

/** A log's buffer before its first line. */
const noBytes = Buffer.alloc(0);
/** A write buffer handed back by a finished log (digest()), taken by the next log that writes. */
let spare: Buffer | undefined;
const spareBytesMax = traceChunkBytes * 8;

/**
 * The run's trace: every line is written as UTF-8 bytes straight into one buffer (the pieces of a
 * line, no line string built), fed to a sha256 a chunk at a time, and the bytes of the lines kept
 * (up to a cap) are stored, decoded into lines only when somebody reads them. The bytes are exactly
 * what hashing each line's string, newline-terminated, would feed (String.prototype's UTF-8, a lone
 * surrogate as U+FFFD): a swarm run writes thousands of lines nobody reads, and building them as
 * strings was a quarter of its time.
 */
export class TraceLog {
  /** Lines written, kept or not. */
  written = 0;
  /** Called with each kept line as it is written (a recorder; see DetCluster.onTraceLine). */
  listener: ((line: string) => void) | undefined;
  private readonly hash: Hash = createHash('sha256');
  /**
   * Bytes not yet fed to the hash: whole newline-terminated lines, then the line being written.
   * Empty until the first line (it is then taken from the spare, see digest()).
   */
  private buf: Buffer = noBytes;
  private pos = 0;
  /** Where the line being written starts in `buf`. */
  private lineStart = 0;
  /** Bytes at the start of `buf` that belong to kept lines. */
  private keptEnd = 0;
  /** Kept bytes already hashed, in order, each chunk a run of whole newline-terminated lines. */
  private readonly chunks: Buffer[] = [];
  /** `chunks[0 .. split)` are already in `lines`. */
  private split = 0;
  private readonly lines: string[] = [];
  /** Byte length of each kept line, newline excluded (a line may itself hold a newline). */
  private lengths = new Uint32Array(1024);
  /**
   * The rare pieces whose bytes do not decode back to their text (a lone surrogate, written as
   * U+FFFD as UTF-8 encoding does): per kept line, [byte start, byte end, text] within the line.
   */
  private exact: Map<number, Array<[number, number, string]>> | undefined;
  private lineExact: Array<[number, number, string]> | undefined;
  /** The last stamp() number (NaN: none yet) and its bytes, space included. */
  private stampValue = Number.NaN;
  private readonly stampBytes = new Uint8Array(32);
  private stampLength = 0;

  constructor(readonly keptMax: number) {}

  get dropped(): number {
    return this.written > this.keptMax ? this.written - this.keptMax : 0;
  }

  /** One whole line. */
  write(line: string): void {
    this.str(line);
    this.end();
  }

  /** Appends the UTF-8 of `s.slice(0, end)` to the line being written. */
  str(s: string, end = s.length): void {
    if (this.pos + end * 3 >= this.buf.length) this.grow(end * 3 + 1);
    const buf = this.buf;
    let p = this.pos;
    for (let i = 0; i < end; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) {
        this.strSlow(s, i, end, this.pos);
        return;
      }
      buf[p++] = c;
    }
    this.pos = p;
  }

  /** Appends one ASCII character (a code below 0x80). */
  ch(code: number): void {
    if (this.pos + 1 >= this.buf.length) this.grow(2);
    this.buf[this.pos++] = code;
  }

  /** Appends String(n), digits written directly for a non-negative safe integer. */
  num(n: number): void {
    if (!(n >= 0 && Number.isSafeInteger(n))) {
      this.str(String(n));
      return;
    }
    let digits = 1;
    for (let x = n; x >= 10; x = Math.floor(x / 10)) digits++;
    if (this.pos + digits >= this.buf.length) this.grow(digits + 1);
    const buf = this.buf;
    let p = this.pos + digits;
    this.pos = p;
    let x = n;
    do {
      const q = Math.floor(x / 10);
      buf[--p] = 48 + x - q * 10;
      x = q;
    } while (x > 0);
  }

  /**
   * Appends String(n) and a space, the start of every line: the bytes for the last `n` are kept,
   * and most lines share their virtual instant with the line before.
   */
  stamp(n: number): void {
    const len = this.stampLength;
    if (n === this.stampValue) {
      if (this.pos + len >= this.buf.length) this.grow(len + 1);
      const buf = this.buf;
      const from = this.stampBytes;
      let p = this.pos;
      for (let i = 0; i < len; i++) buf[p++] = from[i] as number;
      this.pos = p;
      return;
    }
    const start = this.pos;
    this.num(n);
    this.ch(32);
    const len2 = this.pos - start;
    if (len2 <= this.stampBytes.length) {
      // Byte by byte: a subarray to copy from would be an object per new instant.
      const buf = this.buf;
      const to = this.stampBytes;
      for (let i = 0; i < len2; i++) to[i] = buf[start + i] as number;
      this.stampLength = len2;
      this.stampValue = n;
    }
  }

  /** Ends the line being written (the newline). */
  end(): void {
    if (this.pos + 1 >= this.buf.length) this.grow(2);
    const start = this.lineStart;
    const len = this.pos - start;
    this.buf[this.pos++] = 10;
    this.lineStart = this.pos;
    const exact = this.lineExact;
    this.lineExact = undefined;
    const n = this.written++;
    if (n < this.keptMax) {
      this.keptEnd = this.pos;
      if (n === this.lengths.length) {
        const grown = new Uint32Array(n * 2);
        grown.set(this.lengths);
        this.lengths = grown;
      }
      this.lengths[n] = len;
      if (exact !== undefined) (this.exact ??= new Map()).set(n, exact);
      if (this.listener !== undefined) this.listener(this.decode(this.buf, start, len, exact));
    }
    if (this.lineStart >= traceChunkBytes) this.feed();
  }

  /** The kept lines, in order: one array, grown in place as later reads find more. */
  keptLines(): string[] {
    this.feed();
    const lines = this.lines;
    for (; this.split < this.chunks.length; this.split++) {
      const chunk = this.chunks[this.split] as Buffer;
      for (let from = 0; from < chunk.length; ) {
        const n = lines.length;
        const len = this.lengths[n] as number;
        lines.push(this.decode(chunk, from, len, this.exact?.get(n)));
        from += len + 1;
      }
    }
    return lines;
  }

  /**
   * sha256 (hex) of every line written so far, each newline-terminated. Everything written is fed
   * by then, so the write buffer goes back as the spare for the next log (a run asks for its hash
   * once, at its end, and the next run's log starts in the same buffer instead of a new 64 KiB);
   * a later line takes a buffer again.
   */
  digest(): string {
    this.feed();
    if (this.pos === 0 && this.buf !== noBytes) {
      // One grown by a huge line is not kept for later logs.
      if (this.buf.length <= spareBytesMax && (spare === undefined || spare.length < this.buf.length)) spare = this.buf;
      this.buf = noBytes;
    }
    return this.hash.copy().digest('hex');
  }

  /** The text of the line whose `len` bytes start at `from`. */
  private decode(buf: Buffer, from: number, len: number, exact: Array<[number, number, string]> | undefined): string {
    if (exact === undefined) return buf.toString('utf8', from, from + len);
    let text = '';
    let at = 0;
    for (const [a, b, piece] of exact) {
      text += buf.toString('utf8', from + at, from + a) + piece;
      at = b;
    }
    return text + buf.toString('utf8', from + at, from + len);
  }

  /** str() from the first non-ASCII character `i` on; `pieceAt` is where the piece's bytes began. */
  private strSlow(s: string, from: number, end: number, pieceAt: number): void {
    const buf = this.buf;
    let p = pieceAt + from;
    let lossy = false;
    for (let i = from; i < end; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) {
        buf[p++] = c;
      } else if (c < 0x800) {
        buf[p++] = 0xc0 | (c >> 6);
        buf[p++] = 0x80 | (c & 0x3f);
      } else if (c < 0xd800 || c > 0xdfff) {
        buf[p++] = 0xe0 | (c >> 12);
        buf[p++] = 0x80 | ((c >> 6) & 0x3f);
        buf[p++] = 0x80 | (c & 0x3f);
      } else {
        const d = i + 1 < end ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          buf[p++] = 0xf0 | (cp >> 18);
          buf[p++] = 0x80 | ((cp >> 12) & 0x3f);
          buf[p++] = 0x80 | ((cp >> 6) & 0x3f);
          buf[p++] = 0x80 | (cp & 0x3f);
          i++;
        } else {
          buf[p++] = 0xef;
          buf[p++] = 0xbf;
          buf[p++] = 0xbd;
          lossy = true;
        }
      }
    }
    this.pos = p;
    if (lossy) {
      const start = this.lineStart;
      (this.lineExact ??= []).push([pieceAt - start, p - start, end === s.length ? s : s.slice(0, end)]);
    }
  }

  /** Room for `more` bytes past `pos`. */
  private grow(more: number): void {
    const size = Math.max(this.buf.length * 2, this.pos + more + 1, traceChunkBytes * 2);
    if (this.buf === noBytes && spare !== undefined && spare.length >= size) {
      this.buf = spare;
      spare = undefined;
      return;
    }
    const grown = Buffer.allocUnsafe(size);
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  /** Hashes (and, for kept lines, stores) every whole line in `buf`; a line being written stays. */
  private feed(): void {
    const whole = this.lineStart;
    if (whole === 0) return;
    const buf = this.buf;
    this.hash.update(buf.subarray(0, whole));
    if (this.keptEnd > 0) {
      const chunk = Buffer.allocUnsafeSlow(this.keptEnd);
      chunk.set(buf.subarray(0, this.keptEnd));
      this.chunks.push(chunk);
    }
    if (this.pos > whole) buf.copyWithin(0, whole, this.pos);
    this.pos -= whole;
    this.lineStart = 0;
    this.keptEnd = 0;
  }
}

/** Writes summarize(msg) into the trace line being written, without building the string. */
export function summarizeInto(t: TraceLog, msg: unknown): void {
  if (msg === null || typeof msg !== 'object') {
    t.str(String(msg));
    return;
  }
  if (Array.isArray(msg)) {
    t.ch(91);
    t.num(msg.length);
    t.ch(93);
    return;
  }
  if (msg instanceof Uint8Array) {
    t.str('bytes(');
    t.num(msg.length);
    t.ch(41);
    return;
  }
  const rec = msg as Record<string, unknown>;
  let first = true;
  for (const k in rec) {
    if (!hasOwnProperty.call(rec, k)) continue;
    const v = rec[k];
    if (v === undefined) continue;
    if (first) first = false;
    else t.ch(32);
    t.str(k);
    t.ch(61);
    if (typeof v === 'string') {
      if (v.length > 24) {
        t.str(v, 24);
        t.str('…');
      } else {
        t.str(v);
      }
    } else if (typeof v === 'number') {
      t.num(v);
    } else if (v === null || typeof v !== 'object') {
      t.str(String(v));
    } else if (Array.isArray(v)) {
      t.ch(91);
      t.num(v.length);
      t.ch(93);
    } else {
      t.str('{..}');
    }
  }
}
