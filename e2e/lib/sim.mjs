// Simulators for the specs: each spec starts its own (a clean truth record, its own
// faults) on 127.0.0.1 with a free port, and stops it at the end.
import { spawn } from 'node:child_process';
import { get } from 'node:https';
import { env } from './browser.mjs';
import { track } from './children.mjs';

/** Starts `tokenmeter-sim` with `args`; resolves to `{ baseUrl, truth(), close() }`. */
export async function startSim(args = []) {
  const child = track(
    spawn(env('TOKENMETER_SIM_BIN'), ['--port', '0', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    }),
  );
  const baseUrl = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the simulator did not start: ${out}`)), 20_000);
    child.stdout.on('data', (data) => {
      out += data;
      const match = out.match(/base URL (\S+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`the simulator exited (${code}): ${out}`)));
  });
  return {
    baseUrl,
    async truth() {
      if (!baseUrl.startsWith('https:')) return (await fetch(`${baseUrl}/sim/truth`)).json();
      // `--tls` serves a self-signed certificate made at start: trust it here only.
      return new Promise((resolve, reject) => {
        get(`${baseUrl}/sim/truth`, { rejectUnauthorized: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk) => (body += chunk));
          res.on('end', () => resolve(JSON.parse(body)));
        }).on('error', reject);
      });
    },
    close() {
      child.kill('SIGTERM');
    },
  };
}
