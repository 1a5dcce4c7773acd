/**
 * Fetch helpers shared by simlab's pages: same-origin JSON calls whose outcome is a value, with the
 * service's `{"error"}` body surfaced as the message a user reads (or the network failure named).
 * It does not retry, cache or poll; callers decide what to do with a failure.
 */

/** What a call came to: the parsed body, or the error the service (or the network) gave. */
export type ApiResult<T> =
  | { ok: true; status: number; body: T; ms: number }
  | { ok: false; status: number; error: string; ms: number };

/** Longest a page waits for one API answer before it reports a timeout. */
export const apiTimeoutMs = 15_000;

/** The `error` of a service's error body, or a description of what came back instead. */
export function errorText(status: number, text: string): string {
  if (text !== '') {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object' && typeof (parsed as { error?: unknown }).error === 'string') {
        return (parsed as { error: string }).error;
      }
    } catch {
      // not JSON: fall through to the status
    }
  }
  return `HTTP ${status}${text !== '' ? `: ${text.slice(0, 200)}` : ''}`;
}

/** One same-origin call; `path` starts with `/`. Never throws. */
export async function apiCall<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
  const started = performance.now();
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), apiTimeoutMs);
  try {
    const init: RequestInit = { method, signal: ctl.signal, headers: {} };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const res = await fetch(path, init);
    const text = await res.text();
    const ms = performance.now() - started;
    if (!res.ok) return { ok: false, status: res.status, error: errorText(res.status, text), ms };
    let parsed: unknown = undefined;
    if (text !== '') {
      try {
        parsed = JSON.parse(text);
      } catch {
        return { ok: false, status: res.status, error: `the answer is not JSON: ${text.slice(0, 200)}`, ms };
      }
    }
    return { ok: true, status: res.status, body: parsed as T, ms };
  } catch (err) {
    const ms = performance.now() - started;
    const aborted = err instanceof DOMException && err.name === 'AbortError';
    return {
      ok: false,
      status: 0,
      error: aborted ? `no answer within ${apiTimeoutMs} ms` : `network error: ${String(err)}`,
      ms,
    };
  } finally {
    clearTimeout(timer);
  }
}

export const api = {
  get: <T>(path: string) => apiCall<T>('GET', path),
  post: <T>(path: string, body?: unknown) => apiCall<T>('POST', path, body),
  del: <T>(path: string) => apiCall<T>('DELETE', path),
  patch: <T>(path: string, body?: unknown) => apiCall<T>('PATCH', path, body),
};
