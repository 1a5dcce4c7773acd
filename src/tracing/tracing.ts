/**
 * OpenTelemetry tracing, off by default and free when off: unless TRACING_ENABLED=true nothing
 * from the OpenTelemetry SDK is imported, every function here is a cheap no-op, and the hot paths
 * only test `tracing.on` (or a tracer being set). When on, spans go over OTLP gRPC to a collector
 * (default localhost:4317; OTEL_EXPORTER_OTLP_ENDPOINT honoured). Each service has its own tracer
 * provider and resource (`service.name`), also when one process hosts all three (`make run`);
 * spans started inside a request belong to that request's service. Trace context crosses thread
 * and simulated-node boundaries as W3C traceparent strings carried inside our messages, and comes
 * in from callers through the W3C `traceparent`/`tracestate` headers (startServerSpan).
 * It is not an instrumentation library: the HTTP edge (src/http/app.ts) decides what a server span says.
 */
import type * as OtelApi from '@opentelemetry/api';
import { setLogSpanFields } from '../util/log-span-fields.js';

export interface SpanHandle {
  end(): void;
  setAttribute(key: string, value: string | number | boolean): void;
  /** Renames the span (a server span learns its route after it started). */
  updateName(name: string): void;
  /** Marks the span failed: status ERROR and the `error.type` attribute (e.g. "500"). */
  fail(errorType: string): void;
  /** W3C traceparent of this span, for children in other threads. */
  traceparent(): string;
  /** Runs fn with this span as the active context (children created inside attach to it). */
  run<T>(fn: () => T): T;
}

/** One service's tracer (its own provider and resource): what the HTTP edge starts server spans with. */
export interface ServiceTracer {
  readonly serviceName: string;
  readonly tracer: OtelApi.Tracer;
}

/** Where an incoming request's headers are read from (lower-case names). */
export interface HeaderCarrier {
  header(name: string): string | undefined;
}

interface Provider {
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

interface TracingState {
  on: boolean;
  api: typeof OtelApi | undefined;
  /** The process default (initTracing's service): spans started outside any request. */
  tracer: OtelApi.Tracer | undefined;
  shutdown: (() => Promise<void>) | undefined;
}

export const tracing: TracingState = { on: false, api: undefined, tracer: undefined, shutdown: undefined };

/** Time the batch span processor waits before exporting (ms) unless OTEL_BSP_SCHEDULE_DELAY says otherwise. */
export const spanExportDelayMsDefault = 500;

export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return env['TRACING_ENABLED'] === 'true';
}

let makeServiceTracer: ((serviceName: string) => ServiceTracer) | undefined;
const serviceTracers = new Map<string, ServiceTracer>();
const providers: Provider[] = [];
let starting: Promise<boolean> | undefined;
/** The context key under which a request's ServiceTracer rides, so its children use the same provider. */
let serviceKey: symbol | undefined;

/**
 * Starts tracing in this thread (once; later calls return at once). `serviceName` becomes the
 * process default: the service of spans started outside any request (fabric deliveries, worker
 * threads). Each HTTP app asks for its own service's tracer with serviceTracer().
 */
export function initTracing(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
  instanceId?: string,
): Promise<boolean> {
  if (tracing.on) return Promise.resolve(true);
  if (!tracingRequested(env)) return Promise.resolve(false);
  starting ??= start(serviceName, env, instanceId);
  return starting;
}

async function start(defaultService: string, env: NodeJS.ProcessEnv, instanceId?: string): Promise<boolean> {
  const api = await import('@opentelemetry/api');
  // sdk-node re-exports the SDK's parts (one dependency, versions that match each other).
  const { node, resources, tracing: sdkTrace } = await import('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-grpc');
  const delay = Number(env['OTEL_BSP_SCHEDULE_DELAY'] ?? spanExportDelayMsDefault);
  const scheduledDelayMillis = Number.isFinite(delay) && delay >= 0 ? delay : spanExportDelayMsDefault;
  // OTEL_RESOURCE_ATTRIBUTES, the host and the process describe every service alike; service.name
  // is each service's own (so OTEL_SERVICE_NAME cannot fold three services into one).
  const detected = resources.defaultResource().merge(
    resources.detectResources({
      detectors: [resources.envDetector, resources.hostDetector, resources.processDetector],
    }),
  );
  const key = api.createContextKey('simlab service tracer');
  serviceKey = key;
  const create = (
    serviceName: string,
  ): { provider: InstanceType<typeof node.NodeTracerProvider>; st: ServiceTracer } => {
    const provider = new node.NodeTracerProvider({
      resource: detected.merge(
        resources.resourceFromAttributes({
          'service.name': serviceName,
          'service.namespace': 'simlab',
          // A replication node's worker thread is one instance of the simulator's service.
          ...(instanceId === undefined ? {} : { 'service.instance.id': instanceId }),
        }),
      ),
      spanProcessors: [new sdkTrace.BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis })],
    });
    providers.push(provider);
    const st: ServiceTracer = { serviceName, tracer: provider.getTracer('simlab') };
    serviceTracers.set(serviceName, st);
    return { provider, st };
  };
  makeServiceTracer = (serviceName) => serviceTracers.get(serviceName) ?? create(serviceName).st;
  const first = create(defaultService);
  // The default provider is the global one: it also installs the AsyncLocalStorage context manager
  // and the W3C trace-context + baggage propagator.
  first.provider.register();
  tracing.api = api;
  tracing.tracer = first.st.tracer;
  tracing.shutdown = async () => {
    for (const p of providers) {
      try {
        await p.shutdown();
      } catch {
        // shutdown rejects when no collector is listening; nothing to do about it here
      }
    }
  };
  tracing.on = true;
  // From now on, log lines written while a span is active carry its trace_id and span_id.
  setLogSpanFields(activeSpanLogFields);
  return true;
}

/** The tracer of `serviceName` (its own provider and resource), or undefined while tracing is off. */
export function serviceTracer(serviceName: string): ServiceTracer | undefined {
  if (!tracing.on || makeServiceTracer === undefined) return undefined;
  return makeServiceTracer(serviceName);
}

/** Exports every span ended so far (tests; a clean shutdown does it too). */
export async function flushTracing(): Promise<void> {
  for (const p of providers) {
    try {
      await p.forceFlush();
    } catch {
      // no collector: nothing to flush to
    }
  }
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

function handle(api: typeof OtelApi, span: OtelApi.Span, spanCtx: OtelApi.Context): SpanHandle {
  return {
    end: () => span.end(),
    setAttribute: (k, v) => {
      span.setAttribute(k, v);
    },
    updateName: (name) => {
      span.updateName(name);
    },
    fail: (errorType) => {
      span.setAttribute('error.type', errorType);
      span.setStatus({ code: api.SpanStatusCode.ERROR });
    },
    traceparent: () => {
      const sc = span.spanContext();
      return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
    },
    run: (fn) => api.context.with(spanCtx, fn),
  };
}

/**
 * Starts a span: a child of `parent` (a traceparent from another thread) or of the active span,
 * from the active request's service (else the process default).
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
  const own = serviceKey === undefined ? undefined : (ctx.getValue(serviceKey) as ServiceTracer | undefined);
  const tracer = own?.tracer ?? (tracing.tracer as OtelApi.Tracer);
  const span = tracer.startSpan(name, attributes ? { attributes } : {}, ctx);
  return handle(api, span, api.trace.setSpan(ctx, span));
}

const carrierGetter: OtelApi.TextMapGetter<HeaderCarrier> = {
  keys: () => ['traceparent', 'tracestate', 'baggage'],
  get: (carrier, key) => carrier.header(key.toLowerCase()),
};

/**
 * Starts the SERVER span of one incoming request on `st`'s provider: a child of the caller's span
 * when the request carries a valid W3C `traceparent` (with its `tracestate`), else a new trace's
 * root. Spans started while it runs (handle.run) belong to the same service.
 */
export function startServerSpan(
  st: ServiceTracer,
  name: string,
  headers: HeaderCarrier,
  attributes: Record<string, string | number | boolean>,
): SpanHandle {
  const api = tracing.api as typeof OtelApi;
  const parent = api.propagation.extract(api.ROOT_CONTEXT, headers, carrierGetter);
  const span = st.tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes }, parent);
  let ctx = api.trace.setSpan(parent, span);
  if (serviceKey !== undefined) ctx = ctx.setValue(serviceKey, st);
  return handle(api, span, ctx);
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

/** The active span's ids as log fields (trace_id, span_id, trace_flags), or undefined when none is active. */
export function activeSpanLogFields(): { trace_id: string; span_id: string; trace_flags: string } | undefined {
  if (!tracing.on) return undefined;
  const api = tracing.api as typeof OtelApi;
  const span = api.trace.getSpan(api.context.active());
  if (!span) return undefined;
  const sc = span.spanContext();
  if (!api.isSpanContextValid(sc)) return undefined;
  return { trace_id: sc.traceId, span_id: sc.spanId, trace_flags: sc.traceFlags.toString(16).padStart(2, '0') };
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
