// The page object: everything specs know about tokenmeter's page goes through
// its `data-testid` hooks, the same ones outside scripts use.
import { readFile } from 'node:fs/promises';

export class AppPage {
  constructor(page) {
    this.page = page;
    this.consoleErrors = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error') this.consoleErrors.push(msg.text());
    });
    page.on('pageerror', (err) => this.consoleErrors.push(String(err)));
  }

  byTestId(id) {
    return this.page.locator(`[data-testid="${id}"]`);
  }

  /**
   * Opens the page and waits for the wasm app to mount and read its history, and,
   * for a link to a plan (`#plan=`), for the plan to be read into the form or refused.
   */
  async open(url) {
    await this.page.goto(url);
    await this.byTestId('app-title').waitFor({ timeout: 30_000 });
    await this.historyReady();
    if (url.includes('#plan=')) {
      await this.page
        .locator('[data-testid="config-panel"]:is([data-plan-link="read"], [data-plan-link="refused"])')
        .waitFor({ timeout: 30_000 });
    }
  }

  /** Reloads the page, as `open` does. */
  async reload() {
    await this.page.reload();
    await this.byTestId('app-title').waitFor({ timeout: 30_000 });
    await this.historyReady();
  }

  /** Waits until the runs kept in this browser were read from storage. */
  async historyReady() {
    await this.page.locator('[data-testid="history"][data-state="ready"]').waitFor({ timeout: 30_000 });
  }

  /**
   * The runs the page stored (IndexedDB `tokenmeter`, store `runs`), as
   * `{run_id, kept_at, json}`; empty when the page never opened its database.
   */
  storedRuns() {
    return this.page.evaluate(async () => {
      const names = (await indexedDB.databases()).map((d) => d.name);
      if (!names.includes('tokenmeter')) return [];
      return await new Promise((resolve, reject) => {
        const open = indexedDB.open('tokenmeter');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const db = open.result;
          const all = db.transaction('runs').objectStore('runs').getAll();
          all.onsuccess = () => {
            db.close();
            resolve(all.result);
          };
          all.onerror = () => reject(all.error);
        };
      });
    });
  }

  /** Waits (5 s at most) until `n` runs are stored (they are written in the background). */
  async waitForStoredRuns(n) {
    let rows = await this.storedRuns();
    for (let i = 0; i < 50 && rows.length !== n; i++) {
      await this.page.waitForTimeout(100);
      rows = await this.storedRuns();
    }
    return rows;
  }

  title() {
    return this.byTestId('app-title').textContent();
  }

  async fill(id, text) {
    await this.byTestId(id).fill(String(text));
  }

  /** Fills the plan form; keys are the hooks' names (`base-url`, `levels`, ...). */
  async fillPlan(fields) {
    for (const [id, value] of Object.entries(fields)) {
      await this.fill(id, value);
    }
  }

  async status() {
    return (await this.byTestId('status').textContent()).trim();
  }

  /** Waits until the status hook reads exactly `wanted`. */
  async waitForStatus(wanted, timeout = 90_000) {
    // Polled every 100 ms, not every frame: a check per frame keeps the page's
    // thread busy while the run it waits for is being measured.
    await this.page.waitForFunction(
      (w) => document.querySelector('[data-testid="status"]')?.textContent.trim() === w,
      wanted,
      { timeout, polling: 100 },
    );
  }

  async run() {
    await this.byTestId('run').click();
  }

  async cancel() {
    await this.byTestId('cancel').click();
  }

  /** `{concurrency, n_ok, n_fail, ...}` of every results row, from its cells. */
  async resultsRows() {
    return this.page.$$eval('[data-testid="results-row"]', (rows) =>
      rows.map((row) => {
        const cells = { concurrency: Number(row.dataset.concurrency) };
        for (const cell of row.querySelectorAll('[data-col]')) cells[cell.dataset.col] = cell.textContent.trim();
        return cells;
      }),
    );
  }

  async errorGroups() {
    return this.page.$$eval('[data-testid="error-group"]', (groups) =>
      groups.map((g) => ({
        kind: g.dataset.kind,
        hint: g.querySelector('[data-testid="error-hint"]')?.textContent ?? '',
        sample: g.querySelector('[data-testid="error-sample"]')?.textContent ?? null,
        sampleHtml: g.querySelector('[data-testid="error-sample"]')?.innerHTML ?? null,
      })),
    );
  }

  /**
   * Clicks `testid` and returns the `n` downloads it starts (an export of several
   * files), in the order they came, waiting up to `timeoutMs` for them all.
   */
  async downloadsOf(testid, n, timeoutMs = 10_000) {
    const downloads = [];
    const keep = (d) => downloads.push(d);
    this.page.on('download', keep);
    try {
      await this.byTestId(testid).click();
      const deadline = Date.now() + timeoutMs;
      while (downloads.length < n && Date.now() < deadline) await this.page.waitForTimeout(50);
    } finally {
      this.page.off('download', keep);
    }
    return downloads;
  }

  /** Clicks `export-json` and returns the downloaded run document, parsed. */
  async exportJson() {
    const [download] = await Promise.all([
      this.page.waitForEvent('download'),
      this.byTestId('export-json').click(),
    ]);
    return JSON.parse(await readFile(await download.path(), 'utf8'));
  }

  async screenshot(path) {
    await this.page.screenshot({ path, fullPage: true });
  }
}
