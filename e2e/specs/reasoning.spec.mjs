// A reasoning model: TTFT counts the first reasoning token, and the time to the
// first answer token is reported beside it.
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
  sim = await startSim(['--fault', 'reasoning']);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
  sim?.close();
});

test('both first-token times are reported', async () => {
  const page = await browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 20, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const [row] = await app.resultsRows();
  assert.ok(Number(row.ttfat_p50) > Number(row.ttft_p50), `answer ${row.ttfat_p50} after first token ${row.ttft_p50}`);
  const doc = await app.exportJson();
  for (const r of doc.records) {
    assert.equal(r.n_reasoning_events, 5);
    assert.ok(r.first_answer_us > r.first_token_us);
    assert.equal(r.usage.reasoning_tokens, 5);
  }
  await page.close();
});
