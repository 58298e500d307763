  // @needs win, apply, getterOf, lateNative, fnProto, eventType, ask, configs
  // @gives noDialogReason
  // ---- Where the browser shows no dialog ----
  // The browser returns at once, showing nothing (alert undefined, confirm false, prompt
  // null), from a window whose frame is gone, from a document sandboxed without
  // `allow-modals`, and while the document, or another frame of its page, dispatches
  // beforeunload, pagehide or unload (Chromium's page dismissal). The hook gives the page
  // exactly that there, before any rule or policy, and reports why: the page sees what it
  // sees without Unmodal.
  //
  // Start-up cost: two getters read off the window (own properties of an object that
  // exists); the sandbox is asked of content.js, whose world the page cannot reach, on a
  // dialog only.
  const parentOf = getterOf(win, 'parent');
  const currentEventOf = getterOf(win, 'event');
  const DISMISSAL = { __proto__: null, beforeunload: true, pagehide: true, unload: true };
  let sandboxed = false;
  let askedAt = -1;
  const dismissing = (w) => {
    const event = apply(currentEventOf, w, []);
    return event !== undefined && event !== null && DISMISSAL[apply(eventType, event, [])] === true;
  };
  // Chromium refuses dialogs in every frame of a page while one of them goes away: the
  // frames of this page this document can read are asked too. Children are reached by
  // index below the window's own `length` only (past it, a window's properties come from
  // prototypes the page controls). The getters are looked up on the first dialog: `top`
  // cannot be replaced; `length` is taken only if still the browser's own.
  let topOf;
  let lengthOf = null;
  let budget = 0;
  const anyDismissing = (w) => {
    if (--budget < 0) return false;
    let n;
    try {
      if (w !== win && dismissing(w)) return true;
      n = apply(lengthOf, w, []);
    } catch {
      return false; // another origin's
    }
    for (let i = 0; i < n; i++) {
      if (anyDismissing(w[i])) return true;
    }
    return false;
  };
  let topWin = null; // this frame's top window: fixed while the frame is there
  const pageDismissing = () => {
    if (topOf === undefined) {
      topOf = getterOf(win, 'top');
      lengthOf = lateNative(getterOf(win, 'length'), 'get length', fnProto);
      if (topOf !== null) topWin = apply(topOf, win, []);
    }
    if (topWin === null || lengthOf === null) return false;
    // A page of one frame, the usual case: nobody else to ask.
    if (topWin === win && apply(lengthOf, win, []) === 0) return false;
    budget = 64;
    return anyDismissing(topWin);
  };
  // 'detached', 'unloading', 'sandboxed' or null (the browser would show the dialog).
  const noDialogReason = () => {
    if (parentOf !== null && apply(parentOf, win, []) === null) return 'detached';
    if (currentEventOf !== null && (dismissing(win) || pageDismissing())) return 'unloading';
    // Fixed for the document's life (the flags come with its navigation), but what only the
    // worker sees comes with a config: asked again after a new one.
    if (sandboxed !== true && askedAt !== configs) {
      askedAt = configs;
      sandboxed = ask('sandboxed');
    }
    return sandboxed ? 'sandboxed' : null;
  };
