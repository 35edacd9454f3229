// A newcomer's first run: the page's default plan against the simulator as
// `cargo xtask serve` starts it (plain http://, its default engine) shows the
// server's shape, a knee inside the ladder, and nothing to be warned about.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('the default plan on the simulator finishes with a knee and no warning', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // Only the address changes: this spec's simulator listens on a port of its own.
  await app.fill('base-url', suite.sim.baseUrl);
  assert.equal(await app.byTestId('levels').inputValue(), '1,2,4,6');
  await app.run();
  assert.equal(await app.byTestId('live-notes').count(), 0, 'no warning while it runs');
  await app.waitForStatus('done', 120_000);
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => r.concurrency), [1, 2, 4, 6]);
  assert.ok(rows.every((r) => r.n_fail === '0'), 'nothing failed');
  assert.equal(await page.locator('[data-testid="results-row"][data-distorted]').count(), 0, 'no level the browser shaped');
  assert.equal(await app.byTestId('environment-notes').count(), 0, `no note: ${await app.byTestId('environment-notes').textContent().catch(() => '')}`);
  // The simulator decodes four at a time: throughput levels off there.
  assert.equal(await app.byTestId('verdict-knee').textContent(), '4');
  assert.equal(await app.byTestId('verdict-safe').textContent(), '2');
  const tps = rows.map((r) => Number(r.output_tps));
  assert.ok(tps[1] > tps[0] * 1.5 && tps[2] > tps[1] * 1.3, `throughput grows to 4: ${tps}`);
  assert.ok(tps[3] < tps[2] * 1.1, `and levels off at 6: ${tps}`);
  assert.equal(await app.byTestId('headline').getAttribute('data-concurrency'), '2');
  // The diagnosis reads the queue at 6: p95 TTFT outgrows p50; said in both languages.
  const causes = await page.locator('[data-testid="diagnosis-item"]').evaluateAll((items) => items.map((i) => i.dataset.cause));
  assert.ok(causes.includes('queueing'), `diagnosis: ${causes}`);
  assert.match(await page.locator('[data-testid="diagnosis-item"][data-cause="queueing"]').textContent(), /queueing is the main source of the long tail/);
  await app.byTestId('lang-zh').click();
  assert.match(await page.locator('[data-testid="diagnosis-item"][data-cause="queueing"]').textContent(), /排队是长尾的主要来源/);
  await app.byTestId('lang-en').click();
  await app.screenshot(screenshotPath('first-run-en.png'));
  await page.close();
});
