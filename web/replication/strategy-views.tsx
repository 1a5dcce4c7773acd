/**
 * The per-strategy views of the replication page: raft's terms and votes (drawn over the topology
 * and listed), the leaderless hash ring with a key's preference list, stand-ins, hints and phi, the
 * multi-leader vector clocks and conflicts with their resolution, and clock skew (the control on
 * the selected node and its badge on the topology). Rules live in strategy-model.ts.
 */
import { signal, useSignal, type Signal } from '@preact/signals';
import type { JSX } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../shared/api.js';
import type { ClusterModel, FrameWire, NodeView } from './model.js';
import type { ReplicationStore } from './store.js';
import { pure } from './pure.js';
import { historyFaults } from './history.js';
import { cpath, faultMessage, selectedNodes } from './ui-state.js';
import {
  byNodeId,
  conflictsByKey,
  currentSkews,
  drawnTokens,
  ownerColor,
  parseConflicts,
  parseSkew,
  parseSuspicion,
  phiText,
  raftBadge,
  raftElection,
  ringAngle,
  ringPosition,
  skewBadge,
  skewOfFrame,
  sloppyQuorum,
  vclockRows,
  type KeyConflict,
  type Suspicion,
  mergeVoteTraffic,
  voteAskText,
  voteTraffic,
  type VoteAsk,
} from './strategy-model.js';
import { decodeLinkStats } from './flow-model.js';

/** Leaderless suspicion and hints, and multi-leader conflicts, are fetched this often while shown. */
export const strategyRefreshMs = 1_000;
/** The nodes' stores (for the vector clocks) are fetched at most this often (conflicts: every strategyRefreshMs). */
export const storesRefreshMinMs = 2_000;
/** Stores read for the vector clock table at most (one GET per node). */
export const vclockNodesMax = 16;

/** Clock skews set by `clock_skew_set` events, per cluster (before the history is fetched again). */
const seenSkews: Signal<ReadonlyMap<string, ReadonlyMap<string, number>>> = signal(new Map());

/** Follows clock_skew_set frames (the page calls it once); returns the unsubscribe. */
export function watchSkews(store: ReplicationStore): () => void {
  const listener = (f: FrameWire): void => {
    const s = skewOfFrame(f);
    if (s === null || f.cluster_id === undefined) return;
    const all = new Map(seenSkews.value);
    const one = new Map(all.get(f.cluster_id) ?? []);
    one.set(s.node, s.ms);
    all.set(f.cluster_id, one);
    seenSkews.value = all;
  };
  store.listeners.add(listener);
  return () => store.listeners.delete(listener);
}

function skewsOf(clusterId: string): ReadonlyMap<string, number> {
  return currentSkews(historyFaults.value, seenSkews.value.get(clusterId) ?? new Map());
}

interface Point {
  x: number;
  y: number;
}

/**
 * Drawn over the topology (inside its SVG): raft votes of the newest term as arrows (bold while
 * the election is under way, faint once it is won), each raft
 * node's term and commit index, and every node's clock skew badge. Each note is an image with its
 * own name (the node buttons keep the contract's labels).
 */
export function TopologyOverlay({
  cluster,
  pos,
  r,
}: {
  cluster: ClusterModel;
  pos: ReadonlyMap<string, Point>;
  r: number;
}): JSX.Element {
  const nodes = cluster.nodeIds.map((id) => cluster.nodes[id] as NodeView);
  const raft = cluster.strategy === 'raft';
  const election = raft ? raftElection(nodes) : null;
  const skews = skewsOf(cluster.id);
  const small = cluster.nodeIds.length > 16;
  return (
    <g class="overlay">
      <defs>
        <marker id="vote-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto">
          <path d="M0,0 L10,5 L0,10 z" fill="#a16207" />
        </marker>
      </defs>
      {election !== null &&
        election.votes
          .filter((v) => v.from !== v.to)
          .map((v) => {
            const a = pos.get(v.from);
            const b = pos.get(v.to);
            if (!a || !b) return null;
            const dx = b.x - a.x;
            const dy = b.y - a.y;
            const len = Math.hypot(dx, dy) || 1;
            const k = (r + 3) / len;
            return (
              <line
                key={`${v.from}>${v.to}`}
                class={election.underWay ? 'vote' : 'vote settled'}
                x1={a.x + dx * k}
                y1={a.y + dy * k}
                x2={b.x - dx * k}
                y2={b.y - dy * k}
                marker-end="url(#vote-arrow)"
                role="img"
                aria-label={`${v.from} ${election.underWay ? 'votes' : 'voted'} for ${v.to} in term ${election.term}`}
              />
            );
          })}
      {nodes.map((n) => {
        const p = pos.get(n.id);
        if (!p || n.removed) return null;
        const skew = skewBadge(skews.get(n.id));
        const raftText = raft && !small ? raftBadge(n) : '';
        return (
          <g key={n.id}>
            {raftText !== '' && (
              <text
                class="badge-raft"
                x={p.x}
                y={p.y - r - 6}
                text-anchor="middle"
                role="img"
                aria-label={`${n.id} ${raftText}`}
              >
                {raftText}
              </text>
            )}
            {skew !== '' && (
              <g role="img" aria-label={`${n.id} clock skew ${skew}`} class="badge-skew">
                <rect x={p.x + r - 8} y={p.y - r - 2} width={skew.length * 6.2 + 8} height={15} rx={7} />
                <text x={p.x + r - 4} y={p.y - r + 9} aria-hidden="true">
                  {skew}
                </text>
              </g>
            )}
          </g>
        );
      })}
    </g>
  );
}

/** The panel of the cluster's strategy (none for single_leader, whose topology says it all). */
export function StrategyPanel({
  store,
  cluster,
}: {
  store: ReplicationStore;
  cluster: ClusterModel;
}): JSX.Element | null {
  switch (cluster.strategy) {
    case 'raft':
      return <RaftPanel store={store} cluster={cluster} />;
    case 'leaderless':
      return <RingPanel key={cluster.id} cluster={cluster} />;
    case 'multi_leader':
      return <ConflictPanel key={cluster.id} cluster={cluster} />;
    default:
      return null;
  }
}

/** Vote messages seen within this long of each other belong to one election, ms. */
export const voteTrafficGapMs = 1_500;
/** The vote traffic of an election stays listed this long after its last vote message, ms. */
export const voteTrafficShownMs = 5_000;
/** While vote messages flow, the nodes' statuses (their votes) are fetched at most this often, ms. */
export const voteRefreshMs = 250;

/**
 * The vote messages of the election under way (or just over), from the cluster's link_stats: who
 * asks, who answers. Also fetches the statuses while they flow, so the votes cast show early.
 */
function useVoteTraffic(store: ReplicationStore, clusterId: string): { at: number; asks: VoteAsk[] } | null {
  const seen = useSignal<{ at: number; asks: VoteAsk[] } | null>(null);
  useEffect(() => {
    seen.value = null;
    let refreshedAt = 0;
    const listener = (f: FrameWire): void => {
      if (f.type !== 'link_stats' || f.cluster_id !== clusterId) return;
      const d = decodeLinkStats(f.data);
      if (d === null) return;
      const asks = voteTraffic(d.links);
      const now = Date.now();
      const prev = seen.value;
      if (asks.length === 0) {
        if (prev !== null && now - prev.at > voteTrafficShownMs) seen.value = null;
        return;
      }
      if (now - refreshedAt >= voteRefreshMs) {
        refreshedAt = now;
        store.refreshSoon(clusterId, 0);
      }
      const fresh = prev === null || now - prev.at > voteTrafficGapMs;
      seen.value = { at: now, asks: fresh ? asks : mergeVoteTraffic(prev.asks, asks) };
    };
    store.listeners.add(listener);
    return () => store.listeners.delete(listener);
  }, [store, clusterId]);
  return seen.value;
}

function RaftPanel({ store, cluster }: { store: ReplicationStore; cluster: ClusterModel }): JSX.Element {
  const traffic = useVoteTraffic(store, cluster.id);
  const nodes = cluster.nodeIds.map((id) => cluster.nodes[id] as NodeView).filter((n) => !n.removed);
  const e = raftElection(nodes);
  const summary =
    e.term === null
      ? 'No term reported yet.'
      : e.underWay
        ? `Election under way in term ${e.term}: ${e.candidates.join(', ')} standing; votes ${
            e.tally.map((x) => `${x.node} ${x.votes}`).join(', ') || 'none yet'
          }.`
        : `Term ${e.term}${cluster.leaderId !== null ? `: leader ${cluster.leaderId}` : ''}; votes ${
            e.tally.map((x) => `${x.node} ${x.votes}`).join(', ') || 'none'
          }.`;
  return (
    <section class="panel" aria-labelledby="raft-h">
      <h2 id="raft-h">Raft terms and votes</h2>
      <p aria-live="polite">{summary}</p>
      {traffic !== null && (
        <div class="vote-traffic">
          <p class="muted">Vote messages of the latest election (counted on the links; an answer may be a refusal):</p>
          <ul aria-label="Vote messages">
            {traffic.asks.map((v) => (
              <li key={v.candidate}>{voteAskText(v)}</li>
            ))}
          </ul>
        </div>
      )}
      <table class="compact">
        <thead>
          <tr>
            <th scope="col">Node</th>
            <th scope="col">Role</th>
            <th scope="col">Term</th>
            <th scope="col">Voted for</th>
            <th scope="col">Commit</th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((n) => (
            <RaftRow
              key={n.id}
              id={n.id}
              leader={n.id === cluster.leaderId}
              role={`${n.role}${n.state !== 'online' ? ` (${n.state})` : ''}`}
              term={n.term ?? '?'}
              vote={n.votedFor !== undefined && n.votedFor !== '' ? n.votedFor : '—'}
              commit={n.commitIndex}
            />
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** One raft node's row: redrawn only when one of its cells changes. */
const RaftRow = pure(
  (p: { id: string; leader: boolean; role: string; term: number | string; vote: string; commit: number }) => (
    <tr class={p.leader ? 'leader-row' : ''}>
      <td>{p.id}</td>
      <td>{p.role}</td>
      <td>{p.term}</td>
      <td>{p.vote}</td>
      <td>{p.commit}</td>
    </tr>
  ),
  'RaftRow',
);

/** Polls `fn` every strategyRefreshMs while the page is visible (and once at once). */
function usePoll(fn: () => Promise<void>, deps: unknown[]): void {
  useEffect(() => {
    let stopped = false;
    let busy = false;
    const run = async (): Promise<void> => {
      if (busy || stopped || document.visibilityState !== 'visible') return;
      busy = true;
      await fn();
      busy = false;
    };
    void run();
    const timer = setInterval(() => void run(), strategyRefreshMs);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, deps);
}

const ringW = 320;
const ringR = 120;

function RingPanel({ cluster }: { cluster: ClusterModel }): JSX.Element {
  const members = cluster.nodeIds.filter((id) => !(cluster.nodes[id] as NodeView).removed);
  const membersKey = members.join(' ');
  const tokens = useMemo(() => drawnTokens(members), [membersKey]);
  const colorOf = useMemo(() => {
    const sorted = [...members].sort(byNodeId);
    return new Map(sorted.map((id, i) => [id, ownerColor(i, sorted.length)]));
  }, [membersKey]);
  const [keyInput, setKeyInput] = useState('');
  const shownKey = useSignal<string | null>(null);
  const walk = useSignal<string[]>([]);
  const placeError = useSignal<string | null>(null);
  const suspicion = useSignal<Suspicion | null>(null);
  const hints = useSignal<Record<string, number>>({});
  const cid = cluster.id;
  const n = Math.min(typeof cluster.config['quorum_n'] === 'number' ? cluster.config['quorum_n'] : 3, members.length);
  const sloppy = cluster.config['sloppy_quorum'] !== false;
  const anyOnline = members.some((id) => (cluster.nodes[id] as NodeView).state === 'online');

  const place = async (key: string): Promise<void> => {
    const r = await api.get<{ preference_list?: unknown }>(
      cpath(cid, `/placement?key=${encodeURIComponent(key)}&n=${members.length}`),
    );
    if (!r.ok) {
      placeError.value = r.error;
      return;
    }
    placeError.value = null;
    const list = Array.isArray(r.body.preference_list)
      ? r.body.preference_list.filter((x): x is string => typeof x === 'string')
      : [];
    shownKey.value = key;
    walk.value = list;
  };

  usePoll(async () => {
    const [s, st] = await Promise.all([
      // Asked of an online node: with none online it would be a 409 (logged by the browser as an error).
      anyOnline ? api.get<unknown>(cpath(cid, '/suspicion')) : Promise.resolve(null),
      api.get<{ metrics?: { nodes?: Record<string, Record<string, unknown>> } }>(cpath(cid, '/state')),
    ]);
    if (s?.ok) suspicion.value = parseSuspicion(s.body);
    if (st.ok) {
      const h: Record<string, number> = {};
      for (const [id, m] of Object.entries(st.body.metrics?.nodes ?? {})) {
        if (typeof m['hints_held'] === 'number') h[id] = m['hints_held'];
      }
      if (JSON.stringify(h) !== JSON.stringify(hints.value)) hints.value = h;
    }
  }, [cid, anyOnline]);

  // The walk changes with the members; show the key again on the new ring.
  useEffect(() => {
    if (shownKey.value !== null) void place(shownKey.value);
  }, [membersKey]);

  const sus = suspicion.value;
  const unavailable = new Set(
    members.filter((id) => (cluster.nodes[id] as NodeView).state !== 'online' || sus?.nodes[id]?.suspected === true),
  );
  const q = shownKey.value !== null ? sloppyQuorum(walk.value, n, unavailable, sloppy) : null;
  const c = ringW / 2;
  const keyA = shownKey.value !== null ? ringAngle(ringPosition(shownKey.value)) : null;
  const at = (a: number, rr: number): Point => ({ x: c + rr * Math.sin(a), y: c - rr * Math.cos(a) });
  const inFlight = Object.entries(hints.value).filter(([, h]) => h > 0);
  const ringLabel = `Hash ring of ${members.length} nodes, ${tokens.length} virtual nodes drawn${
    q && shownKey.value !== null ? `; key ${shownKey.value} goes to ${q.preferred.join(', ')}` : ''
  }`;
  return (
    <section class="panel" aria-labelledby="ring-h">
      <h2 id="ring-h">Ring</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (keyInput.trim() !== '') void place(keyInput.trim());
        }}
      >
        <label>
          Ring key
          <input
            type="text"
            value={keyInput}
            onInput={(e) => setKeyInput((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">Show placement</button>
      </form>
      {placeError.value !== null && <p class="error">{placeError.value}</p>}
      <div class="ring-wrap">
        <svg class="ring" viewBox={`0 0 ${ringW} ${ringW}`} role="img" aria-label={ringLabel}>
          <circle cx={c} cy={c} r={ringR} class="ring-circle" />
          {tokens.map((t) => {
            const a = ringAngle(t.pos);
            const p1 = at(a, ringR - 8);
            const p2 = at(a, ringR + 8);
            return (
              <line
                key={`${t.node}${t.pos}`}
                x1={p1.x}
                y1={p1.y}
                x2={p2.x}
                y2={p2.y}
                stroke={colorOf.get(t.node)}
                stroke-width={2}
              />
            );
          })}
          {keyA !== null && (
            <>
              <line class="ring-key" x1={c} y1={c} x2={at(keyA, ringR + 14).x} y2={at(keyA, ringR + 14).y} />
              <text x={c} y={c + 4} text-anchor="middle" class="ring-key-text">
                {shownKey.value}
              </text>
            </>
          )}
        </svg>
        <ul class="ring-legend">
          {[...colorOf.entries()].map(([id, color]) => {
            const s = sus?.nodes[id];
            const node = cluster.nodes[id] as NodeView;
            return (
              <li key={id}>
                <span class="swatch" style={{ background: color }} aria-hidden="true" />
                {id}
                {node.state !== 'online' ? ` (${node.state})` : ''} · phi {s ? phiText(s.phi) : '?'}
                {s?.suspected ? ' suspected' : ''}
                {(hints.value[id] ?? 0) > 0 ? ` · ${hints.value[id]} hints held` : ''}
                {q !== null && q.preferred.includes(id) ? ` · preferred #${q.preferred.indexOf(id) + 1}` : ''}
                {q !== null && q.standIns.some((x) => x.by === id)
                  ? ` · stand-in for ${q.standIns.find((x) => x.by === id)?.for}`
                  : ''}
              </li>
            );
          })}
        </ul>
      </div>
      {q !== null && (
        <p aria-live="polite" class="placement">
          Preference list for {shownKey.value}: {q.preferred.join(', ')} (N={n}).
          {q.standIns.length > 0
            ? ` Stand-ins (sloppy quorum): ${q.standIns.map((s) => `${s.by} for ${s.for}`).join(', ')}.`
            : ''}
          {q.uncovered.length > 0 ? ` No stand-in for ${q.uncovered.join(', ')}.` : ''}
        </p>
      )}
      <p class="muted">
        Hinted handoffs in flight:{' '}
        {inFlight.length === 0 ? 'none' : inFlight.map(([id, h]) => `${id} holds ${h}`).join(', ')}
        {sus ? ` · suspicion threshold phi ${sus.threshold}` : ''}
      </p>
    </section>
  );
}

interface StoreEntryWire {
  vclock?: Record<string, number>;
}

function ConflictPanel({ cluster }: { cluster: ClusterModel }): JSX.Element {
  const cid = cluster.id;
  const conflicts = useSignal<KeyConflict[]>([]);
  const stores = useSignal<ReadonlyMap<string, Record<string, StoreEntryWire>>>(new Map());
  const status = useSignal<{ text: string; error: boolean } | null>(null);
  const online = cluster.nodeIds.filter((id) => (cluster.nodes[id] as NodeView).state === 'online');
  const onlineKey = online.join(' ');

  const storesAt = useRef(0);
  /** The conflicts, and the stores too when they are storesRefreshMinMs old (or `force`). */
  const load = async (force = false): Promise<void> => {
    const ids = force || Date.now() - storesAt.current >= storesRefreshMinMs ? online.slice(0, vclockNodesMax) : [];
    if (ids.length > 0) storesAt.current = Date.now();
    const [c, ...ss] = await Promise.all([
      api.get<unknown>(cpath(cid, '/conflicts')),
      ...ids.map((id) => api.get<Record<string, StoreEntryWire>>(cpath(cid, `/nodes/${encodeURIComponent(id)}/store`))),
    ]);
    if (c?.ok) {
      const next = conflictsByKey(parseConflicts(c.body));
      if (JSON.stringify(next) !== JSON.stringify(conflicts.value)) conflicts.value = next;
    }
    if (ids.length === 0) return;
    const m = new Map<string, Record<string, StoreEntryWire>>();
    ss.forEach((r, i) => {
      if (r.ok && r.body !== null && typeof r.body === 'object') m.set(ids[i] as string, r.body);
    });
    if (JSON.stringify([...m]) !== JSON.stringify([...stores.value])) stores.value = m;
  };

  usePoll(() => load(), [cid, onlineKey]);

  const resolve = async (key: string, node: string, value: string): Promise<void> => {
    const r = await api.post(cpath(cid, '/conflicts/resolve'), { node_id: node, key, choice: 'local' });
    status.value = r.ok
      ? { text: `resolved ${key}: kept ${value} (chosen on ${node})`, error: false }
      : { text: `resolve failed: ${r.error}`, error: true };
    void load(true);
  };

  const rows = vclockRows(stores.value);
  const nodeCols = [...stores.value.keys()];
  return (
    <section class="panel" aria-labelledby="conflicts-h">
      <h2 id="conflicts-h">Conflicts</h2>
      {conflicts.value.length === 0 ? (
        <p class="muted">
          No open conflict
          {cluster.config['conflict_resolver'] !== 'manual'
            ? ` (this cluster resolves them by ${String(cluster.config['conflict_resolver'] ?? 'its resolver')})`
            : ''}
          .
        </p>
      ) : (
        <ul class="conflicts">
          {conflicts.value.map((k) => (
            <li key={k.key}>
              <span>
                Conflict on {k.key}: {k.choices.map((c) => c.value).join(' vs ')} (seen by {k.nodes.join(', ')})
              </span>{' '}
              {k.choices.map((c) => (
                <button
                  type="button"
                  key={c.value}
                  class="secondary"
                  onClick={() => void resolve(k.key, c.node, c.value)}
                >
                  Keep {c.value}
                </button>
              ))}
            </li>
          ))}
        </ul>
      )}
      {status.value !== null && (
        <p aria-live="polite" class={status.value.error ? 'error' : ''}>
          {status.value.text}
        </p>
      )}
      <h3 id="vclocks-h">Vector clocks</h3>
      {rows.length === 0 ? (
        <p class="muted">No key written yet.</p>
      ) : (
        <table class="compact" aria-labelledby="vclocks-h">
          <thead>
            <tr>
              <th scope="col">Key</th>
              {nodeCols.map((id) => (
                <th scope="col" key={id}>
                  {id}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key}>
                <td>{r.key}</td>
                {nodeCols.map((id) => (
                  <td key={id}>{r.clocks[id] ?? '—'}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Clock skew of the selected node: "Clock skew (ms)" and "Skew clock" (0 clears it). */
export function ClockSkewControl({ cluster }: { cluster: ClusterModel }): JSX.Element {
  const [text, setText] = useState('500');
  const [busy, setBusy] = useState(false);
  const sel = selectedNodes.value.filter((id) => cluster.nodes[id] && !(cluster.nodes[id] as NodeView).removed);
  const target = sel.length === 1 ? (sel[0] as string) : null;
  const current = target !== null ? skewsOf(cluster.id).get(target) : undefined;
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    if (target === null) return;
    const p = parseSkew(text);
    if (!p.ok) {
      faultMessage.value = { text: p.error, error: true };
      return;
    }
    setBusy(true);
    const r = await api.post(cpath(cluster.id, `/nodes/${encodeURIComponent(target)}/clock-skew`), { ms: p.ms });
    setBusy(false);
    faultMessage.value = r.ok
      ? {
          text: p.ms === 0 ? `cleared the clock skew of ${target}` : `skewed ${target}'s clock by ${skewBadge(p.ms)}`,
          error: false,
        }
      : { text: `clock skew failed: ${r.error}`, error: true };
  };
  return (
    <section class="panel" aria-labelledby="skew-h">
      <h2 id="skew-h">Clock</h2>
      <form class="row skew" onSubmit={(e) => void submit(e)} aria-label="Clock skew of the selected node">
        <label>
          Clock skew (ms)
          <input
            type="text"
            inputMode="numeric"
            value={text}
            onInput={(e) => setText((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={busy || target === null}>
          Skew clock
        </button>
        <span class="muted">
          {target === null ? 'select one node' : `${target}: ${current !== undefined ? skewBadge(current) : 'no skew'}`}
        </span>
      </form>
    </section>
  );
}
