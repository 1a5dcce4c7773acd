/**
 * The clock lab page's panels around the diagram: processes (clocks, hold-back queues, event,
 * snapshot and kill), messages, channel faults and partitions, the delivery mode, snapshots with
 * their cut check and conservation sum, the multi-version KV store, scenarios with narration, and
 * ShiViz export and import. Each control calls the lab's API through the store; none keeps state
 * the lab has.
 */
import { useState } from 'preact/hooks';
import { clockText, vectorText } from './causality.js';
import type { Cut } from './model.js';
import { channelFrom, channelTo } from './selection.js';
import type { KvKeyView, LabStore, ProcessWire } from './store.js';

const enc = encodeURIComponent;

function aliveIds(store: LabStore): string[] {
  return (store.state.value?.processes ?? []).filter((p) => p.status === 'alive').map((p) => p.id);
}

function ProcessSelect({
  label,
  value,
  onChange,
  ids,
  extra,
}: {
  label: string;
  value: string;
  onChange: (v: string) => void;
  ids: string[];
  extra?: { value: string; text: string };
}) {
  return (
    <label>
      {label}{' '}
      <select aria-label={label} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {extra && <option value={extra.value}>{extra.text}</option>}
        {ids.map((id) => (
          <option key={id} value={id}>
            {id}
          </option>
        ))}
      </select>
    </label>
  );
}

export function ProcessesPanel({ store }: { store: LabStore }) {
  const [id, setId] = useState('');
  const [clockType, setClockType] = useState('vector');
  const procs: ProcessWire[] = store.state.value?.processes ?? [];
  return (
    <section aria-labelledby="h-procs">
      <h2 id="h-procs">Processes</h2>
      <table class="procs">
        <thead>
          <tr>
            <th scope="col">id</th>
            <th scope="col">clock</th>
            <th scope="col">balance</th>
            <th scope="col">hold-back queue</th>
            <th scope="col">actions</th>
          </tr>
        </thead>
        <tbody>
          {procs.map((p) => (
            <tr key={p.id} class={p.status === 'alive' ? '' : 'killed'}>
              <th scope="row">
                {p.id} <span class="muted">{p.clock_type}</span>
              </th>
              <td class="mono">{clockText(p.clock)}</td>
              <td>{p.balance}</td>
              <td aria-label={`hold-back queue of ${p.id}`} class="mono">
                {p.held.length === 0 ? '—' : p.held.join(' ')}
              </td>
              <td>
                {p.status === 'alive' ? (
                  <>
                    <button
                      type="button"
                      aria-label={`Event on ${p.id}`}
                      onClick={() =>
                        void store.act(`event on ${p.id}`, 'POST', `/api/v1/processes/${enc(p.id)}/event`, {})
                      }
                    >
                      event
                    </button>
                    <button
                      type="button"
                      aria-label={`Snapshot from ${p.id}`}
                      onClick={() =>
                        void store.act(`snapshot from ${p.id}`, 'POST', `/api/v1/processes/${enc(p.id)}/snapshot`)
                      }
                    >
                      snapshot
                    </button>
                    <button
                      type="button"
                      aria-label={`Kill ${p.id}`}
                      onClick={() => void store.act(`kill ${p.id}`, 'DELETE', `/api/v1/processes/${enc(p.id)}`)}
                    >
                      kill
                    </button>
                  </>
                ) : (
                  'killed'
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void store.act(`spawn ${id}`, 'POST', '/api/v1/processes', { id, clock_type: clockType });
        }}
      >
        <input
          aria-label="Process id"
          placeholder="id"
          size={6}
          value={id}
          onInput={(e) => setId(e.currentTarget.value)}
        />
        <select aria-label="Clock type" value={clockType} onChange={(e) => setClockType(e.currentTarget.value)}>
          <option value="vector">vector</option>
          <option value="scalar">scalar</option>
          <option value="matrix">matrix</option>
        </select>
        <button type="submit">Spawn</button>
        <button type="button" onClick={() => void store.act('reset', 'POST', '/api/v1/simulation/reset')}>
          Reset
        </button>
      </form>
    </section>
  );
}

export function MessagePanel({ store }: { store: LabStore }) {
  const ids = aliveIds(store);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [payload, setPayload] = useState('hello');
  const [amount, setAmount] = useState('');
  const f = from || ids[0] || '';
  const t = to || ids.find((x) => x !== f) || '';
  return (
    <section aria-labelledby="h-send">
      <h2 id="h-send">Messages</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (t === '*') void store.act(`broadcast from ${f}`, 'POST', '/api/v1/broadcast', { from: f, payload });
          else {
            const body: Record<string, unknown> = { from: f, to: t, payload };
            if (amount !== '') body['amount'] = Number(amount);
            void store.act(`send ${f} → ${t}`, 'POST', '/api/v1/messages', body);
          }
        }}
      >
        <ProcessSelect label="From" value={f} onChange={setFrom} ids={ids} />
        <ProcessSelect
          label="To"
          value={t}
          onChange={setTo}
          ids={ids}
          extra={{ value: '*', text: 'all (broadcast)' }}
        />
        <input aria-label="Payload" size={8} value={payload} onInput={(e) => setPayload(e.currentTarget.value)} />
        <input
          aria-label="Amount"
          type="number"
          min={0}
          size={5}
          placeholder="amount"
          value={amount}
          onInput={(e) => setAmount(e.currentTarget.value)}
        />
        <button type="submit">Send</button>
      </form>
    </section>
  );
}

export function FaultsPanel({ store }: { store: LabStore }) {
  const st = store.state.value;
  const ids = (st?.processes ?? []).map((p) => p.id);
  // The channel's ends are shared with the diagram (a click on a lane's name picks them).
  const from = channelFrom.value;
  const to = channelTo.value;
  const setFrom = (v: string): void => {
    channelFrom.value = v;
  };
  const setTo = (v: string): void => {
    channelTo.value = v;
  };
  const [delay, setDelay] = useState('');
  const [drop, setDrop] = useState('');
  const [reorder, setReorder] = useState(false);
  const [sideA, setSideA] = useState('');
  const [sideB, setSideB] = useState('');
  const f = from || ids[0] || '';
  const t = to || ids.find((x) => x !== f) || '';
  const list = (s: string): string[] => s.split(/[\s,]+/).filter((x) => x !== '');
  const faulty = (st?.channels ?? []).filter(
    (c) => c.drop_rate > 0 || c.reorder || c.delay_ms !== st?.channels[0]?.delay_ms,
  );
  return (
    <section aria-labelledby="h-faults">
      <h2 id="h-faults">Channels and faults</h2>
      <p class="muted">Pick a channel here or by clicking two lane names on the diagram (sender, then receiver).</p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          const body: Record<string, unknown> = { reorder };
          if (delay !== '') body['delay_ms'] = Number(delay);
          if (drop !== '') body['drop_rate'] = Number(drop);
          void store.act(`faults ${f} → ${t}`, 'POST', `/api/v1/channels/${enc(f)}/${enc(t)}/faults`, body);
        }}
      >
        <ProcessSelect label="Channel from" value={f} onChange={setFrom} ids={ids} />
        <ProcessSelect label="Channel to" value={t} onChange={setTo} ids={ids} />
        <input
          aria-label="Delay ms"
          type="number"
          min={0}
          placeholder="delay ms"
          value={delay}
          onInput={(e) => setDelay(e.currentTarget.value)}
        />
        <input
          aria-label="Drop rate"
          type="number"
          min={0}
          max={1}
          step={0.05}
          placeholder="drop 0..1"
          value={drop}
          onInput={(e) => setDrop(e.currentTarget.value)}
        />
        <label>
          <input type="checkbox" checked={reorder} onChange={(e) => setReorder(e.currentTarget.checked)} /> Reorder
        </label>
        <button type="submit">Set faults</button>
      </form>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void store.act('partition', 'POST', '/api/v1/partition', { side_a: list(sideA), side_b: list(sideB) });
        }}
      >
        <input
          aria-label="Side A"
          placeholder="side A: p1 p2"
          size={10}
          value={sideA}
          onInput={(e) => setSideA(e.currentTarget.value)}
        />
        <input
          aria-label="Side B"
          placeholder="side B: p3"
          size={10}
          value={sideB}
          onInput={(e) => setSideB(e.currentTarget.value)}
        />
        <button type="submit">Partition</button>
        <button type="button" onClick={() => void store.act('clear faults', 'DELETE', '/api/v1/faults')}>
          Clear faults
        </button>
      </form>
      <div class="row">
        <label>
          Delivery mode{' '}
          <select
            aria-label="Delivery mode"
            value={st?.delivery_mode ?? 'causal'}
            onChange={(e) =>
              void store.act('delivery mode', 'PUT', '/api/v1/delivery', { mode: e.currentTarget.value })
            }
          >
            <option value="causal">causal (hold-back queues)</option>
            <option value="immediate">immediate</option>
          </select>
        </label>
      </div>
      <ul class="plain">
        {faulty.map((c) => (
          <li key={`${c.from}-${c.to}`} class="mono">
            {c.from}→{c.to}: delay {c.delay_ms} ms, drop {c.drop_rate}
            {c.reorder ? `, reorder ≤ ${c.reorder_window_ms} ms` : ''}, in flight {c.in_flight}
          </li>
        ))}
        {(st?.partitions ?? []).map((p) => (
          <li key={p.id}>
            partition {p.id}: {p.side_a.join(' ')} | {p.side_b.join(' ')}{' '}
            <button
              type="button"
              onClick={() => void store.act(`heal ${p.id}`, 'DELETE', `/api/v1/partition/${enc(p.id)}`)}
            >
              Heal {p.id}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A recorded in-transit message: its id, and the amount it carries when there is one. */
function recordedText(m: { id: string; amount: number }): string {
  return m.amount ? `${m.id} $${m.amount}` : m.id;
}

function conservation(c: Cut): string {
  const balances = Object.values(c.balances).reduce((a, b) => a + b, 0);
  const transit = c.channels.reduce((a, ch) => a + ch.messages.reduce((x, m) => x + m.amount, 0), 0);
  const total = c.totalBalance === undefined ? '?' : String(c.totalBalance);
  return `balances ${balances} + in transit ${transit} → total ${total}`;
}

export function SnapshotsPanel({
  store,
  focus,
  setFocus,
}: {
  store: LabStore;
  /** The run's version: the cuts live in the model, not in a signal, so the panel redraws when it moves. */
  version: number;
  focus: string | undefined;
  setFocus: (id: string) => void;
}) {
  const cuts = [...store.run.cuts.values()].reverse();
  return (
    <section aria-labelledby="h-snaps" role="region">
      <h2 id="h-snaps">Snapshots</h2>
      {cuts.length === 0 && <p class="muted">Take one with a process's “snapshot” button.</p>}
      <ul class="plain">
        {cuts.map((c) => (
          <li key={c.id} class={c.consistent === false ? 'snap bad' : 'snap'}>
            <button type="button" aria-pressed={focus === c.id} onClick={() => setFocus(c.id)}>
              {c.id}
            </button>{' '}
            from {c.initiator}, {c.status}
            {c.consistent === true && ', consistent'}
            {c.consistent === false && <strong class="bad-text"> inconsistent</strong>}
            <div class="mono">{conservation(c)}</div>
            {c.offending.length > 0 && <div class="bad-text">offending: {c.offending.join(', ')}</div>}
            {c.reasons.slice(0, 4).map((r, i) => (
              <div key={i} class="reason">
                {r}
              </div>
            ))}
            {c.channels.length > 0 && (
              <div class="mono">
                channels:{' '}
                {c.channels.map((ch) => `${ch.from}→${ch.to} [${ch.messages.map(recordedText).join(' ')}]`).join('; ')}
              </div>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function KvKey({ k }: { k: KvKeyView }) {
  return (
    <div class="kv-key" role="group" aria-label={`key ${k.key}`}>
      <div>
        <strong>{k.key}</strong> {k.conflict ? <span class="bad-text">siblings ({k.versions.length})</span> : null}
        {k.resolvedBy && <span class="muted"> resolved by {k.resolvedBy}</span>}
      </div>
      <div class="siblings">
        {k.versions.map((v) => (
          <div class="version" key={`${v.dot.replica}:${v.dot.counter}`}>
            <div class="value">{v.value}</div>
            <div class="mono">vv {vectorText(v.version)}</div>
            <div class="mono">
              dot ({v.dot.replica}, {v.dot.counter}) · ts {v.timestamp}
            </div>
            <div class="muted">by {v.writer}</div>
          </div>
        ))}
      </div>
      {k.reader && k.readerContext && (
        <div class="mono">
          context of {k.reader} after reading: {vectorText(k.readerContext)}
        </div>
      )}
    </div>
  );
}

export function KvPanel({ store }: { store: LabStore }) {
  const ids = aliveIds(store);
  const [key, setKey] = useState('x');
  const [value, setValue] = useState('v1');
  const [writer, setWriter] = useState('');
  const [reader, setReader] = useState('');
  const w = writer || ids[0] || '';
  const r = reader || ids[1] || ids[0] || '';
  return (
    <section aria-labelledby="h-kv">
      <h2 id="h-kv">
        Multi-version KV <span class="muted">strategy {store.state.value?.conflict_strategy ?? '?'}</span>
      </h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void store
            .act(`write ${key}`, 'PUT', `/api/v1/kv/${enc(key)}`, { value, writer: w })
            .then(() => store.refreshKey(key));
        }}
      >
        <input aria-label="Key" size={6} value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        <input aria-label="Value" size={8} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        <ProcessSelect label="Writer" value={w} onChange={setWriter} ids={ids} />
        <button type="submit">Write</button>
        <ProcessSelect label="Reader" value={r} onChange={setReader} ids={ids} />
        <button type="button" onClick={() => void store.refreshKey(key, undefined, r)}>
          Read
        </button>
      </form>
      {[...store.kv.value.values()].map((k) => (
        <KvKey key={k.key} k={k} />
      ))}
    </section>
  );
}

export function ScenarioPanel({ store }: { store: LabStore }) {
  const list = store.scenarios.value;
  const [name, setName] = useState('');
  const chosen = name || list[0]?.name || '';
  const p = store.play.value;
  const done = p !== null && p.shown >= p.steps.length;
  return (
    <section aria-labelledby="h-scen">
      <h2 id="h-scen">Scenarios</h2>
      <div class="row">
        <select aria-label="Scenario" value={chosen} onChange={(e) => setName(e.currentTarget.value)}>
          {list.map((s) => (
            <option key={s.name} value={s.name} title={s.description}>
              {s.name}
            </option>
          ))}
        </select>
        <button type="button" onClick={() => void store.runScenario(chosen)}>
          Run scenario
        </button>
        <button type="button" disabled={!p || done} onClick={() => store.stepScenario()}>
          Next step
        </button>
        <button
          type="button"
          disabled={!p || done}
          onClick={() => {
            if (p) store.play.value = { ...p, shown: p.steps.length };
          }}
        >
          All steps
        </button>
      </div>
      <p class="muted">{list.find((s) => s.name === chosen)?.description}</p>
      <div role="region" aria-label="Narration" class="narration">
        {p && (
          <ol>
            {p.steps.slice(0, p.shown).map((s, i) => (
              <li key={i}>{s}</li>
            ))}
          </ol>
        )}
        {p && done && p.verdict && (
          <p class={p.verdict.passed ? 'good-text' : 'bad-text'}>
            {p.scenario} {p.verdict.passed ? 'passed' : 'failed'}: {p.verdict.summary}
          </p>
        )}
      </div>
    </section>
  );
}

export function ShiVizPanel({ store }: { store: LabStore }) {
  const exportRun = async (): Promise<void> => {
    const r = await store.exportShiViz();
    if (!r.ok) {
      store.status.value = `Export ShiViz: ${r.error}`;
      return;
    }
    const url = URL.createObjectURL(new Blob([r.text], { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = store.imported.value ? store.importedName.value || 'shiviz.log' : 'clocklab-run.log';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    store.status.value = `Export ShiViz: ${r.text.length} characters`;
  };
  return (
    <section aria-labelledby="h-shiviz">
      <h2 id="h-shiviz">ShiViz</h2>
      <div class="row">
        <button type="button" onClick={() => void exportRun()}>
          Export ShiViz
        </button>
        <label>
          Load ShiViz log{' '}
          <input
            type="file"
            aria-label="Load ShiViz log"
            accept=".log,.txt,text/plain"
            onChange={async (e) => {
              const input = e.currentTarget;
              const file = input.files?.[0];
              if (!file) return;
              store.importShiViz(file.name, await file.text());
              input.value = '';
            }}
          />
        </label>
        {store.imported.value && (
          <button type="button" onClick={() => store.closeImport()}>
            Back to live
          </button>
        )}
      </div>
    </section>
  );
}
