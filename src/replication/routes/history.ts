/**
 * Watching a cluster (README "Watching a cluster"): GET .../history pages through the recorded
 * client operations and fault intervals, and GET .../snapshot gives the state, link totals and
 * active faults to resynchronise from, stamped with the /ws seq. The recording itself is the
 * cluster's (cluster/operation-history.ts, history.ts); these routes only page and shape it.
 */
import Type from 'typebox';
import { HttpError, type HttpResult } from '../../http/index.js';
import { toHistoryRecord, type FaultInterval, type HistoryOp, type HistoryRecord } from '../history.js';
import { toEdnHistory, toJsonHistory } from '../history-export.js';
import { historyPageOpsDefault, historyPageOpsMax } from '../limits.js';
import { linkTotals } from '../link-stats.js';
import type { RouteContext } from './context.js';
import { flagQuery, intQuery } from './request-helpers.js';

/** The answer of GET .../history (format=page, the default). */
interface HistoryPage {
  cluster_id: string;
  time_unit: 'ms';
  /** Index of ops[0]: since, or the oldest operation still held when since is older. */
  from_index: number;
  /** Pass as since to get the next page (== total when the page reached the newest). */
  next_since: number;
  /** Operations recorded since the cluster was created. */
  total: number;
  /** Operations that fell off the bounded history (indexes below this are gone). */
  ops_dropped: number;
  ops: HistoryRecord[];
  /** Every fault interval held, oldest first (open ones have end_ms null). */
  faults: FaultInterval[];
  faults_dropped: number;
}

/**
 * GET .../history answers in these formats (`format=`). `page` (the default) is the paged view
 * above. `edn` and `json` are the exports of interop.md "Histories" (history-export.ts): Jepsen op
 * maps, one per line (application/edn), or a JSON array of every invocation and completion. The
 * exports take the operations from `since` on, at most `limit` when it is given (else all held).
 */
const historyFormats = {
  json: (_page: HistoryPage, ops: HistoryOp[]): HttpResult => ({ status: 200, body: toJsonHistory(ops) }),
  edn: (_page: HistoryPage, ops: HistoryOp[]): HttpResult => ({
    status: 200,
    raw: toEdnHistory(ops),
    headers: { 'content-type': 'application/edn' },
  }),
  page: (page: HistoryPage): HttpResult => ({ status: 200, body: page }),
} as const;
type HistoryFormat = keyof typeof historyFormats;

function isHistoryFormat(s: string): s is HistoryFormat {
  return Object.hasOwn(historyFormats, s);
}

export function registerHistoryRoutes(ctx: RouteContext): void {
  const { app, getCluster, events } = ctx;
  app.get(
    '/api/v1/clusters/:id/history',
    (req) => {
      const c = getCluster(req);
      const since = intQuery(req.query, 'since', 0, 0, Number.MAX_SAFE_INTEGER);
      const format = req.query.get('format') ?? 'page';
      if (!isHistoryFormat(format)) {
        const known = Object.keys(historyFormats).join(', ');
        throw new HttpError(400, `format: must be one of ${known} (got ${JSON.stringify(format.slice(0, 32))})`);
      }
      // The exports default to every operation held (the ring is bounded by historyOpsMax).
      const limitDefault = format === 'page' ? historyPageOpsDefault : Number.MAX_SAFE_INTEGER;
      const limit = intQuery(req.query, 'limit', limitDefault, 1, historyPageOpsMax);
      const h = c.historyPage(since, limit);
      return historyFormats[format](
        {
          cluster_id: c.id,
          time_unit: 'ms',
          from_index: h.first,
          next_since: h.first + h.ops.length,
          total: h.nextIndex,
          ops_dropped: h.firstIndex,
          ops: h.ops.map((op, i) => toHistoryRecord(op, h.first + i)),
          faults: c.faults.list(),
          faults_dropped: c.faults.dropped,
        },
        h.ops,
      );
    },
    {
      summary: "The cluster's recorded operations and faults (page, or Jepsen EDN / JSON export)",
      query: Type.Object({
        format: Type.Optional(Type.String({ description: 'page (default), edn (Jepsen, application/edn) or json' })),
        since: Type.Optional(Type.String({ description: 'first operation index (default 0)' })),
        limit: Type.Optional(
          Type.String({ description: 'operations at most (page default and maximum in limits.ts)' }),
        ),
      }),
    },
  );
  app.get(
    '/api/v1/clusters/:id/snapshot',
    async (req) => {
      const c = getCluster(req);
      // The seq in the numbering of the client's /ws stream (op_events as on /ws). Read before the
      // state is gathered: events after it may already show in the state; applying them again is
      // harmless (each event sets what it reports).
      const opEvents = flagQuery(req.query, 'op_events', true);
      if (!opEvents.ok) throw new HttpError(400, opEvents.error);
      const seq = events.seq(c.id, opEvents.value);
      const timestamp = new Date().toISOString();
      const state = await c.state();
      const h = c.historyPage(Number.MAX_SAFE_INTEGER, 0);
      return {
        status: 200,
        body: {
          cluster_id: c.id,
          seq,
          timestamp,
          state,
          links: linkTotals(c.fabric),
          faults: c.faults.active(),
          history: {
            total: h.nextIndex,
            ops_dropped: h.firstIndex,
            faults_recorded: c.faults.list().length + c.faults.dropped,
          },
        },
      };
    },
    {
      summary: 'One consistent picture of a cluster for a page: state, links, active faults, /ws seq',
      query: Type.Object({
        op_events: Type.Optional(
          Type.String({ description: 'true (default) or false: count op events in seq as on /ws' }),
        ),
      }),
    },
  );
}
