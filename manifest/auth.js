// HTTP auth challenges (401/407, Basic or Digest): the browser's own login prompt, which no
// page script sees. `chrome.webRequest.onAuthRequired` with `asyncBlocking` holds each
// request while the host decides (prompts.js waits for it): credentials, a cancel (the page
// gets the 401), or the browser's own prompt. This file only carries messages; the host
// decides (native-host/src/host/auth.rs). The password passes through here once, straight
// into the browser's callback, and is kept nowhere. Message shapes:
// native-host/src/host/protocol.rs.
//
// Chrome asks again for the same request when credentials are refused; each ask is one more
// `attempt`, and the host alone limits how many it answers.
const MAX_TRACKED = 500;
const MAX_FIELD = 2048;

const clip = (v) => (typeof v === 'string' ? v.slice(0, MAX_FIELD) : '');

// The host's decision as the browser takes it; true when credentials were given.
const give = (callback, decision, answer) => {
  const c = answer?.credentials;
  const given = decision === 'accept' && typeof c?.username === 'string' && typeof c?.password === 'string';
  callback(given ? { authCredentials: { username: c.username, password: c.password } } : decision === 'native' ? {} : { cancel: true });
  return given;
};

// The kind (kind_registry.js): its side message says what became of a challenged request.
export const auth = {
  name: 'auth',
  sends: ['auth_done'],
  create: ({ prompts, toHost, pilotOn }) => createAuth(prompts, toHost, pilotOn),
};

// `pilotOn()`: the human's switch (off: the browser keeps its own behaviour, only reported).
function createAuth(prompts, toHost, pilotOn) {
  const requests = new Map(); // requestId -> { tabId, attempts }: challenged, not yet ended

  // What became of the request: listened to only while some challenged request is alive,
  // so pages without HTTP auth cost nothing.
  const ended = (details, fields) => {
    const r = requests.get(details.requestId);
    if (!r) return;
    requests.delete(details.requestId);
    // Its challenges can no longer be answered; `auth_done` tells the host why.
    prompts.forget('auth', (requestId) => requestId === details.requestId);
    toHost({ type: 'auth_done', tab_id: r.tabId, request_id: String(details.requestId), ...fields });
    if (requests.size === 0) listen(false);
  };
  const onCompleted = (d) => ended(d, { status_code: d.statusCode });
  const onError = (d) => ended(d, { error: clip(d.error) });
  let listening = false;
  const listen = (on) => {
    if (on === listening) return;
    listening = on;
    const filter = { urls: ['<all_urls>'] };
    if (on) {
      chrome.webRequest.onCompleted.addListener(onCompleted, filter);
      chrome.webRequest.onErrorOccurred.addListener(onError, filter);
    } else {
      chrome.webRequest.onCompleted.removeListener(onCompleted);
      chrome.webRequest.onErrorOccurred.removeListener(onError);
    }
  };

  const onAuthRequired = (details, callback) => {
    // Not a tab's request (the browser's own, another extension's): not ours to answer.
    if (!(details.tabId >= 0)) return callback({});
    const known = requests.get(details.requestId);
    // A request whose challenges cannot be counted could be answered with the same refused
    // credentials forever: cancel it (pilot off: the browser's own behaviour).
    if (!known && requests.size >= MAX_TRACKED) return callback(pilotOn() ? { cancel: true } : {});
    const r = known ?? { tabId: details.tabId, attempts: 0 };
    r.attempts += 1;
    requests.set(details.requestId, r);
    listen(true);
    const fields = {
      tab_id: details.tabId,
      frame_id: details.frameId,
      url: details.url,
      request_id: String(details.requestId),
      request_type: clip(details.type),
      realm: clip(details.realm),
      scheme: clip(details.scheme),
      is_proxy: details.isProxy === true,
      challenger: { host: clip(details.challenger?.host), port: Number(details.challenger?.port) || 0 },
      attempt: r.attempts,
    };
    if (!pilotOn()) {
      prompts.native('auth', fields);
      return callback({});
    }
    prompts.ask('auth', fields, { apply: (decision, answer) => give(callback, decision, answer), tag: details.requestId });
  };
  chrome.webRequest.onAuthRequired.addListener(onAuthRequired, { urls: ['<all_urls>'] }, ['asyncBlocking']);
}
