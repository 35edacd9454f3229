// `cargo xtask bench cache`: what a prompt cache does to TTFT, measured as users
// would by the page against the simulator with its cache on: every request the
// same prompt (what load testers send by default, and a cache answers) against
// each request its own (tokenmeter's default), at 1 and 16 streams over HTTP/2.
// A prompt of about 1,000 tokens at 0.5 ms of prefill per token. Prints figures;
// asserts nothing.
import { launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { AppPage } from '../pages/app.mjs';
import { quantile } from './quantile.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const LEVELS = SMOKE ? [1, 2] : [1, 16];
// About 1,000 tokens: the simulator counts a CJK character as one.
const PROMPT = '请详细介绍大模型推理中的预填充和解码两个阶段，以及连续批处理、键值缓存和前缀缓存对首字延迟的影响。'.repeat(20).slice(0, SMOKE ? 100 : 1000);

const f = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');

async function runMode(browser, site, sim, mode) {
  const page = await browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({
    'base-url': sim.baseUrl,
    prompt: PROMPT,
    levels: LEVELS.join(','),
    'requests-per-level': SMOKE ? 2 : 48,
    'max-tokens': SMOKE ? 4 : 16,
    warmup: 1,
  });
  await app.byTestId('prompt-mode').selectOption(mode);
  await app.run();
  await app.waitForStatus('done', 600_000);
  const doc = await app.exportJson();
  await page.close();
  const truth = await sim.truth();
  await fetch(`${sim.baseUrl}/sim/truth`, { method: 'DELETE' }).catch(() => {});
  return { doc, truth: new Map(truth.requests.map((t) => [t.response_id, t])) };
}

const site = await serveStatic(process.env.TOKENMETER_DIST, '/');
const browser = await launch(['--ignore-certificate-errors']);
const rows = [];
try {
  for (const mode of ['same', 'unique']) {
    // A fresh simulator each: an empty cache, as a server that never saw these prompts.
    const sim = await startSim(['--tls', '--max-batch', '64', '--prefill-per-token-ms', '0.5']);
    try {
      const { doc, truth } = await runMode(browser, site, sim, mode);
      for (const level of LEVELS) {
        const records = doc.records.filter((r) => !r.warmup && !r.error && r.concurrency === level);
        const ttft = records.map((r) => (r.first_token_us - r.sent_us) / 1e3);
        const prompt = records.reduce((n, r) => n + (r.usage?.prompt_tokens ?? 0), 0);
        const cached = records.reduce((n, r) => n + (r.usage?.cached_tokens ?? 0), 0);
        const truthCached = records.reduce((n, r) => n + (truth.get(r.response_id)?.cached_tokens ?? 0), 0);
        const note = doc.environment.conditions.some((c) => c.kind === 'prompt_cache_hits');
        rows.push({ level, mode, n: records.length, p50: quantile(ttft, 0.5), p95: quantile(ttft, 0.95), cached, prompt, truthCached, note });
      }
    } finally {
      sim.close();
    }
  }
} finally {
  await browser.close();
  await site.close();
}
console.log(`\nPrompt cache: TTFT (ms) measured by the page; a prompt of ${PROMPT.length} tokens, 0.5 ms of prefill per uncached token`);
console.log('| streams | prompts | requests | TTFT p50 | TTFT p95 | prompt tokens cached (server said / truth) | cache note |');
console.log('|---|---|---|---|---|---|---|');
for (const r of rows.sort((a, b) => a.level - b.level)) {
  const share = r.prompt ? `${((100 * r.cached) / r.prompt).toFixed(0)}% / ${((100 * r.truthCached) / r.prompt).toFixed(0)}%` : '–';
  console.log(`| ${r.level} | ${r.mode} | ${r.n} | ${f(r.p50)} | ${f(r.p95)} | ${share} | ${r.note ? 'yes' : 'no'} |`);
}
