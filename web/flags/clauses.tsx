/**
 * The clause row (attribute, negation, any of the operators including semver, dates and
 * segmentMatch, values) shared by flag rules and segment rules, and the flag's ordered rules list
 * (id, served variation, clauses ANDed). It edits a draft through callbacks; saving is the form's.
 */
import { CLAUSE_OPS, splitList, type Clause, type ClauseOp } from './model.js';
import { described, FieldError, type FlagPartProps, KeySelect, RemoveButton, replaceAt } from './fields.js';

/** Hints for the values of a clause, by operator family. */
function valuesHint(op: ClauseOp): string {
  if (op.startsWith('semver')) return 'versions, e.g. 2.1.0, 3';
  if (op === 'before' || op === 'after') return 'RFC 3339 dates or Unix ms, e.g. 2026-01-01T00:00:00Z';
  if (op === 'lt' || op === 'lte' || op === 'gt' || op === 'gte') return 'numbers, e.g. 18';
  if (op === 'matches') return 'regular expressions';
  if (op === 'segmentMatch') return 'segment keys';
  return 'values, comma-separated';
}

export function ClauseRow({
  clause,
  label,
  field,
  errors,
  segments,
  onChange,
  onRemove,
  segmentMode,
}: {
  clause: Clause;
  label: string;
  field: string;
  errors: Record<string, string>;
  segments: string[];
  onChange: (c: Clause) => void;
  onRemove: () => void;
  segmentMode: boolean;
}) {
  const ops = segmentMode ? CLAUSE_OPS.filter((o) => o !== 'segmentMatch') : CLAUSE_OPS;
  return (
    <div class="clause row">
      <input
        aria-label={`${label} attribute`}
        placeholder={clause.op === 'segmentMatch' ? '(none)' : 'attribute'}
        value={clause.attribute}
        disabled={clause.op === 'segmentMatch'}
        {...described(errors, `${field}.attribute`)}
        onInput={(e) => onChange({ ...clause, attribute: e.currentTarget.value })}
      />
      <label>
        <input
          type="checkbox"
          aria-label={`${label} not`}
          checked={clause.negate === true}
          onChange={(e) => onChange({ ...clause, negate: e.currentTarget.checked })}
        />
        not
      </label>
      <KeySelect
        aria-label={`${label} operator`}
        value={clause.op}
        options={ops}
        {...described(errors, `${field}.op`)}
        onChange={(value) => {
          const op = value as ClauseOp;
          onChange({
            ...clause,
            op,
            attribute: op === 'segmentMatch' ? '' : clause.attribute === '' ? 'key' : clause.attribute,
          });
        }}
      />
      <input
        aria-label={`${label} values`}
        placeholder={valuesHint(clause.op)}
        value={clause.values.join(', ')}
        class="wide"
        list={clause.op === 'segmentMatch' ? 'segment-keys' : undefined}
        {...described(errors, `${field}.values`)}
        onChange={(e) => onChange({ ...clause, values: splitList(e.currentTarget.value) })}
      />
      <RemoveButton label={`Remove ${label}`} onClick={onRemove} />
      <FieldError errors={errors} field={`${field}.attribute`} />
      <FieldError errors={errors} field={`${field}.op`} />
      <FieldError errors={errors} field={`${field}.values`} />
      {segments.length === 0 && clause.op === 'segmentMatch' ? (
        <span class="muted">no segments in this project yet</span>
      ) : null}
    </div>
  );
}

/** The flag's rules, tried in order; each serves its variation when all its clauses match. */
export function RulesEditor({ draft, set, errors, varKeys, segKeys }: FlagPartProps & { segKeys: string[] }) {
  return (
    <>
      <h4>Rules</h4>
      {draft.rules.map((r, i) => (
        <fieldset class="rule" key={i}>
          <legend>Rule {i + 1}</legend>
          <div class="row">
            <label>
              Rule {i + 1} id{' '}
              <input
                value={r.id}
                onInput={(e) => set({ rules: replaceAt(draft.rules, i, { id: e.currentTarget.value }) })}
              />
            </label>
            <label>
              serves
              <KeySelect
                aria-label={`Rule ${i + 1} variation`}
                value={r.variation}
                options={varKeys}
                onChange={(variation) => set({ rules: replaceAt(draft.rules, i, { variation }) })}
              />
            </label>
            <RemoveButton
              label={`Remove rule ${i + 1}`}
              onClick={() => set({ rules: draft.rules.filter((_, j) => j !== i) })}
            />
            <FieldError errors={errors} field={`rules[${i}]`} />
          </div>
          <ClauseList
            name={`Rule ${i + 1}`}
            field={`rules[${i}]`}
            clauses={r.clauses}
            errors={errors}
            segments={segKeys}
            segmentMode={false}
            onChange={(clauses) => set({ rules: replaceAt(draft.rules, i, { clauses }) })}
          />
        </fieldset>
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() =>
          set({
            rules: [
              ...draft.rules,
              {
                id: `rule-${Date.now().toString(36)}`,
                variation: varKeys[0] ?? '',
                clauses: [{ attribute: 'key', op: 'in', values: [] }],
              },
            ],
          })
        }
      >
        Add rule
      </button>
      <FieldError errors={errors} field="rules" />
    </>
  );
}

/**
 * A rule's clauses (a flag rule's or a segment rule's): one ClauseRow each, and the button that adds
 * one. `name` is the rule's name in labels ("Rule 2", "Segment rule 1"); `field` its error path.
 */
export function ClauseList({
  name,
  field,
  clauses,
  errors,
  segments,
  segmentMode,
  onChange,
}: {
  name: string;
  field: string;
  clauses: Clause[];
  errors: Record<string, string>;
  segments: string[];
  segmentMode: boolean;
  onChange: (clauses: Clause[]) => void;
}) {
  return (
    <>
      {clauses.map((c, j) => (
        <ClauseRow
          key={j}
          clause={c}
          label={`${name} clause ${j + 1}`}
          field={`${field}.clauses[${j}]`}
          errors={errors}
          segments={segments}
          segmentMode={segmentMode}
          onChange={(nc) => onChange(clauses.map((y, m) => (m === j ? nc : y)))}
          onRemove={() => onChange(clauses.filter((_, m) => m !== j))}
        />
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => onChange([...clauses, { attribute: 'key', op: 'in', values: [] }])}
      >
        Add clause to {name.toLowerCase()}
      </button>
    </>
  );
}
