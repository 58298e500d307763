// AI Web Pilot's switch: the host keeps it; a person flips it (host/pilot_switch.rs).
// Invariants:
// - Off until the host speaks: nothing in this browser (storage, a page, code a DevTools
//   client runs here) can say on. In a browser open to DevTools clients the agent's own
//   driver can run code in any page, this worker and the popup included, so nothing here
//   can carry a person's "on": the host takes it only from `unmodal pilot on` in a terminal
//   there, and from the toolbar popup elsewhere. This worker checks what only it can see
//   (which view asked, DevTools attached to the popup or to itself) and passes the request
//   on; off is taken from anywhere.
// - The host's words are taken at once (its next messages, configs and pilot calls, are
//   read with them), then applied to the open tabs, cached in storage (for nobody to
//   trust: the popup asks this worker) and confirmed to the host, one word after another.
// - The storage cache is written only by this worker; anything else writing `on` there is
//   refused and recorded, and the cache put back.
const HOST_WORD_MS = 3000; // the longest pages wait for the host's word as this worker starts
const PILOT_SCRIPT = 'unmodal-pilot';

// Frames with a URL of their own only: about:blank, srcdoc, blob: and data: frames take the
// switch from their parent's (or opener's) content.js, a script fewer in every frame a page
// makes (see content.js).
const PILOT_SCRIPT_SPEC = {
  id: PILOT_SCRIPT,
  js: ['pilot.js'],
  matches: ['<all_urls>'],
  runAt: 'document_start',
  allFrames: true,
  matchOriginAsFallback: false,
  world: 'ISOLATED',
};

async function registerPilotScript(on) {
  const registered = await chrome.scripting.getRegisteredContentScripts({ ids: [PILOT_SCRIPT] });
  if (on && registered.length === 0) {
    await chrome.scripting.registerContentScripts([PILOT_SCRIPT_SPEC]);
  } else if (on && registered[0].matchOriginAsFallback !== false) {
    // Registered by an earlier version (persisted across sessions), for every frame.
    await chrome.scripting.updateContentScripts([PILOT_SCRIPT_SPEC]);
  } else if (!on && registered.length > 0) {
    await chrome.scripting.unregisterContentScripts({ ids: [PILOT_SCRIPT] });
  }
}

const cachedPilot = () => chrome.storage.local.get('pilot').then((r) => r.pilot === true, () => false);

// `connected()`: whether a host port is open; `applyTab(tabId)` brings a tab in line with
// the switch; `started()`: the pages may be served (the host's word came, or will not).
export function createPilotSwitch({ toHost, connected, applyTab, started }) {
  let on = false;
  // Why the popup cannot switch the pilot on in this browser (the host says), or null.
  let terminalOnly = null;
  let heard = false;
  let pagesHold = false; // the switch the open pages got from the worker before this one
  let words = Promise.resolve(); // the host's words, applied one after another
  const asks = new Map(); // request id -> resolve, for the popup's answer
  let askSeq = 0;
  const ownWrites = []; // values of `pilot` this worker wrote to storage, not yet seen written
  const POPUP_URL = chrome.runtime.getURL('popup.html');
  const OURS = chrome.runtime.getURL('');

  // The host's word (`pilot`).
  function word(msg) {
    // What the open pages hold: this worker's word, or as it starts, its predecessor's (the
    // cache, read before connecting). The cache only spares pushing the same switch again.
    const held = heard ? on : pagesHold;
    heard = true;
    terminalOnly = typeof msg.terminal_only === 'string' ? msg.terminal_only : null;
    on = msg.on;
    started();
    const waiting = asks.get(msg.id);
    if (waiting) {
      asks.delete(msg.id);
      waiting({ on, refused: typeof msg.refused === 'string' ? msg.refused : null });
    }
    words = words.then(() => applyWord(msg.rev, held !== on)).catch(() => {});
  }

  async function applyWord(rev, changed) {
    await cache(on);
    await registerPilotScript(on).catch(() => {});
    // Open tabs first, then the host: once the host hears "applied", the pages know it too.
    if (changed) {
      const tabs = await chrome.tabs.query({});
      await Promise.allSettled(tabs.map((tab) => applyTab(tab.id)));
    }
    toHost({ type: 'pilot_applied', rev });
  }

  async function cache(value) {
    if ((await cachedPilot()) === value) return;
    ownWrites.push(value);
    await chrome.storage.local.set({ pilot: value }).catch(() => ownWrites.splice(ownWrites.indexOf(value), 1));
  }

  // `pilot` in storage changed. This worker's own writes aside, something else wrote it: an
  // extension page, or code a DevTools client ran in this worker. Off is taken; on is
  // refused, recorded, and the cache put back.
  function storageWritten(value) {
    const mine = ownWrites.indexOf(value);
    if (mine >= 0) return void ownWrites.splice(mine, 1);
    if (value === false && on) return void askHost(false, 'storage');
    if (value === true && !on) {
      toHost({ type: 'pilot_refused', via: 'storage', reason: 'the switch was written to the extension\'s storage by something other than Unmodal (an extension page, or code run in its service worker)' });
    }
    cache(on);
  }
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'local' && changes.pilot) storageWritten(changes.pilot.newValue);
  });

  function askHost(value, via) {
    if (!connected()) return Promise.resolve({ on, refused: 'The Unmodal host is not connected: run `unmodal doctor`.' });
    const id = ++askSeq;
    return new Promise((resolve) => {
      asks.set(id, resolve);
      toHost({ type: 'pilot', on: value, via, id });
      setTimeout(() => asks.delete(id) && resolve({ on, refused: 'The Unmodal host did not answer; try again.' }), 3000);
    });
  }

  // Which view asked: the toolbar popup, popup.html in a tab or window (which a program can
  // open, and click), or anything else. The popup's sender names no tab, frame or document
  // (measured), so it is told apart by the views the browser lists: every view of
  // popup.html outside a tab must be a toolbar popup.
  async function viewOf(sender) {
    if (!sender.url || !sender.url.startsWith(POPUP_URL)) return 'message';
    if (sender.tab) return 'popup_in_tab';
    const views = await chrome.runtime.getContexts({}).catch(() => []);
    const outside = views.filter((c) => String(c.documentUrl).startsWith(POPUP_URL) && c.tabId === -1);
    return outside.length > 0 && outside.every((c) => c.contextType === 'POPUP') ? 'popup' : 'message';
  }

  // Why a DevTools client may be driving the popup or this worker, or null.
  async function devtoolsOnUs() {
    const targets = await chrome.debugger.getTargets().catch(() => null);
    if (!targets) return 'Unmodal cannot tell whether DevTools is attached to it';
    // Measured: the browser lists our worker and pages by URL (no extensionId), `attached`
    // once any DevTools client is.
    const ours = targets.filter((t) => t.attached && String(t.url).startsWith(OURS));
    return ours.length ? `a DevTools client is attached to ${ours.map((t) => t.url).join(', ')}` : null;
  }

  return {
    on: () => on,
    terminalOnly: () => terminalOnly,
    word,
    // The popup's switch (or something posing as it).
    async request(value, sender) {
      const via = await viewOf(sender);
      if (value && via === 'popup') {
        const watched = await devtoolsOnUs();
        if (watched) {
          const refused = `${watched}, so this switch cannot turn AI Web Pilot on. Close DevTools, or run \`unmodal pilot on\` in a terminal.`;
          toHost({ type: 'pilot_refused', via, reason: refused });
          return { on, refused };
        }
      }
      // The host decides (and records a refusal).
      return askHost(value, via);
    },
    // No host: whoever waits for its answer hears so.
    hostGone() {
      for (const [id, waiting] of asks) {
        asks.delete(id);
        waiting({ on, refused: 'The Unmodal host stopped; try again.' });
      }
    },
    // As the worker starts: what the open pages hold, and, if the host says nothing within
    // HOST_WORD_MS, the pages are served with the pilot off.
    async start() {
      pagesHold = await cachedPilot();
      setTimeout(() => {
        if (heard) return;
        started();
        registerPilotScript(false).catch(() => {});
      }, HOST_WORD_MS);
    },
  };
}
