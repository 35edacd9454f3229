// The page runs under its Content-Security-Policy (added to the build by
// `cargo xtask build`, and to the build every spec loads): everything works, as
// the other specs show, and script that someone manages to inject does not run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite([]);

test('the page carries its policy, and injected inline script does not run', async () => {
  const page = await suite.browser.newPage();
  const app = new AppPage(page);
  await app.open(suite.site.url);
  const policy = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  assert.match(policy, /script-src 'self' 'wasm-unsafe-eval';/);
  assert.match(policy, /connect-src \*/);
  const outcome = await page.evaluate(
    () =>
      new Promise((resolve) => {
        window.injected = false;
        document.addEventListener('securitypolicyviolation', (e) => resolve({ ran: window.injected, blocked: e.violatedDirective }));
        const script = document.createElement('script');
        script.textContent = 'window.injected = true;';
        document.body.append(script);
        setTimeout(() => resolve({ ran: window.injected, blocked: null }), 2_000);
      }),
  );
  assert.deepEqual(outcome, { ran: false, blocked: 'script-src-elem' });
  // And the app itself runs: a run to done, its figures shown.
  await app.fillPlan({ 'base-url': suite.sim.baseUrl, levels: '1', 'requests-per-level': 2, 'max-tokens': 8, warmup: 0 });
  await app.run();
  await app.waitForStatus('done');
  assert.equal((await app.resultsRows()).length, 1);
  await page.close();
});
