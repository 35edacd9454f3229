// The page as `cargo xtask` builds it is split (xtask/src/split.rs): a first visit
// downloads the main module only; the engine's code is fetched by the worker when a
// run starts, and never by the page; the live view's, the code that builds an
// unfinished run's document (to save it as it goes) and the code that reads the
// engine's messages when a run starts, the finished view's while it goes; an
// export's or an import's code on first use; the readers of kept runs when there are
// some, and of a plan when a link or a config.json is opened.
// A host that lacks a piece makes the page say what to publish, and loses nothing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { env, launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { AppPage } from '../pages/app.mjs';

const sim = await startSim([]);
const browser = await launch();
const sites = [];
after(async () => {
  await browser.close();
  await Promise.all(sites.map((site) => site.close()));
  sim.close();
});

/** The build, served as a static host would, without the files named in `missing`. */
async function serve(missing = []) {
  const site = await serveStatic(env('TOKENMETER_DIST'), '/', {}, { missing });
  sites.push(site);
  return site;
}

/** The split points whose module `requests` (the static server's log) fetched. */
const pieces = (requests) =>
  requests
    .map((r) => r.path.match(/-split\/split_(\w+)\.wasm$/)?.[1])
    .filter(Boolean)
    .sort();

const plan = { levels: '1,2', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 };
const VLLM_RESULT = new URL('../../crates/tokenmeter-core/tests/fixtures/vllm-detailed.json', import.meta.url);

test('a first visit fetches no piece; a run fetches the engine (in the worker only), the live and the finished view, the saver, the reader; an export and an import their own', async () => {
  const site = await serve();
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.historyReady();
  assert.ok(
    site.requests.some((r) => r.path.endsWith('/__wasm_split.js') && r.status === 200),
    `a split build: ${site.requests.map((r) => r.path)}`,
  );
  assert.deepEqual(pieces(site.requests), [], 'nothing but the main module on a first visit');

  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan });
  await app.run();
  await app.waitForStatus('done');
  assert.deepEqual(pieces(site.requests), ['engine', 'finished', 'keep', 'live', 'read']);
  assert.equal((await app.resultsRows()).length, 2, 'the finished view is shown as the status says done');
  const pageFetched = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name));
  assert.ok(!pageFetched.some((name) => name.includes('split_engine')), 'the worker fetched it, not the page');

  const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId('export-md').click()]);
  assert.match(readFileSync(await download.path(), 'utf8'), /^# /);
  assert.deepEqual(pieces(site.requests), ['engine', 'exports', 'finished', 'keep', 'live', 'read']);

  await app.byTestId('history').locator('details summary').click();
  await app.fill('history-import-text', 'not a run');
  await app.byTestId('history-import').click();
  await app.byTestId('history-import-error').waitFor();
  assert.deepEqual(pieces(site.requests), ['engine', 'exports', 'finished', 'imports', 'keep', 'live', 'read']);
  // A run shared as a link: its compressor is a piece of its own.
  await app.byTestId('export-share-link').click();
  await app.byTestId('shared-run-url').waitFor();
  assert.deepEqual(pieces(site.requests), ['engine', 'exports', 'finished', 'imports', 'keep', 'live', 'read', 'share']);

  // The next visit finds a kept run: it fetches the reader of kept runs, nothing else.
  await app.byTestId('share-link').click();
  const link = await app.byTestId('share-url').inputValue();
  const before = site.requests.length;
  await app.reload();
  assert.deepEqual(pieces(site.requests.slice(before)), ['read']);
  assert.equal(await app.byTestId('history-row').count(), 1, 'the kept run is listed');

  // A link to a plan fetches the plan's readers, and the plan is in the form.
  const linked = site.requests.length;
  await page.goto('about:blank');
  const [page_url, json] = link.split('#plan=');
  const shared = JSON.parse(decodeURIComponent(json));
  shared.max_tokens = 5;
  await app.open(`${page_url}#plan=${encodeURIComponent(JSON.stringify(shared))}`);
  assert.deepEqual(pieces(site.requests.slice(linked)), ['plans', 'read']);
  assert.equal(await app.byTestId('max-tokens').inputValue(), '5');
  await page.close();
});

test('a host without the readers: a run and a link say what to publish', async () => {
  const site = await serve(['split_read.wasm', 'split_plans.wasm']);
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan });
  // The engine's first message cannot be read: the run does not start, and says why.
  await app.run();
  await app.waitForStatus('idle', 40_000);
  assert.match(await app.byTestId('plan-error').textContent(), /could not fetch part of its code/);

  await app.byTestId('share-link').click();
  const link = await app.byTestId('share-url').inputValue();
  await page.goto('about:blank');
  await app.open(link);
  assert.equal(await app.byTestId('config-panel').getAttribute('data-plan-link'), 'refused');
  await app.byTestId('import').locator('summary').click();
  assert.match(await app.byTestId('import-error').textContent(), /could not fetch part of its code/);
  await page.close();
});

test('a host without the pieces: the page says what to publish, and the next try fetches afresh', async () => {
  const site = await serve(['split_engine.wasm', 'split_imports.wasm']);
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan });
  for (const attempt of [1, 2]) {
    await app.run();
    await app.waitForStatus('idle', 40_000);
    const problem = await app.byTestId('plan-error').textContent();
    assert.match(problem, /could not fetch part of its code/, `attempt ${attempt}: ${problem}`);
    assert.match(problem, /publish every file of the build's dist\/ folder/);
  }
  const tries = site.requests.filter((r) => r.path.endsWith('/split_engine.wasm'));
  assert.ok(tries.length >= 2 && tries.every((r) => r.status === 404), `each Run asked again: ${JSON.stringify(tries)}`);

  // An import says the same where the import's errors go, and keeps the text.
  await app.byTestId('history').locator('details summary').click();
  await app.fill('history-import-text', readFileSync(VLLM_RESULT, 'utf8'));
  await app.byTestId('history-import').click();
  assert.match(await app.byTestId('history-import-error').textContent(), /could not fetch part of its code/);
  assert.notEqual(await app.byTestId('history-import-text').inputValue(), '', 'nothing is lost');
  await page.close();
});

test('an export whose code is missing says so, and the run stays', async () => {
  const site = await serve(['split_exports.wasm']);
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan });
  await app.run();
  await app.waitForStatus('done');
  await app.byTestId('export-html').click();
  assert.match(await app.byTestId('export-error').textContent(), /could not fetch part of its code/);
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('export-error').textContent(), /页面无法获取它的一部分代码/, 'said again in Chinese');
  await app.byTestId('lang-en').click();
  assert.equal((await app.resultsRows()).length, 2, 'the results are still there');
  await page.close();
});

test('a finished view whose code is missing says so, and the run is kept', async () => {
  const site = await serve(['split_finished.wasm']);
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan });
  await app.run();
  await app.waitForStatus('done');
  assert.match(await app.byTestId('results-missing').textContent(), /could not fetch part of its code/);
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('results-missing').textContent(), /页面无法获取它的一部分代码/, 'said again in Chinese');
  await app.byTestId('lang-en').click();
  await app.waitForStoredRuns(1);
  assert.equal(await app.byTestId('history-row').count(), 1, 'the run is in history');
  await page.close();
});

test('a live view whose code is missing says so while the run goes, and the run ends as usual', async () => {
  const site = await serve(['split_live.wasm']);
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  // Long enough to be seen going.
  await app.fillPlan({ 'base-url': sim.baseUrl, ...plan, 'requests-per-level': 6, 'max-tokens': 64 });
  await app.run();
  await app.byTestId('results-missing').waitFor();
  assert.match(await app.byTestId('results-missing').textContent(), /could not fetch part of its code/);
  assert.equal(await app.status(), 'running', 'the run goes on');
  await app.waitForStatus('done');
  assert.equal((await app.resultsRows()).length, 2, 'the finished view is shown');
  await page.close();
});
