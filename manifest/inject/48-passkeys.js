  // @needs getOwnPropertyDescriptor, getPrototypeOf, hasOwn, protoOf, newDOMException, addDisguiser
  // @needs askBrowser, ANSWER_NATIVE, ANSWER_ACCEPT, deferred, settle, directPromise, tellSettled
  // ---- Passkeys and sign-ins: navigator.credentials.create() and get() ----
  // A WebAuthn request opens Chrome's passkey sheet, which headless never shows: the call
  // stays pending whatever its timeout, and from ~0.1 s on every click and key to the tab is
  // dropped until a reload (MODAL-FACTS 3). Nothing can close the sheet once it is open, so
  // the hook asks before the browser sees the call (rule, policy, agent): a refusal rejects
  // it as a person's cancel does (`NotAllowedError`, the browser's words); an accept makes the
  // real call once the worker armed a virtual authenticator, and says when it is done (the
  // worker then takes the keys back); the browser's way (pilot off) makes the real call.
  // A FedCM sign-in (`get` with `identity`) is asked about the same way (kind `sign_in`): a
  // refusal is the browser's own `NetworkError`, at once. Other credential requests (a
  // password, a federated one, conditional mediation's autofill) go straight to the browser.
  //
  // Start-up cost: a read and an assignment per method (secure contexts only).
  const passkeyNatives = { __proto__: null };
  const credentialsProto = protoOf('CredentialsContainer');
  const NO_TOKEN = 'Error retrieving a token.';
  const NOT_ALLOWED =
    'The operation either timed out or was not allowed. See: https://www.w3.org/TR/webauthn-2/#sctn-privacy-considerations-client.';
  // A page object's own data member (no getter of the page runs), else undefined.
  const ownValue = (o, key) => {
    if (o === null || typeof o !== 'object') return undefined;
    const d = getOwnPropertyDescriptor(o, key);
    return d !== undefined && hasOwn(d, 'value') ? d.value : undefined;
  };
  // FedCM: asked about like a passkey; a refusal is the browser's own for a sign-in it
  // cannot complete, at once (headless it comes after up to 31 s; headful a chooser waits).
  const signIn = (native, self, args, identity, top) => {
    const providers = ownValue(identity, 'providers');
    const first = ownValue(providers, 0);
    const configURL = ownValue(first, 'configURL');
    const d = deferred();
    askBrowser('sign_in', typeof configURL === 'string' ? configURL : '', 'get', (code) => {
      if (code === ANSWER_NATIVE || code === ANSWER_ACCEPT) settle(native, self, args, d.resolve, d.reject, top);
      else d.reject(newDOMException(NO_TOKEN, 'NetworkError'));
    });
    return d.promise;
  };
  const passkeyCall = (op, self, args, top) => {
    const native = passkeyNatives[op];
    const options = args[0];
    const publicKey = ownValue(options, 'publicKey');
    const conditional = op === 'get' && ownValue(options, 'mediation') === 'conditional';
    const identity = op === 'get' && (publicKey === undefined || publicKey === null) ? ownValue(options, 'identity') : undefined;
    if (identity !== undefined && identity !== null && !conditional && getPrototypeOf(self) === credentialsProto) {
      return signIn(native, self, args, identity, top);
    }
    if (publicKey === undefined || publicKey === null || conditional || getPrototypeOf(self) !== credentialsProto) {
      return directPromise(native, self, args, top);
    }
    const rp = op === 'create' ? ownValue(ownValue(publicKey, 'rp'), 'id') : ownValue(publicKey, 'rpId');
    const d = deferred();
    const request = askBrowser('passkey', typeof rp === 'string' ? rp : '', op, (code) => {
      // Only the browser's own way (pilot off) or an accept makes the real call: anything
      // else, nobody answering too, is refused (the browser's sheet would wedge the tab).
      if (code === ANSWER_NATIVE) settle(native, self, args, d.resolve, d.reject, top);
      else if (code !== ANSWER_ACCEPT) d.reject(newDOMException(NOT_ALLOWED, 'NotAllowedError'));
      else {
        const resolve = (v) => { d.resolve(v); tellSettled(request); };
        const reject = (e) => { d.reject(e); tellSettled(request); };
        settle(native, self, args, resolve, reject, top);
      }
    });
    return d.promise;
  };
  // Method shorthand: the natives' names and lengths, no prototype, not constructible.
  const passkeyHooks = {
    create() { return passkeyCall('create', this, arguments, passkeyHooks.create); },
    get() { return passkeyCall('get', this, arguments, passkeyHooks.get); },
  };
  // No page script has run: a plain read and assignment keep the natives' flags.
  for (const op of ['create', 'get']) {
    const native = credentialsProto !== null ? credentialsProto[op] : undefined;
    if (typeof native !== 'function') continue;
    credentialsProto[op] = passkeyHooks[op];
    passkeyNatives[op] = native;
  }
  addDisguiser((as) => {
    if (passkeyNatives.create !== undefined) as(passkeyHooks.create, 'create');
    if (passkeyNatives.get !== undefined) as(passkeyHooks.get, 'get');
  });
