/**
 * The clock lab page: header (connection, delivery mode, token), the space-time diagram of the live
 * run or of a loaded ShiViz log, and the panels (panels.tsx) around it. Views read the store's
 * signals; the run's rules live in model.ts, happened-before in causality.ts, the socket and
 * fetches in store.ts.
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';
import { Diagram } from './diagram.js';
import {
  FaultsPanel,
  KvPanel,
  MessagePanel,
  ProcessesPanel,
  ScenarioPanel,
  ShiVizPanel,
  SnapshotsPanel,
} from './panels.js';
import type { LabStore } from './store.js';

export function App({ store }: { store: LabStore }): JSX.Element {
  const [focusCut, setFocusCut] = useState<string | undefined>(undefined);
  const version = store.version.value;
  const imported = store.imported.value;
  const run = store.run;
  const st = store.state.value;
  return (
    <>
      <header class="top">
        <h1>Clock lab</h1>
        <span class="conn">events: {store.socket.status.value}</span>
        {st && (
          <span class="conn">
            <span>
              delivery {st.delivery_mode} · strategy {st.conflict_strategy} ·{' '}
            </span>
            <span>
              t={Math.round(st.time_ms)} ms · in flight {st.in_flight}
            </span>
          </span>
        )}
        {run.gaps > 0 && <span class="conn">{run.gaps} events lost on the way</span>}
        <label class="conn">
          Token{' '}
          <input
            aria-label="Token"
            size={16}
            placeholder="name:secret (optional)"
            value={store.token.value}
            onChange={(e) => store.setToken(e.currentTarget.value)}
          />
        </label>
      </header>
      <main class="cl">
        <section class="panel area-diagram" aria-labelledby="h-diagram">
          <h2 id="h-diagram">
            Space-time diagram{' '}
            {imported ? (
              <span class="readonly">read-only: {store.importedName.value}</span>
            ) : (
              <span class="muted">live</span>
            )}
          </h2>
          <Diagram run={run} version={version} focusCut={focusCut} />
          <p role="status" class="status-line">
            {store.status.value}
          </p>
        </section>
        <div class="side">
          <ProcessesPanel store={store} />
          <MessagePanel store={store} />
          <FaultsPanel store={store} />
          <SnapshotsPanel store={store} version={version} focus={focusCut} setFocus={setFocusCut} />
        </div>
        <div class="bottom">
          <KvPanel store={store} />
          <ScenarioPanel store={store} />
          <ShiVizPanel store={store} />
        </div>
      </main>
    </>
  );
}
