/**
 * The variations section of the flag editor: one row per variation with a value input fitting the
 * flag's type (a true/false picker, an integer box, a string box, or a JSON textarea validated as
 * you type, its error shown beside it), and the default variation. Values are kept as the typed
 * texts; the form converts them when saving.
 */
import { parseVariationValue } from './model.js';
import { described, FieldError, type FlagPartProps, KeySelect, RemoveButton } from './fields.js';

export function VariationsEditor({
  draft,
  set,
  errors,
  varKeys,
  texts,
  setTexts,
  setErrors,
}: FlagPartProps & {
  texts: string[];
  setTexts: (t: string[]) => void;
  setErrors: (e: Record<string, string>) => void;
}) {
  return (
    <>
      <h4>Variations</h4>
      {draft.variations.map((v, i) => (
        <div class="row variation" key={i}>
          <input
            aria-label={`Variation ${i + 1} key`}
            value={v.key}
            {...described(errors, `variations[${i}].key`)}
            onInput={(e) =>
              set({
                variations: draft.variations.map((x, j) => (j === i ? { ...x, key: e.currentTarget.value } : x)),
              })
            }
          />
          {draft.type === 'json' ? (
            <textarea
              aria-label={`Variation ${i + 1} value`}
              rows={3}
              class="json"
              spellcheck={false}
              value={texts[i]}
              {...described(errors, `variations[${i}].value`)}
              onInput={(e) => {
                const text = e.currentTarget.value;
                setTexts(texts.map((t, j) => (j === i ? text : t)));
                const p = parseVariationValue('json', text);
                const { [`variations[${i}].value`]: _, ...rest } = errors;
                setErrors(p.ok ? rest : { ...rest, [`variations[${i}].value`]: `variations[${i}].value: ${p.error}` });
              }}
            />
          ) : draft.type === 'boolean' ? (
            <select
              aria-label={`Variation ${i + 1} value`}
              value={texts[i]}
              onChange={(e) => setTexts(texts.map((t, j) => (j === i ? e.currentTarget.value : t)))}
            >
              <option value="true">true</option>
              <option value="false">false</option>
            </select>
          ) : (
            <input
              aria-label={`Variation ${i + 1} value`}
              value={texts[i]}
              inputMode={draft.type === 'integer' ? 'numeric' : undefined}
              {...described(errors, `variations[${i}].value`)}
              onInput={(e) => setTexts(texts.map((t, j) => (j === i ? e.currentTarget.value : t)))}
            />
          )}
          <RemoveButton
            label={`Remove variation ${i + 1}`}
            onClick={() => {
              set({ variations: draft.variations.filter((_, j) => j !== i) });
              setTexts(texts.filter((_, j) => j !== i));
            }}
          />
          <FieldError errors={errors} field={`variations[${i}].key`} />
          <FieldError errors={errors} field={`variations[${i}].value`} />
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => {
          set({ variations: [...draft.variations, { key: `v${draft.variations.length + 1}`, value: null }] });
          setTexts([
            ...texts,
            draft.type === 'boolean' ? 'false' : draft.type === 'integer' ? '0' : draft.type === 'json' ? '{}' : '',
          ]);
        }}
      >
        Add variation
      </button>
      <FieldError errors={errors} field="variations" />
      <div class="row">
        <label>
          Default variation
          <KeySelect
            value={draft.defaultVariation}
            options={varKeys}
            {...described(errors, 'defaultVariation')}
            onChange={(defaultVariation) => set({ defaultVariation })}
          />
        </label>
        <FieldError errors={errors} field="defaultVariation" />
      </div>
    </>
  );
}
