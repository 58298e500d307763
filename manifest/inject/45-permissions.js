  // @needs win, doc, apply, getOwnPropertyDescriptor, getPrototypeOf, hasOwn, addDisguiser
  // @needs lateNative, documentProto, fnProto, nativeToString, NewMap, mapGet, mapSet, mapDelete, protoOf, getterOf, withoutOwnFrames
  // @needs askBrowser, deferred, settle, directPromise
  // ---- Permission prompts (camera, microphone, notifications, geolocation, clipboard read) ----
  // No browser event tells of a permission prompt, so the calls that would prompt are held
  // here: the request goes (44-ask: content.js → service worker → host) to be decided like
  // a dialog (rule, policy, agent, watchdog), the worker sets the browser's own content
  // setting for the origin (allow or block), and only then is the real call made. The page
  // so gets the browser's own result: a granted call works, a denied one fails exactly as
  // the browser fails it, and permissions.query tells the truth. Pilot off, the worker lets
  // the call through untouched. If nobody takes the request (no content.js), it goes
  // through at once.
  //
  // Start-up cost: a read and an assignment per method and one getter looked up
  // (ondevicechange), nothing else; 44-ask makes its listener on first use.
  const permNatives = { __proto__: null };
  // A frame whose permissions policy forbids a feature (another site's frame without
  // allow=) never prompts: the browser refuses with its own policy error, so the call goes
  // straight through and nothing is asked.
  // The featurePolicy getter and FeaturePolicy's own method are looked up on first use
  // (making them costs every frame), and used only if they are still the browser's (their
  // source says so; no page function can print it).
  let featurePolicyOf;
  let allowsFeature;
  const allowed = (feature) => {
    if (featurePolicyOf === undefined) {
      const d = getOwnPropertyDescriptor(documentProto, 'featurePolicy');
      featurePolicyOf = d !== undefined && hasOwn(d, 'get') ? lateNative(d.get, 'get featurePolicy', fnProto) : null;
    }
    if (featurePolicyOf === null) return true;
    try {
      const policy = apply(featurePolicyOf, doc, []);
      if (allowsFeature === undefined) {
        const d = getOwnPropertyDescriptor(getPrototypeOf(policy), 'allowsFeature');
        const fn = d && hasOwn(d, 'value') ? d.value : undefined;
        allowsFeature = typeof fn === 'function' && apply(nativeToString, fn, []) === 'function allowsFeature() { [native code] }' ? fn : null;
      }
      return allowsFeature === null || apply(allowsFeature, policy, [feature]) === true;
    } catch {
      return true;
    }
  };
  // Is the receiver a real one? Else the native call decides now (its brand check, its
  // error). Asked of the natives themselves (a getter, a no-op clearWatch), not of
  // navigator: making this frame's navigator would cost more than everything else here.
  const branded = (self, check) => {
    if (self === null || typeof self !== 'object') return false;
    try {
      check(self);
      return true;
    } catch {
      return false;
    }
  };
  let deviceChangeOf = null; // MediaDevices.prototype's ondevicechange getter
  const isMediaDevices = (self) => deviceChangeOf !== null && branded(self, (o) => apply(deviceChangeOf, o, []));
  // A watch id below 1 is never one: clearWatch then only checks the receiver.
  const isGeolocation = (self) => branded(self, (o) => apply(permNatives.clearWatch, o, [-1]));
  // Clipboard has no member to ask: its prototype (a page may fake it with
  // Object.create(Clipboard.prototype); the native's own refusal then comes after asking).
  let clipboardProto = null;
  const isClipboard = (self) => self !== null && typeof self === 'object' && clipboardProto !== null && getPrototypeOf(self) === clipboardProto;

  // Asks for a decision; `go` runs once it came, whatever it is: the real call follows (the
  // browser's setting already says grant or deny).
  const askPermission = (names, api, go) => askBrowser('permission', names, api, go);

  // Called once decided.
  const later = (native, self, args, names, api, top) => {
    const d = deferred();
    askPermission(names, api, () => settle(native, self, args, d.resolve, d.reject, top));
    return d.promise;
  };
  // A native called now, with our frames cut from whatever it throws.
  const direct = (native, self, args, top) => {
    try {
      return apply(native, self, args);
    } catch (err) {
      throw withoutOwnFrames(err, top);
    }
  };
  // Which of audio/video a getUserMedia call asks for, from own data properties only (no
  // getter of the page runs twice); an accessor counts as asked. Null: nothing to ask.
  const mediaNames = (c) => {
    if (c === null || typeof c !== 'object') return null;
    const asked = (key) => {
      const d = getOwnPropertyDescriptor(c, key);
      return d !== undefined && (!hasOwn(d, 'value') || !!d.value);
    };
    const video = asked('video');
    const audio = asked('audio');
    // One the policy forbids fails the whole call: the browser's own refusal.
    if ((video && !allowed('camera')) || (audio && !allowed('microphone'))) return null;
    if (video && audio) return 'camera,microphone';
    return video ? 'camera' : audio ? 'microphone' : null;
  };
  // Geolocation callbacks as the natives accept them (else the native throws, now).
  const callbackOk = (v, optional) => typeof v === 'function' || (optional && (v === undefined || v === null));

  // watchPosition must return its id at once: the page gets one of ours, mapped to the
  // native's once the call is made (clearWatch translates; before that it cancels).
  let watchSeq = 0;
  let watches = null; // our id -> native id, or -1 while undecided
  const permHooks = {
    getUserMedia(...args) {
      const names = isMediaDevices(this) ? mediaNames(args[0]) : null;
      if (names === null) return directPromise(permNatives.getUserMedia, this, args, permHooks.getUserMedia);
      return later(permNatives.getUserMedia, this, args, names, 'getUserMedia', permHooks.getUserMedia);
    },
    requestPermission(...args) {
      // Static: the receiver does not matter. The callback form is the native's own work.
      return later(permNatives.requestPermission, this, args, 'notifications', 'requestPermission', permHooks.requestPermission);
    },
    getCurrentPosition(successCallback) {
      const args = arguments;
      if (!isGeolocation(this) || !callbackOk(args[0], false) || !callbackOk(args[1], true) || !allowed('geolocation')) {
        return direct(permNatives.getCurrentPosition, this, args, permHooks.getCurrentPosition);
      }
      const self = this;
      askPermission('geolocation', 'getCurrentPosition', () => {
        try {
          apply(permNatives.getCurrentPosition, self, args);
        } catch {
          // Bad options: the native would have thrown at the call; too late to throw now.
        }
      });
      return undefined;
    },
    watchPosition(successCallback) {
      const args = arguments;
      if (!isGeolocation(this) || !callbackOk(args[0], false) || !callbackOk(args[1], true) || !allowed('geolocation')) {
        return direct(permNatives.watchPosition, this, args, permHooks.watchPosition);
      }
      if (watches === null) watches = new NewMap();
      const ours = ++watchSeq;
      apply(mapSet, watches, [ours, -1]);
      const self = this;
      askPermission('geolocation', 'watchPosition', () => {
        if (apply(mapGet, watches, [ours]) !== -1) return; // cleared meanwhile
        try {
          apply(mapSet, watches, [ours, apply(permNatives.watchPosition, self, args)]);
        } catch {
          apply(mapDelete, watches, [ours]);
        }
      });
      return ours;
    },
    clearWatch(watchId) {
      const args = arguments;
      const id = args[0];
      const mapped = watches === null || !isGeolocation(this) ? undefined : apply(mapGet, watches, [id]);
      if (mapped === undefined) return direct(permNatives.clearWatch, this, args, permHooks.clearWatch);
      apply(mapDelete, watches, [id]);
      if (mapped !== -1) apply(permNatives.clearWatch, this, [mapped]);
      return undefined;
    },
    readText(...args) {
      if (!isClipboard(this) || !allowed('clipboard-read')) return directPromise(permNatives.readText, this, args, permHooks.readText);
      return later(permNatives.readText, this, args, 'clipboard-read', 'readText', permHooks.readText);
    },
    read(...args) {
      if (!isClipboard(this) || !allowed('clipboard-read')) return directPromise(permNatives.read, this, args, permHooks.read);
      return later(permNatives.read, this, args, 'clipboard-read', 'read', permHooks.read);
    },
  };

  // Replaces a method. No page script has run: a plain read and assignment keep the
  // native's flags (an own writable data property) and cost a frame far less than reading
  // descriptors and defining properties. Each hook declares the native's length (a named
  // parameter where the native has one; `arguments` is then the call's own list).
  const installPermission = (owner, name) => {
    const native = owner ? owner[name] : undefined;
    if (typeof native !== 'function') return;
    owner[name] = permHooks[name];
    permNatives[name] = native;
  };
  // Secure contexts only (MediaDevices, Clipboard); absent interfaces are skipped.
  const mediaDevicesProto = protoOf('MediaDevices');
  deviceChangeOf = getterOf(mediaDevicesProto, 'ondevicechange');
  installPermission(mediaDevicesProto, 'getUserMedia');
  const notification = win.Notification;
  installPermission(typeof notification === 'function' ? notification : null, 'requestPermission');
  const geolocationProto = protoOf('Geolocation');
  installPermission(geolocationProto, 'getCurrentPosition');
  installPermission(geolocationProto, 'watchPosition');
  installPermission(geolocationProto, 'clearWatch');
  clipboardProto = protoOf('Clipboard');
  installPermission(clipboardProto, 'readText');
  installPermission(clipboardProto, 'read');
  // toString prints native source for them (60-install: made on first use).
  // Runs after page scripts: no page array is iterated.
  addDisguiser((as) => {
    const one = (name) => {
      if (permNatives[name] !== undefined) as(permHooks[name], name);
    };
    one('getUserMedia');
    one('requestPermission');
    one('getCurrentPosition');
    one('watchPosition');
    one('clearWatch');
    one('readText');
    one('read');
  });
