// Where the time goes between the browser and the model: a server that reports
// its own timings (llama.cpp's `timings`) behind a gateway that holds each request
// 150 ms is named as the network's or the gateway's; the same server without the
// gateway is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--timings', '--gateway-delay-ms', '150']);

const causesAfterRun = async (app, baseUrl) => {
  await app.fillPlan({ 'base-url': baseUrl, levels: '1,2', 'requests-per-level': 6, 'max-tokens': 8, warmup: 1 });
  await app.run();
  await app.waitForStatus('done');
  return app.page.locator('[data-testid="diagnosis-item"]').evaluateAll((items) => items.map((i) => i.dataset.cause));
};

test('a gateway in front of a server that reports its timings is named, and only then', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  assert.ok((await causesAfterRun(app, suite.sim.baseUrl)).includes('network_or_gateway'));
  const item = page.locator('[data-testid="diagnosis-item"][data-cause="network_or_gateway"]');
  assert.match(
    await item.textContent(),
    /at concurrency 1 the first token came \d+ ms after the request left the browser \(p50\), but the server reports only \d+ ms of prompt processing: \d+ ms \(\d+%\) went between this browser and the model/,
  );
  await app.byTestId('lang-zh').click();
  assert.match(await item.textContent(), /花在本浏览器与模型之间/);
  await app.byTestId('lang-en').click();

  const direct = await startSim(['--timings']);
  try {
    assert.ok(!(await causesAfterRun(app, direct.baseUrl)).includes('network_or_gateway'), 'silent without a gateway');
  } finally {
    direct.close();
  }
  await page.close();
});
