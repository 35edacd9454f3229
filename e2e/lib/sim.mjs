// Simulators for the specs: each spec starts its own (a clean truth record, its own
// faults) on 127.0.0.1 with a free port, and stops it at the end.
import { spawn } from 'node:child_process';
import { env } from './browser.mjs';

/** Starts `tokenmeter-sim` with `args`; resolves to `{ baseUrl, truth(), close() }`. */
export async function startSim(args = []) {
  const child = spawn(env('TOKENMETER_SIM_BIN'), ['--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
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
      return (await fetch(`${baseUrl}/sim/truth`)).json();
    },
    close() {
      child.kill('SIGTERM');
    },
  };
}
