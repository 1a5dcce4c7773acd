/**
 * The front's view of a raft cluster's membership: which node is the authoritative leader (claims
 * it, is online and reaches a majority of its voters through the fabric), the newest committed
 * configuration seen and the nodes still joining, and POST/DELETE nodes as one single-server change
 * each, proposed to the leader with retries. The raft core decides membership; this only proposes
 * and follows it, so the cluster can start joiners and stop the members a configuration dropped.
 */
import type { Fabric } from '../../fabric/fabric.js';
import type { WirePayload } from '../../fabric/live.js';
import type { ClientReply, CoreEvent, CoreStatus, NodeId } from '../core.js';
import { ReplicationError } from '../errors.js';
import { membershipChangeRetriesMax, membershipChangeRetryMs } from '../limits.js';
import type { NodeHandle } from '../node-handle.js';

/** A raft node's configuration as its status reports it (CoreStatus.extra.voters). */
export function raftVotersOf(s: CoreStatus): NodeId[] {
  const v = s.extra?.['voters'];
  return Array.isArray(v) ? v.filter((x): x is NodeId => typeof x === 'string') : [];
}

/**
 * Asks the raft leader for one membership change and waits for its answer. Right after an election
 * the leader refuses changes until it commits an entry of its term ("retry shortly"): retried up to
 * membershipChangeRetriesMax times, membershipChangeRetryMs apart (limits.ts).
 */
export async function proposeMembershipChange(
  leader: NodeHandle,
  cmd: { kind: 'add_server' | 'remove_server'; node_id: NodeId },
): Promise<ClientReply> {
  let r = await leader.controlAwait(cmd);
  for (let i = 0; i < membershipChangeRetriesMax && !r.ok && /retry shortly/.test(r.error); i++) {
    await new Promise((res) => setTimeout(res, membershipChangeRetryMs));
    r = await leader.controlAwait(cmd);
  }
  return r;
}

/** What RaftMembership needs of its cluster. */
export interface RaftMembershipHost {
  readonly nodes: ReadonlyMap<NodeId, NodeHandle>;
  readonly fabric: Fabric<WirePayload>;
  readonly requestTimeoutMs: number;
  /** The authoritative leader, after asking every node (Cluster.raftLeader). */
  leader(): Promise<NodeHandle | undefined>;
  /** Starts a node with a fresh id that knows the current members plus itself. */
  startNode(): NodeHandle;
  /** Undoes startNode for an addition the leader refused. */
  discardNode(handle: NodeHandle): Promise<void>;
  /** A member the committed configuration dropped: stop it, as DELETE would have done. */
  stopDropped(nodeId: NodeId): void;
}

const noLeader = 'no leader elected yet; a raft membership change needs a leader';

export class RaftMembership {
  /** Index of the newest committed configuration seen (membership_changed or a status). */
  private configIndex = 0;
  /** Nodes started by POST nodes whose addition is not yet seen committed. */
  private readonly joining = new Set<NodeId>();

  private readonly nodes: ReadonlyMap<NodeId, NodeHandle>;

  constructor(private readonly host: RaftMembershipHost) {
    this.nodes = host.nodes;
  }

  /**
   * Raft membership goes through the log, one single-server change at a time: start the new node
   * knowing the current configuration plus itself, then have the leader append the new
   * configuration; the leader catches the node up with AppendEntries or InstallSnapshot.
   */
  async addMember(): Promise<NodeHandle> {
    const leader = await this.host.leader();
    if (!leader) throw new ReplicationError('no_leader', noLeader);
    const handle = this.host.startNode();
    const id = handle.id;
    // Left alone until its addition is seen committed.
    this.joining.add(id);
    await handle.ready();
    const r = await proposeMembershipChange(leader, { kind: 'add_server', node_id: id });
    if (r.ok) {
      this.changeAnswered(r);
      return handle;
    }
    if (r.indeterminate) {
      // The entry may still commit: the node stays (a member if it does; DELETE withdraws it).
      throw new ReplicationError(
        'timeout',
        `${id} was started and its addition proposed, but it was not committed within ` +
          `${this.host.requestTimeoutMs} ms; ` +
          `${id} joins if the entry commits (DELETE ${id} withdraws it)`,
      );
    }
    this.joining.delete(id);
    await this.host.discardNode(handle);
    throw new ReplicationError(r.code, r.error);
  }

  /**
   * DELETE of a raft member: the leader appends a configuration without it, finds it already gone
   * from the committed one, or waits on the pending entry that removes it. Returns once committed;
   * a refusal throws its code naming why; a commit timeout throws 'timeout' saying the removal is
   * pending: if the entry commits, the node is stopped and leaves (configCommitted), and a repeated
   * DELETE waits for the same entry instead of proposing another.
   */
  async removeMember(nodeId: NodeId): Promise<void> {
    const leader = await this.host.leader();
    if (!this.nodes.has(nodeId)) return; // a committed configuration seen meanwhile removed it
    if (!leader) throw new ReplicationError('no_leader', noLeader);
    const r = await proposeMembershipChange(leader, { kind: 'remove_server', node_id: nodeId });
    if (r.ok) {
      this.changeAnswered(r);
      return;
    }
    if (r.indeterminate) {
      throw new ReplicationError(
        'timeout',
        `the removal of ${nodeId} was proposed but not committed within ${this.host.requestTimeoutMs} ms ` +
          `(a majority of the new configuration is unreachable or paused); it stays pending: if it commits, ` +
          `${nodeId} is stopped and leaves the cluster; DELETE again to wait for the outcome`,
      );
    }
    throw new ReplicationError(r.code, r.error);
  }

  /** A node left the cluster (or a joiner was withdrawn). */
  forget(nodeId: NodeId): void {
    this.joining.delete(nodeId);
  }

  /**
   * The one raft leader `state` names: of the nodes that claim leadership, are online (not paused,
   * crashed or silent) and reach a majority of their configuration's voters through the fabric
   * (online voters not partitioned away from it), the one of the highest term. A paused or
   * partitioned former leader still says `leader` (it cannot know better until it hears a newer
   * term or CheckQuorum steps it down) and is shown with stale_leader: true.
   */
  authoritativeLeader(st: ReadonlyMap<NodeId, CoreStatus>): NodeId | undefined {
    let best: NodeId | undefined;
    let bestTerm = -1;
    for (const [id, s] of st) {
      const h = this.nodes.get(id);
      if (s.role !== 'leader' || !h || h.isDown || h.state !== 'online' || (s.term ?? 0) <= bestTerm) continue;
      if (!this.reachesMajority(id, raftVotersOf(s))) continue;
      best = id;
      bestTerm = s.term ?? 0;
    }
    return best;
  }

  private reachesMajority(id: NodeId, voters: readonly NodeId[]): boolean {
    let reached = 0;
    for (const v of voters) {
      const h = this.nodes.get(v);
      if (v === id) reached++;
      else if (h && !h.isDown && h.state === 'online' && !this.host.fabric.isBlocked(id, v)) reached++;
    }
    return reached >= Math.floor(voters.length / 2) + 1;
  }

  /**
   * A committed raft configuration (membership_changed from a leader, or a leader's status that
   * says its latest configuration is committed): the members it dropped are stopped and leave the
   * cluster, as DELETE would have done. A node still joining (its add not yet seen committed) is
   * left alone; configurations older than the last one seen are ignored (several leaders report).
   */
  configCommitted(voters: readonly NodeId[], index: number): void {
    if (index <= this.configIndex) return;
    this.configIndex = index;
    for (const id of voters) this.joining.delete(id);
    for (const id of [...this.nodes.keys()]) {
      if (voters.includes(id) || this.joining.has(id)) continue;
      this.host.stopDropped(id);
    }
  }

  /** A committed change's answer carries the configuration: {key: '__config__', value: voters, version: index}. */
  changeAnswered(r: ClientReply): void {
    if (!r.ok || r.result.kind !== 'entry') return;
    const { value, version } = r.result.entry;
    this.configCommitted(
      value.split(',').filter((v) => v !== ''),
      version,
    );
  }

  /** A membership_changed event of a node. */
  membershipChanged(e: CoreEvent): void {
    const voters = e.data?.['voters'];
    const index = e.data?.['index'];
    if (!Array.isArray(voters) || typeof index !== 'number') return;
    this.configCommitted(
      voters.filter((v): v is NodeId => typeof v === 'string'),
      index,
    );
  }

  /** The fallback for a lost membership_changed: the authoritative leader's committed config. */
  reconcile(st: ReadonlyMap<NodeId, CoreStatus>): void {
    const leader = this.authoritativeLeader(st);
    const extra = leader === undefined ? undefined : st.get(leader)?.extra;
    if (!extra || extra['config_committed'] !== true || typeof extra['config_index'] !== 'number') return;
    this.configCommitted(raftVotersOf(st.get(leader as NodeId) as CoreStatus), extra['config_index']);
  }
}
