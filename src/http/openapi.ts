/**
 * The OpenAPI 3.1 document of a service, generated from its HttpApp's route table (routeTable(): the
 * routes as registered, with their TypeBox body schemas, which are JSON Schema already, and the
 * RouteDocs fields), and the two routes that publish it: `GET /openapi.json` and `GET /docs`, a
 * reference page rendered from the document on the server (plain HTML and CSS, nothing fetched from
 * elsewhere). It documents; it never changes how a request is answered, and holds no service's routes.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TSchema } from 'typebox';
import type { HttpApp } from './app.js';
import type { RouteInfo } from './types.js';

/** A security scheme as OpenAPI spells it (components.securitySchemes). */
export type SecurityScheme =
  | { type: 'http'; scheme: 'bearer'; bearerFormat?: string; description?: string }
  | { type: 'apiKey'; in: 'header' | 'query'; name: string; description?: string };

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  securitySchemes?: Record<string, SecurityScheme>;
  /** Schemes every route needs unless its own `security` says otherwise (e.g. a service-wide token). */
  defaultSecurity?: readonly string[];
  /** The default security is optional (the clock lab's tokens are off unless configured). */
  defaultSecurityOptional?: boolean;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, JsonObject>>;
  components: { schemas: Record<string, Json>; securitySchemes?: Record<string, SecurityScheme> };
  tags: Array<{ name: string }>;
}

const errorRef: JsonObject = { $ref: '#/components/schemas/Error' };
const errorSchema: JsonObject = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'What went wrong, in words a user can act on.' } },
};

/** `/api/v1/clusters/:id` → `/api/v1/clusters/{id}` (a trailing `*` becomes `{path}`). */
export function openApiPath(pattern: string): string {
  return pattern
    .split('/')
    .map((seg) => (seg.startsWith(':') ? `{${seg.slice(1)}}` : seg === '*' ? '{path}' : seg))
    .join('/');
}

/** The path parameter names of a registered pattern, in order. */
function pathParams(pattern: string): string[] {
  return pattern
    .split('/')
    .filter((seg) => seg.startsWith(':') || seg === '*')
    .map((seg) => (seg === '*' ? 'path' : seg.slice(1)));
}

/** A TypeBox schema as plain JSON Schema (no symbols, functions or TypeBox-private `~` keys). */
function jsonSchema(schema: TSchema): Json {
  const strip = (v: unknown): Json => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? v : null;
    if (Array.isArray(v)) return v.map(strip);
    if (typeof v === 'object') {
      const out: JsonObject = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (k.startsWith('~') || x === undefined || typeof x === 'function') continue;
        // RegExp patterns (TypeBox keeps `pattern` as a string, but be safe).
        out[k] = x instanceof RegExp ? x.source : strip(x);
      }
      return out;
    }
    return null;
  };
  return strip(schema);
}

function defaultTag(pattern: string): string {
  const segs = pattern.split('/').filter((s) => s !== '');
  const rest = segs[0] === 'api' && /^v\d+$/.test(segs[1] ?? '') ? segs.slice(2) : segs;
  const first = rest[0];
  // One-segment paths outside /api (/healthz, /metrics, /ws) are the service's own.
  return first === undefined || first.startsWith(':') || (rest === segs && segs.length === 1) ? 'service' : first;
}

function operationId(r: RouteInfo): string {
  const words = r.pattern
    .split('/')
    .filter((s) => s !== '')
    .map((s) => (s === '*' ? 'path' : s.replace(/^:/, 'by_').replace(/[^A-Za-z0-9]+/g, '_')));
  return [r.method.toLowerCase(), ...words].join('_');
}

/** One operation object for a registered route. */
function operation(r: RouteInfo, info: OpenApiInfo): JsonObject {
  const d = r.docs;
  const op: JsonObject = { operationId: operationId(r), tags: d.tags ?? [defaultTag(r.pattern)] };
  op.summary = d.summary ?? (r.kind === 'ws' ? 'WebSocket' : r.kind === 'stream' ? 'Server-sent events' : '');
  if (op.summary === '') delete op.summary;
  if (d.description) op.description = d.description;

  const params: Json[] = pathParams(r.pattern).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string' },
  }));
  const query = d.query ? jsonSchema(d.query) : undefined;
  if (query && typeof query === 'object' && !Array.isArray(query)) {
    const props = query.properties;
    const required = Array.isArray(query.required) ? query.required : [];
    if (props && typeof props === 'object' && !Array.isArray(props)) {
      for (const [name, schema] of Object.entries(props)) {
        const p: JsonObject = { name, in: 'query', required: required.includes(name), schema };
        if (schema && typeof schema === 'object' && !Array.isArray(schema) && typeof schema.description === 'string')
          p.description = schema.description;
        params.push(p);
      }
    }
  }
  if (params.length > 0) op.parameters = params;

  const bodySchema = r.body ?? d.documentedBody;
  if (bodySchema) {
    op.requestBody = {
      required: !r.bodyOptional,
      content: { 'application/json': { schema: jsonSchema(bodySchema) } },
    };
  }

  const responses: JsonObject = {};
  const error = (description: string): JsonObject => ({
    description,
    content: { 'application/json': { schema: errorRef } },
  });
  if (r.kind === 'ws') {
    responses['101'] = { description: 'Switching Protocols: the WebSocket is open' };
  } else if (r.kind === 'stream') {
    responses['200'] = {
      description: 'An event stream (text/event-stream)',
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    };
  } else {
    const status = d.successStatus ?? 200;
    if (status === 204) responses['204'] = { description: 'No content' };
    else {
      const type = d.responseType ?? 'application/json';
      const schema: Json = d.response ? jsonSchema(d.response) : type === 'application/json' ? {} : { type: 'string' };
      responses[String(status)] = { description: 'Success', content: { [type]: { schema } } };
    }
  }
  if (bodySchema || params.length > 0) responses['400'] = error('The request is invalid (the message names the field)');
  const security = d.security ?? info.defaultSecurity ?? [];
  const optional = d.security ? d.securityOptional === true : info.defaultSecurityOptional === true;
  if (security.length > 0) {
    responses['401'] = error('Missing or invalid credentials');
    const reqs: Json[] = security.map((name) => ({ [name]: [] }));
    op.security = optional ? [{}, ...reqs] : reqs;
  }
  if (pathParams(r.pattern).length > 0) responses['404'] = error('Not found');
  responses.default = error('An error: `{"error": string}` with a 4xx or 5xx status');
  op.responses = responses;
  return op;
}

/** The OpenAPI 3.1 document for every route registered on `app` so far. */
export function openApiDocument(app: HttpApp, info: OpenApiInfo): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  const tags = new Set<string>();
  const ids = new Set<string>();
  for (const r of app.routeTable()) {
    const path = openApiPath(r.pattern);
    const item = (paths[path] ??= {});
    const op = operation(r, info);
    // operationId must be unique: `/a-b` and `/a_b` would spell the same one.
    let id = String(op.operationId);
    for (let n = 2; ids.has(id); n++) id = `${op.operationId}_${n}`;
    ids.add(id);
    op.operationId = id;
    for (const t of (op.tags as string[]) ?? []) tags.add(t);
    item[r.method.toLowerCase()] = op;
  }
  const infoOut: OpenApiDocument['info'] = { title: info.title, version: info.version };
  if (info.description) infoOut.description = info.description;
  const doc: OpenApiDocument = {
    openapi: '3.1.0',
    info: infoOut,
    paths,
    components: { schemas: { Error: errorSchema } },
    tags: [...tags].sort().map((name) => ({ name })),
  };
  if (info.securitySchemes && Object.keys(info.securitySchemes).length > 0)
    doc.components.securitySchemes = info.securitySchemes;
  return doc;
}

/** This checkout's package.json version (src/ or dist/src/ alike), for `info.version`; '0.0.0' if not found. */
export function packageVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown };
        if (typeof pkg.version === 'string') return pkg.version;
      } catch {
        // not readable: keep looking upwards
      }
    }
    dir = path.dirname(dir);
  }
  return '0.0.0';
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const pageCss = `body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f7f8fa}
header{background:#1d232a;color:#fff;padding:16px 24px}header h1{margin:0;font-size:20px}
main{display:flex;gap:24px;padding:16px 24px}
nav{flex:0 0 260px;font-size:13px;overflow-wrap:anywhere}nav a{color:#35506b}
nav ul{list-style:none;padding-left:8px}article{flex:1;min-width:0}
section{background:#fff;border:1px solid #dde2e8;border-radius:6px;margin:0 0 12px;padding:10px 14px}
h2{margin:20px 0 8px;font-size:17px}h3{margin:0 0 4px;font-size:14px;font-weight:600}
.m{display:inline-block;min-width:58px;font:600 12px ui-monospace,monospace;color:#fff;border-radius:3px;
padding:2px 6px;margin-right:6px;text-align:center}.GET{background:#2f7d4f}.POST{background:#2f5f9e}
.PUT{background:#8a6212}.PATCH{background:#6b4c9a}.DELETE{background:#a33a3a}
code,pre{font:12px ui-monospace,monospace}pre{background:#f2f4f7;padding:8px;overflow:auto;max-height:360px}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #e3e7ec;padding:3px 8px;text-align:left}
.lock{color:#8a6212;font-size:12px}`;

/** The reference page for a document: server-rendered HTML, inline CSS, no script, nothing external. */
export function docsPage(doc: OpenApiDocument): string {
  const byTag = new Map<string, Array<{ method: string; path: string; op: JsonObject }>>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const tag = ((op.tags as string[] | undefined) ?? ['other'])[0] ?? 'other';
      let list = byTag.get(tag);
      if (!list) byTag.set(tag, (list = []));
      list.push({ method: method.toUpperCase(), path, op });
    }
  }
  const tags = [...byTag.keys()].sort();
  const out: string[] = [];
  out.push(
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(doc.info.title)}: API reference</title><style>${pageCss}</style></head><body>`,
    `<header><h1>${esc(doc.info.title)} <small>${esc(doc.info.version)}</small></h1>`,
    doc.info.description ? `<p>${esc(doc.info.description)}</p>` : '',
    "<p>Generated from the service's route table; the machine-readable form is ",
    '<a style="color:#9cc3ff" href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p></header><main><nav><ul>',
  );
  for (const t of tags) out.push(`<li><a href="#tag-${esc(t)}">${esc(t)}</a> (${byTag.get(t)?.length ?? 0})</li>`);
  out.push('</ul>');
  const schemes = doc.components.securitySchemes ?? {};
  if (Object.keys(schemes).length > 0) {
    out.push('<h3>Security</h3><ul>');
    for (const [name, s] of Object.entries(schemes)) {
      const how = s.type === 'http' ? `Authorization: Bearer ${s.bearerFormat ?? ''}` : `${s.in} ${s.name}`;
      out.push(`<li><b>${esc(name)}</b>: ${esc(how)}${s.description ? ` (${esc(s.description)})` : ''}</li>`);
    }
    out.push('</ul>');
  }
  out.push('</nav><article>');
  for (const t of tags) {
    out.push(`<h2 id="tag-${esc(t)}">${esc(t)}</h2>`);
    for (const { method, path, op } of byTag.get(t) ?? []) {
      out.push(`<section id="${esc(String(op.operationId))}"><h3><span class="m ${esc(method)}">${esc(method)}</span>`);
      out.push(`<code>${esc(path)}</code></h3>`);
      if (typeof op.summary === 'string') out.push(`<p>${esc(op.summary)}</p>`);
      if (typeof op.description === 'string') out.push(`<p>${esc(op.description)}</p>`);
      if (Array.isArray(op.security)) {
        const names = op.security.flatMap((s) => (s && typeof s === 'object' ? Object.keys(s) : []));
        const optional = op.security.some((s) => s && typeof s === 'object' && Object.keys(s).length === 0);
        out.push(`<p class="lock">Needs ${esc(names.join(' or '))}${optional ? ' (when configured)' : ''}</p>`);
      }
      if (Array.isArray(op.parameters) && op.parameters.length > 0) {
        out.push('<table><tr><th>parameter</th><th>in</th><th>schema</th></tr>');
        for (const p of op.parameters as JsonObject[]) {
          const req = p.required ? ' (required)' : '';
          out.push(`<tr><td><code>${esc(String(p.name))}</code>${req}</td><td>${esc(String(p.in))}</td>`);
          out.push(`<td><code>${esc(JSON.stringify(p.schema))}</code></td></tr>`);
        }
        out.push('</table>');
      }
      const body = op.requestBody as JsonObject | undefined;
      if (body) {
        const schema = ((body.content as JsonObject)['application/json'] as JsonObject).schema;
        out.push(`<details><summary>Request body (JSON${body.required ? '' : ', optional'})</summary>`);
        out.push(`<pre>${esc(JSON.stringify(schema, null, 2))}</pre></details>`);
      }
      const responses = op.responses as JsonObject;
      out.push('<details><summary>Responses</summary><ul>');
      for (const [status, r] of Object.entries(responses)) {
        const resp = r as JsonObject;
        const content = resp.content as JsonObject | undefined;
        const [type, media] = content ? (Object.entries(content)[0] ?? []) : [];
        const schema = media && typeof media === 'object' && !Array.isArray(media) ? media.schema : undefined;
        out.push(
          `<li><b>${esc(status)}</b> ${esc(String(resp.description))}${type ? ` <code>${esc(type)}</code>` : ''}`,
        );
        if (schema !== undefined && JSON.stringify(schema) !== '{}' && status.startsWith('2'))
          out.push(`<pre>${esc(JSON.stringify(schema, null, 2))}</pre>`);
        out.push('</li>');
      }
      out.push('</ul></details></section>');
    }
  }
  out.push('</article></main></body></html>');
  return out.join('');
}

/**
 * Registers `GET /openapi.json` and `GET /docs` on `app`. Both are built on first request (by then
 * every route is registered, these two included) and kept: the route table does not change after
 * listen. Both answer without credentials.
 */
export function serveOpenApi(app: HttpApp, info: OpenApiInfo): void {
  let json: string | undefined;
  let html: string | undefined;
  const build = (): void => {
    const doc = openApiDocument(app, info);
    json = JSON.stringify(doc);
    html = docsPage(doc);
  };
  // Public on every service: the description of an API is no secret (the clock lab exempts both paths).
  const opts = { security: [], tags: ['docs'] };
  app.get(
    '/openapi.json',
    () => {
      if (json === undefined) build();
      return { status: 200, raw: json as string, headers: { 'content-type': 'application/json' } };
    },
    { ...opts, summary: 'This document: OpenAPI 3.1, generated from the route table' },
  );
  app.get(
    '/docs',
    () => {
      if (html === undefined) build();
      return { status: 200, raw: html as string, headers: { 'content-type': 'text/html; charset=utf-8' } };
    },
    { ...opts, summary: 'The API reference page rendered from /openapi.json', responseType: 'text/html' },
  );
}
