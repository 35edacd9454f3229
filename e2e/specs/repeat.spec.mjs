// A repeated ladder: every level, then all again; each level pools its passes, and
// the spread between them (the noise floor) is shown and said.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('a ladder repeated three times keeps each pass and says the noise between them', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 4, 'max-tokens': 8, warmup: 0 });
  await app.byTestId('advanced').locator('summary').click();
  await app.fill('repeat', 3);
  await app.run();
  // The passes run in turn, each level of each pass a row of the live view.
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="live-row"]').length === 6);
  const passes = await page.$$eval('[data-testid="live-row"]', (rows) => rows.map((r) => `${r.dataset.concurrency}/${r.dataset.repetition}`));
  assert.deepEqual(passes, ['1/0', '2/0', '1/1', '2/1', '1/2', '2/2']);
  await app.waitForStatus('done');

  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => [r.concurrency, r.n_ok]), [[1, '12'], [2, '12']]);
  for (const row of rows) {
    assert.match(row.output_tps_spread, /^\d+\.\d%$/);
    assert.match(row.ttft_p95_spread, /^\d+\.\d%$/);
  }
  assert.match(await app.byTestId('verdict-text').textContent(), /Between the 3 passes, output tokens\/s varied by up to \d+\.\d% \(at concurrency [12]\)/);

  const document = await app.exportJson();
  assert.equal(document.plan.repeat, 3);
  for (const pass of [0, 1, 2]) {
    assert.equal(document.records.filter((r) => (r.repetition ?? 0) === pass).length, 8, `pass ${pass}`);
  }
  assert.deepEqual(document.levels.map((l) => l.repetitions.map((p) => p.repetition)), [[0, 1, 2], [0, 1, 2]]);
  await page.close();
});
