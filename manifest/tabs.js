// Tabs: the host needs the list and the tracked tab (tracking.js says which), and a tab
// opened by a tab starts with its opener's rules and policy (host/opener.rs). Invariants:
// - The host forgets the rules of tabs a list leaves out. A list queried before a tab was
//   opened by another, sent after its `opened`, would drop the rules it just took over:
//   such a list is queried again instead.
// - An opened tab's config is copied here at once, so that under a policy the debugger
//   session (whose new-document script carries the config) can be in place before the new
//   tab's first document; the host takes the same copy as the state of record and sends
//   it back.
import { createTracker } from './tracking.js';

// `hostConfigs`: tabId -> the host's config for it (background.js); `applyTab(tabId)`
// brings a tab in line with it.
export function createTabs({ toHost, hostConfigs, applyTab }) {
  let timer = null;
  let epoch = 0;
  const tracker = createTracker(() => send());

  function send() {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      const asked = epoch;
      const [tabs, focused] = await Promise.all([
        chrome.tabs.query({}),
        chrome.tabs.query({ active: true, lastFocusedWindow: true }),
      ]);
      if (asked !== epoch) return send();
      const tracked = tracker.pick(tabs, focused[0]);
      for (const id of hostConfigs.keys()) if (!tabs.some((t) => t.id === id)) hostConfigs.delete(id);
      toHost({
        type: 'tabs',
        tracked,
        tabs: tabs.map((t) => ({ id: t.id, window_id: t.windowId, url: t.url ?? '', title: t.title ?? '', active: t.active })),
      });
    }, 20);
  }
  chrome.tabs.onCreated.addListener(send);
  chrome.tabs.onRemoved.addListener(send);
  chrome.tabs.onUpdated.addListener((_id, change) => {
    if (change.url || change.title || change.status === 'complete') send();
  });

  const openers = new Map(); // tabId -> opener tabId, once told
  function opened(tabId, opener) {
    if (!Number.isInteger(tabId) || !Number.isInteger(opener) || tabId === opener || openers.has(tabId)) return;
    openers.set(tabId, opener);
    epoch += 1;
    const from = hostConfigs.get(opener);
    if (from && !hostConfigs.has(tabId)) {
      hostConfigs.set(tabId, { ...from });
      applyTab(tabId);
    }
    toHost({ type: 'opened', tab_id: tabId, opener_tab_id: opener });
  }
  // Only this event: `tabs.onCreated`'s `openerTabId` also names the active tab for tabs a
  // driver creates over CDP, which were opened by nobody.
  chrome.webNavigation.onCreatedNavigationTarget.addListener((d) => opened(d.tabId, d.sourceTabId));
  chrome.tabs.onRemoved.addListener((tabId) => openers.delete(tabId));

  return {
    // Sends the list soon (changes within 20 ms go as one).
    send,
    // A top frame's trusted input (content.js): its tab is worked in.
    input: (tab) => tracker.input(tab),
  };
}
