  // @needs win, apply, defineProperty, queueMicrotask, withoutOwnFrames
  // @needs ANSWER_NATIVE, ANSWER_ACCEPT, askBrowser, tellSettled, promiseThen, deferred
  // @gives askIfPending
  // ---- A call that opens something only a person answers (device choosers, the eye dropper) ----
  // No extension can list, pick in or close these, so the browser's own code makes the
  // call: it converts and checks the arguments, the gesture and the permissions policy, and
  // every such failure comes back settled within a microtask. A call still pending two
  // microtasks later opened its chooser. That one is asked about (44-ask) like a
  // permission (rule, policy, agent, watchdog): an accept or the browser's own way (pilot
  // off) leaves it to the browser; a refusal, or nobody answering, ends it with the kind's
  // `cancel(d, top)`, the browser's own cancel result given to the page's promise `d` (an
  // error's stack captured from above `top`). Whichever
  // settles first wins: a person who picks in a headful browser answers it.
  //
  // `hook` is the replacement the page called (its frames are cut from errors); `ready`,
  // if given, is called with the asking function and calls it when asking makes sense
  // (Bluetooth: not without an adapter, which fails by itself, later).
  const askIfPending = (native, self, args, hook, kind, what, method, cancel, ready) => {
    const d = deferred();
    let p;
    try {
      p = apply(native, self, args);
    } catch (err) {
      d.reject(withoutOwnFrames(err, hook));
      return d.promise;
    }
    if (p === null || typeof p !== 'object') {
      d.resolve(p);
      return d.promise;
    }
    let done = false;
    let asked = 0;
    const end = () => {
      if (done) return false;
      done = true;
      return true;
    };
    // The browser's chooser answered (or the call failed): the page gets that.
    const settled = () => {
      if (asked !== 0) tellSettled(asked);
    };
    // Named: its stack is re-captured from below it (nothing of the page's is under it).
    const rejected = (err) => {
      if (!end()) return;
      d.reject(withoutOwnFrames(err, rejected));
      settled();
    };
    defineProperty(p, 'constructor', { __proto__: null, value: undefined, configurable: true });
    apply(promiseThen, p, [
      (v) => {
        if (!end()) return;
        d.resolve(v);
        settled();
      },
      rejected,
    ]);
    // Named: the kind's cancel captures its error's stack from above it, so no frame of
    // ours shows (the browser's own cancel errors have none).
    const refuse = () => {
      if (end()) cancel(d, refuse);
    };
    const look = () => {
      if (done) return;
      asked = askBrowser(kind, what, method, (code) => {
        // A chooser left open never settles in headless: only the browser's own way or an
        // accept leaves it.
        if (code !== ANSWER_NATIVE && code !== ANSWER_ACCEPT) apply(queueMicrotask, win, [refuse]);
      });
    };
    const start = ready === null ? look : () => { if (!done) ready(look); };
    apply(queueMicrotask, win, [() => apply(queueMicrotask, win, [start])]);
    return d.promise;
  };
