// Calls the page hook holds before the browser sees them and answers itself when they are
// refused; the browser's way otherwise. The kinds that are nothing more are described here,
// one line each (the host's `held_in_page.rs`):
// - a FedCM navigator.credentials.get({identity}) (inject/48-passkeys.js); headless the
//   browser refuses it after up to 31 s, headful it shows an account chooser;
// - PaymentRequest.show() (inject/48-payment.js); headful with a payment app the browser
//   shows a payment sheet;
// - document.requestStorageAccess() (inject/48-storage-access.js); headful, in another
//   site's frame, the browser may ask the person;
// - EyeDropper.open() (inject/47-eye-dropper.js), made by the browser first and asked about
//   once it is pending (it opened the eye dropper); accepted, left open.
// Kinds of their own files stand on the same adapter: app links (applinks.js), File System
// Access pickers (file_chooser.js).
// The host (the state of record) decides: refuse (the page gets the browser's own refusal
// at once) or let the browser have it; pilot off, the browser's way. prompts.js waits for
// the host; with no host, or no answer in time, it is refused. Message shapes:
// native-host/src/host/protocol.rs.

// The adapter of kind `kind`. `fieldsOf(what)`: the kind's own fields from the hook's `what`
// (page-made, a string), or null for a request that cannot be one of the kind (refused at
// once). A call the browser already made (the eye dropper, 45-pending-call) may settle by
// itself first, and its frame says so (`settled`): the host closes the request, nothing is
// applied.
export function createHeldInPage(kind, prompts, fieldsOf) {
  return {
    request(msg, sender, reply) {
      const own = fieldsOf(msg.what);
      if (own === null) return reply('refuse');
      const fields = prompts.fromPage(kind, sender, reply, own);
      if (fields === null) return;
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      const pageRequest = Number.isSafeInteger(msg.page_request) ? msg.page_request : null;
      const tag = { tabId: sender.tab.id, frameId: sender.frameId ?? 0, documentId: sender.documentId, pageRequest };
      prompts.ask(kind, fields, { apply, tag });
    },
    settled(msg, sender) {
      prompts.settle(kind, (t) => t !== null && t.pageRequest !== null && t.tabId === sender.tab.id
        && t.frameId === (sender.frameId ?? 0) && t.documentId === sender.documentId && t.pageRequest === msg.page_request);
    },
  };
}

// A kind (kind_registry.js) that is this adapter and nothing more.
const heldInPage = (name, fieldsOf) => ({ name, create: ({ prompts }) => createHeldInPage(name, prompts, fieldsOf) });

export const signIn = heldInPage('sign_in', (what) => ({ provider: what.slice(0, 2048) }));
export const payment = heldInPage('payment', (what) => ({ able: what === 'able' }));
export const storageAccess = heldInPage('storage_access', (what) => ({ granted: what === 'granted' }));
export const eyeDropper = heldInPage('eye_dropper', () => ({}));
