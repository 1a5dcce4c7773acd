/**
 * Write-ahead logging and the moment of acknowledgement: a WAL server appends each client write as
 * a checksummed line to a real file (node:fs FileHandle write + sync), and either acknowledges it at
 * once and flushes its in-memory buffer every K writes (`buffered`), or acknowledges only after the
 * record is fsynced (`fsync`). A crash discards the unflushed buffer; recovery re-reads the file,
 * drops a torn or corrupt tail, and replays the log, which shows which acknowledged writes were lost.
 * The server's decisions are pure (it emits I/O requests); the async driver performs the real I/O
 * and steps the fabric. It is a demo of durability, not a storage engine (no compaction, one file).
 */
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { unreachable } from '../../util/assert.js';
import { DemoNet, Narrator, type DemoActor, type Outgoing } from './runtime.js';

export type WalMode = 'buffered' | 'fsync';

export type WalMsg = { t: 'put'; seq: number; key: string; value: string } | { t: 'ack'; seq: number };

export interface WalRecord {
  seq: number;
  key: string;
  value: string;
}

/** What the pure server asks the driver to do, in order. `seqs` are the records the write carries. */
export type IoRequest = { kind: 'write'; data: string; seqs: number[] } | { kind: 'sync'; seqs: number[] };

export const walTimings = {
  /** Buffered mode flushes (write + fsync) once this many records wait in memory. */
  flushEveryWrites: 4,
  /** Virtual time an fsync is modelled to take (the real one is measured and reported separately). */
  fsyncCostMs: 5,
  /** Client writes, one every writeIntervalMs. */
  writes: 10,
  writeIntervalMs: 3,
};

/** One line per record: `seq key value crc32`, tab-separated; the checksum covers the first three fields. */
export function encodeRecord(r: WalRecord): string {
  const body = `${r.seq}\t${r.key}\t${r.value}`;
  return `${body}\t${crc32(body).toString(16).padStart(8, '0')}\n`;
}

export interface ReplayResult {
  records: WalRecord[];
  /** Bytes after the last good record: a torn final write or a checksum mismatch ends the log. */
  discarded_tail_bytes: number;
}

/**
 * Recovery rule (ARIES-style redo of a log with checksummed records): read records in order and
 * stop at the first incomplete line or bad checksum; everything before it is the durable history.
 */
export function replayLog(text: string): ReplayResult {
  const records: WalRecord[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    if (nl < 0) break;
    const parts = text.slice(pos, nl).split('\t');
    if (parts.length !== 4) break;
    const [seqS, key, value, crc] = parts as [string, string, string, string];
    const body = `${seqS}\t${key}\t${value}`;
    if (crc32(body).toString(16).padStart(8, '0') !== crc) break;
    const seq = Number(seqS);
    if (!Number.isInteger(seq)) break;
    records.push({ seq, key, value });
    pos = nl + 1;
  }
  return { records, discarded_tail_bytes: Buffer.byteLength(text.slice(pos)) };
}

interface HeldAck {
  seq: number;
  to: string;
  releaseAt: number;
}

export class WalServer implements DemoActor<WalMsg> {
  readonly id: string;
  /** Records acknowledged to the client. */
  readonly acked: WalRecord[] = [];
  /** Sequence numbers of the records known written and fsynced. */
  readonly durable = new Set<number>();
  private buffer: WalRecord[] = [];
  private io: IoRequest[] = [];
  private held: HeldAck[] = [];
  private out: Array<Outgoing<WalMsg>> = [];
  private readonly bySeq = new Map<number, WalRecord>();

  constructor(
    id: string,
    readonly mode: WalMode,
    private readonly narrator: Narrator,
  ) {
    this.id = id;
  }

  bufferedCount(): number {
    return this.buffer.length;
  }

  onMessage(from: string, msg: WalMsg, now: number): void {
    switch (msg.t) {
      case 'put': {
        const r: WalRecord = { seq: msg.seq, key: msg.key, value: msg.value };
        this.bySeq.set(r.seq, r);
        switch (this.mode) {
          case 'buffered':
            // Acknowledge first, persist later: fast, and exposed until the next flush.
            this.buffer.push(r);
            this.ackNow(
              from,
              r,
              now,
              `${this.id} appends write #${r.seq} (${r.key}=${r.value}) to its memory buffer and ACKs at once ` +
                `(${this.buffer.length}/${walTimings.flushEveryWrites} buffered).`,
            );
            if (this.buffer.length >= walTimings.flushEveryWrites) {
              const seqs = this.buffer.map((b) => b.seq);
              this.io.push(
                { kind: 'write', data: this.buffer.map(encodeRecord).join(''), seqs },
                { kind: 'sync', seqs },
              );
              this.buffer = [];
              this.narrator.say(
                now,
                `The buffer is full: ${this.id} writes records #${seqs[0]}-#${seqs[seqs.length - 1]} ` +
                  'to the log file and calls fsync.',
              );
            }
            return;
          case 'fsync':
            // Write-ahead rule: the record is on stable storage before anyone is told it happened.
            this.io.push({ kind: 'write', data: encodeRecord(r), seqs: [r.seq] }, { kind: 'sync', seqs: [r.seq] });
            this.held.push({ seq: r.seq, to: from, releaseAt: now + walTimings.fsyncCostMs });
            this.narrator.say(
              now,
              `${this.id} writes #${r.seq} (${r.key}=${r.value}) to the log file and calls fsync; ` +
                'the ACK waits for it.',
            );
            return;
          default:
            return unreachable(this.mode);
        }
      }
      case 'ack':
        return;
      default:
        unreachable(msg);
    }
  }

  private ackNow(to: string, r: WalRecord, now: number, sentence: string): void {
    this.acked.push(r);
    this.out.push({ to, msg: { t: 'ack', seq: r.seq } });
    this.narrator.say(now, sentence);
  }

  /** The driver hands over pending I/O; it must perform it in order before the next step. */
  takeIo(): IoRequest[] {
    const io = this.io;
    this.io = [];
    return io;
  }

  /** The driver reports an fsync that returned: those records are durable. */
  synced(seqs: number[]): void {
    for (const s of seqs) this.durable.add(s);
  }

  onTick(now: number): void {
    const keep: HeldAck[] = [];
    for (const h of this.held) {
      const r = this.bySeq.get(h.seq);
      if (r && now >= h.releaseAt && this.durable.has(h.seq))
        this.ackNow(h.to, r, now, `fsync of #${h.seq} returned: ${this.id} ACKs it.`);
      else keep.push(h);
    }
    this.held = keep;
  }

  nextDeadline(): number {
    let at = Infinity;
    for (const h of this.held) at = Math.min(at, h.releaseAt);
    return at;
  }

  drain(out: Array<Outgoing<WalMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

class WritingClient implements DemoActor<WalMsg> {
  readonly ackedAt = new Map<number, number>();
  readonly sentAt = new Map<number, number>();
  private nextSeq = 1;
  private nextAt = 0;
  private out: Array<Outgoing<WalMsg>> = [];

  constructor(
    readonly id: string,
    private readonly server: string,
  ) {}

  onMessage(_from: string, msg: WalMsg, now: number): void {
    if (msg.t === 'ack') this.ackedAt.set(msg.seq, now);
  }

  onTick(now: number): void {
    const seq = this.nextSeq++;
    this.sentAt.set(seq, now);
    this.out.push({ to: this.server, msg: { t: 'put', seq, key: `k${seq}`, value: `v${seq}` } });
    this.nextAt = seq < walTimings.writes ? now + walTimings.writeIntervalMs : Infinity;
  }

  nextDeadline(): number {
    return this.nextAt;
  }

  drain(out: Array<Outgoing<WalMsg>>): void {
    out.push(...this.out);
    this.out = [];
  }
}

export interface WalReport {
  demo: 'wal';
  mode: WalMode;
  seed: number;
  writes_sent: number;
  /** Writes the client saw acknowledged before the crash. */
  acked: number;
  /** Records written and fsynced before the crash (as the server knew it). */
  durable_before_crash: number;
  /** Acknowledged writes missing from the log replayed after the crash. */
  lost: number;
  lost_writes: WalRecord[];
  recovered: number;
  recovered_values: Record<string, string>;
  discarded_tail_bytes: number;
  flush_every_writes: number | null;
  fsync_calls: number;
  /** Real time spent in fsync on this machine (wall clock, varies run to run). */
  fsync_wall_ms: number;
  /** Virtual time from send to ACK, as the client saw it. */
  ack_latency_ms: { avg: number; max: number };
  crashed_at_ms: number;
  file: string;
  file_bytes: number;
  file_deleted: boolean;
  narrative: string[];
}

export async function runWal(opts: { mode: WalMode; seed?: number }): Promise<WalReport> {
  const seed = opts.seed ?? 42;
  const mode = opts.mode;
  const narrator = new Narrator();
  const net = new DemoNet<WalMsg>({ seed, latency: { minMs: 1, maxMs: 3 } });
  const dir = await mkdtemp(join(tmpdir(), 'simlab-wal-'));
  const file = join(dir, 'wal.log');
  let fh: FileHandle | undefined = await open(file, 'a');
  let fsyncCalls = 0;
  let fsyncWallMs = 0;
  let deleted = false;
  try {
    narrator.note(
      mode === 'buffered'
        ? 'Mode buffered: the server ACKs each write at once and flushes (write + fsync) its buffer every ' +
            `${walTimings.flushEveryWrites} writes to ${file}.`
        : `Mode fsync: the server writes each record to ${file} and ACKs only after fsync returns (modelled as ` +
            `${walTimings.fsyncCostMs} ms of virtual time).`,
    );
    const server = new WalServer('wal', mode, narrator);
    const client = new WritingClient('client', 'wal');
    net.add(server);
    net.add(client);
    narrator.note(
      `The client sends ${walTimings.writes} writes, one every ${walTimings.writeIntervalMs} ms; the server ` +
        'crashes once the last one is acknowledged.',
    );

    const horizonMs = 2_000;
    while (client.ackedAt.size < walTimings.writes && net.now < horizonMs) {
      if (!net.step()) break;
      for (const req of server.takeIo()) {
        switch (req.kind) {
          case 'write':
            await fh.write(req.data);
            break;
          case 'sync': {
            const t0 = performance.now();
            await fh.sync();
            fsyncWallMs += performance.now() - t0;
            fsyncCalls++;
            server.synced(req.seqs);
            break;
          }
          default:
            unreachable(req);
        }
      }
    }

    // The crash: the process dies; its memory buffer is gone, the file keeps what was written.
    const crashedAt = net.now;
    const unflushed = server.bufferedCount();
    net.crash('wal');
    await fh.close();
    fh = undefined;
    const ackedSeqs = [...client.ackedAt.keys()].sort((a, b) => a - b);
    narrator.say(
      crashedAt,
      `CRASH: the server dies with ${ackedSeqs.length} writes acknowledged, ${unflushed} of them still only in its ` +
        'memory buffer.',
    );

    // Recovery: re-read the log from disk and replay it.
    const text = await readFile(file, 'utf8');
    const fileBytes = (await stat(file)).size;
    const replay = replayLog(text);
    const recoveredSeqs = new Set(replay.records.map((r) => r.seq));
    const recoveredValues: Record<string, string> = {};
    for (const r of replay.records) recoveredValues[r.key] = r.value;
    const bySeq = new Map(server.acked.map((r) => [r.seq, r]));
    const lostWrites = ackedSeqs.filter((s) => !recoveredSeqs.has(s)).map((s) => bySeq.get(s) as WalRecord);
    narrator.say(
      crashedAt,
      `Recovery re-reads ${fileBytes} bytes of log and replays ${replay.records.length} ` +
        'records' +
        (replay.discarded_tail_bytes > 0 ? `, discarding a ${replay.discarded_tail_bytes}-byte torn tail` : '') +
        '.',
    );
    narrator.say(
      crashedAt,
      lostWrites.length > 0
        ? `${lostWrites.length} acknowledged write(s) are gone: ` +
            `${lostWrites.map((r) => `#${r.seq} ${r.key}=${r.value}`).join(', ')}. The client was told they succeeded.`
        : 'Every acknowledged write is in the replayed log: nothing the client was told about was lost.',
    );

    const latencies = ackedSeqs.map((s) => (client.ackedAt.get(s) as number) - (client.sentAt.get(s) as number));
    await rm(dir, { recursive: true, force: true });
    deleted = true;
    return {
      demo: 'wal',
      mode,
      seed,
      writes_sent: client.sentAt.size,
      acked: ackedSeqs.length,
      durable_before_crash: server.durable.size,
      lost: lostWrites.length,
      lost_writes: lostWrites,
      recovered: replay.records.length,
      recovered_values: recoveredValues,
      discarded_tail_bytes: replay.discarded_tail_bytes,
      flush_every_writes: mode === 'buffered' ? walTimings.flushEveryWrites : null,
      fsync_calls: fsyncCalls,
      fsync_wall_ms: Math.round(fsyncWallMs * 100) / 100,
      ack_latency_ms: {
        avg: latencies.length ? Math.round((latencies.reduce((a, b) => a + b, 0) / latencies.length) * 10) / 10 : 0,
        max: latencies.length ? Math.max(...latencies) : 0,
      },
      crashed_at_ms: crashedAt,
      file,
      file_bytes: fileBytes,
      file_deleted: deleted,
      narrative: narrator.sentences(),
    };
  } finally {
    if (fh) await fh.close();
    if (!deleted) await rm(dir, { recursive: true, force: true });
  }
}
