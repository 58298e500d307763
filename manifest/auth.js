// HTTP auth challenges (401/407, Basic or Digest): the browser's own login prompt, which no
// page script sees. `chrome.webRequest.onAuthRequired` with `asyncBlocking` holds each
// request until the host (the state of record) answers: credentials, or a cancel (the page
// gets the 401). This file only carries messages; the host decides (native-host/src/host/
// auth.rs). The password passes through here once, straight into the browser's callback,
// and is kept nowhere.
//
// Never a hang: with no host the challenge is cancelled at once; the host answers at once
// or says how long to hold (`auth_hold`); a challenge no answer reaches in time is
// cancelled here. Chrome asks again for the same request when credentials are refused;
// each ask is one more `attempt`, and after MAX_ATTEMPTS nothing is tried.
const FIRST_WAIT_MS = 5000;
const MAX_HOLD_MS = 11 * 60 * 1000;
const MAX_ATTEMPTS = 6;
const MAX_TRACKED = 500;
const MAX_FIELD = 2048;

const clip = (v) => (typeof v === 'string' ? v.slice(0, MAX_FIELD) : '');

// `pilotOn()`: the human's switch (off: the browser keeps its own behaviour, only reported);
// `connected()`: a host is there to answer.
export function createAuth(toHost, pilotOn, connected) {
  let seq = 0;
  const waiting = new Map(); // challenge -> { tabId, requestId, callback, timer }
  const requests = new Map(); // requestId -> { tabId, attempts }: challenged, not yet ended

  const settle = (challenge, response) => {
    const w = waiting.get(challenge);
    if (!w) return false;
    waiting.delete(challenge);
    clearTimeout(w.timer);
    try {
      w.callback(response);
      return true;
    } catch {
      return false;
    }
  };

  const expire = (challenge) => {
    const w = waiting.get(challenge);
    if (w && settle(challenge, { cancel: true })) {
      toHost({ type: 'auth_result', tab_id: w.tabId, challenge, ok: true, credentials: false, expired: true });
    }
  };

  // What became of the request: listened to only while some challenged request is alive,
  // so pages without HTTP auth cost nothing.
  const ended = (details, fields) => {
    const r = requests.get(details.requestId);
    if (!r) return;
    requests.delete(details.requestId);
    for (const [challenge, w] of waiting) {
      if (w.requestId === details.requestId) {
        waiting.delete(challenge);
        clearTimeout(w.timer);
      }
    }
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
    const challenge = ++seq;
    const msg = {
      type: 'auth_required',
      tab_id: details.tabId,
      challenge,
      request_id: String(details.requestId),
      url: clip(details.url),
      frame_id: Number.isInteger(details.frameId) ? details.frameId : 0,
      request_type: clip(details.type),
      realm: clip(details.realm),
      scheme: clip(details.scheme),
      is_proxy: details.isProxy === true,
      challenger: { host: clip(details.challenger?.host), port: Number(details.challenger?.port) || 0 },
      attempt: r.attempts,
      native: false,
    };
    if (!pilotOn()) {
      toHost({ ...msg, native: true });
      return callback({});
    }
    if (!connected() || r.attempts > MAX_ATTEMPTS) return callback({ cancel: true });
    waiting.set(challenge, { tabId: details.tabId, requestId: details.requestId, callback, timer: setTimeout(() => expire(challenge), FIRST_WAIT_MS) });
    toHost(msg);
  };
  chrome.webRequest.onAuthRequired.addListener(onAuthRequired, { urls: ['<all_urls>'] }, ['asyncBlocking']);

  // The host's answer: credentials, or none (cancel).
  const answer = (msg) => {
    const c = msg.credentials;
    const given = c && typeof c.username === 'string' && typeof c.password === 'string';
    const ok = settle(msg.challenge, given ? { authCredentials: { username: c.username, password: c.password } } : { cancel: true });
    const reply = { type: 'auth_result', tab_id: msg.tab_id, challenge: msg.challenge, ok, credentials: ok && given };
    toHost(ok ? reply : { ...reply, error: 'the request is no longer waiting' });
  };

  // The host holds it for the agent: wait that long (its watchdog answers first).
  const hold = (msg) => {
    const w = waiting.get(msg.challenge);
    if (!w) return;
    clearTimeout(w.timer);
    const ms = Math.min(Math.max(Number(msg.wait_ms) || 0, FIRST_WAIT_MS), MAX_HOLD_MS);
    w.timer = setTimeout(() => expire(msg.challenge), ms);
  };

  // The host is gone: nobody can answer, so every held challenge is cancelled now.
  const releaseAll = () => {
    for (const challenge of [...waiting.keys()]) settle(challenge, { cancel: true });
  };

  return { answer, hold, releaseAll };
}
