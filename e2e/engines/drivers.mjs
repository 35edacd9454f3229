// Every browser engine our users have, driven through W3C WebDriver with
// selenium-webdriver: Chromium (chromedriver), Firefox ESR (geckodriver) and
// WebKitGTK, Safari's engine (WebKitWebDriver with MiniBrowser on a virtual X
// display). Each driver binary is given explicitly and started here on a loopback
// port; selenium only talks to it, so nothing is ever downloaded.
import { spawn } from 'node:child_process';
import { track } from '../lib/children.mjs';
import { createServer } from 'node:net';
import { Builder } from 'selenium-webdriver';
import { CHROMIUM_ARGS } from '../lib/browser.mjs';

/** Firefox preferences that keep it off the network: only loopback is ours to call. */
const FIREFOX_QUIET_PREFS = {
  'app.update.enabled': false,
  'app.normandy.enabled': false,
  'browser.safebrowsing.malware.enabled': false,
  'browser.safebrowsing.phishing.enabled': false,
  'browser.safebrowsing.downloads.enabled': false,
  'browser.safebrowsing.provider.mozilla.updateURL': '',
  'browser.search.update': false,
  'browser.newtabpage.enabled': false,
  'browser.ping-centre.telemetry': false,
  'datareporting.healthreport.uploadEnabled': false,
  'datareporting.policy.dataSubmissionEnabled': false,
  'extensions.update.enabled': false,
  'extensions.getAddons.cache.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'network.dns.disablePrefetch': true,
  'network.prefetch-next': false,
  'network.http.speculative-parallel-limit': 0,
  // Remote settings: the dummy server Mozilla's own test harness uses, which makes
  // Firefox skip the activity under automation (honoured with the variable below).
  'services.settings.server': 'data:,#remote-settings-dummy/v1',
  'toolkit.telemetry.enabled': false,
  'toolkit.telemetry.server': '',
  'dom.push.enabled': false,
  'dom.push.connection.enabled': false,
  'browser.download.useDownloadDir': true,
  'browser.download.folderList': 2,
  'browser.download.dir': '/tmp',
};

/** Where each engine's driver and browser are, as setup installs them (overridable). */
export const ENGINES = {
  chromium: {
    name: 'Chromium',
    driver: () => process.env.CHROMEDRIVER ?? '/usr/bin/chromedriver',
    driverArgs: (port) => [`--port=${port}`],
    capabilities: () => ({
      browserName: 'chrome',
      'goog:chromeOptions': {
        binary: process.env.TOKENMETER_CHROMIUM ?? '/usr/bin/chromium',
        args: CHROMIUM_ARGS,
      },
    }),
  },
  firefox: {
    name: 'Firefox ESR',
    driver: () => process.env.GECKODRIVER ?? 'geckodriver',
    driverArgs: (port) => ['--port', String(port), '--host', '127.0.0.1'],
    // Without it, release builds ignore the remote-settings server pref.
    env: { MOZ_REMOTE_SETTINGS_DEVTOOLS: '1' },
    capabilities: () => ({
      browserName: 'firefox',
      'moz:firefoxOptions': {
        binary: process.env.TOKENMETER_FIREFOX ?? '/usr/bin/firefox-esr',
        args: ['-headless'],
        prefs: FIREFOX_QUIET_PREFS,
      },
    }),
  },
  webkit: {
    name: 'WebKitGTK',
    driver: () => process.env.WEBKIT_WEBDRIVER ?? '/usr/bin/WebKitWebDriver',
    driverArgs: (port) => [`--port=${port}`],
    display: true,
    capabilities: () => ({
      browserName: 'MiniBrowser',
      'webkitgtk:browserOptions': {
        binary:
          process.env.TOKENMETER_MINIBROWSER ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser',
        args: ['--automation'],
      },
    }),
  },
};

/** The engines to test: `TOKENMETER_ENGINES` (comma-separated), or all three. */
export function selectedEngines() {
  const names = (process.env.TOKENMETER_ENGINES ?? 'chromium,firefox,webkit')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!ENGINES[name]) throw new Error(`unknown engine ${name}: one of ${Object.keys(ENGINES).join(', ')}`);
  }
  return names;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Spawns `command` and resolves once `ready(output)` is true; rejects on exit. */
function spawnUntil(command, args, options, ready, what) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not start in 30 s: ${out}`));
    }, 30_000);
    const listen = (data) => {
      out += data;
      if (ready(out)) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout.on('data', listen);
    child.stderr.on('data', listen);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${what} could not start (${command}): ${err.message}`));
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}): ${out}`));
    });
  });
}

/** A virtual X display for engines that need one (WebKitGTK has no headless mode). */
async function startXvfb() {
  // `-displayfd` makes Xvfb pick a free display and say which.
  let display = null;
  const child = await spawnUntil(
    process.env.XVFB ?? 'Xvfb',
    ['-displayfd', '1', '-screen', '0', '1600x1000x24', '-nolisten', 'tcp'],
    {},
    (out) => {
      const match = out.match(/^(\d+)\s*$/m);
      if (match) display = `:${match[1]}`;
      return display !== null;
    },
    'Xvfb',
  );
  return { display, close: () => child.kill('SIGTERM') };
}

/**
 * Starts `engine`'s driver and a browser session; resolves to
 * `{ driver, engine, close() }`, `driver` a selenium WebDriver. `insecureCerts`
 * trusts the simulator's self-signed certificate (for HTTP/2 over TLS).
 */
export async function startSession(engineName, { insecureCerts = false } = {}) {
  const engine = ENGINES[engineName];
  const port = await freePort();
  const xvfb = engine.display ? await startXvfb() : null;
  const env = { ...process.env, ...engine.env, ...(xvfb ? { DISPLAY: xvfb.display } : {}) };
  const child = track(spawn(engine.driver(), engine.driverArgs(port), { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.on('error', (err) => (out += `could not start ${engine.driver()}: ${err.message}`));
  // Ready once it answers W3C's status endpoint.
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ready = await fetch(`http://127.0.0.1:${port}/status`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ready) break;
    const gone = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))]);
    if (gone || Date.now() > deadline) {
      child.kill('SIGKILL');
      xvfb?.close();
      throw new Error(`${engine.name}'s WebDriver (${engine.driver()}) did not start: ${out}`);
    }
  }
  let driver;
  try {
    driver = await new Builder()
      .usingServer(`http://127.0.0.1:${port}`)
      .withCapabilities({ ...engine.capabilities(), ...(insecureCerts ? { acceptInsecureCerts: true } : {}) })
      .build();
    await driver.manage().setTimeouts({ script: 30_000, pageLoad: 60_000 });
  } catch (err) {
    child.kill('SIGTERM');
    xvfb?.close();
    throw err;
  }
  return {
    driver,
    engine,
    async close() {
      await driver.quit().catch(() => {});
      child.kill('SIGTERM');
      xvfb?.close();
    },
  };
}
