// Passkeys: a WebAuthn create() or get() the page hook (inject/48-passkeys.js) holds before
// the browser sees it; the browser's passkey sheet, which headless never shows, would drop
// every input to the tab. The host (the state of record) decides:
// - refuse: the page gets a person's cancel (NotAllowedError);
// - accept: a virtual authenticator (the DevTools protocol's WebAuthn domain, through the
//   tab's debugger) is armed with the relying party's keys, then the call goes through, so
//   create() makes a real passkey and get() signs with one; once the call is done the keys
//   go back to the host (`passkeys_saved`, naming the request the host accepted: the host
//   takes them only for its own accept) and the authenticator is removed;
// - pilot off: the browser's own way.
// prompts.js waits for the host; with no host, or no answer in time, it is refused. Message
// shapes: native-host/src/host/protocol.rs.
//
// An authenticator must exist before the call reaches the browser: armed late, it rescues
// nothing (MODAL-FACTS 3). Another DevTools client detaching from the tab turns the virtual
// environment off, so each call checks it and arms again when it went.
const AUTHENTICATOR = {
  protocol: 'ctap2',
  transport: 'internal',
  hasResidentKey: true,
  hasUserVerification: true,
  isUserVerified: true,
  automaticPresenceSimulation: true,
};
// A call still not done after this (the page went, or the call waits on something else) no
// longer keeps the tab's authenticator: WebAuthn's longest timeout is 10 minutes.
const MAX_ARMED_MS = 10 * 60 * 1000 + 5000;

// The kind (kind_registry.js): the page hook asks about it; its side message hands the
// keys back.
export const passkey = {
  name: 'passkey',
  sends: ['passkeys_saved'],
  create: ({ prompts, holds, toHost }) => createPasskeys(prompts, holds, toHost),
};

// `holds`: the tab debugger's leases (debugger.js).
function createPasskeys(prompts, holds, toHost) {
  const send = (tabId, method, params = {}) => chrome.debugger.sendCommand({ tabId }, method, params);
  // tabId -> { id: authenticator id, calls: Map(call key -> { rp, request, timer }) }
  const tabs = new Map();
  // The keys last handed back, on their way to the host: a request waits for them, so the
  // host (one port, in order) has them before it answers (a page signs in with the passkey
  // it made a moment ago).
  let saving = Promise.resolve();
  const callKey = (sender, pageRequest) => `${sender.frameId ?? 0}:${sender.documentId}:${pageRequest}`;

  // The tab's authenticator, made (or made again, if the environment went) with `keys` in it.
  const arm = async (tabId, keys) => {
    let t = tabs.get(tabId);
    if (t !== undefined) {
      const alive = await send(tabId, 'WebAuthn.getCredentials', { authenticatorId: t.id }).then(() => true, () => false);
      if (!alive) t.id = null;
    } else {
      await holds.lease(tabId);
      t = { id: null, calls: new Map() };
      tabs.set(tabId, t);
    }
    if (t.id === null) {
      await send(tabId, 'WebAuthn.enable', { enableUI: false }).catch(() => {}); // enabled already: fine
      t.id = (await send(tabId, 'WebAuthn.addVirtualAuthenticator', { options: AUTHENTICATOR })).authenticatorId;
    }
    for (const credential of keys) {
      // One the authenticator has already (a second call of the tab) is refused: fine.
      await send(tabId, 'WebAuthn.addCredential', { authenticatorId: t.id, credential }).catch(() => {});
    }
    return t;
  };

  // Hands the host what the authenticator holds of `rp` now (made, or its count moved on),
  // for the host's accept of `request`.
  const save = async (tabId, t, rp, request) => {
    if (t.id === null) return;
    const got = await send(tabId, 'WebAuthn.getCredentials', { authenticatorId: t.id }).catch(() => null);
    const credentials = (got?.credentials ?? []).filter((c) => c.rpId === rp);
    if (credentials.length > 0) toHost({ type: 'passkeys_saved', tab_id: tabId, id: request, credentials });
  };

  // A call is done (or given up on): its keys saved; the last one out removes the
  // authenticator and gives the debugger back.
  const done = async (tabId, key) => {
    const t = tabs.get(tabId);
    const call = t?.calls.get(key);
    if (call === undefined) return;
    t.calls.delete(key);
    clearTimeout(call.timer);
    const saved = save(tabId, t, call.rp, call.request);
    saving = saving.then(() => saved);
    await saved;
    if (t.calls.size > 0 || tabs.get(tabId) !== t) return;
    tabs.delete(tabId);
    if (t.id !== null) await send(tabId, 'WebAuthn.removeVirtualAuthenticator', { authenticatorId: t.id }).catch(() => {});
    holds.unlease(tabId);
  };

  return {
    request(msg, sender, reply) {
      const tabId = sender.tab.id;
      let rp = msg.what.slice(0, 256);
      // No rp id named: the page's own host, as the browser takes it.
      if (rp === '') rp = URL.parse(String(sender.url ?? ''))?.hostname ?? '';
      const fields = prompts.fromPage('passkey', sender, reply, { operation: msg.method === 'create' ? 'create' : 'get', rp_id: rp });
      if (fields === null) return;
      const pageRequest = Number.isSafeInteger(msg.page_request) ? msg.page_request : null;
      const apply = async (decision, answer) => {
        if (decision !== 'accept' || pageRequest === null) {
          reply('refuse');
          return false;
        }
        const key = callKey(sender, pageRequest);
        try {
          const t = await arm(tabId, Array.isArray(answer?.passkeys?.credentials) ? answer.passkeys.credentials : []);
          const timer = setTimeout(() => done(tabId, key), MAX_ARMED_MS);
          t.calls.set(key, { rp, request: answer.id, timer });
        } catch (err) {
          reply('refuse');
          if (tabs.get(tabId)?.calls.size === 0) {
            tabs.delete(tabId);
            holds.unlease(tabId);
          }
          throw new Error(`the virtual authenticator could not be armed: ${err?.message ?? err}`);
        }
        reply('accept');
        return true;
      };
      saving.then(() => prompts.ask('passkey', fields, { apply }));
    },
    // The page's accepted call settled (its frame says so; the browser names the frame).
    settled(msg, sender) {
      done(sender.tab.id, callKey(sender, msg.page_request));
    },
  };
}
