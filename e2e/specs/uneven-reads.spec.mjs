// A stream whose bytes arrive in uneven pieces: every write cut in two, so the end
// of one event and the start of the next share a read (the usage chunk that ends
// the stream with `data: [`), and more written after `[DONE]`. Every request is
// complete, its tokens exact against the simulator's truth.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

for (const faults of [
  ['split-writes', 'after-done'],
  ['split-writes', 'after-done', 'multi-token', 'comments', 'crlf', 'reasoning'],
]) {
  test(`every request complete and exact: ${faults.join(', ')}`, async () => {
    const sim = await startSim(faults.flatMap((f) => ['--fault', f]));
    sims.push(sim);
    const page = await suite.browser.newPage({ acceptDownloads: true });
    const app = new AppPage(page);
    await app.open(suite.site.url);
    await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1,4', 'requests-per-level': 8, 'max-tokens': 12, warmup: 0 });
    await app.run();
    await app.waitForStatus('done');
    const rows = await app.resultsRows();
    assert.deepEqual(rows.map((r) => [r.n_ok, r.n_fail]), [['8', '0'], ['8', '0']]);
    const doc = await app.exportJson();
    const truth = new Map((await sim.truth()).requests.map((t) => [t.response_id, t]));
    assert.equal(doc.records.length, 16);
    for (const r of doc.records) {
      assert.equal(r.error, null, JSON.stringify(r.error));
      const t = truth.get(r.response_id);
      assert.ok(t, `the truth has ${r.response_id}`);
      assert.equal(r.n_token_events, t.n_token_events, r.response_id);
      assert.equal(r.usage.completion_tokens, t.tokens.length);
      assert.equal(r.n_out, 12);
      assert.equal(r.saw_done, false, 'the usage chunk ended it; the [DONE] after it is not read');
    }
    await page.close();
  });
}
