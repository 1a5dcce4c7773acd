/**
 * HTTP routes of the cluster checkers: convergence, linearizability, invariants, a Merkle
 * anti-entropy round and the safe leaderless add-node, plus a debugging route that corrupts one
 * leaderless replica (what anti-entropy exists to repair). Thin orchestration: comparisons and
 * quorum arithmetic are pure (convergence.ts, quorum.ts, linearizability.ts), the linearizability
 * search runs in the lincheck piscina pool, and every repair is done by the cores' own protocols.
 *
 * Anti-entropy, per strategy. leaderless and multi_leader: each online replica is told to start a
 * Merkle exchange with its peers (custom control `anti_entropy`): it sends its root and leaves, the
 * peer answers with the (key, digest) pairs of the differing buckets only, and the two push and
 * pull just those keys, newest (or vector-clock merge) winning; rounds repeat until the replicas
 * agree or the wait runs out. single_leader and raft have no replica-to-replica exchange to start:
 * a follower is repaired by its leader's log (retransmission, or a snapshot past the retained
 * log), so the round measures the divergence, waits for that repair and reports what it saw. In
 * both cases the report's Merkle figures come from trees the front builds over the fetched stores
 * and compares top-down (a matching subtree is never descended).
 *
 * Add-node (leaderless), in four phases with the request timeout between them so only
 * neighbouring quorum configurations are ever in use together (the arithmetic is in quorum.ts):
 * widen every node to (N+1, W+1, R+1) on the old ring; add the node to the ring under that same
 * quorum (each old replica streams it the keys it now shares); run anti-entropy until the new
 * replica sets agree; narrow to N' = N+1 with the smaller of W and R raised by one.
 */
import Type, { type Static } from 'typebox';
import type { HttpApp, HttpRequest } from '../../http/index.js';
import { HttpError } from '../../http/index.js';
import { checkInPool } from '../../checkers/lincheck/pool.js';
import { toKVEntry, withinMs, type Cluster } from '../cluster.js';
import { ReplicationError, statusOf } from '../errors.js';
import type { ControlCommand, ControlResult, NodeId } from '../core.js';
import {
  compareReplicas,
  merkleRound,
  type Comparison,
  type DivergedKey,
  type Placement,
  type ReplicaStore,
} from './convergence.js';
import { linearizabilityReport, toLincheckHistory, type LinearizabilityReport } from './linearizability.js';
import { addNodePlan, quorumOverlap, type Quorum } from './quorum.js';
import {
  addNodeDrainMarginMs,
  addNodeStreamWaitMsMax,
  antiEntropyExchangeEveryPolls,
  antiEntropyWaitMsDefault,
  antiEntropyWaitMsMax,
  checkerNodeCallDeadlineMs,
  corruptValueCharsMax,
  keyCharsMax,
  lincheckTimeoutMsDefault,
  lincheckTimeoutMsMax,
  nodeCountMax,
  replicaComparePollMs,
} from '../limits.js';

export interface CheckerContext {
  app: HttpApp;
  clusters: Map<string, Cluster>;
  /** Publishes an event on /ws for a cluster. */
  publish: (clusterId: string, e: { type: string; node_id?: string; data?: Record<string, unknown> }) => void;
  /** Throws the 409 naming REPLSIM_MAX_NODES when `more` live nodes would pass it (the server's check). */
  checkNodeRoom?: (more: number) => void;
}

const CorruptRequest = Type.Object({
  key: Type.String({ minLength: 1, maxLength: keyCharsMax }),
  value: Type.String({ maxLength: corruptValueCharsMax }),
  /** HLC timestamp (Unix ns) of the bad copy; default: just older than the copy it replaces. */
  timestamp: Type.Optional(Type.Integer({ minimum: 0 })),
});
type CorruptRequest = Static<typeof CorruptRequest>;

export interface ConvergenceReport {
  cluster_id: string;
  converged: boolean;
  keys: number;
  diverged: DivergedKey[];
  /** Every diverged key; `diverged` lists at most the first 1000. */
  diverged_total: number;
  /** The online replicas compared. */
  replicas: NodeId[];
  note?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function intParam(req: HttpRequest<unknown>, name: string, dflt: number, min: number, max: number): number {
  const raw = req.query.get(name);
  if (raw === null || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new HttpError(400, `${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(raw)})`);
  return n;
}

export function placementOf(c: Cluster): Placement {
  return c.config.strategy === 'leaderless'
    ? { kind: 'ring', n: c.config.quorum_n, members: [...c.nodes.keys()] }
    : { kind: 'full' };
}

interface Snapshot {
  replicas: ReplicaStore[];
  /** Nodes left out, with the reason: "n3 (paused)". */
  skipped: string[];
}

/** Every online replica's store; paused, offline and silent nodes are skipped and named. */
async function snapshot(c: Cluster): Promise<Snapshot> {
  const skipped: string[] = [];
  const fetched = await Promise.all(
    [...c.nodes.values()].map(async (n) => {
      if (n.state !== 'online') {
        skipped.push(`${n.id} (${n.state})`);
        return undefined;
      }
      const store = await withinMs(n.remote.store(), checkerNodeCallDeadlineMs);
      if (store === undefined) {
        skipped.push(`${n.id} (no answer within ${checkerNodeCallDeadlineMs} ms)`);
        return undefined;
      }
      return { node: n.id, store };
    }),
  );
  return { replicas: fetched.filter((r): r is ReplicaStore => r !== undefined), skipped: skipped.sort() };
}

function placementNote(c: Cluster, skipped: readonly string[]): string | undefined {
  const notes: string[] = [];
  if (c.config.strategy === 'leaderless') {
    notes.push(
      'leaderless: a replica stores only the keys of its preference lists, so each key is compared across its ' +
        `N=${c.config.quorum_n} preferred replicas that are online; copies held as hints by stand-ins are not compared`,
    );
  }
  if (skipped.length > 0) notes.push(`not compared: ${skipped.join(', ')}`);
  return notes.length > 0 ? notes.join('; ') : undefined;
}

async function convergenceOf(c: Cluster): Promise<{ report: ConvergenceReport; cmp: Comparison }> {
  const snap = await snapshot(c);
  const cmp = compareReplicas(snap.replicas, placementOf(c));
  const report: ConvergenceReport = {
    cluster_id: c.id,
    converged: cmp.converged,
    keys: cmp.keys,
    diverged: cmp.diverged,
    diverged_total: cmp.divergedTotal,
    replicas: snap.replicas.map((r) => r.node),
  };
  const note = placementNote(c, snap.skipped);
  if (note !== undefined) report.note = note;
  return { report, cmp };
}

async function linearizabilityOf(c: Cluster, timeoutMs: number): Promise<LinearizabilityReport> {
  const ops = c.history();
  const dropped = c.historyDropped;
  const converted = toLincheckHistory(ops, dropped > 0);
  const started = performance.now();
  const result = await checkInPool(converted.history, 'register', { timeoutMs });
  return linearizabilityReport(c.id, ops.length, dropped, converted, result, performance.now() - started);
}

function describeDiverged(d: DivergedKey): string {
  const parts = Object.entries(d.states).map(
    ([node, s]) => `${node}=${s === 'value' ? JSON.stringify(d.values[node]) : s}`,
  );
  return `${JSON.stringify(d.key)} (${parts.join(', ')})`;
}

/**
 * Sends one control to every node with a running worker; the nodes that refused or stayed silent.
 * Crashed nodes are skipped: a restart builds the node from the cluster's current config.
 */
async function controlAll(c: Cluster, cmd: ControlCommand, only: 'online' | 'live' = 'live'): Promise<string[]> {
  const failed: string[] = [];
  await Promise.all(
    [...c.nodes.values()].map(async (n) => {
      if (n.state === 'offline' || n.state === 'crashed' || (only === 'online' && n.state !== 'online')) return;
      const r: ControlResult | undefined = await withinMs(n.remote.control(cmd), checkerNodeCallDeadlineMs);
      if (!r?.ok) failed.push(`${n.id}: ${r?.error ?? 'no answer'}`);
    }),
  );
  c.kick();
  return failed;
}

async function setQuorum(c: Cluster, q: Quorum): Promise<void> {
  c.config.quorum_n = q[0];
  c.config.quorum_w = q[1];
  c.config.quorum_r = q[2];
  const failed = await controlAll(c, { kind: 'custom', name: 'set_quorum', args: { n: q[0], w: q[1], r: q[2] } });
  // A node that refused or stayed silent (stalled, overloaded) is a state of the simulation, not a
  // bug of the service: 409, and the change can be retried.
  if (failed.length > 0)
    throw new HttpError(
      409,
      `set_quorum N=${q[0]} W=${q[1]} R=${q[2]} was not confirmed by ${failed.join('; ')}; ` +
        'retry once every node answers',
    );
}

const showQuorum = (q: Quorum): string => `N=${q[0]} W=${q[1]} R=${q[2]}`;

export function registerCheckerRoutes(ctx: CheckerContext): void {
  const { app, clusters, publish } = ctx;
  /** Clusters with an anti-entropy round or a membership change in progress (one at a time). */
  const busy = new Set<string>();

  const getCluster = (req: HttpRequest<unknown>): Cluster => {
    const c = clusters.get(req.params['id'] ?? '');
    if (!c) throw new HttpError(404, `cluster ${req.params['id']} not found`);
    return c;
  };
  const exclusive = async <T>(c: Cluster, what: string, fn: () => Promise<T>): Promise<T> => {
    if (busy.has(c.id))
      throw new HttpError(
        409,
        `cluster ${c.id} is busy with an anti-entropy round or a membership change; try again ` +
          `when it ends (${what} refused)`,
      );
    busy.add(c.id);
    try {
      return await fn();
    } finally {
      busy.delete(c.id);
    }
  };
  const stillThere = (c: Cluster): void => {
    if (clusters.get(c.id) !== c) throw new HttpError(404, `cluster ${c.id} was deleted while the operation ran`);
  };

  app.get(
    '/api/v1/clusters/:id/convergence',
    async (req) => {
      const c = getCluster(req);
      return { status: 200, body: (await convergenceOf(c)).report };
    },
    { summary: 'Convergence check: do the online replicas hold the same data?' },
  );

  app.get(
    '/api/v1/clusters/:id/linearizable',
    async (req) => {
      const c = getCluster(req);
      const timeoutMs = intParam(req, 'timeout_ms', lincheckTimeoutMsDefault, 1, lincheckTimeoutMsMax);
      return { status: 200, body: await linearizabilityOf(c, timeoutMs) };
    },
    {
      summary: 'Linearizability of the recorded history (lincheck), with the explanation when it fails',
      query: Type.Object({
        timeout_ms: Type.Optional(
          Type.String({ description: 'checker time budget, ms (1 to the limit in limits.ts)' }),
        ),
      }),
    },
  );

  app.get(
    '/api/v1/clusters/:id/invariants',
    async (req) => {
      const c = getCluster(req);
      const timeoutMs = intParam(req, 'timeout_ms', lincheckTimeoutMsDefault, 1, lincheckTimeoutMsMax);
      const [conv, lin] = await Promise.all([convergenceOf(c), linearizabilityOf(c, timeoutMs)]);
      const quorum = quorumOverlap(c.config, c.nodes.size);
      const violations: string[] = [];
      const { report } = conv;
      if (!report.converged) {
        const shown = report.diverged.slice(0, 5).map(describeDiverged).join('; ');
        const more = report.diverged_total > 5 ? `; and ${report.diverged_total - 5} more` : '';
        violations.push(
          `convergence: ${report.diverged_total} of ${report.keys} keys differ across online replicas: ${shown}${more}`,
        );
      }
      if (lin.linearizable === false && lin.violation) violations.push(`linearizability: ${lin.violation.message}`);
      if (!quorum.ok) violations.push(`quorum overlap: ${quorum.detail}`);
      const notes: string[] = [];
      if (report.note !== undefined) notes.push(`convergence: ${report.note}`);
      if (lin.note !== undefined) notes.push(`linearizability: ${lin.note}`);
      const body: Record<string, unknown> = {
        cluster_id: c.id,
        ok: report.converged && lin.linearizable === true && quorum.ok,
        converged: report.converged,
        linearizable: lin.linearizable,
        checks: {
          convergence: {
            ok: report.converged,
            detail: report.converged
              ? `all ${report.keys} keys agree across ${report.replicas.length} online replicas`
              : `${report.diverged_total} of ${report.keys} keys diverged`,
          },
          linearizability: {
            ok: lin.linearizable,
            detail:
              lin.verdict === 'linearizable'
                ? `${lin.ops} recorded operations over ${lin.keys} keys are linearizable (register model)`
                : lin.verdict === 'not-linearizable'
                  ? `violation on key ${JSON.stringify(lin.violation?.key)}`
                  : (lin.note ?? 'verdict unknown'),
          },
          quorum_overlap: quorum,
        },
        violations,
      };
      if (notes.length > 0) body['note'] = notes.join('; ');
      return { status: 200, body };
    },
    {
      summary: 'Convergence, linearizability and quorum overlap in one report',
      query: Type.Object({
        timeout_ms: Type.Optional(
          Type.String({ description: 'checker time budget, ms (1 to the limit in limits.ts)' }),
        ),
      }),
    },
  );

  app.post(
    '/api/v1/clusters/:id/anti-entropy',
    async (req) => {
      const c = getCluster(req);
      const waitMs = intParam(req, 'wait_ms', antiEntropyWaitMsDefault, 0, antiEntropyWaitMsMax);
      return exclusive(c, 'anti-entropy', async () => {
        const started = performance.now();
        const placement = placementOf(c);
        const exchange = c.config.strategy === 'leaderless' || c.config.strategy === 'multi_leader';
        const before = await snapshot(c);
        const cmpBefore = compareReplicas(before.replicas, placement, Infinity);
        const reference = c.config.strategy === 'raft' ? (await c.raftLeader())?.id : c.leaderId;
        const trees = merkleRound(before.replicas, placement, reference);
        const divergedBefore = new Set(cmpBefore.diverged.map((d) => d.key));
        let after = cmpBefore;
        let rounds = 0;
        let polls = 0;
        const deadline = performance.now() + waitMs;
        while (!after.converged && performance.now() < deadline) {
          if (exchange && polls % antiEntropyExchangeEveryPolls === 0) {
            rounds++;
            await controlAll(c, { kind: 'custom', name: 'anti_entropy' }, 'online');
          } else c.kick();
          polls++;
          await sleep(Math.min(replicaComparePollMs, Math.max(0, deadline - performance.now())));
          stillThere(c);
          after = compareReplicas((await snapshot(c)).replicas, placement, Infinity);
        }
        const divergedAfter = new Set(after.diverged.map((d) => d.key));
        const reconciled = [...divergedBefore].filter((k) => !divergedAfter.has(k)).length;
        const notes: string[] = [];
        const pNote = placementNote(c, before.skipped);
        if (pNote !== undefined) notes.push(pNote);
        notes.push(
          exchange
            ? `${c.config.strategy}: replicas exchanged only the keys of differing Merkle buckets (custom control ` +
                `anti_entropy), ${rounds} round(s)`
            : `${c.config.strategy}: followers are repaired by the ` +
                `leader's log (retransmission or snapshot), not by a ` +
                'replica exchange; this round measured the divergence and waited for that repair',
        );
        if (!after.converged)
          notes.push(
            `${after.divergedTotal} key(s) still differ after waiting ` +
              `${waitMs} ms (an unreachable or lagging replica?)`,
          );
        const body = {
          cluster_id: c.id,
          total_keys: cmpBefore.keys,
          divergent_keys: cmpBefore.divergedTotal,
          reconciled,
          converged_after: after.converged,
          still_divergent: after.divergedTotal,
          method: exchange ? 'merkle_exchange' : 'log_repair',
          rounds,
          trees_compared: trees.pairs,
          tree_nodes_compared: trees.nodesCompared,
          divergent_leaves: trees.divergentLeaves,
          elapsed_ms: Math.round(performance.now() - started),
          note: notes.join('; '),
        };
        publish(c.id, {
          type: 'anti_entropy',
          data: {
            divergent_keys: body.divergent_keys,
            reconciled,
            converged_after: after.converged,
            method: body.method,
          },
        });
        return { status: 200, body };
      });
    },
    { summary: 'Run Merkle-tree anti-entropy between replicas (leaderless)' },
  );

  app.post(
    '/api/v1/clusters/:id/reconfigure/add-node',
    async (req) => {
      const c = getCluster(req);
      if (c.config.strategy !== 'leaderless') {
        throw new HttpError(
          400,
          `the safe add-node reconfiguration applies to leaderless ` +
            `clusters only; this cluster is ${c.config.strategy} ` +
            `(use POST /api/v1/clusters/${c.id}/nodes)`,
        );
      }
      if (c.nodes.size >= nodeCountMax) throw new HttpError(409, `a cluster has at most ${nodeCountMax} nodes`);
      ctx.checkNodeRoom?.(1);
      return exclusive(c, 'add-node', async () => {
        const started = performance.now();
        const old: Quorum = [c.config.quorum_n, c.config.quorum_w, c.config.quorum_r];
        const membersBefore = c.nodes.size;
        const plan = addNodePlan(old, membersBefore);
        const drainMs = c.timings.requestTimeoutMs + addNodeDrainMarginMs;
        const phases: string[] = [];

        // Phase 1: widen on the old ring. Each old quorum meets each widened one.
        await setQuorum(c, plan.widen);
        phases.push(
          `widen: every node now coordinates with ${showQuorum(plan.widen)} ` +
            `on the old ring of ${membersBefore} nodes ` +
            `(was ${showQuorum(old)}); waited ${drainMs} ms for requests under the old quorum to finish`,
        );
        await sleep(drainMs);
        stillThere(c);

        // Phase 2: join under the widened quorum. The new node starts with it; the others learn the new ring.
        c.config.quorum_n = plan.joint[0];
        c.config.quorum_w = plan.joint[1];
        c.config.quorum_r = plan.joint[2];
        const added = await c.addNode().catch((err: unknown) => {
          // A refusal with a code (a crashed peer, no leader) keeps its table status; anything else is a bug.
          const status = err instanceof ReplicationError ? statusOf(err.code, 'control') : 500;
          throw new HttpError(status, `adding the node failed: ${(err as Error).message}`);
        });
        publish(c.id, {
          type: 'node_state_changed',
          node_id: added.id,
          data: { state: 'online', reason: 'added', reconfigure: true },
        });
        await setQuorum(c, plan.joint);
        phases.push(
          `join: ${added.id} added to the ring under ${showQuorum(plan.joint)}; nodes whose keys it now replicates ` +
            `stream them to it; waited ${drainMs} ms for requests under the widened old-ring quorum to finish`,
        );
        await sleep(drainMs);
        stillThere(c);

        // Phase 3: stream until the new replica sets agree (anti-entropy on top of the key transfers).
        const placement = placementOf(c);
        const streamDeadline = performance.now() + addNodeStreamWaitMsMax;
        let rounds = 0;
        let cmp: Comparison | undefined;
        let pending = 0;
        for (;;) {
          rounds++;
          await controlAll(c, { kind: 'custom', name: 'anti_entropy' }, 'online');
          await sleep(replicaComparePollMs * 2);
          stillThere(c);
          const statuses = await withinMs(c.statuses(), checkerNodeCallDeadlineMs);
          pending = 0;
          for (const s of statuses?.values() ?? []) {
            const p = s.extra?.['pending_transfers'];
            if (typeof p === 'number') pending += p;
          }
          cmp = compareReplicas((await snapshot(c)).replicas, placement, Infinity);
          if ((cmp.converged && pending === 0) || performance.now() > streamDeadline) break;
        }
        const newStore = (await withinMs(added.remote.store(), checkerNodeCallDeadlineMs)) ?? {};
        const reconciled = Object.keys(newStore).length;
        const streamedOk = cmp?.converged === true && pending === 0;
        phases.push(
          streamedOk
            ? `stream: ${added.id} holds its ${reconciled} keys and every key's ${plan.joint[0]} ` +
                `replicas agree (${rounds} ` +
                'anti-entropy round(s))'
            : `stream: not finished within ${addNodeStreamWaitMsMax} ms (${pending} key transfers pending, ` +
                `${cmp?.divergedTotal ?? '?'} keys differ); narrowing ` +
                `anyway, which the quorum overlap keeps safe, and ` +
                'anti-entropy continues in the background',
        );

        // Phase 4: narrow to the new quorum.
        await setQuorum(c, plan.final);
        phases.push(
          `narrow: every node now coordinates with ${showQuorum(plan.final)} (W + R - N = ` +
            `${plan.final[1] + plan.final[2] - plan.final[0]}, as before: ${old[1] + old[2] - old[0]})`,
        );

        const body = {
          cluster_id: c.id,
          added_node: added.id,
          old_quorum: [...old],
          new_quorum: [...plan.final],
          overlap_held: plan.overlapHeld,
          reconciled,
          phases,
          transition_quorums: { widen: [...plan.widen], joint: [...plan.joint] },
          overlap_checks: plan.checks,
          streamed: streamedOk,
          elapsed_ms: Math.round(performance.now() - started),
        };
        publish(c.id, {
          type: 'reconfigured',
          node_id: added.id,
          data: { old_quorum: body.old_quorum, new_quorum: body.new_quorum, overlap_held: plan.overlapHeld },
        });
        return { status: 200, body };
      });
    },
    { summary: 'Add a node to the cluster (raft: a membership change through the log)' },
  );

  /** Debugging: overwrite one leaderless replica's copy with an older, wrong value (no replication). */
  app.post(
    '/api/v1/clusters/:id/nodes/:nodeId/corrupt',
    async (req) => {
      const c = getCluster(req);
      const nodeId = req.params['nodeId'] ?? '';
      const node = c.nodes.get(nodeId);
      if (!node) throw new HttpError(404, `node ${nodeId} not found in cluster ${c.id}`);
      if (c.config.strategy !== 'leaderless')
        throw new HttpError(
          400,
          `corrupting a replica is supported on leaderless clusters only; this cluster is ${c.config.strategy}`,
        );
      const b = req.body as CorruptRequest;
      const args: Record<string, unknown> = { key: b.key, value: b.value };
      if (b.timestamp !== undefined) args['timestamp'] = b.timestamp;
      const r = await withinMs(
        node.remote.control({ kind: 'custom', name: 'corrupt', args }),
        checkerNodeCallDeadlineMs,
      );
      if (!r) throw new HttpError(409, `node ${nodeId} did not answer`);
      if (!r.ok) throw new HttpError(statusOf(r.code, 'control'), r.error);
      const entry = (r.data as { entry?: Parameters<typeof toKVEntry>[0] } | undefined)?.entry;
      return {
        status: 200,
        body: { status: 'corrupted', node_id: nodeId, key: b.key, ...(entry ? { entry: toKVEntry(entry) } : {}) },
      };
    },
    { summary: "Overwrite a key in one node's store (to test repair)", body: CorruptRequest },
  );
}
