/**
 * The replication simulator's page: header, cluster picker and create form, and the layout that
 * holds the topology (topology.tsx), the controls (controls.tsx), and the places of the views to
 * come (message flow, history, node drawer, scenarios). Views read the store's signals; the model's
 * rules live in model.ts, the socket and fetches in store.ts.
 */
import { useComputed } from '@preact/signals';
import { useEffect, useState } from 'preact/hooks';
import type { JSX } from 'preact';
import { api } from '../shared/api.js';
import type { ClusterModel, ClusterStateWire } from './model.js';
import type { ReplicationStore } from './store.js';
import { ConsolePanel, EventList, FaultPanel, LinkForm, NodeTable } from './controls.js';
import { Legend, Topology } from './topology.js';
import { MessageFlow } from './flow.js';
import { LoadPanel } from './load.js';
import { ScenarioPanel } from './scenarios.js';
import { NodeDrawer } from './drawer.js';
import { HistoryPanel } from './history.js';
import { ClockSkewControl, StrategyPanel, TopologyOverlay, watchSkews } from './strategy-views.js';
import { chosenLink, cpath, faultMessage, selectedCluster, selectedNodes } from './ui-state.js';
import { TimeTravelPanel, travelledModel } from './timeline-panel.js';
import { pure } from './pure.js';

export const strategies = ['raft', 'single_leader', 'multi_leader', 'leaderless'] as const;

// Panels whose props do not change with the model: they redraw on their own signals only, not on
// every model update (index updates arrive several times a second under load).
const Load = pure(LoadPanel, 'LoadPanel');
const History = pure(HistoryPanel, 'HistoryPanel');
const Events = pure(EventList, 'EventList');
/** The create form's bounds on Nodes (the server enforces its own, nodeCountMax). */
export const nodesInputMin = 1;
export const nodesInputMax = 64;

export function App({ store }: { store: ReplicationStore }): JSX.Element {
  const current = useComputed(() => {
    const all = store.clusters.value;
    const id = selectedCluster.value;
    if (id !== null && all.has(id)) return all.get(id) as ClusterModel;
    // Nothing chosen (or it went away): the newest cluster.
    let newest: ClusterModel | undefined;
    for (const c of all.values()) if (!newest || c.created > newest.created) newest = c;
    return newest ?? null;
  });
  const c = current.value;
  store.watched = c?.id ?? null;
  useEffect(() => watchSkews(store), [store]);
  return (
    <>
      <header class="top">
        <h1>Replication simulator</h1>
        <span class="conn">events: {store.socket.status.value}</span>
        {store.fetchError.value !== null && <span class="conn">({store.fetchError.value})</span>}
      </header>
      <main>
        <section class="panel" aria-labelledby="clusters-h">
          <h2 id="clusters-h">Clusters</h2>
          <div class="row">
            <ClusterPicker store={store} current={c} />
            <CreateForm store={store} />
          </div>
        </section>
        <ScenarioPanel store={store} current={c} />
        <TimeTravelPanel store={store} />
        {c === null ? (
          <p class="muted">No cluster yet: create one above.</p>
        ) : (
          <div class="layout" style={{ marginTop: '12px' }}>
            <section class="panel area-topology" aria-labelledby="topology-h">
              <h2 id="topology-h">
                Topology · {c.strategy}
                {c.leaderId !== null ? ` · leader ${c.leaderId}` : ''}
              </h2>
              <MessageFlow store={store} cluster={c}>
                <Topology cluster={travelledModel(store, c)} overlay={TopologyOverlay} />
              </MessageFlow>
              <Legend />
              <StrategyPanel store={store} cluster={c} />
            </section>
            <div class="area-side">
              <FaultPanel store={store} cluster={c} />
              <ClockSkewControl cluster={c} />
              {chosenLink.value !== null && (
                <LinkForm
                  key={`${c.id} ${chosenLink.value.join(' ')}`}
                  store={store}
                  cluster={c}
                  link={chosenLink.value}
                />
              )}
              <ConsolePanel cluster={c} />
              <NodeTable cluster={c} />
              <NodeDrawer store={store} cluster={c} />
              <Events store={store} clusterId={c.id} />
            </div>
            {/* Room for the next views: message flow (Canvas), history timeline, node drawer, scenarios. */}
            <div class="area-flow">
              <Load store={store} clusterId={c.id} />
            </div>
            <div class="area-history">
              <History key={c.id} store={store} clusterId={c.id} />
            </div>
          </div>
        )}
      </main>
    </>
  );
}

function ClusterPicker({ store, current }: { store: ReplicationStore; current: ClusterModel | null }): JSX.Element {
  const all = [...store.clusters.value.values()].sort((a, b) =>
    a.created < b.created ? -1 : a.created > b.created ? 1 : 0,
  );
  const del = async (): Promise<void> => {
    if (current === null) return;
    const r = await api.del(cpath(current.id));
    faultMessage.value = r.ok
      ? { text: `deleted cluster ${current.id}`, error: false }
      : { text: `delete failed: ${r.error}`, error: true };
    if (r.ok) void store.resync(current.id);
  };
  return (
    <>
      <label>
        Cluster
        <select
          value={current?.id ?? ''}
          onChange={(e) => {
            selectedCluster.value = (e.currentTarget as HTMLSelectElement).value;
            selectedNodes.value = [];
            chosenLink.value = null;
          }}
        >
          {all.length === 0 && <option value="">(none)</option>}
          {all.map((c) => (
            <option key={c.id} value={c.id}>
              {c.id} · {c.strategy}
            </option>
          ))}
        </select>
      </label>
      <button type="button" class="secondary" disabled={current === null} onClick={() => void del()}>
        Delete cluster
      </button>
    </>
  );
}

function CreateForm({ store }: { store: ReplicationStore }): JSX.Element {
  const [strategy, setStrategy] = useState<string>('raft');
  const [nodes, setNodes] = useState<string>('3');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const r = await api.post<ClusterStateWire>('/api/v1/clusters', { strategy, node_count: Number(nodes) });
    setBusy(false);
    if (!r.ok) {
      setError(`create failed: ${r.error}`);
      return;
    }
    selectedCluster.value = r.body.id;
    selectedNodes.value = [];
    chosenLink.value = null;
    void store.resync(r.body.id);
  };
  return (
    <form class="row" onSubmit={(e) => void submit(e)} aria-label="Create a cluster">
      <label>
        Strategy
        <select value={strategy} onChange={(e) => setStrategy((e.currentTarget as HTMLSelectElement).value)}>
          {strategies.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Nodes
        <input
          type="number"
          min={nodesInputMin}
          max={nodesInputMax}
          value={nodes}
          onInput={(e) => setNodes((e.currentTarget as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={busy}>
        Create
      </button>
      {error !== null && <span class="error">{error}</span>}
    </form>
  );
}
