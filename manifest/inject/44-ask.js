  // @needs win, apply, NewCustomEvent, dispatchEvent, addEventListener, detailOf, NewMap, mapGet
  // @needs mapSet, mapDelete, secret, toIsolated, admit, fold, defineProperty, withoutOwnFrames
  // @needs queueMicrotask, captureStackTrace, newDOMException
  // @gives ANSWER_NATIVE, ANSWER_ACCEPT, ANSWER_NONE, askBrowser, tellSettled, promiseThen, deferred, settle
  // @gives directPromise, react, refuseAsBrowser
  // ---- Asking the browser side (45 to 49: permissions, choosers, app links, passkeys, payment, storage access, print) ----
  // A request goes to content.js as one question, { request, kind, what, method }: `request`
  // its number in this document, `kind` the prompt's ('permission', 'device_chooser',
  // 'app_link', 'passkey', 'print'), `what` what it is about (permission names joined by
  // commas, a chooser's API, a link's URL, a relying party), `method` the page's call.
  // content.js takes it (cancels the event) and asks the service worker; the answer comes
  // back on `secret + 'p'` as one number, request * 4 + answer code, and nothing else is
  // read from it.
  //
  // Start-up cost: none (two captures); the answer listener and its map are made on the
  // first request.
  const NewPromise = Promise;
  const promiseThen = Promise.prototype.then;

  // The answer codes, as content.js sends them: 0 native (the browser's own way), 1 accept
  // (grant a permission, open a link), 2 refuse (deny, cancel), 3 none: nobody answered (the
  // flood limit, or no worker), and each kind takes its own safe way (a permission: the
  // browser's; a chooser, a link, a passkey: refused).
  const ANSWER_NATIVE = 0;
  const ANSWER_ACCEPT = 1;
  const ANSWER_NONE = 3;
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
  // and gets `ANSWER_NONE`, so a page calling in a loop cannot push the agent's records out
  // of the history. Nobody to take it (no content.js, so no pilot either): the browser's
  // own way.
  const askBrowser = (kind, what, method, go) => {
    if (!admit()) {
      fold();
      go(ANSWER_NONE);
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
    const rejected = (err) => reject(withoutOwnFrames(err, rejected));
    react(p, resolve, rejected);
  };
  // Reacts to a promise of the browser's without running page code: an own `constructor`
  // of undefined keeps `then` from reading the page's Promise.prototype.constructor.
  const react = (p, fulfilled, rejected) => {
    defineProperty(p, 'constructor', { __proto__: null, value: undefined, configurable: true });
    apply(promiseThen, p, [fulfilled, rejected]);
  };
  // Rejects with a refusal of the browser's own kind: a DOMException whose `stack` has no
  // frames, as the browser makes one in a task of its own (a script's has no `stack`). Made
  // in a microtask of its own, so capturing from above `make` leaves none of ours.
  const refuseAsBrowser = (reject, message, name) => {
    const make = () => {
      const err = newDOMException(message, name);
      captureStackTrace(err, make);
      reject(err);
    };
    apply(queueMicrotask, win, [make]);
  };
  // Called now (nothing to ask: a wrong receiver, arguments that ask for nothing).
  const directPromise = (native, self, args, top) => {
    const d = deferred();
    settle(native, self, args, d.resolve, d.reject, top);
    return d.promise;
  };
