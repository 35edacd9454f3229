// A hidden tab is throttled by the browser: the levels it overlapped are flagged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { AppPage } from '../pages/app.mjs';

let browser;
let site;
let sim;

before(async () => {
  site = await serveStatic(env('TOKENMETER_DIST'), '/');
  sim = await startSim();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
  sim?.close();
});

async function setHidden(page, hidden) {
  await page.evaluate((h) => {
    Object.defineProperty(document, 'hidden', { value: h, configurable: true });
    Object.defineProperty(document, 'visibilityState', { value: h ? 'hidden' : 'visible', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

test('a level during which the page was hidden is flagged', async () => {
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,2', 'requests-per-level': 3, 'max-tokens': 40, warmup: 0 });
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
