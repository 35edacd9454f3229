// `cargo xtask bench locust`: how closely a Locust worker running the exported
// plan measures, and where a worker process itself becomes the limit. Each level
// (1 to 128 streams, three waves of requests) runs on a fresh simulator with one
// and with two worker processes; every request is paired with what the simulator
// wrote for it (its truth record, by response id). Prints figures; asserts nothing.
//
// Needs TOKENMETER_LOCUST_PYTHON, TOKENMETER_REPORT_BIN and TOKENMETER_SIM_BIN
// (set by xtask).
import { spawn } from 'node:child_process';
import { track } from '../lib/children.mjs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSim } from '../lib/sim.mjs';
import { quantile } from './quantile.mjs';

// `TOKENMETER_BENCH_SMOKE=1` (the test command's smoke layer): the smallest form, which
// only shows that the benchmark runs to its end.
const SMOKE = process.env.TOKENMETER_BENCH_SMOKE === '1';
const LEVELS = (process.env.TOKENMETER_BENCH_LOCUST_STREAMS ?? (SMOKE ? '2' : '1,16,64,128')).split(',').map(Number);
const PROCESSES = (process.env.TOKENMETER_BENCH_LOCUST_PROCESSES ?? (SMOKE ? '1' : '1,2')).split(',').map(Number);
const WAVES = SMOKE ? 1 : 3;
const MAX_TOKENS = SMOKE ? 10 : 100;
// The server never the limit: every stream decoded at once, 20 ms a step.
const SIM = ['--max-batch', '1024', '--decode-per-seq-ms', '0'];

const f = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '–');
const pct = (x) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}%` : '–');

function run(cmd, args, { cwd, envVars = {} } = {}) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { cwd, env: { ...process.env, ...envVars }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, out }));
  });
}

async function level(dir, processes, streams) {
  const sim = await startSim(SIM);
  try {
    const plan = {
      schema: 1,
      base_url: sim.baseUrl,
      model: 'tokenmeter-sim',
      endpoint: 'chat',
      prompt: { text: '请用300字介绍大模型推理中的prefill和decode两个阶段' },
      max_tokens: MAX_TOKENS,
      temperature: 0.7,
      include_usage: true,
      load: { mode: 'ladder', levels: [streams], requests_per_level: streams * WAVES },
      warmup_requests: 0,
      timeout_s: 120,
    };
    const planPath = join(dir, `plan-${processes}-${streams}.json`);
    await writeFile(planPath, JSON.stringify(plan));
    const out = join(dir, `out-${processes}-${streams}`);
    const exported = await run(process.env.TOKENMETER_REPORT_BIN, [planPath, '--export-locust', out]);
    if (exported.code !== 0) throw new Error(exported.out);
    const records = join(out, 'records.jsonl');
    const started = Date.now();
    const locust = await run(
      process.env.TOKENMETER_LOCUST_PYTHON,
      ['-m', 'locust', '-f', 'tokenmeter_locustfile.py', '--headless', '--processes', String(processes)],
      { cwd: out, envVars: { TOKENMETER_OUT: records } },
    );
    if (locust.code !== 0) throw new Error(locust.out.slice(-3000));
    const wall = (Date.now() - started) / 1000;
    const lines = (await readFile(records, 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
    const requests = lines.filter((l) => l.kind === 'request' && !l.error);
    const truth = new Map((await sim.truth()).requests.map((r) => [r.response_id, r]));
    const pairs = requests.map((r) => [r, truth.get(r.response_id)]).filter(([, t]) => t);
    const ms = (us) => us / 1e3;
    const written = (t) => t.tokens.map((k) => ms(k.written_us));
    const delta = pairs.map(([r, t]) => ms(r.first_token_us - r.sent_us) - (written(t)[0] - ms(t.accepted_us)));
    const tpotError = pairs.map(([r, t]) => {
      const w = written(t);
      const truthTpot = (w.at(-1) - w[0]) / (w.length - 1);
      return ms(r.end_us - r.first_token_us) / (r.n_token_events - 1) / truthTpot - 1;
    });
    const gaps = (times) => times.slice(1).map((x, i) => x - times[i]);
    const itl = pairs.flatMap(([r]) => gaps(r.token_times_us.map(ms)));
    const truthItl = pairs.flatMap(([, t]) => gaps(written(t)));
    return {
      n: pairs.length,
      failed: lines.filter((l) => l.kind === 'request' && l.error).length,
      exact: pairs.filter(([r, t]) => r.usage?.completion_tokens === t.tokens.length && r.n_token_events === t.n_token_events).length,
      d50: quantile(delta, 0.5),
      d95: quantile(delta, 0.95),
      tpot: quantile(tpotError, 0.5),
      itl50: quantile(itl, 0.5) - quantile(truthItl, 0.5),
      itl99: quantile(itl, 0.99) - quantile(truthItl, 0.99),
      cpuWarning: /CPU usage above/.test(locust.out),
      wall,
    };
  } finally {
    sim.close();
  }
}

const dir = await mkdtemp(join(tmpdir(), 'tokenmeter-bench-locust-'));
console.log(`Locust workers against the simulator's truth (${cpus().length} cores, ${MAX_TOKENS} tokens, TPOT 20 ms, ${WAVES} waves per level)\n`);
console.log('| processes | streams | requests (exact tokens) | ΔTTFT p50 / p95 | TPOT error | ITL Δ p50 / p99 | CPU warning | wall |');
console.log('|---|---|---|---|---|---|---|---|');
for (const processes of PROCESSES) {
  for (const streams of LEVELS) {
    const r = await level(dir, processes, streams);
    console.log(
      `| ${processes} | ${streams} | ${r.n}${r.failed ? ` (+${r.failed} failed)` : ''} (${r.exact}) | +${f(r.d50)} / +${f(r.d95)} ms | ${pct(r.tpot)} | ${f(r.itl50, 2)} / ${f(r.itl99)} ms | ${r.cpuWarning ? 'yes' : 'no'} | ${f(r.wall)} s |`,
    );
  }
}
