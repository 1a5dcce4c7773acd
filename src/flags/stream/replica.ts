/**
 * An in-memory replica of each environment that someone evaluates or streams: its flags and its
 * project's segments, loaded lazily from a store snapshot and then kept current by applying the
 * change feed in seq order. Evaluation and SSE `put` events read it, so neither touches the
 * database per request. It does not read the feed itself (the server wires ChangeFeed → apply).
 */
import type { Flag, Segment } from '../model/types.js';
import type { EvalStore } from '../eval/evaluate.js';
import type { Change, EnvironmentSnapshot } from '../store/types.js';

export class EnvState implements EvalStore {
  readonly flags = new Map<string, Flag>();
  readonly segments = new Map<string, Segment>();
  /** Every change of this environment with seq <= pos is reflected here. */
  pos: number;
  /**
   * Bumped on every change applied to this environment (cache key for serialised puts and for
   * evaluation plans): flags and segments change only through apply().
   */
  revision = 0;

  constructor(
    readonly projectKey: string,
    readonly envKey: string,
    snap: EnvironmentSnapshot,
  ) {
    for (const f of snap.flags) this.flags.set(f.key, f);
    for (const s of snap.segments) this.segments.set(s.key, s);
    this.pos = snap.seq;
  }

  flag(key: string): Flag | undefined {
    return this.flags.get(key);
  }

  segment(key: string): Segment | undefined {
    return this.segments.get(key);
  }

  /** Applies one change of this environment (or of its project's segments); older ones are ignored. */
  apply(c: Change): void {
    if (c.seq <= this.pos) return;
    this.pos = c.seq;
    this.revision++;
    const map: Map<string, Flag | Segment> = c.resource === 'flag' ? this.flags : this.segments;
    if (c.op === 'delete' || c.data === null) map.delete(c.key);
    else map.set(c.key, c.data);
  }
}

function envId(projectKey: string, envKey: string): string {
  return `${projectKey}\u0000${envKey}`;
}

interface Loading {
  projectKey: string;
  promise: Promise<EnvState>;
  /** Changes of the project that arrived while the snapshot was being read. */
  pending: Change[];
}

export class Replica {
  private readonly envs = new Map<string, EnvState>();
  /** The same states by project key, then environment key (loaded ones are never replaced). */
  private readonly byProjectKey = new Map<string, Map<string, EnvState>>();
  private readonly byProject = new Map<string, Set<EnvState>>();
  private readonly loading = new Map<string, Loading>();
  /** The seq of the last change handed to apply(). */
  feedPos: number;

  constructor(
    private readonly loadSnapshot: (projectKey: string, envKey: string) => Promise<EnvironmentSnapshot>,
    from: number,
  ) {
    this.feedPos = from;
  }

  /** The environment's state, loading it on first use (concurrent callers share one load). */
  environment(projectKey: string, envKey: string): Promise<EnvState> | EnvState {
    // A loaded environment without building its id (the hot path of every evaluation).
    const loaded = this.byProjectKey.get(projectKey)?.get(envKey);
    if (loaded !== undefined) return loaded;
    const id = envId(projectKey, envKey);
    const have = this.envs.get(id);
    if (have) return have;
    const inFlight = this.loading.get(id);
    if (inFlight) return inFlight.promise;
    const entry: Loading = { projectKey, pending: [], promise: undefined as unknown as Promise<EnvState> };
    entry.promise = this.loadSnapshot(projectKey, envKey).then(
      (snap) => {
        this.loading.delete(id);
        const state = new EnvState(projectKey, envKey, snap);
        // Changes committed after the snapshot arrived through the feed meanwhile: apply them now.
        for (const c of entry.pending) if (c.environmentKey === null || c.environmentKey === envKey) state.apply(c);
        state.pos = Math.max(state.pos, this.feedPos);
        this.envs.set(id, state);
        let inProject = this.byProjectKey.get(projectKey);
        if (inProject === undefined) {
          inProject = new Map();
          this.byProjectKey.set(projectKey, inProject);
        }
        inProject.set(envKey, state);
        let set = this.byProject.get(projectKey);
        if (!set) {
          set = new Set();
          this.byProject.set(projectKey, set);
        }
        set.add(state);
        return state;
      },
      (err: unknown) => {
        this.loading.delete(id);
        throw err;
      },
    );
    this.loading.set(id, entry);
    return entry.promise;
  }

  isLoaded(projectKey: string, envKey: string): boolean {
    return this.envs.has(envId(projectKey, envKey));
  }

  /** Loaded environments a change touches: one for a flag, every one of the project for a segment. */
  affected(c: Change): EnvState[] {
    const set = this.byProject.get(c.projectKey);
    if (!set) return [];
    if (c.environmentKey === null) return [...set];
    const one = this.envs.get(envId(c.projectKey, c.environmentKey));
    return one ? [one] : [];
  }

  /** Applies one feed change (in seq order) to every loaded or loading environment it touches. */
  apply(c: Change): EnvState[] {
    this.feedPos = Math.max(this.feedPos, c.seq);
    for (const l of this.loading.values()) if (l.projectKey === c.projectKey) l.pending.push(c);
    const hit = this.affected(c);
    for (const env of hit) env.apply(c);
    return hit;
  }

  /**
   * The feed position an environment's state reflects: its own snapshot may be ahead of the feed,
   * and the feed may have passed changes of other environments since the last one of this.
   */
  positionOf(env: EnvState): number {
    return Math.max(env.pos, this.feedPos);
  }

  get loadedEnvironments(): number {
    return this.envs.size;
  }
}
