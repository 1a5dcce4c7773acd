/**
 * Evaluate-all plans (issue 20's profile: evaluating every flag of an environment spent most of its
 * time looking up, per flag, what is the same for every request: the compiled flag, its segments,
 * each clause's outcome for a context already tested by the flag before). A plan is made once per
 * set of flags and segments (per EnvState revision, see evaluation.ts) and lists the flags in
 * order; a flag it can evaluate alone becomes a FastFlag whose outcomes are indexes into its
 * compiled results, with targets, rules and rollout resolved and every distinct clause and
 * segment a slot evaluated at most once per context (a segment shared by every flag is tested
 * once). The rest (prerequisites, a malformed flag, a clause that warns: an unknown operator, a
 * deleted segment) is left to the general evaluator, so warnings and prerequisite memos are
 * untouched. Same answers as evaluate() by construction: the same compiled flags, the same
 * clause tests, the same order (off, targets, rules, rollout, default), pure tests memoised per
 * context (test/flags/eval-plan.test.ts holds the two to each other on random flags and contexts).
 */
import type { EvalContext, FlagDefinition } from '../model/types.js';
import {
  attributeClauseMatches,
  compileFlag,
  compileSegment,
  contextKey,
  rolloutIndex,
  type CompiledAttributeClause,
  type CompiledFlag,
  type EvalResult,
  type EvalStore,
  type ReasonKind,
} from './evaluate.js';

/** Reason kinds by index (FastFlag.kinds). */
export const reasonKinds: readonly ReasonKind[] = [
  'OFF',
  'PREREQUISITE_FAILED',
  'TARGET_MATCH',
  'RULE_MATCH',
  'FALLTHROUGH',
  'ERROR',
];
const reasonIndex = new Map<ReasonKind, number>(reasonKinds.map((k, i) => [k, i]));

interface FastRule {
  /** The slots of the rule's clauses, in order: all must hold. */
  readonly slots: readonly number[];
  readonly outcome: number;
}

/** A flag the plan evaluates itself; every outcome is an index into `results`. */
export interface FastFlag {
  readonly compiled: CompiledFlag;
  /** The flag's distinct shared results (compileFlag's), by outcome index. */
  readonly results: readonly EvalResult[];
  /** Reason kind (index into reasonKinds) of each outcome. */
  readonly kinds: Uint8Array;
  readonly enabled: boolean;
  readonly off: number;
  readonly fallthrough: number;
  readonly targets: ReadonlyMap<string, number> | undefined;
  readonly rules: readonly FastRule[];
  /** Outcome of each rollout entry; empty without a rollout. */
  readonly rolloutOutcomes: readonly number[];
}

export interface PlanEntry {
  readonly flag: FlagDefinition;
  /** undefined: evaluated by evaluate() (prerequisites, or a part that warns). */
  readonly fast: FastFlag | undefined;
}

/** A clause test shared by every clause with its signature. */
type Slot =
  | { readonly kind: 'attribute'; readonly clause: CompiledAttributeClause }
  | { readonly kind: 'segments'; readonly segments: readonly number[]; readonly negate: boolean };

interface PlanSegment {
  readonly included: ReadonlySet<string>;
  readonly excluded: ReadonlySet<string>;
  /** OR of rules, AND of the slots inside one. */
  readonly rules: readonly (readonly number[])[];
}

/** Thrown inside the builder when a flag must go to the general evaluator. */
const general = Symbol('general');

/** The slots and segments of a plan while it is built. */
class SlotTable {
  readonly slots: Slot[] = [];
  readonly segments: PlanSegment[] = [];
  private readonly bySignature = new Map<string, number>();
  /** Segment key → its index, or -1 when it cannot be planned (missing, or a clause that warns). */
  private readonly segmentByKey = new Map<string, number>();

  constructor(private readonly store: EvalStore) {}

  attribute(c: CompiledAttributeClause): number {
    const sig = `a${c.signature}`;
    let i = this.bySignature.get(sig);
    if (i === undefined) {
      i = this.slots.push({ kind: 'attribute', clause: c }) - 1;
      this.bySignature.set(sig, i);
    }
    return i;
  }

  /** A segmentMatch clause's slot; throws `general` when a listed segment cannot be planned. */
  segmentClause(keys: readonly string[], negate: boolean, signature: string): number {
    const sig = `s${signature}`;
    let i = this.bySignature.get(sig);
    if (i === undefined) {
      const segments = keys.map((k) => this.segment(k));
      i = this.slots.push({ kind: 'segments', segments, negate }) - 1;
      this.bySignature.set(sig, i);
    }
    return i;
  }

  private segment(key: string): number {
    let i = this.segmentByKey.get(key);
    if (i === undefined) {
      i = this.planSegment(key);
      this.segmentByKey.set(key, i);
    }
    if (i < 0) throw general;
    return i;
  }

  private planSegment(key: string): number {
    const def = this.store.segment(key);
    // A deleted segment warns when it is reached: left to the general evaluator.
    if (def === undefined) return -1;
    const seg = compileSegment(def);
    const rules: number[][] = [];
    for (const clauses of seg.rules) {
      const slots: number[] = [];
      for (const c of clauses) {
        if (c.kind !== 'attribute') return -1;
        slots.push(this.attribute(c));
      }
      rules.push(slots);
    }
    return this.segments.push({ included: seg.included, excluded: seg.excluded, rules }) - 1;
  }
}

/** The fast form of a flag, or undefined when it needs the general evaluator. */
function fastFlag(flag: FlagDefinition, table: SlotTable): FastFlag | undefined {
  const f = compileFlag(flag);
  if (f.malformed !== undefined) return undefined; // warns on every evaluation
  const results: EvalResult[] = [];
  const index = new Map<EvalResult, number>();
  const outcome = (r: EvalResult): number => {
    let i = index.get(r);
    if (i === undefined) {
      i = results.push(r) - 1;
      index.set(r, i);
    }
    return i;
  };
  const off = outcome(f.off);
  const fallthrough = outcome(f.fallthrough);
  // Off comes first: a disabled flag is OFF whatever its prerequisites and rules.
  if (f.enabled && f.prerequisites.length > 0) return undefined;
  let targets: Map<string, number> | undefined;
  const rules: FastRule[] = [];
  const rolloutOutcomes: number[] = [];
  if (f.enabled) {
    if (f.targets !== undefined) {
      targets = new Map();
      for (const [k, r] of f.targets) targets.set(k, outcome(r));
    }
    try {
      for (const rule of f.rules) {
        const slots: number[] = [];
        for (const c of rule.clauses) {
          if (c.kind === 'attribute') slots.push(table.attribute(c));
          else if (c.kind === 'segment') slots.push(table.segmentClause(c.segmentKeys, c.negate, c.signature));
          else return undefined; // a broken clause warns when it is reached
        }
        rules.push({ slots, outcome: outcome(rule.result) });
      }
    } catch (err) {
      if (err === general) return undefined;
      throw err;
    }
    for (const r of f.rolloutResults) rolloutOutcomes.push(outcome(r));
  }
  const kinds = new Uint8Array(results.length);
  results.forEach((r, i) => (kinds[i] = reasonIndex.get(r.reason.kind) as number));
  return { compiled: f, results, kinds, enabled: f.enabled, off, fallthrough, targets, rules, rolloutOutcomes };
}

/** A slot's or segment's memoised value (valid only in the generation stored beside it). */
const HOLDS = 1;
const FAILS = 2;

export class EvalPlan {
  readonly entries: readonly PlanEntry[];
  /** Every context key some planned flag targets: most contexts are in none, and skip every lookup. */
  readonly targetKeys: ReadonlySet<string>;
  private readonly slots: readonly Slot[];
  private readonly segments: readonly PlanSegment[];
  /** Per slot and segment: the generation its value was computed in, and the value. */
  private readonly slotGen: Uint32Array;
  private readonly slotValue: Uint8Array;
  private readonly segmentGen: Uint32Array;
  private readonly segmentValue: Uint8Array;
  private generation = 0;

  /** `flags` in the order answers are written; `store` resolves segments (the plan holds them). */
  constructor(flags: Iterable<FlagDefinition>, store: EvalStore) {
    const table = new SlotTable(store);
    const entries: PlanEntry[] = [];
    const targetKeys = new Set<string>();
    for (const flag of flags) {
      const fast = fastFlag(flag, table);
      entries.push({ flag, fast });
      if (fast?.targets !== undefined) for (const k of fast.targets.keys()) targetKeys.add(k);
    }
    this.entries = entries;
    this.targetKeys = targetKeys;
    this.slots = table.slots;
    this.segments = table.segments;
    this.slotGen = new Uint32Array(this.slots.length);
    this.slotValue = new Uint8Array(this.slots.length);
    this.segmentGen = new Uint32Array(this.segments.length);
    this.segmentValue = new Uint8Array(this.segments.length);
  }

  /** Starts evaluating one context: its memo of slots and segments, valid until the next begin(). */
  begin(context: EvalContext): PlanRun {
    if (++this.generation === 0xffffffff) {
      this.slotGen.fill(0);
      this.segmentGen.fill(0);
      this.generation = 1;
    }
    return new PlanRun(this, context, this.generation);
  }

  /** @internal Whether slot `s` holds for the run (memoised per generation). */
  holds(s: number, run: PlanRun): boolean {
    if (this.slotGen[s] === run.generation) return this.slotValue[s] === HOLDS;
    const slot = this.slots[s] as Slot;
    let v: boolean;
    if (slot.kind === 'attribute') v = attributeClauseMatches(slot.clause, run.context);
    else {
      let member = false;
      for (const g of slot.segments) {
        if (this.inSegment(g, run)) {
          member = true;
          break;
        }
      }
      v = member !== slot.negate;
    }
    this.slotGen[s] = run.generation;
    this.slotValue[s] = v ? HOLDS : FAILS;
    return v;
  }

  /** Segment membership (excluded > included > rules), memoised per generation. */
  private inSegment(g: number, run: PlanRun): boolean {
    if (this.segmentGen[g] === run.generation) return this.segmentValue[g] === HOLDS;
    const seg = this.segments[g] as PlanSegment;
    let v = false;
    const key = run.key;
    if (key !== undefined && seg.excluded.has(key)) v = false;
    else if (key !== undefined && seg.included.has(key)) v = true;
    else {
      for (const rule of seg.rules) {
        if (this.all(rule, run)) {
          v = true;
          break;
        }
      }
    }
    this.segmentGen[g] = run.generation;
    this.segmentValue[g] = v ? HOLDS : FAILS;
    return v;
  }

  /** @internal Every slot holds (in order, stopping at the first that fails). */
  all(slots: readonly number[], run: PlanRun): boolean {
    for (let i = 0; i < slots.length; i++) if (!this.holds(slots[i] as number, run)) return false;
    return true;
  }
}

/** One context's evaluation through a plan (see EvalPlan.begin). */
export class PlanRun {
  /** The context key as targets and segments see it (evaluate.ts contextKey). */
  readonly key: string | undefined;
  /** The key is a target of some planned flag (else no flag's targets need a look). */
  private readonly targeted: boolean;

  constructor(
    private readonly plan: EvalPlan,
    readonly context: EvalContext,
    readonly generation: number,
  ) {
    this.key = contextKey(context);
    this.targeted = this.key !== undefined && plan.targetKeys.has(this.key);
  }

  /** The outcome (index into f.results) of a fast flag: off, targets, rules, rollout, default. */
  outcome(f: FastFlag): number {
    if (!f.enabled) return f.off;
    if (this.targeted && f.targets !== undefined) {
      const hit = f.targets.get(this.key as string);
      if (hit !== undefined) return hit;
    }
    const rules = f.rules;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i] as FastRule;
      if (this.plan.all(rule.slots, this)) return rule.outcome;
    }
    const rollout = f.rolloutOutcomes;
    if (rollout.length > 0) return rollout[rolloutIndex(f.compiled, this.context)] as number;
    return f.fallthrough;
  }

  /** The shared result of a fast flag for this context. */
  result(f: FastFlag): EvalResult {
    return f.results[this.outcome(f)] as EvalResult;
  }
}
