// Calls the page hook holds before the browser sees them and answers itself when they are
// refused; the browser's way otherwise:
// - `sign_in`: a FedCM navigator.credentials.get({identity}) (inject/48-passkeys.js);
//   headless the browser refuses it after up to 31 s, headful it shows an account chooser;
// - `payment`: PaymentRequest.show() (inject/48-payment.js); headful with a payment app
//   the browser shows a payment sheet;
// - `storage_access`: document.requestStorageAccess() (inject/48-storage-access.js);
//   headful, in another site's frame, the browser may ask the person.
// The host (the state of record) decides: refuse (the page gets the browser's own refusal
// at once) or let the browser have it; pilot off, the browser's way. prompts.js waits for
// the host; with no host, or no answer in time, it is refused. Message shapes:
// native-host/src/host/protocol.rs.

// `pilotOn()`: the human's switch (off: the browser's way, only reported); `fieldsOf(what)`:
// the kind's own fields from the hook's `what` (page-made, a string).
export function createHeldInPage(kind, prompts, pilotOn, fieldsOf) {
  return {
    request(msg, sender, reply) {
      const fields = {
        tab_id: sender.tab.id,
        frame_id: sender.frameId,
        url: String(sender.url ?? ''),
        ...fieldsOf(msg.what),
      };
      if (!pilotOn()) {
        prompts.native(kind, fields);
        return reply('native');
      }
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      prompts.ask(kind, fields, { apply });
    },
  };
}
