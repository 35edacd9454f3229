// The hosting recipes of hosting/, tried for real: Debian's nginx with
// hosting/nginx.conf and Debian's Caddy with hosting/Caddyfile serve the built page
// on loopback (only the root and the address changed); the page loads cross-origin
// isolated (a 5 µs timer), with the same Content-Security-Policy as its <meta> tag,
// WebAssembly as application/wasm, and a run against the simulator finishes. The
// _headers file for Netlify and Cloudflare Pages says the same headers.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { env } from '../lib/browser.mjs';
import { track } from '../lib/children.mjs';
import { startSim } from '../lib/sim.mjs';
import { useSuite } from '../lib/suite.mjs';
import { AppPage } from '../pages/app.mjs';

const suite = useSuite(null);
const children = [];
after(() => children.forEach((c) => c.kill('SIGTERM')));
const recipe = (name) => readFileSync(new URL(`../../hosting/${name}`, import.meta.url), 'utf8');
const dist = () => env('TOKENMETER_DIST');

/** A free loopback port. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Waits until `url` answers 200. */
async function answers(url, what, child) {
  const started = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}): ${child.output}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() - started > 15_000) throw new Error(`${what} did not answer ${url}: ${child.output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function start(command, args, options) {
  const child = track(spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options }));
  child.output = '';
  child.stdout.on('data', (d) => (child.output += d));
  child.stderr.on('data', (d) => (child.output += d));
  children.push(child);
  return child;
}

async function nginx() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tokenmeter-nginx-'));
  const server = recipe('nginx.conf')
    .replace('listen 80;', `listen 127.0.0.1:${port};`)
    .replace('root /var/www/tokenmeter;', `root ${dist()};`);
  assert.notEqual(server, recipe('nginx.conf'), 'the recipe has the lines a user changes');
  // The rest of a main configuration, as /etc/nginx/nginx.conf has it, in a folder of its own.
  writeFileSync(join(dir, 'tokenmeter.conf'), server);
  // Started by root, nginx serves as `nobody`, who may not enter a checkout made
  // in a private folder (`mktemp -d` makes them 0700): it serves as this user.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  writeFileSync(
    join(dir, 'nginx.conf'),
    `${user}daemon off;\npid ${dir}/nginx.pid;\nerror_log stderr warn;\nevents {}\nhttp {\n  access_log off;\n  client_body_temp_path ${dir}/body;\n  proxy_temp_path ${dir}/proxy;\n  fastcgi_temp_path ${dir}/fastcgi;\n  uwsgi_temp_path ${dir}/uwsgi;\n  scgi_temp_path ${dir}/scgi;\n  include ${dir}/tokenmeter.conf;\n}\n`,
  );
  const child = start(env('TOKENMETER_NGINX'), ['-p', dir, '-c', join(dir, 'nginx.conf')]);
  const url = `http://127.0.0.1:${port}/`;
  await answers(url, 'nginx', child);
  return url;
}

async function caddy() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tokenmeter-caddy-'));
  const site = recipe('Caddyfile')
    .replace(':80 {', `http://127.0.0.1:${port} {`)
    .replace('root * /var/www/tokenmeter', `root * ${dist()}`);
  assert.notEqual(site, recipe('Caddyfile'));
  // No admin endpoint and no certificates on a test machine.
  writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n\n${site}`);
  const child = start(env('TOKENMETER_CADDY'), ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  });
  const url = `http://127.0.0.1:${port}/`;
  await answers(url, 'caddy', child);
  return url;
}

/** The policy of the built page's <meta> tag. */
function metaPolicy() {
  const html = readFileSync(join(dist(), 'index.html'), 'utf8');
  return html.match(/http-equiv="Content-Security-Policy" content="([^"]+)"/)?.[1];
}

for (const [name, serve] of [['nginx', nginx], ['Caddy', caddy]]) {
  test(`the ${name} recipe serves the page cross-origin isolated, and a run on two engine workers finishes`, async () => {
    const url = await serve();
    const sim = await startSim([]);
    const page = await suite.browser.newPage({ acceptDownloads: true });
    try {
      const response = await page.goto(url);
      const headers = response.headers();
      assert.equal(headers['cross-origin-opener-policy'], 'same-origin');
      assert.equal(headers['cross-origin-embedder-policy'], 'require-corp');
      assert.equal(headers['content-security-policy'], metaPolicy(), 'the same policy as the page carries');
      assert.equal(headers['cache-control'], 'no-cache', 'the page itself is revalidated');
      const wasm = readFileSync(join(dist(), 'index.html'), 'utf8').match(/href="\.?\/?([^"]+\.wasm)"/)?.[1];
      assert.ok(wasm, 'the page names its module');
      const module = await fetch(new URL(wasm, url));
      assert.equal(module.headers.get('content-type'), 'application/wasm');
      assert.equal(await page.evaluate(() => crossOriginIsolated), true);
      const app = new AppPage(page);
      await app.open(url);
      // Two engine workers: the helper is started by the first, under the same headers.
      await app.byTestId('advanced').locator('summary').click();
      await app.fillPlan({ 'base-url': sim.baseUrl, levels: '2', 'requests-per-level': 4, 'max-tokens': 8, warmup: 0, 'engine-workers': 2 });
      await app.run();
      await app.waitForStatus('done');
      const doc = await app.exportJson();
      assert.equal(doc.environment.cross_origin_isolated, true);
      assert.ok(doc.environment.timer_resolution_us <= 20, `${doc.environment.timer_resolution_us} µs`);
      assert.deepEqual((await app.resultsRows()).map((r) => r.n_ok), ['4']);
      assert.equal(doc.environment.engine_load[0].workers, 2);
    } finally {
      await page.close();
      sim.close();
    }
  });
}

test('the _headers file for Netlify and Cloudflare Pages sends the same headers', () => {
  const file = recipe('_headers');
  const all = file.split('\n/*\n')[1].split('\n\n')[0];
  assert.match(all, /^ {2}Cross-Origin-Opener-Policy: same-origin$/m);
  assert.match(all, /^ {2}Cross-Origin-Embedder-Policy: require-corp$/m);
  assert.equal(all.match(/^ {2}Content-Security-Policy: (.+)$/m)?.[1], metaPolicy());
  for (const path of ['/', '/index.html', '/engine-worker.js', '/locustfile.template.py']) {
    assert.match(file, new RegExp(`^${path.replace(/\./g, '\\.')}\\n {2}Cache-Control: no-cache$`, 'm'), path);
  }
});
