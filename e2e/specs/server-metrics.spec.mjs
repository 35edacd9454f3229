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

async function runAgainst(simArgs, fields) {
  const sim = await startSim(['--max-batch', '4', ...simArgs]);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, warmup: 0, ...fields });
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
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => r.server_waiting), ['0', '1']);
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
    await page.close();
  });
}
