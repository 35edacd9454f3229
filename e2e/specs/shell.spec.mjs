// The page renders: title, plan panel, results area; a screenshot for people.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);

test('the page renders its title and panels', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 800 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  assert.equal(await app.title(), 'tokenmeter');
  assert.equal(await page.title(), 'tokenmeter · LLM endpoint load tester');
  assert.equal(await app.byTestId('config-panel').isVisible(), true);
  assert.equal(await app.byTestId('results-panel').isVisible(), true);
  assert.equal(await app.byTestId('base-url').inputValue(), 'http://127.0.0.1:8000/v1');
  assert.match(await app.byTestId('levels-note').textContent(), /^4 levels/);
  const path = screenshotPath('shell.png');
  await app.screenshot(path);
  assert.ok(existsSync(path) && statSync(path).size > 10_000, 'a real screenshot was written');
  assert.deepEqual(app.consoleErrors, []);
  await page.close();
});

test('typing a bad ladder shows an error a person can act on', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fill('levels', '1, 2, x');
  await app.byTestId('levels-error').waitFor();
  assert.match(await app.byTestId('levels-error').textContent(), /`x` is not a whole number/);
  await app.fill('levels', '8 4 2');
  await app.byTestId('levels-note').waitFor();
  assert.match(await app.byTestId('levels-note').textContent(), /^3 levels/);
  await page.close();
});
