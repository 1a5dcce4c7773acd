/**
 * A small typed client of the simulator's own public HTTP API, over loopback, for the scenario
 * scripts and the consistency demos: every step they take goes through the same routes, nodes and
 * fabric a user's requests go through. It is not a general SDK: it knows the handful of endpoints
 * the scripts use, and it turns "the cluster was deleted under us" into one exception
 * (ClusterGone) so a script can stop quietly.
 */
import type { ClusterState, KVEntry } from '../../../protocol/replication.js';
import { apiClientRequestTimeoutMs } from '../limits.js';

/** Thrown when the cluster a script drives no longer exists (deleted mid-run). */
export class ClusterGone extends Error {
  constructor(readonly clusterId: string) {
    super(`cluster ${clusterId} was deleted`);
  }
}

export type ApiResult<T> =
  | { ok: true; status: number; body: T; ms: number }
  | { ok: false; status: number; error: string; ms: number };

export interface WriteResult {
  entry: KVEntry;
  node_id: string;
}

/** Decodes a KVEntry's base64 value (the spec's wire form) back to text. */
export function entryValue(e: KVEntry): string {
  return Buffer.from(e.value, 'base64').toString('utf8');
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * One cluster's endpoints. `alive` says whether the cluster still exists (a read-only look at the
 * server's cluster map); it is checked before and after every call, so a 404 caused by the
 * cluster's deletion surfaces as ClusterGone rather than as a domain answer (a 404 read is also
 * "key not found", which scripts need to tell apart).
 */
export class ClusterApi {
  constructor(
    readonly id: string,
    private readonly base: () => string,
    private readonly alive: (id: string) => boolean,
  ) {}

  private gone(): boolean {
    return !this.alive(this.id);
  }

  /** Any request under /api/v1 (paths relative to it). Non-2xx answers are values, never thrown. */
  async call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<ApiResult<T>> {
    if (this.gone()) throw new ClusterGone(this.id);
    const started = performance.now();
    const init: RequestInit = { method, signal: AbortSignal.timeout(apiClientRequestTimeoutMs) };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${this.base()}/api/v1${path}`, init);
      text = await res.text();
    } catch (err) {
      if (this.gone()) throw new ClusterGone(this.id);
      return {
        ok: false,
        status: 0,
        error: `request failed: ${(err as Error).message}`,
        ms: performance.now() - started,
      };
    }
    const ms = performance.now() - started;
    if (this.gone()) throw new ClusterGone(this.id);
    let parsed: unknown = undefined;
    if (text.length > 0) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status, body: parsed as T, ms };
    const error =
      typeof parsed === 'object' && parsed !== null && typeof (parsed as { error?: unknown }).error === 'string'
        ? (parsed as { error: string }).error
        : text;
    return { ok: false, status: res.status, error, ms };
  }

  private c(path: string): string {
    return `/clusters/${this.id}${path}`;
  }

  state(): Promise<ApiResult<ClusterState>> {
    return this.call<ClusterState>('GET', this.c('/state'));
  }

  /** The state, or ClusterGone. */
  async mustState(): Promise<ClusterState> {
    const r = await this.state();
    if (!r.ok) throw new ClusterGone(this.id);
    return r.body;
  }

  write(node: string | undefined, key: string, value: string, clientId?: string): Promise<ApiResult<WriteResult>> {
    const body: Record<string, string> = { key, value };
    if (node !== undefined) body['target_node_id'] = node;
    if (clientId !== undefined) body['client_id'] = clientId;
    return this.call<WriteResult>('POST', this.c('/write'), body);
  }

  read(node: string | undefined, key: string, clientId?: string): Promise<ApiResult<WriteResult>> {
    const q = new URLSearchParams({ key });
    if (node !== undefined) q.set('node_id', node);
    if (clientId !== undefined) q.set('client_id', clientId);
    return this.call<WriteResult>('GET', this.c(`/read?${q.toString()}`));
  }

  /** Non-atomic batch: each entry written on its own, each with its own result or error. */
  writeBatch(
    entries: Array<{ key: string; value: string; target_node_id?: string }>,
  ): Promise<ApiResult<{ results: Array<WriteResult | { key: string; error: string }> }>> {
    return this.call('POST', this.c('/write-batch'), { entries });
  }

  store(node: string): Promise<ApiResult<Record<string, KVEntry>>> {
    return this.call('GET', this.c(`/nodes/${encodeURIComponent(node)}/store`));
  }

  pause(node: string): Promise<ApiResult<unknown>> {
    return this.call('POST', this.c(`/nodes/${encodeURIComponent(node)}/pause`));
  }

  resume(node: string): Promise<ApiResult<unknown>> {
    return this.call('POST', this.c(`/nodes/${encodeURIComponent(node)}/resume`));
  }

  removeNode(node: string): Promise<ApiResult<unknown>> {
    return this.call('DELETE', this.c(`/nodes/${encodeURIComponent(node)}`));
  }

  clockSkew(node: string, ms: number): Promise<ApiResult<unknown>> {
    return this.call('POST', this.c(`/nodes/${encodeURIComponent(node)}/clock-skew`), { ms });
  }

  corrupt(node: string, key: string, value: string): Promise<ApiResult<{ entry?: KVEntry }>> {
    return this.call('POST', this.c(`/nodes/${encodeURIComponent(node)}/corrupt`), { key, value });
  }

  partition(groupA: string[], groupB: string[]): Promise<ApiResult<{ partition_id: string }>> {
    return this.call('POST', this.c('/network/partition'), { group_a: groupA, group_b: groupB });
  }

  heal(partitionId: string): Promise<ApiResult<unknown>> {
    return this.call('DELETE', this.c(`/network/partition/${encodeURIComponent(partitionId)}`));
  }

  latency(from: string, to: string, ms: number): Promise<ApiResult<unknown>> {
    return this.call('POST', this.c('/network/latency'), { from, to, ms });
  }

  drop(from: string, to: string, rate: number): Promise<ApiResult<unknown>> {
    return this.call('POST', this.c('/network/drop'), { from, to, rate });
  }

  clearFaults(): Promise<ApiResult<unknown>> {
    return this.call('DELETE', this.c('/network/faults'));
  }

  replicationMode(mode: 'async' | 'sync' | 'semi_sync'): Promise<ApiResult<ClusterState>> {
    return this.call<ClusterState>('PATCH', this.c('/config'), { replication_mode: mode });
  }

  placement(key: string, n: number): Promise<ApiResult<{ key: string; preference_list: string[] }>> {
    return this.call('GET', this.c(`/placement?${new URLSearchParams({ key, n: String(n) }).toString()}`));
  }

  convergence(): Promise<
    ApiResult<{
      converged: boolean;
      keys: number;
      diverged: Array<{ key: string; values: Record<string, unknown> }>;
      note?: string;
    }>
  > {
    return this.call('GET', this.c('/convergence'));
  }

  antiEntropy(waitMs?: number): Promise<
    ApiResult<{
      divergent_keys: number;
      reconciled: number;
      converged_after: boolean;
      rounds?: number;
      method?: string;
    }>
  > {
    return this.call('POST', this.c(`/anti-entropy${waitMs === undefined ? '' : `?wait_ms=${waitMs}`}`));
  }

  /** Polls `fn` every `everyMs` until it returns a value or `ms` runs out (then undefined). */
  async until<T>(fn: () => Promise<T | undefined>, ms: number, everyMs = 20): Promise<T | undefined> {
    const deadline = performance.now() + ms;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (performance.now() >= deadline) return undefined;
      await sleep(everyMs);
      if (this.gone()) throw new ClusterGone(this.id);
    }
  }
}

/** The whole API (cluster creation and deletion, /metrics) plus per-cluster clients. */
export class LoopbackApi {
  constructor(
    readonly base: () => string,
    readonly alive: (id: string) => boolean,
  ) {}

  cluster(id: string): ClusterApi {
    return new ClusterApi(id, this.base, this.alive);
  }

  async createCluster(body: Record<string, unknown>): Promise<ApiResult<ClusterState>> {
    const started = performance.now();
    try {
      const res = await fetch(`${this.base()}/api/v1/clusters`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(apiClientRequestTimeoutMs),
      });
      const parsed = (await res.json()) as unknown;
      const ms = performance.now() - started;
      if (res.status === 201) return { ok: true, status: 201, body: parsed as ClusterState, ms };
      return {
        ok: false,
        status: res.status,
        error: String((parsed as { error?: unknown }).error ?? res.statusText),
        ms,
      };
    } catch (err) {
      return {
        ok: false,
        status: 0,
        error: `request failed: ${(err as Error).message}`,
        ms: performance.now() - started,
      };
    }
  }

  async deleteCluster(id: string): Promise<void> {
    await fetch(`${this.base()}/api/v1/clusters/${id}`, {
      method: 'DELETE',
      signal: AbortSignal.timeout(apiClientRequestTimeoutMs),
    })
      .then((r) => r.text())
      .catch(() => undefined);
  }

  /** The Prometheus exposition (GET /metrics), or '' when unreachable. */
  async metricsText(): Promise<string> {
    try {
      const res = await fetch(`${this.base()}/metrics`, { signal: AbortSignal.timeout(apiClientRequestTimeoutMs) });
      return await res.text();
    } catch {
      return '';
    }
  }
}

/** The value of one sample of a counter/gauge in a Prometheus exposition (0 when absent). */
export function metricSample(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.indexOf('}');
    const labelText = line.slice(name.length + 1, close);
    const ok = Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`));
    if (ok) total += Number(line.slice(close + 1).trim()) || 0;
  }
  return total;
}
