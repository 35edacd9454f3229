// A gateway between the server and the page that holds the stream back (one that
// buffers, or compresses text/event-stream) delivers the answer in bursts: the
// page names it, marks the level's TPOT and ITL as not the server's and leaves it
// out of the verdict, and says what to change. Streams that are only packed (four
// tokens an event at real intervals) or fast are not named.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function runAgainst(simArgs, maxTokens) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,2', 'requests-per-level': 4, 'max-tokens': maxTokens, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  const causes = await page.locator('[data-testid="diagnosis-item"]').evaluateAll((items) => items.map((i) => i.dataset.cause));
  const distorted = await page.locator('[data-testid="results-row"]').evaluateAll((rows) => rows.map((r) => r.dataset.distorted ?? null));
  return { app, page, doc, causes, distorted };
}

for (const [fault, maxTokens] of [['buffer-all', 40], ['gzip', 200], ['buffer-4k', 120], ['buffer-250ms', 60]]) {
  test(`a stream held back by a gateway (${fault}) is named, and its level left out`, async () => {
    const { app, page, doc, causes, distorted } = await runAgainst(['--fault', fault], maxTokens);
    assert.deepEqual(distorted, ['buffered', 'buffered']);
    for (const level of doc.levels) {
      assert.equal(level.distorted.by, 'buffered');
      assert.ok(level.distorted.share_pct > 50, JSON.stringify(level.distorted));
      assert.ok(level.distorted.largest >= 4);
    }
    for (const r of doc.records) assert.equal(r.error, null, 'every token arrived');
    const rows = await app.resultsRows();
    assert.deepEqual(rows.map((r) => [r.tpot_p50, r.itl_p99]), [['–', '–'], ['–', '–']], 'no TPOT or ITL of the server to show');
    assert.ok(causes.includes('buffered_stream'), causes.join());
    assert.match(await app.byTestId('verdict-text').textContent(), /arrived in bursts/);
    assert.match(await app.byTestId('environment-notes').textContent(), /X-Accel-Buffering: no/);
    await app.byTestId('lang-zh').click();
    assert.match(await app.byTestId('verdict-text').textContent(), /成批到达/);
    await page.close();
  });
}

for (const [name, simArgs, maxTokens] of [
  ['four tokens an event at real intervals', ['--fault', 'multi-token'], 40],
  ['a fast server', ['--decode-base-ms', '1', '--decode-per-seq-ms', '0', '--prefill-base-ms', '1'], 120],
]) {
  test(`${name} is not called buffered`, async () => {
    const { page, doc, causes, distorted } = await runAgainst(simArgs, maxTokens);
    // (A level may still be marked for the engine's own lag on a busy machine: a
    // debug build reading a token a millisecond; that is another matter.)
    assert.ok(!distorted.includes('buffered'), distorted.join());
    assert.ok(doc.levels.every((l) => !l.bursts), JSON.stringify(doc.levels.map((l) => l.bursts)));
    assert.ok(!causes.includes('buffered_stream'));
    assert.ok(!doc.environment.conditions.some((c) => c.kind === 'buffered_stream'));
    await page.close();
  });
}
