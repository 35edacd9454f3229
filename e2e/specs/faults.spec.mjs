// Failures are counted and explained, never a crash: each kind with its hint and a
// sample of what the server said, shown as text.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { screenshotPath } from '../lib/browser.mjs';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const sims = [];
const suite = useSuite(null);
after(() => sims.forEach((s) => s.close()));

async function runAgainst(simArgs, fields = {}) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({
    'base-url': sim.baseUrl,
    levels: '1,2',
    'requests-per-level': 2,
    'max-tokens': 12,
    warmup: 0,
    ...fields,
  });
  await app.run();
  await app.waitForStatus('done');
  return { app, page, sim };
}

test('a missing key is an auth failure with its hint', async () => {
  const { app, page } = await runAgainst(['--api-key', 'sk-right']);
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => [r.n_ok, r.n_fail]), [['0', '2'], ['0', '2']]);
  const groups = await app.errorGroups();
  assert.equal(groups.length, 1);
  assert.equal(groups[0].kind, 'auth');
  assert.match(groups[0].hint, /API key/);
  assert.match(groups[0].sample, /invalid_api_key/);
  await app.byTestId('lang-zh').click();
  assert.match((await app.errorGroups())[0].hint, /密钥|Key/);
  await page.close();
});

test('the right key passes, sent as a bearer token', async () => {
  const { app, page } = await runAgainst(['--api-key', 'sk-right'], { 'api-key': 'sk-right' });
  assert.deepEqual((await app.resultsRows()).map((r) => r.n_fail), ['0', '0']);
  await page.close();
});

test('a gateway HTML page is a server error, shown as text', async () => {
  const { app, page } = await runAgainst(['--fault', 'html-502']);
  const [group] = await app.errorGroups();
  assert.equal(group.kind, 'server_error');
  assert.match(group.sample, /<center><h1>502 Bad Gateway<\/h1><\/center>/, 'the markup is visible text');
  assert.match(group.sampleHtml, /&lt;html&gt;/, 'and was never rendered as HTML');
  await app.screenshot(screenshotPath('errors.png'));
  await page.close();
});

test('a cut stream and an error event inside a 200 stream', async () => {
  for (const [fault, kind] of [
    ['cut', 'stream_cut'],
    ['error-event', 'stream_error_event'],
  ]) {
    const { app, page } = await runAgainst(['--fault', fault]);
    const groups = await app.errorGroups();
    assert.deepEqual(groups.map((g) => g.kind), [kind], fault);
    await page.close();
  }
});

test('a base URL without /v1 is a 404 that says where to look', async () => {
  const sim = await startSim();
  sims.push(sim);
  const { app, page } = await runAgainst([], { 'base-url': sim.baseUrl.replace(/\/v1$/, '') });
  const [group] = await app.errorGroups();
  assert.equal(group.kind, 'not_found');
  assert.match(group.hint, /\/v1/);
  await page.close();
});

test('a body held open after [DONE] ends the request at [DONE], not at the timeout', async () => {
  const { app, page } = await runAgainst(['--fault', 'done-hold', '--hang-s', '60'], {
    levels: '1',
    timeout: 20,
  });
  const [row] = await app.resultsRows();
  assert.equal(row.n_ok, '2', 'both requests are complete');
  assert.equal(row.n_fail, '0');
  // E2E ends at [DONE]: about the stream's length, far from the 20 s timeout.
  assert.ok(Number(row.e2e_p95) < 3000, `E2E p95 ${row.e2e_p95} ms`);
  await page.close();
});
