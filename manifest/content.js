// Unmodal bridge: ISOLATED world, document_start, every frame; listed before inject.js so
// it runs first. Carries config to the page hook and dialog reports to the service worker.
(() => {
  'use strict';
  const HELLO = 'unmodal:hello';
  const MAX_REPORT_CHARS = 16 * 1024;
  let toMain = null;
  let pilot = globalThis.__unmodalPilot === true; // set by pilot.js if it ran first
  let pending = null;

  // A same-origin child frame (a script-made about:blank one above all) can be called the
  // moment it exists, before the service worker could answer it: start from the parent
  // frame's config. This world's globals are invisible to the page.
  try {
    const inherited = window !== window.parent ? window.parent.__unmodalConfig : undefined;
    if (typeof inherited === 'string') pending = inherited;
  } catch {
    // Cross-origin parent: wait for the service worker.
  }

  const send = (cfg) => {
    if (cfg.length > 1) globalThis.__unmodalConfig = cfg;
    if (toMain === null) {
      pending = cfg;
      return;
    }
    document.dispatchEvent(new CustomEvent(toMain, { detail: cfg }));
  };

  // inject.js hands over its secret once, before any page script exists; afterwards the
  // well-known name is dead, so the page can neither re-key nor read the channel.
  const onHello = (event) => {
    document.removeEventListener(HELLO, onHello, true);
    const secret = event.detail;
    if (typeof secret !== 'string' || !/^u[0-9a-z]{4,60}$/.test(secret)) return;
    toMain = secret + 'm';
    document.addEventListener(secret + 'i', onReport, true);
    send(pilot ? '1' : '0');
    if (pending !== null) send(pending);
    pending = null;
  };
  document.addEventListener(HELLO, onHello, true);

  // pilot.js is registered by the service worker only while the human has the pilot on;
  // whichever of the two scripts runs second tells the page hook, before page scripts run.
  globalThis.__unmodalPilotOn = () => {
    pilot = true;
    send('1');
  };

  const config = (msg) => {
    if (!msg || typeof msg.pilot !== 'boolean') return;
    pilot = msg.pilot;
    send((pilot ? '1' : '0') + (typeof msg.rules === 'string' ? msg.rules : ''));
  };

  // A batch from the page hook: { reports: [...], folded: n }. Page-made data, checked
  // for shape and size before it leaves the page.
  const onReport = (event) => {
    const batch = event.detail;
    if (!batch || !Array.isArray(batch.reports)) return;
    const reports = batch.reports.filter((r) => {
      if (!r || typeof r !== 'object' || typeof r.seq !== 'number') return false;
      try {
        return JSON.stringify(r).length <= MAX_REPORT_CHARS;
      } catch {
        return false;
      }
    });
    const folded = Number.isSafeInteger(batch.folded) && batch.folded > 0 ? batch.folded : 0;
    if (reports.length === 0 && folded === 0) return;
    chrome.runtime.sendMessage({ type: 'dialogs', reports, folded }).catch(() => {});
  };

  chrome.runtime.onMessage.addListener((msg, _sender, reply) => {
    if (msg && msg.type === 'config') {
      config(msg);
      reply(true);
    }
  });
  chrome.runtime.sendMessage({ type: 'hello' }).then(config, () => {});
})();
