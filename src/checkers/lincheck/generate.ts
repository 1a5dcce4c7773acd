/**
 * Deterministic generator of large kv histories in Jepsen's EDN op-map format, for benchmarks and
 * tests of the checker at scale: string registers driven by concurrent clients, each operation
 * taking effect at one instant between its invocation and its return, so a history is
 * linearizable by construction unless it is asked to carry one stale read. It is not a checker and
 * not a model: the only rules it knows are get/put/append on strings.
 */

/** A small deterministic PRNG (mulberry32), so a seed always gives the same history. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface KvHistorySpec {
  /** Client operations (each one invoke line and one ok line). */
  readonly ops: number;
  readonly clients: number;
  readonly keys: number;
  readonly seed: number;
  /**
   * `none`: linearizable. `stale-read`: one get in the last tenth returns a value its key held
   * before a write that completed before the get was invoked (not linearizable).
   * `never-written`: one late get returns a value nobody wrote (not linearizable).
   */
  readonly corrupt: 'none' | 'stale-read' | 'never-written';
}

interface Pending {
  readonly f: 'get' | 'put' | 'append';
  readonly key: string;
  readonly value: string;
  readonly invokedAt: number;
  applied: boolean;
  result: string;
  /** For a write: its index in its key's list of superseded values. */
  superseded: number;
}

/** The history as text, one EDN map per line (what `simlab-lincheck --model kv` and Porcupine's kv read). */
export function generateKvHistory(spec: KvHistorySpec): string {
  const rand = mulberry32(spec.seed);
  const store = new Map<string, string>();
  // Per key, the values it held, each with the line at which the write replacing it completed
  // (Infinity while that write is still outstanding).
  const past = new Map<string, Array<{ value: string; replacedDoneAt: number }>>();
  const lines: string[] = [];
  const pending: Array<Pending | undefined> = Array.from({ length: spec.clients }, () => undefined);
  let outstanding = 0;
  let started = 0;
  let counter = 0;
  let corrupted = spec.corrupt === 'none';
  const q = (s: string): string => `"${s}"`;
  while (started < spec.ops || outstanding > 0) {
    const c = Math.floor(rand() * spec.clients);
    const p = pending[c];
    if (p === undefined) {
      if (started >= spec.ops) continue;
      started++;
      outstanding++;
      const key = String(Math.floor(rand() * spec.keys));
      const r = rand();
      const f = r < 0.5 ? 'get' : r < 0.8 ? 'append' : 'put';
      const value = f === 'get' ? '' : `x${c}.${++counter} `;
      pending[c] = { f, key, value, invokedAt: lines.length, applied: false, result: '', superseded: -1 };
      lines.push(`{:process ${c}, :type :invoke, :f :${f}, :key ${q(key)}, :value ${f === 'get' ? 'nil' : q(value)}}`);
    } else if (!p.applied) {
      p.applied = true;
      const cur = store.get(p.key) ?? '';
      if (p.f === 'get') {
        p.result = cur;
      } else {
        let held = past.get(p.key);
        if (held === undefined) past.set(p.key, (held = []));
        p.superseded = held.length;
        held.push({ value: cur, replacedDoneAt: Infinity });
        store.set(p.key, p.f === 'put' ? p.value : cur + p.value);
      }
    } else {
      let value = p.f === 'get' ? p.result : p.value;
      if (!corrupted && p.f === 'get' && started > spec.ops * 0.9) {
        if (spec.corrupt === 'never-written') {
          value = 'never-written';
          corrupted = true;
        } else {
          // The latest value replaced by a write that had completed before this get began.
          const held = past.get(p.key) ?? [];
          for (let i = held.length - 1; i >= 0; i--) {
            const h = held[i] as { value: string; replacedDoneAt: number };
            if (h.replacedDoneAt < p.invokedAt) {
              value = h.value;
              corrupted = true;
              break;
            }
          }
        }
      }
      if (p.superseded >= 0) {
        const h = past.get(p.key)?.[p.superseded];
        if (h !== undefined) h.replacedDoneAt = lines.length;
      }
      lines.push(`{:process ${c}, :type :ok, :f :${p.f}, :key ${q(p.key)}, :value ${q(value)}}`);
      pending[c] = undefined;
      outstanding--;
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The large benchmark set of issue 20: `count` histories of `ops` operations over 10 keys and 10
 * clients, every third one (index 2, 5, ...) with one stale read. Names carry the expected verdict.
 */
export function largeKvSet(count = 20, ops = 20_000): Array<{ name: string; text: string; linearizable: boolean }> {
  const set: Array<{ name: string; text: string; linearizable: boolean }> = [];
  for (let i = 0; i < count; i++) {
    const stale = i % 3 === 2;
    const name = `gen${String(i).padStart(2, '0')}-${stale ? 'bad' : 'ok'}`;
    set.push({
      name,
      text: generateKvHistory({ ops, clients: 10, keys: 10, seed: 2000 + i, corrupt: stale ? 'stale-read' : 'none' }),
      linearizable: !stale,
    });
  }
  return set;
}
