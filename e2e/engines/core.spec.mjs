// The core behaviours, in every engine our users bring (Chromium, Firefox ESR,
// WebKitGTK: Safari's engine), through W3C WebDriver: the default plan to `done`
// on two engine workers, agreeing with the simulator's truth, failures with their kinds, Cancel, the key
// kept out of exports and storage, history across a reload. The page is served
// under a sub-path, as a static host would, so that is checked in each engine too.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { env } from '../lib/browser.mjs';
import { startSim } from '../lib/sim.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { selectedEngines, startSession } from './drivers.mjs';
import { EnginePage } from './page.mjs';

const PREFIX = '/tools/tokenmeter/';
/** How the page names each engine after a run (the `measured-by` hook). */
const MEASURED_BY = { chromium: /Chromium \(headless\) [\d.]+ \(Blink\)/, firefox: /Firefox [\d.]+ \(Gecko\)/, webkit: /WebKitGTK [\d.]+ \(WebKit\)/ };
/** What each engine calls itself in its user agent. */
const USER_AGENT = { chromium: /Chrome\//, firefox: /Firefox\//, webkit: /AppleWebKit\/[\d.]+ \(KHTML, like Gecko\)(?!.*Chrome)/ };

for (const engine of selectedEngines()) {
  describe(engine, () => {
    let session;
    let site;
    let app;
    const sims = [];
    const sim = async (args = []) => {
      const s = await startSim(args);
      sims.push(s);
      return s;
    };

    before(async () => {
      site = await serveStatic(env('TOKENMETER_DIST'), PREFIX);
      session = await startSession(engine);
      app = new EnginePage(session.driver);
    });
    after(async () => {
      await session?.close();
      await site?.close();
      sims.forEach((s) => s.close());
    });

    test('the default plan runs to done under a sub-path and agrees with the truth', async () => {
      const s = await sim();
      await app.open(site.url);
      assert.match(await app.userAgent(), USER_AGENT[engine]);
      assert.deepEqual(site.requests.filter((r) => r.status !== 200), [], 'every asset found under the sub-path');
      assert.equal(await app.status(), 'idle');
      // The default plan, pointed at this spec's simulator, its levels of two
      // streams and more spread over two engine workers (the second started by
      // the first: a worker of a worker, in every engine).
      await app.fillPlan({ 'base-url': s.baseUrl, 'engine-workers': 2 });
      await app.click('run');
      await app.waitForStatus('done', 180_000);
      const rows = await app.resultsRows();
      assert.deepEqual(rows.map((r) => r.concurrency), [1, 2, 4, 6]);
      for (const row of rows) {
        assert.equal(row.n_ok, '8', `level ${row.concurrency}`);
        assert.equal(row.n_fail, '0');
        assert.equal(row.tokens, 'usage');
      }
      assert.match(await app.text('measured-by'), MEASURED_BY[engine]);
      const doc = JSON.parse(await app.exportText('export-json'));
      assert.equal(doc.status, 'done');
      assert.match(doc.environment.user_agent, USER_AGENT[engine], 'the document says which engine measured it');
      assert.deepEqual(doc.environment.engine_load.map((l) => l.workers), [1, 2, 2, 2], 'the helper started and measured');
      const truth = new Map((await s.truth()).requests.map((t) => [t.response_id, t]));
      const deltas = [];
      for (const r of doc.records.filter((r) => !r.warmup)) {
        const t = truth.get(r.response_id);
        assert.ok(t, `the simulator knows ${r.response_id}`);
        assert.equal(r.n_out, t.tokens.length, 'token counts are exact');
        assert.equal(r.n_token_events, t.n_token_events);
        // Below the browser's HTTP/1.1 limit nothing queues in the browser: from
        // when the request left it (Resource Timing, where the engine shows it),
        // the page's TTFT is the server's.
        const left = r.browser?.request_start_us ?? r.sent_us;
        const ttftMs = (r.first_token_us - left) / 1e3;
        const truthMs = (t.tokens[0].written_us - t.accepted_us) / 1e3;
        deltas.push(ttftMs - truthMs);
      }
      // Request by request against the truth: the median within a loose bound for a
      // busy machine, and none grossly off. (One request may meet a stall of the
      // shared cores; WebKitGTK shows no send time, and its own send takes up to
      // ~100 ms here.)
      deltas.sort((a, b) => a - b);
      const median = deltas[Math.floor(deltas.length / 2)];
      assert.ok(Math.abs(median) < 80, `TTFT after send − truth: median ${median} ms of ${deltas.join(', ')}`);
      assert.ok(deltas.every((d) => Math.abs(d) < 1000), `TTFT after send − truth: ${deltas.join(', ')}`);
    });

    test('failures are counted with their kinds', async () => {
      const s = await sim(['--api-key', 'sk-right']);
      await app.open(site.url);
      await app.fillPlan({ 'base-url': s.baseUrl, levels: '1,2', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
      await app.click('run');
      await app.waitForStatus('done');
      assert.deepEqual(await app.errorKinds(), ['auth']);
      // A stream cut in the middle, asked of the simulator by an extra header.
      await app.fillPlan({ 'api-key': 'sk-right', 'extra-headers': 'x-tokenmeter-fault: cut', 'max-tokens': 12 });
      await app.click('run');
      await app.waitForStatus('done');
      assert.deepEqual(await app.errorKinds(), ['stream_cut']);
    });

    test('Cancel ends the run and keeps what was measured', async () => {
      const s = await sim();
      await app.open(site.url);
      await app.fillPlan({ 'base-url': s.baseUrl, levels: '1', 'requests-per-level': 200, 'max-tokens': 32, warmup: 0 });
      await app.click('run');
      await app.waitFor(
        async () => (await app.driver.executeScript(() => {
          const row = document.querySelector('[data-testid="live-row"]');
          return row ? parseInt(row.children[2].textContent, 10) : 0;
        })) >= 2,
        60_000,
        'two requests finish',
      );
      await app.click('cancel');
      await app.waitForStatus('cancelled');
      assert.equal(await app.count('cancelled-note'), 1);
      const [row] = await app.resultsRows();
      assert.ok(Number(row.n_ok) >= 2, `kept ${row.n_ok} requests`);
      assert.ok(Number(row.n_ok) < 200);
    });

    test('the key stays out of exports, links and storage; history survives a reload', async () => {
      const key = `sk-${engine}-secret-1234`;
      const s = await sim(['--api-key', key]);
      await app.open(site.url);
      await app.fillPlan({ 'base-url': s.baseUrl, 'api-key': key, levels: '1', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
      await app.click('run');
      await app.waitForStatus('done');
      assert.equal((await app.resultsRows())[0].n_ok, '2', 'the key was sent');
      for (const id of ['export-json', 'export-csv', 'export-requests-csv', 'export-md']) {
        const text = await app.exportText(id);
        assert.ok(text && text.length > 20, `${id} offered a file`);
        assert.ok(!text.includes(key), `${id} holds no key`);
      }
      const runId = JSON.parse(await app.exportText('export-json')).run_id;
      await app.click('share-link');
      const link = await app.driver.executeScript(() => document.querySelector('[data-testid="share-url"]').value);
      assert.ok(link.includes('#plan=') && !link.includes(key), 'the link holds the plan, not the key');
      // The run is written to storage in the background: wait for it there.
      let stored = '';
      await app.driver.wait(async () => (stored = await app.storedText()).includes(runId), 10_000, 'the run is stored');
      assert.ok(!stored.includes(key), 'nothing stored the key');
      await app.reload();
      const ids = await app.driver.executeScript(() =>
        [...document.querySelectorAll('[data-testid="history-row"]')].map((r) => r.dataset.runId),
      );
      assert.ok(ids.includes(runId), `history kept ${runId} across the reload: ${ids}`);
      const field = await app.driver.executeScript(() => document.querySelector('[data-testid="api-key"]').value);
      assert.equal(field, '', 'the key is gone with the page');
    });
  });
}
