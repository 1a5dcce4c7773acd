/**
 * The node drawer: for the selected node, its log (index, term, key, committed or not), its store,
 * its hinted handoffs (leaderless: the counters GET .../state reports) and its clock (the skew
 * applied to it, and the newest HLC timestamp in its log and store). Fetched when the selection
 * changes and after /ws reports activity on the cluster (at most once a second), never on a timer.
 * It decides nothing about the cluster; the rows' words come from the pure functions below.
 */
import { useSignal } from '@preact/signals';
import { useEffect } from 'preact/hooks';
import type { JSX } from 'preact';
import { api } from '../shared/api.js';
import type { ClusterModel, FrameWire } from './model.js';
import type { ReplicationStore } from './store.js';
import { historyFaults } from './history.js';
import { cpath, selectedNodes } from './ui-state.js';

/** The drawer refetches at most this often while events stream in. */
export const drawerRefreshMinMs = 1_000;
/** Rows shown at most (the newest log entries; the store's first keys in order). */
export const logRowsShownMax = 100;
export const storeRowsShownMax = 200;

/** A log entry as the strategies' GET .../nodes/{id}/log answer it (fields differ by strategy). */
export interface LogEntryWire {
  index?: number;
  term?: number;
  epoch?: number;
  type?: string;
  kind?: string;
  key?: string;
  ops?: Array<{ key: string }>;
  committed?: boolean;
  timestamp?: number;
  last_included_index?: number;
}

export interface StoreEntryWire {
  key: string;
  value: string | null;
  vclock?: Record<string, number>;
  timestamp?: number;
  tombstone?: boolean;
  version?: number;
}

export interface LogRow {
  index: string;
  term: string;
  key: string;
  committed: string;
}

/** A log entry as a row: its term (raft) or epoch (single leader), its key(s), committed or not. */
export function logRow(e: LogEntryWire, commitIndex: number): LogRow {
  if (e.type === 'raft_snapshot') {
    const index = `≤ ${e.last_included_index ?? 0}`;
    return { index, term: String(e.term ?? '—'), key: 'snapshot', committed: 'yes' };
  }
  const index = e.index ?? 0;
  const term = e.term ?? e.epoch;
  const key = e.key ?? (e.ops ? e.ops.map((o) => o.key).join(', ') : `(${e.type ?? e.kind ?? 'entry'})`);
  const committed = e.committed ?? index <= commitIndex;
  return {
    index: String(index),
    term: term === undefined ? '—' : String(term),
    key,
    committed: committed ? 'yes' : 'no',
  };
}

/** A stored value as text: base64 on the wire, shown as UTF-8. */
export function decodeValue(b64: string | null): string {
  if (b64 === null) return '';
  try {
    const bin = atob(b64);
    return new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return b64;
  }
}

/** A vector clock as the page writes it: the nonzero entries, `p1:3 p2:1`. */
export const vclockText = (v: Record<string, number> | undefined): string =>
  Object.entries(v ?? {})
    .filter(([, n]) => n !== 0)
    .map(([p, n]) => `${p}:${n}`)
    .join(' ');

/** An HLC timestamp (Unix ns) as ISO time with milliseconds. */
export const hlcText = (ns: number): string => new Date(Math.floor(ns / 1e6)).toISOString().slice(11, 23);

interface NodeData {
  /** The node these are of (a fetch for the previous selection is not shown for the new one). */
  node: string;
  log: LogEntryWire[];
  store: StoreEntryWire[];
  metrics: Record<string, unknown> | null;
  error: string | null;
}

export function NodeDrawer({ store, cluster }: { store: ReplicationStore; cluster: ClusterModel }): JSX.Element {
  const sel = selectedNodes.value;
  const nodeId = sel.length > 0 ? (sel[sel.length - 1] as string) : null;
  const data = useSignal<NodeData | null>(null);
  const cid = cluster.id;

  // A removed node has no log or store to read (the API answers 404).
  const removed = nodeId !== null && cluster.nodes[nodeId]?.removed === true;

  useEffect(() => {
    data.value = null;
    if (nodeId === null || removed) return;
    let stopped = false;
    let inFlight = false;
    let again = false;
    let last = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const load = async (): Promise<void> => {
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      last = Date.now();
      const base = cpath(cid, `/nodes/${encodeURIComponent(nodeId)}`);
      const [log, st, state] = await Promise.all([
        api.get<LogEntryWire[]>(`${base}/log`),
        api.get<Record<string, StoreEntryWire>>(`${base}/store`),
        api.get<{ metrics?: { nodes?: Record<string, Record<string, unknown>> } }>(cpath(cid, '/state')),
      ]);
      inFlight = false;
      if (stopped) return;
      const errors = [log, st].filter((r) => !r.ok).map((r) => (r.ok ? '' : r.error));
      data.value = {
        node: nodeId,
        log: log.ok && Array.isArray(log.body) ? log.body : [],
        store: st.ok ? Object.values(st.body).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) : [],
        metrics: state.ok ? (state.body.metrics?.nodes?.[nodeId] ?? null) : null,
        error: errors.length > 0 ? errors.join('; ') : null,
      };
      if (again) {
        again = false;
        schedule();
      }
    };
    const schedule = (): void => {
      if (timer !== undefined || stopped) return;
      timer = setTimeout(
        () => {
          timer = undefined;
          void load();
        },
        Math.max(0, last + drawerRefreshMinMs - Date.now()),
      );
    };
    const unsubscribe = store.socket.subscribe((raw) => {
      const f = raw as FrameWire;
      if (f === null || typeof f !== 'object' || f.type === 'link_stats') return;
      if (f.cluster_id === cid || f.type === 'events_dropped') schedule();
    });
    void load();
    return () => {
      stopped = true;
      clearTimeout(timer);
      unsubscribe();
    };
  }, [store, cid, nodeId, removed]);

  const node = nodeId !== null ? cluster.nodes[nodeId] : undefined;
  const d = data.value !== null && data.value.node === nodeId ? data.value : null;
  const rows = d ? d.log.slice(-logRowsShownMax).map((e) => logRow(e, node?.commitIndex ?? 0)) : [];
  const skew =
    nodeId === null
      ? undefined
      : historyFaults.value.find((f) => f.kind === 'clock_skew' && f.node === nodeId && f.end_ms === null);
  let newest = 0;
  if (d) {
    for (const e of d.log) newest = Math.max(newest, e.timestamp ?? 0);
    for (const e of d.store) newest = Math.max(newest, e.timestamp ?? 0);
  }
  const m = d?.metrics ?? null;
  const hintKeys = ['hints_held', 'hints_stored', 'hints_delivered', 'hints_refused', 'hints_dropped'];
  const hints = m !== null && hintKeys.some((k) => typeof m[k] === 'number');

  return (
    <section class="panel drawer" aria-labelledby="drawer-h">
      <h2 id="drawer-h">
        {nodeId === null ? 'Node' : `Node ${nodeId}${node ? ` · ${node.role} · ${node.state}` : ''}`}
      </h2>
      {nodeId === null && <p class="muted">Select a node to see its log and store.</p>}
      {d?.error && <p class="error">{d.error}</p>}
      {nodeId !== null && (
        <dl class="facts">
          <dt>Clock</dt>
          <dd>
            {skew
              ? `skewed ${skew.value !== undefined && skew.value >= 0 ? '+' : ''}${skew.value ?? 0} ms`
              : 'no skew applied'}
            {newest > 0 ? ` · newest HLC timestamp ${hlcText(newest)} UTC` : ''}
          </dd>
          <dt>Hinted handoffs</dt>
          <dd>
            {hints && m !== null
              ? hintKeys
                  .filter((k) => typeof m[k] === 'number')
                  .map((k) => `${k.slice(6)} ${String(m[k])}`)
                  .join(', ')
              : `none in ${cluster.strategy} (leaderless only)`}
          </dd>
        </dl>
      )}
      <section role="region" aria-labelledby="node-log-h" class="drawer-part" tabIndex={0}>
        <h3 id="node-log-h">Node log</h3>
        {d && d.log.length > logRowsShownMax && (
          <p class="muted">
            the last {logRowsShownMax} of {d.log.length} entries
          </p>
        )}
        {rows.length === 0 ? (
          <p class="muted">{nodeId === null ? 'no node selected' : d ? 'empty' : 'loading…'}</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Index</th>
                <th scope="col">Term</th>
                <th scope="col">Key</th>
                <th scope="col">Committed</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r, i) => (
                <tr key={i} class={r.committed === 'no' ? 'uncommitted' : undefined}>
                  <td>{r.index}</td>
                  <td>{r.term}</td>
                  <td>{r.key}</td>
                  <td>{r.committed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section role="region" aria-labelledby="node-store-h" class="drawer-part" tabIndex={0}>
        <h3 id="node-store-h">Node store</h3>
        {!d || d.store.length === 0 ? (
          <p class="muted">{nodeId === null ? 'no node selected' : d ? 'empty' : 'loading…'}</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Value</th>
                <th scope="col">Version</th>
              </tr>
            </thead>
            <tbody>
              {d.store.slice(0, storeRowsShownMax).map((e) => (
                <tr key={e.key}>
                  <td>{e.key}</td>
                  <td>{e.tombstone ? '(deleted)' : decodeValue(e.value)}</td>
                  <td>{vclockText(e.vclock) || (e.version !== undefined ? `v${e.version}` : '')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {d && d.store.length > storeRowsShownMax && (
          <p class="muted">
            the first {storeRowsShownMax} of {d.store.length} keys
          </p>
        )}
      </section>
    </section>
  );
}
