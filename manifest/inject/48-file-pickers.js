  // @needs win, ask, askBrowser, ANSWER_NATIVE, deferred, settle, directPromise, refuseAsBrowser
  // @gives disguisePickers
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
  // Start-up cost: three reads and three assignments on the window (secure contexts only).
  // Null-prototype tables: read by index, nothing the page can reach is looked up.
  const PICKERS = { __proto__: null, 0: 'showOpenFilePicker', 1: 'showSaveFilePicker', 2: 'showDirectoryPicker' };
  const PICKER_MODES = { __proto__: null, 0: 'open_picker', 1: 'save_picker', 2: 'directory_picker' };
  const pickerNatives = { __proto__: null, 0: win.showOpenFilePicker, 1: win.showSaveFilePicker, 2: win.showDirectoryPicker };
  const pick = (i, self, args, top) => {
    const native = pickerNatives[i];
    if ((self !== undefined && self !== win) || !ask('transient')) return directPromise(native, self, args, top);
    const d = deferred();
    if (!ask('consume')) {
      refuseAsBrowser(d.reject, `Failed to execute '${PICKERS[i]}' on 'Window': User activation required.`, 'NotAllowedError');
      return d.promise;
    }
    askBrowser('file_chooser', PICKER_MODES[i], PICKERS[i], (code) => {
      if (code === ANSWER_NATIVE) settle(native, self, args, d.resolve, d.reject, null);
      else refuseAsBrowser(d.reject, `Failed to execute '${PICKERS[i]}' on 'Window': The user aborted a request.`, 'AbortError');
    });
    return d.promise;
  };
  // Method shorthand: named and sized (0) as the natives, not constructible.
  const pickerHooks = {
    showOpenFilePicker() { return pick(0, this, arguments, pickerHooks.showOpenFilePicker); },
    showSaveFilePicker() { return pick(1, this, arguments, pickerHooks.showSaveFilePicker); },
    showDirectoryPicker() { return pick(2, this, arguments, pickerHooks.showDirectoryPicker); },
  };
  const pickersHooked = typeof pickerNatives[0] === 'function' && typeof pickerNatives[1] === 'function' && typeof pickerNatives[2] === 'function';
  if (pickersHooked) {
    win.showOpenFilePicker = pickerHooks.showOpenFilePicker;
    win.showSaveFilePicker = pickerHooks.showSaveFilePicker;
    win.showDirectoryPicker = pickerHooks.showDirectoryPicker;
  }
  const disguisePickers = (as) => {
    if (!pickersHooked) return;
    as(pickerHooks.showOpenFilePicker, 'showOpenFilePicker');
    as(pickerHooks.showSaveFilePicker, 'showSaveFilePicker');
    as(pickerHooks.showDirectoryPicker, 'showDirectoryPicker');
  };
