// The pages' side: what content.js and the popup send this worker, and each tab's config
// pushed to its frames. Invariants:
// - Only this extension's own scripts are heard (`sender.id`); tab, frame and URLs come
//   from the browser, never from the page.
// - A frame whose page shows a native dialog cannot answer until the dialog closes: no
//   push waits for a frame longer than FRAME_WAIT_MS.
// - A sandboxed frame's messages name about:blank (measured): the browser's record of the
//   frame's document has its URL. What such a frame sends waits in one line, so it keeps
//   its order.
// - Pages are served once `ready` (the pilot's state is known).
const FRAME_WAIT_MS = 2000;
const MAX_FIELD = 8192;

const clip = (v) => (typeof v === 'string' ? v.slice(0, MAX_FIELD) : v);

// `configFor(tabId)`: the config string a tab's pages get now; `report(msg)`: a numbered
// report to the host (host_port.js); `asks`: the kinds' adapters by kind; `settled(msg,
// sender)`: a page request's end; `status()`: what the popup shows.
export function createPageRouter({ ready, configFor, report, asks, settled, pilot, tabs, stalledTabs, sandbox, status }) {
  // Per frame, what waits for the frame's URL (a sandboxed frame's reports and asks): in order.
  const frameLines = new Map();

  const answerOf = (tabId, msg, frameId) => Promise.race([
    chrome.tabs.sendMessage(tabId, msg, { frameId }),
    new Promise((_, reject) => setTimeout(() => reject(new Error('the frame did not answer')), FRAME_WAIT_MS)),
  ]);

  // Resolves to whether the tab's top frame (and every frame that answered) took the config.
  async function pushConfig(tabId) {
    const frames = await chrome.webNavigation.getAllFrames({ tabId }).catch(() => null);
    const ids = frames && frames.length ? frames.map((f) => f.frameId) : [0];
    // Built after the wait: pushes for one tab may overtake each other there, and the last
    // to be sent must carry the newest config, not the one current when it started.
    const msg = { type: 'config', config: configFor(tabId) };
    const sent = await Promise.allSettled(ids.map((frameId) => answerOf(tabId, msg, frameId)));
    return sent.some((r, i) => ids[i] === 0 && r.status === 'fulfilled' && r.value === true);
  }

  // Runs `then(url)` with the URL of the document a frame's message came from.
  function inFrameLine(sender, then) {
    const url = clip(sender.url ?? '');
    if (!url.startsWith('about:') || !sender.frameId) return Promise.resolve(then(url));
    const key = `${sender.tab.id}/${sender.frameId}`;
    const line = (frameLines.get(key) ?? Promise.resolve())
      .then(() => chrome.webNavigation.getFrame({ tabId: sender.tab.id, frameId: sender.frameId }))
      .then((f) => (typeof f?.url === 'string' && f.url !== '' && !f.url.startsWith('about:') ? clip(f.url) : url), () => url)
      .then(then);
    const kept = line.catch(() => {});
    frameLines.set(key, kept);
    kept.then(() => {
      if (frameLines.get(key) === kept) frameLines.delete(key);
    });
    return line;
  }

  chrome.runtime.onMessage.addListener((msg, sender, reply) => {
    if (sender.id !== chrome.runtime.id || !msg || typeof msg !== 'object') return;
    if (msg.type === 'status') {
      reply(status());
      return;
    }
    if (msg.type === 'pilot_switch') {
      const failed = () => reply({ on: pilot.on(), refused: 'Unmodal could not ask its host; try again.' });
      ready.then(() => pilot.request(msg.on === true, sender)).then(reply, failed);
      return true;
    }
    if (!sender.tab) return;
    if (msg.type === 'input' && sender.frameId === 0) {
      tabs.input(sender.tab);
      return;
    }
    if (msg.type === 'ask' && Object.hasOwn(asks, msg.kind)) {
      // Whatever fails here, the hook takes its kind's own safe way (content.js answers so).
      inFrameLine(sender, (url) => ready.then(() => asks[msg.kind].request(msg, { ...sender, url }, reply))).catch(() => reply(null));
      return true;
    }
    if (msg.type === 'settled' && Number.isSafeInteger(msg.page_request)) {
      // A chooser the browser answered first, an accepted passkey call done. After the
      // request it follows (that one waits for `ready` too).
      ready.then(() => settled(msg, sender));
      return;
    }
    if (msg.type === 'hello') {
      // Once this worker knows the pilot's state (it reads it as it starts). With the config
      // goes what the frame cannot see of its own sandbox (sandbox.js); a frame that says
      // hello is another origin's (or opaque): its rules wait for its owner element to be
      // read, so both come together (until then the default answers as such a sandbox does).
      const tabId = sender.tab.id;
      stalledTabs.hello(sender);
      const sandboxed = inFrameLine(sender, (url) => sandbox.blocksModals(sender, url, msg.index));
      Promise.all([ready, sandboxed.catch(() => false)])
        .then(([, blocks]) => reply({ type: 'config', config: configFor(tabId), sandboxed: blocks }));
      return true;
    } else if (msg.type === 'dialogs' && Array.isArray(msg.reports)) {
      inFrameLine(sender, (url) => {
        const where = {
          tab_id: sender.tab.id,
          frame_id: sender.frameId ?? 0,
          document_id: sender.documentId ?? null,
          url,
          page_url: clip(sender.tab.url ?? ''),
        };
        for (const r of msg.reports.slice(0, 64)) {
          if (!r || typeof r !== 'object') continue;
          report({ type: 'dialog', ...where, report: r });
        }
        if (Number.isSafeInteger(msg.folded) && msg.folded > 0) report({ type: 'folded', ...where, count: msg.folded });
      });
    }
  });

  return { pushConfig };
}
