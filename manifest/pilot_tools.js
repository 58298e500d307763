// AI Web Pilot tools (highlight_element, execute_javascript, manage_state) as the browser
// runs them. The host sends a `pilot_call`; background.js checks the human's switch and
// hands it here; the answer goes back as `pilot_result` (native-host/src/host/pilot.rs
// reads it). Highlights and scripts go through chrome.debugger, which no page CSP or
// Trusted Types policy can block and which leaves nothing in the DOM; the debugger is
// borrowed for the call only (debugger.js `lease`). State lives in state_tools.js.
import { createStateTools } from './state_tools.js';

// A serialized result larger than this is not carried (the host cuts far smaller anyway).
const MAX_RESULT_CHARS = 8 * 1024 * 1024;
// How long a stopped script may take to reach a pause before we decide nothing runs.
const PAUSE_WAIT_MS = 1000;
const HIGHLIGHT = {
  showInfo: false,
  contentColor: { r: 255, g: 0, b: 0, a: 0.3 },
  paddingColor: { r: 255, g: 0, b: 0, a: 0.2 },
  borderColor: { r: 255, g: 0, b: 0, a: 0.6 },
  marginColor: { r: 255, g: 128, b: 0, a: 0.15 },
};

export class PilotError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const describe = (err) => String(err?.message ?? err);

export function createPilot(holds) {
  const cmd = (target, method, params = {}) => chrome.debugger.sendCommand(target, method, params);
  const sameTarget = (source, t) => source.tabId === t.tabId && (source.sessionId ?? null) === (t.sessionId ?? null);

  // The browser's debugger events reach this worker only while a call waits on one. While
  // any onEvent listener is registered, every event of every attached tab crosses into the
  // worker, and the arming Debugger.enable reports each script of the page (one event per
  // script, measured ~0.13 ms each on its way here; the script's answer comes after them).
  const listeners = new Set();
  const dispatch = (source, method, params) => {
    for (const l of [...listeners]) l(source, method, params ?? {});
  };
  const add = (l) => {
    listeners.add(l);
    if (listeners.size === 1) chrome.debugger.onEvent.addListener(dispatch);
  };
  const remove = (l) => {
    if (listeners.delete(l) && listeners.size === 0) chrome.debugger.onEvent.removeListener(dispatch);
  };
  // A listener is registered by a message of its own, not queued with the commands: one
  // round trip after it (getTargets, answered by the browser itself, even while the page
  // is stuck in a loop) has it in place before the command whose events the caller needs.
  const settled = () => chrome.debugger.getTargets().then(() => {}, () => {});
  const collect = (pick) => {
    const seen = [];
    const l = (source, method, params) => {
      if (pick(source, method, params)) seen.push({ source, method, params });
    };
    add(l);
    return { seen, stop: () => remove(l), ready: settled() };
  };
  // `got`: the event's params, or null after `ms`; `ready`: resolves once listening.
  const nextEvent = (pick, ms) => {
    let timer;
    let l;
    const got = new Promise((resolve) => {
      l = (source, method, params) => {
        if (!pick(source, method, params)) return;
        remove(l);
        clearTimeout(timer);
        resolve(params);
      };
      timer = setTimeout(() => {
        remove(l);
        resolve(null);
      }, ms);
    });
    add(l);
    return { got, ready: settled() };
  };

  // Borrows the tab's debugger for a call (debugger.js): `holds.unlease` when done.
  // `sent()`: commands may follow from now on (see `execute`).
  const lease = async (tabId, sent) => {
    try {
      await holds.lease(tabId, sent);
    } catch (err) {
      throw new PilotError('pilot_failed', `The extension's debugger could not attach to tab ${tabId}: ${describe(err)}. Close DevTools or another debugging extension on that tab, or use a tab showing a web page.`);
    }
  };

  // Where a call runs: the tab's top document, or the first frame whose URL contains
  // `filter`. Frames in the tab's process are reached through their main-world execution
  // context; frames from other sites run in other processes, reached through child sessions.
  const locate = async (root, filter) => {
    if (filter === undefined || filter === null) return { target: root };
    const { frameTree } = await cmd(root, 'Page.getFrameTree');
    if (String(frameTree.frame.url ?? '').includes(filter)) return { target: root, url: frameTree.frame.url };
    const frames = [];
    const walk = (node) => {
      for (const child of node.childFrames ?? []) {
        frames.push(child.frame);
        walk(child);
      }
    };
    walk(frameTree);
    const frame = frames.find((f) => String(f.url ?? '').includes(filter));
    if (frame) {
      const contexts = collect((s, m, p) => sameTarget(s, root) && m === 'Runtime.executionContextCreated'
        && p.context?.auxData?.frameId === frame.id && p.context.auxData.isDefault);
      try {
        await contexts.ready;
        await cmd(root, 'Runtime.enable');
      } finally {
        contexts.stop();
        await cmd(root, 'Runtime.disable').catch(() => {});
      }
      const ctx = contexts.seen[0]?.params.context;
      if (ctx) return { target: root, contextId: ctx.id, uniqueContextId: ctx.uniqueId, url: frame.url, frameId: frame.id };
    }
    // Another site's frame: its own target. A policy's session is attached to them already;
    // a session of our own attaches now (and goes with the session when the call ends).
    let sessions = holds.attached(root.tabId) ? holds.children(root.tabId) : null;
    if (sessions === null) {
      const attached = collect((s, m) => sameTarget(s, root) && m === 'Target.attachedToTarget');
      try {
        await attached.ready;
        await cmd(root, 'Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: 'iframe' }] });
      } finally {
        attached.stop();
      }
      sessions = attached.seen.map((e) => e.params.sessionId);
    }
    for (const sessionId of sessions) {
      const target = { tabId: root.tabId, sessionId };
      const r = await cmd(target, 'Runtime.evaluate', { expression: 'location.href', returnByValue: true }).catch(() => null);
      const url = r?.result?.value;
      if (typeof url === 'string' && url.includes(filter)) return { target, url };
    }
    throw new PilotError('frame_not_found', `No frame of tab ${root.tabId} has a URL containing ${JSON.stringify(filter)}. execute_javascript with script "[...document.querySelectorAll('iframe')].map((f) => f.src)" lists the tab's frames.`);
  };

  // ---- execute_javascript ----

  // A script past its time: pause it where it runs and terminate it there. Armed before the
  // run (Debugger.enable, breakpoints off), so this works in a loop that never yields.
  const stop = async (t) => {
    const paused = nextEvent((s, m) => sameTarget(s, t) && m === 'Debugger.paused', PAUSE_WAIT_MS);
    await paused.ready;
    await cmd(t, 'Debugger.pause').catch(() => {});
    const at = await paused.got;
    if (at === null) return false; // nothing ran: a promise that never settles
    // Code from a page file is the page's own (a timer that fired meanwhile): let it go on.
    const own = String(at.callFrames?.[0]?.url ?? '') === '';
    await cmd(t, 'Debugger.resume', { terminateOnResume: own }).catch(() => {});
    return own;
  };

  const threw = (details) => {
    const ex = details.exception ?? {};
    const description = typeof ex.description === 'string' ? ex.description : '';
    let error;
    if (ex.subtype === 'error' && description) error = description.split('\n')[0];
    else if (ex.type === 'string') error = String(ex.value);
    else if ('value' in ex) error = JSON.stringify(ex.value) ?? String(ex.value);
    else error = description || String(details.text ?? 'Uncaught');
    let stack = ex.subtype === 'error' ? description : '';
    if (!stack && details.stackTrace?.callFrames?.length) {
      stack = details.stackTrace.callFrames
        .map((f) => `    at ${f.functionName || '<anonymous>'} (${f.url || '<anonymous>'}:${f.lineNumber + 1}:${f.columnNumber + 1})`)
        .join('\n');
    }
    return { outcome: 'threw', error, stack };
  };

  // The call's commands leave right behind the attach, not after its answer (a round trip
  // less); the attach's outcome is checked before anything is answered. The answer goes
  // back before the session is tidied up (Debugger.disable, detach): the browser keeps a
  // session's commands in order, so the next call still finds it clean.
  const execute = async (tabId, { script, timeout_ms: timeoutMs, frame_url_contains: filter }) => {
    let sent;
    const sending = new Promise((resolve) => { sent = resolve; });
    const leased = lease(tabId, sent).then(() => null, (err) => err);
    const refused = await Promise.race([sending.then(() => null), leased]);
    if (refused) throw refused;
    let t = null;
    const attempt = async () => {
      const where = await locate({ tabId }, filter);
      t = where.target;
      return evaluate(where, script, timeoutMs);
    };
    let work = attempt();
    const failed = await leased;
    if (failed) {
      work.catch(() => {});
      throw failed;
    }
    try {
      // Should the browser ever take a command before the attach it followed, nothing ran:
      // once more, now that the session is there.
      work = await work.then((v) => ({ v }), (err) => (/not attached/i.test(describe(err)) ? null : { err }));
      if (work === null) work = await attempt().then((v) => ({ v }), (err) => ({ err }));
      if (work.err) throw work.err;
      return work.v;
    } finally {
      const done = t === null ? Promise.resolve() : cmd(t, 'Debugger.disable').catch(() => {});
      done.then(() => holds.unlease(tabId));
    }
  };

  const evaluate = async (where, script, timeoutMs) => {
    const t = where.target;
    // Armed before the script starts (sent in one go; a session runs them in order).
    const armed = Promise.all([cmd(t, 'Debugger.enable'), cmd(t, 'Debugger.setBreakpointsActive', { active: false })]);
    const params = {
      expression: String(script),
      awaitPromise: true,
      returnByValue: false,
      allowUnsafeEvalBlockedByCSP: true,
      serializationOptions: { serialization: 'deep', maxDepth: 8, additionalParameters: { maxNodeDepth: 0, includeShadowTree: 'none' } },
    };
    if (where.uniqueContextId !== undefined) params.uniqueContextId = where.uniqueContextId;
    else if (where.contextId !== undefined) params.contextId = where.contextId;
    const run = cmd(t, 'Runtime.evaluate', params).then((r) => ({ r }), (err) => ({ err }));
    await armed;
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(() => resolve(null), timeoutMs); });
    const done = await Promise.race([run, late]);
    clearTimeout(timer);
    if (done === null) {
      const stopped = await stop(t);
      throw new PilotError('script_timeout', `The script ran past timeout_ms (${timeoutMs} ms) and was ${stopped ? 'stopped where it ran' : 'abandoned (it was waiting on a promise that never settled)'}; the page goes on working. Raise timeout_ms (up to 60000) for longer work, or return sooner.`);
    }
    if (done.err) throw new PilotError('pilot_failed', `The browser refused to run the script: ${describe(done.err)}. The tab may be navigating or closing; check it with observe {what:"tabs"}, then retry.`);
    const r = done.r;
    if (r.exceptionDetails) return threw(r.exceptionDetails);
    const value = r.result?.deepSerializedValue ?? { type: r.result?.type ?? 'undefined', value: r.result?.value };
    const chars = JSON.stringify(value).length;
    if (chars > MAX_RESULT_CHARS) return { outcome: 'too_large', bytes: chars };
    return where.url === undefined ? { outcome: 'value', value } : { outcome: 'value', value, frame_url: where.url };
  };

  // ---- highlight_element ----

  // Per tab, the highlight on screen: it holds its lease until it is hidden.
  const shown = new Map(); // tabId -> { target, timer }
  // `next`: the target another highlight follows in at once. In the same target the new
  // highlight simply replaces the old (hiding first, or turning the overlay off and on
  // again, left the next one undrawn).
  const hide = async (tabId, next = null) => {
    const h = shown.get(tabId);
    if (!h) return;
    shown.delete(tabId);
    clearTimeout(h.timer);
    const replaced = next !== null && sameTarget(next, h.target);
    if (!replaced) await cmd(h.target, 'Overlay.hideHighlight').catch(() => {});
    if (next === null) {
      await cmd(h.target, 'Overlay.disable').catch(() => {});
      await cmd(h.target, 'DOM.disable').catch(() => {});
    }
    await holds.unlease(tabId);
  };

  // The document node to query: the target's document, or a same-process frame's.
  const documentOf = async (where) => {
    const t = where.target;
    if (where.frameId === undefined) return (await cmd(t, 'DOM.getDocument', { depth: 0 })).root.nodeId;
    const { root } = await cmd(t, 'DOM.getDocument', { depth: -1, pierce: true });
    const find = (node) => {
      if (node.frameId === where.frameId && node.contentDocument) return node.contentDocument.nodeId;
      for (const c of [...(node.children ?? []), ...(node.contentDocument ? [node.contentDocument] : [])]) {
        const found = find(c);
        if (found) return found;
      }
      return null;
    };
    const id = find(root);
    if (!id) throw new PilotError('frame_not_found', 'The frame went away before it could be searched.');
    return id;
  };

  const highlight = async (tabId, { selector, duration_ms: durationMs, frame_url_contains: filter }) => {
    await lease(tabId);
    let kept = false;
    let t = null;
    try {
      const where = await locate({ tabId }, filter);
      t = where.target;
      // A new highlight replaces the previous one (this call's lease keeps the session).
      await hide(tabId, t);
      await cmd(t, 'DOM.enable');
      const doc = await documentOf(where);
      await cmd(t, 'Overlay.enable');
      let nodeIds;
      try {
        ({ nodeIds } = await cmd(t, 'DOM.querySelectorAll', { nodeId: doc, selector: String(selector) }));
      } catch (err) {
        throw new PilotError('invalid_selector', `${JSON.stringify(selector)} is not a valid CSS selector (${describe(err)}).`);
      }
      if (!nodeIds.length) throw new PilotError('element_not_found', `No element matches ${JSON.stringify(selector)} in ${where.url ?? 'the page'}. Check the selector against the page (execute_javascript can list candidates).`);
      let model;
      try {
        ({ model } = await cmd(t, 'DOM.getBoxModel', { nodeId: nodeIds[0] }));
      } catch {
        throw new PilotError('element_not_found', `${nodeIds.length} element(s) match ${JSON.stringify(selector)}, but the first is not rendered (display: none, or detached), so there is nothing to show.`);
      }
      await cmd(t, 'Overlay.highlightNode', { nodeId: nodeIds[0], highlightConfig: HIGHLIGHT });
      const xs = [0, 2, 4, 6].map((i) => model.border[i]);
      const ys = [1, 3, 5, 7].map((i) => model.border[i]);
      const bounds = {
        x: Math.min(...xs), y: Math.min(...ys),
        width: Math.max(...xs) - Math.min(...xs), height: Math.max(...ys) - Math.min(...ys),
      };
      const entry = { target: t, timer: null };
      entry.timer = setTimeout(() => { if (shown.get(tabId) === entry) hide(tabId); }, durationMs);
      shown.set(tabId, entry);
      kept = true;
      const out = { bounds, matched: nodeIds.length };
      if (where.url !== undefined) out.frame_url = where.url;
      return out;
    } finally {
      if (!kept) {
        // The previous highlight may still be drawn in this target.
        if (t !== null) await cmd(t, 'Overlay.hideHighlight').catch(() => {});
        await holds.unlease(tabId);
      }
    }
  };

  const state = createStateTools(PilotError);

  // One call from the host; resolves to { result } or { error: { code, message } }.
  const run = async (tabId, call) => {
    try {
      if (holds.holding(tabId)) {
        throw new PilotError('dialog_blocking', `A dialog holds tab ${tabId} open; answer it with interact handle_dialog first.`);
      }
      if (call.tool === 'execute') return { result: await execute(tabId, call) };
      if (call.tool === 'highlight') return { result: await highlight(tabId, call) };
      if (call.tool === 'state') return { result: await state.run(tabId, call) };
      throw new PilotError('pilot_failed', `unknown pilot tool ${JSON.stringify(call.tool)}`);
    } catch (err) {
      if (err instanceof PilotError) return { error: { code: err.code, message: err.message } };
      const message = describe(err);
      if (/No tab with id/.test(message)) return { error: { code: 'tab_not_found', message: `Tab ${tabId} is gone; observe {what:"tabs"} lists the open tabs.` } };
      return { error: { code: 'pilot_failed', message: `The browser could not complete the call (${message}); check the tab with observe {what:"tabs"}, then retry.` } };
    }
  };

  return { run };
}
