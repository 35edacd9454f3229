// A reasoning model: TTFT counts the first reasoning token, and the time to the
// first answer token is reported beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--fault', 'reasoning']);

test('both first-token times are reported', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 20, warmup: 0 });
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
