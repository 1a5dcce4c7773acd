/**
 * Regression test for bounded Merkle anti-entropy (dynamo/anti-entropy.ts): replicas that differ in
 * far more keys than one exchange may list still converge, round after round. Found by crashing
 * multi-leader nodes under writes (issue 16): listing the first `max` keys in key order touched
 * every bucket a little, and each round listed the same keys again.
 */
import t from 'tap';
import { aeAnswer, aePlan, aeRoot } from '../../src/replication/dynamo/anti-entropy.js';

/** One exchange initiated by `a` with `b`, copying pushed and pulled keys (newer-wins is moot: digests are values). */
function exchange(a: Map<string, string>, b: Map<string, string>, max: number): number {
  const answer = aeAnswer(b, aeRoot(a), max);
  if (answer === null) return 0;
  const plan = aePlan(a, answer, max);
  for (const k of plan.push) b.set(k, a.get(k) as string);
  for (const k of plan.pull) if (b.has(k)) a.set(k, b.get(k) as string);
  return plan.push.length + plan.pull.length;
}

const cases = [
  { name: 'one replica missing 2,000 of 3,000 keys, 512 per exchange', shared: 1000, onlyA: 2000, onlyB: 0, max: 512 },
  { name: 'both replicas missing keys the other has, 100 per exchange', shared: 500, onlyA: 700, onlyB: 900, max: 100 },
  { name: 'eight keys per exchange still gets there', shared: 50, onlyA: 30, onlyB: 20, max: 8 },
];

for (const c of cases) {
  t.test(`anti-entropy converges: ${c.name}`, async (t) => {
    const a = new Map<string, string>();
    const b = new Map<string, string>();
    for (let i = 0; i < c.shared; i++) {
      a.set(`s${i}`, `d${i}`);
      b.set(`s${i}`, `d${i}`);
    }
    for (let i = 0; i < c.onlyA; i++) a.set(`a${i}`, `da${i}`);
    for (let i = 0; i < c.onlyB; i++) b.set(`b${i}`, `db${i}`);
    const roundsMax = Math.ceil((c.onlyA + c.onlyB) / c.max) * 4 + 10;
    let rounds = 0;
    while (aeRoot(a).root !== aeRoot(b).root && rounds < roundsMax) {
      // Alternate initiators, as round-robin anti-entropy does.
      if (rounds % 2 === 0) exchange(a, b, c.max);
      else exchange(b, a, c.max);
      rounds++;
    }
    t.equal(aeRoot(a).root, aeRoot(b).root, `the replicas agree after ${rounds} rounds (at most ${roundsMax})`);
    t.equal(a.size, c.shared + c.onlyA + c.onlyB, 'every key is on both');
    t.same([...a.entries()].sort(), [...b.entries()].sort());
  });
}

t.test('an answer lists whole buckets within max, and names only those', async (t) => {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  for (let i = 0; i < 400; i++) a.set(`k${i}`, 'x');
  const answer = aeAnswer(b, aeRoot(a), 50);
  t.ok(answer !== null);
  if (answer === null) return;
  t.ok(answer.buckets.length > 0, 'some buckets listed');
  t.ok(answer.entries.length <= 50, 'at most max pairs');
  const plan = aePlan(a, answer, 50);
  t.ok(
    plan.push.length > 0 && plan.push.length <= 50,
    `the initiator pushes the listed buckets' keys (${plan.push.length})`,
  );
});
