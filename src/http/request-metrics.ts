/**
 * The edge's request-duration histogram, http_server_request_duration_seconds{http_request_method,
 * http_route, http_response_status_code}: OpenTelemetry's http.server.request.duration in Prometheus
 * form, with the route as its OpenAPI template (`/api/v1/clusters/{id}/write`, never a raw path), so
 * its label sets stay bounded. Each route keeps its own small memo of series by method and status,
 * so recording a request is two map reads and a few array writes: no label string is built per
 * request. It decides nothing about answers; app.ts calls it once per answered request.
 */
import { DeferredHistogram, type HistogramSeries, type Registry } from '../util/metrics.js';
import { openApiPath } from './openapi.js';

export const requestDurationMetricName = 'http_server_request_duration_seconds';
/** OpenTelemetry's advisory buckets for http.server.request.duration (seconds). */
export const requestDurationBucketsSeconds: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
];

export type RequestDurationLabel = 'http_request_method' | 'http_route' | 'http_response_status_code';
export type RequestDurations = DeferredHistogram<RequestDurationLabel>;

/** The methods the semantic conventions know by name; any other is recorded as `_OTHER`. */
const knownMethods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'TRACE', 'CONNECT'] as const;
const methodSlot = new Map<string, number>(knownMethods.map((m, i) => [m, i]));
const otherMethodSlot = knownMethods.length;

/** `http.request.method` as the semantic conventions spell it: a known method, else `_OTHER`. */
export function semconvMethod(method: string): string {
  return methodSlot.has(method) ? method : '_OTHER';
}

export function createRequestDurations(registry: Registry): RequestDurations {
  return new DeferredHistogram<RequestDurationLabel>(
    requestDurationMetricName,
    'Duration of HTTP server requests (seconds), from the request line to the answer handed to the ' +
      'socket (for a stream, to its status line), by method, route template and status',
    ['http_request_method', 'http_route', 'http_response_status_code'],
    requestDurationBucketsSeconds,
    registry,
  );
}

/** One route's series by (method, status), found by a number key (no string built per request). */
export class RouteSeries {
  /** The route as http_route and in span names: OpenAPI's spelling, '' for a request no route matched. */
  readonly template: string;
  private readonly byKey = new Map<number, HistogramSeries>();

  constructor(pattern: string | undefined) {
    this.template = pattern === undefined ? '' : openApiPath(pattern);
  }

  record(histogram: RequestDurations, method: string, status: number, seconds: number): void {
    const key = status * 16 + (methodSlot.get(method) ?? otherMethodSlot);
    let s = this.byKey.get(key);
    if (s === undefined) {
      s = histogram.seriesFor({
        http_request_method: semconvMethod(method),
        http_route: this.template,
        http_response_status_code: String(status),
      });
      this.byKey.set(key, s);
    }
    s.observe(seconds);
  }
}
