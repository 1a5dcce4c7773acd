/**
 * The wire between the front process and node actors (worker_threads), and between actors through
 * the fabric. Everything is msgpack (msgpackr). Two kinds of traffic:
 *  - peer frames: many node-to-node messages packed into one transferable ArrayBuffer
 *    ([u16 node index][u32 length][msgpack bytes] repeated), so the fabric routes them without
 *    decoding, and deliveries to a worker are batched;
 *  - client batches: an array of client requests (front -> actor) or replies and events
 *    (actor -> front), one msgpack document per post, written as msgpack records over shapes both
 *    ends know in advance (clientStructures).
 * Control calls (status, pause, clock skew, ...) go over comlink on a separate port.
 * The TypeBox schemas of these messages live in actor-schemas.ts (not imported here: a worker
 * loads this module, and typebox would add hundreds of ms to every node's start-up).
 */
// msgpackr's plain entry (pack + unpack), not its Node entry: that one also loads node:stream and
// probes for the native string extractor, and this module is loaded by every node thread. Starting
// a thread is the cost of creating a cluster (3 threads each): with comlink's ES module build too,
// module loading per thread went from ~22 to ~9 ms of CPU (40 threads, 4 interleaved runs).
import { Packr } from 'msgpackr/pack';

const packr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true });

export function encode(value: unknown): Uint8Array {
  return packr.pack(value);
}

/**
 * encode() with msgpack's smallest map headers (fixmap, not map16): the same values, read by any
 * decoder and by the fabric's link stats. msgpackr reads the keys of a document under 180 bytes
 * through its key cache and decodes every key string of a longer one, so a message just over 180
 * bytes with map16 headers decodes faster this way (leaderless's put for a 1-key write: 182 -> 176
 * bytes; decoding 1.9 -> 1.3 us, encoding 0.72 -> 0.78 us, msgpackr alone). The node actor uses it
 * for leaderless peer messages.
 */
const compactPackr = new Packr({ useRecords: false, moreTypes: false, mapsAsObjects: true, variableMapSize: true });

export function encodeCompact(value: unknown): Uint8Array {
  return compactPackr.pack(value);
}

export function decode<T = unknown>(bytes: Uint8Array): T {
  return packr.unpack(bytes) as T;
}

/** Encode into a fresh, exactly-sized ArrayBuffer that can be transferred to another thread. */
export function encodeTransferable(value: unknown): ArrayBuffer {
  return transferableCopy(packr.pack(value));
}

function transferableCopy(packed: Uint8Array): ArrayBuffer {
  const out = new Uint8Array(packed.byteLength);
  out.set(packed);
  return out.buffer;
}

/**
 * The shapes (key lists, in key order) of the client channel's hot objects, known to both ends:
 * msgpack records. An object of one of these shapes goes as a record id and its values, with no
 * key strings, and msgpackr reads it with a reader compiled for the shape (a map costs a key read
 * per field). Any other shape (an error reply, an event's data) still travels, as a record defined
 * inside its document. The list is part of the wire (an index is a record id): the front and its
 * actors load it from this one module of the same build, so both ends always agree. Peer frames
 * stay plain maps (the fabric's link stats read a message's kind tag from its bytes); durable
 * records have shapes of their own (durableStructures). Measured (batches of 16 single_leader
 * writes, CPU medians of 12 interleaved rounds): the front's part (encode the requests, decode the
 * replies) 1.77 -> 0.85 us per write, the actor's 1.58 -> 1.20; 173 -> 76 reply bytes and 72 -> 50
 * request bytes per write.
 */
const clientStructures = (): string[][] => [
  // actor -> front: the `out` document, a reply, its result, the entry (a Version), events
  ['replies', 'events'],
  ['id', 'ok', 'result'],
  ['kind', 'entry', 'node_id'],
  ['key', 'value', 'tombstone', 'timestamp', 'node_id', 'version', 'vclock'],
  ['type', 'node_id', 'data'],
  ['index', 'entries', 'leader'],
  ['index'],
  ['key', 'op', 'acks', 'required', 'latency_ms', 'sloppy', 'stand_ins'],
  // version vectors: raft's (empty) and those of a key written through one node, n1 to n9 (a
  // record defined inside a document costs its reader to be built again in every document)
  [],
  ['n1'],
  ['n2'],
  ['n3'],
  ['n4'],
  ['n5'],
  ['n6'],
  ['n7'],
  ['n8'],
  ['n9'],
  // front -> actor: a request, traced or not, and its operation
  ['id', 'op'],
  ['id', 'op', 'tp'],
  ['op', 'key', 'value'],
  ['op', 'key', 'value', 'client_id'],
  ['op', 'key'],
  ['op', 'key', 'client_id'],
];
const clientShapes = clientStructures();
/** No shape is added at run time (maxSharedStructures): both ends keep exactly the list above. */
const clientPackr = new Packr({
  structures: clientShapes,
  maxSharedStructures: clientShapes.length,
  useRecords: true,
  moreTypes: false,
  mapsAsObjects: true,
});

/** A client batch (`req`) or an `out` document, as a transferable ArrayBuffer (records, see clientStructures). */
export function encodeClientTransferable(value: unknown): ArrayBuffer {
  return transferableCopy(clientPackr.pack(value));
}

/** Reads what encodeClientTransferable wrote. */
export function decodeClient<T = unknown>(bytes: Uint8Array): T {
  return clientPackr.unpack(bytes) as T;
}

/**
 * Durable records (CoreOutput.durable) as msgpack records over the shapes of their hot objects: a
 * stored Version (the checkpoints of single-leader, multi-leader and raft) and raft's records and
 * log entries (raft/durable.ts, raft/leader.ts appendEntry). Only an object that passes
 * `durableRecordShape` is written as a record; any other (a vector clock, raft's store keyed by
 * user keys, a batch's key/value pairs) stays a plain map, so the encoder's table of shapes it has
 * seen stays bounded by the code's shapes and never grows with user keys. The bytes live only in the
 * front process's memory and are read back by an actor of the same build (forEachDurableRecord),
 * which reads plain maps too. Measured (msgpackr alone): a raft append of 16 entries 6.8 -> 5.0 us,
 * a checkpoint of 1,000 Versions 503 -> 328 us; single-leader's flat arrays are unchanged.
 */
const durableStructures = (): string[][] => [
  ['key', 'value', 'tombstone', 'timestamp', 'node_id', 'version', 'vclock'],
  ['kind', 'entries'],
  ['kind', 'term', 'votedFor'],
  ['kind', 'lastIncludedIndex', 'lastIncludedTerm'],
  ['kind', 'fromIndex'],
  ['index', 'term', 'node_id', 'timestamp', 'type', 'key', 'value'],
  ['index', 'term', 'node_id', 'timestamp', 'type', 'key'],
  ['index', 'term', 'node_id', 'timestamp', 'type'],
];
const durableShapes = durableStructures();

/** A Version, a raft record or a raft log entry (never an object keyed by user keys: see durableStructures). */
function durableRecordShape(o: Record<string, unknown>): boolean {
  return (
    typeof o['kind'] === 'string' ||
    typeof o['index'] === 'number' ||
    (typeof o['key'] === 'string' && typeof o['vclock'] === 'object')
  );
}

const durablePackr = new Packr({
  structures: durableShapes,
  maxSharedStructures: durableShapes.length,
  useRecords: durableRecordShape,
  moreTypes: false,
  mapsAsObjects: true,
});

/** One step's durable records (an array) as the bytes of a durable frame (see durableStructures). */
export function encodeDurable(records: unknown[]): Uint8Array {
  return durablePackr.pack(records);
}

/** Front -> actor post. `net` is a peer frame buffer (deliveries), `req` a msgpack array of client requests. */
export interface ToActor {
  net?: ArrayBuffer;
  req?: ArrayBuffer;
}

/** Actor -> front post. `net` is a peer frame buffer (sends), `out` msgpack of an ActorOut. */
export interface FromActor {
  net?: ArrayBuffer;
  out?: ArrayBuffer;
}

/** The `out` document: the step's replies to client requests and its events. */
export interface ActorOut<R = unknown, E = unknown> {
  replies: R[];
  events: E[];
}

/**
 * A step's durable records (CoreOutput.durable, msgpack of an array) travel as the first frame of
 * the step's `net` buffer under one of these two reserved indexes (never a node's: node indexes
 * stay below them), so the front stores them before it submits any of the step's sends or answers
 * its replies (etcd raft's Ready contract) without decoding the records, and a follower's step
 * (records plus an ack) costs one transferable. `durableCheckpointFrameIndex`: the first record is
 * a checkpoint, so storage drops what it held. Measured: carrying the records in the `out` document
 * cost raft 6% of write throughput (every follower step then encoded and decoded an `out`); a
 * separate transferable per post cost about a quarter.
 */
export const durableFrameIndex = 0x7fff;
export const durableCheckpointFrameIndex = 0x7ffe;
/** Frame indexes from here up are not nodes (the fabric skips them). */
export const reservedFrameIndexMin = durableCheckpointFrameIndex;

/** The durable frame at the head of a `net` buffer, if any (bytes are a view into `buf`). */
export function leadingDurableFrame(
  buf: ArrayBuffer,
): { bytes: Uint8Array; checkpoint: boolean; end: number } | undefined {
  if (buf.byteLength < headerBytes) return undefined;
  const dv = new DataView(buf);
  const idx = dv.getUint16(0);
  if (idx !== durableFrameIndex && idx !== durableCheckpointFrameIndex) return undefined;
  const len = dv.getUint32(2);
  return {
    bytes: new Uint8Array(buf, headerBytes, len),
    checkpoint: idx === durableCheckpointFrameIndex,
    end: headerBytes + len,
  };
}

/**
 * Walks durable storage handed to a restarted actor: each buffer holds one or more msgpack
 * documents (a `dur` post, or several merged), each an array of records, in order.
 */
export function forEachDurableRecord(bufs: readonly ArrayBuffer[], fn: (record: unknown) => void): void {
  for (const buf of bufs) {
    durablePackr.unpackMultiple(new Uint8Array(buf), (doc: unknown) => {
      if (Array.isArray(doc)) for (const r of doc) fn(r);
    });
  }
}

/** Node ids are `n<k>`; frames carry k as a u16. */
export function nodeIndex(id: string): number {
  return Number(id.slice(1));
}

export function nodeIdOf(index: number): string {
  return `n${index}`;
}

const headerBytes = 6;
/** Set on the index when a W3C traceparent follows the header ([u8 length][ascii]); tracing only. */
const tracedFlag = 0x8000;

/** Builds one frame buffer from (node index, message bytes[, traceparent]) entries. */
export class FrameWriter {
  private parts: Array<{ idx: number; bytes: Uint8Array; tp: string | undefined }> = [];
  private size = 0;

  add(idx: number, bytes: Uint8Array, tp?: string): void {
    this.parts.push({ idx, bytes, tp });
    this.size += headerBytes + bytes.byteLength + (tp === undefined ? 0 : 1 + tp.length);
  }

  get count(): number {
    return this.parts.length;
  }

  /** The frames as a transferable ArrayBuffer; resets the writer. */
  finish(): ArrayBuffer {
    const buf = new ArrayBuffer(this.size);
    const u8 = new Uint8Array(buf);
    const dv = new DataView(buf);
    let off = 0;
    for (const p of this.parts) {
      dv.setUint16(off, p.tp === undefined ? p.idx : p.idx | tracedFlag);
      dv.setUint32(off + 2, p.bytes.byteLength);
      off += headerBytes;
      if (p.tp !== undefined) {
        u8[off] = p.tp.length;
        for (let i = 0; i < p.tp.length; i++) u8[off + 1 + i] = p.tp.charCodeAt(i);
        off += 1 + p.tp.length;
      }
      u8.set(p.bytes, off);
      off += p.bytes.byteLength;
    }
    this.parts = [];
    this.size = 0;
    return buf;
  }
}

/** Walks a frame buffer; `bytes` are views into it (no copy). */
export function readFrames(
  buf: ArrayBuffer,
  fn: (idx: number, bytes: Uint8Array, tp: string | undefined) => void,
): number {
  const dv = new DataView(buf);
  let off = 0;
  let n = 0;
  while (off + headerBytes <= buf.byteLength) {
    const raw = dv.getUint16(off);
    const len = dv.getUint32(off + 2);
    off += headerBytes;
    let tp: string | undefined;
    if (raw & tracedFlag) {
      const tl = dv.getUint8(off);
      tp = String.fromCharCode(...new Uint8Array(buf, off + 1, tl));
      off += 1 + tl;
    }
    fn(raw & ~tracedFlag, new Uint8Array(buf, off, len), tp);
    off += len;
    n++;
  }
  return n;
}
