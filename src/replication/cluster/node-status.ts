/**
 * What a cluster knows of its nodes' statuses: the last status each gave, which ones were silent
 * past nodeCallDeadlineMs at the last look, and the one status call in flight per node that views
 * share. It asks nodes and remembers their answers; it does not decide who leads (raft-membership.ts).
 */
import type { NodeStatus } from '../../../protocol/replication.js';
import type { CoreStatus, NodeId } from '../core.js';
import { nodeCallDeadlineMs } from '../limits.js';
import type { NodeHandle } from '../node-handle.js';
import { withinMs } from './time.js';

/** What a node told within the deadline: its status, or why it did not. */
export type StatusProbe = { ok: true; status: CoreStatus } | { ok: false; why: 'crashed' | 'unresponsive' };

export class NodeStatusTracker {
  /** Last statuses seen, for metrics collection without a round trip. */
  readonly lastStatus = new Map<NodeId, CoreStatus>();
  /** Nodes that did not answer within the deadline at the last aggregate view. */
  private readonly unresponsive = new Set<NodeId>();
  /** The status call in flight per node (at most one). */
  private readonly statusCalls = new Map<NodeHandle, Promise<CoreStatus | undefined>>();

  constructor(private readonly nodes: ReadonlyMap<NodeId, NodeHandle>) {}

  /**
   * One node's status within the deadline; a crashed node answers at once, a silent one is named.
   * One status call per node at a time: views asked meanwhile share it, and once a node has been
   * found unresponsive, views do not wait for it again until that call has come back.
   */
  async probe(n: NodeHandle): Promise<StatusProbe> {
    if (n.isDown) return { ok: false, why: 'crashed' };
    let call = this.statusCalls.get(n);
    const shared = call !== undefined;
    if (call === undefined) {
      call = n.remote
        .status()
        .then(
          (st) => {
            if (this.nodes.get(n.id) === n) {
              this.lastStatus.set(n.id, st);
              this.unresponsive.delete(n.id);
            }
            return st;
          },
          () => undefined,
        )
        .finally(() => this.statusCalls.delete(n));
      this.statusCalls.set(n, call);
    }
    const s = shared && this.unresponsive.has(n.id) ? undefined : await withinMs(call, nodeCallDeadlineMs);
    if (s === undefined) {
      if (n.isDown) return { ok: false, why: 'crashed' };
      this.unresponsive.add(n.id);
      return { ok: false, why: 'unresponsive' };
    }
    return { ok: true, status: s };
  }

  /**
   * The statuses of the nodes that answered within nodeCallDeadlineMs (crashed nodes are not
   * asked); the others keep their last known status in lastStatus and show as crashed or
   * unresponsive in the cluster's state.
   */
  async statuses(): Promise<Map<NodeId, CoreStatus>> {
    const nodes = [...this.nodes.values()];
    const probes = await Promise.all(nodes.map((n) => this.probe(n)));
    const m = new Map<NodeId, CoreStatus>();
    nodes.forEach((n, i) => {
      const p = probes[i] as StatusProbe;
      if (p.ok) m.set(n.id, p.status);
    });
    for (const id of [...this.lastStatus.keys()]) if (!this.nodes.has(id)) this.lastStatus.delete(id);
    return m;
  }

  /** The last status a node gave, or an empty one (a node that never answered). */
  lastKnown(nodeId: NodeId): CoreStatus {
    return this.lastStatus.get(nodeId) ?? { role: 'unknown', commit_index: 0, last_applied: 0, leader_id: '', lag: 0 };
  }

  /** crashed (worker gone), unresponsive (silent past the deadline at the last look), else the handle's state. */
  shownState(n: NodeHandle): NodeStatus['state'] {
    if (n.isDown) return n.state === 'offline' ? 'offline' : 'crashed';
    if (this.unresponsive.has(n.id)) return 'unresponsive';
    return n.state;
  }

  /** The node crashed: it is down, not silent. */
  crashed(nodeId: NodeId): void {
    this.unresponsive.delete(nodeId);
  }

  /** The node was removed: nothing of it is kept. */
  forget(nodeId: NodeId): void {
    this.unresponsive.delete(nodeId);
    this.lastStatus.delete(nodeId);
  }
}
