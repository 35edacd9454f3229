// `cargo xtask bench accuracy`: how close the page's figures are to the truth.
// Runs ladders in headless Chromium against the simulator, over HTTP/1.1 and over
// HTTP/2 (TLS), and prints, per level, what the page measured next to what the
// simulator wrote (its truth record). Prints figures; asserts nothing.
import { launch } from '../lib/browser.mjs';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { AppPage } from '../pages/app.mjs';
import { quantile } from './quantile.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–').padStart(8);

async function runLadder(browser, site, sim, levels, maxTokens, requestsPerLevel) {
  const page = await browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(site.url);
  await app.fillPlan({
    'base-url': sim.baseUrl,
    levels: levels.join(','),
    'requests-per-level': requestsPerLevel,
    'max-tokens': maxTokens,
    warmup: 2,
  });
  await app.run();
  await app.waitForStatus('done', 600_000);
  const doc = await app.exportJson();
  await page.close();
  const truth = await sim.truth();
  return { doc, truth: new Map(truth.requests.map((t) => [t.response_id, t])), lateness: truth.lateness };
}

function report(label, { doc, truth, lateness }) {
  console.log(
    `\n${label}: measured (page) vs truth (simulator), ms; Δ = measured − truth of the same request (p50, p95)`,
  );
  console.log(
    `${'level'.padStart(6)} ${'proto'.padStart(8)} ${'TTFT p50'.padStart(8)} ${'truth'.padStart(8)} ${'Δ p50'.padStart(8)} ${'Δ p95'.padStart(8)}` +
      ` ${'TTFT p95'.padStart(8)} ${'truth'.padStart(8)} ${'after send p50'.padStart(14)} ${'wait p95'.padStart(8)}` +
      ` ${'ITL p50'.padStart(8)} ${'truth'.padStart(8)} ${'tokens ok'.padStart(10)}`,
  );
  for (const level of doc.levels) {
    const records = doc.records.filter((r) => !r.warmup && r.concurrency === level.concurrency && !r.error);
    const pairs = records.map((r) => [r, truth.get(r.response_id)]).filter(([, t]) => t);
    const ttft = pairs.map(([r]) => (r.first_token_us - r.sent_us) / 1e3);
    const truthTtft = pairs.map(([, t]) => (t.tokens[0].written_us - t.accepted_us) / 1e3);
    const itl = pairs.flatMap(([r]) => r.token_times_us.slice(1).map((x, i) => (x - r.token_times_us[i]) / 1e3));
    const truthItl = pairs.flatMap(([, t]) => t.tokens.slice(1).map((x, i) => (x.written_us - t.tokens[i].written_us) / 1e3));
    // Paired, request by request: a difference of two p50s would also carry how the
    // two samples happen to fall (TTFTs at 16 streams spread over hundreds of ms).
    const ttftDelta = pairs.map(
      ([r, t]) => (r.first_token_us - r.sent_us - (t.tokens[0].written_us - t.accepted_us)) / 1e3,
    );
    const tokensOk = pairs.filter(([r, t]) => r.n_out === t.tokens.length).length;
    const p50 = quantile(ttft, 0.5);
    const t50 = quantile(truthTtft, 0.5);
    console.log(
      `${String(level.concurrency).padStart(6)} ${Object.keys(level.protocols).join(',').padStart(8)} ${fmt(p50)} ${fmt(t50)} ${fmt(quantile(ttftDelta, 0.5))} ${fmt(quantile(ttftDelta, 0.95))}` +
        ` ${fmt(quantile(ttft, 0.95))} ${fmt(quantile(truthTtft, 0.95))} ${fmt(level.ttft_after_send_ms?.p50).padStart(14)} ${fmt(level.browser_wait_ms?.p95)}` +
        ` ${fmt(quantile(itl, 0.5))} ${fmt(quantile(truthItl, 0.5))} ${`${tokensOk}/${records.length}`.padStart(10)}`,
    );
  }
  console.log(`simulator lateness (written − due): p50 ${lateness.p50_us} µs, p99 ${lateness.p99_us} µs, max ${lateness.max_us} µs`);
}

const dist = process.env.TOKENMETER_DIST;
const site = await serveStatic(dist, '/');
const browser = await launch(['--ignore-certificate-errors']);
try {
  const plain = await startSim(['--max-batch', '64']);
  report('HTTP/1.1 (plain http://)', await runLadder(browser, site, plain, SMOKE ? [1] : [1, 2, 4, 8], SMOKE ? 8 : 64, SMOKE ? 2 : 8));
  plain.close();
  const tls = await startSim(['--tls', '--max-batch', '64']);
  report('HTTP/2 (https://, self-signed)', await runLadder(browser, site, tls, SMOKE ? [1] : [1, 4, 16, 32], SMOKE ? 8 : 64, SMOKE ? 2 : 32));
  tls.close();
} finally {
  await browser.close();
  await site.close();
}
