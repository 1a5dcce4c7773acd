/**
 * The invariants of the non-raft swarm (kv-swarm.ts), one function per promise: convergence after
 * the heal, what each strategy promises about an acknowledged write, and leaderless quorum overlap.
 * Pure checks over the cluster's views and the client history; they never drive faults or clients
 * (the final quorum reads of checkAcknowledged aside, which run on the healed cluster).
 */
import type { DetCluster } from '../../fabric/deterministic.js';
import type { ClientOp, ClientReply, ClusterConfig, NodeId, Version } from '../core.js';
import { compareReplicas } from '../checkers/convergence.js';
import { descends, type VClock } from '../dynamo/vclock.js';
import { lwwNewer } from '../dynamo/version.js';
import { unreachable } from '../../util/assert.js';
import type { KvStrategy, KvVerdict } from './kv-swarm.js';

/** One client operation as it ended (complete = Infinity: outcome unknown). */
export interface KvOp {
  client: string;
  node: NodeId;
  op: ClientOp;
  invoke: number;
  complete: number;
  reply: ClientReply | undefined;
  /** single_leader: the epoch the acknowledging leader was in. */
  epoch?: number;
  /** leaderless: the write's quorum used a stand-in (sloppy); unknown counts as sloppy. */
  sloppy?: boolean;
}

export function sortedJson(store: Record<string, Version>): string {
  return JSON.stringify(
    Object.keys(store)
      .sort()
      .map((k) => [k, store[k]]),
  );
}

export function clockText(c: VClock): string {
  return JSON.stringify(
    Object.keys(c)
      .sort()
      .map((k) => [k, c[k]]),
  );
}

/**
 * single_leader stores compared on everything a version holds: value, tombstone, index, HLC
 * timestamp, and the writer's node_id and vclock (every log entry carries its writer, so replicas
 * agree on them whichever leader they caught up from; see single-leader-swarm.test.ts).
 */
export function singleLeaderCells(store: Record<string, Version>): string {
  const cells = Object.keys(store)
    .sort()
    .map((k) => {
      const v = store[k] as Version;
      return [k, v.value, v.tombstone, v.version, v.timestamp, v.node_id, JSON.stringify(v.vclock)];
    });
  return JSON.stringify(cells);
}

/** status().extra.siblings of a multi_leader node (vector_clock resolver). */
type SiblingsView = Record<string, Array<{ vclock: VClock }>>;

type Fail = (v: KvVerdict, msg: string) => void;

/** Where two texts first differ, with some context on each side. */
function firstDifference(a: string, b: string): string {
  let at = 0;
  while (at < a.length && a[at] === b[at]) at++;
  const around = (x: string): string => x.slice(Math.max(0, at - 120), at + 120);
  return `…${around(a)} vs …${around(b)}`;
}

/**
 * undefined once every live replica agrees: single_leader, every node applied what the leader did
 * and holds its store; multi_leader, every node holds the same versions (siblings included);
 * leaderless, each key's preferred replicas hold the same cell (checkers/convergence.ts) and no
 * node still holds a hint.
 */
export function convergenceProblem(
  strategy: KvStrategy,
  c: DetCluster,
  ids: NodeId[],
  config: ClusterConfig,
  leader: NodeId,
): string | undefined {
  switch (strategy) {
    case 'single_leader': {
      const lead = c.core(leader).status(c.now);
      const ref = singleLeaderCells(c.core(leader).storeView());
      for (const id of ids) {
        const s = c.core(id).status(c.now);
        if (s.last_applied !== lead.last_applied) {
          return `${id} applied ${s.last_applied}, leader ${leader} ${lead.last_applied}`;
        }
        if (singleLeaderCells(c.core(id).storeView()) !== ref) return `${id} holds another store than leader ${leader}`;
      }
      return undefined;
    }
    case 'multi_leader': {
      const view = (id: NodeId): string => {
        const core = c.core(id);
        const extra = core.status(c.now).extra ?? {};
        const siblings = (extra['siblings'] ?? {}) as Record<string, unknown>;
        const sortedSiblings = Object.keys(siblings)
          .sort()
          .map((k) => [k, siblings[k]]);
        const pending = String(extra['pending_conflicts']);
        return `${sortedJson(core.storeView())}|${JSON.stringify(sortedSiblings)}|${pending}`;
      };
      const ref = view(ids[0] as NodeId);
      for (const id of ids.slice(1)) {
        const mine = view(id);
        if (mine !== ref) return `${id} holds a different store than ${ids[0]}: ${firstDifference(mine, ref)}`;
      }
      return undefined;
    }
    case 'leaderless': {
      const cmp = compareReplicas(
        ids.map((node) => ({ node, store: c.core(node).storeView() })),
        { kind: 'ring', n: config.quorum_n, members: ids },
      );
      if (!cmp.converged) {
        const keys = cmp.diverged.map((d) => d.key).join(',');
        return `${cmp.divergedTotal} keys differ across their preferred replicas (${keys})`;
      }
      for (const id of ids) {
        const held = c.core(id).status(c.now).extra?.['hints_held'];
        if (held !== 0) return `${id} still holds ${String(held)} hints`;
      }
      return undefined;
    }
    default:
      return unreachable(strategy);
  }
}

/** The versions a write left, as its reply reported them (a batch: one per entry). */
export function ackedVersions(op: KvOp): Version[] {
  const r = op.reply;
  if (!r?.ok) return [];
  return r.result.kind === 'entry' ? [r.result.entry] : r.result.entries;
}

/** ackedVersions(op)[0], without the list. */
function firstAcked(op: KvOp): Version | undefined {
  const r = op.reply;
  if (!r?.ok) return undefined;
  return r.result.kind === 'entry' ? r.result.entry : r.result.entries[0];
}

/**
 * A delete of `key` invoked by `before` (ties count) that may be LWW-newer than `v` (unacknowledged, or acked
 * newer).
 */
function deleteCouldBeNewer(ops: KvOp[], key: string, v: Version, before: number): boolean {
  return ops.some((x) => {
    if (x.op.op !== 'delete' || x.op.key !== key || x.invoke > before) return false;
    const acked = x.reply?.ok && x.reply.result.kind === 'entry' ? x.reply.result.entry : undefined;
    return acked === undefined || !lwwNewer(v, acked);
  });
}

function describe(v: Version): string {
  return `${v.tombstone ? '(delete)' : v.value}@${v.timestamp}`;
}

interface LeaderLogEntry {
  index: number;
  epoch: number;
  ops: Array<{ key: string; value?: string; tombstone?: boolean }>;
}

/**
 * What each strategy promises about an acknowledged write, checked exactly after the heal:
 * - single_leader sync/semi_sync: it survives the leader's crash and failover (to the online node
 *   that applied most, with every follower up): the final leader's log holds it at its index (or,
 *   when that index was compacted into a snapshot, the key's version is it or a later index).
 *   async promises nothing across a failover: its writes are checked only when no failover
 *   followed them (the epoch is unchanged), and then the same holds.
 * - multi_leader: it is never lost causally: every node's version of the key (or one of its
 *   siblings, for vector_clock) has a clock that descends the acknowledged one.
 * - leaderless (W + R > N): a quorum read returns the newest acknowledged write of each key or an
 *   LWW-newer version (not_found only when a delete could be newer). Sloppy acknowledgements count
 *   too: convergence already required every hint to be handed back.
 * Returns how many acknowledged versions were covered.
 */
export function checkAcknowledged(
  strategy: KvStrategy,
  c: DetCluster,
  ops: KvOp[],
  config: ClusterConfig,
  leader: NodeId,
  fail: Fail,
): { acked: number } {
  const writes = ops.filter((x) => x.op.op !== 'read' && x.reply?.ok);
  let acked = 0;
  switch (strategy) {
    case 'single_leader': {
      const mode = config.replication_mode;
      const lead = c.core(leader);
      const finalEpoch = lead.status(c.now).term ?? 0;
      const log = new Map((lead.logView() as LeaderLogEntry[]).map((e) => [e.index, e]));
      const store = lead.storeView();
      for (const w of writes) {
        if (mode === 'async' && w.epoch !== finalEpoch) continue;
        for (const v of ackedVersions(w)) {
          acked++;
          // Written out only for a failure (most seeds check hundreds of writes and fail none).
          const where = (): string =>
            `${mode} write ${v.key}=${describe(v)} acked at index ${v.version} (epoch ${w.epoch})`;
          const e = log.get(v.version);
          if (e) {
            const op = e.ops.findLast((x) => x.key === v.key);
            const same = op !== undefined && (v.tombstone ? op.tombstone === true : op.value === v.value);
            if (!same) fail('no_lost_ack_write', `${where()} is not at that index of leader ${leader}'s log`);
            continue;
          }
          const now = store[v.key];
          if (!now || now.version < v.version || (now.version === v.version && now.timestamp !== v.timestamp)) {
            fail('no_lost_ack_write', `${where()} is gone from leader ${leader}'s store`);
          }
        }
      }
      return { acked };
    }
    case 'multi_leader': {
      // Each node's store and siblings, read once (on first use) for every write: nothing runs
      // during the check, and the views are pure.
      const views = new Map<NodeId, { store: Record<string, Version>; siblings: SiblingsView }>();
      const viewOf = (id: NodeId): { store: Record<string, Version>; siblings: SiblingsView } => {
        let view = views.get(id);
        if (!view) {
          const core = c.core(id);
          const store = core.storeView();
          view = { store, siblings: (core.status(c.now).extra?.['siblings'] ?? {}) as SiblingsView };
          views.set(id, view);
        }
        return view;
      };
      // The nodes, once: nothing is added or removed during the check.
      const nodeIds = c.nodeIds();
      for (const w of writes) {
        for (const v of ackedVersions(w)) {
          acked++;
          for (const id of nodeIds) {
            const view = viewOf(id);
            const cur = view.store[v.key]?.vclock ?? {};
            // Does the node's version, or else one of its siblings (in order), descend the acknowledged clock?
            let descended = descends(cur, v.vclock);
            const siblings = view.siblings[v.key];
            if (!descended && siblings !== undefined) {
              for (const s of siblings) {
                if (descends(s.vclock, v.vclock)) {
                  descended = true;
                  break;
                }
              }
            }
            if (!descended) {
              const held = clockText(cur);
              const what = `no version descends the acknowledged ${clockText(v.vclock)} (holds ${held})`;
              fail('no_lost_ack_write', `${id} ${v.key}: ${what}`);
            }
          }
        }
      }
      return { acked };
    }
    case 'leaderless': {
      const newest = new Map<string, Version>();
      for (const w of writes) {
        for (const v of ackedVersions(w)) {
          acked++;
          const prev = newest.get(v.key);
          if (!prev || lwwNewer(v, prev)) newest.set(v.key, v);
        }
      }
      const ids = c.nodeIds();
      let readN = 0;
      for (const [key, v] of newest) {
        const reader = ids[(++readN * 7) % ids.length] as NodeId;
        const r = c.runUntilReply(c.client(reader, { op: 'read', key }), 3000);
        const where = `quorum read of ${key} at ${reader}`;
        if (r?.ok && r.result.kind === 'entry') {
          if (lwwNewer(v, r.result.entry)) {
            const what = `returned ${describe(r.result.entry)}, older than the acknowledged ${describe(v)}`;
            fail('no_lost_ack_write', `${where} ${what}`);
          }
        } else if (r && !r.ok && r.code === 'not_found') {
          if (!v.tombstone && !deleteCouldBeNewer(ops, key, v, Infinity)) {
            const what = `found nothing, but ${describe(v)} was acknowledged and no delete could be newer`;
            fail('no_lost_ack_write', `${where} ${what}`);
          }
        } else {
          const why = r ? (r.ok ? 'not an entry' : r.code) : 'no reply';
          fail('no_lost_ack_write', `${where} failed after the heal (${why})`);
        }
      }
      return { acked };
    }
    default:
      return unreachable(strategy);
  }
}

/**
 * Leaderless quorum overlap during the run (W + R > N, every quorum on intended replicas): a read
 * invoked after a write to its key was acknowledged by a strict quorum, and that itself succeeded,
 * returns that version or an LWW-newer one (not_found: only if a delete could be newer). Whether a
 * read used a stand-in is not visible per read, so this runs only for profiles without sloppy
 * quorums; digest reads included (seed 398 found a digest read answering stale data: fixed). Returns the
 * reads checked.
 */
export function checkQuorumOverlap(ops: KvOp[], config: ClusterConfig, fail: Fail): number {
  if (config.sloppy_quorum || config.quorum_w + config.quorum_r <= config.quorum_n) return 0;
  let checked = 0;
  const strictWrites = ops.filter(
    (x) => (x.op.op === 'write' || x.op.op === 'delete') && x.reply?.ok && x.sloppy === false,
  );
  for (const rd of ops) {
    if (rd.op.op !== 'read' || rd.complete === Infinity || !rd.reply) continue;
    const key = rd.op.key;
    let latest: Version | undefined;
    for (const w of strictWrites) {
      if (w.complete >= rd.invoke || ('key' in w.op && w.op.key !== key)) continue;
      const v = firstAcked(w);
      if (v && (!latest || lwwNewer(v, latest))) latest = v;
    }
    if (!latest) continue;
    checked++;
    const r = rd.reply;
    // Written out only for a failure.
    const where = (): string => `read of ${key} at ${rd.node} (t=${rd.invoke})`;
    if (r.ok && r.result.kind === 'entry') {
      if (lwwNewer(latest, r.result.entry)) {
        const newer = describe(latest);
        const what = `returned ${describe(r.result.entry)}, older than ${newer} acknowledged before it by W replicas`;
        fail('quorum_overlap', `${where()} ${what}`);
      }
    } else if (!r.ok && r.code === 'not_found') {
      if (!latest.tombstone && !deleteCouldBeNewer(ops, key, latest, rd.complete)) {
        fail('quorum_overlap', `${where()} found nothing after ${describe(latest)} was acknowledged by W replicas`);
      }
    }
  }
  return checked;
}
