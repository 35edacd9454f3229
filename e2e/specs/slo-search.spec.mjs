// SLO search: the highest concurrency within the SLO, found without a ladder.
// The simulator decodes four sequences at once (--max-batch 4): up to four
// streams the first token comes after the prefills ahead of it (about 150 ms at
// four); from five, a request waits for a whole answer of 16 tokens (over 300 ms)
// before its own starts. With a p95 TTFT limit of 250 ms the answer is 4.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--max-batch', '4', '--decode-per-seq-ms', '0']);

test('an SLO search finds the batch size of the server, and says it in both languages', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'requests-per-level': 10, 'max-tokens': 16, warmup: 1 });
  await app.byTestId('advanced').locator('summary').click();
  await app.byTestId('load-mode').selectOption('slo_search');
  await app.fillPlan({ 'search-max': 8, 'slo-ttft': '', 'slo-tpot': '' });

  // Without a limit there is nothing to search for: said before anything is sent.
  await app.run();
  await app.byTestId('plan-error').waitFor();
  assert.match(await app.byTestId('plan-error').textContent(), /SLO search needs a limit/);

  await app.fillPlan({ 'slo-ttft': 250, 'slo-error-rate': 0 });
  await app.run();
  await app.waitForStatus('done');
  const result = app.byTestId('slo-search-result');
  const found = Number(await result.getAttribute('data-concurrency'));
  assert.ok(Math.abs(found - 4) <= 1, `the search found ${found}, the server's batch is 4`);
  // Doubling to 8 (held back by the browser's six connections over http://, so
  // not the server's figures), then halving the gap: at most 1, 2, 4, 8, 6, 5.
  const probes = Number(await result.getAttribute('data-probes'));
  assert.ok(probes >= 4 && probes <= 6, `${probes} probes`);
  const concurrencies = (await app.resultsRows()).map((r) => r.concurrency);
  assert.equal(concurrencies.length, probes);
  assert.ok(concurrencies.includes(found) && concurrencies.includes(found + 1));
  const text = await app.byTestId('verdict-text').textContent();
  assert.match(text, new RegExp(`^SLO search: the highest concurrency within the SLO is ${found} \\(${found + 1} broke it: p95 TTFT \\d+ ms > 250 ms\\)`));
  assert.match(text, /requests at \d+ met every limit: \d+% confidence that at least 95% do/);
  await app.screenshot(screenshotPath('slo-search.png'));

  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('verdict-text').textContent(), new RegExp(`^SLO 搜索：满足 SLO 的最高并发是 ${found}`));
  assert.match(await result.textContent(), new RegExp(`满足 SLO 的最高并发：${found}`));

  // The document keeps every probe, for scripts and the report.
  const document = await app.exportJson();
  assert.equal(document.search.highest_met, found);
  assert.equal(document.search.probes.length, probes);
  assert.equal(document.plan.load.mode, 'slo_search');
  await page.close();
});
