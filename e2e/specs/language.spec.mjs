// The results open in the language the browser prefers first (Chinese or English),
// and a language chosen on the page is kept for the next visit, over the browser's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

async function openIn(locale) {
  const context = await suite.browser.newContext({ locale });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  return { context, page, app };
}

async function shown(app) {
  return {
    en: await app.byTestId('lang-en').getAttribute('aria-pressed'),
    zh: await app.byTestId('lang-zh').getAttribute('aria-pressed'),
    lang: await app.byTestId('results-panel').getAttribute('lang'),
    title: await app.page.locator('#results-title').textContent(),
  };
}

test('a browser that prefers Chinese opens the results in Chinese; English, once chosen, is kept', async () => {
  const { context, app } = await openIn('zh-CN');
  assert.deepEqual(await shown(app), { en: 'false', zh: 'true', lang: 'zh-CN', title: '结果' });
  assert.match(await app.byTestId('results-empty').textContent(), /还没有运行/);

  await app.byTestId('lang-en').click();
  assert.deepEqual(await shown(app), { en: 'true', zh: 'false', lang: 'en', title: 'Results' });
  await app.reload();
  assert.deepEqual(await shown(app), { en: 'true', zh: 'false', lang: 'en', title: 'Results' }, 'the choice outlives the page');
  assert.match(await app.byTestId('results-empty').textContent(), /No run yet/);
  assert.deepEqual(app.consoleErrors, []);
  await context.close();
});

test('a browser that prefers English opens in English; Chinese, once chosen, is what the next run is told in', async () => {
  const { context, app } = await openIn('en-US');
  assert.deepEqual(await shown(app), { en: 'true', zh: 'false', lang: 'en', title: 'Results' });

  await app.byTestId('lang-zh').click();
  await app.reload();
  assert.deepEqual(await shown(app), { en: 'false', zh: 'true', lang: 'zh-CN', title: '结果' });
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  assert.match(await app.byTestId('verdict-text').textContent(), /[\u4e00-\u9fff]/, 'the verdict is in Chinese');
  assert.deepEqual(app.consoleErrors, []);
  await context.close();
});
