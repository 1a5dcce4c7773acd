/**
 * The flag editor's percentage rollout (served when no target or rule matches): one row per entry
 * with its variation and percent, the running total checked as you type (weights must add up to
 * 100 %), and the attribute bucketed on and the hash seed. Percents are kept as typed texts; the
 * form converts them to weights when saving.
 */
import { percentToWeight, rolloutProblem, rolloutSum, rolloutTotal, weightToPercent, type Flag } from './model.js';
import { described, FieldError, type FlagPartProps, KeySelect, RemoveButton, replaceAt } from './fields.js';

export function RolloutEditor({
  draft,
  set,
  setDraft,
  errors,
  varKeys,
  pct,
  setPct,
}: FlagPartProps & { setDraft: (f: Flag) => void; pct: string[]; setPct: (p: string[]) => void }) {
  return (
    <>
      <h4>
        Percentage rollout <span class="muted">(when no target or rule matches)</span>
      </h4>
      {draft.rollout.map((e, i) => (
        <div class="row" key={i}>
          <label>
            Rollout {i + 1} variation
            <KeySelect
              value={e.variation}
              options={varKeys}
              onChange={(variation) => set({ rollout: replaceAt(draft.rollout, i, { variation }) })}
            />
          </label>
          <label>
            Rollout {i + 1} percent
            <input
              class="pct"
              value={pct[i]}
              inputMode="decimal"
              {...described(errors, `rollout[${i}]`)}
              onInput={(ev) => setPct(pct.map((p, j) => (j === i ? ev.currentTarget.value : p)))}
            />
          </label>
          <RemoveButton
            label={`Remove rollout ${i + 1}`}
            onClick={() => {
              set({ rollout: draft.rollout.filter((_, j) => j !== i) });
              setPct(pct.filter((_, j) => j !== i));
            }}
          />
          <FieldError errors={errors} field={`rollout[${i}]`} />
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => {
          set({ rollout: [...draft.rollout, { variation: varKeys[0] ?? '', weight: 0 }] });
          setPct([...pct, '0']);
        }}
      >
        Add rollout entry
      </button>
      {draft.rollout.length > 0
        ? (() => {
            const weights = pct.map(percentToWeight);
            const sum = rolloutSum(
              weights.map((w, i) => ({
                variation: draft.rollout[i]?.variation ?? '',
                weight: Number.isNaN(w) ? 0 : w,
              })),
            );
            const problem = rolloutProblem(
              draft.rollout.map((e, i) => ({
                ...e,
                weight: Number.isNaN(weights[i] as number) ? -1 : (weights[i] as number),
              })),
              varKeys,
            );
            return (
              <p class={problem ? 'warn' : 'muted'}>
                Total {weightToPercent(sum)} % ({sum} of {rolloutTotal}){problem ? ` · ${problem}` : ''}
              </p>
            );
          })()
        : null}
      <div class="row" {...described(errors, 'rollout')}>
        <FieldError errors={errors} field="rollout" />
      </div>
      <div class="row">
        <label>
          Bucket by{' '}
          <input
            value={draft.bucketBy ?? ''}
            placeholder="key"
            {...described(errors, 'bucketBy')}
            onInput={(e) => {
              const v = e.currentTarget.value;
              const { bucketBy: _, ...rest } = draft;
              setDraft(v === '' ? rest : { ...rest, bucketBy: v });
            }}
          />
        </label>
        <label>
          Seed{' '}
          <input
            value={draft.seed ?? ''}
            placeholder="(flag key)"
            {...described(errors, 'seed')}
            onInput={(e) => {
              const v = e.currentTarget.value;
              const { seed: _, ...rest } = draft;
              setDraft(v === '' ? rest : { ...rest, seed: v });
            }}
          />
        </label>
        <FieldError errors={errors} field="bucketBy" />
        <FieldError errors={errors} field="seed" />
      </div>
    </>
  );
}
