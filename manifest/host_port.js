// The port to the host: native messaging, or the CDP bridge (bridge.js) where no native
// host can run. Invariants:
// - At most one port is open. A bridge connection (a new one, or one after a drop) takes
//   over from whatever port there was, as a new host would.
// - A port that closes is reconnected with a growing backoff (250 ms to 30 s).
// - Dialog reports are numbered and kept until a host confirms it has them: a host can die
//   with reports on their way (the port is dead before onDisconnect says so), and none may
//   come while no host runs. On `hello` the host answers `resume {upto}`; what is newer goes
//   again, and the host drops what it already had. Everything else the host needs (tabs,
//   configs, the pilot) is sent anew on connecting (`connected`).
import { createBridge } from './bridge.js';

const HOST = 'dev.unmodal.host';
const MAX_UNCONFIRMED = 2000;

// `onMessage(msg)`: each message of the host's; `hello(worker)`: the first message on a
// new port; `connected()`: after it; `gone(why)`: the port closed (no host now).
export function createHostPort({ onMessage, hello, connected, gone }) {
  let port = null;
  let status = { connected: false, error: null, since: null };
  let backoff = 250;
  let retryTimer = null;
  const worker = crypto.randomUUID().replaceAll('-', ''); // names this worker's reports
  let reportSeq = 0;
  const unconfirmed = []; // [{ n, msg }], oldest first

  const bridge = createBridge(() => {
    if (port) {
      const old = port;
      port = null;
      old.disconnect();
      hostGone('a new bridge connection');
    }
    connect();
  });

  function connect() {
    clearTimeout(retryTimer);
    retryTimer = null;
    if (port) return;
    try {
      port = bridge.available() ? bridge.open() : chrome.runtime.connectNative(HOST);
    } catch (err) {
      status = { connected: false, error: String(err), since: Date.now() };
      return retry();
    }
    const mine = port;
    port.onMessage.addListener(onMessage);
    port.onDisconnect.addListener(() => {
      if (port !== mine) return;
      const err = chrome.runtime.lastError;
      port = null;
      hostGone(err ? err.message : 'host exited');
      retry();
    });
    status = { connected: true, error: null, since: Date.now(), via: port.bridge ? 'cdp' : 'native' };
    backoff = 250;
    toHost(hello(worker));
    connected();
    // The reports the host may not have go again once it says how far it got (`resume`).
  }

  function hostGone(why) {
    status = { connected: false, error: why, since: Date.now() };
    gone(why);
  }

  function retry() {
    clearTimeout(retryTimer);
    retryTimer = setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 30000);
  }

  function toHost(msg) {
    if (!port) return;
    try {
      port.postMessage(msg);
    } catch {
      // The port died between checks; onDisconnect reconnects.
    }
  }

  return {
    connect,
    toHost,
    isOpen: () => port !== null,
    // What the popup shows: connected or why not, since when, and how.
    status: () => status,
    // A dialog report, numbered and kept until the host confirms it.
    report(msg) {
      const entry = { n: ++reportSeq, msg: { ...msg, n: reportSeq } };
      unconfirmed.push(entry);
      if (unconfirmed.length > MAX_UNCONFIRMED) unconfirmed.shift();
      toHost(entry.msg);
    },
    // The host has the reports up to `upto`: the rest go again.
    resume(upto) {
      while (unconfirmed.length > 0 && unconfirmed[0].n <= upto) unconfirmed.shift();
      for (const { msg } of unconfirmed) toHost(msg);
    },
  };
}
