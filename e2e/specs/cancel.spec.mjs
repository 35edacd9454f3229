// Cancel stops every request in flight at once (the simulator sees the
// disconnects) and keeps what was measured. Before the engine has started, Cancel
// withdraws the run at once instead of waiting for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('cancel mid-run aborts everything in flight and keeps the results', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // Two lanes of 2-second requests: cancel once two have finished and two are in flight.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '2', 'requests-per-level': 8, 'max-tokens': 100, warmup: 0 });
  await app.run();
  await app.waitForStatus('running');
  await page.waitForFunction(() => {
    const row = document.querySelector('[data-testid="live-row"][data-state="running"]');
    return row && parseInt(row.children[2].textContent, 10) >= 2;
  }, null, { timeout: 60_000 });
  await page.waitForTimeout(300);
  await app.cancel();
  await app.waitForStatus('cancelled', 30_000);
  assert.equal(await app.byTestId('cancelled-note').count(), 1);
  const [row] = await app.resultsRows();
  assert.ok(Number(row.n_ok) >= 2, 'what finished before Cancel is kept');

  const doc = await app.exportJson();
  assert.equal(doc.status, 'cancelled');
  const cancelled = doc.records.filter((r) => r.error?.kind === 'cancelled');
  assert.ok(cancelled.length >= 1, 'in-flight requests are recorded as cancelled');
  assert.ok(cancelled.every((r) => r.n_token_events > 0), 'with the tokens that arrived');

  // The simulator saw every one of them go.
  let truth;
  for (let i = 0; i < 50; i++) {
    truth = await suite.sim.truth();
    if (truth.requests.filter((t) => t.outcome === 'disconnected').length >= cancelled.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const gone = truth.requests.filter((t) => t.outcome === 'disconnected');
  assert.equal(gone.length, cancelled.length);
  assert.ok(gone.every((t) => t.tokens.length < 100));
  assert.ok(doc.records.length < 8, 'nothing was sent after Cancel');
  await page.close();
});

test('Cancel before the engine has started withdraws the run at once; the next Run goes', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  // The engine's loader is held, as on a slow connection: the engine cannot start.
  let release;
  const held = new Promise((r) => (release = r));
  let asked = 0;
  await page.route('**/engine-worker.js', async (route) => {
    asked += 1;
    await held;
    await route.continue();
  });
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 10, warmup: 0 });
  const nBefore = (await suite.sim.truth()).requests.length;
  await app.run();
  await app.waitForStatus('running');
  for (let i = 0; i < 200 && asked < 1; i++) await page.waitForTimeout(50);
  assert.ok(asked >= 1, 'the page asked for the engine');
  await app.cancel();
  // Well inside the 15 s the page gives the engine to start: Cancel ended it.
  await app.waitForStatus('idle', 5_000);
  assert.match(await app.byTestId('plan-error').textContent(), /Cancelled before the engine had started/);
  assert.equal(await app.byTestId('history-row').count(), 0, 'nothing to keep');
  // The engine loads now, and is given nothing of the withdrawn run.
  release();
  await page.waitForTimeout(1_000);
  assert.equal((await suite.sim.truth()).requests.length, nBefore, 'nothing was sent');
  // The engine that loaded meanwhile measures the next run.
  await app.run();
  await app.waitForStatus('done', 60_000);
  const doc = await app.exportJson();
  assert.equal(doc.records.length, 2);
  assert.ok(doc.records.every((r) => !r.error), JSON.stringify(doc.records.map((r) => r.error)));
  assert.equal((await suite.sim.truth()).requests.length, nBefore + 2);
  assert.equal(await app.byTestId('plan-error').count(), 0, 'the note is gone with the new run');
  await page.close();
});
