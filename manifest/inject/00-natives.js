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
  const deleteProperty = Reflect.deleteProperty;

  const MAX_MESSAGE = 4096;
  // Where background.js's new-document script leaves the config (see there).
  const HANDOFF = '__unmodalConfig';
  const baseURI = getOwnPropertyDescriptor(Node.prototype, 'baseURI').get;
  const loc = win.location;
  // The URL rules match: the document's, or for about:blank/srcdoc frames their creator's.
  const pageUrl = () => {
    const href = loc.href;
    return apply(indexOf, href, ['about:']) === 0 ? apply(baseURI, doc, []) : href;
  };
  const KIND_NAMES = ['alert', 'confirm', 'prompt', 'beforeunload'];
  const OUTCOME_NAMES = ['native', 'accepted', 'dismissed'];
  const BY_NAMES = ['pilot_off', 'rule', 'default_policy', 'policy'];
  const BY_POLICY = 3;
