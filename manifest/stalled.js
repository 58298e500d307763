// Tabs whose first document the browser started while it was still loading this extension.
//
// Measured (Chromium 156, fresh profile, `--load-extension`, a start URL on the command
// line): the start page's navigation begins before the extension is loaded. The browser
// holds back navigations only for extensions already loaded (its user-script listener), so
// that one goes on, and then one of three things happens:
// - It is dropped once the extension is in (the `webRequest` permission does it, with or
//   without a listener): the tab is left with its `pendingUrl`, status "complete" and no
//   frame; no document, no page script. Most launches.
// - Its document commits after the browser handed the content scripts to the renderer: the
//   page hook runs as in any document.
// - Its document commits before that: it runs without the page hook and the bridge, so its
//   dialogs are the browser's own and nobody reports them (the "start-up loss": about 1
//   launch in 100 under the test suite; in one run 4 in 10 with content scripts that take
//   long to load, `cargo xtask stress-startup --slow-scripts`, none in later runs).
// The page cannot notice either, so this worker starts such a navigation again, once per
// tab: the new one is held back until the content scripts are ready. The server sees the
// request twice, and a dialog the first document showed is closed by the navigation. Only
// tabs still loading as the worker starts are judged: a page that finished loading before
// the extension came (installed into a running browser) is not loaded again, and runs
// without Unmodal until it navigates.
//
// A document without our scripts is known by its silence: content.js says hello at
// document_start in every top document it runs in, before any page script. The browser
// sends no event for either case, so a tab still loading its first document when this
// worker starts is looked at again, a few times, until it commits or stalls.
const WATCH_MS = [250, 500, 1000, 2000, 4000, 8000];
// How long a committed document may take to say hello: its hello left before any page
// script ran, so this covers delivery on a loaded machine only.
const HELLO_MS = 3000;
// Hellos are collected only while tabs are watched: at most this long after a fresh load.
const COLLECT_MS = 30000;

const firstLoad = async (tab) => {
  if (!tab.pendingUrl || tab.url) return null;
  const frames = await chrome.webNavigation.getAllFrames({ tabId: tab.id }).catch(() => null);
  if (!Array.isArray(frames) || frames.length > 0) return null;
  return tab.status === 'complete' ? 'stalled' : 'loading';
};

// Top documents our content scripts run in, as the manifest's `matches` say (a copy scoped
// to one site, as the start-up bench loads, must not judge the pages it never runs in: they
// never say hello). file: only once the person allowed it.
const ALL_URLS = /^(https?|wss?|ftp|file):/;
const glob = (s) => new RegExp(`^${s.split('*').map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
const covers = (pattern, url) => {
  if (pattern === '<all_urls>') return ALL_URLS.test(url);
  const parts = /^(\*|[a-z-]+):\/\/([^/]*)(\/.*)$/.exec(pattern);
  let u;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (!parts) return false;
  const [, scheme, host, path] = parts;
  const ours = u.protocol.slice(0, -1);
  if (scheme === '*' ? ours !== 'http' && ours !== 'https' : scheme !== ours) return false;
  const name = host.includes(':') ? u.host : u.hostname;
  if (host !== '*' && host !== name && !(host.startsWith('*.') && (name === host.slice(2) || name.endsWith(host.slice(1))))) return false;
  return glob(path).test(u.pathname + u.search);
};
const MATCHES = (chrome.runtime.getManifest().content_scripts ?? []).flatMap((s) => s.matches ?? []);
const hookable = async (url) =>
  MATCHES.some((p) => covers(p, url)) &&
  (!url.startsWith('file:') || (await chrome.extension.isAllowedFileSchemeAccess().catch(() => false)));

export function createStalled() {
  const restarted = new Set(); // once per tab: a navigation that stalls again is left alone
  // documentId -> true once it said hello, or the resolver of whoever waits for it.
  let hellos = new Map();
  const topFrame = (tabId) => chrome.webNavigation.getFrame({ tabId, frameId: 0 }).catch(() => null);
  const saidHello = (documentId) => {
    if (hellos === null) return Promise.resolve(true); // not watching: nothing to judge
    if (hellos.get(documentId) === true) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), HELLO_MS);
      hellos?.set(documentId, () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  };
  const startAgain = async (tabId, url) => {
    restarted.add(tabId);
    await chrome.tabs.update(tabId, { url }).catch(() => {});
  };
  // A committed top document that never says hello ran without the page hook.
  const unhooked = async (tab) => {
    const top = await topFrame(tab.id);
    if (!top || typeof top.documentId !== 'string' || !(await hookable(top.url))) return;
    if (await saidHello(top.documentId)) return;
    // Still that document, and no navigation under way (a person's must not be undone).
    const [now, current] = await Promise.all([topFrame(tab.id), chrome.tabs.get(tab.id).catch(() => null)]);
    if (restarted.has(tab.id) || now?.documentId !== top.documentId || !current || current.pendingUrl) return;
    await startAgain(tab.id, top.url);
  };
  const check = async (tab, watch) => {
    if (restarted.has(tab.id)) return;
    const state = await firstLoad(tab);
    if (state === 'stalled') {
      await startAgain(tab.id, tab.pendingUrl);
    } else if (state === 'loading' && watch < WATCH_MS.length) {
      setTimeout(() => chrome.tabs.get(tab.id).then((t) => check(t, watch + 1), () => {}), WATCH_MS[watch]);
    } else if (state === null && (watch > 0 || tab.status === 'loading')) {
      // Only documents the browser was loading as this extension came: a tab that finished
      // loading before (the extension installed into a running browser) is a person's, and
      // is left as it is.
      await unhooked(tab);
    }
  };
  chrome.tabs.onRemoved.addListener((tabId) => restarted.delete(tabId));
  const stopCollecting = () => {
    for (const waiting of hellos?.values() ?? []) if (typeof waiting === 'function') waiting();
    hellos = null;
  };
  return {
    // Called once the extension has just been loaded, which is when it happens.
    sweep: async () => {
      setTimeout(stopCollecting, COLLECT_MS);
      const tabs = await chrome.tabs.query({}).catch(() => []);
      await Promise.allSettled(tabs.map((tab) => check(tab, 0)));
    },
    // This worker was not the first of its browser session: nothing was loaded just now.
    idle: stopCollecting,
    // A top document's hello (background.js), from before this worker started too.
    hello: (sender) => {
      if (hellos === null || sender.frameId !== 0 || typeof sender.documentId !== 'string') return;
      const waiting = hellos.get(sender.documentId);
      hellos.set(sender.documentId, true);
      if (typeof waiting === 'function') waiting();
    },
  };
}
