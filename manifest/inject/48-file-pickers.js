  // @needs win, ask, askBrowser, ANSWER_NATIVE, deferred, settle, directPromise, refuseAsBrowser, addDisguiser
  // ---- File System Access pickers: showOpenFilePicker, showSaveFilePicker, showDirectoryPicker ----
  // After a gesture, headless Chromium refuses each at once itself ("The user aborted a
  // request."), but a headful browser opens the OS file dialog and the page waits for a
  // person, and no protocol can give a picker files (MODAL-FACTS 1b, 1c). So the hook asks
  // (rule, policy, agent) and, unless the answer is the browser's own way (pilot off), refuses
  // as a person's cancel, with the browser's own AbortError. Without a gesture (asked of
  // content.js, in a world the page cannot reach), a wrong receiver or no secure context, the
  // browser answers itself, opening nothing: its SecurityError or TypeError. A picker takes
  // the gesture, as the browser's does: a second one in it gets NotAllowedError.
  //
  // Start-up cost: three reads and three assignments on the window (secure contexts only),
  // and this code's parse (kept small: every frame pays for each byte).
  // Null-prototype tables, read by index: nothing the page can reach is looked up.
  const PICKERS = { __proto__: null, 0: 'showOpenFilePicker', 1: 'showSaveFilePicker', 2: 'showDirectoryPicker' };
  const pickerNatives = { __proto__: null };
  // Methods: named and sized (0) as the natives, not constructible; each its own source
  // text (the toString disguise is keyed by it).
  const pickerHooks = {
    __proto__: null,
    0: { showOpenFilePicker() { return pick(0, this, arguments); } }.showOpenFilePicker,
    1: { showSaveFilePicker() { return pick(1, this, arguments); } }.showSaveFilePicker,
    2: { showDirectoryPicker() { return pick(2, this, arguments); } }.showDirectoryPicker,
  };
  const pick = (i, self, args) => {
    const native = pickerNatives[i];
    if ((self !== undefined && self !== win) || !ask('transient')) return directPromise(native, self, args, pickerHooks[i]);
    const d = deferred();
    const fail = (why, name) => refuseAsBrowser(d.reject, `Failed to execute '${PICKERS[i]}' on 'Window': ${why}`, name);
    if (!ask('consume')) fail('User activation required.', 'NotAllowedError');
    else {
      askBrowser('file_chooser', i, PICKERS[i], (code) => {
        if (code === ANSWER_NATIVE) settle(native, self, args, d.resolve, d.reject, null);
        else fail('The user aborted a request.', 'AbortError');
      });
    }
    return d.promise;
  };
  let pickersHooked = 0;
  for (let i = 0; i < 3; i++) {
    const name = PICKERS[i];
    if (typeof win[name] !== 'function') break;
    pickerNatives[i] = win[name];
    pickersHooked++;
  }
  for (let i = 0; pickersHooked === 3 && i < 3; i++) win[PICKERS[i]] = pickerHooks[i];
  addDisguiser((as) => {
    for (let i = 0; pickersHooked === 3 && i < 3; i++) as(pickerHooks[i], PICKERS[i]);
  });
