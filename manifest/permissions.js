// Permission prompts: the page hook (inject/45-permissions.js) holds a call that would
// prompt and asks here; the host (the state of record) decides — grant, deny, or leave it to
// the browser — and this file sets the browser's own content setting for the origin before
// it lets the page's call through. So the browser itself grants or refuses: a denied call
// fails with the browser's own error, and permissions.query tells the truth. Decisions stay
// in the profile as this extension's content settings (as a human's click would).
//
// Never a hang: with no host the default (deny) applies at once; the host answers at once
// or says how long to hold (`permission_hold`); a request no answer reaches in time is
// denied here.
const FIRST_WAIT_MS = 5000;
const MAX_HOLD_MS = 11 * 60 * 1000;
// Permission name (as permissions.query names it) -> chrome.contentSettings type.
const TYPES = {
  camera: 'camera',
  microphone: 'microphone',
  notifications: 'notifications',
  geolocation: 'location',
  'clipboard-read': 'clipboard',
};
const MAX_URL = 2048;

// `pilotOn()`: the human's switch (off: the browser's own behaviour, only reported);
// `connected()`: a host is there to answer.
export function createPermissions(toHost, pilotOn, connected) {
  let seq = 0;
  const waiting = new Map(); // request -> { tabId, names, patterns, reply, timer, held }

  // The frame's origin and the top document's: the browser keys camera, microphone and
  // geolocation on the top origin (a frame uses them by delegation), notifications on the
  // frame's own. Both are set. Opaque origins (sandboxed frames, data:) get none.
  const patternsOf = (sender) => {
    const out = new Set();
    for (const url of [sender.origin ?? sender.url, sender.tab?.url]) {
      try {
        const o = new URL(url).origin;
        if (o !== 'null' && /^https?:/.test(o)) out.add(`${o}/*`);
      } catch {
        // not a URL
      }
    }
    return [...out];
  };

  // What the browser would do now without a prompt: `ask` if any permission of the request
  // would prompt, else `block` if any is refused, else `allow`.
  const storedOf = async (names, urls) => {
    const all = await Promise.all(names.flatMap((n) => urls.map((primaryUrl) =>
      chrome.contentSettings[TYPES[n]].get({ primaryUrl }).then((r) => r.setting, () => 'ask'))));
    if (all.includes('ask') || all.length === 0) return 'ask';
    return all.includes('block') ? 'block' : 'allow';
  };

  const setAll = (w, setting) => Promise.all(w.names.flatMap((n) =>
    w.patterns.map((primaryPattern) => chrome.contentSettings[TYPES[n]].set({ primaryPattern, setting }))));

  // Applies a decision, then lets the page's call through.
  const finish = async (request, decision, expired) => {
    const w = waiting.get(request);
    if (!w) return;
    waiting.delete(request);
    clearTimeout(w.timer);
    let ok = true;
    let error;
    if (decision === 'grant' || decision === 'deny') {
      try {
        await setAll(w, decision === 'grant' ? 'allow' : 'block');
      } catch (err) {
        ok = false;
        error = String(err && err.message).slice(0, 300);
      }
    }
    // A setting the browser refused: the browser decides the call itself.
    try {
      w.reply(ok ? decision : 'native');
    } catch {
      ok = false; // the frame is gone
    }
    if (w.held || expired || !ok) {
      toHost({ type: 'permission_result', tab_id: w.tabId, request, ok, granted: ok && decision === 'grant', expired, error });
    }
  };

  const request = async (msg, sender, reply) => {
    const names = Array.isArray(msg.names) ? [...new Set(msg.names.filter((n) => Object.hasOwn(TYPES, n)))] : [];
    const patterns = patternsOf(sender);
    if (names.length === 0 || names.length !== msg.names.length || patterns.length === 0) return reply('native');
    const tabId = sender.tab.id;
    const url = String(sender.url ?? '').slice(0, MAX_URL);
    const base = { tab_id: tabId, frame_id: sender.frameId ?? 0, url, permissions: names, api: String(msg.api ?? '').slice(0, 40) };
    if (!pilotOn()) {
      toHost({ type: 'permission_request', request: ++seq, ...base, native: true });
      return reply('native');
    }
    const urls = [...new Set([sender.url, sender.tab.url].filter((u) => typeof u === 'string' && /^https?:/.test(u)))];
    const stored = await storedOf(names, urls);
    const n = ++seq;
    waiting.set(n, { tabId, names, patterns, reply, timer: null, held: false });
    if (!connected()) {
      // The host's own rule without it: what the browser knows stands, else the default.
      return finish(n, stored === 'ask' ? 'deny' : 'native', false);
    }
    waiting.get(n).timer = setTimeout(() => finish(n, 'deny', true), FIRST_WAIT_MS);
    toHost({ type: 'permission_request', request: n, ...base, stored });
  };

  return {
    request,
    answer(msg) {
      if (['grant', 'deny', 'native'].includes(msg.decision)) finish(msg.request, msg.decision, false);
    },
    hold(msg) {
      const w = waiting.get(msg.request);
      if (!w) return;
      w.held = true;
      clearTimeout(w.timer);
      const ms = Number.isSafeInteger(msg.wait_ms) ? Math.min(Math.max(msg.wait_ms, 0), MAX_HOLD_MS) : FIRST_WAIT_MS;
      w.timer = setTimeout(() => finish(msg.request, 'deny', true), ms);
    },
    // The host went: nobody can answer what waits.
    releaseAll() {
      for (const request of [...waiting.keys()]) finish(request, 'deny', true);
    },
  };
}
