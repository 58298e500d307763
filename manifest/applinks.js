// App links: a navigation to a scheme that is not the web's (mailto:, myapp://, web+x:),
// which the page hook (inject/47-applinks.js) cancelled before the browser handed it to the
// OS (pilot on) or let go (pilot off). The host (the state of record) decides: open it (the
// hook navigates again, as the page did) or leave it cancelled; prompts.js waits for the
// host, and with no host, or no answer in time, it stays cancelled. Message shapes:
// native-host/src/host/protocol.rs.
const MAX_URL = 2048;

// `pilotOn()`: the human's switch (off: the browser's way, only reported).
export function createAppLinks(prompts, pilotOn) {
  return {
    request(msg, sender, reply) {
      const target = msg.what.slice(0, MAX_URL);
      if (target === '') return reply('refuse');
      const fields = { tab_id: sender.tab.id, frame_id: sender.frameId, url: String(sender.url ?? ''), target };
      if (!pilotOn()) {
        prompts.native('app_link', fields);
        return reply('native');
      }
      const apply = (decision) => {
        reply(decision === 'accept' ? 'accept' : 'refuse');
        return decision === 'accept';
      };
      prompts.ask('app_link', fields, { apply });
    },
  };
}
