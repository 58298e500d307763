// Which tab the agent works in (the tracked tab, the default of every agent call). A
// browser driven over CDP often has no focused window, and a driver may work in a tab it
// never activates, so "the active tab of the last focused window" is only the fallback.
// The tab most recently worked in wins, where working is any of:
//   - it was activated (chrome.tabs.onActivated: a human or a driver's bringToFront),
//   - its top frame committed a navigation the user or a driver asked for (typed, a link,
//     a form, a reload: webNavigation.onCommitted, not the page's own redirects or
//     automatic subframe loads),
//   - its top document took trusted input (a click or a key, real or a driver's
//     Input.dispatch* events; content.js tells, at most every TOUCH_MS).
// The extension's own pages (the popup opened as a tab) never take over.
const AUTOMATIC = new Set(['auto_subframe', 'manual_subframe']);

export function createTracker(onChange) {
  let worked = null;
  const own = chrome.runtime.getURL('');
  const touch = (tabId, url) => {
    if (!Number.isInteger(tabId) || tabId < 0 || (url || '').startsWith(own)) return;
    worked = tabId;
    onChange();
  };
  chrome.tabs.onActivated.addListener(({ tabId }) => {
    chrome.tabs.get(tabId).then((t) => touch(tabId, t.url || t.pendingUrl), () => {});
  });
  chrome.windows.onFocusChanged.addListener((windowId) => {
    if (windowId === chrome.windows.WINDOW_ID_NONE) return;
    chrome.tabs.query({ active: true, windowId }).then(([t]) => t && touch(t.id, t.url || t.pendingUrl), () => {});
  });
  chrome.webNavigation.onCommitted.addListener((d) => {
    if (d.frameId !== 0 || AUTOMATIC.has(d.transitionType)) return;
    // A page's own script or meta refresh moving it is not the agent working there.
    if ((d.transitionQualifiers || []).some((q) => q === 'client_redirect' || q === 'server_redirect')) return;
    touch(d.tabId, d.url);
  });
  return {
    // content.js: the tab's top document took trusted input.
    input: (tab) => touch(tab.id, tab.url || tab.pendingUrl),
    // The tracked tab among `tabs`: the one worked in last, else the active tab of the last
    // focused window (`focused`), else none.
    pick(tabs, focused) {
      if (worked !== null && tabs.some((t) => t.id === worked)) return worked;
      return focused && !(focused.url || focused.pendingUrl || '').startsWith(own) ? focused.id : null;
    },
  };
}
