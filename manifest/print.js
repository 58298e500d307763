// Print: a window.print() the page hook (inject/49-print.js) answered itself — as a
// person's cancel of the preview with the pilot on, by the browser's own print() with it
// off. The host (the state of record) decides what more happens:
// - cancel: nothing (the page already has its cancel);
// - accept: the tab's page is printed to PDF through its debugger (Page.printToPDF: the
//   page gets beforeprint and afterprint, its print styles apply) and the PDF goes to the
//   host (`print_pdf`), which writes the file it chose; the worker never names a path.
// Message shapes: native-host/src/host/protocol.rs.

// The largest PDF sent to the host (base64), under the host's 64 MB frame limit.
const MAX_DATA = 44 * 1024 * 1024;

// The kind (kind_registry.js): the page hook asks about it; its side message carries the PDF.
export const print = {
  name: 'print',
  sends: ['print_pdf'],
  create: ({ prompts, holds, toHost }) => createPrints(prompts, holds, toHost),
};

// Pilot off: the browser printed, only reported (prompts.fromPage). `holds`: the
// tab debugger's leases (debugger.js).
function createPrints(prompts, holds, toHost) {
  const printToPdf = async (tabId, id) => {
    await holds.lease(tabId);
    try {
      const { data } = await chrome.debugger.sendCommand({ tabId }, 'Page.printToPDF', { printBackground: true });
      if (typeof data !== 'string' || data.length > MAX_DATA) throw new Error('the PDF is over 32 MB');
      toHost({ type: 'print_pdf', tab_id: tabId, id, data });
    } catch (err) {
      toHost({ type: 'print_pdf', tab_id: tabId, id, error: String(err?.message ?? err).slice(0, 300) });
      throw err;
    } finally {
      holds.unlease(tabId);
    }
  };
  return {
    request(msg, sender, reply) {
      // Where the browser shows no preview (a sandbox without allow-modals, a document going
      // away, a removed frame), the hook let its print() do nothing: recorded as that.
      const notShown = /^no_dialog:(sandboxed|unloading|detached)$/.exec(msg.method);
      if (notShown) {
        prompts.native('print', prompts.sent(sender, { no_dialog: notShown[1] }));
        return reply('native');
      }
      const fields = prompts.fromPage('print', sender, reply, {});
      if (fields === null) return;
      const apply = async (decision, answer) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        if (decision !== 'accept') return false;
        await printToPdf(sender.tab.id, answer.id);
        return true;
      };
      prompts.ask('print', fields, { apply });
    },
  };
}
