// A Stagehand 4.4.0 script the end-to-end tests drive (tests/tests/stagehand.rs), one JSON
// command a line on stdin, one JSON answer a line on stdout (with the command's id). Commands
// run at once, side by side: a click that waits on a held dialog does not hold up the
// commands that answer it. No language model: only what Stagehand does without one.
import { localBrowser, Stagehand } from "@browserbasehq/stagehand";
import { createInterface } from "node:readline";

let browser = null;
let stagehand = null;
let page = null;

const ops = {
  // Attach to a running browser's DevTools port, as Stagehand's local mode does.
  async connect({ cdpUrl }) {
    browser = await localBrowser.connect({ cdpUrl });
    stagehand = await Stagehand.create({ browser });
    const pages = await browser.context.pages();
    page = pages[0] ?? (await browser.context.newPage());
    return { pages: pages.length };
  },
  async goto({ url }) {
    await page.goto(url);
    return { url: page.url() };
  },
  async click({ selector }) {
    await page.locator(selector).click();
    return { clicked: selector };
  },
  async evaluate({ expression }) {
    return { value: await page.evaluate(expression) };
  },
  // What the page shows through Stagehand's extension (its worker's own browser connection).
  async snapshot() {
    const s = await page.snapshot();
    return { text: JSON.stringify(s).slice(0, 4000) };
  },
  async close() {
    await browser?.disconnect();
    return {};
  },
};

const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");
createInterface({ input: process.stdin }).on("line", async (line) => {
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch (e) {
    return say({ id: null, error: `not JSON: ${e}` });
  }
  const started = Date.now();
  try {
    const op = ops[cmd.op];
    if (!op) throw new Error(`no op ${cmd.op}`);
    say({ id: cmd.id, ok: await op(cmd), ms: Date.now() - started });
  } catch (e) {
    say({ id: cmd.id, error: String(e?.stack ?? e), ms: Date.now() - started });
  }
});
say({ id: 0, ok: { ready: true, node: process.version } });
