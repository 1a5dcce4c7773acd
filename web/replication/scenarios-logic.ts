/**
 * The pure part of the scenarios panel (scenarios.tsx): what the Scenario select offers besides
 * the API's scenarios (the consistency and primitive demos), how steps merge, and a verdict in
 * words for each kind of run. No I/O, no DOM.
 */

/** Steps kept in the region (the scenarios narrate tens; a longer run keeps its last ones). */
export const narrationStepsMax = 200;
/** scenario_step frames kept from before the run's cluster id is known (the 201 can come after them). */
export const earlyFramesMax = 64;
/** If no verdict event came this long after the start, the report is read instead, ms (scripts stop at 60 s). */
export const scenarioVerdictWaitMs = 65_000;

export interface ScenarioInfoWire {
  name: string;
  strategy: string;
  description: string;
  node_count: number;
}

export interface CheckWire {
  name: string;
  passed: boolean;
  detail: string;
}

export interface VerdictWire {
  expected: string;
  actual: string;
  passed: boolean;
  checks: CheckWire[];
}

export interface ScenarioReportWire {
  status: 'running' | 'finished' | 'aborted' | 'error';
  steps: Array<{ step: number; text: string }>;
  verdict?: VerdictWire;
  error?: string;
}

/** What the select offers: its value is `<kind>:<id>`. */
export interface Choice {
  value: string;
  label: string;
  description: string;
  group: 'scenario' | 'consistency' | 'demo';
}

export const consistencyDemos: readonly Choice[] = [
  {
    value: 'consistency:read-your-writes',
    label: 'read-your-writes',
    description: 'Writes on one node, then reads from a lagging replica: does the writer see its own write?',
    group: 'consistency',
  },
  {
    value: 'consistency:monotonic-reads',
    label: 'monotonic-reads',
    description: 'Two reads in a row, the second from a lagging replica: can time seem to go backwards?',
    group: 'consistency',
  },
  {
    value: 'consistency:consistent-prefix',
    label: 'consistent-prefix',
    description: 'An ordered sequence of writes watched on a lagging replica: does it see them in order?',
    group: 'consistency',
  },
];

export const primitiveDemos: ReadonlyArray<Choice & { path: string }> = [
  {
    value: 'demo:2pc',
    label: 'two-phase commit',
    path: '/api/v1/demos/2pc',
    description: 'A transaction over three participants, committed.',
    group: 'demo',
  },
  {
    value: 'demo:2pc-crash',
    label: 'two-phase commit, coordinator crash',
    path: '/api/v1/demos/2pc?crash=true',
    description: 'The coordinator crashes after logging its decision: participants block.',
    group: 'demo',
  },
  {
    value: 'demo:mvcc',
    label: 'snapshot-isolated reads (MVCC)',
    path: '/api/v1/demos/mvcc',
    description: 'A long reader keeps its snapshot while writers commit; first committer wins.',
    group: 'demo',
  },
  {
    value: 'demo:wal',
    label: 'write-ahead log, buffered',
    path: '/api/v1/demos/wal?mode=buffered',
    description: 'Acknowledged writes before a crash, with buffered writes: some may be lost.',
    group: 'demo',
  },
  {
    value: 'demo:wal-fsync',
    label: 'write-ahead log, fsync',
    path: '/api/v1/demos/wal?mode=fsync',
    description: 'The same with an fsync before each acknowledgement: none is lost.',
    group: 'demo',
  },
  {
    value: 'demo:swim',
    label: 'gossip membership (SWIM)',
    path: '/api/v1/demos/swim',
    description: 'A member fails; the others suspect, then declare it dead, over lossy links.',
    group: 'demo',
  },
  {
    value: 'demo:paxos',
    label: 'single-decree consensus (Paxos)',
    path: '/api/v1/demos/paxos',
    description: 'Three proposers duel; one value is chosen and a latecomer adopts it.',
    group: 'demo',
  },
  {
    value: 'demo:detsim',
    label: 'deterministic simulation',
    path: '/api/v1/demos/detsim',
    description: 'The same seed gives the same run; another seed, another run.',
    group: 'demo',
  },
];

/** What the region shows. */
export interface Narration {
  title: string;
  status: 'running' | 'finished' | 'error';
  steps: Array<{ n: number; text: string }>;
  verdict: { passed: boolean | null; lines: string[] } | null;
  note: string | null;
  clusterId: string | null;
}

/** A scenario's verdict (the event's data or the report's) as the region's lines. */
export function scenarioVerdictLines(v: VerdictWire): { passed: boolean; lines: string[] } {
  return {
    passed: v.passed,
    lines: [`Expected: ${v.expected}`, ...v.checks.map((c) => `${c.passed ? '✓' : '✗'} ${c.name}: ${c.detail}`)],
  };
}

/** Steps merged by number (an event and the report may both bring one), in order, the last narrationStepsMax. */
export function mergeSteps(
  steps: ReadonlyArray<{ n: number; text: string }>,
  more: ReadonlyArray<{ n: number; text: string }>,
): Array<{ n: number; text: string }> {
  const byN = new Map<number, string>();
  for (const s of steps) byN.set(s.n, s.text);
  for (const s of more) byN.set(s.n, s.text);
  return [...byN.entries()]
    .sort((a, b) => a[0] - b[0])
    .slice(-narrationStepsMax)
    .map(([n, text]) => ({ n, text }));
}

const flag = (r: Record<string, unknown>, k: string): boolean => r[k] === true;

/** A primitive demo's verdict from its report's own booleans (null: the demo has no pass or fail). */
export function demoVerdict(value: string, r: Record<string, unknown>): { passed: boolean | null; lines: string[] } {
  switch (value) {
    case 'demo:2pc':
    case 'demo:2pc-crash': {
      const crash = value === 'demo:2pc-crash';
      const blocked = flag(r, 'blocked');
      const lines = [
        `Decision: ${String(r['decision'] ?? 'none')}; committed: ${flag(r, 'committed')}; ` +
          `blocked: ${blocked}; recovered: ${flag(r, 'recovered')}`,
        `Locks held at most ${String(r['max_lock_held_ms'] ?? '?')} ms (virtual).`,
      ];
      return { passed: crash ? blocked : flag(r, 'committed') && !blocked, lines };
    }
    case 'demo:mvcc': {
      const ok =
        flag(r, 'snapshot_stable') &&
        flag(r, 'new_reader_sees_new_values') &&
        flag(r, 'write_conflict_detected') &&
        flag(r, 'first_committer_wins');
      return {
        passed: ok,
        lines: [
          `Snapshot stable: ${flag(r, 'snapshot_stable')}; ` +
            `new reader sees new values: ${flag(r, 'new_reader_sees_new_values')}`,
          `Write conflict detected: ${flag(r, 'write_conflict_detected')}; ` +
            `first committer wins: ${flag(r, 'first_committer_wins')}`,
        ],
      };
    }
    case 'demo:wal':
    case 'demo:wal-fsync': {
      const lost = typeof r['lost'] === 'number' ? r['lost'] : Number.NaN;
      return {
        passed: value === 'demo:wal-fsync' ? lost === 0 : null,
        lines: [
          `${String(r['acked'])} writes acknowledged before the crash, ${lost} of them lost, ` +
            `${String(r['recovered'])} recovered from the log.`,
        ],
      };
    }
    case 'demo:swim':
      return {
        passed: flag(r, 'detected') && r['false_positives'] === 0,
        lines: [
          `Failure detected by every live member: ${flag(r, 'detected')}, ` +
            `in ${String(r['detection_time_ms'] ?? '?')} ms; false positives: ${String(r['false_positives'])}.`,
        ],
      };
    case 'demo:paxos':
      return {
        passed: flag(r, 'safety_held') && flag(r, 'validity_held'),
        lines: [
          `Chosen value: ${String(r['chosen_value'] ?? 'none')}; safety held: ${flag(r, 'safety_held')}; ` +
            `validity held: ${flag(r, 'validity_held')}.`,
        ],
      };
    case 'demo:detsim':
      return {
        passed: flag(r, 'reproducible') && flag(r, 'different_seed_differs'),
        lines: [
          `Same seed, same run: ${flag(r, 'reproducible')}; ` +
            `the next seed differs: ${flag(r, 'different_seed_differs')}.`,
        ],
      };
    default:
      return { passed: null, lines: [] };
  }
}
