// No note without its cause, and each note when its cause is there: the preflight
// note against servers that do and do not cache preflights, at the concurrencies
// people run; the browser's HTTP/1.1 queue named, and TTFT's split said impossible,
// against a server without Timing-Allow-Origin (most real ones); a level the
// browser held back flagged in the table and left out of the verdict.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null, ['--ignore-certificate-errors']);
const sims = [];
after(() => sims.forEach((s) => s.close()));

/** Runs a ladder against a simulator started with `simArgs`; returns what the page shows. */
async function run(simArgs, plan) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, warmup: 2, ...plan });
  await app.run();
  await app.waitForStatus('done', 180_000);
  const notes = (await app.byTestId('environment-notes').count())
    ? await app.byTestId('environment-notes').textContent()
    : '';
  const verdict = await app.byTestId('verdict-text').textContent();
  const flagged = await page
    .locator('[data-testid="results-row"][data-distorted]')
    .evaluateAll((rows) => rows.map((r) => [Number(r.dataset.concurrency), r.dataset.distorted]));
  const doc = await app.exportJson();
  await page.close();
  sim.close();
  return { notes, verdict, flagged, doc };
}

// Level 1 runs 16 requests of about 0.4 s one after another: more than Chromium's
// 5 s preflight cache, so a server without Access-Control-Max-Age is preflighted
// again during it. The levels above have many requests in flight at once.
const LADDER = { levels: '1,4,16,32', 'requests-per-level': 32, 'max-tokens': 16 };

test('HTTP/2 up to 32 streams, preflights cached: no preflight note', async () => {
  const { notes, doc } = await run(['--tls', '--max-batch', '64', '--preflight-delay-ms', '40'], LADDER);
  assert.equal(doc.levels.at(-1).protocols.h2, 32, 'the ladder ran over HTTP/2');
  assert.doesNotMatch(notes, /CORS preflight/);
});

test('HTTP/2, no Access-Control-Max-Age: the preflight note fires', async () => {
  const { notes } = await run(
    ['--tls', '--max-batch', '64', '--no-cors-max-age', '--preflight-delay-ms', '40'],
    LADDER,
  );
  assert.match(notes, /\d+ requests waited about (3\d|4\d|5\d) ms in the browser on an open connection, as a CORS preflight costs/);
});

test('HTTP/1.1 up to six streams, preflights cached: no preflight note', async () => {
  const { notes, flagged } = await run(['--preflight-delay-ms', '40'], {
    levels: '1,2,4,6',
    'requests-per-level': 12,
    'max-tokens': 16,
  });
  assert.doesNotMatch(notes, /CORS preflight/);
  assert.deepEqual(flagged, [], 'six fit in the browser: nothing held back');
});

test('plain http:// without Timing-Allow-Origin: the queue is named and the split said impossible; the held-back level is left out', async () => {
  const { notes, verdict, flagged, doc } = await run(['--no-timing-allow-origin'], {
    levels: '2,4,8',
    'requests-per-level': 16,
    'max-tokens': 16,
  });
  assert.match(notes, /concurrency 8: the browser spoke HTTP\/1\.1, which allows 6 connections per host, and held requests back for an unknown time/);
  assert.match(notes, /the server sends no Timing-Allow-Origin, so the browser hid when \d+ requests left it/);
  const level8 = doc.levels.find((l) => l.concurrency === 8);
  assert.equal(level8.browser_wait_ms, null, 'no split without Timing-Allow-Origin');
  assert.deepEqual(level8.distorted, { by: 'browser_queue', protocol: 'http/1.1', connections: 6 });
  assert.deepEqual(flagged, [[8, 'browser_queue']]);
  assert.match(verdict, /^Left out of this verdict: concurrency 8, where the browser sent at most 6 requests at a time over HTTP\/1\.1/);
  assert.notEqual(doc.verdict.knee, 8, 'a flagged level is never the knee');
  assert.ok(!doc.verdict.levels.some((l) => l.concurrency === 8), 'nor analysed');
});

test('with Timing-Allow-Origin there is no such note', async () => {
  const { notes } = await run([], { levels: '2', 'requests-per-level': 4, 'max-tokens': 8 });
  assert.doesNotMatch(notes, /Timing-Allow-Origin/);
});
