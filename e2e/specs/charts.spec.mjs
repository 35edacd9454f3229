// The run at a glance: headline cards at the level a user would run at, and the
// latency and throughput charts: one point per level and series, the knee and safe
// markers at the verdict's levels, values on hover and keyboard focus, in English
// and Chinese.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

// A batch of 2 puts the knee inside the ladder: beyond it, requests queue.
const suite = useSuite(['--max-batch', '2', '--decode-per-seq-ms', '0']);

/** `data-series` → the `data-concurrency` of its points, in order, in one chart. */
const pointsBySeries = (page, chart) =>
  page.locator(`[data-testid="${chart}"] [data-testid="chart-point"]`).evaluateAll((points) => {
    const by = {};
    for (const p of points) (by[p.dataset.series] ??= []).push(Number(p.dataset.concurrency));
    return by;
  });

const markerLevels = (page, chart, marker) =>
  page
    .locator(`[data-testid="${chart}"] [data-testid="${marker}"]`)
    .evaluateAll((ms) => [...new Set(ms.map((m) => Number(m.dataset.concurrency)))]);

test('a finished ladder is drawn: a point per level and series, markers at the verdict', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2,4,8', 'requests-per-level': 4, 'max-tokens': 16, warmup: 1 });
  await app.run();
  await app.waitForStatus('done');

  const verdict = await app.byTestId('verdict').evaluate((v) => ({ knee: v.dataset.knee, safe: v.dataset.safe }));
  const rows = await app.resultsRows();
  const levels = rows.map((r) => r.concurrency);
  assert.deepEqual(levels, [1, 2, 4, 8]);

  // Headline: the safe level, or the last one when none is safe.
  const headline = await app.byTestId('headline').getAttribute('data-concurrency');
  assert.equal(headline, verdict.safe || '8');
  const row = rows.find((r) => r.concurrency === Number(headline));
  const [p50, p95] = (await app.byTestId('headline-ttft').locator('.card-value').textContent()).match(/[\d.]+/g).map(Number);
  assert.ok(Math.abs(p50 - Number(row.ttft_p50)) <= 0.55 && Math.abs(p95 - Number(row.ttft_p95)) <= 0.55, `${p50}/${p95} vs the table's ${row.ttft_p50}/${row.ttft_p95}`);
  assert.equal(await app.byTestId('headline-knee').locator('.card-value').textContent(), verdict.knee || '–');

  // Latency: TTFT p50/p95, TTFT after send (the simulator allows Resource Timing),
  // TPOT p50/p95, each at every level.
  const latency = await pointsBySeries(page, 'chart-latency');
  assert.deepEqual(Object.keys(latency).sort(), ['tpot_p50', 'tpot_p95', 'ttft_after_send_p50', 'ttft_p50', 'ttft_p95']);
  for (const [series, at] of Object.entries(latency)) assert.deepEqual(at, levels, series);
  const throughput = await pointsBySeries(page, 'chart-throughput');
  // Goodput where the plan has an SLO (the default plan does).
  const goodput = rows[0].goodput_rps !== '–' ? ['goodput_rps'] : [];
  assert.deepEqual(Object.keys(throughput).sort(), [...goodput, 'output_tps', 'request_rps']);
  for (const chart of ['chart-latency', 'chart-throughput']) {
    assert.deepEqual(await markerLevels(page, chart, 'knee-marker'), verdict.knee ? [Number(verdict.knee)] : []);
    assert.deepEqual(await markerLevels(page, chart, 'safe-marker'), verdict.safe ? [Number(verdict.safe)] : []);
  }

  // The table fits at 1,280 px with the article's columns; a chosen column is
  // remembered, and every cell's hook reads whatever is shown.
  const fits = () =>
    page.locator('.table-scroll').first().evaluate((el) => el.scrollWidth <= el.clientWidth);
  assert.ok(await fits(), 'no horizontal scroll at 1,280 px');
  const shown = () =>
    page.locator('[data-testid="results-table"] th').evaluateAll((ths) => ths.filter((th) => getComputedStyle(th).display !== 'none').length);
  const before = await shown();
  // The simulator publishes /metrics: the server's queue and KV cache are shown too.
  const server = (await page.locator('[data-testid="server-metrics"][data-state="read"]').count()) > 0;
  assert.equal(before, server ? 11 : 9, 'the level, the article\'s eight columns, and the server\'s waiting and KV cache where its metrics were read');
  await app.byTestId('column-chooser').locator('summary').click();
  await app.byTestId('column-chooser').locator('input[data-col="e2e_p95"]').check();
  assert.equal(await shown(), before + 1);
  assert.ok((await app.resultsRows())[0].protocol, 'hidden cells keep their hooks');
  assert.equal(await page.evaluate(() => localStorage.getItem('tokenmeter.columns.v1')).then((v) => JSON.parse(v).includes('e2e_p95')), true);
  await app.byTestId('column-chooser').locator('input[data-col="e2e_p95"]').uncheck();

  // A point says its value: as a tooltip, and shown on keyboard focus.
  const point = page.locator('[data-testid="chart-latency"] [data-testid="chart-point"][data-series="ttft_p95"][data-concurrency="2"]');
  const row2 = rows.find((r) => r.concurrency === 2);
  const title = await point.locator('title').textContent();
  assert.match(title, /^TTFT p95 · concurrency 2: [\d.]+ ms$/);
  assert.ok(Math.abs(parseFloat(title.split(': ')[1]) - Number(row2.ttft_p95)) < 1, `${title} vs ${row2.ttft_p95}`);
  const value = point.locator('.pt-value');
  assert.equal(await value.evaluate((v) => getComputedStyle(v).opacity), '0');
  await point.focus();
  assert.equal(await value.evaluate((v) => getComputedStyle(v).opacity), '1');
  await app.screenshot(screenshotPath('charts-en.png'));

  // The run in detail: tokens over time with the levels shaded, a TTFT and an ITL
  // curve per level, and one level's requests as bars (the headline's level first).
  assert.equal(await page.locator('[data-testid="chart-over-time"] [data-testid="over-time-level"]').count(), 4);
  const curves = await page
    .locator('[data-testid="chart-cdf"] [data-testid="cdf-curve"]')
    .evaluateAll((cs) => cs.map((c) => `${c.dataset.metric}@${c.dataset.concurrency}`));
  assert.deepEqual(curves, [...levels.map((c) => `ttft@${c}`), ...levels.map((c) => `itl@${c}`)]);
  assert.equal(await app.byTestId('chart-timeline').getAttribute('data-concurrency'), headline);
  assert.equal(await page.locator('[data-testid="timeline-bar"][data-kind="ok"]').count(), 4);
  await app.byTestId('timeline-level').selectOption('8');
  await page.waitForSelector('[data-testid="chart-timeline"][data-concurrency="8"]');
  assert.equal(await app.byTestId('timeline-bar').count(), 4);
  await app.screenshot(screenshotPath('charts-detail-en.png'));

  // The HTML report: one file that opens from disk, offline, with its charts.
  const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId('export-html').click()]);
  // Saved under its own name (a file without .html would open as text).
  const file = join(await mkdtemp(join(tmpdir(), 'tokenmeter-report-')), download.suggestedFilename());
  assert.match(file, /\.html$/);
  await download.saveAs(file);
  const report = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const fetched = [];
  report.on('request', (r) => fetched.push(r.url()));
  await report.goto(pathToFileURL(file).href);
  for (const chart of ['chart-latency', 'chart-throughput', 'chart-over-time', 'chart-cdf', 'chart-timeline']) {
    const box = await report.locator(`[data-testid="${chart}"]`).boundingBox();
    assert.ok(box && box.width > 600 && box.height > 150, `${chart} is drawn: ${JSON.stringify(box)}`);
  }
  assert.equal(
    await report.locator('[data-testid="chart-latency"] [data-testid="chart-point"]').count(),
    await page.locator('[data-testid="chart-latency"] [data-testid="chart-point"]').count(),
  );
  assert.deepEqual(fetched, [pathToFileURL(file).href], 'nothing but the file itself');
  await report.screenshot({ path: screenshotPath('report-en.png'), fullPage: true });
  // The phone's drawings are in the file too, shown only on a narrow screen.
  assert.equal(await report.locator('[data-testid="narrow-chart-latency"]').isVisible(), false);
  await report.setViewportSize({ width: 390, height: 844 });
  await report.locator('[data-testid="narrow-chart-latency"]').waitFor();
  assert.equal(await report.locator('[data-testid="chart-latency"]').isVisible(), false);
  const phoneText = await report.evaluate(() =>
    [...document.querySelectorAll('figure.narrow svg')].map((svg) => (12 * svg.getBoundingClientRect().width) / svg.viewBox.baseVal.width),
  );
  // The five charts, and what the server reported where its metrics were read.
  const serverCharts = await report.locator('[data-testid="chart-server"]').count();
  assert.equal(phoneText.length, 5 + serverCharts);
  for (const px of phoneText) assert.ok(px >= 9, `the report's chart text is ${px.toFixed(1)} px on a phone`);
  const reportWidth = await report.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(reportWidth <= 390, `the report is ${reportWidth} px wide on a 390 px phone`);
  await report.screenshot({ path: screenshotPath('report-phone-en.png'), fullPage: true });
  await report.close();

  // In Chinese.
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('chart-latency').textContent(), /TTFT：首 token 时延/);
  assert.match(await app.byTestId('chart-throughput').textContent(), /每秒输出 token/);
  assert.match(await app.byTestId('headline').textContent(), /安全并发|最后一档/);
  await app.screenshot(screenshotPath('charts-zh.png'));
  // The report in Chinese: the page's language at the time of export.
  const [zhDownload] = await Promise.all([page.waitForEvent('download'), app.byTestId('export-html').click()]);
  const zhFile = join(await mkdtemp(join(tmpdir(), 'tokenmeter-report-')), zhDownload.suggestedFilename());
  await zhDownload.saveAs(zhFile);
  const zhReport = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await zhReport.goto(pathToFileURL(zhFile).href);
  assert.equal(await zhReport.locator('html').getAttribute('lang'), 'zh-CN');
  assert.match(await zhReport.locator('[data-testid="chart-latency"]').textContent(), /首 token 时延/);
  await zhReport.screenshot({ path: screenshotPath('report-zh.png'), fullPage: true });
  await zhReport.close();
  await page.close();
});

test('while a run goes, its charts grow from the progress', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  // About 5 s of 64-token answers, one level after another.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 6, 'max-tokens': 64, warmup: 0 });
  await app.run();
  const overTime = page.locator('[data-testid="live"] [data-testid="chart-over-time"]');
  await overTime.waitFor({ timeout: 30_000 });
  const bins = async () => Number(await overTime.getAttribute('data-bins'));
  const first = await bins();
  await page.waitForFunction(
    (n) => Number(document.querySelector('[data-testid="live"] [data-testid="chart-over-time"]')?.dataset.bins) > n,
    first,
    { timeout: 30_000, polling: 100 },
  );
  assert.equal(await app.status(), 'running', 'it grew during the run');
  const live = page.locator('[data-testid="live"] [data-testid="chart-live"]');
  assert.ok((await live.locator('[data-testid="chart-point"]').count()) >= 3, 'TTFT p50, p95 and tokens/s of level 1 at least');
  await app.screenshot(screenshotPath('charts-live-en.png'));
  // In Chinese while it goes (the run has seconds left: 6 requests of 64 tokens a level).
  await app.byTestId('lang-zh').click();
  if ((await app.status()) === 'running') {
    assert.match(await live.textContent(), /目前的 TTFT/);
    const table = page.locator('[data-testid="live"] table');
    assert.match(await table.locator('thead').textContent(), /并发.*状态.*进行中/);
    // The row's hook stays English; its cell says it in Chinese.
    const row = page.locator('[data-testid="live-row"][data-state="running"]').first();
    if (await row.count()) assert.equal(await row.locator('td').nth(1).textContent(), '运行中');
    await app.screenshot(screenshotPath('charts-live-zh.png'));
  }
  await app.waitForStatus('done');
  await page.close();
});

test('on a phone the page keeps to the screen: wide tables and charts scroll or shrink inside it', async () => {
  const page = await suite.browser.newPage({ viewport: { width: 390, height: 844 } });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1,2', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  const wide = await page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    screen: window.innerWidth,
    outside: [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-scroll'))
      .map((e) => e.dataset?.testid || e.tagName),
  }));
  assert.ok(wide.page <= wide.screen, `the page is ${wide.page} px on a ${wide.screen} px screen: ${wide.outside.slice(0, 5)}`);
  assert.ok(await app.byTestId('chart-latency').isVisible());
  // The charts are drawn for the phone: panels one under the other, their 12 px
  // text shown at a size that reads (not the wide drawing scaled to a third).
  const drawn = () =>
    page.evaluate(() =>
      ['chart-latency', 'chart-throughput', 'chart-cdf', 'chart-over-time', 'chart-timeline'].map((id) => {
        const svg = document.querySelector(`[data-testid="${id}"]`);
        const viewWidth = svg.viewBox.baseVal.width;
        return { id, narrow: svg.classList.contains('narrow'), textPx: (12 * svg.getBoundingClientRect().width) / viewWidth };
      }),
    );
  await app.screenshot(screenshotPath('phone-en.png'));
  assert.equal(await page.locator('[data-testid="chart-latency"] [data-testid="chart-point"]').count(), 2 * 5, 'every point is still drawn');
  for (const chart of await drawn()) {
    assert.ok(chart.narrow, `${chart.id} is drawn narrow on a phone`);
    assert.ok(chart.textPx >= 9, `${chart.id}'s text is ${chart.textPx.toFixed(1)} px on a phone`);
  }

  // In Chinese: a title wider than the phone keeps its name and the SLO.
  await app.byTestId('lang-zh').click();
  await page.waitForFunction(() => /首 token 时延|TTFT ·/.test(document.querySelector('[data-testid="chart-latency"]').textContent));
  for (const chart of await drawn()) assert.ok(chart.narrow && chart.textPx >= 9, `${chart.id} in Chinese on a phone`);
  await app.screenshot(screenshotPath('phone-zh.png'));
  await app.byTestId('lang-en').click();
  // Turned sideways into a wide window, the same charts are drawn wide again.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.waitForFunction(() => !document.querySelector('[data-testid="chart-latency"]').classList.contains('narrow'));
  for (const chart of await drawn()) assert.ok(!chart.narrow, `${chart.id} is drawn wide at 1,280 px`);
  await page.close();
});
