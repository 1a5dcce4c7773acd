/**
 * The operational routes every service has: /healthz (liveness), /readyz (readiness),
 * /metrics (Prometheus text format from the service's own prom-client registry). Registering them
 * also puts the adapter's and the process's own fault counters on that registry, so every service
 * exports them under the same names: http_handler_errors_total{service,route,kind} (requests that
 * failed inside the process: a 500, or a 503 past the handler deadline) and process_unhandled_rejections_total /
 * process_uncaught_exceptions_total (src/util/process-safety.ts). It also makes the app record
 * every request in http_server_request_duration_seconds on that registry (request-metrics.ts).
 */
import type { Registry } from 'prom-client';
import type { HttpApp } from './app.js';
import { Counter, mirroredCounter } from '../util/metrics.js';
import { processFaultCounts } from '../util/process-safety.js';

export function healthRoutes(
  app: HttpApp,
  registry: Registry,
  ready: () => boolean | { ready: boolean; detail?: unknown } = () => true,
): void {
  app.get('/healthz', () => ({ status: 200, body: { status: 'ok' } }), {
    security: [],
    summary: 'Liveness: 200 while the process serves requests',
  });
  app.get(
    '/readyz',
    () => {
      const r = ready();
      const ok = typeof r === 'boolean' ? r : r.ready;
      const detail = typeof r === 'boolean' ? undefined : r.detail;
      return {
        status: ok ? 200 : 503,
        body: ok ? { status: 'ready', ...(detail ? { detail } : {}) } : { error: 'not ready', detail },
      };
    },
    { security: [], summary: 'Readiness: 200 when ready, 503 `{error}` when not' },
  );
  app.get(
    '/metrics',
    async () => ({
      status: 200,
      raw: await registry.metrics(),
      headers: { 'content-type': registry.contentType },
    }),
    { security: [], summary: 'Prometheus metrics (text exposition format)', responseType: 'text/plain' },
  );
  faultMetrics(app, registry);
  app.measureRequests(registry);
}

/** The apps whose handler errors each registry exports (several apps may share one: a service and its proxy). */
const appsByRegistry = new WeakMap<Registry, Set<HttpApp>>();

/**
 * Mirrors the adapter's handler-error counts and the process fault counts into `registry` when it
 * is scraped (the counts live where they happen; prom-client is touched only on a scrape). Called by
 * healthRoutes; call it directly for a second app on the same registry (e.g. a proxy).
 */
export function faultMetrics(app: HttpApp, registry: Registry): void {
  const known = appsByRegistry.get(registry);
  if (known) {
    known.add(app);
    return;
  }
  const apps = new Set<HttpApp>([app]);
  appsByRegistry.set(registry, apps);
  const seen = new Map<string, number>();
  new Counter({
    name: 'http_handler_errors_total',
    help:
      'Requests that failed inside the process: the handler threw or rejected (kind="threw", ' +
      'a 500), its result could not be serialised (kind="unserializable", a 500) or it ' +
      'missed the handler deadline (kind="timeout", a 503), by route pattern',
    labelNames: ['service', 'route', 'kind'],
    registers: [registry],
    collect() {
      for (const a of apps) {
        for (const e of a.handlerErrorCounts()) {
          const key = `${a.name} ${e.kind} ${e.route}`;
          const before = seen.get(key) ?? 0;
          if (e.count > before) this.inc({ service: a.name, route: e.route, kind: e.kind }, e.count - before);
          seen.set(key, e.count);
        }
      }
    },
  });
  mirroredCounter(
    registry,
    'process_unhandled_rejections_total',
    'Promise rejections no code handled (logged at error; the process keeps running)',
    () => processFaultCounts().unhandledRejections,
  );
  mirroredCounter(
    registry,
    'process_uncaught_exceptions_total',
    'Exceptions no code caught (logged at error; the process keeps running)',
    () => processFaultCounts().uncaughtExceptions,
  );
}
