/**
 * The OpenAPI completeness test (issue 19, point 1): each service started on a free port serves an
 * OpenAPI 3.1 document that @seriousme/openapi-schema-validator accepts and that names every route of
 * the app's own route table (HttpApp.routeTable(), not a hand list) with its method; `/docs` is HTML
 * with nothing loaded from elsewhere; the clock lab's proxy passes both through. Plus the generator's
 * own rules on a small app (path spelling, body, query, security, errors) and a missing route failing.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import Type from 'typebox';
import { Validator } from '@seriousme/openapi-schema-validator';
import { HttpApp } from '../../src/http/index.js';
import type { RouteInfo } from '../../src/http/types.js';
import { docsPage, openApiDocument, openApiPath, type OpenApiDocument } from '../../src/http/openapi.js';
import { startReplicationSim } from '../../src/replication/server.js';
import { startFlags } from '../../src/flags/server.js';
import { startClockLab } from '../../src/clocklab/server.js';
import { silentLogger } from '../../src/util/logger.js';

/** Routes of `table` the document lacks, as `METHOD /path` ({} spelling). */
function missingRoutes(doc: OpenApiDocument, table: readonly RouteInfo[]): string[] {
  const out: string[] = [];
  for (const r of table) {
    const path = openApiPath(r.pattern);
    if (!doc.paths[path]?.[r.method.toLowerCase()]) out.push(`${r.method} ${path}`);
  }
  return out;
}

/** External references a page would load or link: src/href/url() to another origin. */
function externalUrls(html: string): string[] {
  return [
    ...html.matchAll(
      /(?:src|href)\s*=\s*["']?\s*((?:[a-z][a-z0-9+.-]*:)?\/\/[^"'\s>]*)|url\(\s*["']?((?:https?:)?\/\/[^)"']*)/gi,
    ),
  ].map((m) => m[1] ?? m[2] ?? '');
}

async function validate(doc: unknown): Promise<{ valid: boolean; errors: unknown }> {
  const v = new Validator();
  const res = await v.validate(doc as Record<string, unknown>);
  return { valid: res.valid, errors: res.errors };
}

async function checkService(
  tt: Test,
  name: string,
  base: string,
  table: readonly RouteInfo[],
): Promise<OpenApiDocument> {
  const r = await fetch(`${base}/openapi.json`);
  tt.equal(r.status, 200, `${name}: /openapi.json answers 200`);
  tt.match(r.headers.get('content-type') ?? '', /application\/json/);
  const doc = (await r.json()) as OpenApiDocument;
  tt.equal(doc.openapi, '3.1.0', `${name}: OpenAPI 3.1`);
  const res = await validate(doc);
  tt.ok(res.valid, `${name}: the document is valid OpenAPI`, { errors: res.errors });
  tt.ok(table.length > 5, `${name}: the route table has routes (${table.length})`);
  tt.same(missingRoutes(doc, table), [], `${name}: every registered route is in the document`);
  tt.ok(doc.paths['/openapi.json']?.get && doc.paths['/docs']?.get, `${name}: documents itself`);
  // Every operation has an error response in the shared shape.
  for (const [p, item] of Object.entries(doc.paths))
    for (const [m, op] of Object.entries(item)) {
      const d = (op.responses as Record<string, { content?: Record<string, { schema?: unknown }> }>).default;
      if (d?.content?.['application/json']?.schema === undefined) tt.fail(`${name}: ${m} ${p} has no error response`);
    }
  const page = await fetch(`${base}/docs`);
  tt.equal(page.status, 200, `${name}: /docs answers 200`);
  tt.match(page.headers.get('content-type') ?? '', /text\/html/);
  const html = await page.text();
  tt.match(html, /^<!doctype html>/i);
  tt.same(externalUrls(html), [], `${name}: /docs loads and links nothing from elsewhere`);
  tt.notMatch(html, /<script/i, `${name}: /docs needs no script`);
  // The page names every operation.
  for (const r of table)
    if (!html.includes(`<code>${openApiPath(r.pattern).replace(/&/g, '&#38;')}</code>`))
      tt.fail(`${name}: /docs lacks ${r.method} ${r.pattern}`);
  return doc;
}

t.test('generator rules on a small app', async (tt) => {
  const app = new HttpApp({ name: 'unit', logger: silentLogger() });
  const Body = Type.Object({ n: Type.Integer({ minimum: 1 }) }, { additionalProperties: false });
  app.post('/things/:id/parts', () => ({ status: 201 }), {
    body: Body,
    summary: 'add a part',
    successStatus: 201,
    response: Type.Object({ id: Type.String() }),
    security: ['jwt'],
    query: Type.Object({ dry: Type.Optional(Type.Boolean()), limit: Type.Integer() }),
  });
  app.delete('/things/:id', () => ({ status: 204 }), { successStatus: 204 });
  app.stream('/events', () => undefined);
  app.ws('/ws', { upgrade: () => ({ data: {} }) }, { security: ['jwt'], securityOptional: true });
  app.get('/files/*', () => ({ status: 200 }));
  const doc = openApiDocument(app, {
    title: 'unit',
    version: '1',
    securitySchemes: { jwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
  });
  tt.same(Object.keys(doc.paths).sort(), ['/events', '/files/{path}', '/things/{id}', '/things/{id}/parts', '/ws']);
  const post = doc.paths['/things/{id}/parts']?.post as Record<string, any>;
  tt.equal(post.summary, 'add a part');
  tt.same(post.requestBody.content['application/json'].schema, JSON.parse(JSON.stringify(Body)));
  tt.equal(post.requestBody.required, true);
  tt.same(
    post.parameters.map((p: { name: string; in: string; required: boolean }) => [p.name, p.in, p.required]),
    [
      ['id', 'path', true],
      ['dry', 'query', false],
      ['limit', 'query', true],
    ],
  );
  tt.same(Object.keys(post.responses).sort(), ['201', '400', '401', '404', 'default']);
  tt.same(post.responses['201'].content['application/json'].schema.required, ['id']);
  tt.same(post.responses['400'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
  tt.same(post.security, [{ jwt: [] }]);
  const del = doc.paths['/things/{id}']?.delete as Record<string, any>;
  tt.equal(del.responses['204'].content, undefined, '204 has no body');
  tt.equal(del.security, undefined, 'no security unless declared');
  tt.same(doc.paths['/ws']?.get?.security, [{}, { jwt: [] }], 'optional security is an empty alternative');
  tt.ok(
    doc.paths['/events']?.get?.responses &&
      'text/event-stream' in (doc.paths['/events'].get.responses as any)['200'].content,
  );
  const res = await validate(doc);
  tt.ok(res.valid, 'valid OpenAPI', { errors: res.errors });
  tt.same(missingRoutes(doc, app.routeTable()), []);

  // A route the document does not have is reported (the completeness check can fail).
  const partial = structuredClone(doc);
  delete partial.paths['/things/{id}'];
  tt.same(missingRoutes(partial, app.routeTable()), ['DELETE /things/{id}']);

  // Text from route docs is escaped on the page, never markup.
  const evil = new HttpApp({ name: 'evil', logger: silentLogger() });
  evil.get('/x', () => ({ status: 200 }), { summary: '<img src="https://example.com/a.png">' });
  const html = docsPage(openApiDocument(evil, { title: '<b>t</b>', version: '1' }));
  tt.notMatch(html, /<img/);
  tt.same(externalUrls(html), []);
  tt.same(externalUrls('<a href="https://example.com/">x</a><link href=//cdn.example/x.css>'), [
    'https://example.com/',
    '//cdn.example/x.css',
  ]);
});

t.test('replication simulator', async (tt) => {
  const srv = await startReplicationSim({ port: 0, host: '127.0.0.1', logger: silentLogger() });
  tt.teardown(() => srv.close());
  const doc = await checkService(tt, 'replsim', `http://127.0.0.1:${srv.port}`, srv.app.routeTable());
  const create = doc.paths['/api/v1/clusters']?.post as Record<string, any>;
  tt.ok(create?.requestBody?.content['application/json'].schema.properties, 'cluster creation documents its body');
});

t.test('feature flags', async (tt) => {
  const dir = mkdtempSync(join(tmpdir(), 'simlab-openapi-'));
  const srv = await startFlags({
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger(),
    env: {
      FLAGS_DB: join(dir, 'flags.db'),
      FLAGS_JWT_SECRET: 'test-secret-test-secret-test-secret-0123456789',
      FLAGS_ADMIN_EMAIL: 'admin@example.com',
      FLAGS_ADMIN_PASSWORD: 'correct horse battery staple',
    },
  });
  tt.teardown(() => srv.close());
  const doc = await checkService(tt, 'flags', `http://127.0.0.1:${srv.port}`, srv.app.routeTable());
  tt.same(Object.keys(doc.components.securitySchemes ?? {}).sort(), ['bearerJwt', 'sdkKey']);
  tt.same(doc.paths['/api/v1/projects']?.get?.security, [{ bearerJwt: [] }], 'management needs the JWT');
  tt.same(doc.paths['/sdk/v1/evaluate']?.post?.security, [{ sdkKey: [] }], '/sdk needs the SDK key');
  tt.equal(doc.paths['/healthz']?.get?.security, undefined, 'health is public');
  const flagPost = doc.paths['/api/v1/projects/{projectKey}/environments/{envKey}/flags']?.post as Record<string, any>;
  tt.ok(flagPost?.requestBody?.content['application/json'].schema.properties?.variations, 'flag bodies documented');
  tt.same(
    (doc.paths['/auth/login']?.post as Record<string, any>)?.requestBody?.content['application/json'].schema.required,
    ['email', 'password'],
    'login body from its schema',
  );

  // The auth bodies moved onto edge validation (edgeBody) answer with the messages the flags'
  // decoder gave before (worked out with bodyDecoder on the same schema).
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'body: a JSON object is required'],
    ['null', 'body: must be an object'],
    ['[]', 'body: must be an object'],
    ['{}', 'email: is required'],
    ['{"email":"a@b"}', 'password: is required'],
    ['{"email":"a@b","password":5}', 'password: must be a string'],
    ['{"email":"a@b","password":"x","extra":1}', 'extra: is not a known field'],
    [JSON.stringify({ email: 'x'.repeat(255), password: 'x' }), 'email: must be at most 254 characters (the limit)'],
  ];
  for (const [raw, error] of cases) {
    const r = await fetch(`http://127.0.0.1:${srv.port}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      ...(raw === undefined ? {} : { body: raw }),
    });
    tt.equal(r.status, 400, `login ${raw ?? '(no body)'}: 400`);
    tt.same(await r.json(), { error }, `login ${raw ?? '(no body)'}: the decoder's message`);
  }
  const noToken = await fetch(`http://127.0.0.1:${srv.port}/api/v1/users`, { method: 'POST', body: '{}' });
  tt.equal(noToken.status, 401, 'creating a user without a token is 401 before the body is validated');
});

t.test('clock lab and its proxy', async (tt) => {
  const lab = await startClockLab({
    port: 0,
    proxyPort: 0,
    host: '127.0.0.1',
    env: { VC_SEED: '7', VC_API_TOKENS: 'docs:s3cret' },
    logger: silentLogger(),
  });
  tt.teardown(() => lab.close());
  const base = `http://127.0.0.1:${lab.port}`;
  const doc = await checkService(tt, 'clocklab', base, lab.app.routeTable());
  tt.same(doc.paths['/api/v1/processes']?.get?.security, [{}, { token: [] }], 'the token is optional');
  tt.equal((await fetch(`${base}/api/v1/processes`)).status, 401, 'the API itself still needs the token');
  const via = await fetch(`http://127.0.0.1:${lab.proxyPort}/openapi.json`);
  tt.equal(via.status, 200);
  tt.same(await via.json(), doc, 'the proxy passes the document through');
  const page = await fetch(`http://127.0.0.1:${lab.proxyPort}/docs`);
  tt.equal(page.status, 200);
  tt.match(page.headers.get('content-type') ?? '', /text\/html/);
});
