// Debugger sessions for tabs under a dialog policy (must_respond, auto_accept, auto_dismiss).
// The page lets the browser open a dialog no rule answers; the session holds it open, the
// host (the state of record) decides who answers, and this file only carries messages:
// the dialog to the host, the host's answer to the browser, the close back to the host.
const VERSION = '1.3';
const MAX_FIELD = 8192;
// inject.js reads (and deletes) this before any page script runs; see manifest/inject.
const HANDOFF = '__unmodalConfig';
// The sessions outlive this worker (the browser keeps them when it stops the worker); what
// the next worker needs to take them over is kept in chrome.storage.session under this key.
const SAVED = 'debuggerSessions';
// Nothing else may wake a stopped worker while a dialog blocks its page (the page is
// frozen, the agent's calls go to a host that went with the worker): an alarm does, every
// second while any tab has a session (set before any dialog can open, so a worker stopped
// at any moment is woken). Unpacked extensions get that period; a packed one gets Chrome's
// minimum, 30 s.
const WAKE = 'unmodal-debugger-sessions';
const WAKE_MINUTES = 1 / 60;

const clip = (v) => (typeof v === 'string' ? v.slice(0, MAX_FIELD) : '');

// `wanted(tabId)`: whether the tab should have a session now; `configFor(tabId)`: its config.
// File choosers go to whoever took them (`takeChoosers`, as the worker starts:
// file_chooser.js): `mode(tabId)` says how the tab's session intercepts them (false, 'hold'
// or 'cancel': the browser cancels each itself), each intercepted one goes to
// `opened(target, params)`, and `settled(tabId)` resolves once no cancel is under way in the
// tab. All are read when a queued step runs, so whatever order steps were queued in, the tab
// ends in the newest wanted state.
const NO_CHOOSERS = { mode: () => false, opened: () => {}, settled: () => Promise.resolve() };
const MODES = ['hold', 'cancel'];
// `Page.setInterceptFileChooserDialog`'s parameters for an interception mode.
const interceptParams = (mode) => ({ enabled: MODES.includes(mode), cancel: mode === 'cancel' });
export function createHolds(toHost, wanted, configFor) {
  let choosers = NO_CHOOSERS;
  const intercept = (tabId) => choosers.mode(tabId);
  const sessions = new Map(); // tabId -> { script, mainFrame, open: { hold } | null, children, choosers }
  // AI Web Pilot calls borrow the tab's debugger for a call (pilot_tools.js): the policy's
  // session when there is one, else a session of their own (`owned`), detached when the
  // last borrower is done. Either side may take the other's session over meanwhile.
  const leases = new Map(); // tabId -> { count, owned }
  const queues = new Map(); // tabId -> promise chain: attach/detach/script steps in order
  let holdSeq = 0;
  let orphaned = false; // no host: whatever opens is dismissed at once
  let early = []; // events that came before this worker took its sessions over (`adoptStale`)

  let waking = false;
  const remember = () => {
    if (waking !== sessions.size > 0) {
      waking = sessions.size > 0;
      (waking ? chrome.alarms.create(WAKE, { periodInMinutes: WAKE_MINUTES }) : chrome.alarms.clear(WAKE)).catch(() => {});
    }
    return save();
  };
  const save = () => chrome.storage.session.set({
    [SAVED]: {
      seq: holdSeq,
      tabs: Object.fromEntries([...sessions].map(([tabId, s]) =>
        [tabId, { script: s.script, mainFrame: s.mainFrame, open: s.open, children: [...s.children], choosers: s.choosers }])),
    },
  }).catch(() => {});

  // What the host hears of held dialogs leaves only once the worker's own record of them is
  // written: the agent acts on what the host shows (it may stop this worker the next
  // moment), and a write the browser had not yet taken is lost with a stopped worker. One
  // queue, so these messages keep their order.
  let written = Promise.resolve();
  const toHostWhenSaved = (...msgs) => {
    const saving = remember();
    written = Promise.all([written, saving]).then(() => msgs.forEach(toHost));
  };

  // `target`: { tabId } for the tab's session, { tabId, sessionId } for a child session.
  const command = (target, method, params = {}) => chrome.debugger.sendCommand(target, method, params);
  const send = (tabId, method, params) => command({ tabId }, method, params);

  const serial = (tabId, step) => {
    const next = (queues.get(tabId) ?? Promise.resolve()).then(step, step);
    queues.set(tabId, next.catch(() => {}));
    return next;
  };

  // New documents of the tab get the config before their first script (closes the race
  // between a page's first inline script and the config message). The tab's own session
  // covers its top document and the frames in its process; frames from other sites run in
  // other renderers, each reached through a child session (see `adopt`).
  const scriptFor = (config) =>
    ({ source: `Object.defineProperty(window, ${JSON.stringify(HANDOFF)}, { value: ${JSON.stringify(config)}, configurable: true });` });
  const replaceScript = async (target, old, config) => {
    const { identifier } = await command(target, 'Page.addScriptToEvaluateOnNewDocument', scriptFor(config));
    if (old !== null) await command(target, 'Page.removeScriptToEvaluateOnNewDocument', { identifier: old }).catch(() => {});
    return identifier;
  };
  // File choosers are intercepted (held, answered by file_chooser.js) in the tab's session
  // and its frames' child sessions, only while the tab wants it (MODAL-FACTS 1c: an
  // intercepted chooser nobody answers stays open for good).
  // A cancel under way keeps its target in the browser-cancels mode until the browser has
  // reported the chooser it reopened, which may come after the page has its cancel. A
  // change made before then left that chooser held for good, and no later click on the
  // input opened one (seen under load). So a change waits for the tab's cancels; each puts
  // the tab's mode back as it ends.
  const interceptChoosers = async (tabId, s) => {
    if (s.choosers === intercept(tabId)) return;
    await choosers.settled(tabId);
    const want = intercept(tabId);
    if (s.choosers === want) return;
    s.choosers = want;
    const params = interceptParams(want);
    await command({ tabId }, 'Page.setInterceptFileChooserDialog', params);
    await Promise.allSettled([...s.children.keys()].map((sessionId) =>
      command({ tabId, sessionId }, 'Page.setInterceptFileChooserDialog', params)));
  };
  const installScript = async (tabId, s, config) => {
    s.script = await replaceScript({ tabId }, s.script, config);
    await Promise.allSettled([...s.children].map(async ([sessionId, old]) => {
      s.children.set(sessionId, await replaceScript({ tabId, sessionId }, old, config));
    }));
  };

  // Out-of-process frames (and frames nested in them) attach paused, before their first
  // document: they get the config script, then run. Queued with the tab's other steps, so a
  // later config change (installScript) already finds this frame among the children.
  // Whatever fails, the frame must run.
  const AUTO_ATTACH = { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: [{ type: 'iframe' }] };
  const adopt = (tabId, s, sessionId) => serial(tabId, async () => {
    const target = { tabId, sessionId };
    try {
      // The new-document script runs only in a session with the Page domain on.
      await command(target, 'Page.enable');
      if (s.choosers) await command(target, 'Page.setInterceptFileChooserDialog', interceptParams(s.choosers));
      await command(target, 'Target.setAutoAttach', AUTO_ATTACH);
      s.children.set(sessionId, await replaceScript(target, null, configFor(tabId)));
      remember();
    } catch {
      // The frame went away, or the session ended: nothing left to prepare.
    } finally {
      command(target, 'Runtime.runIfWaitingForDebugger').catch(() => {});
    }
  });

  // Attaches or detaches so the tab has a session exactly when wanted; keeps its
  // new-document config current. Resolves to { attached, error? }.
  const sync = (tabId) => serial(tabId, async () => {
    let s = sessions.get(tabId);
    if (!wanted(tabId)) {
      if (s) {
        sessions.delete(tabId);
        // The borrower detaches when done. Until then the browser's report of a chooser it
        // reopens (a file chooser's cancel) must still reach it: `leftOver`. Marked before
        // `hear()`, so the listener is never let go meanwhile: the browser drops an event
        // that comes between a removal and the next adding (seen under load: a cancel's
        // report lost, the cancel waiting out its 10 s).
        const lease = leases.get(tabId);
        if (lease) {
          lease.owned = true;
          lease.leftOver = true;
        }
        hear();
        remember();
        // A dialog it holds would stay open with nobody to catch it.
        if (s.open !== null) await send(tabId, 'Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
        if (!lease) await chrome.debugger.detach({ tabId }).catch(() => {});
      }
      return { attached: false };
    }
    try {
      if (!s) {
        const lease = leases.get(tabId);
        if (lease?.owned) {
          // A pilot call's session becomes the policy's.
          lease.owned = false;
          lease.leftOver = false;
        } else await chrome.debugger.attach({ tabId }, VERSION);
        s = { script: null, mainFrame: null, open: null, children: new Map(), choosers: false };
        sessions.set(tabId, s);
        hear();
        await send(tabId, 'Page.enable');
        const { frameTree } = await send(tabId, 'Page.getFrameTree');
        s.mainFrame = frameTree.frame.id;
        await send(tabId, 'Target.setAutoAttach', AUTO_ATTACH);
      }
      await installScript(tabId, s, configFor(tabId));
      await interceptChoosers(tabId, s);
      remember();
      return { attached: true };
    } catch (err) {
      if (sessions.get(tabId) === s && s) {
        sessions.delete(tabId);
        hear();
        await chrome.debugger.detach({ tabId }).catch(() => {});
      }
      return { attached: false, error: String(err?.message ?? err) };
    }
  });

  const onEvent = (source, method, params) => {
    if (early !== null) {
      early.push([source, method, params]);
      return;
    }
    const tabId = source.tabId;
    const s = sessions.get(tabId);
    if (!params) return;
    if (!s) {
      if (method === 'Page.fileChooserOpened' && leases.get(tabId)?.leftOver) {
        choosers.opened(source.sessionId ? { tabId, sessionId: source.sessionId } : { tabId }, params);
      }
      return;
    }
    // Child sessions (out-of-process frames) matter only for attaching their own children;
    // the tab's session reports every dialog of the tab, theirs too.
    if (method === 'Target.attachedToTarget') {
      adopt(tabId, s, params.sessionId);
      return;
    }
    if (method === 'Target.detachedFromTarget') {
      s.children.delete(params.sessionId);
      remember();
      return;
    }
    if (method === 'Page.fileChooserOpened') {
      choosers.opened(source.sessionId ? { tabId, sessionId: source.sessionId } : { tabId }, params);
      return;
    }
    if (source.sessionId) return;
    if (method === 'Page.javascriptDialogOpening') {
      if (orphaned) {
        send(tabId, 'Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
        return;
      }
      // The browser shows one dialog per tab at a time; the next waits for this one. Kept
      // before the host hears of it: a worker stopped from then on must know it is open.
      s.open = { hold: ++holdSeq };
      toHostWhenSaved({
        type: 'held',
        tab_id: tabId,
        hold: s.open.hold,
        kind: clip(params.type),
        message: clip(params.message),
        default_prompt: clip(params.defaultPrompt),
        url: clip(params.url),
        top_frame: params.frameId === undefined || params.frameId === s.mainFrame,
      });
    } else if (method === 'Page.javascriptDialogClosed') {
      if (s.open === null) return;
      const closed = { type: 'held_closed', tab_id: tabId, hold: s.open.hold, accepted: params.result === true, text: clip(params.userInput) };
      s.open = null;
      toHostWhenSaved(closed);
    } else if (method === 'Page.frameNavigated' && params.frame && !params.frame.parentId) {
      s.mainFrame = params.frame.id;
      remember();
    }
  };
  // Registered only while it has something to do (sessions to serve, or events to keep
  // until they are taken over): while any listener is registered, every event of every
  // attached tab crosses into this worker, and a pilot call's Debugger.enable reports each
  // script of the page (pilot_tools.js listens only while it waits on an event too).
  let heard = true;
  chrome.debugger.onEvent.addListener(onEvent);
  function hear() {
    const want = early !== null || sessions.size > 0 || [...leases.values()].some((l) => l.leftOver);
    if (want === heard) return;
    heard = want;
    if (want) chrome.debugger.onEvent.addListener(onEvent);
    else chrome.debugger.onEvent.removeListener(onEvent);
  }

  // The browser ended the session: a human cancelled the debugging bar, the tab went to a
  // page extensions may not debug, or it closed. The host falls the tab back to auto.
  chrome.debugger.onDetach.addListener((source, reason) => {
    leases.delete(source.tabId);
    hear();
    const s = sessions.get(source.tabId);
    if (!s) return;
    sessions.delete(source.tabId);
    hear();
    const detached = { type: 'debugger_detached', tab_id: source.tabId, reason: String(reason) };
    if (s.open === null) toHostWhenSaved(detached);
    else toHostWhenSaved({ type: 'held_closed', tab_id: source.tabId, hold: s.open.hold, accepted: false, text: '', gone: true }, detached);
  });

  // The host's answer to a held dialog.
  const answer = async (msg) => {
    const s = sessions.get(msg.tab_id);
    const reply = { type: 'answer_result', tab_id: msg.tab_id, hold: msg.hold, ok: false };
    if (!s || s.open === null || s.open.hold !== msg.hold) {
      toHost({ ...reply, error: 'the dialog is no longer open' });
      return;
    }
    const params = { accept: msg.accept === true };
    if (typeof msg.text === 'string') params.promptText = msg.text;
    try {
      await send(msg.tab_id, 'Page.handleJavaScriptDialog', params);
      toHost({ ...reply, ok: true });
    } catch (err) {
      toHost({ ...reply, error: String(err?.message ?? err) });
    }
  };

  // No host: nobody can answer, so nothing may stay held. Held dialogs are dismissed, and
  // so is every dialog that opens until `reset` (the pages' new config) is delivered; only
  // then do the sessions end, so no page is left holding a dialog nobody catches.
  const releaseAll = async (reset) => {
    orphaned = true;
    for (const [tabId, s] of sessions) {
      if (s.open !== null) send(tabId, 'Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
      s.open = null;
    }
    remember();
    await reset;
    const tabs = [...sessions.keys()];
    await Promise.allSettled(tabs.map((tabId) => sync(tabId)));
    orphaned = false;
  };

  // A worker that starts takes over the sessions its predecessor left (the browser stopped
  // it: idle, update, crash), dialogs held in them included: they wait on for the agent.
  // A session of ours it knows nothing about is let go, its dialog dismissed. Sessions of
  // other debuggers are not ours to touch (our commands to them fail). Resolves to the
  // tabs let go.
  const adoptStale = async () => {
    const saved = (await chrome.storage.session.get(SAVED).catch(() => ({})))[SAVED] ?? {};
    holdSeq = Math.max(holdSeq, Number.isSafeInteger(saved.seq) ? saved.seq : 0);
    const known = saved.tabs ?? {};
    const targets = await chrome.debugger.getTargets().catch(() => []);
    const released = [];
    await Promise.all(targets.filter((t) => t.attached && t.tabId !== undefined).map(async ({ tabId }) => {
      // Answered by the browser itself, so even while a dialog blocks the page.
      if (!(await send(tabId, 'Target.getTargetInfo').then(() => true, () => false))) return;
      const was = known[tabId];
      if (was) {
        sessions.set(tabId, { script: was.script ?? null, mainFrame: was.mainFrame ?? null, open: was.open ?? null, children: new Map(was.children ?? []), choosers: MODES.includes(was.choosers) ? was.choosers : false });
        // A dialog nobody wrote down (the worker stopped first) would stay open unseen.
        if (!was.open) await send(tabId, 'Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
        return;
      }
      await send(tabId, 'Page.handleJavaScriptDialog', { accept: false }).catch(() => {});
      if (await chrome.debugger.detach({ tabId }).then(() => true, () => false)) released.push(tabId);
    }));
    remember();
    const missed = early;
    early = null;
    for (const [source, method, params] of missed) onEvent(source, method, params);
    hear();
    return released;
  };

  // The host answered `hello` (configs first, then `resume`): a session it wants no more
  // (it lost its state) ends, after its dialog is dismissed.
  const settle = () => Promise.allSettled([...sessions.keys()].filter((tabId) => !wanted(tabId)).map((tabId) => sync(tabId)));

  // For `hello`: the dialogs held open now.
  const open = () => [...sessions].filter(([, s]) => s.open !== null).map(([tabId, s]) => ({ tab_id: tabId, hold: s.open.hold }));

  // A pilot call's hold on the tab's debugger; `unlease` when done. `sent()` is called once
  // commands may follow: at once when attached, else as soon as the attach is on its way
  // (the browser runs this worker's calls in order, so a command sent next finds the
  // session; saves a round trip). The returned promise says whether the attach worked.
  const lease = (tabId, sent = () => {}) => serial(tabId, async () => {
    const l = leases.get(tabId);
    if (l) {
      l.count += 1;
      sent();
      return;
    }
    const owned = !sessions.has(tabId);
    if (owned) {
      const attaching = chrome.debugger.attach({ tabId }, VERSION);
      sent();
      await attaching;
    } else sent();
    leases.set(tabId, { count: 1, owned });
  });
  const unlease = (tabId) => serial(tabId, async () => {
    const l = leases.get(tabId);
    if (!l || --l.count > 0) return;
    leases.delete(tabId);
    hear();
    if (l.owned && !sessions.has(tabId)) await chrome.debugger.detach({ tabId }).catch(() => {});
  });
  // The out-of-process frames a policy's session is attached to (child session ids).
  const children = (tabId) => [...(sessions.get(tabId)?.children.keys() ?? [])];

  return {
    sync, answer, releaseAll, adoptStale, settle, open, lease, unlease, children,
    // File choosers are one kind's (see above); taken once, before any event comes.
    takeChoosers(taker) {
      if (choosers !== NO_CHOOSERS) throw new Error('file choosers are taken already');
      choosers = taker;
    },
    // Resolves once every held-dialog message queued so far has gone to the host.
    sent: () => written,
    attached: (tabId) => sessions.has(tabId),
    // How the tab's session intercepts file choosers now (false, 'hold', 'cancel'), and the
    // parameters that put it back so.
    intercepting: (tabId) => sessions.get(tabId)?.choosers ?? false,
    interceptParams: (tabId) => interceptParams(sessions.get(tabId)?.choosers ?? false),
    holding: (tabId) => sessions.get(tabId)?.open != null,
  };
}
