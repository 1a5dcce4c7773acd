/**
 * The segment editor: a segment's name, its included and excluded context keys, and its rules
 * (ORed; each rule's clauses ANDed, every operator but segmentMatch). Saving sends the whole
 * segment with If-Match; an API error is shown beside its field and a 412 shows the conflict.
 */
import { useEffect, useState } from 'preact/hooks';
import type { FlagsStore } from './store.js';
import { fieldForError, splitList, type Segment } from './model.js';
import { ClauseList } from './clauses.js';
import { ConflictPanel, described, FieldError, replaceAt, type SaveState } from './fields.js';

export function SegmentEditor({ store, segment, canEdit }: { store: FlagsStore; segment: Segment; canEdit: boolean }) {
  const [draft, setDraft] = useState<Segment>(segment);
  const [base, setBase] = useState(segment.version);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [save, setSave] = useState<SaveState>({ kind: 'idle' });
  const reset = (s: Segment): void => {
    setDraft(s);
    setBase(s.version);
    setErrors({});
    setSave({ kind: 'idle' });
  };
  useEffect(() => reset(segment), [segment.key]);
  const set = (patch: Partial<Segment>): void => setDraft({ ...draft, ...patch });
  const fields = [
    'name',
    'included',
    'excluded',
    'rules',
    ...draft.rules.flatMap((r, i) => [
      `rules[${i}]`,
      ...r.clauses.flatMap((_, j) => [
        `rules[${i}].clauses[${j}].attribute`,
        `rules[${i}].clauses[${j}].op`,
        `rules[${i}].clauses[${j}].values`,
      ]),
    ]),
  ];
  const onSave = async (): Promise<void> => {
    const r = await store.putSegment(draft, base);
    if (r.ok) {
      reset(r.body);
      setSave({ kind: 'saved', version: r.body.version });
    } else if (r.status === 412) {
      const latest = await store.call<Segment>(
        'GET',
        `${store.projectPath}/segments/${encodeURIComponent(segment.key)}`,
      );
      setSave({ kind: 'conflict', theirs: latest.ok ? latest.body : undefined, mine: draft });
    } else setErrors({ [fieldForError(r.error, fields) ?? 'form']: r.error });
  };
  return (
    <form
      class="editor"
      aria-label={`Segment editor ${segment.key}`}
      onSubmit={(e) => {
        e.preventDefault();
        void onSave();
      }}
    >
      <h3>
        Segment <code>{segment.key}</code> <span class="muted">version {base}</span>
      </h3>
      <ConflictPanel
        state={save}
        onLoadLatest={() => {
          if (save.kind === 'conflict' && save.theirs) reset(save.theirs as Segment);
        }}
        onKeepMine={() => {
          if (save.kind === 'conflict' && save.theirs) {
            setBase(save.theirs.version);
            setSave({ kind: 'idle' });
          }
        }}
      />
      <FieldError errors={errors} field="form" />
      <fieldset disabled={!canEdit}>
        <legend class="visually-hidden">Segment {segment.key}</legend>
        <div class="row">
          <label>
            Segment name <input value={draft.name} onInput={(e) => set({ name: e.currentTarget.value })} />
          </label>
          <FieldError errors={errors} field="name" />
        </div>
        <div class="row">
          <label>
            Included{' '}
            <textarea
              rows={2}
              value={draft.included.join(', ')}
              {...described(errors, 'included')}
              onChange={(e) => set({ included: splitList(e.currentTarget.value) })}
            />
          </label>
          <FieldError errors={errors} field="included" />
          <label>
            Excluded{' '}
            <textarea
              rows={2}
              value={draft.excluded.join(', ')}
              {...described(errors, 'excluded')}
              onChange={(e) => set({ excluded: splitList(e.currentTarget.value) })}
            />
          </label>
          <FieldError errors={errors} field="excluded" />
        </div>
        {draft.rules.map((r, i) => (
          <fieldset class="rule" key={i}>
            <legend>Segment rule {i + 1}</legend>
            <ClauseList
              name={`Segment rule ${i + 1}`}
              field={`rules[${i}]`}
              clauses={r.clauses}
              errors={errors}
              segments={[]}
              segmentMode
              onChange={(clauses) => set({ rules: replaceAt(draft.rules, i, { clauses }) })}
            />
            <button
              type="button"
              class="secondary"
              onClick={() => set({ rules: draft.rules.filter((_, k) => k !== i) })}
            >
              Remove segment rule {i + 1}
            </button>
            <FieldError errors={errors} field={`rules[${i}]`} />
          </fieldset>
        ))}
        <button
          type="button"
          class="secondary"
          onClick={() => set({ rules: [...draft.rules, { clauses: [{ attribute: 'key', op: 'in', values: [] }] }] })}
        >
          Add segment rule
        </button>
        <FieldError errors={errors} field="rules" />
      </fieldset>
      {canEdit ? (
        <div class="row">
          <button type="submit">Save segment</button>
          {save.kind === 'saved' ? (
            <span class="ok" role="status">
              Saved as version {save.version}
            </span>
          ) : null}
        </div>
      ) : null}
    </form>
  );
}
