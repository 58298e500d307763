  // @needs win, apply, getOwnPropertyDescriptor, getPrototypeOf, captureStackTrace, eventType
  // @needs eventPhase, nativePreventDefault, returnValueDesc, NewMap, mapGet, mapSet, BY_POLICY
  // @needs engine, boot, ask, post, withoutOwnFrames, decisionReport
  // @gives unloadHooks, returnValueSetter, handlerOwner, handlerDesc, handlerHooks
  // ---- beforeunload (the leave-page prompt) ----
  // The page's handlers still run (their side effects, such as saving a draft, happen),
  // but when one asks for the leave prompt (preventDefault, a non-empty returnValue, or a
  // string returned from onbeforeunload) during the browser's own beforeunload dispatch,
  // the engine decides: a rule that accepts swallows the ask, so navigation proceeds;
  // otherwise the browser's own prompt stands. The first ask of each dispatch is reported,
  // with whether the browser would show the prompt (it needs a user activation on the page).
  // The dispatch is recognised from the event itself (trusted, of type beforeunload, being
  // dispatched), not by a listener of ours: a beforeunload listener costs every frame
  // (the browser is told of it) and makes every navigation of the frame wait for it.
  const dispatchingUnload = (event) => {
    try {
      if (apply(eventType, event, []) !== 'beforeunload' || apply(eventPhase, event, []) === 0) return false;
    } catch {
      return false; // not an event: the native call reports that
    }
    // isTrusted is an own, unforgeable member of every event: its getter is the browser's.
    const trusted = getOwnPropertyDescriptor(event, 'isTrusted');
    return trusted !== undefined && typeof trusted.get === 'function' && apply(trusted.get, event, []) === true;
  };
  let unloadEvent = null;
  let unloadSuppress = null;

  // Whether to swallow this ask; decided (and reported) once per dispatch.
  const unloadAsk = (event) => {
    if (event === unloadEvent) return unloadSuppress;
    if (engine === null) boot();
    const packed = engine.decide(3, 0, 0);
    unloadEvent = event;
    unloadSuppress = (packed & 3) === 1;
    const wouldShow = !unloadSuppress && ask('active');
    // Under a policy the debugger session answers the browser's prompt and reports it.
    if (wouldShow && ((packed >>> 2) & 3) === BY_POLICY) return unloadSuppress;
    const report = decisionReport(3, packed, '', null, unloadSuppress ? true : null, null);
    report.would_show = wouldShow;
    post(report, true, true);
    return unloadSuppress;
  };

  const unloadHooks = {
    preventDefault() {
      if (dispatchingUnload(this) && unloadAsk(this)) return undefined;
      try {
        return apply(nativePreventDefault, this, []);
      } catch (err) {
        captureStackTrace(err, unloadHooks.preventDefault);
        throw err;
      }
    },
    set returnValue(value) {
      if (dispatchingUnload(this) && `${value}` !== '' && unloadAsk(this)) return;
      try {
        apply(returnValueDesc.set, this, [value]);
      } catch (err) {
        captureStackTrace(err, returnValueSetter);
        throw err;
      }
    },
  };
  const returnValueSetter = getOwnPropertyDescriptor(unloadHooks, 'returnValue').set;

  // onbeforeunload: the page's handler is kept (the getter gives it back) and called
  // through a wrapper that can swallow the string it returns.
  const handlerOwner = (() => {
    for (let o = win; o !== null; o = getPrototypeOf(o)) if (getOwnPropertyDescriptor(o, 'onbeforeunload')) return o;
    return null;
  })();
  const handlerDesc = handlerOwner && getOwnPropertyDescriptor(handlerOwner, 'onbeforeunload');
  const wrappers = new NewMap(); // page handler -> wrapper
  const originals = new NewMap(); // wrapper -> page handler
  const wrapHandler = (fn) => {
    let w = apply(mapGet, wrappers, [fn]);
    if (w === undefined) {
      w = function (event) {
        let r;
        try {
          r = apply(fn, this, arguments);
        } catch (err) {
          throw withoutOwnFrames(err, w);
        }
        if (r !== undefined && r !== null && dispatchingUnload(event) && unloadAsk(event)) return undefined;
        return r;
      };
      apply(mapSet, wrappers, [fn, w]);
      apply(mapSet, originals, [w, fn]);
    }
    return w;
  };
  const handlerHooks = {
    get onbeforeunload() {
      const w = apply(handlerDesc.get, this, []);
      const fn = apply(mapGet, originals, [w]);
      return fn === undefined ? w : fn;
    },
    set onbeforeunload(value) {
      apply(handlerDesc.set, this, [typeof value === 'function' ? wrapHandler(value) : value]);
    },
  };
