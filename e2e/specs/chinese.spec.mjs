// The whole page follows the language switch: under 中文 no English label is left in
// the header, the plan panel (advanced settings and A/B rows too), the live view,
// the results and history, including hover texts and placeholders; and back.
//
// What stays as it is: technical names a Chinese reader uses as they are (TTFT,
// JSON, max_tokens, vLLM, …: TECHNICAL below), what the user typed or the server
// said, code, and the `status` hook, whose exact text is an interface for scripts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

/** Words a Chinese page keeps in Latin letters: names, units, fields, tools. */
const TECHNICAL = new Set(
  `TTFT TPOT ITL E2E TPS SLO HTTP HTTPS JSON CSV HTML Markdown API URL Base A/B
   tok token tokens ms p50 p95 p99 max_tokens min_tokens ignore_eos config.json
   vLLM SGLang llama.cpp Locust requirements.txt usage stream_options.include_usage
   Authorization Bearer api-key temperature prefill goodput Web Worker AbortController
   Resource Timing N_out mean min max stdev EN tokenmeter chat completions Name value
   top_p X-Gateway-Route east http https cargo xtask serve local storage Chromium
   Firefox Tab SVG Locustfile Poisson LLM OpenAI pass key worker mod bench fetch
   usage.prompt_tokens usage.prompt_tokens_details.cached_tokens timings models
   metrics KV TGI Prometheus Anthropic Messages Responses OpenRouter Together AI
   Fireworks Groq DeepSeek Text Generation Inference Ollama LM Studio responses messages
   ShareGPT tokenmeter_prompts.json`
    .split(/\s+/)
    .filter(Boolean),
);

/**
 * The English words left in `selectors`' text, titles, placeholders and labels:
 * `[{ word, text }]`, one per text.
 */
async function englishLeft(page, selectors) {
  return page.evaluate(
    ({ selectors, technical }) => {
      const keep = new Set(technical);
      const found = [];
      const look = (text, where) => {
        // Identifiers (snake_case, kebab-case, an environment variable) are names.
        const words = (text.match(/[A-Za-z][A-Za-z0-9_.\-']*[A-Za-z0-9]/g) ?? []).filter(
          (w) => w.replace(/[^A-Za-z]/g, "").length >= 2 && !keep.has(w) && !keep.has(w.toLowerCase()) && !/^[a-z]+[-_][a-z_-]+$/.test(w) && !/^[A-Z0-9_]+_[A-Z0-9_]+$/.test(w),
        );
        if (words.length > 0) found.push({ words: words.join(' '), text: text.trim().slice(0, 120), where });
      };
      for (const selector of selectors) {
        for (const root of document.querySelectorAll(selector)) {
          const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
          for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const parent = node.parentElement;
            // Code, figures drawn as SVG text, and the status hook are not labels.
            if (parent.closest('code, pre, svg, [data-testid="status"], [lang="en"], datalist')) continue;
            look(node.textContent, selector);
          }
          for (const el of root.querySelectorAll('[title], [placeholder], [aria-label]')) {
            if (el.closest('svg, [lang="en"]')) continue;
            for (const attr of ['title', 'placeholder', 'aria-label']) {
              const value = el.getAttribute(attr);
              if (value) look(value, `${selector} @${attr}`);
            }
          }
        }
      }
      return found;
    },
    { selectors, technical: [...TECHNICAL] },
  );
}

test('under 中文 no English label is left in the plan, live, results and history panels; EN brings them back', async () => {
  const context = await suite.browser.newContext({ locale: 'en-US' });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.byTestId('lang-zh').click();
  assert.equal(await page.locator('html').getAttribute('lang'), 'zh-CN');

  // The plan panel with every part shown: advanced settings, a second target,
  // each load mode's fields in turn.
  await app.byTestId('target-add').click();
  await app.byTestId('target-row').waitFor();
  await page.locator('[data-testid="advanced"] > summary').click();
  for (const mode of ['arrivals', 'duration', 'slo_search', 'ladder']) {
    await app.byTestId('load-mode').selectOption(mode);
    assert.deepEqual(await englishLeft(page, ['[data-testid="config-panel"]']), [], `load mode ${mode}`);
  }
  await app.byTestId('prompt-mode').selectOption('shared_prefix');
  assert.deepEqual(await englishLeft(page, ['[data-testid="config-panel"]']), []);
  await app.byTestId('prompt-mode').selectOption('same');
  assert.deepEqual(await englishLeft(page, ['.topbar', '[data-testid="config-panel"]', '.footer', '[data-testid="history"]', '[data-testid="results-panel"]']), []);
  await app.byTestId('prompt-mode').selectOption('unique');
  await app.byTestId('target-remove').click();

  // A run: the live view while it goes, then the results and the kept run.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 6, 'max-tokens': 40, warmup: 1 });
  await app.run();
  await app.byTestId('live-row').first().waitFor({ timeout: 30_000 });
  assert.deepEqual(await englishLeft(page, ['[data-testid="results-panel"]']), [], 'the live view');
  await app.waitForStatus('done');
  await app.byTestId('history-row').first().waitFor();
  assert.deepEqual(
    await englishLeft(page, ['[data-testid="results-panel"]', '[data-testid="history"]', '[data-testid="config-panel"]']),
    [],
    'the results and history',
  );
  // Keep the run as the baseline and run again: the comparison speaks Chinese too.
  await app.byTestId('history-compare').first().click();
  await app.run();
  await app.waitForStatus('done');
  await app.byTestId('comparison').waitFor();
  assert.deepEqual(await englishLeft(page, ['[data-testid="results-panel"]', '[data-testid="history"]']), [], 'with a comparison');
  await page.screenshot({ path: `${process.env.TOKENMETER_SCREENSHOTS ?? '.'}/page-zh.png`, fullPage: true });

  // And back: English labels return, the hooks never moved.
  await app.byTestId('lang-en').click();
  assert.equal(await page.locator('#config-title').textContent(), 'Plan');
  assert.equal(await app.byTestId('run').textContent(), 'Run');
  assert.match(await page.locator('.history-table th').first().textContent(), /started/);
  assert.equal(await page.locator('html').getAttribute('lang'), 'en');
  assert.deepEqual(app.consoleErrors, []);
  await context.close();
});
