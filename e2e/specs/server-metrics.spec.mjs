// What the server itself reports: the engine reads the simulator's /metrics (vLLM's
// names) while the run goes, and each level says how many requests the server
// computed and queued. Against a batch of four: at two streams nothing waits; at
// five, one does. A server whose /metrics the page may not read (no CORS there, or
// none published) is said, and the run is unharmed.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function runAgainst(simArgs, fields, setUp = async () => {}) {
  const sim = await startSim(['--max-batch', '4', ...simArgs]);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, warmup: 0, ...fields });
  await setUp(app);
  await app.run();
  await app.waitForStatus('done');
  return { app, page, doc: await app.exportJson() };
}

test('the server queues above its batch and not below, as its /metrics say', async () => {
  const { app, page, doc } = await runAgainst([], { levels: '2,5', 'requests-per-level': 10, 'max-tokens': 40 });
  const metrics = doc.environment.server_metrics;
  assert.equal(metrics.server, 'vllm');
  assert.equal(metrics.unreadable, undefined);
  assert.match(metrics.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
  assert.ok(metrics.samples.length >= 6, `${metrics.samples.length} samples`);
  const [two, five] = doc.levels.map((l) => l.server);
  assert.ok(two.n_samples >= 2 && five.n_samples >= 2, JSON.stringify([two, five]));
  assert.equal(two.waiting_max, 0, 'two streams fit the batch');
  assert.ok(two.running_max <= 2, JSON.stringify(two));
  assert.equal(five.waiting_max, 1, 'one of five waits for the batch of four');
  assert.equal(five.running_max, 4, JSON.stringify(five));
  assert.ok(five.kv_max_pct > 0 && five.kv_max_pct < 100, JSON.stringify(five));
  const chart = page.getByTestId('chart-server');
  assert.ok(Number(await chart.getAttribute('data-samples')) >= 4, 'the samples charted');
  assert.equal(await chart.locator('[data-series="waiting"]').count(), 1);
  assert.equal(
    await chart.getByTestId('over-time-level').count(),
    await page.getByTestId('chart-over-time').getByTestId('over-time-level').count(),
    'the levels shaded as in the tokens/s chart',
  );
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => r.server_waiting), ['0', '1']);
  // Where the tail grew, the diagnosis has the server's own word on it: queueing
  // confirmed by its queue, never put outside the server while requests waited.
  const causes = await page.locator('[data-testid="diagnosis-item"]').evaluateAll((items) => items.map((i) => i.dataset.cause));
  assert.ok(!causes.includes('network_or_gateway'), `diagnosis: ${causes}`);
  if (causes.includes('queueing')) {
    assert.match(await page.locator('[data-testid="diagnosis-item"][data-cause="queueing"]').textContent(), /The server's own metrics confirm it/);
  }
  const line = app.byTestId('server-metrics');
  assert.equal(await line.getAttribute('data-state'), 'read');
  assert.match(await line.textContent(), /vLLM's names/);
  await app.byTestId('lang-zh').click();
  assert.match(await line.textContent(), /服务端指标/);
  await page.close();
});

for (const [args, why, said] of [
  [['--no-metrics-cors'], 'no_response', /CORS/],
  [['--metrics-names', 'none'], 'status', /HTTP 404/],
]) {
  test(`metrics the page cannot read (${args.join(' ')}) are said, and the run goes on`, async () => {
    const { app, page, doc } = await runAgainst(args, { levels: '1,2', 'requests-per-level': 2, 'max-tokens': 8 });
    assert.deepEqual((await app.resultsRows()).map((r) => [r.n_ok, r.n_fail]), [['2', '0'], ['2', '0']]);
    const metrics = doc.environment.server_metrics;
    assert.equal(metrics.unreadable.why, why);
    assert.deepEqual(metrics.samples, []);
    assert.ok(doc.levels.every((l) => l.server === undefined));
    const line = app.byTestId('server-metrics');
    assert.equal(await line.getAttribute('data-state'), 'unreadable');
    assert.match(await line.textContent(), said);
    assert.equal(await page.locator('[data-col="server_waiting"]').count(), 0, 'no server columns without metrics');
    assert.equal(await page.getByTestId('chart-server').count(), 0, 'no chart without metrics');
    await page.close();
  });
}

test('metrics read from a URL of their own, or not at all', async () => {
  // A second simulator plays a separate metrics endpoint (another port, SGLang's names).
  const elsewhere = await startSim(['--metrics-names', 'sglang']);
  sims.push(elsewhere);
  const metricsUrl = elsewhere.baseUrl.replace(/\/v1$/, '/metrics');
  const own = await runAgainst([], { levels: '1', 'requests-per-level': 3, 'max-tokens': 30 }, async (app) => {
    await app.byTestId('advanced').locator('summary').click();
    await app.fill('metrics-url', metricsUrl);
  });
  assert.equal(own.doc.plan.metrics_url, metricsUrl);
  assert.equal(own.doc.environment.server_metrics.url, metricsUrl);
  assert.equal(own.doc.environment.server_metrics.server, 'sglang');
  assert.ok(own.doc.environment.server_metrics.samples.length >= 1);
  await own.page.close();

  const off = await runAgainst([], { levels: '1', 'requests-per-level': 2, 'max-tokens': 8 }, async (app) => {
    await app.byTestId('advanced').locator('summary').click();
    await app.byTestId('poll-metrics').uncheck();
    assert.equal(await app.byTestId('metrics-url').isDisabled(), true);
  });
  assert.equal(off.doc.plan.poll_metrics, false);
  assert.equal(off.doc.environment.server_metrics, undefined);
  assert.equal(await off.app.byTestId('server-metrics').count(), 0, 'nothing said of what was not asked');
  assert.deepEqual((await off.app.resultsRows()).map((r) => r.n_ok), ['2']);
  await off.page.close();
});
