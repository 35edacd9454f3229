// Every run is kept, so the next can be compared with it; exported runs import back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

const historyIds = (page) =>
  page.$$eval('[data-testid="history-row"]', (rows) => rows.map((r) => r.dataset.runId));

test('runs are kept, compared, viewed, deleted and imported', async () => {
  const context = await suite.browser.newContext({ acceptDownloads: true, viewport: { width: 1600, height: 1200 } });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  assert.equal((await historyIds(page)).length, 0);

  const runOnce = async (maxTokens) => {
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 2, 'max-tokens': maxTokens, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
  };
  await runOnce(8);
  const [first] = await historyIds(page);
  await page.waitForTimeout(5); // distinct run ids
  await runOnce(24);
  const ids = await historyIds(page);
  assert.equal(ids.length, 2);
  assert.equal(ids[1], first, 'newest first');

  // Compare the new run with the first: longer answers, slower E2E, same TTFT shape.
  await page.locator(`[data-testid="history-row"][data-run-id="${first}"] [data-testid="history-compare"]`).click();
  await app.byTestId('comparison').waitFor();
  const compared = await page.$$eval('[data-testid="compare-row"]', (rows) => rows.map((r) => r.dataset.concurrency));
  assert.deepEqual(compared, ['1', '2']);
  assert.match(await app.byTestId('comparison').textContent(), /%\)/);
  await app.screenshot(screenshotPath('history-compare.png'));

  // Kept across a reload; a kept run can be viewed again.
  await page.reload();
  await app.byTestId('app-title').waitFor();
  assert.deepEqual(await historyIds(page), ids);
  await page.locator(`[data-testid="history-row"][data-run-id="${first}"] [data-testid="history-view"]`).click();
  await app.byTestId('results-table').waitFor();
  assert.equal((await app.resultsRows()).length, 2);

  // Export it, delete it, import it back.
  const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId('export-json').click()]);
  const json = await readFile(await download.path(), 'utf8');
  await page.locator(`[data-testid="history-row"][data-run-id="${first}"] [data-testid="history-delete"]`).click();
  assert.deepEqual(await historyIds(page), [ids[0]]);
  await app.byTestId('history').locator('details summary').click();
  await app.fill('history-import-text', json);
  await app.byTestId('history-import').click();
  await page.waitForFunction((n) => document.querySelectorAll('[data-testid="history-row"]').length === n, 2);
  assert.ok((await historyIds(page)).includes(first));

  // A document from a newer tokenmeter is refused with the reason.
  await app.fill('history-import-text', json.replace('"schema": 1', '"schema": 99'));
  await app.byTestId('history-import').click();
  await app.byTestId('history-import-error').waitFor();
  assert.match(await app.byTestId('history-import-error').textContent(), /newer tokenmeter/);
  await context.close();
});

test('a full storage never erases kept runs: it says what it could not keep', async () => {
  const context = await suite.browser.newContext();
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  const runOnce = async () => {
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 16, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
    await page.waitForTimeout(5); // distinct run ids
  };
  await runOnce();
  await runOnce();
  const before = await historyIds(page);
  assert.equal(before.length, 2);
  // Fill the rest of this origin's storage, as other pages of the same site would.
  await page.evaluate(() => {
    let lo = 0;
    let hi = 12 * 1024 * 1024;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      try {
        localStorage.setItem('other-data', 'x'.repeat(mid));
        lo = mid;
      } catch {
        hi = mid - 1;
      }
    }
    localStorage.setItem('other-data', 'x'.repeat(lo));
  });
  await runOnce();
  const after = await historyIds(page);
  assert.equal(after.length, 3, 'the page keeps every run');
  assert.deepEqual(after.slice(1), before, 'the older runs are still there');
  assert.match(await app.byTestId('history-storage-note').textContent(), /storage|stored/);
  // Reloaded: storage holds the newest runs, oldest left out first (how many fit
  // depends on each run's size, which its notes about this machine change).
  await page.reload();
  await app.byTestId('app-title').waitFor();
  const stored = await historyIds(page);
  assert.ok(stored.length >= 1, 'the newest run is stored');
  assert.deepEqual(stored, after.slice(0, stored.length), `newest first, oldest left out: ${stored}`);
  await context.close();
});
