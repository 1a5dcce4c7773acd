/**
 * The Wing–Gong–Lowe search for one key's history, resumable in bounded slices so that several
 * keys can be searched in turn (the first violation anywhere ends the check) and a time budget
 * can be honoured between slices. Pure: no clock, no I/O; the caller decides when to stop.
 *
 * Shape (after Lowe, and Porcupine): events in a doubly linked list sorted by time; linearizing
 * an operation lifts its call and return out of the list, backtracking puts them back (dancing
 * links). From a configuration (linearized set, model state) the candidates are the calls before
 * the first remaining return; reaching that return means nothing more can go next. Explored
 * configurations are memoized in a hash set keyed by a Zobrist hash of the set and the state.
 *
 * Pruning rules, each sound because the branch it skips is dominated by one still explored:
 * - a read-only op that is legal now is taken at once and alone (dropping it from any later
 *   order leaves every other step legal);
 * - an unknown-outcome op that would change nothing is not placed (it may never have happened);
 * - a blind write is not placed right after an unknown-outcome op (Model.overwrites);
 * - with Model.grows/canGrowInto, a configuration where a pending read can no longer be reached
 *   by growing steps alone is abandoned at once.
 * Candidates are tried earliest-deadline first. Only the last rule can hide part of the longest
 * linearizable prefix from the search; the checker restores it (checker.ts, longestPrefix).
 */
import { invariant } from '../../util/assert.js';
import type { HistoryOp, ModelState } from './history.js';
import type { Model } from './models.js';
import { valueKey } from './value.js';

export type SearchStatus = 'running' | 'linearizable' | 'violation';

/** The deepest point the search reached: the culprit op (local index) and one linearization before it. */
export interface Frontier {
  readonly culprit: number;
  readonly linearization: readonly number[];
  readonly state: ModelState;
  /** False when it may fall short of the longest linearizable prefix (see KeySearch.frontier). */
  readonly exact: boolean;
}

/** Zobrist codes, one random 32-bit word per operation slot, from a fixed seed (deterministic). */
let zobrist = new Int32Array(0);
function zobristCodes(n: number): Int32Array {
  if (zobrist.length < n) {
    const codes = new Int32Array(Math.max(n, zobrist.length * 2, 1024));
    let s = 0x2545f491;
    for (let i = 0; i < codes.length; i++) {
      s ^= s << 13; // xorshift32
      s ^= s >>> 17;
      s ^= s << 5;
      codes[i] = s;
    }
    zobrist = codes;
  }
  return zobrist;
}

/** murmur3's 32-bit finalizer. */
function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Lowe's memo: the (linearized set, state) configurations already explored. Open addressing
 * over entry numbers; an entry keeps its hash, its state id and a copy of its bitset, so equal
 * hashes are confirmed exactly (a hash collision never prunes a live branch).
 */
class ConfigCache {
  private slots: Int32Array;
  private mask: number;
  private hashes: Int32Array;
  private states: Int32Array;
  private bitsets: Uint32Array;
  size = 0;

  /** `capacity`: a power of two, the entries held before the first growth. */
  constructor(
    private readonly words: number,
    capacity: number,
  ) {
    this.slots = new Int32Array(capacity * 2);
    this.mask = capacity * 2 - 1;
    this.hashes = new Int32Array(capacity);
    this.states = new Int32Array(capacity);
    this.bitsets = new Uint32Array(capacity * words);
  }

  /** Adds the configuration; false when it was there already. */
  insert(hash: number, state: number, bits: Uint32Array): boolean {
    const words = this.words;
    const slots = this.slots;
    const mask = this.mask;
    let slot = fmix(hash) & mask;
    for (;;) {
      const entry = (slots[slot] as number) - 1;
      if (entry < 0) break;
      if (this.hashes[entry] === hash && this.states[entry] === state) {
        const bitsets = this.bitsets;
        const base = entry * words;
        let w = 0;
        while (w < words && bitsets[base + w] === bits[w]) w++;
        if (w === words) return false;
      }
      slot = (slot + 1) & mask;
    }
    const entry = this.size++;
    if (entry === this.hashes.length) this.growEntries();
    this.hashes[entry] = hash;
    this.states[entry] = state;
    this.bitsets.set(bits, entry * words);
    slots[slot] = entry + 1;
    if (this.size * 2 > slots.length) this.growSlots();
    return true;
  }

  private growEntries(): void {
    const cap = this.hashes.length * 2;
    const hashes = new Int32Array(cap);
    hashes.set(this.hashes);
    this.hashes = hashes;
    const states = new Int32Array(cap);
    states.set(this.states);
    this.states = states;
    const bitsets = new Uint32Array(cap * this.words);
    bitsets.set(this.bitsets);
    this.bitsets = bitsets;
  }

  private growSlots(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let entry = 0; entry < this.size; entry++) {
      let slot = fmix(this.hashes[entry] as number) & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = entry + 1;
    }
    this.slots = slots;
    this.mask = mask;
  }
}

const ILLEGAL = -1;
const EMPTY = -1;

/**
 * Interned model states and a memo of transitions: each (state, op) pair is handed to the model
 * once; afterwards a step is a hash-table probe returning the next state's id or ILLEGAL.
 */
class Transitions {
  /** Primitive states by themselves; compound ones (vectors, maps) by their canonical text. */
  private readonly ids = new Map<ModelState, number>();
  private readonly compoundIds = new Map<string, number>();
  readonly states: ModelState[] = [];
  private keyState: Int32Array;
  private keyOp: Int32Array;
  private to: Int32Array;
  /** Per transition, Model.canGrowInto once asked: 0 not yet, 1 no, 2 yes. */
  private growable: Uint8Array;
  private mask: number;
  private size = 0;
  /** Where the last step() found or put its transition. */
  private lastSlot = 0;

  /** `capacity`: a power of two, the transitions held before the first growth. */
  constructor(
    private readonly model: Model,
    private readonly ops: readonly HistoryOp[],
    capacity: number,
  ) {
    this.keyState = new Int32Array(capacity * 2).fill(EMPTY);
    this.keyOp = new Int32Array(capacity * 2);
    this.to = new Int32Array(capacity * 2);
    this.growable = new Uint8Array(capacity * 2);
    this.mask = capacity * 2 - 1;
  }

  intern(s: ModelState): number {
    if (typeof s === 'object' && s !== null) {
      const key = valueKey(s);
      let id = this.compoundIds.get(key);
      if (id === undefined) {
        id = this.states.length;
        this.compoundIds.set(key, id);
        this.states.push(s);
      }
      return id;
    }
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.states.length;
      this.ids.set(s, id);
      this.states.push(s);
    }
    return id;
  }

  step(state: number, op: number): number {
    const mask = this.mask;
    const keyState = this.keyState;
    let slot = fmix(Math.imul(state, 0x9e3779b1) ^ op) & mask;
    for (;;) {
      const s = keyState[slot] as number;
      if (s === EMPTY) break;
      if (s === state && this.keyOp[slot] === op) {
        this.lastSlot = slot;
        return this.to[slot] as number;
      }
      slot = (slot + 1) & mask;
    }
    const after = this.model.step(this.states[state] as ModelState, this.ops[op] as HistoryOp);
    const to = after === undefined ? ILLEGAL : this.intern(after);
    keyState[slot] = state;
    this.keyOp[slot] = op;
    this.to[slot] = to;
    this.lastSlot = slot;
    if (++this.size * 2 > keyState.length) {
      this.grow();
      this.step(state, op); // finds it again, for lastSlot
    }
    return to;
  }

  /**
   * Model.canGrowInto for the (state, op) pair of the last step() call, memoized beside that
   * transition (the search asks it of every pending read, in every configuration).
   */
  canGrowIntoLast(canGrowInto: (state: ModelState, op: HistoryOp) => boolean): boolean {
    const slot = this.lastSlot;
    const known = this.growable[slot] as number;
    if (known !== 0) return known === 2;
    const yes = canGrowInto(
      this.states[this.keyState[slot] as number] as ModelState,
      this.ops[this.keyOp[slot] as number] as HistoryOp,
    );
    this.growable[slot] = yes ? 2 : 1;
    return yes;
  }

  private grow(): void {
    const cap = this.keyState.length * 2;
    const mask = cap - 1;
    const keyState = new Int32Array(cap).fill(EMPTY);
    const keyOp = new Int32Array(cap);
    const to = new Int32Array(cap);
    const growable = new Uint8Array(cap);
    for (let old = 0; old < this.keyState.length; old++) {
      const s = this.keyState[old] as number;
      if (s === EMPTY) continue;
      const op = this.keyOp[old] as number;
      let slot = fmix(Math.imul(s, 0x9e3779b1) ^ op) & mask;
      while (keyState[slot] !== EMPTY) slot = (slot + 1) & mask;
      keyState[slot] = s;
      keyOp[slot] = op;
      to[slot] = this.to[old] as number;
      growable[slot] = this.growable[old] as number;
    }
    this.keyState = keyState;
    this.keyOp = keyOp;
    this.to = to;
    this.growable = growable;
    this.mask = mask;
  }
}

/**
 * The events of `ops` in time order (see KeySearch): calls sorted by (invokeTime, op), returns
 * by (completeTime, op), then merged with calls first on equal times. Histories usually list
 * their ops in invocation order, so each side is checked for order and sorted only when needed.
 */
function timeOrderedEvents(ops: readonly HistoryOp[], isOk: Uint8Array): Int32Array {
  const n = ops.length;
  const invoke = new Float64Array(n);
  const complete = new Float64Array(n);
  let returns = 0;
  for (let i = 0; i < n; i++) {
    const op = ops[i] as HistoryOp;
    invoke[i] = op.invokeTime;
    if (isOk[i] === 1) {
      complete[i] = op.completeTime as number;
      returns++;
    }
  }
  const calls = new Int32Array(n);
  let callsSorted = true;
  for (let i = 0; i < n; i++) {
    calls[i] = i;
    if (i > 0 && (invoke[i] as number) < (invoke[i - 1] as number)) callsSorted = false;
  }
  if (!callsSorted) calls.sort((a, b) => (invoke[a] as number) - (invoke[b] as number) || a - b);
  const rets = new Int32Array(returns);
  let r = 0;
  let retsSorted = true;
  for (let i = 0; i < n; i++) {
    if (isOk[i] === 0) continue;
    if (r > 0 && (complete[i] as number) < (complete[rets[r - 1] as number] as number)) retsSorted = false;
    rets[r++] = i;
  }
  if (!retsSorted) rets.sort((a, b) => (complete[a] as number) - (complete[b] as number) || a - b);
  const events = new Int32Array(n + returns);
  let c = 0;
  r = 0;
  for (let k = 0; k < events.length; k++) {
    const call = calls[c];
    const ret = rets[r];
    if (call !== undefined && (ret === undefined || (invoke[call] as number) <= (complete[ret] as number))) {
      events[k] = call;
      c++;
    } else {
      events[k] = n + (ret as number);
      r++;
    }
  }
  return events;
}

/** What the loop does next: enter a new configuration, try its next candidate, or undo a step. */
const ENTER = 0;
const SCAN = 1;
const BACKTRACK = 2;

/**
 * One key's search. `ops` are the operations that take part (fail ops and unknown-outcome
 * read-only ops already dropped); `ok` ops must be linearized, `info` ops may be or not.
 */
export class KeySearch {
  private readonly n: number;
  private readonly next: Int32Array;
  private readonly prev: Int32Array;
  /** op for a call node, ~op for a return node; 0 for the head and tail sentinels. */
  private readonly nodeOp: Int32Array;
  private readonly callNode: Int32Array;
  private readonly returnNode: Int32Array;
  /** Order in which candidates are tried: by completion (earliest deadline first), info ops last. */
  private readonly rank: Int32Array;
  private readonly isOk: Uint8Array;
  private readonly readOnly: Uint8Array;
  /** Blind writes (Model.overwrites). */
  private readonly overwrites: Uint8Array;
  private readonly bits: Uint32Array;
  private readonly codes: Int32Array;
  private readonly cache: ConfigCache;
  private readonly transitions: Transitions;
  private readonly stackOp: Int32Array;
  private readonly stackState: Int32Array;
  /** 1 when the step was a read-only op taken greedily: undoing it undoes its parent too. */
  private readonly stackForced: Uint8Array;
  /** Per depth: the configuration's candidates in `candidates`, [start, end), and the next to try. */
  private readonly candStart: Int32Array;
  private readonly candEnd: Int32Array;
  private readonly candNext: Int32Array;
  private candidates: Int32Array;
  /** The model's growth pruning (see Model.grows): resets are the state-changing ops that do not grow. */
  private readonly canGrowInto: ((state: ModelState, op: HistoryOp) => boolean) | undefined;
  private readonly ops: readonly HistoryOp[];
  /** Reset ops sorted by call; resetIndex[op] is op's place there, or -1. */
  private readonly resets: Int32Array;
  private readonly resetIndex: Int32Array;
  /** No reset before this index in `resets` is unlinearized (advanced lazily). */
  private firstReset = 0;

  private status: SearchStatus = 'running';
  private state: number;
  private zhash = 0;
  private depth = 0;
  private okLeft: number;
  private phase = ENTER;
  private bestFrontier = 0;
  /**
   * The farthest frontier's linearization, `bestOps[0, bestDepth)`; while `bestLive`, it is the
   * stack's first `bestDepth` ops instead, copied over only when backtracking is about to
   * overwrite them. `bestSynced`: how many leading entries of `bestOps` equal the stack's, so a
   * copy takes only what changed since the last one (advancing costs nothing).
   */
  private readonly bestOps: Int32Array;
  private bestDepth = 0;
  private bestLive = false;
  private bestSynced = 0;
  private bestState: number;
  backtracks = 0;

  constructor(ops: readonly HistoryOp[], model: Model) {
    const n = ops.length;
    this.n = n;
    this.isOk = new Uint8Array(n);
    this.readOnly = new Uint8Array(n);
    this.overwrites = new Uint8Array(n);
    let okCount = 0;
    for (let i = 0; i < n; i++) {
      const op = ops[i] as HistoryOp;
      if (op.status === 'ok') {
        this.isOk[i] = 1;
        okCount++;
      }
      if (model.readOnly(op)) this.readOnly[i] = 1;
      if (model.overwrites?.(op) === true) this.overwrites[i] = 1;
    }
    this.okLeft = okCount;

    // Events: e < n is the call of op e, e >= n the return of op e - n (ok ops only). By time;
    // on equal times calls first (taken as concurrent), then by op order, for determinism.
    const events = timeOrderedEvents(ops, this.isOk);

    // Nodes: 0 the head, 1..E the events in time order, E+1 the tail.
    const E = events.length;
    this.next = new Int32Array(E + 2);
    this.prev = new Int32Array(E + 2);
    this.nodeOp = new Int32Array(E + 2);
    this.callNode = new Int32Array(n);
    this.returnNode = new Int32Array(n).fill(-1);
    for (let k = 0; k < E; k++) {
      const e = events[k] as number;
      if (e < n) {
        this.nodeOp[k + 1] = e;
        this.callNode[e] = k + 1;
      } else {
        this.nodeOp[k + 1] = ~(e - n);
        this.returnNode[e - n] = k + 1;
      }
    }
    for (let node = 0; node <= E + 1; node++) {
      this.next[node] = node + 1;
      this.prev[node] = node - 1;
    }
    this.rank = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      this.rank[i] = this.isOk[i] === 1 ? (this.returnNode[i] as number) : E + 2 + (this.callNode[i] as number);
    }

    this.ops = ops;
    this.canGrowInto =
      model.grows !== undefined && model.canGrowInto !== undefined ? model.canGrowInto.bind(model) : undefined;
    const resets: number[] = [];
    if (model.grows !== undefined) {
      for (let i = 0; i < n; i++) if (this.readOnly[i] === 0 && !model.grows(ops[i] as HistoryOp)) resets.push(i);
    }
    resets.sort((a, b) => (this.callNode[a] as number) - (this.callNode[b] as number));
    this.resets = Int32Array.from(resets);
    this.resetIndex = new Int32Array(n).fill(-1);
    resets.forEach((op, k) => {
      this.resetIndex[op] = k;
    });

    this.bits = new Uint32Array((n + 31) >>> 5);
    this.codes = zobristCodes(n);
    // Small keys (the simulator checks many) start with small tables; big ones grow as needed.
    // A linearizable key memoizes about one configuration per op, so start near that.
    // A linearizable key memoizes about one configuration per op, so start near that (within
    // about 4 MB of bitsets; the tables grow past it as needed).
    const capacity = Math.max(
      8,
      Math.min(1 << Math.ceil(Math.log2(Math.max(8, n))), 2 ** Math.floor(Math.log2((1 << 20) / this.bits.length))),
    );
    this.cache = new ConfigCache(this.bits.length, capacity);
    this.transitions = new Transitions(model, ops, capacity);
    this.stackOp = new Int32Array(n);
    this.bestOps = new Int32Array(n);
    this.stackState = new Int32Array(n);
    this.stackForced = new Uint8Array(n);
    this.candStart = new Int32Array(n + 1);
    this.candEnd = new Int32Array(n + 1);
    this.candNext = new Int32Array(n + 1);
    this.candidates = new Int32Array(Math.max(16, n));
    this.state = this.transitions.intern(model.init());
    this.bestState = this.state;
    // An info op may never take effect: with no ok op there is nothing to order.
    if (okCount === 0) this.status = 'linearizable';
  }

  get configurations(): number {
    return this.cache.size;
  }

  /** Position of op's call in the time-ordered event list (1-based; comparable with returnNodeOf). */
  callNodeOf(op: number): number {
    return this.callNode[op] as number;
  }

  /** Position of op's return in the event list, or -1 for an op whose outcome is unknown. */
  returnNodeOf(op: number): number {
    return this.returnNode[op] as number;
  }

  /** The linearization found (local op indices) and its final state; once the status is 'linearizable'. */
  witness(): { linearization: number[]; state: ModelState } {
    invariant(this.status === 'linearizable', 'no linearization to show');
    return {
      linearization: Array.from(this.stackOp.subarray(0, this.depth)),
      state: this.transitions.states[this.state] as ModelState,
    };
  }

  /**
   * Where the search got farthest; once the status is 'violation'. Exact (the longest
   * linearizable prefix) unless the model's growth pruning cut configurations short: a pruned
   * configuration could still have been extended, so then it is a lower bound.
   */
  frontier(): Frontier {
    const culprit = ~(this.nodeOp[this.bestFrontier] as number);
    const exact = this.canGrowInto === undefined;
    invariant(this.status === 'violation' && culprit >= 0 && culprit < this.n, 'no violation to explain');
    return {
      culprit,
      linearization: Array.from(this.bestLinearization()),
      state: this.transitions.states[this.bestState] as ModelState,
      exact,
    };
  }

  /** The farthest frontier's linearization, copied out of the stack first if it is still there. */
  private bestLinearization(): Int32Array {
    if (this.bestLive) {
      this.bestOps.set(this.stackOp.subarray(this.bestSynced, this.bestDepth), this.bestSynced);
      this.bestSynced = this.bestDepth;
      this.bestLive = false;
    }
    return this.bestOps.subarray(0, this.bestDepth);
  }

  /** Runs up to `quota` loop steps (about one configuration each); returns the status reached. */
  run(quota: number): SearchStatus {
    if (this.status !== 'running') return this.status;
    const {
      next,
      prev,
      nodeOp,
      callNode,
      returnNode,
      rank,
      isOk,
      readOnly,
      overwrites,
      bits,
      codes,
      cache,
      transitions,
    } = this;
    const { stackOp, stackState, stackForced, candStart, candEnd, candNext } = this;
    const { canGrowInto, ops, resets, resetIndex } = this;
    let candidates = this.candidates;
    let { state, zhash, depth, okLeft, phase, firstReset } = this;
    const isLinearized = (op: number): boolean => ((bits[op >>> 5] as number) & (1 << (op & 31))) !== 0;
    let steps = 0;

    const lift = (op: number): void => {
      const c = callNode[op] as number;
      next[prev[c] as number] = next[c] as number;
      prev[next[c] as number] = prev[c] as number;
      const r = returnNode[op] as number;
      if (r >= 0) {
        next[prev[r] as number] = next[r] as number;
        prev[next[r] as number] = prev[r] as number;
      }
    };
    const unlift = (op: number): void => {
      const r = returnNode[op] as number;
      if (r >= 0) {
        next[prev[r] as number] = r;
        prev[next[r] as number] = r;
      }
      const c = callNode[op] as number;
      next[prev[c] as number] = c;
      prev[next[c] as number] = c;
    };
    /** Linearizes `op` next if (set + op, to) is new; false when it was explored already. */
    const push = (op: number, to: number, forced: number): boolean => {
      const w = op >>> 5;
      const b = 1 << (op & 31);
      bits[w] = (bits[w] as number) | b;
      const h = zhash ^ (codes[op] as number);
      if (!cache.insert(h ^ fmix(to + 1), to, bits)) {
        bits[w] = (bits[w] as number) & ~b;
        return false;
      }
      zhash = h;
      if (depth < this.bestSynced) this.bestSynced = depth;
      stackOp[depth] = op;
      stackState[depth] = state;
      stackForced[depth] = forced;
      depth++;
      state = to;
      lift(op);
      okLeft -= isOk[op] as number;
      return true;
    };

    for (;;) {
      if (++steps > quota) break;
      if (phase === ENTER) {
        if (okLeft === 0) {
          this.status = 'linearizable';
          break;
        }
        // The candidates: the calls before the first remaining return (the frontier).
        const start = depth === 0 ? 0 : (candEnd[depth - 1] as number);
        let end = start;
        let node = next[0] as number;
        let v = nodeOp[node] as number;
        while (v >= 0) {
          if (end === candidates.length) {
            const grown = new Int32Array(candidates.length * 2);
            grown.set(candidates);
            candidates = grown;
            this.candidates = grown;
          }
          candidates[end++] = v;
          node = next[node] as number;
          v = nodeOp[node] as number;
        }
        // Everything before the frontier is linearized by this configuration: remember the
        // farthest frontier, it bounds the longest linearizable prefix of the history.
        if (node > this.bestFrontier) {
          this.bestFrontier = node;
          this.bestDepth = depth;
          this.bestLive = true;
          this.bestState = state;
        }
        candStart[depth] = start;
        candEnd[depth] = start;
        candNext[depth] = start;
        // Greedy rule for read-only ops: one that is legal now can go next without loss, since
        // dropping it from any later linearization leaves every other step legal. So it is the
        // only move tried from here.
        let forced = -1;
        let dead = false;
        let resetCall = -1; // call node of the first unlinearized reset, computed when needed
        for (let k = start; k < end; k++) {
          const op = candidates[k] as number;
          if (readOnly[op] === 0) continue;
          if (transitions.step(state, op) === state) {
            forced = op;
            break;
          }
          // Growth pruning: until its completion this read can only be preceded by ops called
          // before that; if none of them is a reset, the state can only grow, and must grow into
          // what the read returned.
          if (canGrowInto !== undefined && isOk[op] === 1) {
            if (resetCall < 0) {
              while (firstReset < resets.length && isLinearized(resets[firstReset] as number)) firstReset++;
              resetCall = firstReset < resets.length ? (callNode[resets[firstReset] as number] as number) : 0x7fffffff;
            }
            if (resetCall > (returnNode[op] as number) && !transitions.canGrowIntoLast(canGrowInto)) {
              dead = true;
              break;
            }
          }
        }
        if (dead) {
          phase = BACKTRACK;
          continue;
        }
        if (forced >= 0) {
          if (push(forced, state, 1)) continue; // phase stays ENTER
          phase = BACKTRACK; // this configuration plus that read was explored already, and failed
          continue;
        }
        // Otherwise try the state-changing candidates, earliest deadline first: an op that must
        // complete soon is the likeliest to go next, a slow one is placed when a read needs it.
        // (Read-only candidates were just found illegal here.)
        let kept = start;
        for (let k = start; k < end; k++) {
          const op = candidates[k] as number;
          if (readOnly[op] === 1) continue;
          const r = rank[op] as number;
          let j = kept++;
          while (j > start && (rank[candidates[j - 1] as number] as number) > r) {
            candidates[j] = candidates[j - 1] as number;
            j--;
          }
          candidates[j] = op;
        }
        candEnd[depth] = kept;
        phase = SCAN;
        continue;
      }
      if (phase === SCAN) {
        const k = candNext[depth] as number;
        if (k === candEnd[depth]) {
          phase = BACKTRACK; // every candidate tried: nothing more can go next from here
          continue;
        }
        candNext[depth] = k + 1;
        const op = candidates[k] as number;
        // A blind write right after an unknown-outcome op would overwrite its effect unseen: the
        // same write without that op before it (tried from the parent) is at least as good.
        if (overwrites[op] === 1 && depth > 0 && isOk[stackOp[depth - 1] as number] === 0) continue;
        const to = transitions.step(state, op);
        // An unknown-outcome op that would change nothing here is not tried: leaving it out
        // (it may never have happened) keeps every later step legal, so it cannot help.
        if (to >= 0 && (to !== state || isOk[op] === 1) && push(op, to, 0)) phase = ENTER;
        continue;
      }
      // BACKTRACK: undo the last step and go on with its parent's remaining candidates.
      if (depth === 0) {
        this.status = 'violation';
        break;
      }
      this.backtracks++;
      // The step undone is part of the farthest linearization: keep a copy before it goes.
      if (this.bestLive && depth <= this.bestDepth) this.bestLinearization();
      depth--;
      const op = stackOp[depth] as number;
      state = stackState[depth] as number;
      bits[op >>> 5] = (bits[op >>> 5] as number) & ~(1 << (op & 31));
      zhash ^= codes[op] as number;
      unlift(op);
      okLeft += isOk[op] as number;
      const ri = resetIndex[op] as number;
      if (ri >= 0 && ri < firstReset) firstReset = ri;
      // A forced step was its parent's only move: keep undoing.
      if (stackForced[depth] === 0) phase = SCAN;
    }

    this.state = state;
    this.zhash = zhash;
    this.depth = depth;
    this.okLeft = okLeft;
    this.phase = phase;
    this.firstReset = firstReset;
    return this.status;
  }
}
