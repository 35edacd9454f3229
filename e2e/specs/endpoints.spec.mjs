// Every kind of endpoint the page speaks (OpenAI's chat and completions, the
// Responses API, Anthropic's Messages API), run against the simulator: tokens
// exactly as it wrote them, reasoning and tool calls counted apart, and only the
// Anthropic kind sends Anthropic's headers (its key as x-api-key).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const KEY = 'sk-kinds-3b1f';
const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function run(kind, faults) {
  const sim = await startSim(['--api-key', KEY, ...faults.flatMap((f) => ['--fault', f])]);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, 'api-key': KEY, levels: '1,2', 'requests-per-level': 3, 'max-tokens': 16, warmup: 0 });
  await app.byTestId('advanced').locator('summary').click();
  await app.byTestId('endpoint').selectOption(kind);
  await app.run();
  await app.waitForStatus('done');
  const doc = await app.exportJson();
  const truth = new Map((await sim.truth()).requests.map((t) => [t.response_id, t]));
  return { app, page, doc, truth };
}

for (const kind of ['chat', 'completions', 'responses', 'anthropic']) {
  test(`the ${kind} endpoint: every token as the simulator wrote it`, async () => {
    const faults = kind === 'completions' ? [] : ['reasoning'];
    const { app, page, doc, truth } = await run(kind, faults);
    assert.equal(doc.plan.endpoint, kind);
    assert.equal(doc.plan.auth, kind === 'anthropic' ? 'x_api_key' : 'bearer', 'the key goes as the kind expects');
    assert.deepEqual((await app.resultsRows()).map((r) => [r.n_ok, r.n_fail]), [['3', '0'], ['3', '0']]);
    for (const r of doc.records) {
      const t = truth.get(r.response_id);
      assert.ok(t, `the simulator served ${r.response_id}`);
      assert.equal(t.endpoint, kind === 'anthropic' ? 'messages' : kind);
      assert.equal(r.n_token_events, t.n_token_events, 'token events, exactly');
      assert.equal(r.n_out, t.tokens.length);
      assert.equal(r.usage.prompt_tokens, t.prompt_tokens);
      assert.equal(r.n_reasoning_events > 0, t.n_reasoning_tokens > 0);
      assert.equal(r.finish_reason, 'length');
      assert.deepEqual(
        t.anthropic_headers ?? [],
        kind === 'anthropic' ? ['anthropic-version: 2023-06-01', 'anthropic-dangerous-direct-browser-access: true'] : [],
        'Anthropic\'s headers on its own kind only',
      );
    }
    await page.close();
  });
}

test('an answer that is a tool call is counted as output, apart', async () => {
  for (const kind of ['chat', 'anthropic']) {
    const { page, doc, truth } = await run(kind, ['tool-call']);
    for (const r of doc.records) {
      const t = truth.get(r.response_id);
      assert.equal(t.tool_call, true);
      assert.equal(r.n_tool_call_events, r.n_token_events, `${kind}: every event a tool call's`);
      assert.equal(r.n_token_events, t.n_token_events);
      assert.equal(r.finish_reason, 'tool_calls');
      assert.ok(r.first_answer_us, 'the tool call is the answer');
    }
    assert.ok(doc.levels.every((l) => l.n_ok === 3 && l.ttft_ms.p50 > 0));
    await page.close();
  }
});

test('a provider preset fills the endpoint and says what it allows from a browser', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  const select = app.byTestId('provider');
  const base = await app.byTestId('base-url').inputValue();
  assert.equal(await select.inputValue(), base === 'http://127.0.0.1:8000/v1' ? 'simulator' : 'custom', 'the default plan: the simulator');
  await select.selectOption('anthropic');
  assert.equal(await app.byTestId('base-url').inputValue(), 'https://api.anthropic.com/v1');
  await app.byTestId('advanced').locator('summary').click();
  assert.equal(await app.byTestId('endpoint').inputValue(), 'anthropic');
  assert.equal(await app.byTestId('auth').inputValue(), 'x_api_key');
  const note = app.byTestId('provider-note');
  assert.equal(await note.getAttribute('data-provider'), 'anthropic');
  assert.match(await note.textContent(), /anthropic-dangerous-direct-browser-access/);
  assert.equal(await app.byTestId('poll-metrics').isChecked(), false, 'a hosted API has no /metrics to read');
  await select.selectOption('ollama');
  assert.equal(await app.byTestId('poll-metrics').isChecked(), true, 'a server of one\'s own may');
  assert.equal(await app.byTestId('base-url').inputValue(), 'http://localhost:11434/v1');
  assert.equal(await app.byTestId('endpoint').inputValue(), 'chat');
  assert.equal(await app.byTestId('auth').inputValue(), 'bearer');
  assert.match(await note.textContent(), /OLLAMA_ORIGINS/);
  await app.byTestId('lang-zh').click();
  assert.match(await note.textContent(), /默认只允许/);
  await app.byTestId('lang-en').click();
  // A base URL typed by hand is no preset.
  await app.fill('base-url', 'https://gateway.example.com/v1');
  assert.equal(await select.inputValue(), 'custom');
  assert.equal(await note.count(), 0);
  await page.close();
});
