// Navigations the browser abandoned while it loaded this extension.
//
// Measured (Chromium 156, fresh profile, `--load-extension`, a start URL on the command
// line): the start page's navigation, begun while the extension was still loading, is
// dropped once the extension is in, in 5 to 7 launches of 8, when the manifest has the
// `webRequest` permission: with it alone, with `webRequestAuthProvider` too, and with no
// webRequest listener registered at all (the permission does it, not a listener). Without
// it, 0 of 8. The tab is left with its `pendingUrl`, status "complete" and no frame: no
// document commits and no page script (so no dialog) ever runs; the request reached the
// server in some launches, not in others. Nothing in the page can notice, so the worker
// starts such a navigation again.
//
// A tab is stalled when it says "complete" yet has a URL pending and no frame: a navigation
// under way says "loading", and a committed document is a frame. The browser sends no event
// when it drops the navigation (the tab's status turns "complete" silently), so a tab that
// is still loading its first document when this worker starts is looked at again, a few
// times, until it commits or stalls.
const WATCH_MS = [250, 500, 1000, 2000, 4000, 8000];

const firstLoad = async (tab) => {
  if (!tab.pendingUrl || tab.url) return null;
  const frames = await chrome.webNavigation.getAllFrames({ tabId: tab.id }).catch(() => null);
  if (!Array.isArray(frames) || frames.length > 0) return null;
  return tab.status === 'complete' ? 'stalled' : 'loading';
};

export function createStalled() {
  const restarted = new Set(); // once per tab: a navigation that stalls again is left alone
  const check = async (tab, watch) => {
    if (restarted.has(tab.id)) return;
    const state = await firstLoad(tab);
    if (state === 'stalled') {
      restarted.add(tab.id);
      await chrome.tabs.update(tab.id, { url: tab.pendingUrl }).catch(() => {});
    } else if (state === 'loading' && watch < WATCH_MS.length) {
      setTimeout(() => chrome.tabs.get(tab.id).then((t) => check(t, watch + 1), () => {}), WATCH_MS[watch]);
    }
  };
  chrome.tabs.onRemoved.addListener((tabId) => restarted.delete(tabId));
  // Called once the extension has just been loaded, which is when it happens.
  const sweep = async () => {
    const tabs = await chrome.tabs.query({}).catch(() => []);
    await Promise.allSettled(tabs.map((tab) => check(tab, 0)));
  };
  return { sweep };
}
