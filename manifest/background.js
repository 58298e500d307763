// Unmodal service worker: routes messages between the pages and the native host (the
// state of record). It keeps only caches: the pilot switch as the host keeps it, each tab's
// config as the host encoded it, and (debugger.js) the debugger sessions the host asked
// for. Message shapes: native-host/src/host/protocol.rs. This file wires the parts and
// reads the host's messages; the port to the host (host_port.js), the pages' messages
// (page_router.js), the tab list and openers (tabs.js), the pilot's switch
// (pilot_switch.js) and each kind's adapter are files of their own.
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
import { createStalled } from './stalled.js';
import { createSandbox } from './sandbox.js';
import { createHostPort } from './host_port.js';
import { createPilotSwitch } from './pilot_switch.js';
import { createTabs } from './tabs.js';
import { createPageRouter } from './page_router.js';

let session = null; // names this browser session to the host (chrome.storage.session)
// Pages are served once the pilot's state is known: the host's word, or none in time.
let started;
const ready = new Promise((resolve) => { started = resolve; });
// The host's port (host_port.js), made below once what it serves is: what goes to the
// host goes through it (nothing does before it connects).
let hostPort = null;
const toHost = (msg) => hostPort?.toHost(msg);
// AI Web Pilot's switch as the host last said it (pilot_switch.js): off until it speaks.
const pilot = createPilotSwitch({ toHost, connected: () => hostPort?.isOpen() === true, applyTab: (tabId) => applyTab(tabId), started });
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
const configFor = (tabId) => (pilot.on() ? hostConfigs.get(tabId)?.config ?? PILOT_ON : PILOT_OFF);
const wantsSession = (tabId) => pilot.on() && hostConfigs.get(tabId)?.debugger === true;
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
const prompts = createPrompts(toHost, () => hostPort?.isOpen() === true, () => pilot.on());
createAuth(prompts, toHost, () => pilot.on());
// File choosers a session intercepted: given the host's files, or cancelled (file_chooser.js).
const fileChoosers = createFileChoosers(prompts, holds);
// Downloads: held while the browser asks for their name, saved or cancelled (downloads.js).
const downloads = createDownloads(prompts, () => pilot.on(), toHost);
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
  eye_dropper: heldInPage('eye_dropper', () => ({})),
  // A File System Access picker (inject/48-file-pickers.js): `what` is its mode.
  file_chooser: heldInPage('file_chooser', (what) => ({ mode: ['open_picker', 'save_picker', 'directory_picker'][what] ?? 'open_picker' })),
};
const pilotTools = createPilot(holds);
// Sandboxes a document cannot see of itself (CSP headers, other origins' owner elements).
const sandbox = createSandbox();
const recent = []; // last few dialogs, for the popup
// A navigation begun while the browser loaded this extension may be dropped, or its
// document run without the content scripts (stalled.js).
const stalledTabs = createStalled();

const tabs = createTabs({ toHost, hostConfigs, applyTab: (tabId) => applyTab(tabId) });
const pages = createPageRouter({
  ready,
  configFor,
  report: (msg) => hostPort.report(msg),
  asks,
  // The browser answered a call of the page's first: each kind that made it keeps it.
  settled: (msg, sender) => {
    for (const kind in asks) asks[kind].settled?.(msg, sender);
  },
  pilot,
  tabs,
  stalledTabs,
  sandbox,
  status: () => ({ host: hostPort.status(), pilot: pilot.on(), terminalOnly: pilot.terminalOnly(), recent }),
});
const pilotCallsRun = new Set();

hostPort = createHostPort({
  onMessage: onHostMessage,
  hello: (worker) => ({ type: 'hello', version: chrome.runtime.getManifest().version, session, worker, held: holds.open() }),
  connected() {
    pilotCallsRun.clear(); // a new host numbers its calls from 1
    // Off, the browser gives no file to a file chooser: the host refuses such rules and says why.
    chrome.extension.isAllowedFileSchemeAccess().then((allowed) => toHost({ type: 'file_access', allowed }), () => {});
    tabs.send();
  },
  gone() {
    // The next host takes over this one's state (it saves it as it goes), so rules stay in
    // force meanwhile. A tab whose policy needs the host (a dialog held for the agent)
    // goes back to the default now: nobody could answer.
    const needHost = [...hostConfigs].filter(([, c]) => c.debugger).map(([tabId]) => tabId);
    for (const tabId of needHost) hostConfigs.delete(tabId);
    holds.releaseAll(Promise.allSettled(needHost.map((tabId) => pages.pushConfig(tabId))));
    prompts.releaseAll();
    pilot.hostGone();
    started(); // no host to wait for: serve the pages with what is known
  },
});

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
    pilot.word(msg);
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
    hostPort.resume(msg.upto);
    // `resume` ends the host's answer to `hello`: every config it has is here.
    holds.settle();
  }
}

// An AI Web Pilot tool call (highlight, state, JavaScript). The host gates it; the switch
// is checked here too, as this worker last heard it.
async function runPilotCall(msg) {
  const reply = pilot.on()
    ? await pilotTools.run(msg.tab_id, msg.call)
    : { error: { code: 'ai_web_pilot_disabled', message: 'AI Web Pilot is off: a person switches it on with `unmodal pilot on`.' } };
  toHost({ type: 'pilot_result', id: msg.id, ...reply });
}

// Brings a tab in line with its rules and policy. A page may leave a dialog to the browser
// only while a debugger session catches it: attach before the config says so, detach after.
async function applyTab(tabId) {
  // The site's automatic downloads, as a rule sets them, before the agent hears it is in force.
  await downloads.applyTab(tabId, pilot.on() ? hostConfigs.get(tabId)?.downloads : undefined);
  if (wantsSession(tabId)) {
    const dbg = await holds.sync(tabId);
    // Without the session the page must not hold dialogs; the host falls back to auto.
    if (!dbg.attached) return { delivered: false, debugger: dbg };
    return { delivered: await pages.pushConfig(tabId), debugger: dbg };
  }
  const delivered = await pages.pushConfig(tabId);
  return { delivered, debugger: await holds.sync(tabId) };
}

// Its only job is to wake this worker (see WAKE in debugger.js); starting is the work.
chrome.alarms.onAlarm.addListener(() => {});
// Listened to so that the browser starts this worker as it starts (the host is reached
// before the first page needs it); starting is the work here too.
chrome.runtime.onStartup.addListener(() => {});

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
  // Pages wait (`ready`) for the host's word on the pilot, which answers `hello` first; a
  // host that does not come leaves the pilot off.
  await pilot.start();
  // The host first: a tab that shows a native dialog cannot take its config until the
  // dialog closes, and its report must not wait for that. Pages keep the config they hold
  // (a restarted worker's host takes the old state over and sends it again).
  hostPort.connect();
  await ready;
  await Promise.allSettled(stale.map((tabId) => pages.pushConfig(tabId)));
})();
