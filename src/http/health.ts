/**
 * The operational routes every service has: /healthz (liveness), /readyz (readiness),
 * /metrics (Prometheus text format from the service's own prom-client registry).
 */
import type { Registry } from 'prom-client';
import type { HttpApp } from './app.js';

export function healthRoutes(app: HttpApp, registry: Registry, ready: () => boolean | { ready: boolean; detail?: unknown } = () => true): void {
  app.get('/healthz', () => ({ status: 200, body: { status: 'ok' } }));
  app.get('/readyz', () => {
    const r = ready();
    const ok = typeof r === 'boolean' ? r : r.ready;
    const detail = typeof r === 'boolean' ? undefined : r.detail;
    return { status: ok ? 200 : 503, body: ok ? { status: 'ready', ...(detail ? { detail } : {}) } : { error: 'not ready', detail } };
  });
  app.get('/metrics', async () => ({
    status: 200,
    raw: await registry.metrics(),
    headers: { 'content-type': registry.contentType },
  }));
}
