#!/usr/bin/env node
// Writes the three Grafana dashboards in this folder (replication.json, flags.json, clocklab.json)
// from one description, so their common rows (HTTP from http_server_request_duration_seconds,
// process from prom-client's default metrics) stay alike: `node docs/grafana/generate.mjs`.
// test/http/metrics.test.ts checks that every metric the dashboards query is on the service's /metrics.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const H = 'http_server_request_duration_seconds';
const sel = (extra = '') => `{instance=~"$instance"${extra ? `,${extra}` : ''}}`;
const rate = (metric, extra = '') => `rate(${metric}${sel(extra)}[$__rate_interval])`;

function httpRow() {
  return [
    row('HTTP (every request, by route template)'),
    ts('Requests/s by route', [
      [`sum by (http_request_method, http_route) (${rate(`${H}_count`)})`, '{{http_request_method}} {{http_route}}'],
    ], 'reqps'),
    ts('Latency p99 by route', [
      [`histogram_quantile(0.99, sum by (le, http_route) (${rate(`${H}_bucket`)}))`, '{{http_route}}'],
    ], 's'),
    ts('Latency p50 / p95 / p99 (all routes)', [
      [`histogram_quantile(0.5, sum by (le) (${rate(`${H}_bucket`)}))`, 'p50'],
      [`histogram_quantile(0.95, sum by (le) (${rate(`${H}_bucket`)}))`, 'p95'],
      [`histogram_quantile(0.99, sum by (le) (${rate(`${H}_bucket`)}))`, 'p99'],
    ], 's'),
    ts('Server errors (5xx) ratio', [
      [
        `sum(${rate(`${H}_count`, 'http_response_status_code=~"5.."')}) / sum(${rate(`${H}_count`)})`,
        '5xx / all',
      ],
    ], 'percentunit'),
    ts('Responses/s by status', [
      [`sum by (http_response_status_code) (${rate(`${H}_count`)})`, '{{http_response_status_code}}'],
    ], 'reqps'),
    ts('Client errors (4xx)/s by route', [
      [
        `sum by (http_route, http_response_status_code) (${rate(`${H}_count`, 'http_response_status_code=~"4.."')})`,
        '{{http_response_status_code}} {{http_route}}',
      ],
    ], 'reqps'),
    ts('Handler failures/s (500 threw or unserialisable, 503 deadline)', [
      [`sum by (route, kind) (${rate('http_handler_errors_total')})`, '{{kind}} {{route}}'],
    ], 'reqps'),
    ts('Mean latency by route', [
      [
        `sum by (http_route) (${rate(`${H}_sum`)}) / sum by (http_route) (${rate(`${H}_count`)})`,
        '{{http_route}}',
      ],
    ], 's'),
  ];
}

function processRow(p) {
  return [
    row('Process (prom-client default metrics)'),
    ts('CPU (cores)', [
      [`${rate(`${p}process_cpu_user_seconds_total`)}`, 'user'],
      [`${rate(`${p}process_cpu_system_seconds_total`)}`, 'system'],
    ], 'short'),
    ts('Memory', [
      [`${p}process_resident_memory_bytes${sel()}`, 'resident'],
      [`${p}nodejs_heap_size_used_bytes${sel()}`, 'heap used'],
      [`${p}nodejs_heap_size_total_bytes${sel()}`, 'heap total'],
    ], 'bytes'),
    ts('Event loop lag', [
      [`${p}nodejs_eventloop_lag_p50_seconds${sel()}`, 'p50'],
      [`${p}nodejs_eventloop_lag_p99_seconds${sel()}`, 'p99'],
    ], 's'),
    ts('GC time/s by kind', [[`sum by (kind) (${rate(`${p}nodejs_gc_duration_seconds_sum`)})`, '{{kind}}']], 'percentunit'),
    ts('Open file descriptors and handles', [
      [`${p}process_open_fds${sel()}`, 'fds'],
      [`${p}nodejs_active_handles_total${sel()}`, 'handles'],
    ], 'short'),
    ts('Unhandled rejections and uncaught exceptions/s', [
      [`${rate('process_unhandled_rejections_total')}`, 'unhandled rejections'],
      [`${rate('process_uncaught_exceptions_total')}`, 'uncaught exceptions'],
    ], 'short'),
  ];
}

const services = {
  replication: {
    title: 'simlab · replication simulator',
    uid: 'simlab-replication',
    instanceMetric: 'sim_ws_events_dropped_total',
    prefix: '',
    domain: () => [
      row('Replication'),
      ts('Writes/s by cluster and strategy', [
        [`sum by (cluster_id, strategy) (${rate('sim_writes_total')})`, '{{cluster_id}} {{strategy}}'],
      ], 'ops'),
      ts('Reads/s by cluster', [[`sum by (cluster_id) (${rate('sim_reads_total')})`, '{{cluster_id}}']], 'ops'),
      ts('Replication lag by follower (ms)', [
        [`max by (cluster_id, follower_id) (sim_replication_lag_ms${sel()})`, '{{cluster_id}} {{follower_id}}'],
      ], 'ms'),
      ts('Conflicts/s by resolver', [
        [`sum by (cluster_id, resolver) (${rate('sim_conflicts_total')})`, '{{cluster_id}} {{resolver}}'],
      ], 'ops'),
      ts('Quorum failures/s', [[`sum by (cluster_id) (${rate('sim_quorum_failures_total')})`, '{{cluster_id}}']], 'ops'),
      ts('Dropped messages/s (full queues)', [
        [`sum by (cluster_id) (${rate('sim_dropped_messages_total')})`, '{{cluster_id}}'],
      ], 'ops'),
      ts('Partitions active', [[`sum by (cluster_id) (sim_partition_active${sel()})`, '{{cluster_id}}']], 'short'),
      ts('Node worker exits/s by reason', [[`sum by (reason) (${rate('sim_worker_exits_total')})`, '{{reason}}']], 'short'),
      ts('Dropped: /ws events and history operations (per s)', [
        [`${rate('sim_ws_events_dropped_total')}`, '/ws events'],
        [`sum by (cluster_id) (${rate('sim_history_dropped_total')})`, 'history {{cluster_id}}'],
      ], 'short'),
    ],
  },
  flags: {
    title: 'simlab · feature flags',
    uid: 'simlab-flags',
    instanceMetric: 'flags_http_requests_total',
    prefix: 'flags_',
    domain: () => [
      row('Flags'),
      ts('Evaluations/s by reason', [[`sum by (reason) (${rate('flags_evaluations_total')})`, '{{reason}}']], 'ops'),
      ts('Evaluation warnings/s by code', [
        [`sum by (code) (${rate('flags_evaluation_warnings_total')})`, '{{code}}'],
      ], 'ops'),
      ts('SDK stream clients', [
        [`flags_sse_clients${sel()}`, 'SSE'],
        [`flags_ld_stream_clients${sel()}`, 'LaunchDarkly relay'],
      ], 'short'),
      ts('Stream events/s', [
        [`${rate('flags_sse_events_sent_total')}`, 'events sent'],
        [`${rate('flags_sse_connections_total')}`, 'connections'],
        [`${rate('flags_sse_resumed_total')}`, 'resumed from log'],
      ], 'ops'),
      ts('Stream clients cut off or refused (per s)', [
        [`${rate('flags_sse_slow_clients_disconnected_total')}`, 'slow, disconnected'],
        [`${rate('flags_sse_refused_total')}`, 'refused over cap'],
      ], 'short'),
      ts('Logins/s by outcome', [[`sum by (outcome) (${rate('flags_logins_total')})`, '{{outcome}}']], 'ops'),
      ts('Change feed position and environments loaded', [
        [`flags_change_feed_position${sel()}`, 'feed position'],
        [`flags_environments_loaded${sel()}`, 'environments loaded'],
      ], 'short'),
      ts('LaunchDarkly events received/s', [[`sum(${rate('flags_ld_events_received_total')})`, 'events']], 'ops'),
    ],
  },
  clocklab: {
    title: 'simlab · clock lab',
    uid: 'simlab-clocklab',
    instanceMetric: 'vc_ws_clients_connected',
    prefix: '',
    domain: () => [
      row('Clock lab'),
      ts('WebSocket clients', [
        [`vc_ws_clients_connected${sel()}`, 'lab /ws'],
        [`vc_proxy_ws_clients_connected${sel()}`, 'via proxy'],
      ], 'short'),
      ts('Events dropped/s', [
        [`${rate('vc_ws_events_dropped_total')}`, 'ws client queue full'],
        [`${rate('vc_event_bus_publish_drops')}`, 'bus buffer full'],
        [`${rate('vc_proxy_ws_events_dropped_total')}`, 'proxy queue full'],
      ], 'short'),
      ts('Messages/s', [
        [`sum by (cast) (${rate('vc_messages_sent_total')})`, 'sent {{cast}}'],
        [`${rate('vc_messages_delivered_total')}`, 'delivered'],
        [`${rate('vc_messages_held_total')}`, 'held back'],
        [`sum by (reason) (${rate('vc_messages_dropped_total')})`, 'dropped {{reason}}'],
      ], 'ops'),
      ts('In flight, hold-back depth, bus buffer', [
        [`vc_messages_in_flight${sel()}`, 'in flight'],
        [`vc_holdback_depth${sel()}`, 'hold-back'],
        [`vc_event_bus_buffered${sel()}`, 'bus buffered'],
      ], 'short'),
      ts('Causal violations/s', [[`${rate('vc_causal_violations_total')}`, 'violations']], 'short'),
      ts('Snapshots/s by event', [[`sum by (event) (${rate('vc_snapshots_total')})`, '{{event}}']], 'short'),
      ts('KV writes/s by outcome, conflicts', [
        [`sum by (outcome) (${rate('vc_kv_writes_total')})`, '{{outcome}}'],
        [`${rate('vc_kv_conflicts_total')}`, 'conflicts'],
      ], 'ops'),
      ts('Processes by status', [[`sum by (status) (vc_processes${sel()})`, '{{status}}']], 'short'),
    ],
  },
};

let nextId = 1;
let y = 0;
let x = 0;
function row(title) {
  if (x !== 0) y += 8;
  x = 0;
  const p = { id: nextId++, type: 'row', title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] };
  y += 1;
  return p;
}
function ts(title, queries, unit) {
  const p = {
    id: nextId++,
    type: 'timeseries',
    title,
    datasource: { type: 'prometheus', uid: '${datasource}' },
    gridPos: { h: 8, w: 12, x, y },
    fieldConfig: { defaults: { unit }, overrides: [] },
    options: { legend: { displayMode: 'list', placement: 'bottom' }, tooltip: { mode: 'multi', sort: 'desc' } },
    targets: queries.map(([expr, legendFormat], i) => ({
      refId: String.fromCharCode(65 + i),
      datasource: { type: 'prometheus', uid: '${datasource}' },
      expr,
      legendFormat,
    })),
  };
  if (x === 0) x = 12;
  else {
    x = 0;
    y += 8;
  }
  return p;
}

function build(s) {
  nextId = 1;
  y = 0;
  x = 0;
  const panels = [...httpRow(), ...s.domain(), ...processRow(s.prefix)];
  return {
    title: s.title,
    uid: s.uid,
    description: `${s.title}: requests by route template, errors and latency (http_server_request_duration_seconds), the service's own metrics, and the process.`,
    tags: ['simlab'],
    schemaVersion: 39,
    version: 1,
    editable: true,
    graphTooltip: 1,
    refresh: '10s',
    time: { from: 'now-1h', to: 'now' },
    timepicker: {},
    annotations: { list: [] },
    links: [],
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Prometheus',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
          refresh: 1,
        },
        {
          name: 'instance',
          label: 'Instance',
          type: 'query',
          datasource: { type: 'prometheus', uid: '${datasource}' },
          query: { query: `label_values(${s.instanceMetric}, instance)`, refId: 'instance' },
          definition: `label_values(${s.instanceMetric}, instance)`,
          includeAll: true,
          multi: true,
          allValue: '.*',
          current: {},
          refresh: 2,
          hide: 0,
        },
      ],
    },
    panels,
  };
}

for (const [name, s] of Object.entries(services)) {
  writeFileSync(path.join(here, `${name}.json`), `${JSON.stringify(build(s), null, 2)}\n`);
}
