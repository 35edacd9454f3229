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
  const page = await suite.browser.newPage();
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
  // Kept once: a later load does not add it again.
  await page.reload();
  await app.byTestId('history-row').first().waitFor();
  assert.equal(await app.byTestId('history-row').count(), 1);
  await page.close();
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
