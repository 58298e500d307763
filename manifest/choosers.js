// Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth, the screen-share picker): the page hook
// (inject/46-choosers.js) saw one open and asks here; the host (the state of record) decides
// — cancel now, or hold for the agent (whose only answer is cancel: no extension can pick a
// device) — or, pilot off, the browser's chooser stands. Never a hang: with no host the
// chooser is cancelled at once; a request no answer reaches in time is cancelled here.
const FIRST_WAIT_MS = 5000;
const MAX_HOLD_MS = 11 * 60 * 1000;
const APIS = ['usb', 'hid', 'serial', 'bluetooth', 'display'];
const MAX_URL = 2048;

export function createChoosers(toHost, pilotOn, connected) {
  let seq = 0;
  // request -> { tabId, frameId, documentId, pageRequest, reply, timer, held }
  const waiting = new Map();

  // `how`: 'answer' (the host's), 'expired' (nobody answered in time), 'settled' (the
  // browser's chooser answered first; the hook keeps the page's result).
  const finish = (request, decision, how) => {
    const w = waiting.get(request);
    if (!w) return;
    waiting.delete(request);
    clearTimeout(w.timer);
    let ok = true;
    try {
      w.reply(decision);
    } catch {
      ok = false; // the frame is gone
    }
    if (w.held || how !== 'answer' || !ok) {
      toHost({ type: 'chooser_result', tab_id: w.tabId, request, ok, settled: how === 'settled', expired: how === 'expired' });
    }
  };

  return {
    request(msg, sender, reply) {
      const api = APIS.includes(msg.api) ? msg.api : null;
      const pageRequest = Number.isSafeInteger(msg.page_request) ? msg.page_request : null;
      if (api === null || pageRequest === null) return reply('cancel');
      const base = {
        tab_id: sender.tab.id,
        frame_id: sender.frameId ?? 0,
        url: String(sender.url ?? '').slice(0, MAX_URL),
        api,
        method: String(msg.method ?? '').slice(0, 40),
      };
      const n = ++seq;
      if (!pilotOn()) {
        toHost({ type: 'chooser_request', request: n, ...base, native: true });
        return reply('native');
      }
      waiting.set(n, { tabId: base.tab_id, frameId: base.frame_id, documentId: sender.documentId, pageRequest, reply, timer: null, held: false });
      if (!connected()) return finish(n, 'cancel', 'expired');
      waiting.get(n).timer = setTimeout(() => finish(n, 'cancel', 'expired'), FIRST_WAIT_MS);
      toHost({ type: 'chooser_request', request: n, ...base });
    },
    answer(msg) {
      if (msg.decision === 'cancel' || msg.decision === 'native') finish(msg.request, msg.decision, 'answer');
    },
    hold(msg) {
      const w = waiting.get(msg.request);
      if (!w) return;
      w.held = true;
      clearTimeout(w.timer);
      const ms = Number.isSafeInteger(msg.wait_ms) ? Math.min(Math.max(msg.wait_ms, 0), MAX_HOLD_MS) : FIRST_WAIT_MS;
      w.timer = setTimeout(() => finish(msg.request, 'cancel', 'expired'), ms);
    },
    // The page got the browser's own answer first (its frame says so; the browser names the frame).
    settled(msg, sender) {
      for (const [n, w] of waiting) {
        if (w.tabId === sender.tab.id && w.frameId === (sender.frameId ?? 0) && w.documentId === sender.documentId && w.pageRequest === msg.page_request) {
          return finish(n, 'native', 'settled');
        }
      }
    },
    // The host went: nobody can answer what waits.
    releaseAll() {
      for (const request of [...waiting.keys()]) finish(request, 'cancel', 'expired');
    },
  };
}
