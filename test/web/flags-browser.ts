/**
 * Helpers the flags console's browser tests share (the general harness is browser.ts): waiting for
 * a condition with a bound, signing in through the form, and committing a text field the way a
 * user does (type, then leave the field, which fires the `change` the editors listen to).
 */
import type { Locator, Page } from 'playwright-core';

export async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor({ timeout: 5_000 });
}

/** Fills a field and leaves it (blur), so a `change` listener sees the text. */
export async function commit(field: Locator, text: string): Promise<void> {
  await field.fill(text);
  await field.blur();
}
