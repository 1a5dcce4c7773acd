// The flags console's editors in headless Chromium against the real flag service (temp SQLite store),
// each driven through the page by accessible names, saved, and read back through the API (after a list
// longer than one page of rows is shown paged, "Show more" revealing the rest): individual
// targets (with the API's "already targeted" error shown beside the second target), a prerequisite,
// a rule whose clauses use a semver operator, a date operator and a negation, a rule with a segment
// match, and the segment editor (included, excluded, a rule; the API's error beside the clause's
// attribute). The debugger then explains a context through the new rules: the rule the service
// names, each clause that held, and the segment rule that put the context in the segment; and the
// audit log is filtered by flag and by author.
import t from 'tap';
import { adminEmail, adminPassword, boolFlag, startHarness } from '../flags/fixtures/helpers.js';
import { describeViolation, ensureBuilt, launchBrowser, openPage, seriousAxeViolations } from './browser.js';
import { commit, signIn, waitFor } from './flags-browser.js';
import { flagRowsPageMax } from '../../web/flags/model.js';

/** The contract's bound on how soon the page shows a change (web-ui.md: "within 2 s"). */
const contractUpdateMs = 2_000;
const P = '/api/v1/projects/web';
const E = `${P}/environments/prod`;

ensureBuilt('flags');
const browser = await launchBrowser();
t.teardown(() => browser.close());

interface StoredClause {
  attribute: string;
  op: string;
  values: string[];
  negate?: boolean;
}
interface StoredFlag {
  version: number;
  targets: Array<{ variation: string; contextKeys: string[] }>;
  prerequisites: Array<{ flagKey: string; variation: string }>;
  rules: Array<{ id: string; variation: string; clauses: StoredClause[] }>;
}
interface StoredSegment {
  version: number;
  included: string[];
  excluded: string[];
  rules: Array<{ clauses: StoredClause[] }>;
}

t.test('targets, prerequisites, rules with every kind of clause, and segments: edited in the page', async (t) => {
  const h = await startHarness(t);
  const tok = await h.login();
  for (const body of [boolFlag('checkout'), boolFlag('gate', { defaultVariation: 'on' })]) {
    const r = await h.call('POST', `${E}/flags`, { token: tok, body });
    t.equal(r.status, 201, `seeded flag ${String(body['key'])}`);
  }
  // One page of rows and then some: the table renders flagRowsPageMax rows, "Show more" the rest.
  const bulk = Array.from({ length: flagRowsPageMax }, (_, i) => `zz-bulk-${String(i).padStart(3, '0')}`);
  for (const key of bulk) {
    const r = await h.call('POST', `${E}/flags`, { token: tok, body: boolFlag(key) });
    if (r.status !== 201) throw new Error(`seeding ${key}: ${r.status}`);
  }
  const seg = await h.call('POST', `${P}/segments`, { token: tok, body: { key: 'beta', name: 'Beta' } });
  t.equal(seg.status, 201, 'seeded segment beta');
  const flagOf = async (): Promise<StoredFlag> =>
    (await h.call('GET', `${E}/flags/checkout`, { token: tok })).body as StoredFlag;
  const segmentOf = async (): Promise<StoredSegment> =>
    (await h.call('GET', `${P}/segments/beta`, { token: tok })).body as StoredSegment;

  const w = await openPage(browser, h.base);
  t.teardown(() => w.page.context().close());
  const page = w.page;
  await page.goto(h.base);
  await signIn(page, adminEmail, adminPassword);

  // ---- a long list is paged: the first rows, then "Show more" ----
  const total = flagRowsPageMax + 2;
  await page.getByRole('switch', { name: 'Enabled checkout', exact: true }).waitFor({ timeout: 5_000 });
  await waitFor(
    async () =>
      (await page.getByRole('region', { name: 'Flags' }).getByRole('heading').textContent())?.includes(
        `(${total} of ${total})`,
      ) === true,
    5_000,
    'every flag reached the page',
  );
  t.equal(await page.getByRole('switch').count(), flagRowsPageMax, 'one page of rows is rendered');
  await page.getByRole('button', { name: 'Show 2 more flags' }).click();
  t.equal(await page.getByRole('switch').count(), total, '"Show more" renders the rest');
  const lastKey = bulk[bulk.length - 1] as string;
  await page.getByLabel('Search flags').fill(lastKey);
  t.equal(await page.getByRole('switch', { name: `Enabled ${lastKey}` }).count(), 1, 'a search finds any flag');
  await page.getByLabel('Search flags').fill('');

  await page.getByRole('button', { name: 'Edit checkout', exact: true }).click();
  const editor = page.getByRole('form', { name: 'Flag editor checkout' });
  await editor.waitFor({ timeout: 5_000 });
  const save = editor.getByRole('button', { name: 'Save flag' });
  const savedAs = editor.getByRole('status').filter({ hasText: /Saved as version/ });

  // ---- targets: a key in two targets is refused by the API, beside the second target ----
  await editor.getByRole('button', { name: 'Add target' }).click();
  await editor.getByRole('button', { name: 'Add target' }).click();
  await editor.getByLabel('Target 1 variation').selectOption('on');
  await commit(editor.getByLabel('Target 1 context keys'), 'u1, u2');
  await editor.getByLabel('Target 2 variation').selectOption('off');
  await commit(editor.getByLabel('Target 2 context keys'), 'u2');
  await save.click();
  const targetError = editor.locator('[data-field="targets[1]"]');
  await targetError.waitFor({ timeout: 5_000 });
  t.match(
    await targetError.textContent(),
    /targets\[1\]\.contextKeys\[0\]: context key "u2" is already targeted by targets\[0\]/,
    "the API's error is shown beside the second target",
  );
  t.equal(
    await editor.getByLabel('Target 2 context keys').getAttribute('aria-describedby'),
    'err-targets[1]',
    'and the field points at it',
  );
  t.same((await flagOf()).targets, [], 'nothing was saved');
  await commit(editor.getByLabel('Target 2 context keys'), 'u3');

  // ---- a prerequisite ----
  await editor.getByRole('button', { name: 'Add prerequisite' }).click();
  await editor.getByLabel('Prerequisite 1 flag').selectOption('gate');
  await editor.getByLabel('must be').selectOption('on');

  // ---- rule 1: semver, date and a negated clause; rule 2: a segment match ----
  await editor.getByRole('button', { name: 'Add rule', exact: true }).click();
  await editor.getByLabel('Rule 1 id').fill('new-clients');
  await editor.getByLabel('Rule 1 variation').selectOption('on');
  await editor.getByLabel('Rule 1 clause 1 operator').selectOption('semverGte');
  await editor.getByLabel('Rule 1 clause 1 attribute').fill('version');
  await commit(editor.getByLabel('Rule 1 clause 1 values'), '2.0.0');
  await editor.getByRole('button', { name: 'Add clause to rule 1' }).click();
  await editor.getByLabel('Rule 1 clause 2 operator').selectOption('after');
  await editor.getByLabel('Rule 1 clause 2 attribute').fill('signup');
  await commit(editor.getByLabel('Rule 1 clause 2 values'), '2025-01-01T00:00:00Z');
  await editor.getByRole('button', { name: 'Add clause to rule 1' }).click();
  await editor.getByLabel('Rule 1 clause 3 attribute').fill('plan');
  await commit(editor.getByLabel('Rule 1 clause 3 values'), 'free');
  await editor.getByLabel('Rule 1 clause 3 not').check();
  await editor.getByRole('button', { name: 'Add rule', exact: true }).click();
  await editor.getByLabel('Rule 2 id').fill('beta-users');
  await editor.getByLabel('Rule 2 variation').selectOption('on');
  await editor.getByLabel('Rule 2 clause 1 operator').selectOption('segmentMatch');
  t.ok(await editor.getByLabel('Rule 2 clause 1 attribute').isDisabled(), 'a segment match takes no attribute');
  await commit(editor.getByLabel('Rule 2 clause 1 values'), 'beta');
  await save.click();
  await savedAs.waitFor({ timeout: 5_000 });

  const stored = await flagOf();
  t.same(stored.targets, [
    { variation: 'on', contextKeys: ['u1', 'u2'] },
    { variation: 'off', contextKeys: ['u3'] },
  ]);
  t.same(stored.prerequisites, [{ flagKey: 'gate', variation: 'on' }], 'the prerequisite is in the API');
  t.same(
    stored.rules.map((r) => [r.id, r.variation]),
    [
      ['new-clients', 'on'],
      ['beta-users', 'on'],
    ],
    'both rules, in order',
  );
  t.match(stored.rules[0]?.clauses, [
    { attribute: 'version', op: 'semverGte', values: ['2.0.0'] },
    { attribute: 'signup', op: 'after', values: ['2025-01-01T00:00:00Z'] },
    { attribute: 'plan', op: 'in', values: ['free'], negate: true },
  ]);
  t.notOk(stored.rules[0]?.clauses[0]?.negate, 'only the third clause is negated');
  t.match(stored.rules[1]?.clauses, [{ attribute: '', op: 'segmentMatch', values: ['beta'] }]);

  // ---- the segment editor: the API's error beside the clause's attribute, then saved ----
  await page.getByRole('button', { name: /^beta \(/ }).click();
  const segEditor = page.getByRole('form', { name: 'Segment editor beta' });
  await segEditor.waitFor({ timeout: 5_000 });
  await commit(segEditor.getByLabel('Included'), 'u7, u8');
  await commit(segEditor.getByLabel('Excluded'), 'u9');
  await segEditor.getByRole('button', { name: 'Add segment rule' }).click();
  await segEditor.getByLabel('Segment rule 1 clause 1 attribute').fill('');
  await commit(segEditor.getByLabel('Segment rule 1 clause 1 values'), 'fr');
  await segEditor.getByRole('button', { name: 'Save segment' }).click();
  const attrError = segEditor.locator('[data-field="rules[0].clauses[0].attribute"]');
  await attrError.waitFor({ timeout: 5_000 });
  t.match(
    await attrError.textContent(),
    /rules\[0\]\.clauses\[0\]\.attribute: must name a context attribute/,
    "the API's error is shown beside the clause's attribute",
  );
  t.equal((await segmentOf()).version, 1, 'nothing was saved');
  await segEditor.getByLabel('Segment rule 1 clause 1 attribute').fill('country');
  await segEditor.getByRole('button', { name: 'Save segment' }).click();
  await segEditor
    .getByRole('status')
    .filter({ hasText: /Saved as version 2/ })
    .waitFor({ timeout: 5_000 });
  const storedSeg = await segmentOf();
  t.same([storedSeg.included, storedSeg.excluded], [['u7', 'u8'], ['u9']], 'included and excluded are in the API');
  t.match(storedSeg.rules, [{ clauses: [{ attribute: 'country', op: 'in', values: ['fr'] }] }], 'and the rule');

  // ---- the debugger explains a context through those rules ----
  const context = page.getByRole('textbox', { name: 'Context', exact: true });
  const status = page.getByRole('status', { name: 'Evaluation result' });
  const evaluate = async (ctx: Record<string, unknown>): Promise<string> => {
    await context.fill(JSON.stringify(ctx));
    await page.getByLabel('Flag to explain').selectOption('checkout');
    const before = await status.textContent();
    await page.getByRole('button', { name: 'Evaluate', exact: true }).click();
    await waitFor(
      async () => {
        const now = (await status.textContent()) ?? '';
        return now !== before && now.includes('reason');
      },
      5_000,
      'a new evaluation result',
    );
    return (await status.textContent()) ?? '';
  };
  const newClient = { key: 'u5', version: '2.1.0', signup: '2025-06-01T00:00:00Z', plan: 'pro' };
  t.match(await evaluate(newClient), /variation on .*reason RULE_MATCH · rule new-clients/, 'served by rule 1');
  const trace = page.getByRole('list', { name: 'Rules checked' });
  for (const n of [1, 2, 3]) {
    t.equal(
      await trace.getByLabel(`Rule 1 clause ${n} matched`, { exact: true }).count(),
      1,
      `clause ${n} of the rule is shown as held`,
    );
  }
  t.match(
    await trace.getByLabel('Rule 1 clause 1 matched').textContent(),
    /version "2\.1\.0" semverGte 2\.0\.0/,
    'with the version that satisfied it',
  );
  t.match(await trace.getByLabel('Rule 1 clause 3 matched').textContent(), /plan "pro" not in free/);

  // A context in segment beta through the segment's rule: rule 1 fails at its first clause, rule 2 holds.
  await waitFor(
    async () => (await page.getByRole('button', { name: /^beta \(2 in, 1 out, 1 rules\)/ }).count()) === 1,
    contractUpdateMs,
    'the saved segment reached the page',
  );
  t.match(await evaluate({ key: 'u6', country: 'fr' }), /reason RULE_MATCH · rule beta-users/, 'served by rule 2');
  t.match(
    await trace.getByLabel('Rule 1 clause 1 did not match').textContent(),
    /version is missing/,
    'rule 1 is shown failing at its first clause',
  );
  t.match(
    await trace.getByLabel('Rule 2 clause 1 matched').textContent(),
    /in segment beta \(rule 1\)/,
    'rule 2 names the segment rule that put the context in beta',
  );
  t.equal(await page.getByText(/differs from the service/).count(), 0, "the page's check agrees with the service");

  // ---- the audit log, filtered by flag and by author (a second author changes gate through the API) ----
  const editorEmail = 'editor2@example.com';
  const made = await h.call('POST', '/api/v1/users', {
    token: tok,
    body: { email: editorEmail, password: 'editor-pass-123', role: 'editor' },
  });
  t.equal(made.status, 201, 'a second editor');
  const tok2 = await h.login(editorEmail, 'editor-pass-123');
  const gateNow = (await h.call('GET', `${E}/flags/gate`, { token: tok2 })).body as Record<string, unknown>;
  const { key: _k, version: _v, createdAt: _c, updatedAt: _u, ...gateDef } = gateNow;
  t.equal(
    (await h.call('PUT', `${E}/flags/gate`, { token: tok2, body: { ...gateDef, name: 'Gate (by editor2)' } })).status,
    200,
    'editor2 renames gate',
  );
  const audit = page.getByRole('region', { name: 'Audit log', exact: true });
  const entries = audit.locator('ol.audit > li');
  await waitFor(
    async () => (await entries.first().textContent())?.includes(editorEmail) === true,
    contractUpdateMs + 1_000,
    "editor2's change reaches the audit log",
  );
  await audit.getByLabel('Filter by key').fill('gate');
  const gateTexts = await entries.allTextContents();
  t.ok(gateTexts.length >= 2, 'gate was created and renamed');
  t.ok(
    gateTexts.every((x) => /flag gate\b/.test(x)),
    'filtered by flag: only the records of gate',
  );
  await audit.getByLabel('Filter by author').selectOption(editorEmail);
  const byEditor = await entries.allTextContents();
  t.equal(byEditor.length, 1, "filtered by flag and author: editor2's one change");
  t.match(byEditor[0], /editor2@example\.com · update flag gate/);
  t.match(byEditor[0], /name "gate" → "Gate \(by editor2\)"/, 'with its diff');
  await audit.getByLabel('Filter by key').fill('');
  t.equal((await entries.allTextContents()).length, 1, 'by author alone: still only that change');
  await audit.getByLabel('Filter by author').selectOption('');
  t.ok(
    (await entries.allTextContents()).some((x) => x.includes('update flag checkout')),
    'no filter: every author and flag again',
  );

  const serious = await seriousAxeViolations(page);
  t.same(serious.map(describeViolation), [], 'no serious or critical axe violation');
  // Two refusals were provoked (the target and the segment clause, both 400s); Chromium logs each.
  const provoked = w.consoleErrors.filter((e) => /status of 400/.test(e.text));
  t.equal(provoked.length, 2, 'the two provoked API refusals were logged by the browser');
  t.same(
    w.consoleErrors.filter((e) => !provoked.includes(e)),
    [],
    'no other console error',
  );
  t.same(w.foreignRequests, [], 'no request to another origin');
});
