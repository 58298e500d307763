// Unmodal bridge: ISOLATED world, document_start, every frame; listed after inject.js,
// whose secret it takes over. Carries config to the page hook and dialog reports to the
// service worker.
(() => {
  'use strict';
  // The channel's secret: inject.js runs first (listed first) and leaves it at the head of
  // window.status; it is taken back off here, before any page script runs. Without it (the
  // page hook did not run) there is no one to talk to in the page.
  const handedOver = window.status;
  const end = handedOver.indexOf('\n');
  const secret = handedOver.startsWith('unmodal:') && end > 8 ? handedOver.slice(8, end) : null;
  if (secret !== null) window.status = handedOver.slice(end + 1);
  const MAX_REPORT_CHARS = 16 * 1024;
  // Until the tab's config arrives, all a frame knows is whether the pilot is on: the engine
  // then answers by default and says the rules were not loaded. pilot.js, run only while it
  // is on and only in frames with a URL of their own, leaves `__unmodalPilot` on this
  // world's global; a frame a page makes (about:blank, srcdoc, blob:, data:) asks its
  // parent's (or opener's) bridge instead. Read when the page hook first asks, after every
  // document_start script ran, in whichever order.
  // Made by the engine's encoder (`fallback_configs`; a test checks the string).
  const PILOT_ON_STANDIN = 'U1E1S';
  const toMain = secret === null ? null : secret + 'm';
  // The page hook asks for the config on its first dialog; until then nothing is sent.
  let asked = false;
  // The tab's config (engine/src/config.rs), whole, from the worker or the parent frame;
  // never read here, only passed on.
  let config = null;

  // The extension API costs a frame about 2 ms the first time it is touched. A same-origin
  // child frame (a script-made about:blank one above all) needs it only once it has a
  // dialog to report: its config comes from the parent frame, in this world, which the
  // page cannot see.
  let listening = false;
  const runtime = () => {
    if (!listening) {
      listening = true;
      chrome.runtime.onMessage.addListener(onMessage);
    }
    return chrome.runtime;
  };

  // What same-origin child frames read and call (this world only).
  const bridge = { config: null, apply: null, pilot: null };
  globalThis.__unmodalBridge = bridge;

  let parent; // the parent frame's bridge, if same-origin (found below)
  const pilotOn = () => {
    if (globalThis.__unmodalPilot === true) return true;
    let from = parent;
    if (!from) {
      try {
        from = window.opener ? window.opener.__unmodalBridge : undefined;
      } catch {
        from = undefined; // cross-origin opener
      }
    }
    return !!from && typeof from.pilot === 'function' && from.pilot() === true;
  };
  bridge.pilot = pilotOn;
  const current = () => config ?? (pilotOn() ? PILOT_ON_STANDIN : null);

  const toPage = () => {
    const cfg = current();
    if (asked && toMain !== null && cfg !== null) dispatchEvent(new CustomEvent(toMain, { detail: cfg }));
  };

  // Applies a config here, then hands it on to same-origin child frames.
  const apply = (next) => {
    config = next;
    bridge.config = next;
    toPage();
    for (let i = 0; i < window.frames.length; i++) {
      try {
        const child = window.frames[i].__unmodalBridge;
        if (child && typeof child.apply === 'function') child.apply(next);
      } catch {
        // Cross-origin child: the service worker configures it.
      }
    }
  };
  bridge.apply = (next) => {
    if (typeof next === 'string') apply(next);
  };

  // From the page hook: a question (a string; answered by cancelling the event or not), a
  // request to ask the worker about ({request, kind, what, method}: taken by cancelling the
  // event, answered later), a chooser's "settled first" notice, or a batch of reports.
  const fromPage = (event) => {
    const q = event.detail;
    if (q === 'config') {
      asked = true;
      toPage();
    } else if (q === 'active') {
      if (navigator.userActivation.hasBeenActive) event.preventDefault();
    } else if (q && typeof q === 'object' && Number.isSafeInteger(q.request)) {
      if (q.kind === 'permission') {
        event.preventDefault();
        onPermission(q.request, q.what, q.method);
      } else if (q.kind === 'device_chooser') {
        event.preventDefault();
        onChooser(q.request, q.what, q.method);
      } else if (q.kind === 'app_link') {
        event.preventDefault();
        onAppLink(q.request, q.what);
      } else if (q.kind === 'passkey') {
        event.preventDefault();
        onPasskey(q.request, q.what, q.method);
      } else if (q.kind === 'print') {
        // Answered already in the page (inject/49-print.js): only recorded.
        event.preventDefault();
        runtime().sendMessage({ type: 'print' }).then(() => answerPage(q.request, ANSWER_CANCEL), () => answerPage(q.request, ANSWER_CANCEL));
      }
    } else if (q && typeof q === 'object' && Number.isSafeInteger(q.settled)) {
      runtime().sendMessage({ type: 'chooser_settled', page_request: q.settled }).catch(() => {});
    } else {
      onReport(q);
    }
  };

  // A batch: { reports: {length, 0: …}, folded: n } (a list without a prototype in the
  // page's world, a plain object here). Page-made data, checked for shape and size before
  // it leaves the page.
  const MAX_BATCH = 64;
  const onReport = (batch) => {
    const list = batch && batch.reports;
    if (!list || typeof list !== 'object' || !Number.isSafeInteger(list.length) || list.length < 0) return;
    const all = [];
    for (let i = 0; i < Math.min(list.length, MAX_BATCH); i++) all.push(list[i]);
    const reports = all.filter((r) => {
      if (!r || typeof r !== 'object' || typeof r.seq !== 'number') return false;
      try {
        return JSON.stringify(r).length <= MAX_REPORT_CHARS;
      } catch {
        return false;
      }
    });
    const folded = Number.isSafeInteger(batch.folded) && batch.folded > 0 ? batch.folded : 0;
    if (reports.length === 0 && folded === 0) return;
    runtime().sendMessage({ type: 'dialogs', reports, folded }).catch(() => {});
  };

  // The answer to a request (inject/44-ask.js) goes back as one number, request * 4 + code:
  // 0 native (the browser's own way), 1 grant (a permission) or open (an app link), 2 deny
  // (a permission) or cancel (a chooser, an app link).
  const ANSWER_NATIVE = 0;
  const ANSWER_ACCEPT = 1;
  const ANSWER_CANCEL = 2;
  const PERMISSION_ANSWERS = { native: ANSWER_NATIVE, grant: 1, deny: 2 };
  const answerPage = (request, code) => dispatchEvent(new CustomEvent(secret + 'p', { detail: request * 4 + code }));

  // A permission request the page hook holds (inject/45-permissions.js): `what` the
  // permissions' names joined by commas, `method` the page's call. The worker decides and
  // sets the browser's content setting, then the hook makes the real call; any failure here
  // lets the call through to the browser.
  const onPermission = (request, what, method) => {
    const names = typeof what === 'string' ? what.split(',').slice(0, 5) : [];
    runtime()
      .sendMessage({ type: 'permission', names, api: typeof method === 'string' ? method.slice(0, 40) : '' })
      .then((r) => answerPage(request, PERMISSION_ANSWERS[r] ?? ANSWER_NATIVE), () => answerPage(request, ANSWER_NATIVE));
  };

  // A device chooser that opened (inject/46-choosers.js): `what` its API ('usb', …),
  // `method` the page's call. The worker answers `cancel` (the hook gives the page the
  // browser's own cancel result) or `native` (the chooser stands). If the worker cannot be
  // reached the chooser is cancelled: in headless it would never settle.
  const onChooser = (request, what, method) => {
    runtime()
      .sendMessage({ type: 'chooser', page_request: request, api: String(what).slice(0, 20), method: String(method).slice(0, 40) })
      .then((r) => answerPage(request, r === 'native' ? ANSWER_NATIVE : ANSWER_CANCEL), () => answerPage(request, ANSWER_CANCEL));
  };

  // A navigation to a scheme that is not the web's (inject/47-applinks.js), which the hook
  // cancelled (pilot on) or let go (pilot off): `what` its URL. The worker answers `open`
  // (the hook navigates again), `cancel` or `native`; unreachable, it stays cancelled.
  const onAppLink = (request, what) => {
    runtime()
      .sendMessage({ type: 'app_link', url: String(what).slice(0, 2048) })
      .then((r) => answerPage(request, r === 'open' ? ANSWER_ACCEPT : r === 'native' ? ANSWER_NATIVE : ANSWER_CANCEL), () => answerPage(request, ANSWER_CANCEL));
  };

  // A WebAuthn request the page hook holds (inject/48-passkeys.js): `what` the relying
  // party's id the page named (may be empty), `method` create or get. The worker answers
  // `refuse` (the hook rejects it as a person's cancel), `accept` or `native` (the real call
  // goes on); unreachable, it is refused: the browser's passkey sheet would wedge the tab.
  const onPasskey = (request, what, method) => {
    runtime()
      .sendMessage({ type: 'passkey', rp_id: String(what).slice(0, 256), operation: method === 'create' ? 'create' : 'get' })
      .then((r) => answerPage(request, r === 'accept' ? ANSWER_ACCEPT : r === 'native' ? ANSWER_NATIVE : ANSWER_CANCEL), () => answerPage(request, ANSWER_CANCEL));
  };

  const fromWorker = (msg) => {
    if (msg && typeof msg.config === 'string') apply(msg.config);
  };
  function onMessage(msg, _sender, reply) {
    if (msg && msg.type === 'config') {
      fromWorker(msg);
      reply(true);
    }
  }

  // On the window, not the document: this world's window exists already, its document
  // wrapper would have to be made (a cost every frame would pay).
  if (secret !== null) addEventListener(secret + 'i', fromPage, true);
  // The agent works in this tab when its top document takes trusted input (a driver's
  // Input.dispatch* events are trusted too): the service worker tracks it (tracking.js).
  // window.parent, not window.top: the parent is read below anyway, and each other window
  // a frame touches costs it a wrapper.
  const up = window.parent;
  if (up === window) {
    let last = -Infinity;
    const onInput = (e) => {
      if (!e.isTrusted || e.timeStamp - last < 1000) return;
      last = e.timeStamp;
      runtime().sendMessage({ type: 'input' }).catch(() => {});
    };
    addEventListener('pointerdown', onInput, { capture: true, passive: true });
    addEventListener('keydown', onInput, { capture: true, passive: true });
  }

  try {
    parent = up !== window ? up.__unmodalBridge : undefined;
  } catch {
    parent = undefined; // cross-origin parent
  }
  if (parent && typeof parent.apply === 'function') {
    // The parent pushes every later change; start from what it holds now.
    if (typeof parent.config === 'string') {
      config = parent.config;
      bridge.config = config;
    }
  } else {
    runtime().sendMessage({ type: 'hello' }).then(fromWorker, () => {});
  }
})();
