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
// - `file_chooser` (File System Access pickers, inject/48-file-pickers.js).
// The host (the state of record) decides: refuse (the page gets the browser's own refusal
// at once) or let the browser have it; pilot off, the browser's way. prompts.js waits for
// the host; with no host, or no answer in time, it is refused. Message shapes:
// native-host/src/host/protocol.rs.

// `fieldsOf(what)`: the kind's own fields from the hook's `what` (page-made, a string), or
// null for a request that cannot be one of the kind (refused at once).
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
      prompts.ask(kind, fields, { apply });
    },
  };
}
