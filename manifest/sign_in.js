// Sign-in (FedCM): a navigator.credentials.get({identity}) the page hook
// (inject/48-passkeys.js) holds before the browser sees it; headless the browser refuses it
// after up to 31 s, headful it shows an account chooser that waits for a person. The host
// (the state of record) decides: refuse (the page gets NetworkError at once) or let the
// browser have it; pilot off, the browser's way. prompts.js waits for the host; with no host,
// or no answer in time, it is refused. Message shapes: native-host/src/host/protocol.rs.

// `pilotOn()`: the human's switch (off: the browser's way, only reported).
export function createSignIns(prompts, pilotOn) {
  return {
    request(msg, sender, reply) {
      const fields = {
        tab_id: sender.tab.id,
        frame_id: sender.frameId,
        url: String(sender.url ?? ''),
        provider: msg.what.slice(0, 2048),
      };
      if (!pilotOn()) {
        prompts.native('sign_in', fields);
        return reply('native');
      }
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      prompts.ask('sign_in', fields, { apply });
    },
  };
}
