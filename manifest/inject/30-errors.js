  // @needs win, apply, getOwnPropertyDescriptor, defineProperty, getPrototypeOf, hasOwn, NativeError
  // @needs NewTypeError, captureStackTrace, indexOf, sliceString
  // @gives withoutOwnFrames, nativeShapedError, bindingError, checkWindow
  // ---- Errors: whatever a replacement throws looks as if the native had thrown it ----
  // Stacks are read only while the page has no Error.prepareStackTrace (else reading would
  // run page code with our frames); descriptors only, so no page getter ever runs.
  const dataValue = (obj, key) => {
    const d = getOwnPropertyDescriptor(obj, key);
    return d && 'value' in d ? d : null;
  };
  const stackText = (err) => {
    if (getOwnPropertyDescriptor(NativeError, 'prepareStackTrace') !== undefined) return null;
    const d = (typeof err === 'object' || typeof err === 'function') && err !== null ? getOwnPropertyDescriptor(err, 'stack') : undefined;
    if (!d) return null;
    // Own members only: a page may define `get` or `value` on Object.prototype.
    const text = hasOwn(d, 'get') ? (typeof d.get === 'function' ? apply(d.get, err, []) : undefined) : d.value;
    return typeof text === 'string' ? { d, text } : null;
  };
  const setStack = (err, { d }, text) => {
    if (hasOwn(d, 'set') && typeof d.set === 'function') apply(d.set, err, [text]);
    else {
      const writable = hasOwn(d, 'writable') ? d.writable : true;
      defineProperty(err, 'stack', { __proto__: null, value: text, writable, enumerable: d.enumerable, configurable: d.configurable });
    }
  };
  // This script's URL as V8 prints it in frames, so our frames can be cut out. Found on
  // first need (formatting a stack costs every frame otherwise), kept once found.
  let ownUrlFound = null;
  const ownUrl = () => {
    if (ownUrlFound !== null) return ownUrlFound;
    const text = stackText(new NativeError()) ?? { text: '' };
    const start = apply(indexOf, text.text, ['chrome-extension://']);
    const end = start < 0 ? -1 : apply(indexOf, text.text, ['.js', start]);
    if (end >= 0) ownUrlFound = apply(sliceString, text.text, [start, end + 3]);
    return ownUrlFound;
  };
  // V8's `stack` getter in this realm (its errors' own accessor), found on first need.
  let v8StackGet = null;
  // A page's own Error.prepareStackTrace is handed the frames themselves (V8 formats on the
  // first read, calling it): no text to cut. So the stack is captured again from below
  // `top`, the outermost function of ours on the stack now: from a hook, the page's frames
  // remain (as the native's); from a reaction of ours, none do. Formats nothing (the page's
  // function runs when the page reads, as without us); only V8's own stack is re-captured
  // (a value without one would get a property it never had). Without a `top` (a caller not
  // saying where ours start) nothing is done: capturing from here would add frames of ours.
  const recapture = (err, top) => {
    if (typeof top !== 'function') return err;
    if (v8StackGet === null) v8StackGet = getOwnPropertyDescriptor(new NativeError(), 'stack').get;
    try {
      const d = getOwnPropertyDescriptor(err, 'stack');
      if (d !== undefined && hasOwn(d, 'get') && d.get === v8StackGet) captureStackTrace(err, top);
    } catch {
      // A primitive or a frozen error: left as it is.
    }
    return err;
  };
  // An error made during our call (by a native, or page code we call: an argument's
  // toString) must not show us; `top`: the outermost function of ours running now.
  const withoutOwnFrames = (err, top) => {
    if (getOwnPropertyDescriptor(NativeError, 'prepareStackTrace') !== undefined) return recapture(err, top);
    const url = ownUrl();
    const st = url === null ? null : stackText(err);
    if (st === null) return err;
    let out = '';
    let at = 0;
    while (at <= st.text.length) {
      let nl = apply(indexOf, st.text, ['\n', at]);
      if (nl < 0) nl = st.text.length;
      const line = apply(sliceString, st.text, [at, nl]);
      if (apply(indexOf, line, [url]) < 0) out += (at === 0 ? '' : '\n') + line;
      at = nl + 1;
    }
    setStack(err, st, out);
    return err;
  };
  const PRIMITIVE_TYPES = { __proto__: null, number: 'Number', string: 'String', boolean: 'Boolean', symbol: 'Symbol', bigint: 'BigInt' };
  // V8's name for a receiver in a builtin's frame: the nearest `constructor`'s name.
  const receiverType = (v) => {
    if (v === null || v === undefined) return '';
    const prim = PRIMITIVE_TYPES[typeof v];
    if (prim !== undefined) return prim + '.';
    for (let o = v, depth = 0; o !== null && depth < 64; o = getPrototypeOf(o), depth++) {
      const ctor = dataValue(o, 'constructor');
      if (ctor === null) continue;
      const name = typeof ctor.value === 'function' ? dataValue(ctor.value, 'name') : null;
      if (name !== null && typeof name.value === 'string' && name.value !== '') return name.value + '.';
      break;
    }
    return 'Object.';
  };
  // A builtin's error has the builtin's own frame on top, then the caller's. Ours would
  // show our frame there: drop it (captureStackTrace) and put the builtin's back.
  const nativeShapedError = (err, fn, receiver) => {
    captureStackTrace(err, fn);
    const limit = dataValue(NativeError, 'stackTraceLimit');
    const st = stackText(err);
    if (st === null || limit === null || typeof limit.value !== 'number' || limit.value < 1) return err;
    const head = apply(indexOf, st.text, ['\n    at ']);
    if (head < 0) return err;
    let end = head;
    for (let n = 1; n < limit.value && end >= 0; n++) end = apply(indexOf, st.text, ['\n', end + 1]);
    const frames = end < 0 ? apply(sliceString, st.text, [head]) : apply(sliceString, st.text, [head, end]);
    const builtin = `\n    at ${receiverType(receiver)}${fn.name} (<anonymous>)`;
    setStack(err, st, apply(sliceString, st.text, [0, head]) + builtin + frames);
    return err;
  };
  // Blink's bindings: the stack keeps V8's message, `message` gets Blink's prefix.
  const bindingError = (fn, text) => {
    const err = new NewTypeError(text);
    captureStackTrace(err, fn);
    stackText(err); // formats the stack now, with the message it has now
    const m = getOwnPropertyDescriptor(err, 'message');
    defineProperty(err, 'message', { ...m, __proto__: null, value: `Failed to execute '${fn.name}' on 'Window': ${text}` });
    return err;
  };
  const illegalInvocation = (fn) => {
    const err = new NewTypeError('Illegal invocation');
    captureStackTrace(err, fn);
    return err;
  };
  // The brand check a Window method makes of its receiver: any Window (another frame's too),
  // or none, is valid; anything else is an illegal invocation of `fn`.
  const checkWindow = (self, fn) => {
    if (self === undefined || self === null || self === win) return;
    try {
      apply(getOwnPropertyDescriptor(win, 'window').get, self, []);
    } catch {
      throw illegalInvocation(fn);
    }
  };
