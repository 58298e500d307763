  // @needs win, apply, NewCustomEvent, dispatchEvent, addEventListener, detailOf, NewMap, mapGet
  // @needs mapSet, mapDelete, secret, toIsolated, admit, fold, defineProperty, withoutOwnFrames
  // @gives ANSWER_ACCEPT, ANSWER_CANCEL, askBrowser, tellSettled, promiseThen, deferred, settle
  // @gives directPromise
  // ---- Asking the browser side (45-permissions, 46-choosers) ----
  // A request goes to content.js as one question, { request, kind, what, method }: `request`
  // its number in this document, `kind` 'permission' or 'device_chooser', `what` the
  // permissions asked (names joined by commas) or the chooser's API ('usb', 'hid', 'serial',
  // 'bluetooth', 'display'), `method` the page's call. content.js takes it (cancels the event)
  // and asks the service worker; the answer comes back on `secret + 'p'` as one number,
  // request * 4 + answer code, and nothing else is read from it.
  //
  // Start-up cost: none (two captures); the answer listener and its map are made on the
  // first request.
  const NewPromise = Promise;
  const promiseThen = Promise.prototype.then;

  // The answer codes, as content.js sends them: 0 native (the browser's own way: a
  // permission's content setting is in place, or none was set; a chooser stands), 1 grant
  // (a permission) or open (an app link), 2 deny (a permission) or cancel (a chooser, an app
  // link). A permission's real call follows whatever the answer (the browser's setting
  // already says grant or deny); a chooser acts on cancel, an app link on open.
  const ANSWER_NATIVE = 0;
  const ANSWER_ACCEPT = 1;
  const ANSWER_CANCEL = 2;
  let requestSeq = 0;
  let waiting = null; // request number -> continuation(answer code)
  const onAnswer = (event) => {
    const d = apply(detailOf, event, []);
    if (typeof d !== 'number' || d < 4) return;
    const code = d % 4;
    const request = (d - code) / 4;
    const go = apply(mapGet, waiting, [request]);
    if (go === undefined) return;
    apply(mapDelete, waiting, [request]);
    go(code);
  };
  // Asks for a decision; `go(code)` runs once it came. Returns the request's number (0: not
  // asked). The dialogs' flood limit applies: past it a request is not asked but counted,
  // and gets the answer that needs nobody (a permission: the browser's own; a chooser or an
  // app link: cancel), so a page calling in a loop cannot push the agent's records out of
  // the history.
  // Nobody to take it (no content.js): the browser's own way.
  const askBrowser = (kind, what, method, go) => {
    if (!admit()) {
      fold();
      go(kind === 'permission' ? ANSWER_NATIVE : ANSWER_CANCEL);
      return 0;
    }
    if (waiting === null) {
      waiting = new NewMap();
      apply(addEventListener, win, [secret + 'p', onAnswer]);
    }
    const request = ++requestSeq;
    apply(mapSet, waiting, [request, go]);
    const detail = { __proto__: null, request, kind, what, method };
    const taken = !apply(dispatchEvent, win, [new NewCustomEvent(toIsolated, { __proto__: null, detail, cancelable: true })]);
    if (!taken) {
      apply(mapDelete, waiting, [request]);
      go(ANSWER_NATIVE);
    }
    return request;
  };
  // A chooser asked about settled by itself first (a person picked, the call failed): the
  // worker closes its request.
  const tellSettled = (request) => {
    apply(dispatchEvent, win, [new NewCustomEvent(toIsolated, { __proto__: null, detail: { __proto__: null, settled: request } })]);
  };

  // A promise of ours for the page, settled from outside the executor: a native called in it
  // would have `new Promise` in its stacks.
  const deferred = () => {
    const d = { __proto__: null, promise: null, resolve: null, reject: null };
    d.promise = new NewPromise((resolve, reject) => {
      d.resolve = resolve;
      d.reject = reject;
    });
    return d;
  };
  // A promise-returning native: the page holds a promise of ours that settles as the
  // native's does, its error without our frames (a TypeError made during the call has them).
  // The native's promise never reaches the page: an own `constructor` of undefined keeps
  // `then` from reading the page's Promise.prototype.constructor. `top`: the hook (on the
  // stack when called from it; once asked, from a listener, it is not, and nothing is kept).
  const settle = (native, self, args, resolve, reject, top) => {
    let p;
    try {
      p = apply(native, self, args);
    } catch (err) {
      reject(withoutOwnFrames(err, top));
      return;
    }
    if (p === null || typeof p !== 'object') {
      resolve(p);
      return;
    }
    defineProperty(p, 'constructor', { __proto__: null, value: undefined, configurable: true });
    const rejected = (err) => reject(withoutOwnFrames(err, rejected));
    apply(promiseThen, p, [resolve, rejected]);
  };
  // Called now (nothing to ask: a wrong receiver, arguments that ask for nothing).
  const directPromise = (native, self, args, top) => {
    const d = deferred();
    settle(native, self, args, d.resolve, d.reject, top);
    return d.promise;
  };
