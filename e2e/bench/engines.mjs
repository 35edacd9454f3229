// `cargo xtask bench accuracy`, second part: the same measurements in every engine
// (Chromium, Firefox ESR, WebKitGTK) through WebDriver, one column per engine, with
// what differs between them: timer resolution with and without cross-origin
// isolation, whether Resource Timing splits TTFT for streamed responses, the
// protocol, how many HTTP/1.1 requests the server saw at once. Prints figures;
// asserts nothing.
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { selectedEngines, startSession, ENGINES } from '../engines/drivers.mjs';
import { EnginePage } from '../engines/page.mjs';
import { quantile } from './quantile.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '–');

/** Runs a ladder in an open session and returns the document and the truth by id. */
async function ladder(app, siteUrl, sim, levels, requestsPerLevel, maxTokens) {
  await app.open(siteUrl);
  await app.fillPlan({
    'base-url': sim.baseUrl,
    levels: levels.join(','),
    'requests-per-level': requestsPerLevel,
    'max-tokens': maxTokens,
    warmup: 2,
  });
  await app.click('run');
  await app.waitForStatus('done', 600_000);
  const doc = JSON.parse(await app.exportText('export-json'));
  const truth = await sim.truth();
  await fetch(`${sim.baseUrl}/sim/truth`, { method: 'DELETE' }).catch(() => {});
  return { doc, truth: new Map(truth.requests.map((t) => [t.response_id, t])) };
}

/** Per level: paired ΔTTFT, after-send, browser wait, ITL error, tokens, server overlap. */
function levelFigures({ doc, truth }, concurrency) {
  const level = doc.levels.find((l) => l.concurrency === concurrency);
  const pairs = doc.records
    .filter((r) => !r.warmup && !r.error && r.concurrency === concurrency)
    .map((r) => [r, truth.get(r.response_id)])
    .filter(([, t]) => t);
  const delta = pairs.map(([r, t]) => (r.first_token_us - r.sent_us - (t.tokens[0].written_us - t.accepted_us)) / 1e3);
  const itl = (times) => times.slice(1).map((x, i) => (x - times[i]) / 1e3);
  const itlDelta = quantile(pairs.flatMap(([r]) => itl(r.token_times_us)), 0.5) -
    quantile(pairs.flatMap(([, t]) => itl(t.tokens.map((k) => k.written_us))), 0.5);
  // The most requests the server had at once: what the browser let through.
  const spans = pairs.map(([, t]) => [t.accepted_us, t.ended_us]);
  const serverPeak = Math.max(0, ...spans.map(([a]) => spans.filter(([b, e]) => b <= a && a < e).length));
  return {
    delta50: quantile(delta, 0.5),
    delta95: quantile(delta, 0.95),
    afterSend50: level?.ttft_after_send_ms?.p50,
    wait95: level?.browser_wait_ms?.p95,
    itlDelta,
    tokens: `${pairs.filter(([r, t]) => r.n_out === t.tokens.length).length}/${pairs.length}`,
    protocol: Object.keys(level?.protocols ?? {}).join(',') || 'not exposed',
    serverPeak,
  };
}

const dist = process.env.TOKENMETER_DIST;
const plainSite = await serveStatic(dist, '/');
const isolatedSite = await serveStatic(dist, '/', ISOLATED);
const plain = await startSim(['--max-batch', '64']);
const tls = await startSim(['--tls', '--max-batch', '64']);
const columns = {};
try {
  for (const name of selectedEngines()) {
    const session = await startSession(name, { insecureCerts: true });
    const app = new EnginePage(session.driver);
    try {
      const ua = await app.userAgent();
      const h1 = await ladder(app, plainSite.url, plain, SMOKE ? [1] : [1, 4, 8], SMOKE ? 2 : 8, SMOKE ? 4 : 32);
      const h2 = await ladder(app, plainSite.url, tls, SMOKE ? [1] : [1, 16], SMOKE ? 2 : 16, SMOKE ? 4 : 32);
      const iso = await ladder(app, isolatedSite.url, plain, [1], 2, SMOKE ? 4 : 8);
      columns[name] = { ua, h1, h2, iso };
      console.log(`${ENGINES[name].name}: ${ua}`);
    } finally {
      await session.close();
    }
  }
} finally {
  plain.close();
  tls.close();
  await plainSite.close();
  await isolatedSite.close();
}

const names = Object.keys(columns);
const rows = [
  ['timer resolution, µs (not isolated)', (c) => f1(c.h1.doc.environment.timer_resolution_us)],
  ['timer resolution, µs (COOP + COEP)', (c) => `${f1(c.iso.doc.environment.timer_resolution_us)} (isolated: ${c.iso.doc.environment.cross_origin_isolated})`],
  ['protocol, http:// / https://', (c) => `${levelFigures(c.h1, 1).protocol} / ${levelFigures(c.h2, 1).protocol}`],
  ['TTFT split (Resource Timing)', (c) => (Number.isFinite(levelFigures(c.h1, 1).afterSend50) ? 'yes' : 'no')],
  ['HTTP/1.1 at 8: most at the server', (c) => String(levelFigures(c.h1, 8).serverPeak)],
  ['HTTP/1.1 at 8: browser wait p95', (c) => f1(levelFigures(c.h1, 8).wait95)],
];
rows.push(['HTTP/2 at 16: most at the server', (c) => String(levelFigures(c.h2, 16).serverPeak)]);
for (const [label, run, level] of [['h1', 'h1', 1], ['h1', 'h1', 4], ['h1', 'h1', 8], ['h2', 'h2', 1], ['h2', 'h2', 16]]) {
  rows.push([`${label} c${level}: ΔTTFT p50 / p95`, (c) => { const x = levelFigures(c[run], level); return `${f1(x.delta50)} / ${f1(x.delta95)}`; }]);
  rows.push([`${label} c${level}: after send p50, wait p95`, (c) => { const x = levelFigures(c[run], level); return `${f1(x.afterSend50)}, ${f1(x.wait95)}`; }]);
  rows.push([`${label} c${level}: ITL Δ p50, tokens exact`, (c) => { const x = levelFigures(c[run], level); return `${f1(x.itlDelta)}, ${x.tokens}`; }]);
}
// The notes the page gave (condition kinds, with the level where there is one).
const notes = (run) =>
  (run.doc.environment.conditions ?? [])
    .map((c) => (c.concurrency !== undefined ? `${c.kind}@${c.concurrency}` : c.kind))
    .join(' ') || '–';
rows.push(['notes, HTTP/1.1 run', (c) => notes(c.h1)]);
rows.push(['notes, HTTP/2 run', (c) => notes(c.h2)]);
rows.push(['notes, isolated run', (c) => notes(c.iso)]);
const width = Math.max(...rows.map(([l]) => l.length));
console.log(`\nPer engine (ms unless said; Δ = page − simulator's truth of the same request)`);
console.log(`${''.padEnd(width)} | ${names.map((n) => ENGINES[n].name.padEnd(18)).join(' | ')}`);
for (const [label, cell] of rows) {
  console.log(`${label.padEnd(width)} | ${names.map((n) => cell(columns[n]).padEnd(18)).join(' | ')}`);
}
