// Unmodal page hook: MAIN world, document_start, every frame.
// Replaces alert/confirm/prompt so that the Rust engine (wasm2js, below) answers them
// synchronously, and reports each dialog to content.js over a secret-named DOM event.
// Everything the page could later tamper with is captured before any page script runs,
// and nothing is left on the page's objects except the replaced functions themselves.
(() => {
  'use strict';

  // ---- Pristine natives (the page has not run yet) ----
  const win = window;
  const doc = document;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  const apply = Reflect.apply;
  const fnProto = Function.prototype;
  const nativeToString = fnProto.toString;
  const natives = { alert: win.alert, confirm: win.confirm, prompt: win.prompt };
  const NewCustomEvent = CustomEvent;
  const dispatchEvent = EventTarget.prototype.dispatchEvent;
  const addEventListener = EventTarget.prototype.addEventListener;
  const detailOf = getOwnPropertyDescriptor(CustomEvent.prototype, 'detail').get;
  const NewTypeError = TypeError;
  const NativeError = Error;
  const captureStackTrace = Error.captureStackTrace;
  const indexOf = String.prototype.indexOf;
  // Brand check as the natives do it: any Window (another frame's too) is a valid receiver.
  const windowGetter = getOwnPropertyDescriptor(win, 'window').get;
  const getRandomValues = Crypto.prototype.getRandomValues;
  const cryptoObj = crypto;
  const NewUint32Array = Uint32Array;
  const NewUint16Array = Uint16Array;
  const eventProto = Event.prototype;
  const nativePreventDefault = eventProto.preventDefault;
  const unloadProto = BeforeUnloadEvent.prototype;
  const returnValueDesc = getOwnPropertyDescriptor(unloadProto, 'returnValue');
  const hasBeenActive = getOwnPropertyDescriptor(UserActivation.prototype, 'hasBeenActive').get;
  const userActivation = navigator.userActivation;
  const setTimeoutNative = win.setTimeout;
  const NewMap = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const charCodeAt = String.prototype.charCodeAt;
  const fromCharCode = String.fromCharCode;
  const sliceString = String.prototype.slice;
  const numberToString = Number.prototype.toString;
  const now = Date.now;
  const queueMicrotask = win.queueMicrotask;

  const MAX_MESSAGE = 4096;
  const baseURI = getOwnPropertyDescriptor(Node.prototype, 'baseURI').get;
  const loc = win.location;
  // The URL rules match: the document's, or for about:blank/srcdoc frames their creator's.
  const pageUrl = () => {
    const href = loc.href;
    return apply(indexOf, href, ['about:']) === 0 ? apply(baseURI, doc, []) : href;
  };
  const KIND_NAMES = ['alert', 'confirm', 'prompt', 'beforeunload'];
  const OUTCOME_NAMES = ['native', 'accepted', 'dismissed'];
  const BY_NAMES = ['pilot_off', 'rule', 'default_policy'];

  // ---- Engine (Rust → wasm32 → wasm2js), built on the first dialog ----
  // Most frames never show a dialog, and building the engine costs more than the rest of
  // this file. The factory sees only globals captured now, so a page that later replaces
  // Math, typed arrays or String methods can neither break it nor see it being built.
  const ENGINE_GLOBALS = [
    { __proto__: null, abs: Math.abs, ceil: Math.ceil, clz32: Math.clz32, floor: Math.floor, fround: Math.fround,
      imul: Math.imul, max: Math.max, min: Math.min, sqrt: Math.sqrt, trunc: Math.trunc },
    ArrayBuffer, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array, Float32Array, Float64Array,
    { __proto__: null, create: Object.create, prototype: Object.prototype },
    Error,
    (str, i) => apply(charCodeAt, str, [i]),
  ];
  // eslint-disable-next-line no-shadow
  const factory = (Math, ArrayBuffer, Int8Array, Int16Array, Int32Array, Uint8Array, Uint16Array, Uint32Array,
    Float32Array, Float64Array, Object, Error, charCodeAtOf) => {
    /*@ENGINE@*/
  };
  let engine = null;
  let io = null;
  let enabled = 0;
  let rules = null; // the latest rules wire string, loaded when the engine is built
  const loadRules = (cfg) => {
    const n = cfg.length - 1;
    if (n <= 0 || n > io.length) return;
    for (let i = 0; i < n; i++) io[i] = apply(charCodeAt, cfg, [i + 1]);
    engine.load_rules(n);
  };
  const boot = () => {
    engine = apply(factory, undefined, ENGINE_GLOBALS);
    io = new NewUint16Array(engine.memory.buffer, engine.io_ptr(), engine.io_cap());
    engine.set_enabled(enabled);
    if (rules !== null) loadRules(rules);
  };

  // ---- Secret channel to content.js (ISOLATED world) ----
  const rnd = new NewUint32Array(4);
  apply(getRandomValues, cryptoObj, [rnd]);
  let secret = 'u';
  for (let i = 0; i < 4; i++) secret += apply(numberToString, rnd[i], [36]);
  const toIsolated = secret + 'i';

  // Reports leave in batches after the current task, so a dialog call costs only the
  // decision. A native dialog's "open" goes at once (the call is about to block).
  // Flood limit: a token bucket lets at most RATE reports a second (bursts of RATE) leave
  // this frame; the rest are counted, exactly, and the count travels with the next batch.
  // Reports that spend a once-rule or close a native dialog always go (the host needs them,
  // and they cannot flood: a rule set is small, a native dialog waits for a human).
  const RATE = 10;
  let tokens = RATE;
  let refilled = now();
  let queue = [];
  let folded = 0;
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    const detail = { __proto__: null, reports: queue, folded };
    queue = [];
    folded = 0;
    apply(dispatchEvent, doc, [new NewCustomEvent(toIsolated, { __proto__: null, detail })]);
  };
  const admit = () => {
    const t = now();
    tokens = tokens + ((t - refilled) * RATE) / 1000;
    if (tokens > RATE) tokens = RATE;
    refilled = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const post = (report, urgent, always) => {
    if (always || admit()) queue[queue.length] = report;
    else folded++;
    if (urgent) flush();
    else if (!flushQueued) {
      flushQueued = true;
      apply(queueMicrotask, win, [flush]);
    }
  };

  // Config from content.js: "<pilot 0|1|-><rules wire string or nothing>".
  apply(addEventListener, doc, [secret + 'm', (event) => {
    const cfg = apply(detailOf, event, []);
    if (typeof cfg !== 'string' || cfg.length === 0) return;
    const flag = apply(charCodeAt, cfg, [0]);
    if (flag === 48 || flag === 49) {
      enabled = flag - 48;
      if (engine !== null) engine.set_enabled(enabled);
    }
    if (cfg.length > 1) {
      rules = cfg;
      if (engine !== null) loadRules(cfg);
    }
  }]);
  // content.js listens for this one event only, before any page script can exist.
  apply(dispatchEvent, doc, [new NewCustomEvent('unmodal:hello', { __proto__: null, detail: secret })]);

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
    const text = d.get ? apply(d.get, err, []) : d.value;
    return typeof text === 'string' ? { d, text } : null;
  };
  const setStack = (err, { d }, text) => {
    if (d.set) apply(d.set, err, [text]);
    else defineProperty(err, 'stack', { value: text, writable: d.writable, enumerable: d.enumerable, configurable: d.configurable });
  };
  // This script's URL as V8 prints it in frames, so our frames can be cut out.
  const ownUrl = (() => {
    const text = stackText(new NativeError()) ?? { text: '' };
    const start = apply(indexOf, text.text, ['chrome-extension://']);
    const end = start < 0 ? -1 : apply(indexOf, text.text, ['.js', start]);
    return end < 0 ? null : apply(sliceString, text.text, [start, end + 3]);
  })();
  // Page code we call (an argument's toString) may throw; its stack must not show us.
  const withoutOwnFrames = (err) => {
    const st = ownUrl === null ? null : stackText(err);
    if (st === null) return err;
    let out = '';
    let at = 0;
    while (at <= st.text.length) {
      let nl = apply(indexOf, st.text, ['\n', at]);
      if (nl < 0) nl = st.text.length;
      const line = apply(sliceString, st.text, [at, nl]);
      if (apply(indexOf, line, [ownUrl]) < 0) out += (at === 0 ? '' : '\n') + line;
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

  // ---- Decisions ----
  let seq = 0;
  // WebIDL DOMString conversion, with the natives' errors.
  const toText = (v, fn) => {
    if (typeof v === 'symbol') throw bindingError(fn, 'Cannot convert a Symbol value to a string');
    try {
      return `${v}`;
    } catch (err) {
      throw withoutOwnFrames(err);
    }
  };

  const ruleText = (slot) => {
    const n = engine.rule_text(slot);
    if (n < 0) return null;
    let s = '';
    for (let i = 0; i < n; i++) s += fromCharCode(io[i]);
    return s;
  };


  function handle(kind, self, args, fn) {
    if (self !== undefined && self !== null && self !== win) {
      try {
        apply(windowGetter, self, []);
      } catch {
        throw illegalInvocation(fn);
      }
    }
    const message = kind === 0
      ? (args.length === 0 ? '' : toText(args[0], fn))
      : (args[0] === undefined ? '' : toText(args[0], fn));
    const defaultText = kind === 2 ? (args[1] === undefined ? '' : toText(args[1], fn)) : null;
    const cut = message.length > MAX_MESSAGE;

    if (engine === null) boot();
    // Rules that match on the message or the page URL need them in the engine's buffer.
    const needs = engine.needs();
    let m = 0;
    let u = 0;
    if (needs & 1) {
      m = cut ? MAX_MESSAGE : message.length;
      for (let i = 0; i < m; i++) io[i] = apply(charCodeAt, message, [i]);
    }
    if (needs & 2) {
      const url = pageUrl();
      u = url.length < MAX_MESSAGE ? url.length : MAX_MESSAGE;
      for (let i = 0; i < u; i++) io[m + i] = apply(charCodeAt, url, [i]);
    }
    const packed = engine.decide(kind, m, u);
    const outcome = packed & 3;
    const slot = (packed >>> 8) - 1;
    const accepted = outcome === 1;
    let value;
    if (kind === 1) value = accepted;
    else if (kind === 2) value = accepted ? (slot >= 0 ? ruleText(slot) ?? '' : '') : null;

    // Reports are built whole, with no prototype: no page-defined setter or getter on
    // Object.prototype ever sees them.
    const id = ++seq;
    post({
      __proto__: null,
      seq: id,
      phase: outcome === 0 ? 'open' : 'decided',
      kind: KIND_NAMES[kind],
      message: cut ? apply(sliceString, message, [0, MAX_MESSAGE]) : message,
      message_cut: cut,
      default_text: defaultText,
      decided_by: BY_NAMES[(packed >>> 2) & 3],
      rules_loaded: ((packed >>> 4) & 1) === 1,
      rule_id: slot >= 0 ? engine.rule_id(slot) : null,
      outcome: OUTCOME_NAMES[outcome],
      accepted: outcome === 0 ? null : accepted,
      value: kind === 2 && outcome !== 0 ? value : null,
      t: now(),
    }, outcome === 0, ((packed >>> 5) & 1) === 1);
    if (outcome !== 0) return value;

    // Pilot off: the browser's own dialog; its answer is reported when it closes.
    const nativeArgs = kind === 2 ? [message, defaultText] : [message];
    const result = apply(natives[KIND_NAMES[kind]], win, nativeArgs);
    post({
      __proto__: null,
      seq: id,
      phase: 'closed',
      kind: KIND_NAMES[kind],
      accepted: kind === 0 || (result !== false && result !== null),
      value: kind === 2 ? result : null,
      t: now(),
    }, false, true);
    return result;
  }

  // ---- beforeunload (R8) ----
  // A capturing listener registered before any page script marks the event being
  // dispatched. The page's handlers still run (their side effects, such as saving a
  // draft, happen), but when one asks for the leave prompt (preventDefault, a non-empty
  // returnValue, or a string returned from onbeforeunload) the engine decides: a rule that
  // accepts swallows the ask, so navigation proceeds; otherwise the browser's own prompt
  // stands. The first ask of each dispatch is reported, with whether the browser would
  // show the prompt (it needs a user activation on the page).
  let unloading = null;
  let unloadSuppress = null;
  apply(addEventListener, win, ['beforeunload', (event) => {
    unloading = event;
    unloadSuppress = null;
    apply(setTimeoutNative, win, [() => { unloading = null; }, 0]);
  }, true]);

  // Whether to swallow this ask; decided (and reported) once per dispatch.
  const unloadAsk = () => {
    if (unloadSuppress !== null) return unloadSuppress;
    if (engine === null) boot();
    const packed = engine.decide(3, 0, 0);
    const outcome = packed & 3;
    const slot = (packed >>> 8) - 1;
    unloadSuppress = outcome === 1;
    post({
      __proto__: null,
      seq: ++seq,
      phase: 'decided',
      kind: 'beforeunload',
      message: '',
      message_cut: false,
      default_text: null,
      decided_by: BY_NAMES[(packed >>> 2) & 3],
      rules_loaded: ((packed >>> 4) & 1) === 1,
      rule_id: slot >= 0 ? engine.rule_id(slot) : null,
      outcome: OUTCOME_NAMES[outcome],
      accepted: unloadSuppress ? true : null,
      value: null,
      asked: true,
      would_show: !unloadSuppress && apply(hasBeenActive, userActivation, []),
      t: now(),
    }, true, true);
    return unloadSuppress;
  };

  const unloadHooks = {
    preventDefault() {
      if (this === unloading && unloading !== null && unloadAsk()) return undefined;
      try {
        return apply(nativePreventDefault, this, []);
      } catch (err) {
        captureStackTrace(err, unloadHooks.preventDefault);
        throw err;
      }
    },
    set returnValue(value) {
      if (this === unloading && unloading !== null && `${value}` !== '' && unloadAsk()) return;
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
          throw withoutOwnFrames(err);
        }
        if (event === unloading && unloading !== null && r !== undefined && r !== null && unloadAsk()) return undefined;
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

  // Method shorthand: no prototype, not constructible, name and length (0) of the natives.
  const replacements = {
    alert(...args) { return handle(0, this, args, replacements.alert); },
    confirm(...args) { return handle(1, this, args, replacements.confirm); },
    prompt(...args) { return handle(2, this, args, replacements.prompt); },
    toString(...args) {
      let src;
      try {
        src = apply(nativeToString, this, args);
      } catch (err) {
        throw nativeShapedError(err, replacements.toString, this);
      }
      // Keyed by source text, so every same-origin realm's toString (each frame runs this
      // same file) also prints native source for another realm's replacements.
      const nativeSrc = apply(mapGet, disguises, [src]);
      return nativeSrc === undefined ? src : nativeSrc;
    },
  };

  const disguises = new NewMap();
  const disguise = (fn, name) => {
    apply(mapSet, disguises, [apply(nativeToString, fn, []), `function ${name}() { [native code] }`]);
  };

  const install = (owner, name, fn) => {
    const desc = getOwnPropertyDescriptor(owner, name);
    if (!desc || typeof desc.value !== 'function') return;
    disguise(fn, name);
    defineProperty(owner, name, { value: fn, writable: desc.writable, enumerable: desc.enumerable, configurable: desc.configurable });
  };
  install(win, 'alert', replacements.alert);
  install(win, 'confirm', replacements.confirm);
  install(win, 'prompt', replacements.prompt);
  install(fnProto, 'toString', replacements.toString);
  install(eventProto, 'preventDefault', unloadHooks.preventDefault);

  // Accessors: replace only the parts we hook, keep the rest (and the flags) as they were.
  const installAccessor = (owner, name, desc, hooks, parts) => {
    if (!owner || !desc) return;
    const mine = getOwnPropertyDescriptor(hooks, name);
    const next = { get: desc.get, set: desc.set, enumerable: desc.enumerable, configurable: desc.configurable };
    for (const part of parts) {
      disguise(mine[part], `${part} ${name}`);
      next[part] = mine[part];
    }
    defineProperty(owner, name, next);
  };
  installAccessor(unloadProto, 'returnValue', returnValueDesc, unloadHooks, ['set']);
  installAccessor(handlerOwner, 'onbeforeunload', handlerDesc, handlerHooks, ['get', 'set']);
})();
