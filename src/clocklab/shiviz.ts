/**
 * ShiViz's default log format, both ways: each event is two lines, the host and its vector clock as
 * JSON (`p1 {"p1":2,"p2":1}`), then the event's text. Pure (no I/O, no Node or DOM API), so the
 * clock lab's server and its web page share it. It does not infer messages or draw anything: the
 * page's model does that from the clocks (and from the text when it is the lab's own).
 */

/** One event of a ShiViz log: the host (process) it happened on, its vector clock, its text. */
export interface ShiVizEvent {
  host: string;
  clock: Record<string, number>;
  text: string;
}

/** Events one log may hold (a 20 × 5,000 run is 100,000). */
export const shivizEventsMax = 200_000;
/** Characters of one log file (two lines per event; generous for 200,000 events). */
export const shivizLogCharsMax = 64 * 1024 * 1024;
/** Characters of a host name. */
export const shivizHostCharsMax = 64;
/** Characters of one event's text. */
export const shivizTextCharsMax = 4096;
/**
 * Estimated characters the server's recorder keeps (a clock entry counted as 12, about its JSON):
 * at 256 processes a vector has 256 entries, so the event cap alone would allow gigabytes.
 */
export const shivizRecordedCharsMax = 64 * 1024 * 1024;

export type ShiVizParse = { ok: true; events: ShiVizEvent[] } | { ok: false; error: string; line: number };

const hostLineRe = /^(\S+) (\{.*\})\s*$/;

/** The clock with its zero entries left out (ShiViz and the page write clocks that way). */
export function nonzero(clock: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(clock)) if (v !== 0) out[k] = v;
  return out;
}

/** Text of one event's text line: ShiViz reads one line per event text, so line breaks become spaces. */
function oneLine(text: string): string {
  return text.replace(/\r\n|\r|\n/g, ' ');
}

/** The log in ShiViz's default format (ends with a newline; an empty run is the empty string). */
export function formatShiViz(events: readonly ShiVizEvent[]): string {
  let out = '';
  for (const e of events) out += `${e.host} ${JSON.stringify(nonzero(e.clock))}\n${oneLine(e.text)}\n`;
  return out;
}

function clockProblem(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return 'the clock is not a JSON object';
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) {
      return `clock entry ${JSON.stringify(k.slice(0, 64))} is not a non-negative integer`;
    }
  }
  return undefined;
}

/**
 * Reads a log in ShiViz's default format. Blank lines between events are skipped; a first line that
 * is not a host line (ShiViz files may start with their regular expression and a blank line) is
 * skipped only when the second non-blank line is. A host whose own entry is missing or does not grow
 * is accepted (the page shows what the clocks say). Errors name the 1-based line.
 */
export function parseShiViz(text: string): ShiVizParse {
  if (text.length > shivizLogCharsMax) {
    return { ok: false, error: `the log has more than ${shivizLogCharsMax} characters`, line: 0 };
  }
  const lines = text.split(/\r\n|\n|\r/);
  const events: ShiVizEvent[] = [];
  let i = 0;
  const skipBlank = (): void => {
    while (i < lines.length && (lines[i] as string).trim() === '') i++;
  };
  skipBlank();
  // A header (e.g. the regex ShiViz was given) precedes the first event: skip it once.
  if (i < lines.length && !hostLineRe.test(lines[i] as string)) {
    let j = i + 1;
    while (j < lines.length && (lines[j] as string).trim() === '') j++;
    if (j < lines.length && hostLineRe.test(lines[j] as string)) i = j;
  }
  for (;;) {
    skipBlank();
    if (i >= lines.length) break;
    const lineNo = i + 1;
    const m = hostLineRe.exec(lines[i] as string);
    if (!m) {
      return { ok: false, error: 'expected a host and a JSON vector clock, as in `p1 {"p1":1}`', line: lineNo };
    }
    const host = m[1] as string;
    if (host.length > shivizHostCharsMax) {
      return { ok: false, error: `the host name has more than ${shivizHostCharsMax} characters`, line: lineNo };
    }
    let clock: unknown;
    try {
      clock = JSON.parse(m[2] as string);
    } catch {
      return { ok: false, error: 'the vector clock is not valid JSON', line: lineNo };
    }
    const problem = clockProblem(clock);
    if (problem) return { ok: false, error: problem, line: lineNo };
    if (i + 1 >= lines.length) return { ok: false, error: 'the event text line is missing', line: lineNo + 1 };
    const eventText = lines[i + 1] as string;
    if (eventText.length > shivizTextCharsMax) {
      return { ok: false, error: `the event text has more than ${shivizTextCharsMax} characters`, line: lineNo + 1 };
    }
    if (events.length >= shivizEventsMax) {
      return { ok: false, error: `the log has more than ${shivizEventsMax} events`, line: lineNo };
    }
    events.push({ host, clock: clock as Record<string, number>, text: eventText });
    i += 2;
  }
  return { ok: true, events };
}

/** What the recorder reads of a lab event: its type and data (events.ts's shapes). */
type LabEventData = Record<string, unknown>;

const str = (v: unknown): string => (typeof v === 'string' ? v : String(v ?? ''));

function vectorOf(data: LabEventData): Record<string, number> {
  const v = data['vector'] ?? data['clock'];
  return v !== null && typeof v === 'object' ? (v as Record<string, number>) : {};
}

/**
 * Turns the lab's event stream into ShiViz events, one per clock event (internal, send, receive or
 * delivery, KV write or read), with texts the page reads back: `send m1 to p2`, `receive m1 from
 * p1`, `deliver m3 from p2` (delivered out of the hold-back queue), `internal <label>`,
 * `kv_write x=v1`, `kv_read x`. Held and dropped messages move no clock, so ShiViz has no event for
 * them. Past `eventsMax` events or `charsMax` estimated characters the oldest tenth is forgotten
 * (counted in `forgotten`).
 */
export class ShiVizRecorder {
  private events: ShiVizEvent[] = [];
  private sizes: number[] = [];
  private chars = 0;
  private sends = new Map<string, string[]>();
  private receives = new Map<string, string>();
  private labels = new Map<string, string>();
  private reads = new Map<string, string>();
  forgotten = 0;

  constructor(
    private readonly eventsMax = shivizEventsMax,
    private readonly charsMax = shivizRecordedCharsMax,
  ) {}

  /** Estimated characters held (see shivizRecordedCharsMax). */
  get heldChars(): number {
    return this.chars;
  }

  get size(): number {
    return this.events.length;
  }

  /** The recorded run, oldest first. */
  log(): readonly ShiVizEvent[] {
    return this.events;
  }

  clear(): void {
    this.events = [];
    this.sizes = [];
    this.chars = 0;
    this.sends.clear();
    this.receives.clear();
    this.labels.clear();
    this.reads.clear();
    this.forgotten = 0;
  }

  onEvent(type: string, data: LabEventData): void {
    switch (type) {
      case 'simulation_reset':
        this.clear();
        return;
      case 'message_sent': {
        const from = str(data['from']);
        const list = this.sends.get(from) ?? [];
        list.push(`${str(data['id'])} to ${str(data['to'])}`);
        this.sends.set(from, list);
        return;
      }
      case 'message_delivered': {
        const verb = typeof data['held_ms'] === 'number' && data['held_ms'] > 0 ? 'deliver' : 'receive';
        this.receives.set(str(data['to']), `${verb} ${str(data['id'])} from ${str(data['from'])}`);
        return;
      }
      case 'internal_event':
        this.labels.set(str(data['process']), str(data['label']));
        return;
      case 'kv_read':
        this.reads.set(str(data['reader']), str(data['key']));
        return;
      case 'kv_write': {
        // Published right after the writer's clock event: name the key and value on it.
        const writer = str(data['writer']);
        for (let i = this.events.length - 1; i >= 0 && i >= this.events.length - 8; i--) {
          const e = this.events[i] as ShiVizEvent;
          if (e.host === writer && e.text === 'kv_write') {
            e.text = `kv_write ${str(data['key'])}=${str(data['value'])}`.slice(0, shivizTextCharsMax);
            break;
          }
        }
        return;
      }
      case 'clock_tick':
        this.push(data);
        return;
      default:
        return;
    }
  }

  private push(data: LabEventData): void {
    const host = str(data['process']);
    let text: string;
    switch (data['cause']) {
      case 'send':
        text = `send ${(this.sends.get(host) ?? []).join(', ')}`;
        this.sends.delete(host);
        break;
      case 'receive':
        text = this.receives.get(host) ?? 'receive';
        this.receives.delete(host);
        break;
      case 'internal':
        text = `internal ${this.labels.get(host) ?? ''}`.trimEnd();
        this.labels.delete(host);
        break;
      case 'kv_read':
        text = `kv_read ${this.reads.get(host) ?? ''}`.trimEnd();
        this.reads.delete(host);
        break;
      default:
        text = str(data['cause']);
    }
    const clock = nonzero(vectorOf(data));
    const e = { host, clock, text: oneLine(text).slice(0, shivizTextCharsMax) };
    let size = e.host.length + e.text.length + 4;
    for (const k in clock) size += k.length + 12;
    this.events.push(e);
    this.sizes.push(size);
    this.chars += size;
    if (this.events.length > this.eventsMax || this.chars > this.charsMax) {
      const cut = Math.max(1, Math.floor(this.events.length / 10));
      this.events.splice(0, cut);
      for (const n of this.sizes.splice(0, cut)) this.chars -= n;
      this.forgotten += cut;
    }
  }
}
