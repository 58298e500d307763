// Passkeys: a WebAuthn create() or get() the page hook (inject/48-passkeys.js) holds before
// the browser sees it; the browser's passkey sheet, which headless never shows, would drop
// every input to the tab. The host (the state of record) decides: refuse (the page gets a
// person's cancel) or, with the pilot off, the browser's own way. prompts.js waits for the
// host; with no host, or no answer in time, it is refused. Message shapes:
// native-host/src/host/protocol.rs.

// `pilotOn()`: the human's switch (off: the browser's way, only reported).
export function createPasskeys(prompts, pilotOn) {
  return {
    request(msg, sender, reply) {
      const fields = {
        tab_id: sender.tab.id,
        frame_id: sender.frameId,
        url: String(sender.url ?? ''),
        operation: msg.method === 'create' ? 'create' : 'get',
        rp_id: msg.what.slice(0, 256),
      };
      if (!pilotOn()) {
        prompts.native('passkey', fields);
        return reply('native');
      }
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      prompts.ask('passkey', fields, { apply });
    },
  };
}
