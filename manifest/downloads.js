// Downloads a page starts (a download link, an attachment, window.open of a file). The
// browser saves each to the profile's download directory without asking, and the agent
// would never hear of it (MODAL-FACTS 4). Each one waits here while the browser asks for its
// name (`onDeterminingFilename`, which holds the download until answered) and the host (the
// state of record) decides:
// - accept (also: no host): the browser's own name and place; the host moves the finished
//   file into a `save_dir` itself;
// - refuse: cancelled, nothing written (`chrome.downloads.cancel`);
// - pilot off: the browser's way, reported.
// What became of each goes back (`download_done`: state, path, size, and whether the site's
// automatic downloads are blocked now).
//
// More than one download without a new click is the browser's "Download multiple files"
// prompt, which headless Chromium denies, storing the block for the site: the rest are
// dropped before any extension event. So an `automatic-downloads` permission rule is set
// ahead, as the browser's own setting for the tab's site (and each site the tab goes to
// while the rule lasts); without one, a block the browser stored is reported with the
// download that came before it. The rule lasts no longer than the host's config says it
// does: a config without it, its tab closing, a new worker (whose host's configs set the
// rules again) each give the browser its own settings back. Message shapes:
// native-host/src/host/protocol.rs.

const MAX_NAME = 256;

// The kind (kind_registry.js). Per tab, from the host's config (`downloads`): its site's
// automatic downloads (true: allow, false: block, undefined: the browser's own), set before
// the host hears the config is in force. Its side message says what became of a download.
export const download = {
  name: 'download',
  tab: {
    fields: ['downloads'],
    read: ({ downloads }) => (typeof downloads === 'boolean' ? downloads : undefined),
    reset: undefined,
  },
  sends: ['download_done'],
  create: ({ prompts, pilotOn, toHost }) => createDownloads(prompts, pilotOn, toHost),
};

// `pilotOn()`: the human's switch; `toHost`: the native port.
function createDownloads(prompts, pilotOn, toHost) {
  const asked = new Map(); // download id -> { tabId, request }
  // tabId -> { setting: 'allow' | 'block', patterns }: what the tab's rule sets, and for
  // which sites (the tab's, and each it went to while the rule lasted).
  const sites = new Map();
  const reported = new Map(); // tabId -> the page whose block was reported
  const automatic = chrome.contentSettings.automaticDownloads;
  // Changes to the browser's settings, one after another. The settings this extension
  // made stay in the profile past this worker and its host; each worker starts from none.
  let changes = automatic.clear({}).catch(() => {});
  const change = (op) => (changes = changes.then(op).catch(() => {}));

  const siteOf = (url) => {
    try {
      const o = new URL(url).origin;
      return /^https?:/.test(o) ? `${o}/*` : null;
    } catch {
      return null;
    }
  };
  const setFor = (tabId, url) => {
    const primaryPattern = siteOf(url);
    const rule = sites.get(tabId);
    if (!primaryPattern || !rule) return changes;
    rule.patterns.add(primaryPattern);
    return change(() => automatic.set({ primaryPattern, setting: rule.setting }));
  };
  // The tab's rule is gone: the browser's own settings come back, except where another
  // tab's rule sets them (there is no removing one pattern: all go, the others' come back).
  const drop = (tabId) => {
    if (!sites.delete(tabId)) return changes;
    const kept = [...sites.values()].flatMap((r) => [...r.patterns].map((primaryPattern) => ({ primaryPattern, setting: r.setting })));
    return change(async () => {
      await automatic.clear({});
      for (const s of kept) await automatic.set(s);
    });
  };
  chrome.webNavigation.onCommitted.addListener((d) => {
    if (d.frameId === 0 && sites.has(d.tabId)) setFor(d.tabId, d.url);
  });
  // A closed tab's rule goes with it (the host forgets the tab's rules as well).
  chrome.tabs.onRemoved.addListener((tabId) => {
    reported.delete(tabId);
    drop(tabId);
  });
  // The site's automatic downloads are blocked, and no rule of the tab did it: the browser
  // denied its "Download multiple files" prompt (reported once per page).
  const blockedNow = async (tabId) => {
    if (sites.has(tabId)) return false;
    const tab = await chrome.tabs.get(tabId).catch(() => null);
    if (!tab?.url || reported.get(tabId) === tab.url) return false;
    const { setting } = await automatic.get({ primaryUrl: tab.url }).catch(() => ({}));
    if (setting !== 'block') return false;
    reported.set(tabId, tab.url);
    return true;
  };

  // The tab a download came from: downloads carry no tab, so the one showing the page that
  // started it (its referrer), else one of its origin, else the active tab.
  const tabOf = async (item) => {
    const tabs = await chrome.tabs.query({});
    const referrer = String(item.referrer ?? '');
    const origin = (u) => { try { return new URL(u).origin; } catch { return null; } };
    const exact = tabs.find((t) => referrer !== '' && t.url === referrer);
    const same = tabs.find((t) => origin(referrer) !== null && origin(t.url) === origin(referrer));
    const active = (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0];
    return (exact ?? same ?? active ?? tabs[0])?.id;
  };

  const decide = async (item, suggest) => {
    const tabId = await tabOf(item).catch(() => undefined);
    if (!Number.isInteger(tabId)) return suggest();
    const fields = {
      tab_id: tabId,
      frame_id: 0,
      url: String(item.finalUrl || item.url || ''),
      file_name: String(item.filename ?? '').split('/').pop().slice(0, MAX_NAME),
      mime: String(item.mime ?? '').slice(0, 128),
      size: Number.isSafeInteger(item.totalBytes) && item.totalBytes > 0 ? item.totalBytes : -1,
    };
    if (!pilotOn()) {
      suggest();
      asked.set(item.id, { tabId, request: prompts.native('download', fields) });
      return;
    }
    const apply = async (decision) => {
      if (decision !== 'refuse') {
        suggest();
        return true;
      }
      await chrome.downloads.cancel(item.id);
      return false;
    };
    const request = prompts.ask('download', fields, { apply, noHost: 'native' });
    if (request !== null) asked.set(item.id, { tabId, request });
  };

  // Every download waits for this listener's answer (`true`: it comes later).
  chrome.downloads.onDeterminingFilename.addListener((item, suggest) => {
    decide(item, suggest).catch(() => suggest());
    return true;
  });

  chrome.downloads.onChanged.addListener(async (delta) => {
    const state = delta.state?.current;
    const a = asked.get(delta.id);
    if (!a || (state !== 'complete' && state !== 'interrupted')) return;
    asked.delete(delta.id);
    const [item] = await chrome.downloads.search({ id: delta.id }).catch(() => []);
    toHost({
      type: 'download_done',
      tab_id: a.tabId,
      id: a.request,
      state,
      path: state === 'complete' ? String(item?.filename ?? '') : '',
      size: Number.isSafeInteger(item?.fileSize) ? item.fileSize : -1,
      ...(item?.error ? { error: String(item.error).slice(0, 64) } : {}),
      blocked: await blockedNow(a.tabId),
    });
  });

  return {
    // The tab's state (above) says what its site's automatic downloads are.
    async applyTab(tabId, downloads) {
      if (typeof downloads !== 'boolean') return drop(tabId);
      const wanted = downloads ? 'allow' : 'block';
      // Another rule: the sites the old one set are the browser's again.
      if (sites.get(tabId)?.setting !== wanted) {
        drop(tabId);
        sites.set(tabId, { setting: wanted, patterns: new Set() });
      }
      const tab = await chrome.tabs.get(tabId).catch(() => null);
      if (tab?.url) await setFor(tabId, tab.url);
    },
  };
}
