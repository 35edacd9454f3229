// The network's part of TTFT: the engine times small requests to {base}/models
// before and after the run (no key, no CORS), keeps the fastest as the round trip,
// shows it, and says how much of TTFT it is when it is worth saying. The simulator
// plays a network with --rtt-ms (half each way).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

async function run(simArgs) {
  const sim = await startSim(simArgs);
  sims.push(sim);
  const page = await suite.browser.newPage({ acceptDownloads: true });
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': sim.baseUrl, levels: '1', 'requests-per-level': 4, 'max-tokens': 4, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  return { page, app, doc: await app.exportJson() };
}

test('a 60 ms round trip is estimated within 10 ms, shown, and said as a share of TTFT', async (t) => {
  const { page, app, doc } = await run(['--rtt-ms', '60']);
  const network = doc.environment.network;
  t.diagnostic(`estimated ${network.rtt_ms} ms (spread ${network.rtt_spread_ms} ms) of a 60 ms round trip`);
  assert.ok(Math.abs(network.rtt_ms - 60) <= 10, `round trip ${network.rtt_ms} ms: ${JSON.stringify(network)}`);
  assert.equal(network.timed_by, 'resource_timing', 'the simulator sends Timing-Allow-Origin');
  assert.equal(network.before_ms.length, 5);
  assert.equal(network.after_ms.length, 3);
  const [said] = doc.environment.conditions.filter((c) => c.kind === 'network_round_trip');
  assert.equal(said.concurrency, 1);
  assert.ok(said.ttft_p50_ms >= 60, `TTFT p50 ${said.ttft_p50_ms} holds the round trip`);
  assert.equal(said.after_ms, undefined, 'the network did not move');
  assert.equal(Number(await app.byTestId('network-rtt').getAttribute('data-rtt-ms')).toFixed(3), network.rtt_ms.toFixed(3));
  assert.match(await app.byTestId('network-rtt').textContent(), /network round trip to the server: \d+\.\d ms \(the fastest of 4 requests to \/models before the run, timed by Resource Timing/);
  assert.match(await app.byTestId('environment-notes').textContent(), /the network's round trip from this browser to the server was about \d+ ms .*is the network's, not the server's/);
  await app.byTestId('lang-zh').click();
  assert.match(await app.byTestId('network-rtt').textContent(), /到服务端的网络往返/);
  assert.match(await app.byTestId('environment-notes').textContent(), /是网络的，不是服务端的/);
  await page.close();
});

test('on loopback the round trip is near zero, and nothing is said of it', async (t) => {
  const { page, app, doc } = await run([]);
  t.diagnostic(`estimated ${doc.environment.network.rtt_ms} ms on loopback`);
  assert.ok(doc.environment.network.rtt_ms < 5, JSON.stringify(doc.environment.network));
  assert.equal(doc.environment.network.timed_by, 'resource_timing');
  assert.ok(!doc.environment.conditions.some((c) => c.kind === 'network_round_trip'));
  assert.equal(await app.byTestId('network-rtt').count(), 1, 'the figure is shown all the same');
  assert.doesNotMatch(await app.byTestId('environment-notes').textContent().catch(() => ''), /round trip/);
  await page.close();
});

test('a server that hides its timings: the probes are timed from the fetch call, and it says so', async () => {
  const { page, app, doc } = await run(['--rtt-ms', '60', '--no-timing-allow-origin']);
  const network = doc.environment.network;
  assert.equal(network.timed_by, 'fetch');
  // The browser's own time is in it: never less than the network's.
  assert.ok(network.rtt_ms >= 58 && network.rtt_ms < 100, JSON.stringify(network));
  assert.match(await app.byTestId('network-rtt').textContent(), /timed from the fetch call, the browser's own time included/);
  await page.close();
});
