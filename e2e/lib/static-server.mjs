// A static file server on loopback that serves one folder under a URL prefix, so
// the specs can load `trunk build`'s output at the root or under a sub-path, the way
// a static host would.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/**
 * Serves `root` at `http://127.0.0.1:<port><prefix>`; resolves to
 * `{ url, requests, close }`, where `requests` lists every path asked for with its status.
 * `headers` go on every file served (e.g. COOP + COEP, to make the page cross-origin isolated);
 * files named in `missing` answer 404, as after a bad deployment.
 */
export async function serveStatic(root, prefix = '/', headers = {}, { missing = [] } = {}) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let status = 404;
    try {
      if (path.startsWith(prefix) && !missing.some((name) => path.endsWith(`/${name}`))) {
        let file = normalize(join(root, path.slice(prefix.length)));
        if (!file.startsWith(normalize(root))) throw new Error('outside the root');
        if ((await stat(file)).isDirectory()) file = join(file, 'index.html');
        const body = await readFile(file);
        status = 200;
        res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', ...headers });
        res.end(body);
      }
    } catch {
      status = 404;
    }
    if (status === 404) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
    requests.push({ path, status });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
