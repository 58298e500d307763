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

// `pilotOn()`: the human's switch (off: the browser's way, only reported).
export function createAppLinks(prompts, pilotOn, toHost) {
  chrome.webNavigation.onErrorOccurred.addListener((d) => {
    const colon = d.url.indexOf(':');
    if (d.error !== 'net::ERR_ABORTED' || colon < 1 || WEB.has(d.url.slice(0, colon + 1).toLowerCase())) return;
    toHost({ type: 'app_link_dialog', tab_id: d.tabId, frame_id: d.frameId, target: d.url.slice(0, MAX_URL) });
  });
  return {
    request(msg, sender, reply) {
      const target = msg.what.slice(0, MAX_URL);
      if (target === '') return reply('refuse');
      const fields = { tab_id: sender.tab.id, frame_id: sender.frameId, url: String(sender.url ?? ''), target };
      if (!pilotOn()) {
        prompts.native('app_link', fields);
        return reply('native');
      }
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      prompts.ask('app_link', fields, { apply });
    },
  };
}
