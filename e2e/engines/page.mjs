// The page object for WebDriver sessions: the same `data-testid` hooks as the
// Playwright one (`e2e/pages/app.mjs`), through W3C WebDriver so that it works in
// every engine. Values are typed as a script would (value + `input` event), and
// exports are read from the Blob the page makes, not from a download folder, so
// every engine is read the same way.
import { By, until } from 'selenium-webdriver';

const css = (id) => By.css(`[data-testid="${id}"]`);

/** Keeps every Blob the page offers as a download, instead of downloading it. */
const CAPTURE_DOWNLOADS = `
  if (!window.__tmDownloads) {
    window.__tmDownloads = [];
    const blobs = new Map();
    const create = URL.createObjectURL.bind(URL);
    URL.createObjectURL = (blob) => { const url = create(blob); blobs.set(url, blob); return url; };
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function () {
      if (this.href.startsWith('blob:') && blobs.has(this.href)) {
        window.__tmDownloads.push({ name: this.download, blob: blobs.get(this.href) });
        return;
      }
      return click.call(this);
    };
  }`;

export class EnginePage {
  constructor(driver) {
    this.driver = driver;
  }

  async open(url) {
    await this.driver.get(url);
    await this.mounted();
  }

  async reload() {
    await this.driver.navigate().refresh();
    await this.mounted();
  }

  /** The app is up and has read the runs it kept. */
  async mounted() {
    await this.driver.wait(until.elementLocated(css('app-title')), 60_000);
    await this.driver.wait(until.elementLocated(By.css('[data-testid="history"][data-state="ready"]')), 60_000);
    await this.driver.executeScript(CAPTURE_DOWNLOADS);
  }

  async text(id) {
    return this.driver.executeScript(
      (id) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? null,
      id,
    );
  }

  async count(id) {
    return this.driver.executeScript((id) => document.querySelectorAll(`[data-testid="${id}"]`).length, id);
  }

  /** Sets a field's value and fires `input`, as typing would. */
  async fill(id, value) {
    const element = await this.driver.findElement(css(id));
    await this.driver.executeScript(
      (el, v) => {
        el.value = v;
        el.dispatchEvent(new Event('input', { bubbles: true }));
      },
      element,
      String(value),
    );
  }

  async fillPlan(fields) {
    for (const [id, value] of Object.entries(fields)) await this.fill(id, value);
  }

  async click(id) {
    await (await this.driver.findElement(css(id))).click();
  }

  async status() {
    return ((await this.text('status')) ?? '').trim();
  }

  async waitForStatus(wanted, timeout = 120_000) {
    await this.driver.wait(async () => (await this.status()) === wanted, timeout, `status never became ${wanted}`);
  }

  async waitFor(predicate, timeout, message) {
    await this.driver.wait(predicate, timeout, message);
  }

  async resultsRows() {
    return this.driver.executeScript(() =>
      [...document.querySelectorAll('[data-testid="results-row"]')].map((row) => {
        const cells = { concurrency: Number(row.dataset.concurrency) };
        for (const cell of row.querySelectorAll('[data-col]')) cells[cell.dataset.col] = cell.textContent.trim();
        return cells;
      }),
    );
  }

  async errorKinds() {
    return this.driver.executeScript(() =>
      [...document.querySelectorAll('[data-testid="error-group"]')].map((g) => g.dataset.kind),
    );
  }

  /**
   * Clicks an export button and returns the text of the file it offered, or null
   * when none came within 10 s (the first export of a split build fetches its code).
   */
  async exportText(id) {
    const before = await this.driver.executeScript(() => window.__tmDownloads.length);
    await this.click(id);
    return this.driver.executeAsyncScript((before, done) => {
      const deadline = Date.now() + 10_000;
      const look = () => {
        const offered = window.__tmDownloads[before];
        if (offered) return offered.blob.text().then(done, (err) => done(`unreadable: ${err}`));
        if (Date.now() > deadline) return done(null);
        setTimeout(look, 20);
      };
      look();
    }, before);
  }

  /** Everything this origin keeps in local storage, as one string. */
  /** Everything the page stored: local storage, and the runs in IndexedDB. */
  async storedText() {
    return this.driver.executeAsyncScript((done) => {
      const local = JSON.stringify({ ...localStorage });
      const open = indexedDB.open('tokenmeter');
      open.onerror = () => done(`${local} (IndexedDB: ${open.error})`);
      open.onsuccess = () => {
        // Closed before answering: a connection left open can hold up the page's
        // next load in some engines.
        const db = open.result;
        if (!db.objectStoreNames.contains('runs')) {
          db.close();
          return done(local);
        }
        const all = db.transaction('runs').objectStore('runs').getAll();
        all.onsuccess = () => {
          db.close();
          done(local + JSON.stringify(all.result));
        };
        all.onerror = () => {
          db.close();
          done(`${local} (IndexedDB: ${all.error})`);
        };
      };
    });
  }

  /** The engine's user agent, as the page sees it. */
  async userAgent() {
    return this.driver.executeScript(() => navigator.userAgent);
  }
}
