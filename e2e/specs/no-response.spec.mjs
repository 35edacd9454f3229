// Requests that get no response at all: the browser hides why, so the run probes
// once and says which: a server that does not allow this page's origin (with how to
// allow it on the servers people run), or a host that does not answer. A run that
// failed for another reason says nothing of the kind.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const sims = [];
after(() => sims.forEach((s) => s.close()));

/** Runs two requests against `baseUrl`; returns the error groups and the diagnosis text. */
async function failingRun(baseUrl) {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  await app.fillPlan({ 'base-url': baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 4, warmup: 0 });
  await app.run();
  await app.waitForStatus('done', 60_000);
  const groups = await app.errorGroups();
  const diagnosis = (await app.byTestId('error-diagnosis').count())
    ? await app.byTestId('error-diagnosis').textContent()
    : null;
  const notes = (await app.byTestId('environment-notes').count())
    ? await app.byTestId('environment-notes').textContent()
    : '';
  const origin = new URL(suite.site.url).origin;
  await page.close();
  return { groups, diagnosis, notes, origin };
}

test('a server without CORS headers: the origin to allow, and how', async () => {
  const sim = await startSim(['--no-cors']);
  sims.push(sim);
  const { groups, diagnosis, notes, origin } = await failingRun(sim.baseUrl);
  assert.deepEqual(groups.map((g) => g.kind), ['network']);
  assert.ok(diagnosis, 'the network failures carry a diagnosis');
  assert.ok(
    diagnosis.startsWith(`2 requests got no response this page may read: the server answers (a request without CORS reached it), but does not allow this page's origin, ${origin}.`),
    diagnosis,
  );
  assert.ok(diagnosis.includes(`OLLAMA_ORIGINS=${origin}`), diagnosis);
  assert.ok(diagnosis.includes(`llama-server --cors-origins ${origin}`), diagnosis);
  assert.match(notes, /does not allow this page's origin/, 'and in the run notes');
});

test('a host that does not answer: said as unreachable, not as CORS', async () => {
  const port = await new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port: free } = server.address();
      server.close(() => resolve(free));
    });
  });
  const { groups, diagnosis } = await failingRun(`http://127.0.0.1:${port}/v1`);
  assert.deepEqual(groups.map((g) => g.kind), ['network']);
  assert.match(diagnosis, /^2 requests got no response: the host did not answer at all, not even a request without CORS/);
});

test('failures with a response get no such diagnosis', async () => {
  const sim = await startSim(['--fault', '500']);
  sims.push(sim);
  const { groups, diagnosis, notes } = await failingRun(sim.baseUrl);
  assert.ok(groups.length > 0 && !groups.some((g) => g.kind === 'network'), JSON.stringify(groups));
  assert.equal(diagnosis, null);
  assert.doesNotMatch(notes, /got no response/);
});
