// Hostile servers: every second request of a run gets an answer no honest server
// sends (headers without end, a line without end, a million empty events, keep-alive
// comments forever, a gzip bomb, a web page, an endless error page, an answer that
// ignores max_tokens). The run goes on to its end; each such request is counted with
// its kind and a hint in both languages; the good requests between them are all
// there, their tokens exact. Invalid UTF-8 inside a token is read as a decoder reads
// it, and the request counted.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

const MAX_TOKENS = 12;

async function runAgainst(fault) {
  const sim = await startSim(['--fault', fault, '--fault-every', '2', '--hang-s', '20']);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({
    'base-url': sim.baseUrl,
    levels: '1,2',
    'requests-per-level': 4,
    'max-tokens': MAX_TOKENS,
    warmup: 0,
    // keep-alive-forever ends at the timeout.
    timeout: 3,
  });
  await app.run();
  await app.waitForStatus('done');
  return { app, page, doc: await app.exportJson() };
}

for (const [fault, kind] of [
  ['endless-headers', 'network'],
  ['huge-line', 'event_too_large'],
  ['million-events', 'response_too_large'],
  ['keep-alive-forever', 'timeout_mid_stream'],
  ['gzip-bomb', 'event_too_large'],
  ['html-200', 'not_event_stream'],
  ['endless-error', 'server_error'],
  ['endless', 'response_too_large'],
]) {
  test(`${fault}: every such request counted as ${kind}, and the run loses nothing else`, async () => {
    const { app, page, doc } = await runAgainst(fault);
    const rows = await app.resultsRows();
    assert.deepEqual(rows.map((r) => [r.n_ok, r.n_fail]), [['2', '2'], ['2', '2']], fault);
    const failed = doc.records.filter((r) => r.error);
    assert.deepEqual([...new Set(failed.map((r) => r.error.kind))], [kind], fault);
    for (const r of doc.records.filter((r) => !r.error)) {
      assert.equal(r.n_out, MAX_TOKENS, `${fault}: the good requests are whole`);
      assert.equal(r.token_mismatch, 0);
    }
    const [group] = await app.errorGroups();
    assert.equal(group.kind, kind);
    assert.ok(group.hint.length > 40, group.hint);
    if (kind === 'response_too_large') {
      assert.match(failed[0].error.detail, fault === 'endless' ? /max_tokens/ : /524288 events/);
    }
    if (fault === 'keep-alive-forever') {
      assert.match(failed[0].error.detail, /keep-alive comment lines/);
    }
    if (fault === 'endless-error') {
      assert.match(failed[0].error.detail, /64 KiB/);
      assert.match(group.sample, /upstream busy/);
    }
    await app.byTestId('lang-zh').click();
    const [zh] = await app.errorGroups();
    assert.match(zh.hint, /[\u4e00-\u9fff]/, `${fault}: the hint in Chinese`);
    await page.close();
  });
}

test('invalid UTF-8 inside a token is read as U+FFFD and the request counted', async () => {
  const { app, page, doc } = await runAgainst('bad-utf8');
  assert.deepEqual((await app.resultsRows()).map((r) => r.n_fail), ['0', '0']);
  for (const r of doc.records) {
    assert.equal(r.n_out, MAX_TOKENS);
    assert.equal(r.token_mismatch, 0);
  }
  const truth = await sims.at(-1).truth();
  const replaced = truth.requests.filter((t) => t.text.includes('\uFFFD'));
  assert.equal(replaced.length, 4, 'every second request carried the invalid byte');
  await page.close();
});
