// The API key is a secret: in memory by default, stored only when asked, and never
// in a link or an export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--api-key', 'sk-remember-me']);

test('the key is remembered only when asked, and never exported', async () => {
  const context = await suite.browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': 'sk-remember-me', levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });

  // Not ticked: a reload forgets it.
  await page.reload();
  await app.byTestId('app-title').waitFor();
  assert.equal(await app.byTestId('api-key').inputValue(), '');
  assert.equal(await page.evaluate(() => localStorage.length), 0);

  // Ticked: it survives a reload, and runs use it.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': 'sk-remember-me', levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });
  await app.byTestId('remember-key').check();
  await page.reload();
  await app.byTestId('app-title').waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="api-key"]').value === 'sk-remember-me');
  assert.equal(await app.byTestId('remember-key').isChecked(), true);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  assert.equal((await app.resultsRows())[0].n_ok, '1');

  // No export carries it.
  for (const id of ['export-json', 'export-csv', 'export-requests-csv', 'export-md']) {
    const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId(id).click()]);
    const text = await readFile(await download.path(), 'utf8');
    assert.ok(text.length > 50, id);
    assert.ok(!text.includes('sk-remember-me'), `${id} holds no key`);
  }
  await app.byTestId('share-link').click();
  assert.ok(!(await app.byTestId('share-url').inputValue()).includes('sk-remember-me'));

  // Unticked: gone from storage.
  await app.byTestId('remember-key').uncheck();
  assert.equal(await page.evaluate(() => localStorage.getItem('tokenmeter.api_key')), null);
  await context.close();
});
