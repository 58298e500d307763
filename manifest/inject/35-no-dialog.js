  // @needs win, apply, getterOf, eventType, ask, configs
  // @gives noDialogReason
  // ---- Where the browser shows no dialog ----
  // The browser returns at once, showing nothing (alert undefined, confirm false, prompt
  // null), from a window whose frame is gone, from a document sandboxed without
  // `allow-modals`, and while the document dispatches beforeunload, pagehide or unload
  // (Chromium's page dismissal). The hook gives the page exactly that there, before any
  // rule or policy, and reports why: the page sees what it sees without Unmodal.
  //
  // Start-up cost: two getters read off the window (own properties of an object that
  // exists); the sandbox is asked of content.js, whose world the page cannot reach, on a
  // dialog only.
  const parentOf = getterOf(win, 'parent');
  const currentEventOf = getterOf(win, 'event');
  const DISMISSAL = { __proto__: null, beforeunload: true, pagehide: true, unload: true };
  let sandboxed = false;
  let askedAt = -1;
  // 'detached', 'unloading', 'sandboxed' or null (the browser would show the dialog).
  const noDialogReason = () => {
    if (parentOf !== null && apply(parentOf, win, []) === null) return 'detached';
    if (currentEventOf !== null) {
      const event = apply(currentEventOf, win, []);
      if (event !== undefined && event !== null && DISMISSAL[apply(eventType, event, [])] === true) return 'unloading';
    }
    // Fixed for the document's life (the flags come with its navigation), but what only the
    // worker sees comes with a config: asked again after a new one.
    if (sandboxed !== true && askedAt !== configs) {
      askedAt = configs;
      sandboxed = ask('sandboxed');
    }
    return sandboxed ? 'sandboxed' : null;
  };
