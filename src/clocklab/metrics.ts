/**
 * The clock lab's Prometheus metrics on its own prom-client Registry: the three the spec watches
 * (vc_ws_clients_connected, vc_ws_events_dropped_total, vc_event_bus_publish_drops) plus counters
 * derived from the event stream before it reaches the bus (so a bus drop never loses a count) and
 * gauges read from the simulation on scrape, and prom-client's default process metrics. No
 * behaviour: it only observes.
 */
import { Counter, Gauge, Registry, collectProcessMetrics } from '../util/metrics.js';
import type { EventData, LabEventType } from './events.js';

export interface LabGauges {
  processes(): { alive: number; killed: number };
  inFlight(): number;
  held(): number;
  snapshotsRunning(): number;
  kvKeys(): number;
  busBuffered(): number;
}

export class LabMetrics {
  readonly registry = new Registry();
  readonly wsClients: Gauge;
  readonly wsDropped: Counter;
  readonly busDrops: Counter;
  readonly historyEvicted: Counter;
  readonly wsTimeouts: Counter;
  readonly proxyWsClients: Gauge;
  readonly proxyWsDropped: Counter;
  readonly httpRequests: Counter<'method' | 'status'>;
  private readonly published: Counter<'type'>;
  private readonly sent: Counter<'cast'>;
  private readonly delivered: Counter;
  private readonly held: Counter;
  private readonly dropped: Counter<'reason' | 'kind'>;
  private readonly violations: Counter;
  private readonly markers: Counter;
  private readonly snapshots: Counter<'event'>;
  private readonly kvWrites: Counter<'outcome'>;
  private readonly kvConflicts: Counter;
  private readonly kvResolved: Counter<'strategy'>;
  private readonly scenarios: Counter<'scenario' | 'passed'>;

  constructor(gauges: LabGauges) {
    const r = this.registry;
    // prom-client's default process and Node.js metrics, unprefixed (as the simulator's).
    collectProcessMetrics(r);
    this.wsClients = new Gauge({
      name: 'vc_ws_clients_connected',
      help: 'WebSocket clients connected to /ws',
      registers: [r],
    });
    this.wsDropped = new Counter({
      name: 'vc_ws_events_dropped_total',
      help: 'Events not sent to a WebSocket client because its queue was full',
      registers: [r],
    });
    this.busDrops = new Counter({
      name: 'vc_event_bus_publish_drops',
      help: 'Events dropped because the event bus publish buffer (4096) was full',
      registers: [r],
    });
    this.historyEvicted = new Counter({
      name: 'vc_event_history_evicted_total',
      help: 'Events that fell off the replay history',
      registers: [r],
    });
    this.wsTimeouts = new Counter({
      name: 'vc_ws_pong_timeouts_total',
      help: 'WebSocket clients closed for missing the pong deadline',
      registers: [r],
    });
    this.proxyWsClients = new Gauge({
      name: 'vc_proxy_ws_clients_connected',
      help: 'Browser WebSockets connected to the proxy (each is also one lab /ws client)',
      registers: [r],
    });
    this.proxyWsDropped = new Counter({
      name: 'vc_proxy_ws_events_dropped_total',
      help:
        'Events the proxy read from the lab but did not queue for a browser whose queue was ' +
        'full (the lab counts what it then could not send to that upstream in ' +
        'vc_ws_events_dropped_total)',
      registers: [r],
    });
    this.httpRequests = new Counter({
      name: 'vc_http_requests_total',
      help: 'HTTP requests answered',
      labelNames: ['method', 'status'],
      registers: [r],
    });
    this.published = new Counter({
      name: 'vc_events_published_total',
      help: 'Events published on the bus, by type',
      labelNames: ['type'],
      registers: [r],
    });
    this.sent = new Counter({
      name: 'vc_messages_sent_total',
      help: 'Application messages sent (one per destination)',
      labelNames: ['cast'],
      registers: [r],
    });
    this.delivered = new Counter({
      name: 'vc_messages_delivered_total',
      help: 'Application messages delivered',
      registers: [r],
    });
    this.held = new Counter({
      name: 'vc_messages_held_total',
      help: 'Messages placed in a hold-back queue',
      registers: [r],
    });
    this.dropped = new Counter({
      name: 'vc_messages_dropped_total',
      help: 'Messages and markers lost, by reason',
      labelNames: ['reason', 'kind'],
      registers: [r],
    });
    this.violations = new Counter({
      name: 'vc_causal_violations_total',
      help: 'Deliveries before a causal predecessor (immediate mode)',
      registers: [r],
    });
    this.markers = new Counter({ name: 'vc_markers_sent_total', help: 'Chandy–Lamport markers sent', registers: [r] });
    this.snapshots = new Counter({
      name: 'vc_snapshots_total',
      help:
        'Global snapshots by lifecycle event (started, complete, incomplete, discarded on ' +
        'reset, evicted past the cap)',
      labelNames: ['event'],
      registers: [r],
    });
    this.kvWrites = new Counter({
      name: 'vc_kv_writes_total',
      help: 'KV writes by outcome',
      labelNames: ['outcome'],
      registers: [r],
    });
    this.kvConflicts = new Counter({
      name: 'vc_kv_conflicts_total',
      help: 'KV writes that created concurrent versions',
      registers: [r],
    });
    this.kvResolved = new Counter({
      name: 'vc_kv_resolved_total',
      help: 'Conflicts resolved by a strategy',
      labelNames: ['strategy'],
      registers: [r],
    });
    this.scenarios = new Counter({
      name: 'vc_scenario_runs_total',
      help: 'Scenario runs by verdict',
      labelNames: ['scenario', 'passed'],
      registers: [r],
    });
    new Gauge({
      name: 'vc_processes',
      help: 'Processes by status',
      labelNames: ['status'],
      registers: [r],
      collect() {
        const p = gauges.processes();
        this.set({ status: 'alive' }, p.alive);
        this.set({ status: 'killed' }, p.killed);
      },
    });
    new Gauge({
      name: 'vc_messages_in_flight',
      help: 'Messages on the wire or in the reorder stage',
      registers: [r],
      collect() {
        this.set(gauges.inFlight());
      },
    });
    new Gauge({
      name: 'vc_holdback_depth',
      help: 'Messages waiting in hold-back queues',
      registers: [r],
      collect() {
        this.set(gauges.held());
      },
    });
    new Gauge({
      name: 'vc_snapshots_running',
      help: 'Global snapshots not yet complete',
      registers: [r],
      collect() {
        this.set(gauges.snapshotsRunning());
      },
    });
    new Gauge({
      name: 'vc_kv_keys',
      help: 'Keys in the KV store',
      registers: [r],
      collect() {
        this.set(gauges.kvKeys());
      },
    });
    new Gauge({
      name: 'vc_event_bus_buffered',
      help: 'Events in the bus buffer waiting for fan-out',
      registers: [r],
      collect() {
        this.set(gauges.busBuffered());
      },
    });
  }

  /** Counts one event as it is emitted (before the bus, so bus drops do not skew these). */
  observe(type: LabEventType, data: EventData): void {
    this.published.inc({ type });
    switch (type) {
      case 'message_sent':
        this.sent.inc({ cast: String(data['cast']) });
        break;
      case 'message_delivered':
        this.delivered.inc();
        break;
      case 'message_held':
        this.held.inc();
        break;
      case 'message_dropped':
        this.dropped.inc({ reason: String(data['reason']), kind: data['marker'] ? 'marker' : 'message' });
        break;
      case 'causal_violation':
        this.violations.inc();
        break;
      case 'marker_sent':
        this.markers.inc();
        break;
      case 'snapshot_started':
        this.snapshots.inc({ event: 'started' });
        break;
      case 'snapshot_complete':
        this.snapshots.inc({ event: 'complete' });
        break;
      case 'snapshot_incomplete':
        this.snapshots.inc({ event: 'incomplete' });
        break;
      case 'snapshot_evicted':
        this.snapshots.inc({ event: 'evicted' });
        break;
      case 'simulation_reset': {
        const n = Array.isArray(data['discarded_snapshots']) ? data['discarded_snapshots'].length : 0;
        if (n > 0) this.snapshots.inc({ event: 'discarded' }, n);
        break;
      }
      case 'kv_write':
        this.kvWrites.inc({ outcome: String(data['outcome']) });
        break;
      case 'kv_stale_write':
        this.kvWrites.inc({ outcome: 'stale' });
        break;
      case 'kv_conflict':
        this.kvConflicts.inc();
        break;
      case 'kv_resolved':
        this.kvResolved.inc({ strategy: String(data['strategy']) });
        break;
      case 'scenario_verdict':
        this.scenarios.inc({ scenario: String(data['scenario']), passed: String(data['passed']) });
        break;
      default:
        break;
    }
  }
}
