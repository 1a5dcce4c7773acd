/**
 * The leaderless audit trail behind GET nodes/{id}/log: one AuditRecord per version a node stored,
 * and why (a client write, a repair, a handoff, ...), capped to the most recent ones. An audit
 * record is not a replicated log entry (raft's LogEntry): nothing is ordered or replayed from it.
 */
import type { NodeId, Version } from '../../core.js';

export type AuditCause =
  | 'write'
  | 'apply'
  | 'hint'
  | 'repair'
  | 'handoff'
  | 'transfer'
  | 'anti_entropy'
  | 'corrupt'
  | 'moved';

/** The field names are the HTTP API's (GET nodes/{id}/log). */
export interface AuditRecord {
  index: number;
  kind: AuditCause;
  key: string;
  node_id: NodeId;
  timestamp: number;
  tombstone: boolean;
  from?: NodeId;
  hint_for?: NodeId;
}

/** The most recent `recordsMax` records; older ones are dropped and counted. */
export class AuditLog {
  private readonly records: AuditRecord[] = [];
  private lastIndex = 0;
  /** Records dropped past the cap (status: log_dropped). */
  dropped = 0;

  constructor(readonly recordsMax: number) {}

  append(kind: AuditCause, v: Version, from: NodeId, hintFor?: NodeId): void {
    const record: AuditRecord = {
      index: ++this.lastIndex,
      kind,
      key: v.key,
      node_id: v.node_id,
      timestamp: v.timestamp,
      tombstone: v.tombstone,
      from,
    };
    if (hintFor !== undefined) record.hint_for = hintFor;
    this.records.push(record);
    if (this.records.length > this.recordsMax) {
      this.records.shift();
      this.dropped++;
    }
  }

  /** Copies of the records kept, oldest first. */
  view(): AuditRecord[] {
    return this.records.map((r) => ({ ...r }));
  }

  get length(): number {
    return this.records.length;
  }
}
