/**
 * OpenTelemetry tracing, off by default and free when off: unless TRACING_ENABLED=true nothing
 * from OpenTelemetry is imported, every function here is a cheap no-op, and the hot paths only
 * test `tracing.on`. When on, spans go over OTLP gRPC to a collector (default localhost:4317;
 * OTEL_EXPORTER_OTLP_ENDPOINT honoured). Trace context crosses thread and simulated-node
 * boundaries as W3C traceparent strings carried inside our msgpack messages and peer frames.
 */
import type * as OtelApi from '@opentelemetry/api';

export interface SpanHandle {
  end(): void;
  setAttribute(key: string, value: string | number | boolean): void;
  /** W3C traceparent of this span, for children in other threads. */
  traceparent(): string;
  /** Runs fn with this span as the active context (children created inside attach to it). */
  run<T>(fn: () => T): T;
}

interface TracingState {
  on: boolean;
  api: typeof OtelApi | undefined;
  tracer: OtelApi.Tracer | undefined;
  shutdown: (() => Promise<void>) | undefined;
}

export const tracing: TracingState = { on: false, api: undefined, tracer: undefined, shutdown: undefined };

export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['TRACING_ENABLED'] === 'true';
}

/** Starts the SDK (once per thread). `serviceName` becomes the resource's service.name. */
export async function initTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (!tracingRequested(env) || tracing.on) return tracing.on;
  const api = await import('@opentelemetry/api');
  const { NodeSDK } = await import('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
  const { BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const delay = Number(env['OTEL_BSP_SCHEDULE_DELAY'] ?? 500);
  const sdk = new NodeSDK({
    serviceName,
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: Number.isFinite(delay) ? delay : 500 }),
    ],
    instrumentations: [],
  });
  sdk.start();
  tracing.api = api;
  tracing.tracer = api.trace.getTracer('simlab');
  tracing.shutdown = async () => {
    try {
      await sdk.shutdown();
    } catch {
      // shutdown rejects when no collector is listening; nothing to do about it here
    }
  };
  tracing.on = true;
  return true;
}

const traceparentRe = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function contextFrom(parent: string | undefined): OtelApi.Context | undefined {
  const api = tracing.api;
  if (!api) return undefined;
  if (parent === undefined) return api.context.active();
  const m = traceparentRe.exec(parent);
  if (!m) return api.context.active();
  return api.trace.setSpanContext(api.context.active(), {
    traceId: m[1] as string,
    spanId: m[2] as string,
    traceFlags: Number.parseInt(m[3] as string, 16),
    isRemote: true,
  });
}

/**
 * Starts a span: a child of `parent` (a traceparent from another thread) or of the active span.
 * Returns undefined when tracing is off, so callers write `span?.end()`.
 */
export function startSpan(
  name: string,
  parent?: string,
  attributes?: Record<string, string | number | boolean>,
): SpanHandle | undefined {
  if (!tracing.on) return undefined;
  const api = tracing.api as typeof OtelApi;
  const ctx = contextFrom(parent) as OtelApi.Context;
  const span = (tracing.tracer as OtelApi.Tracer).startSpan(name, attributes ? { attributes } : {}, ctx);
  const spanCtx = api.trace.setSpan(ctx, span);
  return {
    end: () => span.end(),
    setAttribute: (k, v) => {
      span.setAttribute(k, v);
    },
    traceparent: () => {
      const sc = span.spanContext();
      return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
    },
    run: (fn) => api.context.with(spanCtx, fn),
  };
}

/** The active span's traceparent (to put in a message to another thread), when tracing is on. */
export function activeTraceparent(): string | undefined {
  if (!tracing.on) return undefined;
  const api = tracing.api as typeof OtelApi;
  const span = api.trace.getSpan(api.context.active());
  if (!span) return undefined;
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
}

/** Runs fn inside a new span that ends when fn's promise settles. */
export async function inSpan<T>(
  name: string,
  fn: () => Promise<T>,
  attributes?: Record<string, string | number | boolean>,
): Promise<T> {
  if (!tracing.on) return fn();
  const span = startSpan(name, undefined, attributes) as SpanHandle;
  try {
    return await span.run(fn);
  } finally {
    span.end();
  }
}

export async function shutdownTracing(): Promise<void> {
  await tracing.shutdown?.();
}
