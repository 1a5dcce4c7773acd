/**
 * The pieces every editor form shares: an API error placed beside its field (with the field's
 * aria-describedby pointing at it), the save state of a form, the panel that shows a conflicting
 * edit (a 412 on If-Match) instead of overwriting it, the props of a flag editor's sections, and the
 * row parts every list editor repeats (a select of keys, a remove button, replacing one item of a
 * list). No fetching and no state of its own.
 */
import type { Flag, Segment } from './model.js';
import { diffJson, shortJson } from './model.js';

/** What every section of the flag editor gets: the draft, a patcher, the placed errors, the variation keys. */
export interface FlagPartProps {
  draft: Flag;
  set: (patch: Partial<Flag>) => void;
  errors: Record<string, string>;
  varKeys: string[];
}

/** An error placed beside a field (found by tests and screen readers through the field's aria-describedby). */
export function FieldError({ errors, field }: { errors: Record<string, string>; field: string }) {
  const msg = errors[field];
  if (msg === undefined) return null;
  return (
    <span class="field-error error" id={`err-${field}`} data-field={field} role="alert">
      {msg}
    </span>
  );
}

export const described = (
  errors: Record<string, string>,
  field: string,
): { 'aria-describedby'?: string; 'aria-invalid'?: boolean } =>
  errors[field] !== undefined ? { 'aria-describedby': `err-${field}`, 'aria-invalid': true } : {};

/** `list` with item `i` patched (the list editors' one way of changing a row). */
export const replaceAt = <T,>(list: readonly T[], i: number, patch: Partial<T>): T[] =>
  list.map((x, j) => (j === i ? { ...x, ...patch } : x));

/** A select of keys (variations, flags, operators); `extra` props carry aria-label or aria-describedby. */
export function KeySelect({
  value,
  options,
  onChange,
  ...extra
}: {
  value: string;
  options: readonly string[];
  onChange: (value: string) => void;
  'aria-label'?: string;
  'aria-describedby'?: string;
  'aria-invalid'?: boolean;
}) {
  return (
    <select value={value} {...extra} onChange={(e) => onChange(e.currentTarget.value)}>
      {options.map((k) => (
        <option key={k} value={k}>
          {k}
        </option>
      ))}
    </select>
  );
}

/** The ✕ button that removes a row; `label` is its accessible name ("Remove target 2"). */
export function RemoveButton({ label, onClick }: { label: string; onClick: () => void }) {
  return (
    <button type="button" class="secondary" aria-label={label} onClick={onClick}>
      ✕
    </button>
  );
}

export type SaveState =
  | { kind: 'idle' }
  | { kind: 'saved'; version: number }
  | { kind: 'conflict'; theirs: Flag | Segment | undefined; mine: Flag | Segment };

export function ConflictPanel({
  state,
  onLoadLatest,
  onKeepMine,
}: {
  state: SaveState;
  onLoadLatest: () => void;
  onKeepMine: () => void;
}) {
  if (state.kind !== 'conflict') return null;
  const theirs = state.theirs;
  const diff = theirs ? diffJson(theirs, state.mine) : [];
  return (
    <div class="conflict" role="alert" aria-label="Edit conflict">
      <strong>Conflict:</strong> this was changed elsewhere{theirs ? ` (now version ${theirs.version})` : ''} while you
      edited it. Your edit was <strong>not</strong> saved, and theirs was not overwritten.
      {diff.length > 0 ? (
        <ul class="diff">
          {diff.map((d) => (
            <li key={d.path}>
              <code>{d.path}</code>: theirs {shortJson(d.before)} → yours {shortJson(d.after)}
            </li>
          ))}
        </ul>
      ) : null}
      <div class="row">
        <button type="button" onClick={onLoadLatest}>
          Load latest
        </button>
        <button type="button" class="secondary" onClick={onKeepMine}>
          Keep my edit on top of the latest
        </button>
      </div>
    </div>
  );
}
