/**
 * The flags console's shell: the sign-in form, the signed-in header (who, role, stream state,
 * Sign out), the Project and Environment pickers, the flags table with its search and one
 * `Enabled <key>` switch per flag, and the panels (editors, debugger, audit). A viewer's switches
 * and editors are disabled; the API would refuse their writes anyway.
 */
import { useState } from 'preact/hooks';
import type { FlagsStore } from './store.js';
import { AuditLog, Debugger } from './debugger.js';
import { FlagEditor } from './editor.js';
import { SegmentEditor } from './segment-editor.js';
import { FLAG_TYPES, filterFlags, flagRowsPageMax, flagsPage, flagTags, type Flag, type FlagType } from './model.js';

function SignIn({ store }: { store: FlagsStore }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <main>
      <section class="panel signin" aria-label="Sign in">
        <h2>Sign in</h2>
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setBusy(true);
            await store.signIn(email, password);
            setBusy(false);
          }}
        >
          <div class="row">
            <label>
              Email{' '}
              <input
                type="email"
                autoComplete="username"
                value={email}
                onInput={(e) => setEmail(e.currentTarget.value)}
                required
              />
            </label>
          </div>
          <div class="row">
            <label>
              Password{' '}
              <input
                type="password"
                autoComplete="current-password"
                value={password}
                onInput={(e) => setPassword(e.currentTarget.value)}
                required
              />
            </label>
          </div>
          <button type="submit" disabled={busy}>
            Sign in
          </button>
          {store.signInError.value !== '' ? (
            <p class="error" role="alert">
              {store.signInError.value}
            </p>
          ) : null}
        </form>
      </section>
    </main>
  );
}

/** Default variations of a new flag per type. */
function newFlagBody(key: string, type: FlagType): Record<string, unknown> {
  const variations =
    type === 'boolean'
      ? [
          { key: 'on', value: true },
          { key: 'off', value: false },
        ]
      : type === 'integer'
        ? [
            { key: 'zero', value: 0 },
            { key: 'one', value: 1 },
          ]
        : type === 'string'
          ? [
              { key: 'a', value: 'a' },
              { key: 'b', value: 'b' },
            ]
          : [
              { key: 'empty', value: {} },
              { key: 'sample', value: { enabled: true } },
            ];
  return { key, name: key, type, enabled: false, variations, defaultVariation: variations[1]?.key };
}

function CreateForms({ store }: { store: FlagsStore }) {
  const [p, setP] = useState('');
  const [e, setE] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [type, setType] = useState<FlagType>('boolean');
  const [segKey, setSegKey] = useState('');
  const [msg, setMsg] = useState('');
  const hasEnv = store.environment.value !== '';
  return (
    <details class="create">
      <summary>Create…</summary>
      <form
        class="row"
        onSubmit={async (ev) => {
          ev.preventDefault();
          setMsg((await store.createEnvironment(p, e)) ?? `opened ${p}/${e}`);
        }}
      >
        <label>
          New project <input value={p} onInput={(ev) => setP(ev.currentTarget.value)} required />
        </label>
        <label>
          New environment <input value={e} onInput={(ev) => setE(ev.currentTarget.value)} required />
        </label>
        <button type="submit">Create environment</button>
      </form>
      {hasEnv ? (
        <form
          class="row"
          onSubmit={async (ev) => {
            ev.preventDefault();
            const r = await store.call<Flag>('POST', `${store.envPath}/flags`, newFlagBody(flagKey, type));
            setMsg(r.ok ? `created flag ${flagKey}` : r.error);
            if (r.ok) store.selectedFlag.value = flagKey;
          }}
        >
          <label>
            New flag key <input value={flagKey} onInput={(ev) => setFlagKey(ev.currentTarget.value)} required />
          </label>
          <label>
            Type
            <select value={type} onChange={(ev) => setType(ev.currentTarget.value as FlagType)}>
              {FLAG_TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Create flag</button>
        </form>
      ) : null}
      {hasEnv ? (
        <form
          class="row"
          onSubmit={async (ev) => {
            ev.preventDefault();
            const r = await store.call('POST', `${store.projectPath}/segments`, {
              key: segKey,
              name: segKey,
              included: [],
              excluded: [],
              rules: [],
            });
            setMsg(r.ok ? `created segment ${segKey}` : r.error);
            if (r.ok) store.selectedSegment.value = segKey;
          }}
        >
          <label>
            New segment key <input value={segKey} onInput={(ev) => setSegKey(ev.currentTarget.value)} required />
          </label>
          <button type="submit">Create segment</button>
        </form>
      ) : null}
      <p class="status-line" aria-live="polite">
        {msg}
      </p>
    </details>
  );
}

function FlagsTable({ store, canEdit }: { store: FlagsStore; canEdit: boolean }) {
  const [query, setQuery] = useState('');
  const [pages, setPages] = useState(0);
  const flags = filterFlags(store.env.value.flags.values(), query);
  const { rows, hidden } = flagsPage(flags, pages);
  return (
    <section class="panel" aria-label="Flags">
      <h2>
        Flags{' '}
        <span class="muted">
          ({flags.length} of {store.env.value.flags.size})
        </span>
      </h2>
      <div class="row">
        <label>
          Search flags{' '}
          <input
            type="search"
            value={query}
            placeholder="key, name, on/off, tag:rollout"
            onInput={(e) => {
              setQuery(e.currentTarget.value);
              setPages(0);
            }}
          />
        </label>
      </div>
      <table class="flags">
        <thead>
          <tr>
            <th scope="col">Key</th>
            <th scope="col">Name</th>
            <th scope="col">Tags</th>
            <th scope="col">Status</th>
            <th scope="col">On/off</th>
            <th scope="col">Version</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((f) => (
            <tr key={f.key} class={store.selectedFlag.value === f.key ? 'selected' : ''}>
              <td>
                <code>{f.key}</code>
              </td>
              <td>{f.name}</td>
              <td>
                {flagTags(f).map((t) => (
                  <span key={t} class="tag">
                    {t}
                  </span>
                ))}
              </td>
              <td class={f.enabled ? 'ok' : 'muted'}>{f.enabled ? 'on' : 'off'}</td>
              <td>
                <button
                  type="button"
                  role="switch"
                  class={`switch ${f.enabled ? 'on' : ''}`}
                  aria-checked={f.enabled}
                  aria-label={`Enabled ${f.key}`}
                  disabled={!canEdit}
                  onClick={() => void store.toggle(f.key)}
                >
                  <span aria-hidden="true">{f.enabled ? 'ON' : 'OFF'}</span>
                </button>
              </td>
              <td>{f.version}</td>
              <td>
                <button
                  type="button"
                  class="secondary"
                  aria-label={`${canEdit ? 'Edit' : 'View'} ${f.key}`}
                  onClick={() => {
                    store.selectedFlag.value = f.key;
                  }}
                >
                  {canEdit ? 'Edit' : 'View'}
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {hidden > 0 ? (
        <p class="row">
          <span class="muted">
            Showing {rows.length} of {flags.length} matching flags; search to narrow them.
          </span>
          <button type="button" class="secondary" onClick={() => setPages(pages + 1)}>
            Show {Math.min(hidden, flagRowsPageMax)} more flags
          </button>
        </p>
      ) : null}
      {store.env.value.flags.size === 0 ? (
        <p class="muted">No flags in this environment{canEdit ? ' yet: create one under “Create…”' : ''}.</p>
      ) : null}
    </section>
  );
}

function Segments({ store, canEdit }: { store: FlagsStore; canEdit: boolean }) {
  const segs = [...store.env.value.segments.values()].sort((a, b) => (a.key < b.key ? -1 : 1));
  const sel =
    store.selectedSegment.value !== undefined ? store.env.value.segments.get(store.selectedSegment.value) : undefined;
  return (
    <section class="panel" aria-label="Segments">
      <h2>Segments</h2>
      <datalist id="segment-keys">
        {segs.map((s) => (
          <option key={s.key} value={s.key} />
        ))}
      </datalist>
      <div class="row">
        {segs.map((s) => (
          <button
            type="button"
            key={s.key}
            class="secondary"
            aria-pressed={sel?.key === s.key}
            onClick={() => {
              store.selectedSegment.value = s.key;
            }}
          >
            {s.key}{' '}
            <span class="muted">
              ({s.included.length} in, {s.excluded.length} out, {s.rules.length} rules)
            </span>
          </button>
        ))}
        {segs.length === 0 ? <span class="muted">No segments in this project.</span> : null}
      </div>
      {sel ? <SegmentEditor key={sel.key} store={store} segment={sel} canEdit={canEdit} /> : null}
    </section>
  );
}

export function App({ store }: { store: FlagsStore }) {
  const session = store.session.value;
  if (!session) {
    return (
      <>
        <header class="top">
          <h1>Feature flags</h1>
        </header>
        <SignIn store={store} />
      </>
    );
  }
  const canEdit = session.canEdit;
  const selected =
    store.selectedFlag.value !== undefined ? store.env.value.flags.get(store.selectedFlag.value) : undefined;
  return (
    <>
      <header class="top">
        <h1>Feature flags</h1>
        <label>
          Project
          <select value={store.project.value} onChange={(e) => void store.pickProject(e.currentTarget.value)}>
            {store.projects.value.length === 0 ? <option value="">(none)</option> : null}
            {store.projects.value.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </label>
        <label>
          Environment
          <select value={store.environment.value} onChange={(e) => void store.pickEnvironment(e.currentTarget.value)}>
            {store.environments.value.length === 0 ? <option value="">(none)</option> : null}
            {store.environments.value.map((e) => (
              <option key={e.key} value={e.key}>
                {e.key}
              </option>
            ))}
          </select>
        </label>
        <span class="conn" aria-live="polite">
          stream: {store.streamState.value}
        </span>
        <span class="who">
          {session.email} ({session.role})
        </span>
        <button type="button" class="secondary" onClick={() => store.signOut()}>
          Sign out
        </button>
      </header>
      <main>
        <p class="status-line" aria-live="polite">
          {store.notice.value}
        </p>
        {canEdit ? (
          <CreateForms store={store} />
        ) : (
          <p class="muted">Signed in as a viewer: switches and editors are read-only.</p>
        )}
        <div class="grid">
          <FlagsTable store={store} canEdit={canEdit} />
          {selected ? (
            <section class="panel" aria-label="Flag editor">
              <h2>Flag editor</h2>
              <FlagEditor key={selected.key} store={store} flag={selected} canEdit={canEdit} />
            </section>
          ) : null}
          <Segments store={store} canEdit={canEdit} />
          <Debugger store={store} />
          <AuditLog store={store} />
        </div>
      </main>
    </>
  );
}
