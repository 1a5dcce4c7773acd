/**
 * An OpenFeature server provider over FlagsClient: `OpenFeature.setProviderAndWait(new
 * SimlabFlagsProvider({baseUrl, sdkKey}))`, then any OpenFeature client resolves flags locally from
 * the streamed copy. Maps the evaluator's reasons to OpenFeature's (TARGET_MATCH and RULE_MATCH →
 * TARGETING_MATCH, a rollout → SPLIT, OFF → DISABLED) and signals problems the OpenFeature way
 * (FlagNotFoundError, TypeMismatchError). Emits ConfigurationChanged when a flag changes.
 */
import {
  ErrorCode,
  FlagNotFoundError,
  GeneralError,
  OpenFeatureEventEmitter,
  ProviderEvents,
  ProviderNotReadyError,
  StandardResolutionReasons,
  TypeMismatchError,
  type EvaluationContext,
  type EvaluationContextValue,
  type JsonValue as OfJsonValue,
  type Provider,
  type ResolutionDetails,
  type ResolutionReason,
} from '@openfeature/server-sdk';
import type { EvalResult } from '../eval/evaluate.js';
import type { ContextValue, EvalContext } from '../model/types.js';
import { unreachable } from '../../util/assert.js';
import { FlagsClient, type FlagsClientOptions } from './client.js';
import { sdkInitTimeoutMsDefault } from '../limits.js';

/** OpenFeature context → our flat context: targetingKey becomes key, Dates ISO strings, nested objects dropped. */
export function toEvalContext(ctx: EvaluationContext): EvalContext {
  const out: EvalContext = {};
  const scalar = (v: EvaluationContextValue): ContextValue | undefined => {
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
    if (v instanceof Date) return v.toISOString();
    return undefined;
  };
  for (const [k, v] of Object.entries(ctx)) {
    if (k === 'targetingKey' || v === undefined) continue;
    if (Array.isArray(v)) {
      const items = v.map(scalar).filter((x): x is ContextValue => x !== undefined);
      out[k] = items;
    } else {
      const s = scalar(v);
      if (s !== undefined) out[k] = s;
    }
  }
  if (typeof ctx.targetingKey === 'string') out.key = ctx.targetingKey;
  return out;
}

function reasonOf(r: EvalResult): ResolutionReason {
  switch (r.reason.kind) {
    case 'OFF':
      return StandardResolutionReasons.DISABLED;
    case 'TARGET_MATCH':
    case 'RULE_MATCH':
      return StandardResolutionReasons.TARGETING_MATCH;
    case 'FALLTHROUGH':
      return r.reason.inRollout ? StandardResolutionReasons.SPLIT : StandardResolutionReasons.DEFAULT;
    case 'PREREQUISITE_FAILED':
      return 'PREREQUISITE_FAILED';
    case 'ERROR':
      return StandardResolutionReasons.ERROR;
    default:
      return unreachable(r.reason.kind);
  }
}

type Kind = 'boolean' | 'string' | 'number' | 'object';

function matches(kind: Kind, v: unknown): boolean {
  switch (kind) {
    case 'boolean':
      return typeof v === 'boolean';
    case 'string':
      return typeof v === 'string';
    case 'number':
      return typeof v === 'number';
    case 'object':
      return v !== null && typeof v === 'object';
    default:
      return unreachable(kind);
  }
}

export class SimlabFlagsProvider implements Provider {
  readonly metadata = { name: 'simlab-flags' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();
  readonly client: FlagsClient;

  constructor(
    opts: FlagsClientOptions | FlagsClient,
    private readonly initTimeoutMs = sdkInitTimeoutMsDefault,
  ) {
    this.client = opts instanceof FlagsClient ? opts : new FlagsClient(opts);
    this.client.onChange((c) => {
      if (c.kind === 'flag') this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: [c.key] });
      else this.events.emit(ProviderEvents.ConfigurationChanged, { metadata: { segment: c.key } });
    });
  }

  async initialize(): Promise<void> {
    await this.client.waitForInitialization(this.initTimeoutMs);
  }

  async onClose(): Promise<void> {
    this.client.close();
  }

  private resolve<T>(kind: Kind, flagKey: string, defaultValue: T, ctx: EvaluationContext): ResolutionDetails<T> {
    if (!this.client.initialized)
      throw new ProviderNotReadyError('the flag stream has not delivered its first put yet');
    const r = this.client.evaluate(flagKey, toEvalContext(ctx));
    if (!r) throw new FlagNotFoundError(`no flag ${JSON.stringify(flagKey)} in this environment`);
    if (r.reason.kind === 'ERROR') {
      if (r.variation === null)
        throw new GeneralError(
          `flag ${JSON.stringify(flagKey)} could not be evaluated (${r.reason.errorKind ?? 'error'})`,
        );
      return {
        value: r.value as T,
        variant: r.variation,
        reason: StandardResolutionReasons.ERROR,
        errorCode: ErrorCode.GENERAL,
        errorMessage: r.reason.errorKind ?? 'error',
      };
    }
    if (!matches(kind, r.value))
      throw new TypeMismatchError(
        `flag ${JSON.stringify(flagKey)} is not a ${kind} (its value is ${JSON.stringify(r.value)})`,
      );
    const details: ResolutionDetails<T> = { value: r.value as T, reason: reasonOf(r) };
    if (r.variation !== null) details.variant = r.variation;
    const meta: Record<string, string> = {};
    if (r.reason.ruleId !== undefined) meta['ruleId'] = r.reason.ruleId;
    if (r.reason.prerequisiteKey !== undefined) meta['prerequisiteKey'] = r.reason.prerequisiteKey;
    if (Object.keys(meta).length > 0) details.flagMetadata = meta;
    return details;
  }

  async resolveBooleanEvaluation(
    flagKey: string,
    defaultValue: boolean,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<boolean>> {
    return this.resolve('boolean', flagKey, defaultValue, context);
  }

  async resolveStringEvaluation(
    flagKey: string,
    defaultValue: string,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<string>> {
    return this.resolve('string', flagKey, defaultValue, context);
  }

  async resolveNumberEvaluation(
    flagKey: string,
    defaultValue: number,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<number>> {
    return this.resolve('number', flagKey, defaultValue, context);
  }

  async resolveObjectEvaluation<T extends OfJsonValue>(
    flagKey: string,
    defaultValue: T,
    context: EvaluationContext,
  ): Promise<ResolutionDetails<T>> {
    return this.resolve('object', flagKey, defaultValue, context);
  }
}
