// The advanced settings: models from the server, faults through extra headers, the
// key kept out of saved headers, api-key auth, the legacy endpoint, open-loop
// arrivals, and an SLO the verdict enforces.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const sims = [];
const suite = useSuite(null);
after(() => sims.forEach((s) => s.close()));

async function open(simArgs = []) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,2', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.byTestId('advanced').locator('summary').click();
  return { sim, page, app };
}

test('load models fills the model from the server', async () => {
  const { page, app } = await open(['--model', 'qwen2.5-7b-instruct', '--model', 'deepseek-r1']);
  await app.fill('model', 'typo');
  await app.byTestId('load-models').click();
  await page.waitForFunction(() => /on the server/.test(document.querySelector('[data-testid="models-note"]')?.textContent ?? ''));
  assert.match(await app.byTestId('models-note').textContent(), /models on the server: qwen2\.5-7b-instruct, deepseek-r1/);
  assert.equal(await app.byTestId('model').inputValue(), 'qwen2.5-7b-instruct');
  await page.close();
});

test('a fault through an extra header: 429 with its hint', async () => {
  const { page, app } = await open();
  await app.fill('extra-headers', 'x-tokenmeter-fault: 429');
  await app.run();
  await app.waitForStatus('done');
  const groups = await app.errorGroups();
  assert.deepEqual(groups.map((g) => g.kind), ['rate_limited']);
  assert.match(groups[0].hint, /lower the concurrency/);
  await page.close();
});

test('a key in an extra header is refused, with the reason', async () => {
  const { page, app } = await open();
  await app.fill('extra-headers', 'Authorization: Bearer sk-oops');
  await app.run();
  await app.byTestId('plan-error').waitFor();
  assert.match(await app.byTestId('plan-error').textContent(), /put the key in the API key field/);
  assert.equal(await app.status(), 'idle');
  await page.close();
});

test('the key as an api-key header, against the legacy completions endpoint', async () => {
  const { page, app } = await open(['--api-key', 'sk-azure']);
  await app.fill('api-key', 'sk-azure');
  await app.byTestId('auth').selectOption('api_key_header');
  await app.byTestId('endpoint').selectOption('completions');
  await app.run();
  await app.waitForStatus('done');
  assert.deepEqual((await app.resultsRows()).map((r) => r.n_ok), ['2', '2']);
  const doc = await app.exportJson();
  assert.equal(doc.plan.endpoint, 'completions');
  assert.equal(doc.plan.auth, 'api_key_header');
  assert.ok(!JSON.stringify(doc).includes('sk-azure'), 'the key is not in the document');
  await page.close();
});

test('open-loop arrivals and an SLO the verdict enforces', async () => {
  const { page, app } = await open();
  await app.byTestId('load-mode').selectOption('arrivals');
  await app.fill('rate', 20);
  await app.fill('requests-per-level', 6);
  await app.fill('slo-ttft', 1);
  await app.run();
  await app.waitForStatus('done');
  const rows = await app.resultsRows();
  assert.equal(rows.length, 1);
  assert.equal(rows[0].concurrency, 0);
  assert.equal(rows[0].n_ok, '6');
  assert.equal(rows[0].goodput_rps, '0.00');
  const doc = await app.exportJson();
  assert.equal(doc.plan.load.mode, 'arrivals');
  assert.equal(doc.plan.slo.ttft_p95_ms, 1);
  // Arrivals 50 ms apart: the schedule, not the server, decides when each was due.
  const wanted = doc.records.map((r) => r.wanted_us).sort((a, b) => a - b);
  const gaps = wanted.slice(1).map((w, i) => w - wanted[i]);
  assert.ok(gaps.every((g) => g > 0), `${gaps}`);
  assert.match(await app.byTestId('verdict-text').textContent(), /SLO/);
  await page.close();
});
