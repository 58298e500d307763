  // @gives win, doc, defineProperty, getOwnPropertyDescriptor, getPrototypeOf, hasOwn, apply, fnProto
  // @gives nativeToString, natives, NewCustomEvent, dispatchEvent, addEventListener, detailOf
  // @gives newDOMException, NewTypeError, NativeError, captureStackTrace, indexOf, NewUint16Array, eventProto
  // @gives nativePreventDefault, eventType, eventPhase, unloadProto, returnValueDesc, NewMap, mapGet
  // @gives mapSet, mapDelete, charCodeAt, fromCharCode, sliceString, queueMicrotask, deleteProperty
  // @gives lateNative, documentProto, MAX_MESSAGE, HANDOFF, pageUrl, protoOf, getterOf, KIND_NAMES, BY_NAMES, BY_POLICY
  // @gives disguisers, addDisguiser
  // ---- Pristine natives (the page has not run yet) ----
  // Every frame pays for what runs here, so only what the page could change before we need
  // it is captured now. [LegacyUnforgeable] members (window.window, window.location and
  // Location's own members) cannot be changed by the page and are read when needed; what
  // only the rare paths need (the user-activation state for a leave prompt) is asked of
  // content.js, whose world the page cannot reach.
  const win = window;
  const doc = document;
  const { defineProperty, getOwnPropertyDescriptor, getPrototypeOf } = Object;
  // Descriptors are read through own members only (a page may define `value` or `get` on
  // Object.prototype).
  const hasOwn = Object.hasOwn;
  const apply = Reflect.apply;
  const fnProto = Function.prototype;
  const nativeToString = fnProto.toString;
  // alert/confirm/prompt as the browser made them; filled as they are replaced (60-install).
  const natives = { __proto__: null };
  // The toString disguises of the parts' replacements, which 60-install makes on the first
  // toString call: each part adds its own, so the install part names none. Null prototype,
  // walked by index (it runs after page scripts).
  const disguisers = { __proto__: null, count: 0 };
  const addDisguiser = (disguise) => {
    disguisers[disguisers.count++] = disguise;
  };
  // Prototypes reached through the document's own chain (HTMLDocument, Document, Node,
  // EventTarget), which exists already: naming `Node` or `EventTarget` would make their
  // interface objects, a cost every frame would pay.
  const documentProto = getPrototypeOf(getPrototypeOf(doc));
  const nodeProto = getPrototypeOf(documentProto);
  const eventTargetProto = getPrototypeOf(nodeProto);
  const NewCustomEvent = CustomEvent;
  const dispatchEvent = eventTargetProto.dispatchEvent;
  const addEventListener = eventTargetProto.addEventListener;
  const detailOf = getOwnPropertyDescriptor(NewCustomEvent.prototype, 'detail').get;
  const NewTypeError = TypeError;
  const NativeError = Error;
  const captureStackTrace = Error.captureStackTrace;
  const indexOf = String.prototype.indexOf;
  const NewUint16Array = Uint16Array;
  const eventProto = Event.prototype;
  const nativePreventDefault = eventProto.preventDefault;
  const eventType = getOwnPropertyDescriptor(eventProto, 'type').get;
  const eventPhase = getOwnPropertyDescriptor(eventProto, 'eventPhase').get;
  const unloadProto = BeforeUnloadEvent.prototype;
  const returnValueDesc = getOwnPropertyDescriptor(unloadProto, 'returnValue');
  const NewMap = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const charCodeAt = String.prototype.charCodeAt;
  const fromCharCode = String.fromCharCode;
  const sliceString = String.prototype.slice;
  const queueMicrotask = win.queueMicrotask;
  const deleteProperty = Reflect.deleteProperty;

  const MAX_MESSAGE = 4096;
  // Where background.js's new-document script leaves the config (see there).
  const HANDOFF = '__unmodalConfig';
  const baseURI = getOwnPropertyDescriptor(nodeProto, 'baseURI').get;
  // The URL rules match: the document's, or for about:blank/srcdoc frames their creator's.
  const pageUrl = () => {
    const href = win.location.href;
    return apply(indexOf, href, ['about:']) === 0 ? apply(baseURI, doc, []) : href;
  };
  // An interface's prototype; null where this frame has no such interface (45-permissions,
  // 46-choosers, at start).
  const protoOf = (name) => {
    const iface = win[name];
    return typeof iface === 'function' ? iface.prototype : null;
  };
  // An accessor's getter as the browser made it (at start, before any page script); null
  // where there is none.
  const getterOf = (owner, name) => {
    const d = owner && getOwnPropertyDescriptor(owner, name);
    return d && typeof d.get === 'function' ? d.get : null;
  };
  // A native looked up late, when first needed (making it at start would cost every
  // frame): taken only if it is still the browser's own of this realm, a function whose
  // source is the native's of that name (a page function, a bound one or a Proxy prints
  // otherwise; no page code runs to ask) and whose prototype is `parent`; else null.
  const lateNative = (fn, name, parent) =>
    typeof fn === 'function' && apply(nativeToString, fn, []) === `function ${name}() { [native code] }` &&
    getPrototypeOf(fn) === parent ? fn : null;
  // A DOMException for a refusal, its interface made on the first one (making it at start
  // would cost every frame about 16 µs): the global if it is still the browser's own, else
  // the constructor of one the browser throws (a page may replace the global, not what the
  // browser throws; a replaced `constructor` there is not taken either). A page that
  // replaced both gets an Error with the same name and message.
  const querySelector = documentProto.querySelector;
  let DOMExceptionNative;
  const newDOMException = (message, name) => {
    if (DOMExceptionNative === undefined) {
      const g = getOwnPropertyDescriptor(win, 'DOMException');
      DOMExceptionNative = g !== undefined && hasOwn(g, 'value') ? lateNative(g.value, 'DOMException', fnProto) : null;
      if (DOMExceptionNative === null) {
        try {
          apply(querySelector, doc, ['']);
        } catch (thrown) {
          const c = getOwnPropertyDescriptor(getPrototypeOf(thrown), 'constructor');
          DOMExceptionNative = c !== undefined && hasOwn(c, 'value') ? lateNative(c.value, 'DOMException', fnProto) : null;
        }
      }
    }
    if (DOMExceptionNative !== null) return new DOMExceptionNative(message, name);
    const err = new NativeError(message);
    deleteProperty(err, 'stack'); // ours; a script's DOMException has none
    defineProperty(err, 'name', { __proto__: null, value: name, writable: true, configurable: true });
    return err;
  };
  const KIND_NAMES = ['alert', 'confirm', 'prompt', 'beforeunload'];
  const BY_NAMES = ['pilot_off', 'rule', 'default_policy', 'policy'];
  const BY_POLICY = 3;
