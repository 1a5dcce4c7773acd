/**
 * The evaluation debugger and the audit log. The debugger sends a context (JSON, recent ones kept)
 * to the environment's evaluate endpoint and shows, for the chosen flag, the variation, value and
 * reason, and the rules checked: the matched one with each clause and the value that satisfied it,
 * earlier ones with the clause that failed them (explain.ts). For a rollout it draws the context's
 * bucket on the rollout's ruler (SubtleCrypto's SHA-1, the service's algorithm). The audit log lists
 * changes newest first with a diff each, filterable by flag and author.
 */
import { useEffect, useState } from 'preact/hooks';
import type { FlagsStore } from './store.js';
import {
  bucketFromSha1Hex,
  bucketHashInput,
  diffJson,
  parseContext,
  rememberContext,
  rulerSpans,
  shortJson,
  spanOfBucket,
  weightToPercent,
  type Flag,
  type JsonValue,
  type Segment,
} from './model.js';
import { explainReason } from './explain.js';

interface EvalResult {
  value: JsonValue;
  variation: string | null;
  reason: { kind: string; ruleId?: string; prerequisiteKey?: string; inRollout?: boolean; errorKind?: string };
}

/** The palette of the ruler's spans (each passes 3:1 against white text on it). */
const spanColours = ['#1d4ed8', '#b45309', '#047857', '#7c3aed', '#be123c', '#0f766e'];

async function bucketOf(flag: Flag, context: Record<string, unknown>): Promise<number> {
  const input = bucketHashInput(flag, context);
  if (input === undefined) return 0;
  const digest = await crypto.subtle.digest('SHA-1', new TextEncoder().encode(input));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return bucketFromSha1Hex(hex);
}

export function RolloutRuler({ flag, bucket }: { flag: Flag; bucket: number }) {
  const spans = rulerSpans(flag.rollout);
  const hit = spanOfBucket(flag.rollout, bucket);
  const hitVar = flag.rollout[hit]?.variation ?? '';
  const w = 600;
  const label = `Rollout ruler`;
  const x = (f: number): number => Math.round(f * w * 10) / 10;
  const shares = spans.map((s) => `${s.variation} ${weightToPercent((s.end - s.start) * 100000)} %`).join(', ');
  const desc = `${shares}; bucket ${bucket.toFixed(5)} falls in ${hitVar}`;
  return (
    <figure class="ruler">
      <svg role="img" aria-label={label} viewBox={`0 0 ${w} 56`} width="100%" height="56">
        <title>{label}</title>
        <desc>{desc}</desc>
        {spans.map((s, i) => (
          <g key={i}>
            <rect
              x={x(s.start)}
              y={8}
              width={Math.max(0, x(s.end) - x(s.start))}
              height={26}
              fill={spanColours[i % spanColours.length]}
              opacity={i === hit ? 1 : 0.55}
            />
            {s.end - s.start > 0.06 ? (
              <text x={x(s.start) + 4} y={26} fill="#fff" font-size="12">
                {s.variation}
              </text>
            ) : null}
          </g>
        ))}
        <line x1={x(bucket)} x2={x(bucket)} y1={2} y2={40} stroke="#0f172a" stroke-width={3} />
        <text
          x={Math.min(x(bucket), w - 90)}
          y={53}
          font-size="12"
          fill="#0f172a"
        >{`bucket ${bucket.toFixed(4)}`}</text>
      </svg>
      <figcaption class="muted">
        {spans.map((s) => `${s.variation}: ${weightToPercent((s.end - s.start) * 100000)} %`).join(' · ')} — this
        context's bucket is {bucket.toFixed(5)}, inside <strong>{hitVar}</strong>'s range.
      </figcaption>
    </figure>
  );
}

/**
 * The rules checked for the evaluated context: the rule the service names with every clause and
 * the value that satisfied it, and each rule before it with the clause that failed it.
 */
function RuleTrace({
  flag,
  context,
  segments,
  ruleId,
}: {
  flag: Flag;
  context: Record<string, unknown>;
  segments: ReadonlyMap<string, Segment>;
  ruleId: string | undefined;
}) {
  if (flag.rules.length === 0) return null;
  const { rules, matchedIndex, agrees } = explainReason(flag, context, segments, ruleId);
  const matched = rules[matchedIndex];
  return (
    <div class="trace">
      {matched ? (
        <p>
          Matched rule {matched.index + 1} (<code>{matched.id}</code>): all {matched.clauses.length} clause
          {matched.clauses.length === 1 ? '' : 's'} held.
        </p>
      ) : (
        <p>No rule matched this context.</p>
      )}
      <ol aria-label="Rules checked">
        {rules.map((r) => {
          const failed = r.clauses.find((c) => !c.matched);
          return (
            <li key={r.index} class={r.matched ? 'ok' : 'muted'}>
              Rule {r.index + 1} <code>{r.id}</code>:{' '}
              {r.matched ? 'matched' : `failed at clause ${(failed?.index ?? 0) + 1}`}
              <ul>
                {r.clauses.map((c) => (
                  <li
                    key={c.index}
                    class={c === failed ? 'failed' : c.matched ? 'held' : 'unchecked'}
                    aria-label={`Rule ${r.index + 1} clause ${c.index + 1} ${c.matched ? 'matched' : 'did not match'}`}
                  >
                    <span aria-hidden="true">{c.matched ? '✓' : '✗'}</span> clause {c.index + 1}: {c.detail}
                  </li>
                ))}
              </ul>
            </li>
          );
        })}
      </ol>
      {agrees ? null : (
        <p class="warn">
          The page's own check of these clauses differs from the service's answer (the flag may have changed since).
        </p>
      )}
    </div>
  );
}

export function Debugger({ store }: { store: FlagsStore }) {
  const [text, setText] = useState('{"key": "user-1"}');
  const [recent, setRecent] = useState<string[]>([]);
  const [chosen, setChosen] = useState('');
  const [results, setResults] = useState<Record<string, EvalResult> | undefined>(undefined);
  const [error, setError] = useState('');
  const [bucket, setBucket] = useState<number | undefined>(undefined);
  const [evaluated, setEvaluated] = useState<Record<string, unknown> | undefined>(undefined);
  const flags = [...store.env.value.flags.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
  const selected = store.selectedFlag.value;
  useEffect(() => {
    if (selected !== undefined) setChosen(selected);
  }, [selected]);
  const key = chosen !== '' && store.env.value.flags.has(chosen) ? chosen : (flags[0]?.key ?? '');
  const flag = store.env.value.flags.get(key);

  const evaluate = async (): Promise<void> => {
    const ctx = parseContext(text);
    if (!ctx.ok) {
      setError(ctx.error);
      return;
    }
    setError('');
    setRecent(rememberContext(recent, text));
    const r = await store.call<{ flags: Record<string, EvalResult> }>('POST', `${store.envPath}/evaluate`, {
      context: ctx.value,
    });
    if (!r.ok) {
      setError(r.error);
      return;
    }
    setResults(r.body.flags);
    setEvaluated(ctx.value);
    setBucket(flag && flag.rollout.length > 0 ? await bucketOf(flag, ctx.value) : undefined);
  };
  const res = results?.[key];
  return (
    <section class="panel" aria-label="Evaluation debugger">
      <h2>Evaluation debugger</h2>
      <div class="row">
        <label class="block">
          Context
          <textarea
            rows={4}
            class="json"
            spellcheck={false}
            value={text}
            aria-invalid={error !== '' ? true : undefined}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </label>
      </div>
      <div class="row">
        <label>
          Recent contexts
          <select
            value=""
            onChange={(e) => {
              if (e.currentTarget.value !== '') setText(e.currentTarget.value);
            }}
          >
            <option value="">{recent.length === 0 ? '(none yet)' : 'pick one…'}</option>
            {recent.map((r) => (
              <option key={r} value={r}>
                {shortJson(JSON.parse(r) as unknown, 60)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Flag to explain
          <select value={key} onChange={(e) => setChosen(e.currentTarget.value)}>
            {flags.map((f) => (
              <option key={f.key} value={f.key}>
                {f.key}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => void evaluate()}>
          Evaluate
        </button>
      </div>
      {error !== '' ? (
        <p class="error" role="alert">
          {error}
        </p>
      ) : null}
      <div role="status" aria-label="Evaluation result" class="status-line">
        {res
          ? `${key}: variation ${res.variation ?? '(none)'} · value ${JSON.stringify(res.value)} · ` +
            `reason ${res.reason.kind}` +
            (res.reason.inRollout ? ' (in rollout)' : '') +
            (res.reason.ruleId !== undefined ? ` · rule ${res.reason.ruleId}` : '') +
            (res.reason.prerequisiteKey !== undefined ? ` · prerequisite ${res.reason.prerequisiteKey}` : '') +
            (res.reason.errorKind !== undefined ? ` · ${res.reason.errorKind}` : '')
          : results
            ? `${key}: not evaluated`
            : ''}
      </div>
      {res && flag && evaluated && (res.reason.kind === 'RULE_MATCH' || res.reason.kind === 'FALLTHROUGH') ? (
        <RuleTrace flag={flag} context={evaluated} segments={store.env.value.segments} ruleId={res.reason.ruleId} />
      ) : null}
      {flag && bucket !== undefined && flag.rollout.length > 0 ? <RolloutRuler flag={flag} bucket={bucket} /> : null}
      {results ? (
        <table class="results">
          <caption class="visually-hidden">Every flag for this context</caption>
          <thead>
            <tr>
              <th scope="col">Flag</th>
              <th scope="col">Variation</th>
              <th scope="col">Value</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(results)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, r]) => (
                <tr key={k}>
                  <td>{k}</td>
                  <td>{r.variation ?? ''}</td>
                  <td>
                    <code>{shortJson(r.value, 40)}</code>
                  </td>
                  <td>
                    {r.reason.kind}
                    {r.reason.ruleId ? ` ${r.reason.ruleId}` : ''}
                  </td>
                </tr>
              ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** An ISO time as `2026-01-01 12:00:00Z` (no milliseconds). */
const shortTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

export function AuditLog({ store }: { store: FlagsStore }) {
  const [flagFilter, setFlagFilter] = useState('');
  const [author, setAuthor] = useState('');
  const records = store.audit.value;
  const authors = [...new Set(records.map((r) => r.actor))].sort();
  const shown = records.filter(
    (r) => (flagFilter === '' || r.resourceKey.includes(flagFilter)) && (author === '' || r.actor === author),
  );
  return (
    <section class="panel" aria-label="Audit log">
      <h2>
        Audit log <span class="muted">(newest first)</span>
      </h2>
      <div class="row">
        <label>
          Filter by key <input value={flagFilter} onInput={(e) => setFlagFilter(e.currentTarget.value)} />
        </label>
        <label>
          Filter by author
          <select value={author} onChange={(e) => setAuthor(e.currentTarget.value)}>
            <option value="">everyone</option>
            {authors.map((a) => (
              <option key={a} value={a}>
                {a}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="secondary" onClick={() => void store.loadAudit()}>
          Reload audit
        </button>
      </div>
      <ol class="audit" tabIndex={0} aria-label="Audit records">
        {shown.map((r) => (
          <li key={r.id}>
            <div>
              <time dateTime={r.at}>{shortTime(r.at)}</time> · {r.actor} · {r.action} {r.resource}{' '}
              <strong>{r.resourceKey}</strong>
              {r.environmentKey ? ` in ${r.environmentKey}` : ''} · version {r.version}
            </div>
            <ul class="diff">
              {diffJson(r.before, r.after).map((d, i) => (
                <li key={i} class={d.kind}>
                  <code>{d.path}</code>{' '}
                  {d.kind === 'changed'
                    ? `${shortJson(d.before)} → ${shortJson(d.after)}`
                    : d.kind === 'added'
                      ? `+ ${shortJson(d.after)}`
                      : `− ${shortJson(d.before)}`}
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ol>
      {shown.length === 0 ? (
        <p class="muted">No changes recorded{records.length > 0 ? ' match the filters' : ''}.</p>
      ) : null}
    </section>
  );
}
