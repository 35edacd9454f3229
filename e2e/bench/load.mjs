// `cargo xtask bench load`: is the tool ever the bottleneck? Levels of 1 to 256
// streams over HTTP/2 and 1 to 6 over HTTP/1.1, several waves each, measured by
// tokenmeter's page (a row per number of engine workers the level is spread
// over) and, in the same session against the same simulator, by a
// minimal baseline page (fetch + ReadableStream on the page thread, no framework:
// what the browser itself allows on this machine; its TTFT after send comes from
// Resource Timing too, so both pages' share of the browser's delivery is printed
// side by side). Every request is paired with
// what the simulator wrote for it (its truth record, by response id). Prints
// figures; asserts nothing. The browser is driven without Playwright (see cdp.mjs):
// a driver's per-chunk network events would cost more than the page measured.
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { launchBare } from './cdp.mjs';
import { quantile } from './quantile.mjs';
import { stallsOf } from './profile.mjs';

const here = dirname(fileURLToPath(import.meta.url));
// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const MAX_TOKENS = Number(process.env.TOKENMETER_BENCH_TOKENS ?? (SMOKE ? 8 : 100));
const WAVES = Number(process.env.TOKENMETER_BENCH_WAVES ?? (SMOKE ? 1 : 4));
const H2_LEVELS = (process.env.TOKENMETER_BENCH_H2 ?? (SMOKE ? '2' : '1,16,64,128,256')).split(',').filter(Boolean).map(Number);
const H1_LEVELS = (process.env.TOKENMETER_BENCH_H1 ?? (SMOKE ? '1' : '1,2,4,6')).split(',').filter(Boolean).map(Number);
// The engine workers each level is measured with (the plan's `engine_workers`;
// never more than the level's streams).
const WORKERS = (process.env.TOKENMETER_BENCH_WORKERS ?? '1,2').split(',').filter(Boolean).map(Number);

// `TOKENMETER_BENCH_PROFILE=1`: the measuring engine worker's CPU sampled every
// 100 µs, and under each level's row what ran in its stalls (stretches of 20 ms or
// more with no idle sample), by self time. For finding what holds the stamps back.
// (Helper workers end with the run, before their profiles can be read; their
// stalls are in the row's `late` and `lag` columns, from the run document.)
const PROFILE = process.env.TOKENMETER_BENCH_PROFILE === '1';
const STALL_MS = 20;
// A token event delivered this much later than its request's quickest is late (the
// engine's own stall threshold, `LAG_NOTE_MS`).
const LATE_MS = 20;

const f = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '–');
const pct = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%` : '–');
const share = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '–');

/** Paired figures of records `{ sent, first, times, n, id, requestStart? }` (ms) against the truth. */
function figures(records, truth) {
  const pairs = records.map((r) => [r, truth.get(r.id)]).filter(([r, t]) => t && r.times.length);
  const truthTtft = (t) => (t.tokens[0].written_us - t.accepted_us) / 1e3;
  const written = (t) => t.tokens.map((k) => k.written_us / 1e3);
  const delta = pairs.map(([r, t]) => r.first - r.sent - truthTtft(t));
  const afterSend = pairs
    .filter(([r]) => Number.isFinite(r.requestStart))
    .map(([r, t]) => r.first - r.requestStart - truthTtft(t));
  const waits = pairs.filter(([r]) => Number.isFinite(r.requestStart)).map(([r]) => r.requestStart - r.sent);
  // TPOT as each side ends it: the page at its end of stream, the truth at its last token.
  const tpotError = pairs
    .filter(([r, t]) => t.tokens.length > 1)
    .map(([r, t]) => {
      const w = written(t);
      const truthTpot = (w.at(-1) - w[0]) / (w.length - 1);
      return ((r.end ?? r.times.at(-1)) - r.first) / (r.n - 1) / truthTpot - 1;
    });
  // The same, ended at the last token (as the baseline page, which reads no end).
  const tpotLastError = pairs
    .filter(([r, t]) => t.tokens.length > 1)
    .map(([r, t]) => {
      const w = written(t);
      return (r.times.at(-1) - r.first) / (r.n - 1) / ((w.at(-1) - w[0]) / (w.length - 1)) - 1;
    });
  // Token events held back, by the truth: each event's delivery (page stamp − the
  // simulator's write) against its request's quickest, so that the clocks' offset
  // and the path's own length cancel. Over LATE_MS is late, whatever held it (the
  // engine's stalls, the browser, the shared cores): the baseline page, with no
  // engine, shows what the browser and the machine alone hold back.
  let nEvents = 0;
  let nLate = 0;
  for (const [r, t] of pairs) {
    const w = written(t);
    if (r.times.length !== w.length) continue;
    const delivery = r.times.map((x, i) => x - w[i]);
    const quickest = Math.min(...delivery);
    nEvents += delivery.length;
    nLate += delivery.filter((d) => d - quickest > LATE_MS).length;
  }
  const gaps = (times) => times.slice(1).map((x, i) => x - times[i]);
  const itl = pairs.flatMap(([r]) => gaps(r.times));
  const truthItl = pairs.flatMap(([, t]) => gaps(written(t)));
  return {
    n: pairs.length,
    exact: pairs.filter(([r, t]) => r.n === t.tokens.length).length,
    d50: quantile(delta, 0.5),
    d95: quantile(delta, 0.95),
    after50: quantile(afterSend, 0.5),
    after95: quantile(afterSend, 0.95),
    wait50: quantile(waits, 0.5),
    tpot: quantile(tpotError, 0.5),
    tpotLast: quantile(tpotLastError, 0.5),
    itl50: quantile(itl, 0.5) - quantile(truthItl, 0.5),
    itl99: quantile(itl, 0.99) - quantile(truthItl, 0.99),
    lateTruth: nEvents ? nLate / nEvents : NaN,
  };
}

async function truthOf(sim) {
  const truth = await sim.truth();
  await fetch(`${sim.baseUrl}/sim/truth`, { method: 'DELETE' }).catch(() => {});
  return { byId: new Map(truth.requests.map((t) => [t.response_id, t])), lateness: truth.lateness };
}

/** One level in tokenmeter's page: its own run, warm-up included. */
async function tokenmeterLevel(browser, site, sim, concurrency, workers) {
  const page = await browser.newPage(site.url);
  await page.waitFor(`!!document.querySelector('[data-testid="run"]')`, 30_000);
  if (PROFILE) await page.watchWorkers({ profileEveryUs: 100 });
  const fields = {
    'base-url': sim.baseUrl,
    levels: String(concurrency),
    'requests-per-level': String(Math.max(8, WAVES * concurrency)),
    'max-tokens': String(MAX_TOKENS),
    warmup: '2',
    'engine-workers': String(workers),
  };
  await page.startRun(fields);
  await page.waitFor(`document.querySelector('[data-testid="status"]')?.textContent.trim() === 'done'`, 900_000, 500);
  const profiles = PROFILE ? await page.workerProfiles() : [];
  const json = await page.exportJson();
  const doc = JSON.parse(json);
  await page.close();
  const { byId, lateness } = await truthOf(sim);
  const records = doc.records
    .filter((r) => !r.warmup && !r.error)
    .map((r) => ({
      id: r.response_id,
      sent: r.sent_us / 1e3,
      first: r.first_token_us / 1e3,
      end: r.end_us / 1e3,
      times: r.token_times_us.map((t) => t / 1e3),
      n: r.n_out,
      requestStart: r.browser?.request_start_us != null ? r.browser.request_start_us / 1e3 : undefined,
    }));
  const load = doc.environment.engine_load?.[0];
  return {
    ...figures(records, byId),
    lateness,
    workers: load?.workers ?? 1,
    late: load?.stalls ? `${load.stalls.n_late}/${load.stalls.n_events}` : '–',
    lag: load ? `${f(load.lag_max_ms, 0)}@${f(load.lag_max_at_ms / 1e3, 1)}s/${f(load.lag_p95_ms, 0)}` : '–',
    busy: load ? `${f((100 * load.busy_ms) / load.wall_ms, 0)}%` : '–',
    notes: doc.environment.notes.filter((n) => !n.startsWith('timer resolution')),
    distorted: doc.levels[0]?.distorted?.by,
    stalls: profiles.map((p) => stallsOf(p, STALL_MS)),
  };
}

/** The same level in the baseline page. */
async function baselineLevel(browser, baseline, sim, concurrency) {
  const page = await browser.newPage(`${baseline.url}index.html`);
  const url = `${sim.baseUrl}/chat/completions`;
  const body = JSON.stringify({
    model: 'tokenmeter-sim',
    messages: [{ role: 'user', content: 'Write a long story about a lighthouse keeper.' }],
    max_tokens: MAX_TOKENS,
    stream: true,
    stream_options: { include_usage: true },
  });
  const headers = { 'content-type': 'application/json', authorization: 'Bearer tokenmeter' };
  const call = (c, n) => `window.runLevel(${JSON.stringify(url)}, ${JSON.stringify(body)}, ${JSON.stringify(headers)}, ${c}, ${n})`;
  await page.evaluate(call(1, 2));
  await truthOf(sim);
  const records = await page.evaluate(call(concurrency, Math.max(8, WAVES * concurrency)));
  await page.close();
  const { byId } = await truthOf(sim);
  return figures(
    records.filter((r) => !r.error).map((r) => ({ ...r, first: r.times[0] })),
    byId,
  );
}

function header(label) {
  console.log(`\n${label}: ${MAX_TOKENS} tokens per request, ${WAVES} waves per level; Δ = page − written (paired, ms)`);
  console.log(
    [
      'streams', 'workers', 'ΔTTFT p50', 'p95', 'base p50', 'p95', 'ratio', 'after send p50', 'p95', 'base p50', 'p95', 'wait p50', 'base',
      'TPOT err', 'at last token', 'base', 'ITL Δp50', 'Δp99', 'tokens', 'sim late p99', 'late events', 'held back (truth)', 'base', 'lag max@when/p95', 'busy',
    ].join(' | '),
  );
}

function row(concurrency, tm, base) {
  console.log(
    [
      concurrency, tm.workers, f(tm.d50), f(tm.d95), f(base.d50), f(base.d95), f(tm.d50 / base.d50, 2),
      f(tm.after50), f(tm.after95), f(base.after50), f(base.after95), f(tm.wait50), f(base.wait50), pct(tm.tpot), pct(tm.tpotLast), pct(base.tpot), f(tm.itl50, 2), f(tm.itl99, 2),
      `${tm.exact}/${tm.n}`, `${f(tm.lateness.p99_us / 1e3)} ms`, tm.late, share(tm.lateTruth), share(base.lateTruth), tm.lag, tm.busy,
    ].join(' | ') + (tm.distorted ? ` (flagged: ${tm.distorted})` : ''),
  );
  for (const note of tm.notes) console.log(`    note: ${note}`);
  for (const [i, s] of (tm.stalls ?? []).entries()) {
    console.log(`    worker ${i}: ${s.n} stalls of ${STALL_MS} ms or more, ${f(s.totalMs, 0)} ms in all, the longest ${f(s.longest, 0)} ms; by self time:`);
    for (const [fn, ms] of s.top) console.log(`      ${f(ms, 1).padStart(8)} ms  ${fn}`);
  }
}

/** Level `c` on `sim`: the baseline page once, and tokenmeter's page on each
 * number of workers (a level of one stream takes one). */
async function level(sim, c) {
  const base = await baselineLevel(browser, baseline, sim, c);
  for (const n of new Set(WORKERS.map((w) => Math.min(w, c)))) {
    row(c, await tokenmeterLevel(browser, site, sim, c, n), base);
  }
}

const site = await serveStatic(process.env.TOKENMETER_DIST, '/');
const baseline = await serveStatic(join(here, 'baseline'), '/');
const browser = await launchBare(['--ignore-certificate-errors']);
// A server that is never the bottleneck: no extra cost per sequence in a step.
const SIM = ['--max-batch', '1024', '--decode-per-seq-ms', '0'];
try {
  const tls = await startSim(['--tls', ...SIM]);
  header('HTTP/2 (https://, self-signed)');
  for (const c of H2_LEVELS) await level(tls, c);
  tls.close();
  const plain = await startSim(SIM);
  header('HTTP/1.1 (plain http://)');
  for (const c of H1_LEVELS) await level(plain, c);
  plain.close();
} finally {
  browser.close();
  await site.close();
  await baseline.close();
}
