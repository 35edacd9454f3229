// The engine worker's life: a worker that never loads (its loader missing after a
// bad deployment) is noticed, said, and replaced at the next Run, instead of
// leaving the page `running` forever.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { AppPage } from '../pages/app.mjs';

let browser;
let site;

before(async () => {
  site = await serveStatic(env('TOKENMETER_DIST'), '/', {}, { missing: ['engine-worker.js'] });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('a worker that does not load is reported, and the next Run tries afresh', async () => {
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  for (const attempt of [1, 2]) {
    await app.run();
    await app.waitForStatus('idle', 40_000);
    const problem = await app.byTestId('plan-error').textContent();
    assert.match(problem, /engine worker failed to load/, `attempt ${attempt}: ${problem}`);
    assert.match(problem, /engine-worker\.js/);
  }
  await page.close();
});
