// The same plan on Locust: exported from the page, run headless by a Locust master
// and two worker processes against the simulator, read back by tokenmeter-report
// and by the page's history. Token counts must equal the simulator's truth exactly;
// TTFT and the decode span must agree with it within the tolerance below.
//
// Run by `cargo xtask test` (the Locust layer), which installs Locust in a virtual
// environment under target/ and passes: TOKENMETER_LOCUST_PYTHON (that
// environment's python), TOKENMETER_REPORT_BIN, TOKENMETER_DIST, TOKENMETER_SIM_BIN.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { track } from '../lib/children.mjs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env, screenshotPath } from '../lib/browser.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const KEY = 'sk-locust-e2e-5f3a9c71';
const suite = useSuite(['--api-key', KEY]);

/** TTFT and decode span against the truth, per request, ms: what a Python worker
 *  on a loaded 2-core machine stays within (measured: +0.3 to +7.6 ms, p50 +0.7). */
const TOLERANCE_MS = 50;

/** Runs `cmd args`; resolves to `{ code, stdout, stderr }` (killed after `timeoutMs`). */
function run(cmd, args, { envVars = {}, timeoutMs = 180_000, cwd } = {}) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { cwd, env: { ...process.env, ...envVars }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not end within ${timeoutMs / 1000} s:\n${stderr.slice(-4000)}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

const percentile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.round((sorted.length - 1) * q))];

test('a plan exported from the page runs on Locust (master + 2 workers) and comes back whole', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tokenmeter-locust-'));
  const python = env('TOKENMETER_LOCUST_PYTHON');
  const report = env('TOKENMETER_REPORT_BIN');

  // 1. The page writes the locustfile for the plan in its form (key typed, never in the file).
  const context = await suite.browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1200 } });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': KEY, levels: '1,4', 'requests-per-level': 12, 'max-tokens': 32, warmup: 2 });
  const save = async (testid, name) => {
    const [download] = await Promise.all([page.waitForEvent('download'), app.byTestId(testid).click()]);
    assert.equal(download.suggestedFilename(), name);
    const path = join(dir, name);
    await download.saveAs(path);
    return readFile(path, 'utf8');
  };
  const locustfile = await save('export-locust', 'tokenmeter_locustfile.py');
  assert.equal(await save('export-locust-requirements', 'requirements.txt'), 'locust==2.47.0\n');
  assert.ok(!locustfile.includes(KEY), 'the key is not in the file');
  assert.match(locustfile, /os\.environ\.get\(KEY_ENV/);

  // 2. The file's Record reads every stream of the core's fixture as the core does.
  const parity = await run(python, [
    new URL('./parity.py', import.meta.url).pathname,
    join(dir, 'tokenmeter_locustfile.py'),
    new URL('../../crates/tokenmeter-core/tests/fixtures/stream-cases.json', import.meta.url).pathname,
  ]);
  assert.equal(parity.code, 0, parity.stdout + parity.stderr);

  // 3. Locust: a master and two worker processes, headless, the key from the environment.
  const out = join(dir, 'records.jsonl');
  const locust = await run(python, ['-m', 'locust', '-f', 'tokenmeter_locustfile.py', '--headless', '--processes', '2', '--loglevel', 'WARNING'], {
    cwd: dir,
    envVars: { TOKENMETER_API_KEY: KEY, TOKENMETER_OUT: out },
  });
  assert.equal(locust.code, 0, locust.stderr.slice(-4000));
  const text = await readFile(out, 'utf8');
  assert.ok(!text.includes(KEY), 'the key is not in the records');
  const lines = text.trim().split('\n').map((l) => JSON.parse(l));
  const requests = lines.filter((l) => l.kind === 'request');
  assert.equal(requests.length, 2 + 12 + 12);
  assert.equal(new Set(requests.map((r) => r.worker)).size, 2, 'both workers sent requests');
  assert.deepEqual(lines.filter((l) => l.kind === 'stage').map((s) => s.stage), [0, 1, 2]);

  // 4. Against the simulator's truth, request by request (by response id).
  const truth = new Map((await suite.sim.truth()).requests.map((r) => [r.response_id, r]));
  const ttftDelta = [];
  for (const r of requests) {
    assert.equal(r.error, null, JSON.stringify(r.error));
    const t = truth.get(r.response_id);
    assert.ok(t, `the simulator served ${r.response_id}`);
    assert.equal(r.usage.completion_tokens, t.tokens.length, 'usage');
    assert.equal(r.n_token_events, t.n_token_events, 'token events, exactly');
    const delta = (r.first_token_us - r.sent_us - (t.tokens[0].written_us - t.accepted_us)) / 1000;
    const decodeDelta = (r.last_token_us - r.first_token_us - (t.tokens.at(-1).written_us - t.tokens[0].written_us)) / 1000;
    assert.ok(delta > -1 && delta < TOLERANCE_MS, `TTFT ${delta} ms off the truth`);
    assert.ok(Math.abs(decodeDelta) < TOLERANCE_MS, `decode span ${decodeDelta} ms off the truth`);
    ttftDelta.push(delta);
  }
  ttftDelta.sort((a, b) => a - b);
  console.log(`Locust ΔTTFT against the truth: p50 ${percentile(ttftDelta, 0.5).toFixed(2)} ms, max ${ttftDelta.at(-1).toFixed(2)} ms (${ttftDelta.length} requests)`);

  // 5. The report: the table, exit 0; the same run with an SLO it breaks, exit 1.
  const ok = await run(report, [out, '--json', join(dir, 'run.json')]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /concurrency +n_ok/);
  assert.match(ok.stdout, /\n +1 +12 +0 /);
  assert.match(ok.stdout, /\n +4 +12 +0 /);
  assert.match(ok.stdout, /2 Locust 2\.47\.0 worker process/);
  const document = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8'));
  assert.equal(document.environment.source, 'locust');
  // The master read the server's /metrics while the stages ran, as the page does.
  const polls = lines.filter((l) => l.kind === 'metrics');
  assert.ok(polls.length >= 2 && polls.every((p) => p.text && !p.unreadable), JSON.stringify(polls.slice(0, 3)));
  assert.equal(document.environment.server_metrics.server, 'vllm');
  assert.equal(document.environment.server_metrics.samples.length, polls.length);
  assert.ok(document.levels.some((l) => l.server && l.server.running_max >= 1), 'a level saw the server at work');
  assert.match(ok.stdout, /Server metrics \(vLLM's names\) read from http:\/\/127\.0\.0\.1:\d+\/metrics/);
  assert.equal(document.records.length, 26);
  const measured = requests.filter((r) => !r.warmup).map((r) => truth.get(r.response_id).tokens.length);
  assert.equal(document.levels.reduce((n, l) => n + l.n_out_total, 0), measured.reduce((a, b) => a + b, 0));
  const broken = await run(report, [out, '--slo-ttft-p95-ms', '1']);
  assert.equal(broken.code, 1, broken.stdout + broken.stderr);
  assert.match(broken.stderr, /SLO broken at concurrency 1/);

  // 6. The page imports the records into history: the same table, charts and notes.
  await app.byTestId('history').locator('details summary').click();
  await app.byTestId('history-import-file').setInputFiles(out);
  await app.byTestId('history-row').first().waitFor();
  assert.match(await app.byTestId('history-row').first().getAttribute('data-run-id'), /^locust-/);
  await app.byTestId('history-view').first().click();
  await app.byTestId('results-row').first().waitFor();
  const rows = await app.resultsRows();
  assert.deepEqual(rows.map((r) => [r.concurrency, r.n_ok, r.n_fail]), [[1, '12', '0'], [4, '12', '0']]);
  assert.match(await app.byTestId('environment-notes').textContent(), /Locust 2\.47\.0/);
  await app.screenshot(screenshotPath('locust-import.png'));
  await context.close();
});

test("a plan of a file's prompts runs on Locust with them, sending what the page sends", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'tokenmeter-locust-prompts-'));
  const python = env('TOKENMETER_LOCUST_PYTHON');
  const prompts = join(dir, 'mine.txt');
  await writeFile(prompts, 'first of mine\n第二个提示词\nthird of mine\n');
  const context = await suite.browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, 'api-key': KEY, levels: '1', 'requests-per-level': 5, 'max-tokens': 4, warmup: 0 });
  await app.byTestId('prompt-mode').selectOption('file');
  await app.byTestId('prompt-file').setInputFiles(prompts);
  await app.byTestId('prompt-file-note').waitFor();
  // One click, both files: the locustfile and the prompts beside it.
  const downloads = await app.downloadsOf('export-locust', 2);
  assert.deepEqual(downloads.map((d) => d.suggestedFilename()).sort(), ['tokenmeter_locustfile.py', 'tokenmeter_prompts.json']);
  for (const d of downloads) await d.saveAs(join(dir, d.suggestedFilename()));
  await context.close();

  // Locust (one worker process, concurrency 1: request ids in send order) sends
  // request n prompt n mod 3, as the page does.
  const before = (await suite.sim.truth()).requests.length;
  const out = join(dir, 'records.jsonl');
  const locust = await run(python, ['-m', 'locust', '-f', 'tokenmeter_locustfile.py', '--headless', '--processes', '1', '--loglevel', 'WARNING'], {
    cwd: dir,
    envVars: { TOKENMETER_API_KEY: KEY, TOKENMETER_OUT: out },
  });
  assert.equal(locust.code, 0, locust.stderr.slice(-4000));
  const records = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.kind === 'request');
  const truth = new Map((await suite.sim.truth()).requests.slice(before).map((t) => [t.response_id, t]));
  const hash = (text) => createHash('sha256').update(text).digest('hex');
  const sent = records.sort((a, b) => a.sent_us - b.sent_us).map((r) => hash(truth.get(r.response_id).prompt_head));
  const mine = ['first of mine', '第二个提示词', 'third of mine'].map(hash);
  assert.deepEqual(sent, [0, 1, 2, 3, 4].map((i) => mine[i % 3]), 'each request the prompt the page would send it');

  // A prompts file that is not the plan's is refused before anything is sent.
  await writeFile(join(dir, 'tokenmeter_prompts.json'), '{"bodies": []}');
  const refused = await run(python, ['-m', 'locust', '-f', 'tokenmeter_locustfile.py', '--headless', '--processes', '1'], { cwd: dir, envVars: { TOKENMETER_OUT: out } });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /is not the prompts file this plan was exported with/);
});
