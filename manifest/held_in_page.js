// Calls the page hook holds before the browser sees them and answers itself when they are
// refused; the browser's way otherwise:
// - `sign_in`: a FedCM navigator.credentials.get({identity}) (inject/48-passkeys.js);
//   headless the browser refuses it after up to 31 s, headful it shows an account chooser;
// - `payment`: PaymentRequest.show() (inject/48-payment.js); headful with a payment app
//   the browser shows a payment sheet;
// - `storage_access`: document.requestStorageAccess() (inject/48-storage-access.js);
//   headful, in another site's frame, the browser may ask the person;
// - `app_link`: a navigation to a scheme the OS handles, cancelled by the hook and opened
//   again on an accept (applinks.js, inject/47-applinks.js);
// - `file_chooser` (File System Access pickers, inject/48-file-pickers.js);
// - `eye_dropper`: EyeDropper.open() (inject/47-eye-dropper.js), made by the browser first
//   and asked about once it is pending (it opened the eye dropper); accepted, left open.
// The host (the state of record) decides: refuse (the page gets the browser's own refusal
// at once) or let the browser have it; pilot off, the browser's way. prompts.js waits for
// the host; with no host, or no answer in time, it is refused. Message shapes:
// native-host/src/host/protocol.rs.

// `fieldsOf(what)`: the kind's own fields from the hook's `what` (page-made, a string), or
// null for a request that cannot be one of the kind (refused at once). A call the browser
// already made (the eye dropper, 45-pending-call) may settle by itself first, and its
// frame says so (`settled`): the host closes the request, nothing is applied.
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
