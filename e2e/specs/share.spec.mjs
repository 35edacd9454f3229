// A finished run as a link: the link holds the run's figures, verdict and notes
// (never its records, its prompt or the key) after the #, opens in a fresh browser
// profile with the same table and verdict, read-only until kept; a damaged link is
// refused with why.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { inflateRawSync } from 'node:zlib';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const KEY = 'sk-share-9d2e';
const PROMPT = '我们的内部问题：不该出现在链接里';
const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

const cells = (rows) => rows.map((r) => [r.concurrency, r.n_ok, r.n_fail, r.ttft_p50, r.tpot_p50, r.output_tps]);

test('a run shared as a link opens elsewhere with the same figures, and a damaged one is refused', async () => {
  const sim = await startSim(['--api-key', KEY]);
  sims.push(sim);
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, 'api-key': KEY, prompt: PROMPT, levels: '1,2', 'requests-per-level': 4, 'max-tokens': 12, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const rows = await app.resultsRows();
  const verdict = await app.byTestId('verdict-text').textContent();
  await app.byTestId('export-share-link').click();
  const url = await app.byTestId('shared-run-url').inputValue();
  assert.ok(url.startsWith(`${suite.site.url.split('#')[0]}`), url.slice(0, 80));
  const [, fragment] = url.split('#');
  assert.match(fragment, /^run=1\.[A-Za-z0-9_-]+$/);
  assert.equal(Number(await app.byTestId('shared-run-url').getAttribute('data-chars')), url.length);
  assert.ok(url.length < 64 * 1024, `${url.length} characters`);
  console.log(`shared link: ${url.length} characters for ${rows.length} levels`);
  // What the link holds, read as any reader would.
  const shared = JSON.parse(inflateRawSync(Buffer.from(fragment.slice('run=1.'.length), 'base64url')).toString('utf8'));
  assert.deepEqual(shared.records, []);
  assert.equal(shared.levels.length, 2);
  const text = JSON.stringify(shared);
  assert.ok(!text.includes(PROMPT) && !text.includes(KEY), 'neither the prompt nor the key');
  await page.close();

  // A fresh profile: nothing kept, no key, only the link.
  const context = await suite.browser.newContext();
  const other = await context.newPage();
  const reader = new AppPage(other);
  await other.goto(url);
  await other.locator('[data-testid="shared-run"][data-state="shown"]').waitFor();
  await reader.byTestId('results-row').first().waitFor();
  assert.deepEqual(cells(await reader.resultsRows()), cells(rows), 'the same table');
  assert.equal(await reader.byTestId('verdict-text').textContent(), verdict, 'the same verdict');
  assert.match(await reader.byTestId('environment-notes').textContent(), /records/);
  await reader.byTestId('history').locator('details summary').click();
  assert.equal(await reader.byTestId('history-row').count(), 0, 'not kept unless asked');
  await reader.byTestId('shared-run-keep').click();
  await reader.byTestId('history-row').first().waitFor();
  assert.equal(await other.locator('[data-testid="shared-run"]').getAttribute('data-state'), 'kept');
  await reader.byTestId('lang-zh').click();
  await other.close();

  // Cut on its way: refused, saying why, in the page's language.
  const cut = await context.newPage();
  await cut.goto(url.slice(0, url.length - 200));
  await cut.locator('[data-testid="shared-run"][data-state="refused"]').waitFor();
  assert.match(await cut.getByTestId('shared-run-error').textContent(), /被截断或改动|cut or changed/);
  await context.close();
});
