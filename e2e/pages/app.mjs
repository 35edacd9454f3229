// The page object: everything specs know about tokenmeter's page goes through
// its `data-testid` hooks, the same ones outside scripts use.

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

  /** Opens the page and waits for the wasm app to mount. */
  async open(url) {
    await this.page.goto(url);
    await this.byTestId('app-title').waitFor({ timeout: 30_000 });
  }

  title() {
    return this.byTestId('app-title').textContent();
  }

  async fill(id, text) {
    await this.byTestId(id).fill(text);
  }

  async screenshot(path) {
    await this.page.screenshot({ path, fullPage: true });
  }
}
