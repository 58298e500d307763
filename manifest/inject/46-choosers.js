  // @needs apply, defineProperty, captureStackTrace, protoOf, addDisguiser, newDOMException
  // @needs promiseThen, askIfPending
  // ---- Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth; the screen-share picker) ----
  // No extension can list, pick or cancel a chooser (chrome.debugger refuses the
  // DeviceAccess domain), and in headless Chromium one opened after a gesture never settles.
  // So the browser makes the call and a call still pending two microtasks later opened a
  // chooser (45-pending-call); the host's answer is cancel (it never accepts one), and the
  // page gets the browser's own cancel result. Pilot off, the browser's chooser stands.
  // getDisplayMedia's picker (screen, window or tab) is one more
  // chooser: it needs no gesture, and in headless it never settles either.
  // The browser's results for a cancelled chooser (measured: a second chooser in a tab
  // cancels the first; Bluetooth's from Blink's error table; the picker's is the refusal
  // Blink gives any media request the user denied, as getUserMedia's). `stack`: whether the
  // browser's error has one (USB's and Serial's do; a denied getUserMedia's has none; Bluetooth
  // makes all its errors one way, and its "Bluetooth adapter not available." has none).
  const CANCELS = [
    { __proto__: null, api: 'usb', iface: 'USB', method: 'requestDevice', name: 'NotFoundError', message: "Failed to execute 'requestDevice' on 'USB': No device selected.", stack: true },
    { __proto__: null, api: 'hid', iface: 'HID', method: 'requestDevice', name: null, message: null, stack: false },
    { __proto__: null, api: 'serial', iface: 'Serial', method: 'requestPort', name: 'NotFoundError', message: "Failed to execute 'requestPort' on 'Serial': No port selected by the user.", stack: true },
    { __proto__: null, api: 'bluetooth', iface: 'Bluetooth', method: 'requestDevice', name: 'NotFoundError', message: 'User cancelled the requestDevice() chooser.', stack: false },
    { __proto__: null, api: 'display', iface: 'MediaDevices', method: 'getDisplayMedia', name: 'NotAllowedError', message: 'Permission denied', stack: false },
  ];
  const chooserNatives = { __proto__: null };
  let availabilityOf; // Bluetooth.prototype.getAvailability, where Bluetooth is exposed

  // Each chooser's cancel result. The browser's own cancel errors have a `stack` (V8's
  // accessor, as captureStackTrace makes it) with no frames: they are made in a task of
  // the browser's. A script's DOMException has none; capturing from above the cancel (our
  // only frames) leaves none either, so not even a page's Error.prepareStackTrace sees ours.
  const cancels = [];
  for (let i = 0; i < 5; i++) {
    const c = CANCELS[i];
    const cancel = (d, top) => {
      if (c.message === null) {
        d.resolve([]);
        return;
      }
      const err = newDOMException(c.message, c.name);
      if (c.stack) captureStackTrace(err, top);
      d.reject(err);
    };
    cancels[i] = cancel;
  }
  // Bluetooth without an adapter fails by itself, but later than two microtasks: no
  // chooser opened, nothing to ask (a cancel would race the browser's own failure; it won
  // 8 times in 32 measured).
  const unlessNoAdapter = (self) => (look) => {
    let q;
    try {
      q = apply(availabilityOf, self, []);
    } catch {
      return look();
    }
    if (q === null || typeof q !== 'object') return look();
    defineProperty(q, 'constructor', { __proto__: null, value: undefined, configurable: true });
    apply(promiseThen, q, [(has) => { if (has !== false) look(); }, look]);
  };
  const chooserCall = (which, self, args) => {
    const c = CANCELS[which];
    const ready = which === 3 && availabilityOf !== undefined ? unlessNoAdapter(self) : null;
    return askIfPending(chooserNatives[which], self, args, chooserHooks[which], 'device_chooser', c.api, c.method, cancels[which], ready);
  };
  // Method shorthand, one object each: the natives' names and lengths (a named parameter
  // where the native declares one, so no `length` needs defining), no prototype, not
  // constructible. `arguments` is our own object: applying it reads only its own members.
  const chooserHooks = [
    { requestDevice(options) { return chooserCall(0, this, arguments); } }.requestDevice,
    { requestDevice(options) { return chooserCall(1, this, arguments); } }.requestDevice,
    { requestPort() { return chooserCall(2, this, arguments); } }.requestPort,
    { requestDevice() { return chooserCall(3, this, arguments); } }.requestDevice,
    { getDisplayMedia() { return chooserCall(4, this, arguments); } }.getDisplayMedia,
  ];
  // Secure contexts only; Bluetooth only where the browser exposes it. No page script has
  // run: plain reads and assignment (as 60-install.js) cost a frame far less than reading
  // descriptors and defining properties, and keep the natives' flags.
  for (let i = 0; i < 5; i++) {
    const owner = protoOf(CANCELS[i].iface);
    const native = owner ? owner[CANCELS[i].method] : undefined;
    if (typeof native !== 'function') continue;
    owner[CANCELS[i].method] = chooserHooks[i];
    chooserNatives[i] = native;
    if (i === 3 && typeof owner.getAvailability === 'function') availabilityOf = owner.getAvailability;
  }
  addDisguiser((as) => {
    for (let i = 0; i < 5; i++) if (chooserNatives[i] !== undefined) as(chooserHooks[i], CANCELS[i].method);
  });
