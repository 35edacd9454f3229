// `cargo xtask bench memory`: a run of 10,000 short requests, in the page as users
// get it (release build, no driver listening to the network): does it finish, is it
// kept in history, does it survive a reload, does it export, and how much memory did
// the page and the engine worker each take at their peak (V8 heap, and WebAssembly
// memory), and the browser's renderer process (both, and the browser's own share)
// in all? Then hostile servers, one in a fresh tab each (its own engine worker):
// what each request was counted as, the most bytes read of one answer, how long the
// run took and the engine worker's peak memory. It also prints the page thread's
// long tasks (the Long Tasks API: over 50 ms, what a user scrolling or hovering a
// chart feels) during the run, at its end and in the export. Prints figures;
// asserts nothing.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { launchBare } from './cdp.mjs';
import { stallsOf } from './profile.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const N_REQUESTS = Number(process.env.TOKENMETER_BENCH_REQUESTS ?? (SMOKE ? 40 : 10_000));
const CONCURRENCY = Number(process.env.TOKENMETER_BENCH_CONCURRENCY ?? (SMOKE ? 4 : 64));
const MAX_TOKENS = Number(process.env.TOKENMETER_BENCH_TOKENS ?? (SMOKE ? 4 : 8));
// `TOKENMETER_BENCH_PROFILE=1`: the page thread's CPU sampled every 200 µs from
// the run's start to the export's end, and under the long tasks what ran in each
// stretch of 50 ms or more with no idle sample, by self time (with
// `TOKENMETER_KEEP_NAMES=1`, the WebAssembly's own function names).
const PROFILE = process.env.TOKENMETER_BENCH_PROFILE === '1';
const LONG_TASK_MS = 50;

/** Keeps the page thread's long tasks, `[startTime, duration]` ms, from the page's start. */
const LONG_TASKS = `(() => {
  const tasks = (globalThis.__longTasks = []);
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) tasks.push([e.startTime, e.duration]);
  }).observe({ type: 'longtask', buffered: true });
})()`;

/** Peak and current resident memory (MiB) of every Chromium renderer process. */
function renderers() {
  let pids = [];
  try {
    pids = execFileSync('pgrep', ['-f', 'type=renderer'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    // pgrep exits 1 when there is no renderer yet.
  }
  return pids.map((pid) => {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (key) => Number(status.match(new RegExp(`${key}:\\s+(\\d+)`))?.[1] ?? 0);
    return { pid, peakMiB: kib('VmHWM') / 1024, nowMiB: kib('VmRSS') / 1024 };
  });
}

const site = await serveStatic(process.env.TOKENMETER_DIST, '/');
const sim = await startSim(['--tls', '--max-batch', '1024', '--decode-per-seq-ms', '0', '--prefill-base-ms', '0', '--prefill-per-token-ms', '0', '--truth-capacity', '1000']);
const browser = await launchBare(['--ignore-certificate-errors']);
try {
  const before = renderers();
  const page = await browser.newPage(site.url, { countWasm: true });
  await page.waitFor(`!!document.querySelector('[data-testid="run"]')`, 30_000);
  const fields = {
    'base-url': sim.baseUrl,
    levels: String(CONCURRENCY),
    'requests-per-level': String(N_REQUESTS),
    'max-tokens': String(MAX_TOKENS),
    warmup: '2',
  };
  await page.watchWorkers();
  await page.evaluate(LONG_TASKS);
  if (PROFILE) {
    await page.send('Profiler.enable');
    await page.send('Profiler.setSamplingInterval', { interval: 200 });
    await page.send('Profiler.start');
  }
  const runStartedAt = await page.evaluate('performance.now()');
  const started = Date.now();
  await page.startRun(fields);
  let peakDuring = 0;
  const peak = { pageJs: 0, pageWasm: 0, workerJs: 0, workerWasm: 0 };
  const sampleHeaps = async () => {
    const { page: p, workers } = await page.heaps();
    if (p) {
      peak.pageJs = Math.max(peak.pageJs, p.jsMiB);
      peak.pageWasm = Math.max(peak.pageWasm, p.wasmMiB);
    }
    for (const w of workers) {
      peak.workerJs = Math.max(peak.workerJs, w.jsMiB);
      peak.workerWasm = Math.max(peak.workerWasm, w.wasmMiB);
    }
  };
  const sampler = setInterval(() => {
    peakDuring = Math.max(peakDuring, ...renderers().map((r) => r.nowMiB));
    sampleHeaps();
  }, 250);
  await page.waitFor(`document.querySelector('[data-testid="status"]')?.textContent.trim() === 'done'`, 1_800_000, 500);
  clearInterval(sampler);
  const doneAt = await page.evaluate('performance.now()');
  await sampleHeaps();
  const seconds = (Date.now() - started) / 1e3;
  const shown = await page.evaluate(`({
    rows: [...document.querySelectorAll('[data-testid="results-row"]')].map((r) => r.querySelector('[data-col="n_ok"]').textContent),
    kept: document.querySelectorAll('[data-testid="history-row"]').length,
    storageNote: document.querySelector('[data-testid="history-storage-note"]')?.textContent ?? null,
  })`);
  const exportStarted = Date.now();
  // Counted in the page: 10 MB does not cross the DevTools socket in one message.
  const exported = await page.exportJson(`(text) => {
    const doc = JSON.parse(text);
    return { bytes: text.length, records: doc.records.length, ok: doc.levels[0].n_ok };
  }`);
  const exportSeconds = (Date.now() - exportStarted) / 1e3;
  // The export ends when the page hands over the file; the bench's own reading of
  // it (parsing 10 MB above) is not the page's work.
  const exportedAt = await page.evaluate('globalThis.__exportedAt');
  const longTasks = await page.evaluate('globalThis.__longTasks');
  const profile = PROFILE ? (await page.send('Profiler.stop')).profile : null;
  await sampleHeaps();
  const reloaded = page.once('Page.loadEventFired');
  await page.send('Page.reload');
  await reloaded;
  await page.waitFor(`!!document.querySelector('[data-testid="history"][data-state="ready"] [data-testid="history-view"]')`, 60_000);
  const afterReload = await page.evaluate(`(() => {
    document.querySelector('[data-testid="history-view"]').click();
    return new Promise((resolve) => setTimeout(() => resolve({
      status: document.querySelector('[data-testid="status"]').textContent.trim(),
      rows: [...document.querySelectorAll('[data-testid="results-row"]')].map((r) => r.querySelector('[data-col="n_ok"]').textContent),
      notes: document.querySelector('[data-testid="environment-notes"]')?.textContent ?? '',
    }), 500));
  })()`);
  const after = renderers();
  console.log(`\n${N_REQUESTS} requests of ${MAX_TOKENS} tokens at concurrency ${CONCURRENCY}: done in ${seconds.toFixed(1)} s`);
  console.log(`results table n_ok: ${shown.rows.join(', ')}; kept in history: ${shown.kept} run(s)${shown.storageNote ? `; storage note: ${shown.storageNote}` : ''}`);
  console.log(`export: ${(exported.bytes / 2 ** 20).toFixed(1)} MiB of JSON, ${exported.records} records (n_ok ${exported.ok}), in ${exportSeconds.toFixed(1)} s`);
  console.log(`after a reload: status ${afterReload.status}, n_ok ${afterReload.rows.join(', ')}${afterReload.notes.includes('per-request records') ? ' (kept without its per-request records, as the note says)' : ' (kept with its per-request records)'}`);
  const renderer = (list) => list.map((r) => `${r.peakMiB.toFixed(0)} MiB peak`).join(', ');
  const mib = (n) => `${n.toFixed(0)} MiB`;
  console.log(`peak in the page: ${mib(peak.pageJs)} JS heap + ${mib(peak.pageWasm)} WebAssembly memory; in the engine worker: ${mib(peak.workerJs)} JS heap + ${mib(peak.workerWasm)} WebAssembly memory`);
  const tasks = (from, to) => {
    const durations = longTasks.filter(([at]) => at >= from && at < to).map(([, ms]) => ms);
    return durations.length
      ? `${durations.length}, the longest ${Math.max(...durations).toFixed(0)} ms, ${durations.reduce((a, b) => a + b, 0).toFixed(0)} ms in all`
      : 'none';
  };
  // Before the run: the page's own load (the observer reports earlier tasks too);
  // after the export: the bench's own parsing of the exported file in the page.
  console.log(
    `page thread's long tasks (over ${LONG_TASK_MS} ms): before the run ${tasks(0, runStartedAt)}; during the run ${tasks(runStartedAt, doneAt)}; export ${tasks(doneAt, exportedAt)}; after the export (the bench reading the file, not the page's work) ${tasks(exportedAt, Infinity)}`,
  );
  const when = (at) =>
    at < runStartedAt
      ? `${((runStartedAt - at) / 1e3).toFixed(1)} s before the run`
      : at < doneAt
        ? `${((at - runStartedAt) / 1e3).toFixed(1)} s into the run`
        : at < exportedAt
          ? `${((at - doneAt) / 1e3).toFixed(2)} s after it ended`
          : 'after the export (the bench reading the file)';
  console.log(`  each: ${longTasks.map(([at, ms]) => `${ms.toFixed(0)} ms at ${when(at)}`).join('; ') || 'none'}`);
  if (profile) {
    const stalls = stallsOf(profile, LONG_TASK_MS);
    console.log(`  the page thread's busy stretches of ${LONG_TASK_MS} ms or more (profiled): ${stalls.n}, ${stalls.totalMs.toFixed(0)} ms in all, the longest ${stalls.longest.toFixed(0)} ms`);
    for (const stall of stalls.stalls) {
      const top = stall.top.map(([fn, ms]) => `${fn} ${ms.toFixed(0)}`).join(', ');
      console.log(`    ${stall.ms.toFixed(0)} ms at ${(stall.atMs / 1e3).toFixed(1)} s: ${top}`);
    }
  }
  console.log(`renderer processes (page + engine worker share one): before ${renderer(before) || '–'}; at the end ${renderer(after)}; largest resident size sampled during the run ${peakDuring.toFixed(0)} MiB`);
  await page.close();
  await hostileServers();
} finally {
  browser.close();
  sim.close();
  await site.close();
}

/** The simulator's hostile faults, each against a fresh tab. */
async function hostileServers() {
  const faults = ['endless-headers', 'huge-line', 'million-events', 'keep-alive-forever', 'gzip-bomb', 'html-200', 'endless-error', 'endless'];
  const [concurrency, requests, timeoutS] = SMOKE ? [2, 2, 2] : [4, 16, 5];
  const rows = [];
  for (const fault of faults) {
    const hostile = await startSim(['--fault', fault, '--hang-s', '30']);
    try {
      const tab = await browser.newPage(site.url, { countWasm: true });
      await tab.waitFor(`!!document.querySelector('[data-testid="run"]')`, 30_000);
      await tab.watchWorkers();
      const peak = { js: 0, wasm: 0 };
      const sample = async () => {
        for (const w of (await tab.heaps()).workers) {
          peak.js = Math.max(peak.js, w.jsMiB);
          peak.wasm = Math.max(peak.wasm, w.wasmMiB);
        }
      };
      const started = Date.now();
      await tab.startRun({
        'base-url': hostile.baseUrl,
        levels: String(concurrency),
        'requests-per-level': String(requests),
        'max-tokens': '12',
        warmup: '0',
        timeout: String(timeoutS),
      });
      const sampler = setInterval(sample, 100);
      await tab.waitFor(`document.querySelector('[data-testid="status"]')?.textContent.trim() === 'done'`, 300_000, 100);
      clearInterval(sampler);
      await sample();
      const seconds = (Date.now() - started) / 1e3;
      const shown = await tab.exportJson(`(text) => {
        const records = JSON.parse(text).records;
        return {
          kinds: [...new Set(records.map((r) => r.error?.kind ?? 'ok'))],
          failed: records.filter((r) => r.error).length,
          maxBytes: Math.max(...records.map((r) => r.n_bytes)),
        };
      }`);
      rows.push(`| ${fault} | ${shown.kinds.join(', ')} | ${shown.failed} of ${requests} | ${(shown.maxBytes / 2 ** 10).toFixed(0)} KiB | ${seconds.toFixed(1)} s | ${peak.js.toFixed(1)} MiB JS + ${peak.wasm.toFixed(1)} MiB WebAssembly |`);
      await tab.close();
    } finally {
      hostile.close();
    }
  }
  console.log(`\nhostile servers: ${requests} requests at concurrency ${concurrency}, timeout ${timeoutS} s, max_tokens 12, each fault in a fresh tab`);
  console.log('| fault | counted as | failed | most read of one answer | run | engine worker at its peak |');
  console.log('|---|---|---|---|---|---|');
  for (const row of rows) console.log(row);
}
