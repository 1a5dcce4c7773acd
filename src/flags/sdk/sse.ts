/**
 * A server-sent-events parser (the WHATWG "event stream interpretation" rules: lines ending in
 * CR, LF or CRLF; `:` comments; `data` lines joined with LF; `id`, `event`, `retry`; a blank line
 * dispatches). Pure and incremental: feed it text chunks as they arrive, get complete events back.
 * It does no I/O; client.ts reads the HTTP body and feeds it.
 */

export interface SseEvent {
  /** `message` when the event had no `event:` line. */
  event: string;
  data: string;
  /** The last event id seen so far (it persists across events, as the spec says). */
  id: string | undefined;
}

export class SseParser {
  private buffer = '';
  private data: string[] = [];
  private eventType = '';
  private sawData = false;
  private pendingCR = false;
  lastEventId: string | undefined;
  /** Reconnection time the server asked for, if any. */
  retryMs: number | undefined;
  /** Comment lines seen (heartbeats), for liveness tracking. */
  comments = 0;

  push(chunk: string): SseEvent[] {
    const out: SseEvent[] = [];
    let text = chunk;
    // A CR at the end of the previous chunk may be the first half of a CRLF.
    if (this.pendingCR && text.startsWith('\n')) text = text.slice(1);
    this.pendingCR = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      const line = this.buffer.slice(start, i);
      if (ch === 13) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.pendingCR = true;
        }
      }
      start = i + 1;
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) {
      this.comments++;
      return undefined;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.data.push(value);
        this.sawData = true;
        break;
      case 'event':
        this.eventType = value;
        break;
      case 'id':
        if (!value.includes('\u0000')) this.lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        // Unknown fields are ignored.
        break;
    }
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const had = this.sawData;
    const ev: SseEvent = { event: this.eventType || 'message', data: this.data.join('\n'), id: this.lastEventId };
    this.data = [];
    this.eventType = '';
    this.sawData = false;
    return had ? ev : undefined;
  }
}
