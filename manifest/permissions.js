// Permission prompts: the page hook (inject/45-permissions.js) holds a call that would
// prompt and asks here; the host (the state of record) decides — grant, deny, or leave it to
// the browser (prompts.js waits for it) — and this file sets the browser's own content
// setting for the origin before it lets the page's call through. So the browser itself
// grants or refuses: a denied call fails with the browser's own error, and
// permissions.query tells the truth. Decisions stay in the profile as this extension's
// content settings (as a human's click would). Message shapes: native-host/src/host/protocol.rs.
//
// Never a hang: with no host the default (deny, unless the browser already knows) applies
// at once; a request no answer reaches in time is denied.
// Permission name (as permissions.query names it) -> chrome.contentSettings type.
const TYPES = {
  camera: 'camera',
  microphone: 'microphone',
  notifications: 'notifications',
  geolocation: 'location',
  'clipboard-read': 'clipboard',
};

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

const setAll = (names, patterns, setting) => Promise.all(names.flatMap((n) =>
  patterns.map((primaryPattern) => chrome.contentSettings[TYPES[n]].set({ primaryPattern, setting }))));

// The kind (kind_registry.js): the page hook asks about it.
export const permission = {
  name: 'permission',
  create: ({ prompts }) => createPermissions(prompts),
};

// Pilot off: the browser's own behaviour, only reported (prompts.fromPage).
function createPermissions(prompts) {
  // The decision as settings, then the page's call goes on; true when granted.
  const applier = (names, patterns, reply) => async (decision) => {
    let failed = null;
    if (decision !== 'native') {
      try {
        await setAll(names, patterns, decision === 'accept' ? 'allow' : 'block');
      } catch (err) {
        failed = err;
      }
    }
    // A setting the browser refused: the browser decides the call itself.
    reply(failed ? 'native' : decision);
    if (failed) throw failed;
    return decision === 'accept';
  };

  return {
    async request(msg, sender, reply) {
      // `what`: the names asked for, joined by commas (as the page hook sends them).
      const asked = msg.what.split(',').slice(0, 5);
      const names = [...new Set(asked.filter((n) => Object.hasOwn(TYPES, n)))];
      const patterns = patternsOf(sender);
      if (names.length === 0 || names.length !== asked.length || patterns.length === 0) return reply('native');
      const fields = prompts.fromPage('permission', sender, reply, { permissions: names, method: msg.method });
      if (fields === null) return;
      const urls = [...new Set([sender.url, sender.tab.url].filter((u) => typeof u === 'string' && /^https?:/.test(u)))];
      const stored = await storedOf(names, urls);
      // With no host, what the browser knows stands, else the default.
      prompts.ask('permission', { ...fields, stored }, { apply: applier(names, patterns, reply), noHost: stored === 'ask' ? 'refuse' : 'native' });
    },
  };
}
