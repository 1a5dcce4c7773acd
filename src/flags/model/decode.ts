/**
 * Decoding untrusted flag and segment bodies into typed definitions at the edge: TypeBox shape
 * check, then normalize (defaults of a full replacement), then the write-time rules. Outcomes are
 * values (`{ok: false, errors}` → the service answers 400 with the first message); nothing throws.
 * It does not store anything or look up other flags itself: the service passes `lookupFlag`.
 */
import type { TLocalizedValidationError } from 'typebox/error';
import {
  EvaluateBodyValidator,
  FlagCreateBodyValidator,
  FlagPutBodyValidator,
  SegmentCreateBodyValidator,
  SegmentPutBodyValidator,
  normalizeFlag,
  normalizeSegment,
} from './schemas.js';
import type { EvalContext, FieldError, FlagDefinition, SegmentDefinition } from './types.js';
import { validateFlag, validateSegment, type FlagValidationContext } from './validate.js';

export type Decoded<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** `/rules/0/clauses/1/op` → `rules[0].clauses[1].op`; '' → 'body'. */
export function jsonPointerToField(pointer: string): string {
  if (pointer === '') return 'body';
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  return out;
}

const limitKeywords: ReadonlySet<string> = new Set(['maxLength', 'maxItems', 'maxProperties']);

/** "must be at most 256 characters (the limit)": every size limit of src/flags/limits.ts reads alike. */
export function limitMessage(keyword: string, limit: unknown): string {
  const unit = keyword === 'maxLength' ? 'characters' : keyword === 'maxItems' ? 'items' : 'fields';
  return `must be at most ${String(limit)} ${unit} (the limit)`;
}

function join(base: string, child: string): string {
  return base === 'body' ? child : `${base}.${child}`;
}

const ARTICLES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

/**
 * Turns TypeBox's errors into field errors with messages a user can act on. Union branches are
 * folded into their anyOf ("must be a string or null"); the `false` schema behind
 * additionalProperties is reported once, as the unknown field itself.
 */
export function schemaErrorsToFieldErrors(errors: readonly TLocalizedValidationError[]): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  const push = (field: string, message: string): void => {
    const full = `${field}: ${message}`;
    if (seen.has(full)) return;
    seen.add(full);
    out.push({ field, message: full });
  };
  const anyOfPaths = errors.filter((e) => e.keyword === 'anyOf').map((e) => `${e.schemaPath}/anyOf/`);
  for (const e of errors) {
    const field = jsonPointerToField(e.instancePath);
    const params = e.params as Record<string, unknown>;
    if (anyOfPaths.some((p) => e.schemaPath.startsWith(p))) continue;
    switch (e.keyword) {
      case 'required': {
        const props = (params['requiredProperties'] as string[] | undefined) ?? [];
        for (const p of props) push(join(field, p), 'is required');
        break;
      }
      case 'additionalProperties': {
        const props = (params['additionalProperties'] as string[] | undefined) ?? [];
        for (const p of props) push(join(field, p), 'is not a known field');
        break;
      }
      case 'boolean':
        // The `false` subschema of additionalProperties: reported by the case above.
        break;
      case 'type': {
        const t = String(params['type']);
        push(field, `must be ${ARTICLES[t] ?? t}`);
        break;
      }
      case 'enum': {
        const allowed = (params['allowedValues'] as unknown[] | undefined) ?? [];
        push(field, `must be one of ${allowed.map(String).join(', ')}`);
        break;
      }
      case 'anyOf': {
        const prefix = `${e.schemaPath}/anyOf/`;
        // A value of the right type that breaks a limit (`bucketBy` too long): name the limit.
        const limit = errors.find(
          (b) => b.schemaPath.startsWith(prefix) && b.instancePath === e.instancePath && limitKeywords.has(b.keyword),
        );
        if (limit) {
          push(field, limitMessage(limit.keyword, (limit.params as Record<string, unknown>)['limit']));
          break;
        }
        const types = errors
          .filter((b) => b.keyword === 'type' && b.schemaPath.startsWith(prefix) && b.instancePath === e.instancePath)
          .map((b) => String((b.params as Record<string, unknown>)['type']));
        push(
          field,
          types.length > 0 ? `must be ${types.map((t) => ARTICLES[t] ?? t).join(' or ')}` : 'has the wrong type',
        );
        break;
      }
      case 'minimum':
        push(field, `must be >= ${String(params['limit'])}`);
        break;
      case 'maxLength':
      case 'maxItems':
      case 'maxProperties':
        push(field, limitMessage(e.keyword, params['limit']));
        break;
      default:
        push(field, e.message);
    }
  }
  if (out.length === 0) out.push({ field: 'body', message: 'body: does not match the expected shape' });
  return out;
}

function keyMismatch(body: unknown, pathKey: string, what: string): FieldError[] {
  const key = (body as { key?: unknown }).key;
  if (key === undefined || key === pathKey) return [];
  return [
    {
      field: 'key',
      message:
        `key: ${JSON.stringify(key)} does not match the ${what} in the path ` +
        `(${JSON.stringify(pathKey)}); keys cannot be renamed`,
    },
  ];
}

function finish<T>(value: T, errors: FieldError[]): Decoded<T> {
  return errors.length === 0 ? { ok: true, value } : { ok: false, errors };
}

/** POST flags body → a valid definition, or every reason it is not. */
export function decodeFlagCreate(body: unknown, ctx?: FlagValidationContext): Decoded<FlagDefinition> {
  if (!FlagCreateBodyValidator.Check(body)) {
    return { ok: false, errors: schemaErrorsToFieldErrors(FlagCreateBodyValidator.Errors(body)) };
  }
  const flag = normalizeFlag(body);
  return finish(flag, validateFlag(flag, ctx));
}

/** PUT flags/{flagKey} body (full replacement) → a valid definition keyed `flagKey`. */
export function decodeFlagPut(body: unknown, flagKey: string, ctx?: FlagValidationContext): Decoded<FlagDefinition> {
  if (!FlagPutBodyValidator.Check(body)) {
    return { ok: false, errors: schemaErrorsToFieldErrors(FlagPutBodyValidator.Errors(body)) };
  }
  const mismatch = keyMismatch(body, flagKey, 'flag');
  if (mismatch.length > 0) return { ok: false, errors: mismatch };
  const flag = normalizeFlag(body, { key: flagKey });
  return finish(flag, validateFlag(flag, ctx));
}

/** POST segments body → a valid segment definition. */
export function decodeSegmentCreate(body: unknown): Decoded<SegmentDefinition> {
  if (!SegmentCreateBodyValidator.Check(body)) {
    return { ok: false, errors: schemaErrorsToFieldErrors(SegmentCreateBodyValidator.Errors(body)) };
  }
  const segment = normalizeSegment(body);
  return finish(segment, validateSegment(segment));
}

/** PUT segments/{segmentKey} body (full replacement) → a valid segment keyed `segmentKey`. */
export function decodeSegmentPut(body: unknown, segmentKey: string): Decoded<SegmentDefinition> {
  if (!SegmentPutBodyValidator.Check(body)) {
    return { ok: false, errors: schemaErrorsToFieldErrors(SegmentPutBodyValidator.Errors(body)) };
  }
  const mismatch = keyMismatch(body, segmentKey, 'segment');
  if (mismatch.length > 0) return { ok: false, errors: mismatch };
  const segment = normalizeSegment(body, { key: segmentKey });
  return finish(segment, validateSegment(segment));
}

export interface EvaluateRequest {
  context: EvalContext;
  /** Only these flags; absent means every flag of the environment. */
  flagKeys?: string[];
}

function isContextScalar(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/**
 * The evaluate endpoint's body `{context, flagKeys?}`. Context errors are explained by hand
 * (TypeBox's nested-union errors would read as "not a known field").
 */
export function decodeEvaluateBody(body: unknown): Decoded<EvaluateRequest> {
  if (EvaluateBodyValidator.Check(body)) {
    const b = body as { context: EvalContext; flagKeys?: string[] };
    return {
      ok: true,
      value: b.flagKeys === undefined ? { context: b.context } : { context: b.context, flagKeys: b.flagKeys },
    };
  }
  const errors: FieldError[] = [];
  const push = (field: string, message: string): void => {
    errors.push({ field, message: `${field}: ${message}` });
  };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    push('body', 'must be an object {context, flagKeys?}');
    return { ok: false, errors };
  }
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) if (k !== 'context' && k !== 'flagKeys') push(k, 'is not a known field');
  const ctx = b['context'];
  if (ctx === undefined) push('context', 'is required');
  else if (typeof ctx !== 'object' || ctx === null || Array.isArray(ctx))
    push('context', 'must be an object such as {"key": "user-1"}');
  else {
    for (const [k, v] of Object.entries(ctx as Record<string, unknown>)) {
      if ((k === 'key' || k === 'kind') && typeof v !== 'string') push(`context.${k}`, 'must be a string');
      else if (!isContextScalar(v) && !(Array.isArray(v) && v.every(isContextScalar))) {
        push(`context.${k}`, 'must be a string, number, boolean, null or an array of those');
      }
    }
  }
  const keys = b['flagKeys'];
  if (keys !== undefined && !(Array.isArray(keys) && keys.every((k) => typeof k === 'string'))) {
    push('flagKeys', 'must be an array of flag keys');
  }
  if (errors.length === 0) push('body', 'does not match {context, flagKeys?}');
  return { ok: false, errors };
}
