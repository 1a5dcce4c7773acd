/**
 * The flag editor form: holds the draft of one flag, lays out its sections (name, variations,
 * targets, prerequisites, rules, rollout; each in its own module) and saves the whole definition
 * with If-Match. The API's validation error is shown beside the field it names, and a 412 shows
 * the conflicting version instead of overwriting it. A viewer sees the form disabled, unsaveable.
 */
import { useEffect, useState } from 'preact/hooks';
import type { FlagsStore } from './store.js';
import {
  fieldForError,
  parseVariationValue,
  percentToWeight,
  variationText,
  weightToPercent,
  type Flag,
} from './model.js';
import { ConflictPanel, described, FieldError, type SaveState } from './fields.js';
import { RulesEditor } from './clauses.js';
import { RolloutEditor } from './rollout.js';
import { PrerequisitesEditor, TargetsEditor } from './targets.js';
import { VariationsEditor } from './variations.js';

/** Every field name an error could be placed beside, for the current draft. */
function flagFields(f: Flag): string[] {
  const out = [
    'key',
    'name',
    'type',
    'enabled',
    'defaultVariation',
    'variations',
    'targets',
    'prerequisites',
    'rules',
    'rollout',
    'bucketBy',
    'seed',
  ];
  f.variations.forEach((_, i) => out.push(`variations[${i}].key`, `variations[${i}].value`));
  f.targets.forEach((_, i) => out.push(`targets[${i}]`));
  f.prerequisites.forEach((_, i) => out.push(`prerequisites[${i}]`));
  f.rules.forEach((r, i) => {
    out.push(`rules[${i}]`);
    r.clauses.forEach((_, j) =>
      out.push(
        `rules[${i}].clauses[${j}].attribute`,
        `rules[${i}].clauses[${j}].op`,
        `rules[${i}].clauses[${j}].values`,
      ),
    );
  });
  f.rollout.forEach((_, i) => out.push(`rollout[${i}]`));
  return out;
}

export function FlagEditor({ store, flag, canEdit }: { store: FlagsStore; flag: Flag; canEdit: boolean }) {
  const [draft, setDraft] = useState<Flag>(flag);
  const [base, setBase] = useState(flag.version);
  const [texts, setTexts] = useState<string[]>(flag.variations.map((v) => variationText(flag.type, v.value)));
  const [pct, setPct] = useState<string[]>(flag.rollout.map((e) => weightToPercent(e.weight)));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [save, setSave] = useState<SaveState>({ kind: 'idle' });
  const reset = (f: Flag): void => {
    setDraft(f);
    setBase(f.version);
    setTexts(f.variations.map((v) => variationText(f.type, v.value)));
    setPct(f.rollout.map((e) => weightToPercent(e.weight)));
    setErrors({});
    setSave({ kind: 'idle' });
  };
  useEffect(() => reset(flag), [flag.key]);
  const live = store.env.value.flags.get(flag.key);
  const movedOn = live !== undefined && live.version > base && save.kind !== 'conflict';
  const set = (patch: Partial<Flag>): void => setDraft({ ...draft, ...patch });
  const varKeys = draft.variations.map((v) => v.key);
  const segKeys = [...store.env.value.segments.keys()];
  const otherFlags = [...store.env.value.flags.values()].filter((f) => f.key !== flag.key);
  const part = { draft, set, errors, varKeys };

  const onSave = async (): Promise<void> => {
    const local: Record<string, string> = {};
    const variations = draft.variations.map((v, i) => {
      const p = parseVariationValue(draft.type, texts[i] ?? '');
      if (!p.ok) {
        local[`variations[${i}].value`] = `variations[${i}].value: ${p.error}`;
        return v;
      }
      return { ...v, value: p.value };
    });
    const rollout = draft.rollout.map((e, i) => {
      const w = percentToWeight(pct[i] ?? '');
      if (Number.isNaN(w)) local[`rollout[${i}]`] = `rollout[${i}].weight: a percentage from 0 to 100`;
      return { ...e, weight: Number.isNaN(w) ? e.weight : w };
    });
    if (Object.keys(local).length > 0) {
      setErrors(local);
      return;
    }
    const next = { ...draft, variations, rollout };
    const r = await store.putFlag(next, base);
    if (r.ok) {
      reset(r.body);
      setSave({ kind: 'saved', version: r.body.version });
      return;
    }
    if (r.status === 412) {
      const latest = await store.call<Flag>('GET', `${store.envPath}/flags/${encodeURIComponent(flag.key)}`);
      setSave({ kind: 'conflict', theirs: latest.ok ? latest.body : undefined, mine: next });
      return;
    }
    const placed = fieldForError(r.error, flagFields(next)) ?? 'form';
    setErrors({ [placed]: r.error });
  };

  return (
    <form
      class="editor"
      aria-label={`Flag editor ${flag.key}`}
      onSubmit={(e) => {
        e.preventDefault();
        void onSave();
      }}
    >
      <h3>
        Flag <code>{flag.key}</code> <span class="muted">version {base}</span>
      </h3>
      {movedOn ? (
        <p class="warn" role="status">
          Changed elsewhere (now version {live.version}). Saving will be refused as a conflict.{' '}
          <button type="button" class="secondary" onClick={() => reset(live)}>
            Load latest
          </button>
        </p>
      ) : null}
      <ConflictPanel
        state={save}
        onLoadLatest={() => {
          const t = save.kind === 'conflict' ? save.theirs : undefined;
          if (t) reset(t as Flag);
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
        <legend class="visually-hidden">Flag {flag.key}</legend>
        <div class="row">
          <label>
            Name{' '}
            <input
              value={draft.name}
              {...described(errors, 'name')}
              onInput={(e) => set({ name: e.currentTarget.value })}
            />
          </label>
          <FieldError errors={errors} field="name" />
          <span class="muted">type {draft.type}</span>
        </div>

        <VariationsEditor {...part} texts={texts} setTexts={setTexts} setErrors={setErrors} />
        <TargetsEditor {...part} />
        <PrerequisitesEditor {...part} store={store} otherFlags={otherFlags} />
        <RulesEditor {...part} segKeys={segKeys} />
        <RolloutEditor {...part} setDraft={setDraft} pct={pct} setPct={setPct} />
      </fieldset>
      {canEdit ? (
        <div class="row">
          <button type="submit">Save flag</button>
          <button type="button" class="secondary" onClick={() => reset(live ?? flag)}>
            Discard changes
          </button>
          {save.kind === 'saved' ? (
            <span class="ok" role="status">
              Saved as version {save.version}
            </span>
          ) : null}
        </div>
      ) : (
        <p class="muted">You are a viewer: flags are read-only.</p>
      )}
    </form>
  );
}
