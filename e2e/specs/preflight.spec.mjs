// A server that sends no Access-Control-Max-Age makes the browser repeat the CORS
// preflight every few seconds; those preflights count in TTFT. The browser does
// not expose them, but they show as waits on an open connection, and are flagged.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function notesAfterRun(simArgs, requests) {
  const sim = await startSim(['--preflight-delay-ms', '40', ...simArgs]);
  sims.push(sim);
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // Requests of about 3 s each, one after another: Chromium's 5 s preflight cache
  // expires before the third and the fifth.
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1', 'requests-per-level': requests, 'max-tokens': 150, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const notes = (await app.byTestId('environment-notes').count()) ? await app.byTestId('environment-notes').textContent() : '';
  await page.close();
  return notes;
}

test('uncached preflights are flagged', async () => {
  const notes = await notesAfterRun(['--no-cors-max-age'], 6);
  // Every request more than 5 s after the last preflight (the first one, which pays
  // a preflight whatever the server sends, is not counted).
  assert.match(notes, /[234] requests waited about \d+ ms in the browser on an open connection/);
  assert.match(notes, /Access-Control-Max-Age/);
});

test('with Access-Control-Max-Age the one preflight is not flagged', async () => {
  const notes = await notesAfterRun([], 4);
  assert.doesNotMatch(notes, /CORS preflight/);
});
