// Every run is kept, so the next can be compared with it; exported runs import back.
// Leaving the page before a kept run's copy is written asks first.
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
  // Drawn over each other, and said in words.
  for (const series of ['ttft_p95_now', 'ttft_p95_baseline', 'output_tps_now', 'output_tps_baseline']) {
    const at = await page
      .locator(`[data-testid="compare-chart"] [data-testid="chart-point"][data-series="${series}"]`)
      .evaluateAll((ps) => ps.map((p) => Number(p.dataset.concurrency)));
    assert.deepEqual(at, [1, 2], series);
  }
  const said = await app.byTestId('compare-said').locator('li').allTextContents();
  assert.ok(said.length >= 1, 'the differences are said');
  assert.ok(said.some((s) => /knee|p95 TTFT|output tokens\/s|10%/.test(s)), said.join(' | '));
  await app.screenshot(screenshotPath('history-compare.png'));
  await app.byTestId('lang-zh').click();
  assert.match((await app.byTestId('compare-said').textContent()), /拐点|安全并发|TTFT|token/);
  assert.match(await app.byTestId('compare-chart').textContent(), /本次|基线/);
  await app.screenshot(screenshotPath('history-compare-zh.png'));
  await app.byTestId('lang-en').click();

  // Kept across a reload; a kept run can be viewed again.
  await app.reload();
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

/** Waits until `n` runs are stored; their ids, newest first. */
const storedIds = async (app, n) =>
  (await app.waitForStoredRuns(n)).sort((a, b) => b.kept_at - a.kept_at).map((r) => r.run_id);

test('runs are stored apart from local storage, whole: a full local storage changes nothing', async () => {
  const context = await suite.browser.newContext();
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // Fill this origin's local storage, as other pages of the same site would.
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
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 3, 'max-tokens': 16, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const [id] = await historyIds(page);
  assert.deepEqual(await storedIds(app, 1), [id]);
  await app.reload();
  assert.deepEqual(await historyIds(page), [id]);
  assert.equal(await app.byTestId('history-storage-note').count(), 0, 'nothing to say');
  await app.byTestId('history-view').click();
  const kept = await app.exportJson();
  assert.equal(kept.run_id, id);
  assert.equal(kept.records.length, 6, 'every request is kept');
  assert.ok(kept.records.every((r) => r.token_times_us.length === 0), 'without per-token times');
  await context.close();
});

test('a run that cannot be stored is shown and said; runs stored before are never erased', async () => {
  const context = await suite.browser.newContext();
  // A full disk, when the test says so: IndexedDB refuses writes as browsers do.
  await context.addInitScript(() => {
    const put = IDBObjectStore.prototype.put;
    IDBObjectStore.prototype.put = function (...args) {
      if (globalThis.diskFull) throw new DOMException('the quota has been exceeded', 'QuotaExceededError');
      return put.apply(this, args);
    };
  });
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
  assert.deepEqual(await storedIds(app, 2), before);
  await page.evaluate(() => {
    globalThis.diskFull = true;
  });
  await runOnce();
  const after = await historyIds(page);
  assert.equal(after.length, 3, 'the page keeps every run');
  assert.deepEqual(after.slice(1), before, 'the older runs are still there');
  await app.byTestId('history-storage-note').waitFor();
  assert.match(
    await app.byTestId('history-storage-note').textContent(),
    /a run could not be stored \(the disk space the browser gives this page is full: delete older runs or free disk space\).*runs stored before are kept; export it/,
  );
  // Deleting still works while the disk is full; reloaded, storage holds the rest.
  await page.locator(`[data-testid="history-row"][data-run-id="${before[1]}"] [data-testid="history-delete"]`).click();
  assert.deepEqual(await storedIds(app, 1), [before[0]]);
  await app.reload();
  assert.deepEqual(await historyIds(page), [before[0]]);
  await context.close();
});

test('runs kept in local storage by an earlier version move into IndexedDB', async () => {
  const context = await suite.browser.newContext();
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const document = await app.exportJson();
  const older = { ...document, run_id: `${document.run_id}-older` };
  // As 0.1 kept them: one local storage item, a JSON array, newest first.
  await page.evaluate(
    ([docs]) => {
      localStorage.setItem('tokenmeter.history.v1', JSON.stringify(docs));
      return new Promise((resolve) => {
        const open = indexedDB.open('tokenmeter');
        open.onsuccess = () => {
          const tx = open.result.transaction('runs', 'readwrite');
          tx.objectStore('runs').clear();
          tx.oncomplete = () => {
            open.result.close();
            resolve();
          };
        };
      });
    },
    [[document, older]],
  );
  await app.reload();
  assert.deepEqual(await historyIds(page), [document.run_id, older.run_id], 'both, in their order');
  assert.deepEqual(await storedIds(app, 2), [document.run_id, older.run_id]);
  assert.equal(await page.evaluate(() => localStorage.getItem('tokenmeter.history.v1')), null, 'moved, not copied');
  await context.close();
});

test('a vLLM bench serve result imports into history and compares with a run', async () => {
  const fixture = await readFile(new URL('../../crates/tokenmeter-core/tests/fixtures/vllm-detailed.json', import.meta.url), 'utf8');
  const context = await suite.browser.newContext({ viewport: { width: 1280, height: 1200 } });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  const importText = async (text) => {
    if (!(await app.byTestId('history-import-text').isVisible())) await app.byTestId('history').locator('details summary').click();
    await app.fill('history-import-text', text);
    await app.byTestId('history-import').click();
  };
  // Without per-request data: one level of vLLM's own figures; what it did not save
  // (p95 here) is a dash, and the note says so.
  const summaryOnly = JSON.parse(fixture);
  for (const key of ['ttfts', 'itls', 'output_lens', 'input_lens', 'errors', 'generated_texts', 'start_times']) delete summaryOnly[key];
  summaryOnly.date = '20261203-091500';
  await importText(JSON.stringify(summaryOnly));
  await app.byTestId('history-row').first().waitFor();
  await app.byTestId('history-view').first().click();
  // The finished view's code may still be on its way (a piece fetched on first use).
  await app.byTestId('results-row').first().waitFor();
  const [summaryRow] = await app.resultsRows();
  assert.deepEqual([summaryRow.n_ok, summaryRow.n_fail, summaryRow.ttft_p50, summaryRow.ttft_p95, summaryRow.ttft_p99], ['3', '1', '200.0', '–', '298.0']);
  assert.match(await app.byTestId('environment-notes').textContent(), /p90, p95 \(vLLM saves the percentiles/);
  await importText(fixture);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="history-row"]').length === 2);
  const [vllmId] = await historyIds(page);
  assert.match(vllmId, /^vllm-/);
  await app.byTestId('history-view').first().click();
  // Until the view shows the detailed run (the summary-only one had no p95).
  await page.waitForFunction(() => document.querySelector('[data-testid="results-row"] [data-col="ttft_p95"]')?.textContent.trim() !== '–');
  const [row] = await app.resultsRows();
  assert.deepEqual([row.concurrency, row.n_ok, row.n_fail, row.ttft_p50, row.output_tps], [2, '3', '1', '200.0', '123.4']);
  assert.match(await app.byTestId('environment-notes').textContent(), /imported from vLLM bench serve .* browser wait/);
  // This browser's run at the same concurrency, compared with vLLM's.
  await page.locator(`[data-testid="history-row"][data-run-id="${vllmId}"] [data-testid="history-compare"]`).click();
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '2', 'requests-per-level': 4, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  await app.byTestId('comparison').waitFor();
  assert.equal(await app.byTestId('comparison').getAttribute('data-baseline'), vllmId);
  assert.equal(await page.locator('[data-testid="compare-chart"] [data-testid="chart-point"][data-series="ttft_p95_baseline"]').count(), 1);
  await app.screenshot(screenshotPath('history-vllm-compare.png'));
  await context.close();
});

test('a run is compared with several kept runs at once, each in its colour', async () => {
  const context = await suite.browser.newContext({ viewport: { width: 1600, height: 1200 } });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // Three runs with longer and longer answers, then the newest against the two before.
  for (const maxTokens of [8, 16, 24]) {
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 2, 'max-tokens': maxTokens, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
    await page.waitForTimeout(5); // distinct run ids
  }
  const [, middle, oldest] = await historyIds(page);
  const compare = (id) => page.locator(`[data-testid="history-row"][data-run-id="${id}"] [data-testid="history-compare"]`);
  await compare(oldest).click();
  await compare(middle).click();
  assert.equal(await compare(oldest).textContent(), 'Baseline ✓');
  assert.equal(await compare(middle).textContent(), 'Compared ✓');
  await app.byTestId('comparison').waitFor();
  assert.equal(await app.byTestId('comparison').getAttribute('data-baseline'), oldest);
  const pointsOf = (series) =>
    page
      .locator(`[data-testid="compare-chart"] [data-testid="chart-point"][data-series="${series}"]`)
      .evaluateAll((ps) => ps.map((p) => Number(p.dataset.concurrency)));
  for (const series of ['ttft_p95_now', 'ttft_p95_baseline', 'ttft_p95_baseline2', 'output_tps_baseline2']) {
    assert.deepEqual(await pointsOf(series), [1, 2], series);
  }
  // The second kept run's differences are said apart, under its name.
  const other = app.byTestId('compare-said-other');
  assert.equal(await other.getAttribute('data-baseline'), middle);
  assert.match(await other.textContent(), /Against \d{4}-\d\d-\d\d \d\d:\d\d/);
  assert.ok((await other.locator('li').count()) >= 1);
  await app.screenshot(screenshotPath('history-compare-three.png'));
  // Without the baseline, the other kept run becomes it.
  await compare(oldest).click();
  await page.waitForFunction((id) => document.querySelector('[data-testid="comparison"]')?.dataset.baseline === id, middle);
  assert.equal(await compare(middle).textContent(), 'Baseline ✓');
  assert.deepEqual(await pointsOf('ttft_p95_baseline2'), []);
  assert.equal(await app.byTestId('compare-said-other').count(), 0);
  await context.close();
});

test('leaving before a kept run is written asks first; once it is written, leaving does not', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  // The code that writes a run for history is held, as on a slow connection: the
  // run is listed, its copy not written.
  let release;
  const held = new Promise((r) => (release = r));
  await page.route(/-split\/split_keep\.wasm$/, async (route) => {
    await held;
    await route.continue();
  });
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  assert.equal(await app.byTestId('history-row').count(), 1);
  assert.deepEqual(await app.storedRuns(), [], 'not written yet');
  const dialogs = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.type());
    await dialog.dismiss();
  });
  // A reload, refused at the question: the page stays as it was.
  await page.reload({ timeout: 3_000 }).catch(() => {});
  assert.deepEqual(dialogs, ['beforeunload'], 'the page asked before leaving an unwritten run');
  assert.equal(await app.status(), 'done', 'staying keeps the page');
  // The code arrives; the copy is written, and leaving no longer asks.
  release();
  assert.equal((await app.waitForStoredRuns(1)).length, 1);
  await page.reload();
  assert.deepEqual(dialogs, ['beforeunload'], 'asked once, before the copy was written');
  await app.byTestId('history-row').first().waitFor();
  assert.equal(await app.byTestId('history-row').count(), 1, 'the written copy is there after the reload');
  await page.close();
});
