/**
 * The flag service's Prometheus metrics, in its own prom-client Registry (names `flags_*`).
 * Hot-path counts (evaluations by reason, SSE events) are kept in plain objects by their owners and
 * copied into the registry when it is scraped, so serving an evaluation never touches prom-client.
 */
import { Counter, Gauge, Registry, collectProcessMetrics, mirroredCounter } from '../../util/metrics.js';
import type { AuthService } from '../auth/service.js';
import type { StreamHub } from '../stream/hub.js';
import type { Replica } from '../stream/replica.js';
import type { FlagStore } from '../store/types.js';

export interface EvalCounts {
  byReason: Map<string, number>;
  warnings: Map<string, number>;
}

export interface FlagsMetrics {
  registry: Registry;
  evalCounts: EvalCounts;
  /** flags_http_requests_total, filled from `countResponse`'s counts at scrape time. */
  httpRequests: Counter<'method' | 'status'>;
  /**
   * Counts one answered request by method and status (the HttpApp's onResponse). Plain maps: a
   * labelled prom-client inc() hashes its labels on every call, about 0.4 µs of an evaluation's 11.
   */
  countResponse(method: string, status: number): void;
  logins: Counter<'outcome'>;
}

function mirroredLabelledCounter(
  registry: Registry,
  name: string,
  help: string,
  label: string,
  read: () => Map<string, number>,
): void {
  const seen = new Map<string, number>();
  new Counter({
    name,
    help,
    labelNames: [label],
    registers: [registry],
    collect() {
      for (const [k, v] of read()) {
        const before = seen.get(k) ?? 0;
        if (v > before) this.inc({ [label]: k }, v - before);
        seen.set(k, v);
      }
    },
  });
}

export function createMetrics(parts: {
  store: FlagStore;
  hub: StreamHub;
  replica: Replica;
  auth: AuthService;
  feedPosition: () => number;
}): FlagsMetrics {
  const registry = new Registry();
  collectProcessMetrics(registry, 'flags_');
  const evalCounts: EvalCounts = { byReason: new Map(), warnings: new Map() };
  const { store, hub, replica, auth } = parts;

  mirroredLabelledCounter(
    registry,
    'flags_evaluations_total',
    'Flag evaluations served over HTTP, by reason kind',
    'reason',
    () => evalCounts.byReason,
  );
  mirroredLabelledCounter(
    registry,
    'flags_evaluation_warnings_total',
    'Evaluation warnings (e.g. a deleted segment in a clause), by code',
    'code',
    () => evalCounts.warnings,
  );
  new Gauge({
    name: 'flags_sse_clients',
    help: 'Connected SDK stream clients',
    registers: [registry],
    collect() {
      this.set(hub.connected);
    },
  });
  mirroredCounter(registry, 'flags_sse_connections_total', 'SDK stream connections accepted', () => hub.stats.connects);
  mirroredCounter(
    registry,
    'flags_sse_events_sent_total',
    'SSE events written to clients (put, patch, delete)',
    () => hub.stats.eventsSent,
  );
  mirroredCounter(
    registry,
    'flags_sse_resumed_total',
    'Reconnections served from the replay log (Last-Event-ID)',
    () => hub.stats.resumedFromLog,
  );
  mirroredCounter(registry, 'flags_sse_puts_total', 'Full put events sent on connect', () => hub.stats.freshPuts);
  mirroredCounter(
    registry,
    'flags_sse_slow_clients_disconnected_total',
    'Stream clients cut off as slow (queue over the buffer cap, or socket not drained ' +
      'within the drain timeout), during their put or later',
    () => hub.stats.slowDisconnects,
  );
  mirroredCounter(
    registry,
    'flags_sse_unservable_total',
    'Flags or segments left out of an SSE put, or changes not sent, because they could not be serialised',
    () => hub.stats.unservable,
  );
  mirroredCounter(
    registry,
    'flags_sse_refused_total',
    'Stream connections refused over the client cap',
    () => hub.stats.refusedOverCap,
  );
  mirroredCounter(
    registry,
    'flags_sse_replay_log_evicted_total',
    'Changes that fell off the replay log cap',
    () => hub.stats.replayLogEvicted,
  );
  mirroredCounter(
    registry,
    'flags_audit_pruned_total',
    'Audit records removed by the per-project cap',
    () => store.stats.auditPruned,
  );
  mirroredCounter(
    registry,
    'flags_change_feed_pruned_total',
    'Change-feed rows removed by the feed cap',
    () => store.stats.changesPruned,
  );
  mirroredCounter(
    registry,
    'flags_login_limiter_evictions_total',
    'Client addresses dropped from the login rate limiter table',
    () => auth.limiter.evictions,
  );
  mirroredCounter(
    registry,
    'flags_login_account_limiter_evictions_total',
    'Accounts dropped from the per-account login rate limiter table',
    () => auth.accountLimiter.evictions,
  );
  new Gauge({
    name: 'flags_change_feed_position',
    help: 'Seq of the last change applied from the feed',
    registers: [registry],
    collect() {
      this.set(parts.feedPosition());
    },
  });
  new Gauge({
    name: 'flags_environments_loaded',
    help: 'Environments held in the in-memory replica',
    registers: [registry],
    collect() {
      this.set(replica.loadedEnvironments);
    },
  });
  // method → status → [responses counted, responses already in the registry].
  const responses = new Map<string, Map<number, [number, number]>>();
  const countResponse = (method: string, status: number): void => {
    let byStatus = responses.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      responses.set(method, byStatus);
    }
    const n = byStatus.get(status);
    if (n === undefined) byStatus.set(status, [1, 0]);
    else n[0]++;
  };
  const httpRequests = new Counter({
    name: 'flags_http_requests_total',
    help: 'HTTP responses by method and status',
    labelNames: ['method', 'status'] as const,
    registers: [registry],
    collect() {
      for (const [method, byStatus] of responses) {
        for (const [status, n] of byStatus) {
          if (n[0] > n[1]) this.inc({ method, status: String(status) }, n[0] - n[1]);
          n[1] = n[0];
        }
      }
    },
  });
  const logins = new Counter({
    name: 'flags_logins_total',
    help: 'Login attempts by outcome',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  return { registry, evalCounts, httpRequests, countResponse, logins };
}
