/**
 * The names of the events the lab publishes and the envelope they travel in on `/ws`
 * (`{type, seq, ts, data}`). Only names and shapes: publishing and fan-out live in bus.ts.
 */

export type LabEventType =
  | 'simulation_reset'
  | 'process_spawned'
  | 'process_killed'
  | 'internal_event'
  | 'clock_tick'
  | 'message_sent'
  | 'message_held'
  | 'message_delivered'
  | 'message_dropped'
  | 'causal_violation'
  | 'delivery_mode_changed'
  | 'channel_faults_set'
  | 'partition_created'
  | 'faults_cleared'
  | 'marker_sent'
  | 'marker_received'
  | 'snapshot_started'
  | 'snapshot_state_recorded'
  | 'snapshot_complete'
  | 'snapshot_incomplete'
  | 'snapshot_evicted'
  | 'kv_write'
  | 'kv_conflict'
  | 'kv_resolved'
  | 'kv_stale_write'
  | 'kv_read'
  | 'scenario_started'
  | 'scenario_step'
  | 'scenario_verdict';

export const labEventTypes: readonly LabEventType[] = [
  'simulation_reset',
  'process_spawned',
  'process_killed',
  'internal_event',
  'clock_tick',
  'message_sent',
  'message_held',
  'message_delivered',
  'message_dropped',
  'causal_violation',
  'delivery_mode_changed',
  'channel_faults_set',
  'partition_created',
  'faults_cleared',
  'marker_sent',
  'marker_received',
  'snapshot_started',
  'snapshot_state_recorded',
  'snapshot_complete',
  'snapshot_incomplete',
  'snapshot_evicted',
  'kv_write',
  'kv_conflict',
  'kv_resolved',
  'kv_stale_write',
  'kv_read',
  'scenario_started',
  'scenario_step',
  'scenario_verdict',
];

export type EventData = Record<string, unknown>;

/** What the cores hand to the bus: published once, fanned out to every client. */
export type EmitFn = (type: LabEventType, data: EventData) => void;

/** The WebSocket envelope. seq increases by one per published event, so a gap shows a loss. */
export interface LabEvent {
  type: LabEventType;
  seq: number;
  /** Wall-clock Unix ms when the event was published. */
  ts: number;
  data: EventData;
}
