// Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth, the screen-share picker): the
// page hook (inject/46-choosers.js) saw one open and asks here; the host (the state of
// record) decides — cancel now, or hold for the agent (whose only answer is cancel: no
// extension can pick a device) — or, pilot off, the browser's chooser stands. prompts.js
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
      // Nobody can pick a device: anything but `native` cancels.
      const apply = (decision) => {
        reply(decision === 'native' ? 'native' : 'refuse');
        return false;
      };
      const tag = { tabId: sender.tab.id, frameId: sender.frameId ?? 0, documentId: sender.documentId, pageRequest };
      prompts.ask('device_chooser', fields, { apply, tag });
    },
    // The page got the browser's own answer first (its frame says so; the browser names the
    // frame): the hook keeps it.
    settled(msg, sender) {
      prompts.settle('device_chooser', (t) => t.tabId === sender.tab.id && t.frameId === (sender.frameId ?? 0)
        && t.documentId === sender.documentId && t.pageRequest === msg.page_request);
    },
  };
}
