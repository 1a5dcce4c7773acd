/**
 * The replication page's controls: node faults on the selection (pause, resume, crash, restart,
 * remove, add), partition and heal, opening the link of two selected nodes, a link's latency, drop
 * rate and cut, the console (write, read, delete with the answer, the node and the latency), and the
 * nodes table. Each calls the API and shows its outcome; the page learns the effect from events
 * and snapshots like any change.
 */
import { useState } from 'preact/hooks';
import type { JSX } from 'preact';
import { api, type ApiResult } from '../shared/api.js';
import { linkId, partitionRequest, type ClusterModel, type NodeView } from './model.js';
import type { ReplicationStore } from './store.js';
import { pure } from './pure.js';

/** Events listed per cluster (the store keeps more, over every cluster). */
export const recentShown = 30;
import { chosenLink, cpath, faultMessage, selectedNodes } from './ui-state.js';

type NodeAction = 'pause' | 'resume' | 'crash' | 'restart' | 'remove';

async function onNodes(store: ReplicationStore, cluster: ClusterModel, action: NodeAction): Promise<void> {
  const ids = selectedNodes.value.filter((id) => cluster.nodes[id] && !(cluster.nodes[id] as NodeView).removed);
  if (ids.length === 0) {
    faultMessage.value = { text: `select a node first, then ${action}`, error: true };
    return;
  }
  // Nodes being removed leave the selection first, so the node drawer stops reading their log and
  // store (a read after the removal would be a 404) before the removal goes out.
  if (action === 'remove') selectedNodes.value = selectedNodes.value.filter((id) => !ids.includes(id));
  const results = await Promise.all(
    ids.map(
      (id): Promise<ApiResult<unknown>> =>
        action === 'remove'
          ? api.del(cpath(cluster.id, `/nodes/${encodeURIComponent(id)}`))
          : api.post(cpath(cluster.id, `/nodes/${encodeURIComponent(id)}/${action}`)),
    ),
  );
  const failed = results.map((r, i) => (r.ok ? '' : `${ids[i]}: ${r.error}`)).filter((s) => s !== '');
  faultMessage.value =
    failed.length > 0
      ? { text: `${action} failed for ${failed.join('; ')}`, error: true }
      : { text: `${action}: ${ids.join(', ')}`, error: false };
  store.refreshSoon(cluster.id, 0);
}

export function FaultPanel({ store, cluster }: { store: ReplicationStore; cluster: ClusterModel }): JSX.Element {
  const sel = selectedNodes.value.filter((id) => cluster.nodes[id] !== undefined);
  const partition = async (): Promise<void> => {
    const req = partitionRequest(cluster, sel);
    if (!req.ok) {
      faultMessage.value = { text: req.error, error: true };
      return;
    }
    const r = await api.post<{ partition_id: string }>(cpath(cluster.id, '/network/partition'), req.body);
    faultMessage.value = r.ok
      ? {
          text: `partition ${r.body.partition_id}: ${req.body.group_a.join(', ')} | ${req.body.group_b.join(', ')}`,
          error: false,
        }
      : { text: `partition failed: ${r.error}`, error: true };
    store.refreshSoon(cluster.id, 0);
  };
  const heal = async (): Promise<void> => {
    const r = await api.del(cpath(cluster.id, '/network/faults'));
    faultMessage.value = r.ok
      ? { text: 'healed: every partition, latency and drop rate removed', error: false }
      : { text: `heal failed: ${r.error}`, error: true };
    store.refreshSoon(cluster.id, 0);
  };
  const addNode = async (): Promise<void> => {
    const r = await api.post<{ id: string }>(cpath(cluster.id, '/nodes'));
    faultMessage.value = r.ok
      ? { text: `added ${r.body.id}`, error: false }
      : { text: `add node failed: ${r.error}`, error: true };
    store.refreshSoon(cluster.id, 0);
  };
  const msg = faultMessage.value;
  const partitions = Object.values(cluster.partitions);
  return (
    <section class="panel" aria-labelledby="faults-h">
      <h2 id="faults-h">Faults</h2>
      <p class="muted" style={{ margin: '0 0 4px' }}>
        Selected: {sel.length === 0 ? 'none' : sel.join(', ')}
      </p>
      <div class="row">
        <button type="button" onClick={() => void onNodes(store, cluster, 'pause')}>
          Pause
        </button>
        <button type="button" onClick={() => void onNodes(store, cluster, 'resume')}>
          Resume
        </button>
        <button type="button" class="danger" onClick={() => void onNodes(store, cluster, 'crash')}>
          Crash
        </button>
        <button type="button" onClick={() => void onNodes(store, cluster, 'restart')}>
          Restart
        </button>
        <button type="button" class="danger" onClick={() => void onNodes(store, cluster, 'remove')}>
          Remove
        </button>
        <button type="button" class="secondary" onClick={() => void addNode()}>
          Add node
        </button>
      </div>
      <div class="row">
        <button type="button" onClick={() => void partition()}>
          Partition
        </button>
        <button type="button" class="secondary" onClick={() => void heal()}>
          Heal
        </button>
        <button type="button" class="secondary" onClick={() => (selectedNodes.value = [])}>
          Clear selection
        </button>
        {/* The keyboard's way to a link (and the only one to a painted link besides a click on it). */}
        <button
          type="button"
          class="secondary"
          disabled={sel.length !== 2}
          title="Select exactly two nodes to open the link between them"
          onClick={() => {
            if (sel.length === 2) chosenLink.value = [sel[0] as string, sel[1] as string];
          }}
        >
          Open link
        </button>
      </div>
      <p class="muted" style={{ margin: '4px 0' }}>
        Partitions:{' '}
        {partitions.length === 0
          ? 'none'
          : partitions.map((p) => `${p.id} (${p.groupA.join(', ')} | ${p.groupB.join(', ')})`).join('; ')}
      </p>
      <p class={`status-line ${msg?.error ? 'error' : ''}`} aria-live="polite">
        {msg?.text ?? ''}
      </p>
    </section>
  );
}

export function LinkForm({
  store,
  cluster,
  link,
}: {
  store: ReplicationStore;
  cluster: ClusterModel;
  link: readonly [string, string];
}): JSX.Element {
  const [a, b] = link;
  const cur = cluster.links[linkId(a, b)];
  const [latency, setLatency] = useState(String(cur?.latencyMs ?? 0));
  const [drop, setDrop] = useState(String(cur?.dropRate ?? 0));
  const [both, setBoth] = useState(true);
  const [msg, setMsg] = useState<{ text: string; error: boolean } | null>(null);
  const apply = async (e: Event): Promise<void> => {
    e.preventDefault();
    const ms = Number(latency);
    const rate = Number(drop);
    const dirs: Array<[string, string]> = both
      ? [
          [a, b],
          [b, a],
        ]
      : [[a, b]];
    const errors: string[] = [];
    for (const [from, to] of dirs) {
      const l = await api.post(cpath(cluster.id, '/network/latency'), { from, to, ms });
      if (!l.ok) errors.push(`latency ${from}→${to}: ${l.error}`);
      const d = await api.post(cpath(cluster.id, '/network/drop'), { from, to, rate });
      if (!d.ok) errors.push(`drop ${from}→${to}: ${d.error}`);
    }
    // Link settings come with no event: the snapshot shows them.
    store.refreshSoon(cluster.id, 0);
    setMsg(
      errors.length > 0
        ? { text: errors.join('; '), error: true }
        : { text: `set ${ms} ms, drop ${rate} on ${a}${both ? '↔' : '→'}${b}`, error: false },
    );
  };
  // A partition of just these two nodes: the link is cut both ways, every other link stays (Heal undoes it).
  const cut = async (): Promise<void> => {
    const r = await api.post<{ partition_id: string }>(cpath(cluster.id, '/network/partition'), {
      group_a: [a],
      group_b: [b],
    });
    store.refreshSoon(cluster.id, 0);
    setMsg(
      r.ok
        ? { text: `cut ${a}↔${b} (partition ${r.body.partition_id})`, error: false }
        : { text: `cut failed: ${r.error}`, error: true },
    );
  };
  return (
    <section class="panel" aria-labelledby="link-h">
      <h2 id="link-h">
        Link {a} – {b}
      </h2>
      <form onSubmit={(e) => void apply(e)}>
        <div class="row">
          <label>
            Latency (ms)
            <input
              type="number"
              min={0}
              max={60000}
              step={1}
              value={latency}
              onInput={(e) => setLatency((e.currentTarget as HTMLInputElement).value)}
            />
          </label>
          <label>
            Drop rate
            <input
              type="number"
              min={0}
              max={1}
              step={0.05}
              value={drop}
              onInput={(e) => setDrop((e.currentTarget as HTMLInputElement).value)}
            />
          </label>
          <label>
            <input
              type="checkbox"
              checked={both}
              onChange={(e) => setBoth((e.currentTarget as HTMLInputElement).checked)}
            />
            Both directions
          </label>
        </div>
        <div class="row">
          <button type="submit">Apply to link</button>
          <button type="button" class="danger" onClick={() => void cut()}>
            Cut link
          </button>
          <button type="button" class="secondary" onClick={() => (chosenLink.value = null)}>
            Close link
          </button>
        </div>
      </form>
      <p class={`status-line ${msg?.error ? 'error' : ''}`} aria-live="polite">
        {msg?.text ?? ''}
      </p>
    </section>
  );
}

interface EntryWire {
  key: string;
  value: string;
  tombstone: boolean;
  version: number;
}

function decodeValue(b64: string): string {
  try {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new TextDecoder().decode(bytes);
  } catch {
    return b64;
  }
}

/** An entry's value as text, or that it is a tombstone. */
const shown = (e: EntryWire): string => (e.tombstone ? '(deleted)' : decodeValue(e.value));
/** `<key> = <value> <on|from> <node> (version <v>) in <ms>`: what a console answer says. */
const answerText = (r: { entry: EntryWire; node_id: string }, prep: string, ms: string): string =>
  `${r.entry.key} = ${shown(r.entry)} ${prep} ${r.node_id} (version ${r.entry.version}) in ${ms}`;

/** One entry of a batch answer: written (non-atomic: each entry answered on its own) or refused. */
type BatchAnswer =
  | { atomic: true; entries: EntryWire[] }
  | { results: Array<{ entry: EntryWire; node_id: string } | { key: string; error: string }> };

/** `key=value` lines (blank lines skipped) as batch entries, or what is wrong with them. */
export function parseBatchLines(text: string): Array<{ key: string; value: string }> | string {
  const entries: Array<{ key: string; value: string }> = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === '') continue;
    const eq = line.indexOf('=');
    if (eq <= 0) return `line ${i + 1}: write key=value`;
    entries.push({ key: line.slice(0, eq), value: line.slice(eq + 1) });
  }
  return entries.length === 0 ? 'enter at least one key=value line' : entries;
}

function batchAnswerText(a: BatchAnswer, took: string): string {
  if ('atomic' in a) return `wrote ${a.entries.length} keys atomically in ${took}`;
  const failed = a.results.filter((r) => 'error' in r);
  const nodes = [...new Set(a.results.flatMap((r) => ('node_id' in r ? [r.node_id] : [])))].join(', ');
  const head = `wrote ${a.results.length - failed.length} of ${a.results.length} keys${nodes ? ` on ${nodes}` : ''}`;
  const first = failed[0];
  return `${head} in ${took}` + (first && 'error' in first ? `; ${first.key}: ${first.error}` : '');
}

export function ConsolePanel({ cluster }: { cluster: ClusterModel }): JSX.Element {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [target, setTarget] = useState('');
  const [batch, setBatch] = useState('');
  const [atomic, setAtomic] = useState(false);
  const [out, setOut] = useState<{ text: string; error: boolean }>({ text: '', error: false });
  const live = cluster.nodeIds.filter((id) => !(cluster.nodes[id] as NodeView).removed);
  const ms = (x: number): string => `${x.toFixed(1)} ms`;
  const write = async (): Promise<void> => {
    if (key === '') return setOut({ text: 'write: enter a key first', error: true });
    const body: Record<string, string> = { key, value, client_id: 'page' };
    if (target !== '') body['target_node_id'] = target;
    const r = await api.post<{ entry: EntryWire; node_id: string }>(cpath(cluster.id, '/write'), body);
    setOut(
      r.ok
        ? {
            text: `wrote ${answerText(r.body, 'on', ms(r.ms))}`,
            error: false,
          }
        : { text: `write ${key} failed (${r.status}): ${r.error} (${ms(r.ms)})`, error: true },
    );
  };
  const read = async (): Promise<void> => {
    if (key === '') return setOut({ text: 'read: enter a key first', error: true });
    const q = new URLSearchParams({ key, client_id: 'page' });
    if (target !== '') q.set('node_id', target);
    const r = await api.get<{ entry: EntryWire; node_id: string }>(`${cpath(cluster.id, '/read')}?${q.toString()}`);
    setOut(
      r.ok
        ? {
            text: `read ${answerText(r.body, 'from', ms(r.ms))}`,
            error: false,
          }
        : { text: `read ${key} failed (${r.status}): ${r.error} (${ms(r.ms)})`, error: true },
    );
  };
  const del = async (): Promise<void> => {
    if (key === '') return setOut({ text: 'delete: enter a key first', error: true });
    const q = new URLSearchParams({ key, client_id: 'page' });
    if (target !== '') q.set('node_id', target);
    const r = await api.del(`${cpath(cluster.id, '/kv')}?${q.toString()}`);
    setOut(
      r.ok
        ? { text: `deleted ${key} in ${ms(r.ms)}`, error: false }
        : { text: `delete ${key} failed (${r.status}): ${r.error} (${ms(r.ms)})`, error: true },
    );
  };
  const writeBatch = async (): Promise<void> => {
    const parsed = parseBatchLines(batch);
    if (typeof parsed === 'string') return setOut({ text: `batch: ${parsed}`, error: true });
    const entries = parsed.map((e) => (target === '' ? e : { ...e, target_node_id: target }));
    const body = { entries, client_id: 'page', ...(atomic ? { atomic: true } : {}) };
    const r = await api.post<BatchAnswer>(cpath(cluster.id, '/write-batch'), body);
    setOut(
      r.ok
        ? { text: batchAnswerText(r.body, ms(r.ms)), error: false }
        : {
            text: `batch of ${entries.length} failed (${r.status}): ${r.error} (${ms(r.ms)})`,
            error: true,
          },
    );
  };
  return (
    <section class="panel" aria-labelledby="console-h">
      <h2 id="console-h">Console</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void write();
        }}
      >
        <div class="row">
          <label>
            Key
            <input
              type="text"
              value={key}
              maxLength={1024}
              onInput={(e) => setKey((e.currentTarget as HTMLInputElement).value)}
            />
          </label>
          <label>
            Value
            <input type="text" value={value} onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)} />
          </label>
        </div>
        <div class="row">
          <label>
            Target node
            <select value={target} onChange={(e) => setTarget((e.currentTarget as HTMLSelectElement).value)}>
              <option value="">default (leader or first)</option>
              {live.map((id) => (
                <option key={id} value={id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Write</button>
          <button type="button" onClick={() => void read()}>
            Read
          </button>
          <button type="button" class="secondary" onClick={() => void del()}>
            Delete
          </button>
        </div>
        <div class="row">
          <label>
            Batch (one key=value per line)
            <textarea
              rows={3}
              value={batch}
              onInput={(e) => setBatch((e.currentTarget as HTMLTextAreaElement).value)}
            />
          </label>
          <label>
            <input
              type="checkbox"
              checked={atomic}
              onChange={(e) => setAtomic((e.currentTarget as HTMLInputElement).checked)}
            />{' '}
            Atomic (single_leader)
          </label>
          <button type="button" onClick={() => void writeBatch()}>
            Write batch
          </button>
        </div>
      </form>
      <p role="status" class={`status-line ${out.error ? 'error' : ''}`}>
        {out.text}
      </p>
    </section>
  );
}

export function NodeTable({ cluster }: { cluster: ClusterModel }): JSX.Element {
  return (
    <section class="panel" aria-labelledby="nodes-h">
      <h2 id="nodes-h">Nodes</h2>
      <table class="nodes">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Role</th>
            <th scope="col">State</th>
            <th scope="col">Commit</th>
            <th scope="col">Applied</th>
            <th scope="col">Lag</th>
          </tr>
        </thead>
        <tbody>
          {cluster.nodeIds.map((id) => {
            const n = cluster.nodes[id] as NodeView;
            return (
              <NodeRow
                key={id}
                id={id}
                role={`${n.role}${n.staleLeader ? ' (stale)' : ''}`}
                state={n.removed ? 'removed' : n.state}
                commit={n.commitIndex}
                applied={n.lastApplied}
                lag={n.lag}
              />
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

/** One node's row: redrawn only when one of its cells changes. */
const NodeRow = pure(
  (p: { id: string; role: string; state: string; commit: number; applied: number; lag: number }) => (
    <tr>
      <td>{p.id}</td>
      <td>{p.role}</td>
      <td>{p.state}</td>
      <td>{p.commit}</td>
      <td>{p.applied}</td>
      <td>{p.lag}</td>
    </tr>
  ),
  'NodeRow',
);

/** Shown per event in the list: the most telling fields of its data. */
const eventDataShown = ['reason', 'state', 'term', 'epoch', 'partition_id', 'group_a', 'group_b', 'voters', 'count'];

/** The latest notable events of the cluster (elections, node states, partitions), newest first. */
export function EventList({ store, clusterId }: { store: ReplicationStore; clusterId: string }): JSX.Element {
  const mine = store.recent.value
    .filter((f) => f.cluster_id === clusterId || f.cluster_id === undefined)
    .slice(-recentShown);
  return (
    <section class="panel" aria-labelledby="events-h">
      <h2 id="events-h">Recent events</h2>
      {mine.length === 0 ? (
        <p class="muted">None since the page opened.</p>
      ) : (
        // Focusable: it scrolls, and a keyboard user must reach it (axe: scrollable-region-focusable).
        <ol class="events" reversed tabIndex={0} aria-label="Recent events, newest first">
          {mine
            .slice()
            .reverse()
            .map((f, i) => {
              const d = f.data ?? {};
              const parts = eventDataShown.filter((k) => d[k] !== undefined).map((k) => `${k}=${JSON.stringify(d[k])}`);
              const time = f.timestamp ? f.timestamp.slice(11, 23) : '';
              return (
                <li key={`${f.seq ?? ''}-${i}`}>
                  {time} {f.type}
                  {f.node_id ? ` ${f.node_id}` : ''}
                  {parts.length > 0 ? ` ${parts.join(' ')}` : ''}
                </li>
              );
            })}
        </ol>
      )}
    </section>
  );
}
