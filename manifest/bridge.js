// The CDP bridge: the way to the host where no native host can run (a hosted or pooled
// browser). `unmodal mcp --cdp-endpoint` attaches to this worker over the browser's CDP URL,
// adds the binding `unmodalToHost` (this worker -> host) and calls `unmodalFromHost` (host ->
// this worker) and `unmodalBridgeUp` (a connection, numbered). It knows this worker by the
// extension ID in the worker's URL, which the browser sets, never by what this code answers:
// another extension can define the same globals. Pages cannot reach a worker's globals; code
// a DevTools client runs here can, as it can run anything here, so the host takes nothing
// from this channel that a person must say (native-host/src/host/transport/bridge.rs).
//
// A bridge port looks like a native one (postMessage, onMessage, onDisconnect, disconnect),
// so background.js treats both alike.

const BINDING = 'unmodalToHost';
// Extension APIs called this often keep the worker running while a bridge is up (a native
// port does that by itself; a CDP session does not).
const KEEP_ALIVE_MS = 20000;

export function createBridge(onNewConnection) {
  let current = null; // the open bridge port
  let generation = null; // the host's connection number, once it said it

  const available = () => typeof globalThis[BINDING] === 'function';
  // Whether the host's binding was there before this worker's first line (a worker the
  // host's auto-attach held at its start): said to the host, which logs it.
  const atStart = available();

  function open() {
    const send = globalThis[BINDING]; // as it is now: a later replacement is not used
    const onMessage = [];
    const onDisconnect = [];
    const keepAlive = setInterval(() => chrome.runtime.getPlatformInfo().catch(() => {}), KEEP_ALIVE_MS);
    const port = {
      bridge: true,
      postMessage(msg) {
        if (current !== port) throw new Error('bridge closed');
        send(JSON.stringify(msg));
      },
      onMessage: { addListener: (f) => onMessage.push(f) },
      onDisconnect: { addListener: (f) => onDisconnect.push(f) },
      // Ends this port; as with a native port, its own side hears no onDisconnect.
      disconnect() {
        if (current === port) current = null;
        clearInterval(keepAlive);
      },
      deliver(msg) {
        for (const f of onMessage) f(msg);
      },
    };
    current = port;
    return port;
  }

  // Host -> worker: one batch of messages as a JSON array in a string; how many were taken
  // (-1: no bridge port, the host keeps them).
  globalThis.unmodalFromHost = (text) => {
    if (!current || typeof text !== 'string') return -1;
    let batch;
    try {
      batch = JSON.parse(text);
    } catch {
      return -1;
    }
    if (!Array.isArray(batch)) return -1;
    const port = current;
    for (const msg of batch) {
      try {
        port.deliver(msg);
      } catch (err) {
        console.error('unmodal: a message from the host failed', err);
      }
    }
    return batch.length;
  };

  // The host's connection number (unique across processes: each starts from its own clock),
  // and the bridge's version in return. A number not seen before is a new connection (the
  // old one dropped), which the worker answers as a new host: released what it held for the
  // old one, `hello` again.
  globalThis.unmodalBridgeUp = (n) => {
    if (!available()) return null;
    const me = { unmodal: 1, version: chrome.runtime.getManifest().version, binding_at_start: atStart };
    if (n === undefined) return me; // who this is, changing nothing
    if (!Number.isSafeInteger(n)) return null;
    const same = current !== null && (generation === null || generation === n);
    generation = n;
    if (!same) queueMicrotask(onNewConnection);
    return me;
  };

  return { available, open };
}
