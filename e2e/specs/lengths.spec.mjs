// Lengths that vary as users' do: each request's output length (its max_tokens)
// and a generated prompt's length drawn per request from the plan's seed; answers
// that end on their own before the length asked are said, and forcing the length
// (min_tokens, ignore_eos) makes the server go on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';
import { screenshotPath } from '../lib/browser.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function run(simArgs, setUp) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,2', 'requests-per-level': 6, 'max-tokens': 24, warmup: 0 });
  await app.byTestId('advanced').locator('summary').click();
  await setUp(app);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  const truth = new Map((await sim.truth()).requests.map((t) => [t.response_id, t]));
  return { app, page, doc, truth };
}

test('each request asks its own output length, and gets it', async () => {
  const { page, doc, truth } = await run([], async (app) => {
    await app.byTestId('output-lengths').selectOption('uniform');
    await app.fillPlan({ 'output-lengths-min': 8, 'output-lengths-max': 24 });
  });
  assert.deepEqual(doc.plan.output_lengths, { min: 8, max: 24 });
  const asked = doc.records.map((r) => r.asked_tokens);
  assert.ok(asked.every((n) => n >= 8 && n <= 24), asked.join());
  assert.ok(new Set(asked).size > 3, `lengths vary: ${asked.join()}`);
  for (const r of doc.records) {
    assert.equal(r.n_out, r.asked_tokens, 'the simulator gives what is asked');
    assert.equal(truth.get(r.response_id).max_tokens, r.asked_tokens);
  }
  assert.ok(doc.levels.every((l) => l.output_tokens.min >= 8 && l.output_tokens.max <= 24));
  assert.ok(!doc.environment.conditions.some((c) => c.kind === 'stopped_early'));
  await page.close();
});

test('answers that end before the length asked are said, and forcing the length goes on', async () => {
  const early = await run(['--eos-after', '6'], async () => {});
  const [said] = early.doc.environment.conditions.filter((c) => c.kind === 'stopped_early');
  assert.equal(said.n_early, 12);
  assert.equal(said.asked_mean, 24);
  assert.equal(said.produced_mean, 6);
  assert.match(await early.app.byTestId('environment-notes').textContent(), /ended on their own/);
  await early.page.close();
  const forced = await run(['--eos-after', '6'], async (app) => {
    await app.byTestId('force-output-lengths').check();
  });
  assert.equal(forced.doc.plan.force_output_lengths, true);
  assert.ok(forced.doc.records.every((r) => r.n_out === 24), 'min_tokens and ignore_eos heard');
  assert.ok(!forced.doc.environment.conditions.some((c) => c.kind === 'stopped_early'));
  await forced.page.close();
});

test('a generated prompt of a length drawn per request', async () => {
  const { page, doc, truth } = await run([], async (app) => {
    await app.fill('prompt-tokens', 400);
    await app.byTestId('input-lengths').selectOption('normal');
    await app.fillPlan({ 'input-lengths-min': 100, 'input-lengths-max': 800, 'input-lengths-mean': 400, 'input-lengths-stdev': 120 });
  });
  assert.deepEqual(doc.plan.input_lengths, { min: 100, max: 800, mean: 400, stdev: 120 });
  const prompts = doc.records.map((r) => truth.get(r.response_id).prompt_tokens);
  assert.ok(new Set(prompts).size > 6, `prompt lengths vary: ${prompts.join()}`);
  assert.ok(prompts.every((n) => n >= 90 && n <= 1100), prompts.join());
  await page.close();
});

test('input tokens, their cached share and what 1,000 more cost before the first token, with the chart', async () => {
  // The simulator's prefill: 25 ms a request and 0.1 ms per prompt token it computes.
  const { app, page, doc, truth } = await run([], async (app) => {
    await app.fillPlan({ levels: '1', 'requests-per-level': 12, 'max-tokens': 4 });
    await app.fill('prompt-tokens', 1000);
    await app.byTestId('input-lengths').selectOption('uniform');
    await app.fillPlan({ 'input-lengths-min': 200, 'input-lengths-max': 2000 });
  });
  const prompts = doc.records.map((r) => truth.get(r.response_id).prompt_tokens);
  const mean = prompts.reduce((a, b) => a + b, 0) / prompts.length;
  const [level] = doc.levels;
  assert.ok(Math.abs(level.input_tokens.mean - mean) < 1e-6, `${level.input_tokens.mean} against ${mean}`);
  assert.equal(level.cached_input_pct, 0, 'each prompt its own: nothing cached');
  const slope = level.ttft_ms_per_1k_input;
  assert.ok(slope > 80 && slope < 120, `TTFT per 1,000 input tokens ${slope} ms, the simulator's 100`);

  // Cells are in the page whether their columns are shown or not.
  const [row] = await app.resultsRows();
  assert.ok(Math.abs(Number(row.input_tokens_mean) - mean) <= 0.5, `${row.input_tokens_mean} against ${mean}`);
  assert.equal(row.cached_input, '0.0%');
  assert.ok(Math.abs(Number(row.ttft_per_1k_input) - slope) <= 0.051, `${row.ttft_per_1k_input} against ${slope}`);
  const chart = app.byTestId('chart-ttft-input');
  assert.equal(await chart.count(), 1);
  const fit = chart.locator('[data-testid="ttft-input-level"]');
  assert.equal(await fit.getAttribute('data-concurrency'), '1');
  assert.equal(await fit.getAttribute('data-points'), '12');
  assert.ok(Math.abs(Number(await fit.getAttribute('data-ms-per-1k')) - slope) < 1e-3);
  await chart.screenshot({ path: screenshotPath('ttft-by-input.png') });
  await app.byTestId('lang-zh').click();
  assert.match(await chart.locator('title').first().textContent(), /每 1000 个输入 token TTFT 变化/);
  await page.close();
});
