// Print: a window.print() the page hook (inject/49-print.js) answered itself — as a
// person's cancel of the preview with the pilot on, by the browser's own print() with it
// off. Only recorded here: the host's decision (rule, policy, agent) changes nothing the
// page already has. Message shapes: native-host/src/host/protocol.rs.

// `pilotOn()`: the human's switch (off: the browser printed, only reported).
export function createPrints(prompts, pilotOn) {
  return {
    request(msg, sender, reply) {
      const fields = { tab_id: sender.tab.id, frame_id: sender.frameId, url: String(sender.url ?? '') };
      if (!pilotOn()) {
        prompts.native('print', fields);
        return reply('native');
      }
      prompts.ask('print', fields, { apply: (decision) => { reply(decision); return false; } });
    },
  };
}
