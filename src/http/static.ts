/**
 * Serves one built web page (scripts/build-web.mjs's dist/web/<page>/) from a service's HttpApp:
 * `/` and `/index.html` revalidated on every load (`no-cache`), `/assets/<name>` (content-hashed
 * names) cached for a year as immutable, strong ETags with 304s, and gzip precompressed once when
 * the files are loaded. Only the files found at load time are served, looked up by exact name, so
 * no request path ever reaches the file system. It does not build anything: a missing page is a
 * 503 naming `make build`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { HttpApp } from './app.js';
import type { HttpRequest, HttpResult } from './types.js';

/** Files larger than this are not loaded (a built page's assets are tens of KB). */
export const staticFileBytesMax = 8 * 1024 * 1024;
/** At most this many asset files per page are loaded. */
export const staticAssetsMax = 256;
/** Hashed assets are cached this long by browsers (a year, the longest HTTP caches honour). */
export const staticImmutableMaxAgeS = 31_536_000;
/** gzip is kept only when it saves at least this fraction of the bytes. */
const gzipMinSavingRatio = 0.1;

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * Everything the page may load comes from its own origin (no CDN, font or script from elsewhere);
 * the WebSocket too ('self' covers ws: on the same host and port).
 */
const contentSecurityPolicy = [
  "default-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "style-src 'self' 'unsafe-inline'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Served {
  body: Buffer;
  gzip: Buffer | undefined;
  etag: string;
  etagGzip: string;
  contentType: string;
  cacheControl: string;
}

export interface LoadedPage {
  index: Served;
  assets: Map<string, Served>;
  /** Files left out (too large, too many), each with the reason. */
  skipped: string[];
}

export interface StaticPageOptions {
  /** The built page directory (holds index.html and assets/). */
  dir: string;
  /** Shown in errors: which page, and how to build it. */
  page: string;
  fileBytesMax?: number;
  assetsMax?: number;
}

function served(body: Buffer, name: string, cacheControl: string): Served {
  const ext = path.extname(name).toLowerCase();
  const contentType = contentTypes[ext] ?? 'application/octet-stream';
  const tag = createHash('sha256').update(body).digest('base64url').slice(0, 22);
  const compressible =
    contentType.startsWith('text/') || contentType === 'image/svg+xml' || contentType === 'application/json';
  let gzip: Buffer | undefined;
  if (compressible && body.length > 0) {
    const z = gzipSync(body, { level: 9 });
    if (z.length <= body.length * (1 - gzipMinSavingRatio)) gzip = z;
  }
  return { body, gzip, etag: `"${tag}"`, etagGzip: `"${tag}-gz"`, contentType, cacheControl };
}

/** Reads a built page into memory (precompressed); undefined when index.html is not there. */
export function loadPage(opts: StaticPageOptions): LoadedPage | undefined {
  const fileBytesMax = opts.fileBytesMax ?? staticFileBytesMax;
  const assetsMax = opts.assetsMax ?? staticAssetsMax;
  const indexFile = path.join(opts.dir, 'index.html');
  if (!existsSync(indexFile)) return undefined;
  const skipped: string[] = [];
  const index = served(readFileSync(indexFile), 'index.html', 'no-cache');
  const assets = new Map<string, Served>();
  const assetDir = path.join(opts.dir, 'assets');
  const names = existsSync(assetDir)
    ? readdirSync(assetDir, { withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => d.name)
        .sort()
    : [];
  for (const name of names) {
    if (assets.size >= assetsMax) {
      skipped.push(`${name}: more than ${assetsMax} assets (staticAssetsMax)`);
      continue;
    }
    const file = path.join(assetDir, name);
    const size = statSync(file).size;
    if (size > fileBytesMax) {
      skipped.push(`${name}: ${size} bytes, more than ${fileBytesMax} (staticFileBytesMax)`);
      continue;
    }
    assets.set(name, served(readFileSync(file), name, `public, max-age=${staticImmutableMaxAgeS}, immutable`));
  }
  return { index, assets, skipped };
}

/** Whether the client takes gzip: `gzip` (or `*`) listed in Accept-Encoding without q=0. */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  for (const part of header.split(',')) {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== '*') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/** Weak comparison of If-None-Match against a tag (RFC 9110 §13.1.2): `*`, or any listed tag. */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  for (const raw of header.split(',')) {
    const t = raw.trim();
    if (t === '*') return true;
    if ((t.startsWith('W/') ? t.slice(2) : t) === etag) return true;
  }
  return false;
}

/** The answer for one file: 304 when the client has it, else the bytes (gzip when accepted). */
export function answer(f: Served, req: HttpRequest<unknown>, extra: Record<string, string> = {}): HttpResult {
  const gz = f.gzip !== undefined && acceptsGzip(req.headers['accept-encoding']);
  const etag = gz ? f.etagGzip : f.etag;
  const headers: Record<string, string> = {
    'cache-control': f.cacheControl,
    etag,
    vary: 'accept-encoding',
    'x-content-type-options': 'nosniff',
    ...extra,
  };
  if (noneMatch(req.headers['if-none-match'], etag)) return { status: 304, headers };
  headers['content-type'] = f.contentType;
  if (gz) headers['content-encoding'] = 'gzip';
  return { status: 200, raw: gz ? (f.gzip as Buffer) : f.body, headers };
}

/**
 * Registers GET (and HEAD) `/`, `/index.html`, `/favicon.ico` and `/assets/:name` on the app.
 * The page is loaded now; while it is missing, every request looks again (so a `make build` run
 * after start-up is picked up) and `/` answers 503 saying to build it.
 */
export function serveBuiltPage(app: HttpApp, opts: StaticPageOptions): { loaded: () => LoadedPage | undefined } {
  let page = loadPage(opts);
  if (page) for (const s of page.skipped) app.logger.warn(`${opts.page} page: asset not served: ${s}`);
  const current = (): LoadedPage | undefined => {
    page ??= loadPage(opts);
    return page;
  };
  const missing = (): HttpResult => ({
    status: 503,
    body: {
      error: `the ${opts.page} page is not built (${path.join(opts.dir, 'index.html')} is missing): run \`make build\``,
    },
  });
  const index = (req: HttpRequest<unknown>): HttpResult => {
    const p = current();
    return p
      ? answer(p.index, req, { 'content-security-policy': contentSecurityPolicy, 'referrer-policy': 'no-referrer' })
      : missing();
  };
  const pageDocs = { security: [], tags: ['page'], responseType: 'text/html' };
  app.get('/', index, { ...pageDocs, summary: `The ${opts.page} web page` });
  app.get('/index.html', index, { ...pageDocs, summary: `The ${opts.page} web page` });
  app.get(
    '/assets/:name',
    (req) => {
      const p = current();
      if (!p) return missing();
      const name = req.params['name'] ?? '';
      const f = p.assets.get(name);
      if (!f)
        return {
          status: 404,
          body: {
            error:
              `no asset ${JSON.stringify(name.slice(0, 200))} in the ${opts.page} page ` +
              '(reload it: an older build?)',
          },
        };
      return answer(f, req);
    },
    { security: [], tags: ['page'], responseType: 'application/octet-stream', summary: "The page's hashed assets" },
  );
  // Browsers ask for /favicon.ico when a page names none (and a 404 is a console error): the page's icon.
  app.get(
    '/favicon.ico',
    (req) => {
      const p = current();
      const icon = p ? [...p.assets.entries()].find(([n]) => n.startsWith('favicon-'))?.[1] : undefined;
      if (!icon) return { status: 404, body: { error: 'no favicon (the page is not built: run `make build`)' } };
      return answer(icon, req);
    },
    { security: [], tags: ['page'], responseType: 'image/x-icon', summary: "The page's icon" },
  );
  return { loaded: () => page };
}

/** dist/web/<page> of this checkout, found from this module in src/http/ or dist/src/http/. */
export function builtPageDir(page: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    // The checkout's root: its package.json next to the web/ sources.
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'web')))
      return path.join(dir, 'dist', 'web', page);
    dir = path.dirname(dir);
  }
  return path.resolve('dist', 'web', page);
}
