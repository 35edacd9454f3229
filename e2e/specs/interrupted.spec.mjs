// A run that never ends is not lost: leaving the page mid-run asks first, and the
// next page load keeps what was measured, saying the run was interrupted; an
// engine that stops mid-run ends the run with what reached the page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

/** Starts a run of six requests of about three seconds each, one at a time. */
async function startLongRun(page) {
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 6, 'max-tokens': 150, warmup: 0 });
  await app.run();
  // Two requests done: the page has them (progress carries finished requests).
  await page.waitForFunction(
    () => /^[2-5]\//.test(document.querySelector('[data-testid="live-row"] td:nth-child(3)')?.textContent ?? ''),
    null,
    { timeout: 30_000, polling: 100 },
  );
  return app;
}

test('reloading mid-run asks first, and the next load keeps the run so far', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = await startLongRun(page);
  const dialogs = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.type());
    await dialog.accept();
  });
  await page.reload();
  assert.deepEqual(dialogs, ['beforeunload'], 'the page asked before leaving a run');
  await app.byTestId('history-row').first().waitFor();
  assert.equal(await app.byTestId('history-row').count(), 1);
  await app.byTestId('history-view').first().click();
  // A first view on this load fetches the finished view's code first.
  await app.waitForStatus('cancelled');
  assert.match(
    await app.byTestId('environment-notes').textContent(),
    /the run did not end: the page was closed or reloaded while it went; the [2-5] requests finished before are kept here/,
  );
  const [row] = await app.resultsRows();
  assert.ok(Number(row.n_ok) >= 2, `kept ${row.n_ok} requests`);
  // What the saves as it went wrote, and what the page wrote as it left: each
  // request once.
  const ids = (await app.exportJson()).records.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, `each request once: ${ids}`);
  assert.equal(ids.length, Number(row.n_ok));
  // Kept once: a later load does not add it again.
  await page.reload();
  await app.byTestId('history-row').first().waitFor();
  assert.equal(await app.byTestId('history-row').count(), 1);
  await page.close();
});

test('a page that ends without a word keeps the run as saved while it went, each request once', async () => {
  const context = await suite.browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  await startLongRun(page);
  // A save every 5 s writes what finished since the last: after this wait one
  // has written the two requests done.
  await new Promise((r) => setTimeout(r, 5_500));
  const done = Number((await page.locator('[data-testid="live-row"] td:nth-child(3)').textContent()).split('/')[0]);
  // Closed without beforeunload (as a crash or a killed browser ends it): only
  // what the saves wrote is there.
  const next = await context.newPage();
  await page.close({ runBeforeUnload: false });
  const app = new AppPage(next);
  await app.open(suite.site.url);
  await app.byTestId('history-row').first().waitFor();
  await app.byTestId('history-view').first().click();
  await app.waitForStatus('cancelled');
  const doc = await app.exportJson();
  const ids = doc.records.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, 'each request once');
  assert.ok(ids.length >= 2 && ids.length <= done, `kept ${ids.length} of the ${done} done`);
  assert.ok(doc.records.every((r) => !r.error), 'only finished requests');
  assert.match(
    await app.byTestId('environment-notes').textContent(),
    /the run did not end: the page was closed or reloaded while it went/,
  );
  await context.close();
});

test('an engine that stops mid-run ends the run with what it measured', async () => {
  const page = await suite.browser.newPage();
  const app = await startLongRun(page);
  // The worker closes itself: no error reaches the page, only silence.
  const [worker] = page.workers();
  await worker.evaluate('close()').catch(() => {});
  await app.waitForStatus('cancelled', 40_000);
  assert.match(
    await app.byTestId('environment-notes').textContent(),
    /the run did not end: the measuring engine stopped \(it said nothing for 15 s/,
  );
  const [row] = await app.resultsRows();
  assert.ok(Number(row.n_ok) >= 2, `kept ${row.n_ok} requests`);
  assert.equal(await app.byTestId('history-row').count(), 1, 'kept in history');
  // The next run gets a new engine.
  await app.fillPlan({ 'requests-per-level': 1, 'max-tokens': 8 });
  await app.run();
  await app.waitForStatus('done');
  await page.close();
});
