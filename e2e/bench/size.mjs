// `cargo xtask bench size`: what a user downloads (the release build, after
// wasm-opt: every file raw and gzipped, and the total) and how soon the page is up
// in headless Chromium on this machine: first contentful paint, and interactive
// (the app mounted and its Run button there), median and range of several cold
// loads, each in a fresh tab with the cache off; and the page thread's longest task
// while loading (the Long Tasks API, up to a second after the Run button exists:
// what a visitor scrolling the page at once feels). Prints figures; asserts nothing.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { serveStatic } from '../lib/static-server.mjs';
import { launchBare } from './cdp.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const LOADS = Number(process.env.TOKENMETER_BENCH_LOADS ?? (SMOKE ? 1 : 7));
const dist = process.env.TOKENMETER_DIST;

// Files the page fetches only when a feature needs them, not on its first load
// (each cold load below checks that it did not fetch them): the Locust template,
// and the pieces of the split build (xtask/src/split.rs), of which the engine's,
// `split_engine.wasm`, is fetched by the worker when the first run starts.
const isOnDemand = (f) => f === 'locustfile.template.py' || /-split\/(split|chunk)_\w+\.wasm$/.test(f);
// What a first run adds: the engine's piece (in the worker), the live and the finished view's,
// the code that writes a run for history (and saves an unfinished one as it goes), the
// code that reads the engine's messages and at most every chunk (code that pieces share).
const isRunPiece = (f) => /-split\/(split_(engine|live|finished|keep|read)|chunk_\d+)\.wasm$/.test(f);

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const files = readdirSync(dist, { recursive: true })
  .filter((f) => statSync(join(dist, f)).isFile())
  .map((f) => {
    const bytes = readFileSync(join(dist, f));
    return { f, raw: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
  })
  .sort((a, b) => b.gz - a.gz);
console.log(`\n${"file".padEnd(56)} ${"raw".padStart(11)} ${"gzip -9".padStart(11)}`);
for (const { f, raw, gz } of files) console.log(`${f.padEnd(56)} ${kib(raw).padStart(11)} ${kib(gz).padStart(11)}`);
const total = files.reduce((t, x) => ({ raw: t.raw + x.raw, gz: t.gz + x.gz }), { raw: 0, gz: 0 });
console.log(`${'all'.padEnd(56)} ${kib(total.raw).padStart(11)} ${kib(total.gz).padStart(11)}`);
const sum = (keep) =>
  files.filter(({ f }) => keep(f)).reduce((t, x) => ({ raw: t.raw + x.raw, gz: t.gz + x.gz }), { raw: 0, gz: 0 });
const first = sum((f) => !isOnDemand(f));
console.log(`${'first load (all but on demand)'.padEnd(56)} ${kib(first.raw).padStart(11)} ${kib(first.gz).padStart(11)}`);
const firstRun = sum((f) => !isOnDemand(f) || isRunPiece(f));
console.log(`${'with a first run (+ engine, live, finished, keep, read, chunks)'.padEnd(56)} ${kib(firstRun.raw).padStart(11)} ${kib(firstRun.gz).padStart(11)}`);

const site = await serveStatic(dist, '/');
const browser = await launchBare();
const paints = [];
const fetchedOnDemand = new Set();
const interactive = [];
const longest = [];
try {
  for (let i = 0; i < LOADS; i++) {
    const page = await browser.newPage('about:blank');
    await page.send('Network.enable');
    await page.send('Network.setCacheDisabled', { cacheDisabled: true });
    // Stamped in the page itself, from its first line: the first contentful paint,
    // and when the Run button first exists.
    await page.send('Page.addScriptToEvaluateOnNewDocument', {
      source: `(() => {
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) if (e.name === 'first-contentful-paint') globalThis.__fcp = e.startTime;
        }).observe({ type: 'paint', buffered: true });
        new MutationObserver((_, observer) => {
          if (document.querySelector('[data-testid="run"]')) {
            globalThis.__interactive = performance.now();
            observer.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });
        globalThis.__longest = 0;
        new PerformanceObserver((list) => {
          for (const e of list.getEntries()) globalThis.__longest = Math.max(globalThis.__longest, e.duration);
        }).observe({ type: 'longtask', buffered: true });
      })()`,
    });
    const loaded = page.once('Page.loadEventFired');
    await page.send('Page.navigate', { url: site.url });
    await loaded;
    await page.waitFor(`globalThis.__interactive !== undefined && globalThis.__fcp !== undefined`, 30_000, 50);
    // What the app does right after it is up (history read, the rest of the view)
    // belongs to the load too.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const t = await page.evaluate(`({ fcp: globalThis.__fcp, interactive: globalThis.__interactive, longest: globalThis.__longest })`);
    const names = await page.evaluate(`performance.getEntriesByType('resource').map((e) => e.name)`);
    for (const name of names) {
      const file = new URL(name).pathname.slice(1);
      if (isOnDemand(file)) fetchedOnDemand.add(file);
    }
    paints.push(t.fcp);
    interactive.push(t.interactive);
    longest.push(t.longest);
    await page.close();
  }
} finally {
  browser.close();
  await site.close();
}
const stats = (xs) => {
  const s = xs.filter((x) => x != null).sort((a, b) => a - b);
  return `median ${s[Math.floor(s.length / 2)].toFixed(0)} ms (${s[0].toFixed(0)}–${s[s.length - 1].toFixed(0)})`;
};
console.log(`on-demand files fetched by a first load: ${[...fetchedOnDemand].join(', ') || 'none'}`);
console.log(`\n${LOADS} cold loads from loopback, cache off: first contentful paint ${stats(paints)}; interactive (the Run button exists) ${stats(interactive)}`);
console.log(`the page thread's longest task while loading (0 when none is over 50 ms): ${stats(longest)}`);
