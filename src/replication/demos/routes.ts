/**
 * GET /api/v1/demos/{2pc,mvcc,wal,swim,paxos,detsim}: the primitive demos over HTTP. Query
 * parameters are decoded here (400 on a bad value); each demo runs on the deterministic fabric.
 */
import Type from 'typebox';
import { HttpError, type HttpApp } from '../../http/index.js';
import { runDetsim, runMvcc, runPaxos, runSwim, runTwoPhaseCommit, runWal } from './index.js';
import { demoSeedDefault } from '../limits.js';

function boolParam(q: URLSearchParams, name: string, dflt: boolean): boolean {
  const v = q.get(name);
  if (v === null || v === '') return dflt;
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new HttpError(400, `${name} must be true or false (got ${JSON.stringify(v)})`);
}

/** Seeds are int64 in the spec; JavaScript numbers hold integers exactly up to 2^53, which we accept. */
function seedParam(q: URLSearchParams, dflt: number): number {
  const v = q.get('seed');
  if (v === null || v === '') return dflt;
  if (!/^-?\d{1,16}$/.test(v) || !Number.isSafeInteger(Number(v)))
    throw new HttpError(
      400,
      `seed must be an integer between -(2^53-1) and 2^53-1 (got ${JSON.stringify(v.slice(0, 40))})`,
    );
  return Number(v);
}

export function registerDemoRoutes(app: HttpApp): void {
  app.get(
    '/api/v1/demos/2pc',
    (req) => ({
      status: 200,
      body: runTwoPhaseCommit({
        crash: boolParam(req.query, 'crash', false),
        seed: seedParam(req.query, demoSeedDefault),
      }),
    }),
    {
      summary: 'Two-phase commit demo (crash=true crashes the coordinator)',
      query: Type.Object({
        crash: Type.Optional(Type.String({ description: 'true or false (default false)' })),
        seed: Type.Optional(Type.String({ description: 'integer seed of the run (default 42)' })),
      }),
    },
  );
  app.get(
    '/api/v1/demos/mvcc',
    (req) => ({
      status: 200,
      body: runMvcc({ seed: seedParam(req.query, demoSeedDefault) }),
    }),
    {
      summary: 'Multi-version concurrency control demo (snapshot isolation)',
      query: Type.Object({ seed: Type.Optional(Type.String({ description: 'integer seed of the run (default 42)' })) }),
    },
  );
  app.get(
    '/api/v1/demos/wal',
    async (req) => {
      const mode = req.query.get('mode') ?? 'buffered';
      if (mode !== 'buffered' && mode !== 'fsync')
        throw new HttpError(400, `mode must be buffered or fsync (got ${JSON.stringify(mode.slice(0, 40))})`);
      return { status: 200, body: await runWal({ mode }) };
    },
    {
      summary: 'Write-ahead log demo: what survives a crash, buffered or fsync',
      query: Type.Object({ mode: Type.Optional(Type.String({ description: 'buffered (default) or fsync' })) }),
    },
  );
  app.get(
    '/api/v1/demos/swim',
    (req) => ({
      status: 200,
      body: runSwim({ seed: seedParam(req.query, demoSeedDefault) }),
    }),
    {
      summary: 'SWIM failure-detection demo',
      query: Type.Object({ seed: Type.Optional(Type.String({ description: 'integer seed of the run (default 42)' })) }),
    },
  );
  app.get(
    '/api/v1/demos/paxos',
    (req) => ({
      status: 200,
      body: runPaxos({ seed: seedParam(req.query, demoSeedDefault) }),
    }),
    {
      summary: 'Single-decree Paxos demo',
      query: Type.Object({ seed: Type.Optional(Type.String({ description: 'integer seed of the run (default 42)' })) }),
    },
  );
  app.get(
    '/api/v1/demos/detsim',
    (req) => ({
      status: 200,
      body: runDetsim({ seed: seedParam(req.query, demoSeedDefault) }),
    }),
    {
      summary: 'Deterministic simulation demo: the same seed gives the same run',
      query: Type.Object({ seed: Type.Optional(Type.String({ description: 'integer seed of the run (default 42)' })) }),
    },
  );
}
