// A hidden tab is throttled by the browser: the levels it overlapped are flagged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

async function setHidden(page, hidden) {
  await page.evaluate((h) => {
    Object.defineProperty(document, 'hidden', { value: h, configurable: true });
    Object.defineProperty(document, 'visibilityState', { value: h ? 'hidden' : 'visible', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

test('a level during which the page was hidden is flagged', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 3, 'max-tokens': 40, warmup: 0 });
  await app.run();
  await page.waitForSelector('[data-testid="live-row"][data-concurrency="1"][data-state="running"]');
  await setHidden(page, true);
  await page.waitForTimeout(400);
  await setHidden(page, false);
  await app.waitForStatus('done');
  const notes = await app.byTestId('environment-notes').textContent();
  assert.match(notes, /concurrency 1: the page was hidden for 0\.\d s/);
  assert.doesNotMatch(notes, /concurrency 2: the page was hidden/);
  await page.close();
});
