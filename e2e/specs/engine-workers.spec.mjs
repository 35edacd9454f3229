// A level spread over engine workers: the measuring worker starts helpers, each
// sends and stamps its share of the streams on the run's one clock. A run on two
// workers agrees with the simulator's truth as a run on one does, every request
// once, on one clock; Cancel reaches every worker; a helper that stops mid-run
// loses only what it had in flight, said as the tool's loss, and the run goes on;
// a helper that stalls flags its level; Cancel does not wait for a helper that is
// slow to start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

/** A page with the advanced settings open, the plan filled in. */
async function planned(fields) {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  const workers = [];
  page.on('worker', (w) => workers.push(w));
  await app.open(suite.site.url);
  await app.byTestId('advanced').locator('summary').click();
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, warmup: 1, ...fields });
  return { page, app, workers };
}

/** Polls `check` every 20 ms until it holds or `timeoutMs` has passed; whether it held. */
async function until(check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How many requests the simulator has running or waiting, by its /metrics. */
async function atServer() {
  const text = await (await fetch(`${new URL(suite.sim.baseUrl).origin}/metrics`)).text();
  const gauge = (name) => Number(text.match(new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm'))?.[1] ?? 0);
  return gauge('num_requests_running') + gauge('num_requests_waiting');
}

/** Every measured record of `doc` against the simulator's truth: token counts
 * exact, TTFT within the tolerance run.spec allows (where the browser's queue is
 * not in it: at most six streams over HTTP/1.1); the run's ids each once. */
async function agreesWithTruth(doc, nMeasured, { ttft = true } = {}) {
  const truth = await suite.sim.truth();
  const byId = new Map(truth.requests.map((t) => [t.response_id, t]));
  const measured = doc.records.filter((r) => !r.warmup);
  assert.equal(measured.length, nMeasured);
  const ids = doc.records.map((r) => r.id);
  assert.equal(new Set(ids).size, ids.length, 'each request once');
  // Ids are given in send order by the measuring worker alone: 0 to n − 1, none
  // missing, whichever worker sent each.
  assert.deepEqual([...ids].sort((a, b) => a - b), ids.map((_, i) => i), 'ids 0 to n − 1, none missing');
  const ttftErrorsMs = [];
  for (const r of measured) {
    const t = byId.get(r.response_id);
    assert.ok(t, `the simulator knows ${r.response_id}`);
    assert.equal(r.n_out, t.tokens.length);
    assert.equal(r.n_token_events, t.n_token_events);
    const ttftMs = (r.first_token_us - r.sent_us) / 1e3;
    const truthMs = (t.tokens[0].written_us - t.accepted_us) / 1e3;
    ttftErrorsMs.push(Math.abs(ttftMs - truthMs));
    // One clock: a helper's send comes after the measuring worker asked for it,
    // by the message's way (a helper's own zero, uncorrected, would put it
    // hundreds of milliseconds before).
    assert.ok(r.sent_us >= r.wanted_us, `request ${r.id} sent before it was wanted`);
    assert.ok(r.sent_us - r.wanted_us < 100_000, `request ${r.id} waited ${r.sent_us - r.wanted_us} µs`);
  }
  if (ttft) assert.ok(Math.max(...ttftErrorsMs) < 60, `TTFT off by up to ${Math.max(...ttftErrorsMs)} ms`);
}

test('two workers agree with the truth as one does, each request once, on one clock', async () => {
  for (const n of [1, 2]) {
    const { page, app, workers } = await planned({ levels: '6', 'requests-per-level': 24, 'max-tokens': 12, 'engine-workers': n });
    await app.run();
    await app.waitForStatus('done');
    const doc = await app.exportJson();
    assert.equal(doc.plan.engine_workers, n);
    assert.deepEqual(doc.environment.engine_load.map((l) => l.workers), [n]);
    assert.equal(workers.length, n, 'the measuring worker, and a helper per extra worker');
    await agreesWithTruth(doc, 24);
    // No helper stopped, nothing lost: no error of any kind, `engine_stopped` least.
    assert.deepEqual(doc.records.filter((r) => r.error).map((r) => r.error.kind), []);
    assert.equal(doc.environment.engine_load[0].stalls.n_requests, 24, 'every worker counted its stalls');
    assert.deepEqual(app.consoleErrors, []);
    await page.close();
  }
});

test('left to the run, a level takes one worker per 32 streams, up to the cores', async () => {
  const { page, app } = await planned({ levels: '1,33', 'requests-per-level': 33, 'max-tokens': 4, 'engine-workers': 0 });
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.engine_workers, undefined, 'left to the run: not written');
  assert.deepEqual(
    doc.environment.engine_load.map((l) => l.workers),
    [1, Math.min(2, cores)],
  );
  // 33 streams over HTTP/1.1: the browser queues all but six, so TTFT is not
  // the server's alone (run.spec measures that queue).
  await agreesWithTruth(doc, 66, { ttft: false });
  await page.close();
});

test('Cancel reaches every worker: their requests end cancelled, and the run is kept', async () => {
  const { page, app, workers } = await planned({
    levels: '6',
    'requests-per-level': 200,
    'max-tokens': 400,
    'engine-workers': 2,
    warmup: 0,
  });
  await app.run();
  await page.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent.trim() === 'running');
  // Both workers have streams in flight: all six are at the server (a fixed wait
  // was not enough on a loaded machine).
  assert.ok(await until(async () => (await atServer()) >= 6, 30_000), 'six streams under way');
  await app.cancel();
  await app.waitForStatus('cancelled', 30_000);
  assert.equal(workers.length, 2);
  const doc = await app.exportJson();
  assert.equal(doc.status, 'cancelled');
  const cancelled = doc.records.filter((r) => r.error?.kind === 'cancelled');
  // Six streams were in flight, on both workers: all six end cancelled, at once.
  assert.equal(cancelled.length, 6, JSON.stringify(doc.records.map((r) => r.error?.kind)));
  const ends = cancelled.map((r) => r.end_us);
  assert.ok(Math.max(...ends) - Math.min(...ends) < 1_000_000, 'every worker stopped at Cancel');
  assert.ok(doc.records.every((r) => r.error?.kind !== 'engine_stopped'));
  await page.close();
});

test('a helper that stops mid-run loses what it had in flight, said as the tool’s loss; the run goes on', async () => {
  // The lost requests are noticed at their timeout and a grace: keep it short.
  const { page, app, workers } = await planned({
    levels: '1,4',
    'requests-per-level': 8,
    'max-tokens': 30,
    'engine-workers': 2,
    timeout: 2,
  });
  await app.run();
  // Level 1 has one stream, so one worker; level 4 starts the helper.
  await until(() => workers.length >= 2, 40_000);
  assert.equal(workers.length, 2, 'a helper started');
  // Once all four of level 4's streams are at the server (two of them the
  // helper's; level 1 never has more than one), the helper ends itself, silently
  // (as a worker the browser stops does): no error reaches the measuring worker.
  // A fixed wait here was not enough on a loaded machine: a helper closed before
  // it said Ready is left out, and the level runs on one worker.
  assert.ok(await until(async () => (await atServer()) >= 4, 40_000), 'level 4 under way');
  await workers[1].evaluate(() => setTimeout(() => self.close(), 0));
  await app.waitForStatus('done', 60_000);
  const doc = await app.exportJson();
  assert.deepEqual(doc.environment.engine_load.map((l) => l.workers), [1, 2]);
  const measured = doc.records.filter((r) => !r.warmup);
  assert.equal(measured.length, 16, 'every planned request has its record');
  const lost = measured.filter((r) => r.error?.kind === 'engine_stopped');
  // The helper held two lanes of four, one request each in flight.
  assert.equal(lost.length, 2, JSON.stringify(measured.map((r) => r.error?.kind)));
  assert.ok(lost.every((r) => r.concurrency === 4));
  assert.equal(measured.filter((r) => r.error && r.error.kind !== 'engine_stopped').length, 0);
  // The errors panel says it is the tool's loss, not the server's failure.
  const groups = await app.errorGroups();
  const group = groups.find((g) => g.kind === 'engine_stopped');
  assert.ok(group, JSON.stringify(groups));
  assert.match(group.hint, /server is not to blame/);
  // Nor does the diagnosis blame the server's capacity, though level 1 was clean
  // and level 4 had failures.
  assert.equal(await page.locator('[data-testid="diagnosis-item"][data-cause="capacity_errors"]').count(), 0);
  await page.close();
});

test('a helper that stalls flags its level, as the measuring worker would; a level without one is not flagged', async () => {
  const { page, app, workers } = await planned({
    levels: '2,6',
    'requests-per-level': 12,
    'max-tokens': 60,
    'engine-workers': 2,
  });
  await app.run();
  // Level 6's streams all at the server (level 2 never has more than two; over
  // HTTP/1.1 the browser lets six through), the helper's among them: its loop is
  // held for 300 ms, as a long task would hold it.
  assert.ok(await until(async () => (await atServer()) >= 6, 60_000), 'level 6 under way');
  assert.equal(workers.length, 2, 'a helper started');
  await workers[1].evaluate(() => {
    const t = performance.now();
    while (performance.now() - t < 300);
  });
  await app.waitForStatus('done', 60_000);
  const doc = await app.exportJson();
  assert.deepEqual(doc.environment.engine_load.map((l) => l.workers), [2, 2]);
  const lag = doc.environment.conditions.filter((c) => c.kind === 'engine_lag');
  // The level's lag is its worst worker's: the helper's, which alone stalled.
  assert.deepEqual(lag.map((c) => c.concurrency), [6], JSON.stringify(lag));
  assert.ok(lag[0].lag_ms >= 250, `lag ${lag[0].lag_ms} ms`);
  assert.ok(lag[0].stalls.n_events > 0, JSON.stringify(lag[0].stalls));
  // Tokens are still exact; only their times were held.
  const truth = await suite.sim.truth();
  const byId = new Map(truth.requests.map((t) => [t.response_id, t]));
  for (const r of doc.records) assert.equal(r.n_out, byId.get(r.response_id).tokens.length);
  await page.close();
});

test('Cancel does not wait for a helper that is slow to start', async () => {
  const { page, app, workers } = await planned({
    levels: '1,4',
    'requests-per-level': 8,
    'max-tokens': 30,
    'engine-workers': 2,
  });
  await app.run();
  // Level 1 has one stream, so one worker: the measuring worker, which the page
  // starts for the run.
  await until(() => workers.length >= 1, 30_000);
  assert.equal(workers.length, 1, 'the measuring worker started');
  // From now on a helper it starts runs a script that never says Ready, so level
  // 4 waits for it (up to 15 s), as it would for a helper whose script is slow.
  await workers[0].evaluate(() => {
    const Real = self.Worker;
    self.helpersAsked = 0;
    self.Worker = function Silent(_url, options) {
      self.helpersAsked += 1;
      return new Real(URL.createObjectURL(new Blob([''], { type: 'text/javascript' })), options);
    };
  });
  await until(async () => (await workers[0].evaluate(() => self.helpersAsked)) >= 1, 30_000);
  assert.equal(await workers[0].evaluate(() => self.helpersAsked), 1, 'level 4 asked for a helper');
  await app.cancel();
  // Well inside the 15 s a helper has to start: Cancel, not the wait, ended it.
  await app.waitForStatus('cancelled', 8_000);
  const doc = await app.exportJson();
  assert.equal(doc.status, 'cancelled');
  // Level 1 is kept whole; level 4 sent nothing: Cancel came before its first request.
  const measured = doc.records.filter((r) => !r.warmup);
  assert.equal(measured.filter((r) => r.concurrency === 1).length, 8);
  assert.equal(measured.filter((r) => r.concurrency === 4).length, 0);
  await page.close();
});
