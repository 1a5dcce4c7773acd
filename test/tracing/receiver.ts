/**
 * An in-process OTLP trace receiver for tests: the collector's gRPC TraceService (@grpc/grpc-js with
 * the OTLP protos in ./proto) on a free loopback port, keeping every span it is sent with its
 * resource's service.name, kind and attributes. Not a test file itself (no .test.ts).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

export type AttrValue = string | number | boolean | undefined;

export interface RecvSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  kind: number;
  service: string;
  attributes: Record<string, AttrValue>;
  resource: Record<string, AttrValue>;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

export interface Receiver {
  port: number;
  spans: RecvSpan[];
  close: () => Promise<void>;
}

const protoDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'proto');

interface WireAnyValue {
  value?: string;
  string_value?: string;
  bool_value?: boolean;
  int_value?: string;
  double_value?: number;
}
interface WireKeyValue {
  key: string;
  value?: WireAnyValue;
}
interface WireSpan {
  trace_id: Buffer;
  span_id: Buffer;
  parent_span_id?: Buffer;
  name: string;
  kind: number | string;
  attributes?: WireKeyValue[];
  status?: { code?: number | string };
}
interface WireRequest {
  resource_spans?: Array<{
    resource?: { attributes?: WireKeyValue[] };
    scope_spans?: Array<{ spans?: WireSpan[] }>;
  }>;
}

function decode(v: WireAnyValue | undefined): AttrValue {
  switch (v?.value) {
    case 'string_value':
      return v.string_value;
    case 'bool_value':
      return v.bool_value;
    case 'int_value':
      return Number(v.int_value);
    case 'double_value':
      return v.double_value;
    default:
      return undefined;
  }
}

function attrs(list: WireKeyValue[] | undefined): Record<string, AttrValue> {
  const out: Record<string, AttrValue> = {};
  for (const kv of list ?? []) out[kv.key] = decode(kv.value);
  return out;
}

const spanKinds: Record<string, number> = {
  SPAN_KIND_UNSPECIFIED: 0,
  SPAN_KIND_INTERNAL: 1,
  SPAN_KIND_SERVER: 2,
  SPAN_KIND_CLIENT: 3,
};

export async function startReceiver(): Promise<Receiver> {
  const def = protoLoader.loadSync('trace_service.proto', {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    bytes: Buffer,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    opentelemetry: { proto: { collector: { trace: { v1: { TraceService: { service: grpc.ServiceDefinition } } } } } };
  };
  const svc = pkg.opentelemetry.proto.collector.trace.v1.TraceService.service;
  const spans: RecvSpan[] = [];
  const server = new grpc.Server();
  server.addService(svc, {
    Export: (call: { request: WireRequest }, cb: (e: null, r: object) => void) => {
      for (const rs of call.request.resource_spans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        for (const ss of rs.scope_spans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              traceId: Buffer.from(s.trace_id).toString('hex'),
              spanId: Buffer.from(s.span_id).toString('hex'),
              parentSpanId: Buffer.from(s.parent_span_id ?? []).toString('hex'),
              name: s.name,
              kind: typeof s.kind === 'number' ? s.kind : (spanKinds[s.kind] ?? -1),
              service: String(resource['service.name'] ?? ''),
              attributes: attrs(s.attributes),
              resource,
              statusCode: Number(s.status?.code ?? 0),
            });
          }
        }
      }
      cb(null, {});
    },
  } as unknown as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { port, spans, close: () => new Promise((r) => server.tryShutdown(() => r())) };
}
