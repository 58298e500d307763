import { createHeldInPage } from './held_in_page.js';

// App links: a navigation to a scheme that is not the web's (mailto:, myapp://, web+x:),
// which the page hook (inject/47-applinks.js) cancelled before the browser handed it to the
// OS (pilot on) or let go (pilot off). The host (the state of record) decides: open it (the
// hook navigates again, as the page did) or leave it cancelled; prompts.js waits for the
// host, and with no host, or no answer in time, it stays cancelled. Message shapes:
// native-host/src/host/protocol.rs.
//
// What the hook cannot cancel (a frame its parent navigates: `<iframe src=myapp://…>`, a
// frame's location set from outside, whose document fires no `navigate` event; the pilot
// off; a link a rule opened) reaches the browser, which hands mailto: to the mail client and
// shows its "Open …?" dialog for anything else. That navigation ends in ERR_ABORTED: the host
// hears of it (`app_link_dialog`) and lists the tab as blocked until it goes to another site.
const MAX_URL = 2048;
const WEB = new Set(['http:', 'https:', 'about:', 'blob:', 'data:', 'javascript:', 'file:', 'filesystem:', 'chrome:',
  'chrome-extension:', 'chrome-untrusted:', 'devtools:', 'view-source:', 'ws:', 'wss:', 'ftp:', 'mailto:']);

// The kind (kind_registry.js): a held-in-page kind (held_in_page.js), refused (left
// cancelled) or let go (opened); the pilot off: the browser's way, only reported. Its side
// message carries the browser's own dialogs, once the host is there (the event may wake this
// worker).
export const appLink = {
  name: 'app_link',
  sends: ['app_link_dialog'],
  create({ prompts, toHost, ready }) {
    chrome.webNavigation.onErrorOccurred.addListener((d) => {
      const colon = d.url.indexOf(':');
      if (d.error !== 'net::ERR_ABORTED' || colon < 1 || WEB.has(d.url.slice(0, colon + 1).toLowerCase())) return;
      const msg = { type: 'app_link_dialog', tab_id: d.tabId, frame_id: d.frameId, target: d.url.slice(0, MAX_URL) };
      ready.then(() => toHost(msg));
    });
    return createHeldInPage('app_link', prompts, (what) => {
      const target = what.slice(0, MAX_URL);
      return target === '' ? null : { target };
    });
  },
};
