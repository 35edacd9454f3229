// Headless Chromium driven over the DevTools protocol with nothing but `Page` and
// `Runtime`, for the load benchmark. Playwright (and ChromeDriver) enable the
// `Network` domain on every page and worker, which makes the browser send an event
// per body chunk to the driver: at 64 streams that is thousands of messages a
// second, on the same two cores as the page being measured. Users have no driver
// attached; neither does this. (Node 20 needs `--experimental-websocket`.)
import { spawn } from 'node:child_process';
import { CHROMIUM_ARGS } from '../lib/browser.mjs';
import { track } from '../lib/children.mjs';

export async function launchBare(extraArgs = []) {
  const child = track(spawn(
    process.env.TOKENMETER_CHROMIUM ?? '/usr/bin/chromium',
    [...CHROMIUM_ARGS, '--remote-debugging-port=0', ...extraArgs, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  ));
  const browserWs = await new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`Chromium did not start: ${err}`)), 30_000);
    child.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/DevTools listening on (ws:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
  });
  const port = new URL(browserWs).port;
  return {
    /**
     * A fresh tab at `url`, as a page with `evaluate(expression)`; with
     * `countWasm`, the WebAssembly memories it instantiates are counted.
     */
    async newPage(url, { countWasm = false } = {}) {
      const target = await (await fetch(`http://127.0.0.1:${port}/json/new?about:blank`, { method: 'PUT' })).json();
      const page = await connect(target.webSocketDebuggerUrl);
      await page.send('Page.enable');
      if (countWasm) await page.send('Page.addScriptToEvaluateOnNewDocument', { source: COUNT_WASM_MEMORY });
      const loaded = page.once('Page.loadEventFired');
      await page.send('Page.navigate', { url });
      await loaded;
      page.close = async () => {
        page.socket.close();
        await fetch(`http://127.0.0.1:${port}/json/close/${target.id}`).catch(() => {});
      };
      return page;
    },
    close() {
      child.kill();
    },
  };
}

/** Keeps every WebAssembly memory the context instantiates, to measure it. */
const COUNT_WASM_MEMORY = `(() => {
  const memories = (globalThis.__wasmMemories = []);
  const keep = (result) => {
    for (const value of Object.values((result.instance ?? result).exports)) {
      if (value instanceof WebAssembly.Memory) memories.push(value);
    }
    return result;
  };
  for (const name of ['instantiate', 'instantiateStreaming']) {
    const original = WebAssembly[name];
    WebAssembly[name] = function (...args) {
      return original.apply(this, args).then(keep);
    };
  }
})()`;
const WASM_MEMORY_BYTES = `(globalThis.__wasmMemories ?? []).reduce((n, m) => n + m.buffer.byteLength, 0)`;

async function connect(wsUrl) {
  const socket = new WebSocket(wsUrl);
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  let nextId = 1;
  const pending = new Map();
  const waiters = new Map();
  socket.onmessage = ({ data }) => {
    const message = JSON.parse(data);
    if (message.id && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(message.error.message));
      else resolve(message.result);
    } else if (message.method && waiters.has(message.method)) {
      waiters.get(message.method)(message.params);
      waiters.delete(message.method);
    } else if (message.method === 'Target.attachedToTarget' && message.params.targetInfo.type === 'worker') {
      // The worker waits for us: count its WebAssembly memory from its first line
      // (and, when asked, profile it from there).
      const { sessionId } = message.params;
      workers.add(sessionId);
      const profiling = profileEveryUs
        ? page
            .send('Profiler.enable', {}, sessionId)
            .then(() => page.send('Profiler.setSamplingInterval', { interval: profileEveryUs }, sessionId))
            .then(() => page.send('Profiler.start', {}, sessionId))
        : Promise.resolve();
      profiling
        .then(() => page.send('Runtime.evaluate', { expression: COUNT_WASM_MEMORY }, sessionId))
        // The engine's helper workers are this worker's own: they wait for us too.
        .then(() => page.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, sessionId))
        .finally(() => page.send('Runtime.runIfWaitingForDebugger', {}, sessionId))
        .catch(() => {});
    } else if (message.method === 'Target.detachedFromTarget') {
      workers.delete(message.params.sessionId);
    }
  };
  /** Sessions of the page's dedicated workers, once `watchWorkers` was called. */
  const workers = new Set();
  /** With `watchWorkers({ profileEveryUs })`: each worker's CPU sampled from its start. */
  let profileEveryUs = 0;
  const page = {
    socket,
    /** A DevTools command, to the page or (with `sessionId`) one of its workers. */
    send(method, params = {}, sessionId = undefined) {
      const id = nextId++;
      socket.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    },
    once(method) {
      return new Promise((resolve) => waiters.set(method, resolve));
    },
    /**
     * Attaches to the page's workers (those started from now on), each held at
     * its start until its WebAssembly memory is counted (see `heaps`).
     */
    async watchWorkers({ profileEveryUs: every = 0 } = {}) {
      profileEveryUs = every;
      await page.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
    },
    /** The CPU profiles of the workers (`watchWorkers({ profileEveryUs })`), stopped now. */
    async workerProfiles() {
      const profiles = await Promise.all([...workers].map((id) => page.send('Profiler.stop', {}, id).catch(() => null)));
      return profiles.filter(Boolean).map((p) => p.profile);
    },
    /**
     * MiB in use: the V8 heap, and the WebAssembly memory (which V8's heap figures
     * leave out), for the page and for each worker. The page's WebAssembly is
     * counted when it was opened with `newPage(url, { countWasm: true })`.
     */
    async heaps() {
      const usage = async (sessionId) => {
        const u = await page.send('Runtime.getHeapUsage', {}, sessionId).catch(() => null);
        const wasm = await page
          .send('Runtime.evaluate', { expression: WASM_MEMORY_BYTES, returnByValue: true }, sessionId)
          .catch(() => null);
        return u && { jsMiB: u.usedSize / 2 ** 20, wasmMiB: (wasm?.result?.value ?? 0) / 2 ** 20 };
      };
      const workerUsage = await Promise.all([...workers].map(usage));
      return { page: await usage(undefined), workers: workerUsage.filter(Boolean) };
    },
    /** The value of `expression` (a promise is awaited), as JSON. */
    async evaluate(expression) {
      const { result, exceptionDetails } = await page.send('Runtime.evaluate', {
        expression,
        awaitPromise: true,
        returnByValue: true,
      });
      if (exceptionDetails) throw new Error(exceptionDetails.exception?.description ?? exceptionDetails.text);
      return result.value;
    },
    /** Fills tokenmeter's plan fields (`data-testid` → value) and clicks Run. */
    async startRun(fields) {
      await page.evaluate(`(() => {
        for (const [id, value] of Object.entries(${JSON.stringify(fields)})) {
          const input = document.querySelector('[data-testid="' + id + '"]');
          input.value = value;
          input.dispatchEvent(new Event('input', { bubbles: true }));
        }
        document.querySelector('[data-testid="run"]').click();
      })()`);
    },
    /**
     * Clicks `export-json` and returns `reduce` of the file's text, taken from the
     * blob the page links for download (the link's click is caught, so nothing is
     * saved). The exports are a piece fetched on first use: the file comes later
     * than the click, so this waits for the link, up to `timeoutMs`. The page's
     * `performance.now()` when the file was handed over is `__exportedAt`.
     */
    exportJson(reduce = '(text) => text', timeoutMs = 120_000) {
      return page.evaluate(`(async () => {
        const create = URL.createObjectURL;
        const click = HTMLAnchorElement.prototype.click;
        try {
          const blob = await new Promise((resolve, reject) => {
            let made = null;
            URL.createObjectURL = (b) => { made = b; return create.call(URL, b); };
            HTMLAnchorElement.prototype.click = function () {
              if (made) resolve(made);
            };
            setTimeout(() => reject(new Error('the export gave no file within ${timeoutMs} ms')), ${timeoutMs});
            document.querySelector('[data-testid="export-json"]').click();
          });
          // When the page handed over the file: what runs after (reading it
          // here) is this driver's, not the page's export.
          globalThis.__exportedAt = performance.now();
          return (${reduce})(await blob.text());
        } finally {
          URL.createObjectURL = create;
          HTMLAnchorElement.prototype.click = click;
        }
      })()`);
    },
    /** Polls `expression` every `everyMs` until it is truthy. */
    async waitFor(expression, timeoutMs, everyMs = 250) {
      const deadline = Date.now() + timeoutMs;
      while (!(await page.evaluate(expression))) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${expression}`);
        await new Promise((r) => setTimeout(r, everyMs));
      }
    },
  };
  return page;
}
