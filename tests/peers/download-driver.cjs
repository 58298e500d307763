// An agent's driver that took the browser's downloads: Playwright's `connectOverCDP` with
// its defaults (it sets `Browser.setDownloadBehavior {allowAndName}` into its artifacts
// directory). Run: node download-driver.cjs <ws endpoint> <page URL> <selector>
// Clicks the selector in the page open at that URL, prints one JSON line with the
// download's path and name once the driver has the file, and stays connected (its file
// kept) until its stdin closes.
'use strict';
const { chromium } = require('./node_modules/playwright-core');

async function main() {
  const [ws, url, selector] = process.argv.slice(2);
  const browser = await chromium.connectOverCDP(ws);
  const page = browser.contexts().flatMap((c) => c.pages()).find((p) => p.url() === url);
  if (!page) throw new Error(`no page at ${url}`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
  const file = await download.path();
  console.log(JSON.stringify({ path: file, suggested: download.suggestedFilename() }));
  process.stdin.resume();
  await new Promise((done) => process.stdin.on('end', done));
  await browser.close();
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }));
  process.exit(1);
});
