// File choosers (<input type=file>) the tab's debugger session intercepted
// (`Page.fileChooserOpened`, debugger.js): only in tabs with a file_chooser rule or under
// must_respond, with the pilot on. The page sees nothing while one waits, as while a person
// looks at the OS file dialog. The host (the state of record) decides:
// - accept: the files it names (checked paths) go to the input as a person's pick
//   (`DOM.setFileInputFiles`: trusted `input` and `change`, real files);
// - refuse (also: no host, nobody in time): the page gets a person's cancel. An intercepted
//   chooser cannot be cancelled, so a new one is opened on the same input and cancelled by
//   the browser itself (interception with `cancel: true`, `showPicker()` from an isolated
//   world): the input's own trusted `cancel` event (MODAL-FACTS 1a, 1c).
// What the record needs (mode, accept types, label, the document's URL) is read in an
// isolated world, where the page's prototypes cannot reach. Message shapes:
// native-host/src/host/protocol.rs.

import { createHeldInPage } from './held_in_page.js';

const WORLD = 'unmodal-file-chooser';
const MAX_TEXT = 300;
// How long a cancel waits for the browser to report the chooser it opened for it. Long: one
// reported after the wait would be taken for the page's, once interception is back, and be
// recorded and cancelled once more (seen at 2 s on a loaded 2-core machine).
const CANCEL_WAIT_MS = 10000;

// Runs in the isolated world with the input as `this`.
const DESCRIBE = `function () {
  const label = (this.labels && this.labels.length ? this.labels[0].textContent : '') ||
    this.getAttribute('aria-label') || this.title || this.name || this.id || '';
  return {
    url: this.ownerDocument.URL,
    accept: this.accept,
    mode: this.webkitdirectory ? 'folder' : this.multiple ? 'multiple' : 'single',
    label: label.trim().replace(/\\s+/g, ' '),
  };
}`;
const REOPEN = 'function () { this.showPicker(); }';

// The kind (kind_registry.js). Per tab, from the host's config: how the tab's debugger
// session intercepts file choosers (`choosers`: false, 'hold': each waits for the host, or
// 'cancel' with `choosers_cancel`: the browser cancels each, the host only hears of it);
// debugger.js asks that of this kind and hands it the choosers it intercepted. A File System
// Access picker (inject/48-file-pickers.js) is of this kind too, held in the page
// (held_in_page.js): `what` is its mode.
const PICKERS = ['open_picker', 'save_picker', 'directory_picker'];
export const fileChooser = {
  name: 'file_chooser',
  tab: {
    fields: ['choosers', 'choosers_cancel'],
    read: ({ choosers, choosers_cancel: cancel }) => (choosers !== true ? false : cancel === true ? 'cancel' : 'hold'),
    reset: false,
  },
  create({ prompts, holds, tab }) {
    const intercepted = createFileChoosers(prompts, holds);
    holds.takeChoosers({ mode: tab, opened: intercepted.opened, settled: intercepted.settled });
    return createHeldInPage('file_chooser', prompts, (what) => ({ mode: PICKERS[what] ?? 'open_picker' }));
  },
};

// `holds`: the tab debugger's sessions and leases (debugger.js).
function createFileChoosers(prompts, holds) {
  const command = (target, method, params = {}) => chrome.debugger.sendCommand(target, method, params);
  // While a cancel is under way in a target (from the answer to `cancel: true` to the answer
  // that ends it: the browser reports choosers in order with its answers), every chooser
  // that opens there is cancelled by the browser itself. One of them is the one opened for
  // the cancel (`mine`); any other is the page's, recorded as already cancelled. Cancels
  // go one at a time per target.
  const windows = new Map(); // target key -> { node, mine: resolve | null }
  const lines = new Map(); // target key -> the last cancel's promise
  const targetKey = (target) => `${target.tabId}/${target.sessionId ?? ''}`;

  const inIsolatedWorld = async (target, frameId, backendNodeId, functionDeclaration, userGesture = false) => {
    const { executionContextId } = await command(target, 'Page.createIsolatedWorld', { frameId, worldName: WORLD });
    const { object } = await command(target, 'DOM.resolveNode', { backendNodeId, executionContextId });
    try {
      const { result, exceptionDetails } = await command(target, 'Runtime.callFunctionOn', {
        objectId: object.objectId, functionDeclaration, returnByValue: true, userGesture,
      });
      if (exceptionDetails) throw new Error(exceptionDetails.exception?.description ?? exceptionDetails.text);
      return result.value;
    } finally {
      command(target, 'Runtime.releaseObject', { objectId: object.objectId }).catch(() => {});
    }
  };

  // The page gets the input's own trusted `cancel`: the browser cancels a chooser opened
  // while interception says so; then interception is back as the tab wants it.
  const cancel = (target, frameId, backendNodeId) => {
    const line = targetKey(target);
    const next = (lines.get(line) ?? Promise.resolve()).then(() => cancelNow(target, frameId, backendNodeId));
    const kept = next.catch(() => {});
    lines.set(line, kept);
    kept.then(() => { if (lines.get(line) === kept) lines.delete(line); });
    return next;
  };
  const cancelNow = async (target, frameId, backendNodeId) => {
    const line = targetKey(target);
    const w = { node: backendNodeId, mine: null };
    const seen = new Promise((resolve) => {
      w.mine = resolve;
      setTimeout(resolve, CANCEL_WAIT_MS);
    });
    try {
      await command(target, 'Page.setInterceptFileChooserDialog', { enabled: true, cancel: true });
      windows.set(line, w);
      await inIsolatedWorld(target, frameId, backendNodeId, REOPEN, true);
      await seen;
    } finally {
      await command(target, 'Page.setInterceptFileChooserDialog', holds.interceptParams(target.tabId)).catch(() => {});
      if (windows.get(line) === w) windows.delete(line);
    }
  };

  const give = async (target, backendNodeId, files) => {
    if (!Array.isArray(files) || files.length === 0 || !files.every((f) => typeof f === 'string')) {
      throw new Error('the answer named no files');
    }
    try {
      await command(target, 'DOM.setFileInputFiles', { files, backendNodeId });
    } catch (err) {
      const why = String(err?.message ?? err);
      throw new Error(why === 'Not allowed'
        ? 'the browser refused the files: switch on "Allow access to file URLs" for Unmodal in chrome://extensions'
        : why);
    }
  };

  return {
    // Resolves once no cancel is under way in the tab (its own session or its frames').
    settled(tabId) {
      return Promise.all([...lines].filter(([key]) => key.startsWith(`${tabId}/`)).map(([, kept]) => kept));
    },
    // A chooser the session intercepted (`params`: backendNodeId, frameId, mode).
    async opened(target, params) {
      const { backendNodeId, frameId } = params;
      // A File System Access picker has no node (the page hook answers pickers; one that
      // reaches the browser, pilot off, is never intercepted).
      if (!Number.isInteger(backendNodeId) || typeof frameId !== 'string') return;
      const w = windows.get(targetKey(target));
      if (w?.mine && w.node === backendNodeId) {
        const mine = w.mine;
        w.mine = null;
        return void mine();
      }
      // The page saw its cancel already: in a cancel's window, or where the browser cancels
      // every chooser (a tab whose choosers are all cancelled, whatever they are).
      const cancelled = w !== undefined || holds.intercepting(target.tabId) === 'cancel';
      let about;
      try {
        about = await inIsolatedWorld(target, frameId, backendNodeId, DESCRIBE);
      } catch {
        return; // the input or its document went: nothing waits any more
      }
      const fields = {
        tab_id: target.tabId,
        frame_id: 0,
        url: String(about?.url ?? ''),
        mode: ['single', 'multiple', 'folder'].includes(about?.mode) ? about.mode : 'single',
        accept: String(about?.accept ?? '').slice(0, MAX_TEXT),
        label: String(about?.label ?? '').slice(0, MAX_TEXT),
      };
      // The session may be let go meanwhile (a once-rule spent): the lease keeps it.
      const apply = async (decision, answer) => {
        await holds.lease(target.tabId);
        try {
          if (decision === 'accept') {
            await give(target, backendNodeId, answer?.files);
            return true;
          }
          if (!cancelled) await cancel(target, frameId, backendNodeId);
          return false;
        } catch (err) {
          if (decision === 'accept' && !cancelled) await cancel(target, frameId, backendNodeId).catch(() => {});
          throw err;
        } finally {
          holds.unlease(target.tabId);
        }
      };
      prompts.ask('file_chooser', fields, { apply });
    },
  };
}
