/**
 * The clock lab's configuration: environment variables (ports, origins, tokens, WebSocket timings,
 * seed) and the YAML file at CONFIG_PATH (initial processes, kv.conflict_strategy, channel delay,
 * balances, delivery mode). Everything is decoded into one typed value at start-up; a bad value
 * stops the start with a message that names it. No behaviour lives here.
 */
import { readFileSync } from 'node:fs';
import Type from 'typebox';
import { Compile } from 'typebox/compile';
import { parse as parseYaml } from 'yaml';
import { formatValidationError } from '../http/index.js';
import type { ClockType } from './clocks.js';
import type { ConflictStrategy } from './kv.js';
import type { DeliveryMode, InitialProcess, LabConfig } from './lab.js';
import {
  channelDelayMsDefault,
  channelDelayMsMax,
  initialBalanceDefault,
  matrixSimulationProcessesMax,
  processCountMax,
  processIdCharsMax,
  undeliveredBytesMax,
  wsClientQueueBytesDefault,
  wsClientsMaxDefault,
  wsPingIntervalMsDefault,
  wsPongDeadlineMsDefault,
} from './limits.js';

/**
 * The characters of a process id; its length is checked apart (processIdCharsMax) so a long id is refused
 * naming the limit.
 */
export const processIdPattern = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
export const processIdRe = new RegExp(processIdPattern);
/** The schema of a process id wherever one is given (bodies, the YAML file). */
export const ProcessIdSchema = Type.String({ maxLength: processIdCharsMax, pattern: processIdPattern });

const ClockTypeSchema = Type.Union([Type.Literal('scalar'), Type.Literal('vector'), Type.Literal('matrix')]);

const ConfigFileSchema = Type.Object({
  processes: Type.Optional(
    Type.Array(
      Type.Union([
        ProcessIdSchema,
        Type.Object(
          { id: ProcessIdSchema, clock_type: Type.Optional(ClockTypeSchema) },
          { additionalProperties: false },
        ),
      ]),
      { maxItems: processCountMax },
    ),
  ),
  kv: Type.Optional(
    Type.Object({
      conflict_strategy: Type.Optional(
        Type.Union([
          Type.Literal('keep_all'),
          Type.Literal('lww'),
          Type.Literal('first_writer'),
          Type.Literal('merge'),
        ]),
      ),
    }),
  ),
  channels: Type.Optional(
    Type.Object({ default_delay_ms: Type.Optional(Type.Number({ minimum: 0, maximum: channelDelayMsMax })) }),
  ),
  initial_balance: Type.Optional(Type.Integer({ minimum: 0 })),
  delivery_mode: Type.Optional(Type.Union([Type.Literal('causal'), Type.Literal('immediate')])),
});
const configFileCheck = Compile(ConfigFileSchema);

export interface ClockLabSettings {
  port: number;
  proxyPort: number;
  /**
   * Origins allowed to open /ws; undefined when VC_ALLOWED_ORIGINS is unset (then any origin, or none, is
   * accepted).
   */
  allowedOrigins: string[] | undefined;
  /** `name:secret` tokens; undefined when VC_API_TOKENS is unset (no auth). */
  apiTokens: string[] | undefined;
  wsPingIntervalMs: number;
  wsPongDeadlineMs: number;
  wsClientQueueBytes: number;
  /** WebSocket clients of /ws at once; one more is a 503. */
  wsClientsMax: number;
  seed: number | undefined;
  configPath: string | undefined;
  lab: LabConfig;
}

const defaultProcesses: InitialProcess[] = [
  { id: 'p1', clock_type: 'vector' },
  { id: 'p2', clock_type: 'vector' },
  { id: 'p3', clock_type: 'vector' },
];

function intEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`${name} must be an integer between ${min} and ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

function listEnv(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Reads and checks the YAML file; throws an Error naming the file and the field on any problem. */
export function loadConfigFile(path: string): Partial<LabConfig> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`CONFIG_PATH ${path}: cannot read the file (${(err as Error).message})`);
  }
  let doc: unknown;
  try {
    doc = parseYaml(text) ?? {};
  } catch (err) {
    throw new Error(`CONFIG_PATH ${path}: not valid YAML (${(err as Error).message})`);
  }
  if (!configFileCheck.Check(doc))
    throw new Error(`CONFIG_PATH ${path}: ${formatValidationError(configFileCheck.Errors(doc))}`);
  const file = doc as Type.Static<typeof ConfigFileSchema>;
  const out: Partial<LabConfig> = {};
  if (file.processes) {
    const procs: InitialProcess[] = file.processes.map((p) =>
      typeof p === 'string'
        ? { id: p, clock_type: 'vector' as ClockType }
        : { id: p.id, clock_type: p.clock_type ?? 'vector' },
    );
    const seen = new Set<string>();
    for (const p of procs) {
      if (seen.has(p.id)) throw new Error(`CONFIG_PATH ${path}: processes: ${p.id} is listed twice`);
      seen.add(p.id);
    }
    if (procs.length > matrixSimulationProcessesMax && procs.some((p) => p.clock_type === 'matrix')) {
      throw new Error(
        `CONFIG_PATH ${path}: processes: a simulation with a matrix clock holds at most ` +
          `${matrixSimulationProcessesMax} processes, ${procs.length} are listed`,
      );
    }
    out.initialProcesses = procs;
  }
  if (file.kv?.conflict_strategy) out.conflictStrategy = file.kv.conflict_strategy as ConflictStrategy;
  if (file.channels?.default_delay_ms !== undefined) out.defaultDelayMs = file.channels.default_delay_ms;
  if (file.initial_balance !== undefined) out.initialBalance = file.initial_balance;
  if (file.delivery_mode) out.deliveryMode = file.delivery_mode as DeliveryMode;
  return out;
}

/** Decodes the environment (and the config file it names). Throws with a readable message. */
export function loadSettings(env: NodeJS.ProcessEnv): ClockLabSettings {
  const apiTokens = listEnv(env, 'VC_API_TOKENS');
  if (apiTokens) {
    for (const tok of apiTokens) {
      const i = tok.indexOf(':');
      if (i <= 0 || i === tok.length - 1)
        throw new Error('VC_API_TOKENS must be a comma-separated list of name:secret pairs');
    }
  }
  const configPath = env['CONFIG_PATH']?.trim() ? (env['CONFIG_PATH'] as string).trim() : undefined;
  const file = configPath ? loadConfigFile(configPath) : {};
  const seedRaw = env['VC_SEED'];
  const seed =
    seedRaw === undefined || seedRaw.trim() === '' ? undefined : intEnv(env, 'VC_SEED', 0, 0, Number.MAX_SAFE_INTEGER);
  return {
    port: intEnv(env, 'PORT', 8080, 0, 65535),
    proxyPort: intEnv(env, 'PROXY_PORT', 3001, 0, 65535),
    allowedOrigins: listEnv(env, 'VC_ALLOWED_ORIGINS'),
    apiTokens,
    wsPingIntervalMs: intEnv(env, 'VC_WS_PING_INTERVAL_MS', wsPingIntervalMsDefault, 10, 3_600_000),
    wsPongDeadlineMs: intEnv(env, 'VC_WS_PONG_DEADLINE_MS', wsPongDeadlineMsDefault, 10, 3_600_000),
    wsClientQueueBytes: intEnv(env, 'VC_WS_CLIENT_QUEUE_BYTES', wsClientQueueBytesDefault, 1024, 1024 * 1024 * 1024),
    wsClientsMax: intEnv(env, 'VC_WS_CLIENTS_MAX', wsClientsMaxDefault, 1, 1_000_000),
    seed,
    configPath,
    lab: {
      initialProcesses: file.initialProcesses ?? defaultProcesses,
      conflictStrategy: file.conflictStrategy ?? 'keep_all',
      defaultDelayMs: file.defaultDelayMs ?? channelDelayMsDefault,
      initialBalance: file.initialBalance ?? initialBalanceDefault,
      deliveryMode: file.deliveryMode ?? 'causal',
      undeliveredBytesMax: intEnv(
        env,
        'VC_UNDELIVERED_BYTES_MAX',
        undeliveredBytesMax,
        64 * 1024,
        Number.MAX_SAFE_INTEGER,
      ),
    },
  };
}
