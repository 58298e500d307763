// Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth, the screen-share picker): the
// page hook (inject/46-choosers.js) saw one open and asks here; the host (the state of
// record) decides — cancel now, or hold for the agent or a rule that picks — or, pilot off,
// the browser's chooser stands. No extension can pick a device: where the host holds a
// DevTools connection of its own it picks a Bluetooth device there, and the accept it sends
// here only leaves the browser's call alone (the page gets the browser's result). prompts.js
// waits for the host: with no host, or no answer in time, the chooser is cancelled.
// Message shapes: native-host/src/host/protocol.rs.
const CHOOSERS = ['usb', 'hid', 'serial', 'bluetooth', 'display'];

// The kind (kind_registry.js): the page hook asks about it.
export const deviceChooser = {
  name: 'device_chooser',
  create: ({ prompts }) => createChoosers(prompts),
};

// Pilot off: the browser's chooser stands, only reported (prompts.fromPage).
function createChoosers(prompts) {
  return {
    request(msg, sender, reply) {
      const chooser = CHOOSERS.includes(msg.what) ? msg.what : null;
      const pageRequest = Number.isSafeInteger(msg.page_request) ? msg.page_request : null;
      if (chooser === null || pageRequest === null) return reply('refuse');
      const fields = prompts.fromPage('device_chooser', sender, reply, { chooser, method: msg.method });
      if (fields === null) return;
      // An accept leaves the browser's call alone (the host picked on its own connection);
      // anything else but `native` cancels.
      const apply = (decision) => {
        reply(decision === 'native' || decision === 'accept' ? decision : 'refuse');
        return decision === 'accept';
      };
      const tag = { tabId: sender.tab.id, frameId: sender.frameId ?? 0, documentId: sender.documentId, pageRequest };
      // The tab's page target, as a hint for matching the host's own view of the chooser
      // (the host only chooses among the candidates it saw itself).
      const ask = (target) => prompts.ask('device_chooser', target ? { ...fields, target } : fields, { apply, tag });
      if (chooser !== 'bluetooth' || !chrome.debugger?.getTargets) return void ask(null);
      chrome.debugger.getTargets().then(
        (ts) => ask(ts.find((t) => t.type === 'page' && t.tabId === sender.tab.id)?.id ?? null),
        () => ask(null),
      );
    },
    // The page got the browser's own answer first (its frame says so; the browser names the
    // frame): the hook keeps it.
    settled(msg, sender) {
      prompts.settle('device_chooser', (t) => t.tabId === sender.tab.id && t.frameId === (sender.frameId ?? 0)
        && t.documentId === sender.documentId && t.pageRequest === msg.page_request);
    },
  };
}
