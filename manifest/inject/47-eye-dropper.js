  // @needs win, apply, protoOf, getterOf, addDisguiser, newDOMException, captureStackTrace, askIfPending
  // ---- The eye dropper: EyeDropper.prototype.open() ----
  // An opened eye dropper never settles in headless Chromium; a headful one covers the
  // screen and takes every click until a person picks a colour or presses Escape. Every
  // failure (no gesture, a wrong receiver, a bad or an aborted signal, one already open)
  // settles within a microtask (measured), so it is watched as the device choosers are
  // (45-pending-call): a call pending two microtasks later opened one, and is asked about.
  // One failure comes later: "not available", right after an eye dropper closed; it is
  // asked about too, and the browser's own answer settles it first. A refusal gives the
  // page a person's Escape, in the browser's words.
  //
  // The browser's eye dropper must close too, or the page's next open() fails as "already
  // open". Only a signal closes it: a call with no options (as pages make it) goes to the
  // browser with options of ours whose signal a refusal aborts. A page's own options go to
  // the browser untouched (reading them would run the page's getters); after a refusal of
  // such a call the browser's eye dropper stays open, as a chooser does.
  //
  // Start-up cost, secure contexts only: the interface, two reads, one descriptor, an assignment.
  const eyeDropperProto = protoOf('EyeDropper');
  const EYE_DROPPER_CANCEL = "Failed to execute 'open' on 'EyeDropper': The user canceled the selection.";
  let eyeDropperOpen = null;
  let NewAbortController = null;
  let abortOf = null;
  let signalOf = null;
  // The browser's error has a `stack` with no frames (made in a task of the browser's):
  // captured from above `top` (45-pending-call's first frame), ours has none either.
  const eyeDropperCancel = (d, top) => {
    const err = newDOMException(EYE_DROPPER_CANCEL, 'AbortError');
    captureStackTrace(err, top);
    d.reject(err);
  };
  const eyeDropperCall = (self, args) => {
    if (signalOf === null || (args.length > 0 && args[0] !== undefined)) {
      return askIfPending(eyeDropperOpen, self, args, eyeDropperHooks.open, 'eye_dropper', 'open', 'open', eyeDropperCancel, null);
    }
    const ctl = new NewAbortController();
    const ours = [{ __proto__: null, signal: apply(signalOf, ctl, []) }];
    const cancel = (d, top) => {
      eyeDropperCancel(d, top);
      apply(abortOf, ctl, []);
    };
    return askIfPending(eyeDropperOpen, self, ours, eyeDropperHooks.open, 'eye_dropper', 'open', 'open', cancel, null);
  };
  // Method shorthand: the native's name and length (0: its options are optional), no
  // prototype, not constructible. `arguments` is our own object.
  const eyeDropperHooks = {
    open() {
      return eyeDropperCall(this, arguments);
    },
  };
  if (eyeDropperProto !== null && typeof eyeDropperProto.open === 'function') {
    eyeDropperOpen = eyeDropperProto.open;
    eyeDropperProto.open = eyeDropperHooks.open;
    const abortProto = protoOf('AbortController');
    if (abortProto !== null && typeof abortProto.abort === 'function') {
      NewAbortController = win.AbortController;
      abortOf = abortProto.abort;
      signalOf = getterOf(abortProto, 'signal');
    }
  }
  addDisguiser((as) => {
    if (eyeDropperOpen !== null) as(eyeDropperHooks.open, 'open');
  });
