// A/B in one plan: the same ladder against two endpoints of different speeds,
// level by level in turn; the results show both side by side and name the faster
// one at every level.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshotPath } from '../lib/browser.mjs';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

// A decodes a token every 20 ms, B every 45 ms.
const suite = useSuite(['--decode-per-seq-ms', '0']);

test('two targets run in turn, side by side, the faster named at every level', async () => {
  const slow = await startSim(['--decode-base-ms', '45', '--decode-per-seq-ms', '0']);
  try {
    const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const app = new AppPage(page);
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 4, 'max-tokens': 16, warmup: 1 });
    await app.byTestId('target-add').click();
    const row = app.byTestId('target-row');
    await row.getByTestId('base-url').fill(slow.baseUrl);
    await row.getByTestId('model').fill('tokenmeter-sim');
    await app.run();
    // Level by level, every target in turn: A1, B1, A2, B2.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="live-row"]').length === 4);
    await app.waitForStatus('done');

    const rows = await page.$$eval('[data-testid="ab-row"]', (rs) => rs.map((r) => [Number(r.dataset.concurrency), r.dataset.better]));
    assert.deepEqual(rows, [[1, '0'], [2, '0']], 'A is faster at both levels');
    assert.match(await app.byTestId('ab-said').textContent(), /^A · tokenmeter-sim is faster at every level: \d+–\d+% more output tokens\/s/);
    assert.equal(await page.locator('[data-testid="ab-chart"] [data-testid="chart-point"][data-series="output_tps_b"]').count(), 2);
    // The rest of the page is target A's.
    assert.deepEqual((await app.resultsRows()).map((r) => [r.concurrency, r.n_ok]), [[1, '4'], [2, '4']]);
    await app.screenshot(screenshotPath('ab.png'));
    await app.byTestId('lang-zh').click();
    assert.match(await app.byTestId('ab-said').textContent(), /在每一档都更快/);

    const document = await app.exportJson();
    assert.equal(document.plan.targets[0].base_url, slow.baseUrl);
    assert.equal(document.ab.length, 1);
    assert.equal(document.ab[0].plan.base_url, slow.baseUrl);
    assert.ok(document.records.every((r) => (r.target ?? 0) === 0));
    assert.ok(document.ab[0].records.every((r) => r.target === 1));
    assert.equal(document.ab[0].records.length, 9, 'a warm-up and 8 measured requests went to B');
    assert.equal((await slow.truth()).requests.length, 9, 'B served exactly those');
    await page.close();
  } finally {
    slow.close();
  }
});

test('interleaved: every target at once at each level, each keeping the concurrency', async () => {
  const slow = await startSim(['--decode-base-ms', '45', '--decode-per-seq-ms', '0']);
  try {
    const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
    const app = new AppPage(page);
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 4, 'max-tokens': 16, warmup: 0 });
    await app.byTestId('target-add').click();
    const row = app.byTestId('target-row');
    await row.getByTestId('base-url').fill(slow.baseUrl);
    await row.getByTestId('model').fill('tokenmeter-sim');
    await app.byTestId('ab-order').selectOption('requests');
    await app.run();
    await app.waitForStatus('done');
    const document = await app.exportJson();
    assert.equal(document.plan.ab_order, 'requests');
    // One level each, both targets in flight together: B's requests overlap A's.
    assert.equal(document.records.length, 8);
    assert.equal(document.ab[0].records.length, 8);
    const spans = (records, c) => records.filter((r) => r.concurrency === c).map((r) => [r.sent_us, r.end_us]);
    const [a, b] = [spans(document.records, 2), spans(document.ab[0].records, 2)];
    assert.ok(a.some(([s, e]) => b.some(([s2, e2]) => s2 < e && s < e2)), 'A and B were in flight at the same time');
    const rows = await page.$$eval('[data-testid="ab-row"]', (rs) => rs.map((r) => r.dataset.better));
    assert.deepEqual(rows, ['0', '0']);
    assert.equal((await slow.truth()).requests.length, 8);
    await page.close();
  } finally {
    slow.close();
  }
});
