/**
 * The hook by which a log line finds the active span: tracing registers a reader when it starts and
 * the logger's mixin calls it. A module of its own (no pino) so that tracing, which node workers
 * load, does not pull the logger into every worker thread. It knows no service or tracer.
 */

/** The active span's ids as log fields; set by src/tracing/tracing.ts when tracing starts. */
let spanFields: (() => Record<string, string> | undefined) | undefined;

/** Tracing registers how a log line finds the active span. */
export function setLogSpanFields(read: () => Record<string, string> | undefined): void {
  spanFields = read;
}

/**
 * pino's mixin: the active span's ids, or nothing (one test and an empty object per line when
 * tracing is off). pino merges the line's own fields into what this returns, so it is always fresh.
 */
export function traceFields(): Record<string, string> {
  return spanFields?.() ?? {};
}
