// `cargo xtask bench memory`: a run of 10,000 short requests, in the page as users
// get it (release build, no driver listening to the network): does it finish, is it
// kept in history, does it survive a reload, does it export, and how much memory did
// the browser's renderer (the page and the engine worker) take at its peak? Prints
// figures; asserts nothing.
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { serveStatic } from '../lib/static-server.mjs';
import { startSim } from '../lib/sim.mjs';
import { launchBare } from './cdp.mjs';

const N_REQUESTS = Number(process.env.TOKENMETER_BENCH_REQUESTS ?? 10_000);
const CONCURRENCY = Number(process.env.TOKENMETER_BENCH_CONCURRENCY ?? 64);
const MAX_TOKENS = Number(process.env.TOKENMETER_BENCH_TOKENS ?? 8);

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
  const page = await browser.newPage(site.url);
  await page.waitFor(`!!document.querySelector('[data-testid="run"]')`, 30_000);
  const fields = {
    'base-url': sim.baseUrl,
    levels: String(CONCURRENCY),
    'requests-per-level': String(N_REQUESTS),
    'max-tokens': String(MAX_TOKENS),
    warmup: '2',
  };
  const started = Date.now();
  await page.startRun(fields);
  let peakDuring = 0;
  const sampler = setInterval(() => {
    peakDuring = Math.max(peakDuring, ...renderers().map((r) => r.nowMiB));
  }, 250);
  await page.waitFor(`document.querySelector('[data-testid="status"]')?.textContent.trim() === 'done'`, 1_800_000, 500);
  clearInterval(sampler);
  const seconds = (Date.now() - started) / 1e3;
  const shown = await page.evaluate(`({
    rows: [...document.querySelectorAll('[data-testid="results-row"]')].map((r) => r.querySelector('[data-col="n_ok"]').textContent),
    kept: document.querySelectorAll('[data-testid="history-row"]').length,
    storageNote: document.querySelector('[data-testid="history-storage-note"]')?.textContent ?? null,
  })`);
  const exportStarted = Date.now();
  const text = await page.exportJson();
  const doc = JSON.parse(text);
  const exported = { bytes: text.length, records: doc.records.length, ok: doc.levels[0].n_ok };
  const exportSeconds = (Date.now() - exportStarted) / 1e3;
  await page.send('Page.reload');
  await page.waitFor(`!!document.querySelector('[data-testid="history-view"]') && !!document.querySelector('[data-testid="status"]')`, 60_000);
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
  console.log(`after a reload: status ${afterReload.status}, n_ok ${afterReload.rows.join(', ')}${afterReload.notes.includes('per-request records') ? ' (kept without its per-request records, as the note says)' : ''}`);
  const renderer = (list) => list.map((r) => `${r.peakMiB.toFixed(0)} MiB peak`).join(', ');
  console.log(`renderer processes (page + engine worker share one): before ${renderer(before) || '–'}; at the end ${renderer(after)}; largest resident size sampled during the run ${peakDuring.toFixed(0)} MiB`);
  await page.close();
} finally {
  browser.close();
  sim.close();
  await site.close();
}
