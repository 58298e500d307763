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
  const bridge = { config: null, apply: null, pilot: null, sandboxed: null, childSandboxed: null };
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

  // A file picker takes the frame's user activation, as the browser's does: a second picker
  // in the same activation is refused. Activations are counted from trusted input once a
  // picker first asked (the first one is 0).
  let activations = -1;
  let consumedAt = -1;
  const consumeActivation = () => {
    if (activations < 0) {
      activations = 0;
      for (const t of ['keydown', 'mousedown', 'pointerdown', 'pointerup', 'touchend']) {
        addEventListener(t, (e) => { if (e.isTrusted) activations += 1; }, true);
      }
    }
    if (!navigator.userActivation.isActive || consumedAt === activations) return false;
    consumedAt = activations;
    return true;
  };

  // From the page hook: a question (a string; answered by cancelling the event or not), a
  // request to ask the worker about ({request, kind, what, method}: taken by cancelling the
  // event, answered later), a chooser's "settled first" or an accepted passkey call's "done" notice, or a batch of reports.
  const fromPage = (event) => {
    const q = event.detail;
    if (q === 'config') {
      asked = true;
      toPage();
    } else if (q === 'active') {
      if (navigator.userActivation.hasBeenActive) event.preventDefault();
    } else if (q === 'transient') {
      if (navigator.userActivation.isActive) event.preventDefault();
    } else if (q === 'consume') {
      if (consumeActivation()) event.preventDefault();
    } else if (q === 'sandboxed') {
      if (modalsSandboxed()) event.preventDefault();
    } else if (q === 'news') {
      // Is the worker's answer to this frame's hello (its sandbox, its rules) still to come?
      if (awaiting) event.preventDefault();
    } else if (q && typeof q === 'object' && Number.isSafeInteger(q.request) && typeof q.kind === 'string') {
      event.preventDefault();
      onAsk(q);
    } else if (q && typeof q === 'object' && Number.isSafeInteger(q.settled)) {
      runtime().sendMessage({ type: 'settled', page_request: q.settled }).catch(() => {});
    } else {
      onReport(q);
    }
  };

  // Is this document, or a frame it is in, sandboxed without `allow-modals` (the browser
  // then shows it no dialog)? Read, in this world (the page's prototypes never run), from
  // the owner element and the same-origin parent's own answer; what only the worker sees (a
  // CSP header, an owner element in another origin's document) it tells a frame that says
  // hello (sandbox.js).
  let told = false;
  let awaiting = false; // this frame's hello is not answered yet
  const ownerBlocks = (owner) => {
    const tokens = owner.getAttribute('sandbox');
    return tokens !== null && !tokens.toLowerCase().split(/[\t\n\f\r ]+/).includes('allow-modals');
  };
  const modalsSandboxed = () => {
    if (told) return true;
    try {
      const owner = window.frameElement;
      if (!owner) return false;
      if (ownerBlocks(owner)) return true;
      const up = window.parent.__unmodalBridge;
      return !!up && typeof up.sandboxed === 'function' && up.sandboxed() === true;
    } catch {
      return false;
    }
  };
  bridge.sandboxed = modalsSandboxed;
  // Asked by the worker for a child of another origin (or an opaque one), which cannot read
  // its owner element: does this document, or the element holding its child window number
  // `index`, block that child's dialogs?
  bridge.childSandboxed = (index) => {
    if (modalsSandboxed()) return true;
    const child = window[index];
    if (!child) return false;
    for (const el of document.querySelectorAll('iframe, frame')) {
      if (el.contentWindow === child) return ownerBlocks(el);
    }
    return false;
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

  // A request the page hook asks about (inject/44-ask.js), whatever its kind: the worker
  // decides (its adapter for the kind) and answers `accept`, `refuse` or `native` (the
  // browser's own way). The answer goes back as one number, request * 4 + code; anything
  // else, or no worker, is code 3: the hook then takes its kind's own safe way.
  const ANSWER_CODES = { native: 0, accept: 1, refuse: 2 };
  const ANSWER_NONE = 3;
  const onAsk = (q) => {
    const answer = (code) => dispatchEvent(new CustomEvent(secret + 'p', { detail: q.request * 4 + code }));
    const msg = {
      type: 'ask',
      kind: q.kind.slice(0, 20),
      page_request: q.request,
      what: String(q.what ?? '').slice(0, 2048),
      method: String(q.method ?? '').slice(0, 40),
    };
    runtime()
      .sendMessage(msg)
      .then((r) => answer(Object.hasOwn(ANSWER_CODES, r) ? ANSWER_CODES[r] : ANSWER_NONE), () => answer(ANSWER_NONE));
  };

  const fromWorker = (msg) => {
    if (msg && msg.sandboxed === true) told = true;
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
    // A frame says which of its parent's windows it is: the worker reads its owner element
    // by that (sandbox.js).
    let index = -1;
    if (up !== window) {
      try {
        for (let i = 0; i < up.length && index < 0; i++) if (up[i] === window) index = i;
      } catch {
        index = -1;
      }
    }
    // The first, empty document of a window a same-origin page opened: the opener may call
    // its dialogs at once, before the worker answers. The new tab has the opener's rules and
    // policy (host/opener.rs), so it starts from the opener's config.
    if (up === window && location.href === 'about:blank') {
      try {
        const from = window.opener ? window.opener.__unmodalBridge : undefined;
        if (from && typeof from.config === 'string') {
          config = from.config;
          bridge.config = config;
        }
      } catch {
        // cross-origin opener
      }
    }
    awaiting = true;
    runtime()
      .sendMessage({ type: 'hello', index })
      .then(
        (msg) => {
          fromWorker(msg);
          awaiting = false;
        },
        () => {
          awaiting = false;
        },
      );
  }
})();
