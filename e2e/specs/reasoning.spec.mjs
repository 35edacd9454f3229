// A reasoning model: TTFT counts the first reasoning token, and the time to the
// first answer token is reported beside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(['--fault', 'reasoning']);

test('both first-token times are reported', async () => {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 20, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const [row] = await app.resultsRows();
  assert.ok(Number(row.ttfat_p50) > Number(row.ttft_p50), `answer ${row.ttfat_p50} after first token ${row.ttft_p50}`);
  const doc = await app.exportJson();
  for (const r of doc.records) {
    assert.equal(r.n_reasoning_events, 5);
    assert.ok(r.first_answer_us > r.first_token_us);
    assert.equal(r.usage.reasoning_tokens, 5);
  }
  await page.close();
});

test('hidden reasoning is counted apart and left out of TPOT', async () => {
  const { startSim } = await import('../lib/sim.mjs');
  const sim = await startSim(['--fault', 'hidden-reasoning']);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  try {
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 40, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
    const [row] = await app.resultsRows();
    assert.match(row.tokens, /20 hidden reasoning/, row.tokens);
    // The streamed answer's pace: about one decode step (20 ms here), where counting
    // the 10 hidden tokens of each request would have made it three quarters of that.
    const truth = await sim.truth();
    const steps = truth.requests.flatMap((t) => {
      const written = t.tokens.map((k) => k.written_us).filter((w) => w !== null);
      return written.slice(1).map((w, i) => (w - written[i]) / 1e3);
    });
    const step = steps.reduce((a, b) => a + b, 0) / steps.length;
    const tpot = Number(row.tpot_p50);
    assert.ok(Math.abs(tpot - step) < step * 0.15, `TPOT ${tpot} ms vs the written step ${step} ms`);
  } finally {
    await page.close();
    sim.close();
  }
});
