// Unmodal service worker: routes messages between the pages and the native host (the
// state of record). It keeps only caches: the pilot switch as the host keeps it, each tab's
// config as the host encoded it, and (debugger.js) the debugger sessions the host asked
// for. Message shapes: native-host/src/host/protocol.rs.
import { createHolds } from './debugger.js';
import { createPrompts } from './prompts.js';
import { createAuth } from './auth.js';
import { createPermissions } from './permissions.js';
import { createChoosers } from './choosers.js';
import { createAppLinks } from './applinks.js';
import { createPasskeys } from './passkeys.js';
import { createPrints } from './print.js';
import { createHeldInPage } from './held_in_page.js';
import { createFileChoosers } from './file_chooser.js';
import { createDownloads } from './downloads.js';
import { createPilot } from './pilot_tools.js';
import { createTracker } from './tracking.js';
import { createStalled } from './stalled.js';
import { createSandbox } from './sandbox.js';
import { createBridge } from './bridge.js';

const HOST = 'dev.unmodal.host';
const PILOT_SCRIPT = 'unmodal-pilot';
const MAX_FIELD = 8192;

let port = null;
let hostState = { connected: false, error: null, since: null };
// AI Web Pilot: what the host last said (host/pilot_switch.rs). Off until it speaks:
// nothing in this browser (storage, a page, code a DevTools client runs here) can say on.
let pilot = false;
// Why the popup cannot switch the pilot on in this browser (the host says), or null.
let terminalOnly = null;
let session = null; // names this browser session to the host (chrome.storage.session)
let started;
const ready = new Promise((resolve) => { started = resolve; });
// tabId -> { config, debugger, choosers }: the config the host encoded for the tab
// (engine/src/config.rs; passed to the pages whole, never read here), whether it needs a
// debugger session, and whether that session intercepts file choosers.
const hostConfigs = new Map();
// Configs of tabs the host said nothing about: no rules, the default policy. Sent
// explicitly, so a page that kept an older set (this worker restarted, the host died)
// drops it. Made by the engine's encoder (`fallback_configs`; a test checks these strings).
const PILOT_OFF = 'U1';
const PILOT_ON = 'U1E1';
// The human's switch picks: off, every page gets PILOT_OFF (native dialogs, reported, no
// policy, no debugger); on, the host's config for the tab.
const configFor = (tabId) => (pilot ? hostConfigs.get(tabId)?.config ?? PILOT_ON : PILOT_OFF);
const wantsSession = (tabId) => pilot && hostConfigs.get(tabId)?.debugger === true;
// How the tab's session intercepts file choosers: false, 'hold' (each waits for the host) or
// 'cancel' (the browser cancels each, the host only hears of it).
const intercepts = (tabId) => {
  const c = hostConfigs.get(tabId);
  if (!wantsSession(tabId) || c?.choosers !== true) return false;
  return c.choosersCancel ? 'cancel' : 'hold';
};
const holds = createHolds(toHost, wantsSession, configFor, intercepts, {
  opened: (target, params) => fileChoosers.opened(target, params),
  settled: (tabId) => fileChoosers.settled(tabId),
});
// Browser prompts held for the host's answer while the pilot is on (prompts.js): HTTP auth
// challenges, permission requests the page hook holds (applied as content settings), device
// choosers the page hook saw open (cancelled or held).
const prompts = createPrompts(toHost, () => port !== null, () => pilot);
createAuth(prompts, toHost, () => pilot);
// File choosers a session intercepted: given the host's files, or cancelled (file_chooser.js).
const fileChoosers = createFileChoosers(prompts, holds);
// Downloads: held while the browser asks for their name, saved or cancelled (downloads.js).
const downloads = createDownloads(prompts, () => pilot, toHost);
const permissions = createPermissions(prompts);
const choosers = createChoosers(prompts);
// Navigations to schemes the OS handles, cancelled in the page: opened or not (applinks.js).
// The browser's own app-link dialogs go to the host once it is there (the event may wake this worker).
const appLinks = createAppLinks(prompts, (msg) => ready.then(() => toHost(msg)));
// WebAuthn requests the page hook holds: refused, or left to the browser (passkeys.js).
const passkeys = createPasskeys(prompts, holds, toHost);
// print() calls the page hook answered as a person's cancel: recorded, or printed to PDF (print.js).
const prints = createPrints(prompts, holds, toHost);
// What the page hook asks about (content.js's `ask`), by kind. Each adapter answers
// `accept`, `refuse` or `native`.
// Calls the page hook holds: refused at once, or left to the browser (held_in_page.js).
const heldInPage = (kind, fieldsOf) => createHeldInPage(kind, prompts, fieldsOf);
const asks = {
  __proto__: null,
  permission: permissions,
  device_chooser: choosers,
  app_link: appLinks,
  passkey: passkeys,
  print: prints,
  sign_in: heldInPage('sign_in', (what) => ({ provider: what.slice(0, 2048) })),
  payment: heldInPage('payment', (what) => ({ able: what === 'able' })),
  storage_access: heldInPage('storage_access', (what) => ({ granted: what === 'granted' })),
  // A File System Access picker (inject/48-file-pickers.js): `what` is its mode.
  file_chooser: heldInPage('file_chooser', (what) => ({ mode: ['open_picker', 'save_picker', 'directory_picker'][what] ?? 'open_picker' })),
};
const pilotTools = createPilot(holds);
// Sandboxes a document cannot see of itself (CSP headers, other origins' owner elements).
const sandbox = createSandbox();
const recent = []; // last few dialogs, for the popup
// Per frame, what waits for the frame's URL (a sandboxed frame's reports and asks): in order.
const frameLines = new Map();

// ---- The host: native messaging, or the CDP bridge (bridge.js) where none can run ----
let backoff = 250;
let retryTimer = null;
// A bridge connection (a new one, or one after a drop) takes over from whatever port there
// was, as a new host would.
const bridge = createBridge(() => {
  if (port) {
    const old = port;
    port = null;
    old.disconnect();
    hostGone('a new bridge connection');
  }
  connect();
});

function connect() {
  clearTimeout(retryTimer);
  retryTimer = null;
  if (port) return;
  try {
    port = bridge.available() ? bridge.open() : chrome.runtime.connectNative(HOST);
  } catch (err) {
    hostState = { connected: false, error: String(err), since: Date.now() };
    return retry();
  }
  const mine = port;
  port.onMessage.addListener(onHostMessage);
  port.onDisconnect.addListener(() => {
    if (port !== mine) return;
    const err = chrome.runtime.lastError;
    port = null;
    hostGone(err ? err.message : 'host exited');
    retry();
  });
  hostState = { connected: true, error: null, since: Date.now(), via: port.bridge ? 'cdp' : 'native' };
  pilotCallsRun.clear(); // a new host numbers its calls from 1
  backoff = 250;
  toHost({ type: 'hello', version: chrome.runtime.getManifest().version, session, worker, held: holds.open() });
  // Off, the browser gives no file to a file chooser: the host refuses such rules and says why.
  chrome.extension.isAllowedFileSchemeAccess().then((allowed) => toHost({ type: 'file_access', allowed }), () => {});
  sendTabs();
  // The reports the host may not have: sent again once it says how far it got (`resume`).
}

// The port to the host is gone (it exited, or a bridge connection replaced it).
function hostGone(why) {
  hostState = { connected: false, error: why, since: Date.now() };
  // The next host takes over this one's state (it saves it as it goes), so rules stay in
  // force meanwhile. A tab whose policy needs the host (a dialog held for the agent)
  // goes back to the default now: nobody could answer.
  const needHost = [...hostConfigs].filter(([, c]) => c.debugger).map(([tabId]) => tabId);
  for (const tabId of needHost) hostConfigs.delete(tabId);
  holds.releaseAll(Promise.allSettled(needHost.map((tabId) => pushConfig(tabId))));
  prompts.releaseAll();
  for (const [id, waiting] of pilotAsks) {
    pilotAsks.delete(id);
    waiting({ on: pilot, refused: 'The Unmodal host stopped; try again.' });
  }
  started(); // no host to wait for: serve the pages with what is known
}

function retry() {
  clearTimeout(retryTimer);
  retryTimer = setTimeout(connect, backoff);
  backoff = Math.min(backoff * 2, 30000);
}

// Dialog reports are numbered and kept until a host confirms it has them: a host can die
// with reports on their way (the port is dead before onDisconnect says so), and none may
// come while no host runs. On `hello` the host answers `resume {upto}`; what is newer goes
// again, and the host drops what it already had. Everything else the host needs (tabs,
// configs, the pilot) is sent anew on connecting.
const worker = crypto.randomUUID().replaceAll('-', ''); // this worker's reports
let reportSeq = 0;
const unconfirmed = []; // [{ n, msg }], oldest first
const MAX_UNCONFIRMED = 2000;

function report(msg) {
  const entry = { n: ++reportSeq, msg: { ...msg, n: reportSeq } };
  unconfirmed.push(entry);
  if (unconfirmed.length > MAX_UNCONFIRMED) unconfirmed.shift();
  toHost(entry.msg);
}

function resume(upto) {
  while (unconfirmed.length > 0 && unconfirmed[0].n <= upto) unconfirmed.shift();
  for (const { msg } of unconfirmed) toHost(msg);
}

function toHost(msg) {
  if (!port) return;
  try {
    port.postMessage(msg);
  } catch {
    // The port died between checks; onDisconnect reconnects.
  }
}

const pilotCallsRun = new Set();

// A browser prompt the host names (prompts.js looks it up by id and checks the kind).
const isPrompt = (msg) => Number.isInteger(msg.tab_id) && Number.isInteger(msg.id) && typeof msg.kind === 'string';

function onHostMessage(msg) {
  if (!msg || typeof msg !== 'object') return;
  if (msg.type === 'recorded' && typeof msg.kind === 'string') {
    // What the host stored, redacted: the popup shows only this.
    recent.unshift({ kind: msg.kind, message: String(msg.message ?? ''), by: String(msg.decided_by), accepted: msg.accepted });
    recent.length = Math.min(recent.length, 5);
    return;
  }
  if (msg.type === 'config' && Number.isInteger(msg.tab_id) && typeof msg.config === 'string') {
    hostConfigs.set(msg.tab_id, {
      config: msg.config,
      debugger: msg.debugger === true,
      choosers: msg.choosers === true,
      choosersCancel: msg.choosers_cancel === true,
      downloads: typeof msg.downloads === 'boolean' ? msg.downloads : undefined,
    });
    // The host answers the agent's setup only once the tab's frames hold the config.
    applyTab(msg.tab_id).then((ack) => toHost({ type: 'config_ack', tab_id: msg.tab_id, rev: msg.rev, ...ack }));
  } else if (msg.type === 'answer' && Number.isInteger(msg.tab_id) && Number.isInteger(msg.hold)) {
    holds.answer(msg);
  } else if (msg.type === 'prompt_answer' && isPrompt(msg)) {
    prompts.answer(msg);
  } else if (msg.type === 'prompt_hold' && isPrompt(msg)) {
    prompts.hold(msg);
  } else if (msg.type === 'pilot' && typeof msg.on === 'boolean' && Number.isSafeInteger(msg.rev)) {
    onPilotWord(msg);
  } else if (msg.type === 'pilot_call' && Number.isSafeInteger(msg.id) && Number.isInteger(msg.tab_id) && msg.call && typeof msg.call === 'object') {
    // A bridge may deliver a batch twice (the worker restarted as it arrived): a script runs once.
    if (pilotCallsRun.has(msg.id)) return;
    pilotCallsRun.add(msg.id);
    if (pilotCallsRun.size > 256) pilotCallsRun.delete(pilotCallsRun.values().next().value);
    runPilotCall(msg);
  } else if (msg.type === 'sync' && Number.isSafeInteger(msg.id)) {
    // Answered after the debugger events that came before it (a held dialog above all),
    // which leave once the worker's own record of them is written.
    holds.sent().then(() => toHost({ type: 'synced', id: msg.id }));
  } else if (msg.type === 'resume' && Number.isSafeInteger(msg.upto)) {
    resume(msg.upto);
    // `resume` ends the host's answer to `hello`: every config it has is here.
    holds.settle();
  }
}

// An AI Web Pilot tool call (highlight, state, JavaScript). The host gates it; the switch
// is checked here too, as this worker last heard it.
async function runPilotCall(msg) {
  const reply = pilot
    ? await pilotTools.run(msg.tab_id, msg.call)
    : { error: { code: 'ai_web_pilot_disabled', message: 'AI Web Pilot is off: a person switches it on with `unmodal pilot on`.' } };
  toHost({ type: 'pilot_result', id: msg.id, ...reply });
}

// Brings a tab in line with its rules and policy. A page may leave a dialog to the browser
// only while a debugger session catches it: attach before the config says so, detach after.
async function applyTab(tabId) {
  // The site's automatic downloads, as a rule sets them, before the agent hears it is in force.
  await downloads.applyTab(tabId, pilot ? hostConfigs.get(tabId)?.downloads : undefined);
  if (wantsSession(tabId)) {
    const dbg = await holds.sync(tabId);
    // Without the session the page must not hold dialogs; the host falls back to auto.
    if (!dbg.attached) return { delivered: false, debugger: dbg };
    return { delivered: await pushConfig(tabId), debugger: dbg };
  }
  const delivered = await pushConfig(tabId);
  return { delivered, debugger: await holds.sync(tabId) };
}

// ---- Tabs: the host needs the list and the tracked tab (tracking.js says which) ----
let tabsTimer = null;
// The host forgets the rules of tabs a list leaves out. A list queried before a tab was
// opened by another, sent after its `opened`, would drop the rules it just took over:
// such a list is queried again instead.
let tabsEpoch = 0;
const tracker = createTracker(() => sendTabs());
function sendTabs() {
  clearTimeout(tabsTimer);
  tabsTimer = setTimeout(async () => {
    const epoch = tabsEpoch;
    const [tabs, focused] = await Promise.all([
      chrome.tabs.query({}),
      chrome.tabs.query({ active: true, lastFocusedWindow: true }),
    ]);
    if (epoch !== tabsEpoch) return sendTabs();
    const tracked = tracker.pick(tabs, focused[0]);
    for (const id of hostConfigs.keys()) if (!tabs.some((t) => t.id === id)) hostConfigs.delete(id);
    toHost({
      type: 'tabs',
      tracked,
      tabs: tabs.map((t) => ({ id: t.id, window_id: t.windowId, url: t.url ?? '', title: t.title ?? '', active: t.active })),
    });
  }, 20);
}
chrome.tabs.onCreated.addListener(sendTabs);
chrome.tabs.onRemoved.addListener(sendTabs);
chrome.tabs.onUpdated.addListener((_id, change) => {
  if (change.url || change.title || change.status === 'complete') sendTabs();
});

// ---- A tab opened by a tab starts with its opener's rules and policy (host/opener.rs) ----
// The copy is made here at once, so that under a policy the debugger session (whose
// new-document script carries the config) can be in place before the new tab's first
// document; the host takes the same copy as the state of record and sends it back.
const openers = new Map(); // tabId -> opener tabId, once told
function opened(tabId, opener) {
  if (!Number.isInteger(tabId) || !Number.isInteger(opener) || tabId === opener || openers.has(tabId)) return;
  openers.set(tabId, opener);
  tabsEpoch += 1;
  const from = hostConfigs.get(opener);
  if (from && !hostConfigs.has(tabId)) {
    hostConfigs.set(tabId, { ...from });
    applyTab(tabId);
  }
  toHost({ type: 'opened', tab_id: tabId, opener_tab_id: opener });
}
// Only this event: `tabs.onCreated`'s `openerTabId` also names the active tab for tabs a
// driver creates over CDP, which were opened by nobody.
chrome.webNavigation.onCreatedNavigationTarget.addListener((d) => opened(d.tabId, d.sourceTabId));
chrome.tabs.onRemoved.addListener((tabId) => openers.delete(tabId));

// ---- Pages ----
// A frame whose page shows a native dialog cannot answer until the dialog closes; nothing
// here may wait for it longer than this.
const FRAME_WAIT_MS = 2000;
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

const clip = (v) => (typeof v === 'string' ? v.slice(0, MAX_FIELD) : v);

// Runs `then(url)` with the URL of the document a frame's message came from. A sandboxed
// frame's messages name about:blank (measured): the browser's record of the frame's
// document has its URL. What such a frame sends waits in one line, so it keeps its order.
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
    reply({ host: hostState, pilot, terminalOnly, recent });
    return;
  }
  if (msg.type === 'pilot_switch') {
    const failed = () => reply({ on: pilot, refused: 'Unmodal could not ask its host; try again.' });
    ready.then(() => pilotSwitch(msg.on === true, sender)).then(reply, failed);
    return true;
  }
  if (!sender.tab) return;
  if (msg.type === 'input' && sender.frameId === 0) {
    tracker.input(sender.tab);
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
    ready.then(() => {
      choosers.settled(msg, sender);
      passkeys.settled(msg, sender);
    });
    return;
  }
  if (msg.type === 'hello') {
    // Once this worker knows the pilot's state (it reads it as it starts). With the config
    // goes what the frame cannot see of its own sandbox (sandbox.js); a frame that says hello
    // is another origin's (or opaque): its rules wait for its owner element to be read, so
    // both come together (until then the default answers as such a sandbox does).
    const tabId = sender.tab.id;
    stalledTabs.hello(sender);
    const sandboxed = inFrameLine(sender, (url) => sandbox.blocksModals(sender, url, msg.index));
    Promise.all([ready, sandboxed.catch(() => false)])
      .then(([, blocks]) => reply({ type: 'config', config: configFor(tabId), sandboxed: blocks }));
    return true;
  } else if (msg.type === 'dialogs' && Array.isArray(msg.reports)) {
    // Tab, frame and URLs come from the browser, never from the page.
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

// ---- AI Web Pilot: the host keeps the switch; a person flips it (host/pilot_switch.rs) ----
// In a browser open to DevTools clients the agent's own driver can run code in any page,
// this worker and the popup included, so nothing here can carry a person's "on": the host
// takes it only from `unmodal pilot on` in a terminal there, and from the toolbar popup
// elsewhere. This worker checks what only it can see (which view asked, DevTools attached
// to the popup or to itself) and passes the request on; off is taken from anywhere.
const HOST_WORD_MS = 3000; // the longest pages wait for the host's word as this worker starts
let pilotHeard = false;
let pagesHold = false; // the switch the open pages got from the worker before this one
let pilotWords = Promise.resolve(); // the host's words, applied one after another
const pilotAsks = new Map(); // request id -> resolve, for the popup's answer
let pilotAskSeq = 0;
const ownWrites = []; // values of `pilot` this worker wrote to storage, not yet seen written
const POPUP_URL = chrome.runtime.getURL('popup.html');
const OURS = chrome.runtime.getURL('');

// Frames with a URL of their own only: about:blank, srcdoc, blob: and data: frames take the
// switch from their parent's (or opener's) content.js, a script fewer in every frame a page
// makes (see content.js).
const PILOT_SCRIPT_SPEC = {
  id: PILOT_SCRIPT,
  js: ['pilot.js'],
  matches: ['<all_urls>'],
  runAt: 'document_start',
  allFrames: true,
  matchOriginAsFallback: false,
  world: 'ISOLATED',
};
async function registerPilotScript(on) {
  const registered = await chrome.scripting.getRegisteredContentScripts({ ids: [PILOT_SCRIPT] });
  if (on && registered.length === 0) {
    await chrome.scripting.registerContentScripts([PILOT_SCRIPT_SPEC]);
  } else if (on && registered[0].matchOriginAsFallback !== false) {
    // Registered by an earlier version (persisted across sessions), for every frame.
    await chrome.scripting.updateContentScripts([PILOT_SCRIPT_SPEC]);
  } else if (!on && registered.length > 0) {
    await chrome.scripting.unregisterContentScripts({ ids: [PILOT_SCRIPT] });
  }
}

// The host's word. Taken at once (the host's next messages, configs and pilot calls, are
// read with it), then applied to the open tabs, cached in storage (for nobody to trust:
// the popup asks this worker) and confirmed to the host, one word after another.
function onPilotWord(msg) {
  // What the open pages hold: this worker's word, or as it starts, its predecessor's (the
  // cache, read before connecting). The cache only spares pushing the same switch again.
  const held = pilotHeard ? pilot : pagesHold;
  pilotHeard = true;
  terminalOnly = typeof msg.terminal_only === 'string' ? msg.terminal_only : null;
  pilot = msg.on;
  started();
  const waiting = pilotAsks.get(msg.id);
  if (waiting) {
    pilotAsks.delete(msg.id);
    waiting({ on: pilot, refused: typeof msg.refused === 'string' ? msg.refused : null });
  }
  pilotWords = pilotWords.then(() => applyPilotWord(msg.rev, held !== pilot)).catch(() => {});
}

async function applyPilotWord(rev, changed) {
  await cachePilot(pilot);
  await registerPilotScript(pilot).catch(() => {});
  // Open tabs first, then the host: once the host hears "applied", the pages know it too.
  if (changed) {
    const tabs = await chrome.tabs.query({});
    await Promise.allSettled(tabs.map((tab) => applyTab(tab.id)));
  }
  toHost({ type: 'pilot_applied', rev });
}

const cachedPilot = () => chrome.storage.local.get('pilot').then((r) => r.pilot === true, () => false);

async function cachePilot(on) {
  if ((await cachedPilot()) === on) return;
  ownWrites.push(on);
  await chrome.storage.local.set({ pilot: on }).catch(() => ownWrites.splice(ownWrites.indexOf(on), 1));
}

// `pilot` in storage changed. This worker's own writes aside, something else wrote it: an
// extension page, or code a DevTools client ran in this worker. Off is taken; on is refused,
// recorded, and the cache put back.
function storageWritten(value) {
  const mine = ownWrites.indexOf(value);
  if (mine >= 0) return void ownWrites.splice(mine, 1);
  if (value === false && pilot) return void askHost(false, 'storage');
  if (value === true && !pilot) {
    toHost({ type: 'pilot_refused', via: 'storage', reason: 'the switch was written to the extension\'s storage by something other than Unmodal (an extension page, or code run in its service worker)' });
  }
  cachePilot(pilot);
}

function askHost(on, via) {
  if (!port) return Promise.resolve({ on: pilot, refused: 'The Unmodal host is not connected: run `unmodal doctor`.' });
  const id = ++pilotAskSeq;
  return new Promise((resolve) => {
    pilotAsks.set(id, resolve);
    toHost({ type: 'pilot', on, via, id });
    setTimeout(() => pilotAsks.delete(id) && resolve({ on: pilot, refused: 'The Unmodal host did not answer; try again.' }), 3000);
  });
}

// Which view asked: the toolbar popup, popup.html in a tab or window (which a program can
// open, and click), or anything else. The popup's sender names no tab, frame or document
// (measured), so it is told apart by the views the browser lists: every view of popup.html
// outside a tab must be a toolbar popup.
async function viewOf(sender) {
  if (!sender.url || !sender.url.startsWith(POPUP_URL)) return 'message';
  if (sender.tab) return 'popup_in_tab';
  const views = await chrome.runtime.getContexts({}).catch(() => []);
  const outside = views.filter((c) => String(c.documentUrl).startsWith(POPUP_URL) && c.tabId === -1);
  return outside.length > 0 && outside.every((c) => c.contextType === 'POPUP') ? 'popup' : 'message';
}

// Why a DevTools client may be driving the popup or this worker, or null.
async function devtoolsOnUs() {
  const targets = await chrome.debugger.getTargets().catch(() => null);
  if (!targets) return 'Unmodal cannot tell whether DevTools is attached to it';
  // Measured: the browser lists our worker and pages by URL (no extensionId), `attached`
  // once any DevTools client is.
  const ours = targets.filter((t) => t.attached && String(t.url).startsWith(OURS));
  return ours.length ? `a DevTools client is attached to ${ours.map((t) => t.url).join(', ')}` : null;
}

// The popup's switch (or something posing as it).
async function pilotSwitch(on, sender) {
  const via = await viewOf(sender);
  if (on && via === 'popup') {
    const watched = await devtoolsOnUs();
    if (watched) {
      const refused = `${watched}, so this switch cannot turn AI Web Pilot on. Close DevTools, or run \`unmodal pilot on\` in a terminal.`;
      toHost({ type: 'pilot_refused', via, reason: refused });
      return { on: pilot, refused };
    }
  }
  // The host decides (and records a refusal).
  return askHost(on, via);
}

// Its only job is to wake this worker (see WAKE in debugger.js); starting is the work.
chrome.alarms.onAlarm.addListener(() => {});
// Listened to so that the browser starts this worker as it starts (the host is reached
// before the first page needs it); starting is the work here too.
chrome.runtime.onStartup.addListener(() => {});

// A navigation begun while the browser loaded this extension may be dropped, or its
// document run without the content scripts (stalled.js).
const stalledTabs = createStalled();

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'local' && changes.pilot) storageWritten(changes.pilot.newValue);
});

(async () => {
  // Only extension pages may write the switch; content scripts are refused.
  await chrome.storage.local.setAccessLevel?.({ accessLevel: 'TRUSTED_CONTEXTS' }).catch(() => {});
  const stale = await holds.adoptStale();
  // The browser session outlives this worker; its host's state on disk is named after it.
  const saved = await chrome.storage.session.get('session').catch(() => ({}));
  session = typeof saved.session === 'string' ? saved.session : null;
  if (session === null) {
    // The extension was just loaded (the browser started, or it was installed, enabled or
    // updated): a navigation under way then may have been dropped, or its document may run
    // without the content scripts.
    stalledTabs.sweep();
    session = crypto.randomUUID().replaceAll('-', '');
    await chrome.storage.session.set({ session }).catch(() => {});
  } else {
    stalledTabs.idle();
  }
  pagesHold = await cachedPilot();
  // Pages wait (`ready`) for the host's word on the pilot, which answers `hello` first; a
  // host that does not come leaves the pilot off.
  setTimeout(() => {
    if (pilotHeard) return;
    started();
    registerPilotScript(false).catch(() => {});
  }, HOST_WORD_MS);
  // The host first: a tab that shows a native dialog cannot take its config until the
  // dialog closes, and its report must not wait for that. Pages keep the config they hold
  // (a restarted worker's host takes the old state over and sends it again).
  connect();
  await ready;
  await Promise.allSettled(stale.map((tabId) => pushConfig(tabId)));
})();
