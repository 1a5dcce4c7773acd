/**
 * Small helpers shared by the scenario scripts: reading per-node counters out of a ClusterState,
 * averages, the last-writer-wins order, and "do this, or stop the script with a clear error".
 * No scenario logic and no I/O of its own beyond the API client it is handed.
 */
import type { ClusterState, KVEntry } from '../../../protocol/replication.js';
import { entryValue, type ApiResult, type ClusterApi, type WriteResult } from './api-client.js';

/** A per-node counter from ClusterState.metrics.nodes (the cores' status extras); 0 when absent. */
export function nodeStat(st: ClusterState, node: string, field: string): number {
  const nodes = st.metrics['nodes'];
  if (typeof nodes !== 'object' || nodes === null) return 0;
  const extra = (nodes as Record<string, unknown>)[node];
  if (typeof extra !== 'object' || extra === null) return 0;
  const v = (extra as Record<string, unknown>)[field];
  return typeof v === 'number' ? v : 0;
}

/** The sum of a per-node counter over every node. */
export function sumStat(st: ClusterState, field: string): number {
  return st.node_ids.reduce((s, n) => s + nodeStat(st, n, field), 0);
}

/** A fabric counter from ClusterState.metrics.fabric (dropped_rate, dropped_partition, ...). */
export function fabricStat(st: ClusterState, field: string): number {
  const f = st.metrics['fabric'];
  if (typeof f !== 'object' || f === null) return 0;
  const v = (f as Record<string, unknown>)[field];
  return typeof v === 'number' ? v : 0;
}

export function avg(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export const ms = (x: number): string => `${Math.round(x * 10) / 10} ms`;

/** Last-writer-wins order (HLC timestamp, then node id), as the cores apply it. */
export function lwwWinner(entries: readonly KVEntry[]): KVEntry | undefined {
  let best: KVEntry | undefined;
  for (const e of entries) {
    if (!best || e.timestamp > best.timestamp || (e.timestamp === best.timestamp && e.node_id > best.node_id)) best = e;
  }
  return best;
}

/** A write that must succeed for the script to make sense; otherwise the script stops with the reason. */
export async function mustWrite(
  api: ClusterApi,
  node: string | undefined,
  key: string,
  value: string,
): Promise<WriteResult> {
  const r = await api.write(node, key, value);
  if (!r.ok) throw new Error(`write of ${key} on ${node ?? 'the default node'} failed (${r.status}): ${r.error}`);
  return r.body;
}

/** Any call that must succeed (fault injection, healing, ...). */
export async function must<T>(what: string, p: Promise<ApiResult<T>>): Promise<T> {
  const r = await p;
  if (!r.ok) throw new Error(`${what} failed (${r.status}): ${r.error}`);
  return r.body;
}

/** The value a read at `node` returns, or null (not found / refused), with the raw answer. */
export async function readValue(
  api: ClusterApi,
  node: string,
  key: string,
): Promise<{ value: string | null; timestamp: number | null; error?: string }> {
  const r = await api.read(node, key);
  if (r.ok) return { value: entryValue(r.body.entry), timestamp: r.body.entry.timestamp };
  return { value: null, timestamp: null, error: r.error };
}

/** The value a node's own store holds for a key (no quorum, no repair): what that replica really has. */
export async function storedValue(api: ClusterApi, node: string, key: string): Promise<string | null> {
  const r = await api.store(node);
  if (!r.ok) return null;
  const e = r.body[key];
  return e === undefined || e.tombstone ? null : entryValue(e);
}

/** Runs `fn` over `items` with at most `limit` in flight, keeping the order of results. */
export async function pool<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i] as T, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, () => worker()));
  return out;
}
