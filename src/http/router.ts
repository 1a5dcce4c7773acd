/**
 * Path router for the HTTP adapter: a segment trie with static children and one `:param` child per
 * level. Matching is allocation-light (one params object per match). It only answers "which route";
 * 404 versus 405 is decided by the caller from `methods`.
 */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'HEAD';

interface TrieNode<R> {
  statics: Map<string, TrieNode<R>>;
  param: { name: string; node: TrieNode<R> } | undefined;
  /** A trailing `*` segment: matches the rest of the path (params['*']). */
  wildcard: TrieNode<R> | undefined;
  routes: Map<Method, R>;
}

function newNode<R>(): TrieNode<R> {
  return { statics: new Map(), param: undefined, wildcard: undefined, routes: new Map() };
}

export interface Match<R> {
  route: R | undefined;
  params: Record<string, string>;
  /** The routes of the matched path by method; undefined when no route has this path (a miss is then 404, not 405). */
  methods: ReadonlyMap<Method, R> | undefined;
}

export class Router<R> {
  private readonly root: TrieNode<R> = newNode();

  add(method: Method, pattern: string, route: R): void {
    let node = this.root;
    for (const seg of split(pattern)) {
      if (seg === '*') {
        node.wildcard ??= newNode();
        node = node.wildcard;
        break;
      }
      if (seg.startsWith(':')) {
        const name = seg.slice(1);
        if (node.param && node.param.name !== name) {
          throw new Error(`route ${pattern}: parameter :${name} conflicts with :${node.param.name}`);
        }
        node.param ??= { name, node: newNode() };
        node = node.param.node;
      } else {
        let next = node.statics.get(seg);
        if (!next) {
          next = newNode();
          node.statics.set(seg, next);
        }
        node = next;
      }
    }
    if (node.routes.has(method)) throw new Error(`duplicate route ${method} ${pattern}`);
    node.routes.set(method, route);
  }

  match(method: Method, path: string): Match<R> {
    const params: Record<string, string> = {};
    const node = this.walk(this.root, split(path), 0, params);
    if (!node) return { route: undefined, params, methods: undefined };
    const route = node.routes.get(method) ?? (method === 'HEAD' ? node.routes.get('GET') : undefined);
    return { route, params, methods: node.routes.size > 0 ? node.routes : undefined };
  }

  private walk(node: TrieNode<R>, segs: string[], i: number, params: Record<string, string>): TrieNode<R> | undefined {
    if (i === segs.length)
      return node.routes.size > 0
        ? node
        : node.wildcard && node.wildcard.routes.size > 0
          ? ((params['*'] = ''), node.wildcard)
          : undefined;
    const seg = segs[i] as string;
    const st = node.statics.get(seg);
    if (st) {
      const found = this.walk(st, segs, i + 1, params);
      if (found) return found;
    }
    if (node.param) {
      let value = seg;
      if (seg.includes('%')) {
        try {
          value = decodeURIComponent(seg);
        } catch {
          // not valid percent-encoding: the segment as sent
        }
      }
      const found = this.walk(node.param.node, segs, i + 1, params);
      if (found) {
        params[node.param.name] = value;
        return found;
      }
    }
    if (node.wildcard && node.wildcard.routes.size > 0) {
      params['*'] = segs.slice(i).join('/');
      return node.wildcard;
    }
    return undefined;
  }
}

/** The non-empty segments of a path. */
function split(path: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (start <= path.length) {
    let end = path.indexOf('/', start);
    if (end < 0) end = path.length;
    if (end > start) out.push(path.slice(start, end));
    start = end + 1;
  }
  return out;
}
