// Static page serving (src/http/static.ts) through a real HttpApp on a free port: caching headers,
// ETag and 304, gzip when accepted, the favicon, unknown assets, a page not built yet, the load
// limits at and past their bounds, and no way out of the page directory.
import t from 'tap';
import net from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { HttpApp } from '../../src/http/index.js';
import { acceptsGzip, loadPage, noneMatch, serveBuiltPage, staticImmutableMaxAgeS } from '../../src/http/static.js';
import { silentLogger } from '../../src/util/logger.js';
import { request } from '../helpers/http.js';

const js = `console.log(${JSON.stringify('x'.repeat(4000))});\n`;

function makePage(dir: string): void {
  mkdirSync(path.join(dir, 'assets'), { recursive: true });
  writeFileSync(
    path.join(dir, 'index.html'),
    `<!doctype html><title>Test</title><script type="module" src="assets/main-ABC.js"></script>${' '.repeat(2000)}`,
  );
  writeFileSync(path.join(dir, 'assets', 'main-ABC.js'), js);
  writeFileSync(path.join(dir, 'assets', 'favicon-XYZ.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
}

/** A raw request line, for paths a URL parser would normalise. */
function rawGet(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    });
    let out = '';
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

t.test('a built page is served with caching headers, ETags and gzip', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'simlab-static-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'page');
  makePage(dir);
  // A file outside the page directory that traversal attempts aim at.
  writeFileSync(path.join(root, 'secret.txt'), 'do not serve');
  const app = new HttpApp({ name: 'test', logger: silentLogger() });
  serveBuiltPage(app, { dir, page: 'test' });
  const port = await app.listen(0, '127.0.0.1');
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${port}`;

  const index = await request(base, 'GET', '/');
  t.equal(index.status, 200);
  t.match(index.headers['content-type'], /^text\/html/);
  t.equal(index.headers['cache-control'], 'no-cache');
  t.match(index.headers['content-security-policy'], /default-src 'self'/);
  t.match(index.text, /<title>Test<\/title>/);
  t.ok(index.headers.etag, 'index has an ETag');
  const again = await request(base, 'GET', '/index.html', undefined, { 'if-none-match': index.headers.etag as string });
  t.equal(again.status, 304, 'revalidation of an unchanged index is a 304');
  t.equal(again.text, '');

  const asset = await request(base, 'GET', '/assets/main-ABC.js');
  t.equal(asset.status, 200);
  t.equal(asset.text, js);
  t.match(asset.headers['content-type'], /^text\/javascript/);
  t.equal(asset.headers['cache-control'], `public, max-age=${staticImmutableMaxAgeS}, immutable`);
  t.equal(asset.headers['content-encoding'], undefined, 'no gzip unless asked');

  const gz = await new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write(
          'GET /assets/main-ABC.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip, deflate\r\nConnection: close\r\n\r\n',
        );
      });
      const chunks: Buffer[] = [];
      s.on('data', (d: Buffer) => chunks.push(d));
      s.on('end', () => {
        const all = Buffer.concat(chunks);
        const split = all.indexOf('\r\n\r\n');
        const head = all.subarray(0, split).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
        }
        resolve({ status: Number(head[0]?.split(' ')[1]), headers, body: all.subarray(split + 4) });
      });
      s.on('error', reject);
    },
  );
  t.equal(gz.status, 200);
  t.equal(gz.headers['content-encoding'], 'gzip');
  t.equal(gz.headers['vary'], 'accept-encoding');
  t.ok(gz.body.length < js.length / 4, `gzipped ${gz.body.length} bytes of ${js.length}`);
  t.equal(gunzipSync(gz.body).toString(), js, 'the gzip body is the file');
  t.not(gz.headers['etag'], asset.headers.etag, 'the gzip representation has its own ETag');
  const gz304 = await request(base, 'GET', '/assets/main-ABC.js', undefined, {
    'accept-encoding': 'gzip',
    'if-none-match': gz.headers['etag'] as string,
  });
  t.equal(gz304.status, 304);
  const refused = await request(base, 'GET', '/assets/main-ABC.js', undefined, { 'accept-encoding': 'gzip;q=0, br' });
  t.equal(refused.headers['content-encoding'], undefined, 'gzip;q=0 is a refusal');

  const head = await request(base, 'HEAD', '/assets/main-ABC.js');
  t.equal(head.status, 200);
  t.equal(head.text, '', 'HEAD has no body');

  const icon = await request(base, 'GET', '/favicon.ico');
  t.equal(icon.status, 200);
  t.equal(icon.headers['content-type'], 'image/svg+xml');

  const unknown = await request(base, 'GET', '/assets/main-OLD.js');
  t.equal(unknown.status, 404);
  t.match(unknown.body, { error: /no asset "main-OLD.js"/ });

  for (const target of [
    '/assets/../index.html',
    '/assets/..%2f..%2fsecret.txt',
    '/assets/%2e%2e%2fsecret.txt',
    '/assets/..%5c..%5csecret.txt',
    '/assets/../../secret.txt',
    '/../secret.txt',
    '/assets/sub/../../../secret.txt',
    '/secret.txt',
  ]) {
    const r = await rawGet(port, target);
    t.notMatch(r, /do not serve/, `${target} does not reach outside the page`);
    t.match(r, /^HTTP\/1\.1 404 /, `${target} is a 404`);
  }
});

t.test('a page that is not built yet answers 503 naming make build, and is picked up once built', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'simlab-static-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'page');
  const app = new HttpApp({ name: 'test', logger: silentLogger() });
  serveBuiltPage(app, { dir, page: 'test' });
  const port = await app.listen(0, '127.0.0.1');
  t.teardown(() => app.close());
  const base = `http://127.0.0.1:${port}`;
  const r = await request(base, 'GET', '/');
  t.equal(r.status, 503);
  t.match(r.body, { error: /make build/ });
  t.equal((await request(base, 'GET', '/assets/main-ABC.js')).status, 503);
  makePage(dir);
  t.equal((await request(base, 'GET', '/')).status, 200, 'served once the build wrote it');
});

t.test('load limits: files and asset counts at the bound are served, past it left out', async (t) => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'simlab-static-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'page');
  makePage(dir);
  writeFileSync(path.join(dir, 'assets', 'at-bound.js'), 'a'.repeat(100));
  writeFileSync(path.join(dir, 'assets', 'past-bound.js'), 'a'.repeat(101));
  const bySize = loadPage({ dir, page: 'test', fileBytesMax: 100 });
  t.ok(bySize?.assets.has('at-bound.js'), 'a file of exactly fileBytesMax is served');
  t.notOk(bySize?.assets.has('past-bound.js'), 'one byte more is not');
  t.ok(
    bySize?.skipped.some((m) => /^past-bound\.js: 101 bytes, more than 100 \(staticFileBytesMax\)$/.test(m)),
    'and says why',
  );
  const byCount = loadPage({ dir, page: 'test', assetsMax: 4 });
  t.equal(byCount?.assets.size, 4, 'exactly assetsMax assets are loaded');
  t.equal(byCount?.skipped.length, 0);
  const fewer = loadPage({ dir, page: 'test', assetsMax: 3 });
  t.equal(fewer?.assets.size, 3);
  t.match(fewer?.skipped, [/more than 3 assets \(staticAssetsMax\)/]);
});

t.test('Accept-Encoding and If-None-Match parsing', async (t) => {
  const enc: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['', false],
    ['gzip', true],
    ['br, gzip;q=0.5', true],
    ['GZIP', true],
    ['gzip;q=0', false],
    ['*', true],
    ['identity', false],
    ['x-gzip-not', false],
  ];
  for (const [h, want] of enc) t.equal(acceptsGzip(h), want, `Accept-Encoding ${JSON.stringify(h)}`);
  const tag = '"abc"';
  const inm: Array<[string | undefined, boolean]> = [
    [undefined, false],
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['*', true],
    ['"abcd"', false],
  ];
  for (const [h, want] of inm) t.equal(noneMatch(h, tag), want, `If-None-Match ${JSON.stringify(h)}`);
});
