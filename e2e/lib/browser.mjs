// Headless Chromium from Debian, driven by playwright-core (never a downloaded browser).
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** The flags TOOLCHAIN.md gives: without the networking ones Chromium floods the closed network. */
export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  // The page opens in the browser's language: specs read English unless they ask otherwise.
  '--lang=en-US',
];

export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the specs through \`cargo xtask test\``);
  return value;
}

export async function launch(extraArgs = []) {
  return chromium.launch({
    executablePath: process.env.TOKENMETER_CHROMIUM ?? '/usr/bin/chromium',
    args: [...CHROMIUM_ARGS, ...extraArgs],
  });
}

/** Where a spec writes a screenshot for people to look at. */
export function screenshotPath(name) {
  const dir = env('TOKENMETER_SCREENSHOTS');
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
