// The API key is a secret: in memory by default, stored only when asked, and never
// in a link or an export.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--api-key', 'sk-remember-me']);

test('the key is remembered only when asked, and never exported', async () => {
  const context = await suite.browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': 'sk-remember-me', levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });

  // Not ticked: a reload forgets it.
  await app.reload();
  assert.equal(await app.byTestId('api-key').inputValue(), '');
  assert.equal(await page.evaluate(() => localStorage.length), 0);

  // Ticked: it survives a reload, and runs use it.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': 'sk-remember-me', levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });
  await app.byTestId('remember-key').check();
  await app.reload();
  await page.waitForFunction(() => document.querySelector('[data-testid="api-key"]').value === 'sk-remember-me');
  assert.equal(await app.byTestId('remember-key').isChecked(), true);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  assert.equal((await app.resultsRows())[0].n_ok, '1');

  // No export carries it.
  for (const id of ['export-json', 'export-csv', 'export-requests-csv', 'export-md']) {
    const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId(id).click()]);
    const text = await readFile(await download.path(), 'utf8');
    assert.ok(text.length > 50, id);
    assert.ok(!text.includes('sk-remember-me'), `${id} holds no key`);
  }
  await app.byTestId('share-link').click();
  assert.ok(!(await app.byTestId('share-url').inputValue()).includes('sk-remember-me'));

  // Unticked: gone from storage.
  await app.byTestId('remember-key').uncheck();
  assert.equal(await page.evaluate(() => localStorage.getItem('tokenmeter.api_key')), null);
  await context.close();
});

test('a server that echoes the key in an error body never gets it into the page, history or exports', async () => {
  const { startSim } = await import('../lib/sim.mjs');
  const sim = await startSim(['--fault', 'echo-headers']);
  const key = 'sk-echo-0123456789abcdef';
  const context = await suite.browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const app = new AppPage(page);
  try {
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': sim.baseUrl, 'api-key': key, levels: '1', 'requests-per-level': 2, 'max-tokens': 4, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
    const [group] = await app.errorGroups();
    assert.equal(group.kind, 'bad_request');
    assert.match(group.sample, /authorization: Bearer \[redacted\]/, 'the echo is shown, the key is not');
    assert.ok(!(await page.content()).includes(key), 'the page holds no key');
    assert.ok(!(await page.evaluate(() => JSON.stringify({ ...localStorage }))).includes(key), 'local storage holds no key');
    const stored = await app.waitForStoredRuns(1);
    assert.equal(stored.length, 1, 'the run is stored');
    assert.ok(!JSON.stringify(stored).includes(key), 'history holds no key');
    for (const id of ['export-json', 'export-requests-csv', 'export-md']) {
      const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId(id).click()]);
      assert.ok(!(await readFile(await download.path(), 'utf8')).includes(key), `${id} holds no key`);
    }
  } finally {
    await context.close();
    sim.close();
  }
});

test('credentials in a base URL and secret-looking headers are refused', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fill('base-url', 'https://alice:pa55word@api.example.com/v1');
  assert.match(await app.byTestId('base-url-error').textContent(), /credentials/);
  assert.doesNotMatch(await app.byTestId('base-url-error').textContent(), /pa55word/);
  await app.fill('base-url', suite.sim.baseUrl);
  await app.byTestId('advanced').locator('summary').click();
  await app.fill('extra-headers', 'Ocp-Apim-Subscription-Key: 0123456789abcdef');
  await app.run();
  assert.match(await app.byTestId('plan-error').textContent(), /looks like a secret/);
  assert.equal(await app.status(), 'idle');
  await app.byTestId('share-link').click();
  assert.equal(await app.byTestId('share-url').count(), 0, 'no link is made of it either');
  await page.close();
});

test('a remembered key is not sent to another endpoint without asking', async () => {
  const { startSim } = await import('../lib/sim.mjs');
  const other = await startSim(['--api-key', 'sk-remember-me']);
  const context = await suite.browser.newContext();
  const page = await context.newPage();
  const app = new AppPage(page);
  try {
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': 'sk-remember-me', levels: '1', 'requests-per-level': 1, 'max-tokens': 4, warmup: 0 });
    await app.byTestId('remember-key').check();
    // Someone shares a link to a plan whose endpoint is elsewhere.
    await app.fill('base-url', other.baseUrl);
    await app.byTestId('share-link').click();
    const link = await app.byTestId('share-url').inputValue();
    await page.goto('about:blank');
    await app.open(link);
    await page.waitForFunction(() => document.querySelector('[data-testid="api-key"]').value === 'sk-remember-me');
    assert.equal(await app.byTestId('base-url').inputValue(), other.baseUrl);

    // Run asks first; declined, nothing is sent.
    const questions = [];
    page.once('dialog', (dialog) => {
      questions.push(dialog.message());
      dialog.dismiss();
    });
    await app.run();
    await app.byTestId('plan-error').waitFor();
    assert.match(questions[0], /entered for http:\/\/127\.0\.0\.1:\d+\. Send it to http:\/\/127\.0\.0\.1:\d+\?/);
    assert.match(await app.byTestId('plan-error').textContent(), /was not sent/);
    assert.equal(await app.status(), 'idle');
    assert.equal((await other.truth()).requests.length, 0, 'the other server got nothing');

    // Confirmed, it goes.
    page.once('dialog', (dialog) => dialog.accept());
    await app.run();
    await app.waitForStatus('done');
    assert.equal((await app.resultsRows())[0].n_ok, '1');
  } finally {
    await context.close();
    other.close();
  }
});
