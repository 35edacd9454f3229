// What most specs share: the built page on a loopback static server, a simulator of
// their own, and headless Chromium, started before the spec's tests and stopped after.
import { before, after } from 'node:test';
import { env, launch } from './browser.mjs';
import { serveStatic } from './static-server.mjs';
import { startSim } from './sim.mjs';

/**
 * Registers the hooks; the returned object's `site`, `sim` and `browser` are set
 * once the tests run. `simArgs` null means no simulator.
 */
export function useSuite(simArgs = [], launchArgs = []) {
  const suite = {};
  before(async () => {
    suite.site = await serveStatic(env('TOKENMETER_DIST'), '/');
    if (simArgs) suite.sim = await startSim(simArgs);
    suite.browser = await launch(launchArgs);
  });
  after(async () => {
    await suite.browser?.close();
    await suite.site?.close();
    suite.sim?.close();
  });
  return suite;
}
