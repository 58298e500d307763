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
  const { defineProperty, getOwnPropertyDescriptor } = Object;
  const apply = Reflect.apply;
  const fnProto = Function.prototype;
  const nativeToString = fnProto.toString;
  const natives = { alert: win.alert, confirm: win.confirm, prompt: win.prompt };
  const NewCustomEvent = CustomEvent;
  const dispatchEvent = EventTarget.prototype.dispatchEvent;
  const addEventListener = EventTarget.prototype.addEventListener;
  const detailOf = getOwnPropertyDescriptor(CustomEvent.prototype, 'detail').get;
  const NewTypeError = TypeError;
  const captureStackTrace = Error.captureStackTrace;
  const getRandomValues = Crypto.prototype.getRandomValues;
  const cryptoObj = crypto;
  const NewUint32Array = Uint32Array;
  const NewMap = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const charCodeAt = String.prototype.charCodeAt;
  const fromCharCode = String.fromCharCode;
  const sliceString = String.prototype.slice;
  const numberToString = Number.prototype.toString;
  const now = Date.now;

  const MAX_MESSAGE = 4096;
  const KIND_NAMES = ['alert', 'confirm', 'prompt', 'beforeunload'];
  const OUTCOME_NAMES = ['native', 'accepted', 'dismissed'];
  const BY_NAMES = ['pilot_off', 'rule', 'default_policy'];

  // ---- Engine (Rust → wasm32 → wasm2js), instantiated now while natives are pristine ----
  const engine = (() => {
    /*@ENGINE@*/
  })();
  const io = new Uint16Array(engine.memory.buffer, engine.io_ptr(), engine.io_cap());

  // ---- Secret channel to content.js (ISOLATED world) ----
  const rnd = new NewUint32Array(4);
  apply(getRandomValues, cryptoObj, [rnd]);
  let secret = 'u';
  for (let i = 0; i < 4; i++) secret += apply(numberToString, rnd[i], [36]);
  const toIsolated = secret + 'i';

  const post = (detail) => {
    apply(dispatchEvent, doc, [new NewCustomEvent(toIsolated, { __proto__: null, detail })]);
  };

  // Config from content.js: "<pilot 0|1|-><rules wire string or nothing>".
  apply(addEventListener, doc, [secret + 'm', (event) => {
    const cfg = apply(detailOf, event, []);
    if (typeof cfg !== 'string' || cfg.length === 0) return;
    const flag = apply(charCodeAt, cfg, [0]);
    if (flag === 48 || flag === 49) engine.set_enabled(flag - 48);
    const n = cfg.length - 1;
    if (n > 0 && n <= io.length) {
      for (let i = 0; i < n; i++) io[i] = apply(charCodeAt, cfg, [i + 1]);
      engine.load_rules(n);
    }
  }]);
  // content.js listens for this one event only, before any page script can exist.
  apply(dispatchEvent, doc, [new NewCustomEvent('unmodal:hello', { __proto__: null, detail: secret })]);

  // ---- Decisions ----
  let seq = 0;
  const toText = (v) => `${v}`; // WebIDL DOMString conversion: throws on Symbol, like the native.

  const ruleText = (slot) => {
    const n = engine.rule_text(slot);
    if (n < 0) return null;
    let s = '';
    for (let i = 0; i < n; i++) s += fromCharCode(io[i]);
    return s;
  };

  const illegalInvocation = (fn) => {
    const err = new NewTypeError('Illegal invocation');
    captureStackTrace(err, fn);
    return err;
  };

  function handle(kind, self, args, fn) {
    if (self !== undefined && self !== null && self !== win) throw illegalInvocation(fn);
    const message = kind === 0
      ? (args.length === 0 ? '' : toText(args[0]))
      : (args[0] === undefined ? '' : toText(args[0]));
    const defaultText = kind === 2 ? (args[1] === undefined ? '' : toText(args[1])) : null;
    const cut = message.length > MAX_MESSAGE;

    const packed = engine.decide(kind);
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
    });
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
    });
    return result;
  }

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
        captureStackTrace(err, replacements.toString);
        throw err;
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
})();
