// Plans come in from the reference article's config.json (pasted or as a file)
// and go out as a link that reproduces the plan without the key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

/** Section 3 of the reference article, verbatim. */
const ARTICLE_CONFIG = `{ "base_url": "https://taotoken.net/api", "api_key": "sk-你的Key填这里", "model": "你的模型ID", "prompt": "请用300字介绍大模型推理中的prefill和decode两个阶段", "max_tokens": 300, "temperature": 0.7, "concurrency_levels": [1, 2, 4, 8, 16], "requests_per_level": 8, "timeout": 60 }`;

const suite = useSuite(null);

async function formValues(app) {
  const values = {};
  for (const id of ['base-url', 'api-key', 'model', 'prompt', 'max-tokens', 'levels', 'requests-per-level', 'timeout']) {
    values[id] = await app.byTestId(id).inputValue();
  }
  return values;
}

const ARTICLE_FORM = {
  'base-url': 'https://taotoken.net/api',
  'api-key': 'sk-你的Key填这里',
  model: '你的模型ID',
  prompt: '请用300字介绍大模型推理中的prefill和decode两个阶段',
  'max-tokens': '300',
  levels: '1,2,4,8,16',
  'requests-per-level': '8',
  timeout: '60',
};

test("pasting the article's config.json fills the form", async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.byTestId('import').locator('summary').click();
  await app.fill('import-text', ARTICLE_CONFIG);
  await app.byTestId('import-apply').click();
  await app.byTestId('import-note').waitFor();
  assert.deepEqual(await formValues(app), ARTICLE_FORM);
  assert.match(await app.byTestId('import-note').textContent(), /memory only/);
  // Over HTTPS at concurrency 16 there is no HTTP/1.1 warning.
  assert.equal(await app.byTestId('connection-warning').count(), 0);
  await page.close();
});

test('the same file, chosen from disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tokenmeter-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, ARTICLE_CONFIG);
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.byTestId('import').locator('summary').click();
  await app.byTestId('import-file').setInputFiles(file);
  await app.byTestId('import-note').waitFor();
  assert.deepEqual(await formValues(app), ARTICLE_FORM);
  await page.close();
});

test('a broken config says what is wrong and changes nothing', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  const before = await formValues(app);
  await app.byTestId('import').locator('summary').click();
  await app.fill('import-text', '{"base_url": "https://x/v1", "model": 3}');
  await app.byTestId('import-apply').click();
  await app.byTestId('import-error').waitFor();
  assert.match(await app.byTestId('import-error').textContent(), /config\.json/);
  assert.deepEqual(await formValues(app), before);
  await page.close();
});

test('the Locust template is fetched only for an export, and a host without it is said', async () => {
  const page = await suite.browser.newPage();
  const fetched = [];
  page.on('request', (request) => {
    if (request.url().endsWith('/locustfile.template.py')) fetched.push(request.url());
  });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  assert.deepEqual(fetched, [], 'the first load does not download the template');

  // A host that lacks the file, and one that answers with its index page instead.
  await page.route('**/locustfile.template.py', (route) => route.fulfill({ status: 404, body: 'not found' }));
  await app.byTestId('export-locust').click();
  await app.byTestId('plan-error').waitFor();
  assert.match(await app.byTestId('plan-error').textContent(), /locustfile\.template\.py: HTTP 404; publish every file of the build's dist\/ folder/);
  await page.unroute('**/locustfile.template.py');
  await page.route('**/locustfile.template.py', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>tokenmeter</title>' }));
  await app.byTestId('export-locust').click();
  await page.waitForFunction(() => /not tokenmeter's Locust template/.test(document.querySelector('[data-testid="plan-error"]')?.textContent ?? ''));
  await page.unroute('**/locustfile.template.py');
  // A copy from another build (a cache kept it): the real file, one byte changed.
  await page.route('**/locustfile.template.py', async (route) => {
    const real = await route.fetch();
    route.fulfill({ response: real, body: `${await real.text()}#` });
  });
  await app.byTestId('export-locust').click();
  await page.waitForFunction(() => /from another build of tokenmeter/.test(document.querySelector('[data-testid="plan-error"]')?.textContent ?? ''));
  await page.unroute('**/locustfile.template.py');

  // The real file: the export downloads, the note goes, and the template is kept.
  const download = page.waitForEvent('download');
  await app.byTestId('export-locust').click();
  assert.equal((await download).suggestedFilename(), 'tokenmeter_locustfile.py');
  await app.byTestId('plan-error').waitFor({ state: 'detached' });
  const again = page.waitForEvent('download');
  await app.byTestId('export-locust').click();
  await again;
  assert.equal(fetched.length, 4, 'fetched once for each failed attempt and once for the export that worked');
  await page.close();
});

test('a shared link reproduces the plan without the key', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({
    'base-url': 'https://llm.example.com/v1/chat/completions',
    'api-key': 'sk-secret-123',
    model: 'qwen2.5-7b',
    'max-tokens': 77,
    levels: '2,4,8',
    'requests-per-level': 5,
    timeout: 33,
  });
  await app.byTestId('share-link').click();
  const url = await app.byTestId('share-url').inputValue();
  assert.ok(url.startsWith(suite.site.url), url);
  assert.ok(!url.includes('sk-secret'), 'the key is not in the link');
  await page.close();

  const second = await suite.browser.newPage();
  const again = new AppPage(second);
  await again.open(url);
  assert.deepEqual(await formValues(again), {
    'base-url': 'https://llm.example.com/v1',
    'api-key': '',
    model: 'qwen2.5-7b',
    prompt: '请用300字介绍大模型推理中的prefill和decode两个阶段',
    'max-tokens': '77',
    levels: '2,4,8',
    'requests-per-level': '5',
    timeout: '33',
  });
  await second.close();
});
