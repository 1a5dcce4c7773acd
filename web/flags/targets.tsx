/**
 * The flag editor's individual targets (context keys served a variation before any rule) and its
 * prerequisites (other flags of the environment that must evaluate to a given variation first).
 * Both edit the draft through `set`; saving is the form's.
 */
import type { FlagsStore } from './store.js';
import { splitList, type Flag } from './model.js';
import { described, FieldError, type FlagPartProps, KeySelect, RemoveButton, replaceAt } from './fields.js';

export function TargetsEditor({ draft, set, errors, varKeys }: FlagPartProps) {
  return (
    <>
      <h4>Individual targets</h4>
      {draft.targets.map((tg, i) => (
        <div class="row" key={i}>
          <label>
            Target {i + 1} variation
            <KeySelect
              value={tg.variation}
              options={varKeys}
              onChange={(variation) => set({ targets: replaceAt(draft.targets, i, { variation }) })}
            />
          </label>
          <input
            aria-label={`Target ${i + 1} context keys`}
            class="wide"
            placeholder="context keys, comma-separated"
            value={tg.contextKeys.join(', ')}
            {...described(errors, `targets[${i}]`)}
            onChange={(e) =>
              set({ targets: replaceAt(draft.targets, i, { contextKeys: splitList(e.currentTarget.value) }) })
            }
          />
          <RemoveButton
            label={`Remove target ${i + 1}`}
            onClick={() => set({ targets: draft.targets.filter((_, j) => j !== i) })}
          />
          <FieldError errors={errors} field={`targets[${i}]`} />
        </div>
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => set({ targets: [...draft.targets, { variation: varKeys[0] ?? '', contextKeys: [] }] })}
      >
        Add target
      </button>
      <FieldError errors={errors} field="targets" />
    </>
  );
}

export function PrerequisitesEditor({
  draft,
  set,
  errors,
  store,
  otherFlags,
}: FlagPartProps & { store: FlagsStore; otherFlags: Flag[] }) {
  return (
    <>
      <h4>Prerequisites</h4>
      {draft.prerequisites.map((p, i) => (
        <div class="row" key={i}>
          <label>
            Prerequisite {i + 1} flag
            <KeySelect
              value={p.flagKey}
              options={[p.flagKey, ...otherFlags.map((f) => f.key).filter((k) => k !== p.flagKey)]}
              {...described(errors, `prerequisites[${i}]`)}
              onChange={(flagKey) => set({ prerequisites: replaceAt(draft.prerequisites, i, { flagKey }) })}
            />
          </label>
          <label>
            must be
            <KeySelect
              value={p.variation}
              options={[
                p.variation,
                ...(store.env.value.flags.get(p.flagKey)?.variations.map((v) => v.key) ?? []).filter(
                  (k) => k !== p.variation,
                ),
              ]}
              onChange={(variation) => set({ prerequisites: replaceAt(draft.prerequisites, i, { variation }) })}
            />
          </label>
          <RemoveButton
            label={`Remove prerequisite ${i + 1}`}
            onClick={() => set({ prerequisites: draft.prerequisites.filter((_, j) => j !== i) })}
          />
          <FieldError errors={errors} field={`prerequisites[${i}]`} />
        </div>
      ))}
      {otherFlags.length > 0 ? (
        <button
          type="button"
          class="secondary"
          onClick={() => {
            const o = otherFlags[0] as Flag;
            set({
              prerequisites: [...draft.prerequisites, { flagKey: o.key, variation: o.variations[0]?.key ?? '' }],
            });
          }}
        >
          Add prerequisite
        </button>
      ) : null}
      <FieldError errors={errors} field="prerequisites" />
    </>
  );
}
