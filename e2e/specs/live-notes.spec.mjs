// A level above six over plain http:// runs on HTTP/1.1, where the browser sends at
// most six requests at a time: the live view says so while the run goes (from the
// protocol the first requests measured), and the finished run keeps the same note.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('the live view warns about the HTTP/1.1 queue while the run goes', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({
    'base-url': suite.sim.baseUrl,
    // Three waves of six in the browser: the note comes after the first.
    levels: '8',
    'requests-per-level': 18,
    'max-tokens': 32,
    warmup: 0,
  });
  await app.run();
  // The live view exists only while the run goes: finding the note there is the point.
  const note = app.byTestId('live-note');
  await note.first().waitFor({ timeout: 30_000 });
  const text = await note.first().textContent();
  assert.match(text, /concurrency 8: the browser spoke HTTP\/1\.1, which allows 6 connections per host/);

  await app.waitForStatus('done');
  assert.match(await app.byTestId('environment-notes').textContent(), /concurrency 8: the browser spoke HTTP\/1\.1/);
  await page.close();
});
