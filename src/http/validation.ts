/**
 * Turns TypeBox validation errors into one sentence a user can act on, naming the field and the
 * rule ("node_count: must be integer", "key: is required", "strategy: must be one of single_leader, raft").
 */

interface TbError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message: string;
}

/** "/entries/0/key" -> "entries[0].key"; "" -> "body". */
export function fieldName(instancePath: string, extra?: string): string {
  const parts = instancePath
    .split('/')
    .filter((p) => p !== '')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  if (parts.length === 0) return 'body';
  let out = '';
  for (const p of parts) {
    if (/^\d+$/.test(p)) out += `[${p}]`;
    else out += out === '' ? p : `.${p}`;
  }
  return out;
}

export function formatValidationError(errorsIt: Iterable<unknown>): string {
  const errors = [...errorsIt] as TbError[];
  if (errors.length === 0) return 'invalid request body';
  // Prefer the most specific field: the first error at the deepest path.
  const first = errors[0] as TbError;
  const samePath = errors.filter((e) => e.instancePath === first.instancePath);
  const required = samePath.find((e) => e.keyword === 'required');
  if (required) {
    const props = (required.params['requiredProperties'] as string[] | undefined) ?? [];
    const name = props[0] ?? '';
    return `${fieldName(first.instancePath, name)}: is required`;
  }
  // typebox 1.x reports an unknown field of a closed object as `boolean` ("schema is false") at the field's path.
  if (samePath.some((e) => e.keyword === 'boolean' && e.message === 'schema is false')) {
    return `${fieldName(first.instancePath)}: is not an allowed field`;
  }
  const consts = samePath.filter((e) => e.keyword === 'const').map((e) => JSON.stringify(e.params['allowedValue']));
  if (consts.length > 0) return `${fieldName(first.instancePath)}: must be one of ${consts.join(', ')}`;
  const additional = samePath.find((e) => e.keyword === 'additionalProperties');
  if (additional) {
    const props = (additional.params['additionalProperties'] as string[] | undefined) ?? [];
    return `${fieldName(first.instancePath, props[0])}: is not an allowed field`;
  }
  const rule = samePath.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? first;
  return `${fieldName(rule.instancePath)}: ${rule.message}`;
}
