// Every request its own prompt, so that a server's prompt cache answers none of
// them (the default), and the same prompt on purpose, which the page then says it
// measured a cache hit of. The simulator keeps a prompt cache, as real servers do,
// and says per request (in usage and its truth) how much of the prompt it found.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);
// Long enough for whole blocks of the cache (16 tokens each): about 200 tokens.
const PROMPT = '请用300字介绍大模型推理中的prefill和decode两个阶段。'.repeat(8);

async function run(fields) {
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, prompt: PROMPT, levels: '1,2', 'requests-per-level': 4, 'max-tokens': 8, warmup: 1, ...fields });
  return { page, app };
}

test('by default each request sends its own prompt, and no cache answers one', async () => {
  const { page, app } = await run({});
  assert.equal(await app.byTestId('prompt-mode').inputValue(), 'unique');
  assert.equal(await app.byTestId('prompt-mode-warning').count(), 0);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.prompt_mode, 'unique');
  assert.equal(typeof doc.plan.seed, 'number', 'the run keeps the seed its prompts came from');
  const measured = doc.records.filter((r) => !r.warmup);
  assert.equal(measured.length, 8);
  for (const r of measured) assert.equal(r.usage.cached_tokens, 0, JSON.stringify(r.usage));
  const truth = (await suite.sim.truth()).requests;
  assert.ok(truth.every((t) => t.cached_tokens === 0), 'the simulator found no request in its cache');
  assert.ok(!doc.environment.conditions.some((c) => c.kind === 'prompt_cache_hits'));
  assert.doesNotMatch(await app.byTestId('environment-notes').textContent().catch(() => ''), /prompt cache/);
  await page.close();
});

test('the same prompt for every request is a cache hit, and the page says so', async () => {
  const { page, app } = await run({});
  await app.byTestId('prompt-mode').selectOption('same');
  assert.match(await app.byTestId('prompt-mode-warning').textContent(), /same prompt/);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.prompt_mode, 'same');
  const measured = doc.records.filter((r) => !r.warmup);
  // The warm-up computed the prompt; every measured request found it.
  for (const r of measured) assert.ok(r.usage.cached_tokens > 0, JSON.stringify(r.usage));
  const [hits] = doc.environment.conditions.filter((c) => c.kind === 'prompt_cache_hits');
  assert.equal(hits.mode, 'same');
  assert.equal(hits.n_hits, 8);
  assert.match(await app.byTestId('environment-notes').textContent(), /answered from the server's prompt cache/);
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('environment-notes').textContent(), /提示词缓存/);
  await page.close();
});

test("a shared prefix on purpose is found for every request after its group's first", async () => {
  const { page, app } = await run({ levels: '1', 'requests-per-level': 6, warmup: 0 });
  await app.byTestId('prompt-mode').selectOption('shared_prefix');
  await app.fillPlan({ 'prefix-tokens': 320, 'prefix-groups': 2 });
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  assert.equal(doc.plan.prompt_mode, 'shared_prefix');
  assert.equal(doc.plan.prefix_tokens, 320);
  assert.equal(doc.plan.prefix_groups, 2);
  // Requests 0 and 1 open groups 0 and 1; the others find their group's prefix.
  const byId = [...doc.records].sort((a, b) => a.id - b.id);
  assert.deepEqual(byId.slice(0, 2).map((r) => r.usage.cached_tokens), [0, 0]);
  for (const r of byId.slice(2)) {
    assert.ok(r.usage.cached_tokens >= 0.9 * 320, `request ${r.id}: ${r.usage.cached_tokens} cached`);
    assert.ok(r.usage.cached_tokens < r.usage.prompt_tokens, 'its own header and prompt are not');
  }
  const truth = new Map((await suite.sim.truth()).requests.map((t) => [t.response_id, t]));
  for (const r of byId) assert.equal(truth.get(r.response_id).cached_tokens, r.usage.cached_tokens);
  const [hits] = doc.environment.conditions.filter((c) => c.kind === 'prompt_cache_hits');
  assert.equal(hits.mode, 'shared_prefix');
  assert.equal(hits.n_hits, 4);
  assert.match(await app.byTestId('environment-notes').textContent(), /shared prefix served from the server's prompt cache/);
  await page.close();
});
