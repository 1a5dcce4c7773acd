/**
 * The LaunchDarkly relay's HTTP routes under `/ld`, for an official LD server SDK configured with
 * baseUri, streamUri and eventsUri set to `<flags service>/ld` and the environment's SDK key:
 * `GET /ld/all` (streaming), `GET /ld/sdk/latest-all` (polling, with ETag), `POST /ld/bulk` and
 * `POST /ld/diagnostic` (analytics and diagnostic events: 202, counted, not stored). Thin: it
 * resolves the key and hands over to the relay (./relay.ts); it does not evaluate anything.
 */
import { createHash } from 'node:crypto';
import Type from 'typebox';
import { HttpError, type HttpApp, type HttpResult } from '../../http/index.js';
import type { FlagsContext } from '../api/context.js';
import { requireSdkKey, SdkKeys, sdkKeyPresent } from '../api/guard.js';
import { Counter, Gauge, mirroredCounter } from '../../util/metrics.js';
import { ldEventsPerPostMax, sseClientBufferBytesDefault } from '../limits.js';
import type { LdRelay } from './relay.js';

function etagOf(body: string): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

/** A JSON array of events, or a 400 (the edge caps the body's bytes). */
function countEvents(raw: Buffer): number {
  let parsed: unknown;
  try {
    parsed = raw.length === 0 ? undefined : JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `malformed JSON: ${(err as Error).message}`);
  }
  if (Array.isArray(parsed)) {
    if (parsed.length > ldEventsPerPostMax)
      throw new HttpError(400, `body: at most ${ldEventsPerPostMax} events per request (the limit)`);
    return parsed.length;
  }
  if (parsed !== null && typeof parsed === 'object') return 1;
  throw new HttpError(400, 'body: must be a JSON array of events (or one diagnostic event object)');
}

export function registerLdRoutes(
  app: HttpApp,
  ctx: FlagsContext,
  relay: LdRelay,
  sseClientBufferBytes = sseClientBufferBytesDefault,
): void {
  const keys = new SdkKeys(ctx.store);
  const received = new Counter({
    name: 'flags_ld_events_received_total',
    help: 'LaunchDarkly SDK events received on /ld/bulk (analytics) and /ld/diagnostic, by kind',
    labelNames: ['kind'] as const,
    registers: [ctx.metrics.registry],
  });
  new Gauge({
    name: 'flags_ld_stream_clients',
    help: 'Connected LaunchDarkly SDK stream clients (/ld/all)',
    registers: [ctx.metrics.registry],
    collect() {
      this.set(relay.connected);
    },
  });
  mirroredCounter(
    ctx.metrics.registry,
    'flags_ld_unrepresentable_total',
    'Flags left out of the LaunchDarkly payload because its JSON cannot say them',
    () => relay.stats.unrepresentable,
  );

  app.stream(
    '/ld/all',
    async (req, stream) => {
      const env = await requireSdkKey(keys, req);
      const state = await ctx.replica.environment(env.projectKey, env.key);
      if (relay.connect(state, stream) === 'over_capacity')
        throw new HttpError(503, 'too many stream clients; retry later', { 'retry-after': '5' });
    },
    sseClientBufferBytes,
    {
      security: ['sdkKey'],
      tags: ['launchdarkly'],
      summary: "LaunchDarkly relay: put/patch/delete of LD's flag JSON as server-sent events",
    },
  );

  app.get(
    '/ld/sdk/latest-all',
    async (req): Promise<HttpResult> => {
      const env = await requireSdkKey(keys, req);
      const state = await ctx.replica.environment(env.projectKey, env.key);
      const data = relay.allData(state);
      const etag = etagOf(data);
      if (req.headers['if-none-match'] === etag) return { status: 304, headers: { etag } };
      return { status: 200, raw: data, headers: { 'content-type': 'application/json', etag } };
    },
    {
      security: ['sdkKey'],
      tags: ['launchdarkly'],
      summary: "LaunchDarkly relay: every flag and segment in LD's JSON (ETag)",
    },
  );

  for (const [path, kind] of [
    ['/ld/bulk', 'analytics'],
    ['/ld/diagnostic', 'diagnostic'],
  ] as const) {
    app.post(
      path,
      async (req) => {
        await requireSdkKey(keys, req);
        const n = countEvents(req.rawBody);
        relay.stats.eventsReceived += n;
        received.inc({ kind }, n);
        return { status: 202, body: { accepted: n } };
      },
      {
        ...sdkKeyPresent,
        rawBody: true,
        security: ['sdkKey'],
        tags: ['launchdarkly'],
        successStatus: 202,
        summary: `LaunchDarkly relay: accepts the SDK's ${kind} events (counted, not stored)`,
        documentedBody: Type.Union([Type.Array(Type.Unknown()), Type.Object({})]),
      },
    );
  }
}
