// Unmodal service worker: routes messages between the pages and the native host (the
// state of record). It keeps only caches: the pilot switch as the host keeps it, each tab's
// config as the host encoded it, and (debugger.js) the debugger sessions the host asked
// for. Message shapes: native-host/src/host/protocol.rs. This file wires the parts and
// reads the host's messages; the port to the host (host_port.js), the pages' messages
// (page_router.js), the tab list and openers (tabs.js), the pilot's switch
// (pilot_switch.js) and the kinds of browser prompts are files of their own. The kinds are
// listed in kinds.js and routed to by what each declares (kind_registry.js): this file
// names none of them (tools/worker_kinds.test.mjs checks it).
import { createHolds } from './debugger.js';
import { createPrompts } from './prompts.js';
import { KINDS } from './kinds.js';
import { createKinds } from './kind_registry.js';
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
// tabId -> { config, debugger, kinds }: the config the host encoded for the tab
// (engine/src/config.rs; passed to the pages whole, never read here), whether it needs a
// debugger session, and what each kind keeps of the host's message (kind name -> state,
// read by the kind alone).
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
const holds = createHolds(toHost, wantsSession, configFor);
// Browser prompts held for the host's answer while the pilot is on (prompts.js), the
// machinery the kinds share.
const prompts = createPrompts(toHost, () => hostPort?.isOpen() === true, () => pilot.on());
// The kinds' adapters, made here, in the first turn: each registers its own listeners. A
// kind's state for a tab is what the host's config gave it, while the pilot is on.
const kinds = createKinds(KINDS, {
  prompts,
  holds,
  toHost,
  pilotOn: () => pilot.on(),
  ready,
  tabKinds: (tabId) => (pilot.on() ? hostConfigs.get(tabId)?.kinds : undefined),
});
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
  // What the page hook asks about (content.js's `ask`), by the kind it names; each adapter
  // answers `accept`, `refuse` or `native`.
  asks: kinds.asks,
  // The browser answered a call of the page's first: the kind that asked about it keeps it.
  settled: kinds.settled,
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
    hostConfigs.set(msg.tab_id, { config: msg.config, debugger: msg.debugger === true, kinds: kinds.fromConfig(msg) });
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
  } else {
    // A kind's own message (kind_registry.js), else one this worker does not know.
    kinds.fromHost(msg);
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
  // What the kinds set in the browser for the tab, before the agent hears it is in force.
  await kinds.applyTab(tabId);
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
