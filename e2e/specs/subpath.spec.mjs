// Static hosting: the build works under a sub-path (a project page), because asset
// paths are relative and nothing assumes the site root.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env, launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { AppPage } from '../pages/app.mjs';

const PREFIX = '/tools/tokenmeter/';
let browser;
let site;

before(async () => {
  site = await serveStatic(env('TOKENMETER_DIST'), PREFIX);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await site?.close();
});

test('the app loads from a sub-path with every asset found', async () => {
  const page = await browser.newPage();
  const app = new AppPage(page);
  await app.open(site.url);
  assert.equal(await app.title(), 'tokenmeter');
  const missing = site.requests.filter((r) => r.status !== 200);
  assert.deepEqual(missing, [], 'no asset was looked for outside the sub-path');
  assert.ok(site.requests.some((r) => r.path.startsWith(PREFIX) && r.path.endsWith('.wasm')));
  assert.deepEqual(app.consoleErrors, []);
  await page.close();
});
