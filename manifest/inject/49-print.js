  // @needs win, apply, pageUrl, natives, engine, boot, askBrowser, checkWindow, noDialogReason
  // @gives printHook
  // ---- Print: window.print() in any frame ----
  // In headless Chromium print() returns but its job never ends: `afterprint` never comes,
  // later prints do nothing, and Page.printToPDF fails ("Page is already being printed")
  // until the page navigates; in a headful browser print() blocks the page's script until a
  // person closes the preview (MODAL-FACTS 2). With the pilot on the hook answers it as a
  // person's cancel of the preview, without calling the browser's print() (no job, no
  // preview), and asks (rule, policy, agent) only to record it; pilot off, the browser's.
  // No `beforeprint`/`afterprint` is fired: an event a script makes is not trusted, and the
  // page's own print layout is never entered (see docs/kinds/print.md, limits).
  //
  // Start-up cost: nothing but the replacement (60-install puts it in).
  const printHook = {
    print() {
      checkWindow(this, printHook.print);
      // Where the browser shows no dialog it shows no preview either: its own print() does
      // nothing there, whatever the rules; told, not asked.
      const reason = noDialogReason();
      if (reason !== null) {
        askBrowser('print', pageUrl(), 'no_dialog:' + reason, () => {});
        return apply(natives.print, win, []);
      }
      if (engine === null) boot();
      askBrowser('print', pageUrl(), 'print', () => {});
      // Pilot on: answered here, as a person's cancel; the browser's print() never runs.
      return engine.pilot() === 1 ? undefined : apply(natives.print, win, []);
    },
  };
