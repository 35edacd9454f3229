// The main job: a ladder runs to `done` in the engine worker, and what the page
// reports agrees with the simulator's truth record: token counts exactly, TTFT and
// TPOT within a tolerance loose enough for a busy 2-core machine (the tight
// comparison is a benchmark's job).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('a ladder runs to done and agrees with the truth', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1600, height: 1000 }, acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  assert.equal(await app.status(), 'idle');
  await app.fillPlan({
    'base-url': suite.sim.baseUrl,
    levels: '1,2,4',
    'requests-per-level': 4,
    'max-tokens': 16,
    warmup: 1,
  });
  await app.run();
  await app.waitForStatus('done');

  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => r.concurrency), [1, 2, 4]);
  for (const row of rows) {
    assert.equal(row.n_ok, '4');
    assert.equal(row.n_fail, '0');
    assert.equal(row.tokens, 'usage');
  }
  assert.ok((await app.byTestId('verdict').textContent()).length > 20);
  await app.screenshot(screenshotPath('run-done.png'));

  const doc = await app.exportJson();
  assert.equal(doc.schema, 1);
  assert.equal(doc.status, 'done');
  assert.ok(!JSON.stringify(doc).includes('Bearer'), 'no key material in the document');
  const truth = await suite.sim.truth();
  const byId = new Map(truth.requests.map((t) => [t.response_id, t]));
  const measured = doc.records.filter((r) => !r.warmup);
  assert.equal(measured.length, 12);
  assert.equal(doc.records.filter((r) => r.warmup).length, 1);
  for (const r of measured) {
    const t = byId.get(r.response_id);
    assert.ok(t, `the simulator knows ${r.response_id}`);
    // Token counts: exact.
    assert.equal(r.n_out, t.tokens.length);
    assert.equal(r.n_token_events, t.n_token_events);
    assert.equal(r.token_mismatch, 0);
    // TTFT: the page's (send → first token) against the simulator's (accepted →
    // first token written). Loopback adds little; the machine's noise adds more.
    const ttftMs = (r.first_token_us - r.sent_us) / 1e3;
    const truthTtftMs = (t.tokens[0].written_us - t.accepted_us) / 1e3;
    assert.ok(Math.abs(ttftMs - truthTtftMs) < 60, `TTFT ${ttftMs} vs truth ${truthTtftMs}`);
    // Inter-token time: the page's spread of tokens against the written spread.
    const spanMs = (r.last_token_us - r.first_token_us) / 1e3;
    const truthSpanMs = (t.tokens.at(-1).written_us - t.tokens[0].written_us) / 1e3;
    assert.ok(Math.abs(spanMs - truthSpanMs) < 60 + truthSpanMs * 0.1, `span ${spanMs} vs truth ${truthSpanMs}`);
  }
  assert.deepEqual(app.consoleErrors, []);
  await page.close();
});

test('above six streams over HTTP/1.1 the browser queue is measured and shown', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '2,12', 'requests-per-level': 12, 'max-tokens': 12, warmup: 1 });
  await app.run();
  await app.waitForStatus('done');
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => r.protocol), ['http/1.1', 'http/1.1']);
  const doc = await app.exportJson();
  // Resource Timing for every request, twelve started in the same tick included:
  // entries are told apart by their end as well as their start.
  const at12 = doc.records.filter((r) => !r.warmup && r.concurrency === 12);
  const timed = at12.filter((r) => r.browser);
  assert.equal(timed.length, at12.length, `Resource Timing was exposed for ${timed.length} of ${at12.length}`);
  assert.ok(at12.every((r) => r.browser.request_start_us >= r.sent_us));
  // Twelve lanes, six connections: half the requests waited for a connection.
  const waits = at12.map((r) => r.browser.request_start_us - r.sent_us).sort((a, b) => a - b);
  assert.ok(waits.at(-1) > 5 * waits[0] + 50_000, `some waited in the browser: ${waits}`);
  const level12 = doc.levels.find((l) => l.concurrency === 12);
  assert.ok(level12.ttft_ms.p95 > level12.ttft_after_send_ms.p95, 'the split takes the wait out');
  const notes = await app.byTestId('environment-notes').textContent();
  assert.match(notes, /concurrency 12: the browser spoke HTTP\/1\.1/);
  await page.close();
});

test('the connection warning appears for concurrency above six over http://', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2,4' });
  assert.equal(await app.byTestId('connection-warning').count(), 0);
  await app.fill('levels', '1,2,4,8,16');
  await app.byTestId('connection-warning').waitFor();
  assert.match(await app.byTestId('connection-warning').textContent(), /at most 6 connections per host/);
  await page.close();
});
