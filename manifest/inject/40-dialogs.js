  // @needs win, apply, charCodeAt, fromCharCode, sliceString, natives
  // @needs MAX_MESSAGE, pageUrl, KIND_NAMES, BY_NAMES, BY_POLICY, engine, io, boot, post
  // @needs withoutOwnFrames, bindingError, checkWindow, noDialogReason, ask, fromDebugger
  // @gives handle, decisionReport
  // ---- Decisions ----
  let seq = 0;
  // WebIDL DOMString conversion, with the natives' errors.
  const toText = (v, fn) => {
    if (typeof v === 'symbol') throw bindingError(fn, 'Cannot convert a Symbol value to a string');
    try {
      return `${v}`;
    } catch (err) {
      throw withoutOwnFrames(err, fn);
    }
  };

  const ruleText = (slot) => {
    const n = engine.rule_text(slot);
    if (n < 0) return null;
    let s = '';
    for (let i = 0; i < n; i++) s += fromCharCode(io[i]);
    return s;
  };

  // The report of one engine decision. Built whole, with no prototype: no page-defined
  // setter or getter on Object.prototype ever sees it.
  const decisionReport = (kind, packed, message, defaultText, accepted, value) => {
    const slot = (packed >>> 8) - 1;
    const cut = message.length > MAX_MESSAGE;
    return {
      __proto__: null,
      seq: ++seq,
      // A native alert/confirm/prompt is about to open; a beforeunload ask never blocks here.
      phase: (packed & 3) === 0 && kind !== 3 ? 'open' : 'decided',
      kind: KIND_NAMES[kind],
      message: cut ? apply(sliceString, message, [0, MAX_MESSAGE]) : message,
      message_cut: cut,
      default_text: defaultText,
      decided_by: BY_NAMES[(packed >>> 2) & 3],
      rules_loaded: ((packed >>> 4) & 1) === 1,
      rule_id: slot >= 0 ? engine.rule_id(slot) : null,
      accepted,
      value,
    };
  };

  let newsCame = false; // content.js has the worker's answer to its hello
  function handle(kind, self, args, fn) {
    checkWindow(self, fn);
    const message = kind === 0
      ? (args.length === 0 ? '' : toText(args[0], fn))
      : (args[0] === undefined ? '' : toText(args[0], fn));
    const defaultText = kind === 2 ? (args[1] === undefined ? '' : toText(args[1], fn)) : null;

    // Where the browser shows no dialog, the page gets what the browser gives, whatever
    // the rules and the policy say; reported, no rule spent.
    const reason = noDialogReason();
    if (reason !== null) {
      const cut = message.length > MAX_MESSAGE;
      post({
        __proto__: null,
        seq: ++seq,
        phase: 'decided',
        kind: KIND_NAMES[kind],
        message: cut ? apply(sliceString, message, [0, MAX_MESSAGE]) : message,
        message_cut: cut,
        default_text: defaultText,
        no_dialog: reason,
      }, false, false);
      return kind === 1 ? false : kind === 2 ? null : undefined;
    }

    if (engine === null) boot();
    // Rules that match on the message or the page URL need them in the engine's buffer.
    const needs = engine.needs();
    let m = 0;
    let u = 0;
    if (needs & 1) {
      m = message.length > MAX_MESSAGE ? MAX_MESSAGE : message.length;
      for (let i = 0; i < m; i++) io[i] = apply(charCodeAt, message, [i]);
    }
    if (needs & 2) {
      const url = pageUrl();
      u = url.length < MAX_MESSAGE ? url.length : MAX_MESSAGE;
      for (let i = 0; i < u; i++) io[m + i] = apply(charCodeAt, url, [i]);
    }
    const packed = engine.decide(kind, m, u);
    const outcome = packed & 3;
    const slot = (packed >>> 8) - 1;
    const nativeArgs = kind === 2 ? [message, defaultText] : [message];
    // must_respond: the browser's dialog opens and the service worker's debugger session
    // holds it for the agent and reports it; the page gets exactly the agent's answer.
    if (outcome === 0 && ((packed >>> 2) & 3) === BY_POLICY) return apply(natives[KIND_NAMES[kind]], win, nativeArgs);
    // Accepted, in a document whose config came from the debugger (a tab under a policy)
    // before the worker's news of its sandbox (35-no-dialog): the browser's own dialog, which
    // it does not show in such a sandbox, and the debugger session answers as the policy says.
    if (outcome === 1 && fromDebugger && !newsCame) {
      if (ask('news')) return apply(natives[KIND_NAMES[kind]], win, nativeArgs);
      newsCame = true;
    }
    const accepted = outcome === 1;
    let value;
    if (kind === 1) value = accepted;
    // An accepted prompt returns the rule's text, or "" (as the debugger answers without text).
    else if (kind === 2) value = accepted ? (slot >= 0 ? ruleText(slot) ?? '' : '') : null;

    const report = decisionReport(kind, packed, message, defaultText, outcome === 0 ? null : accepted,
      kind === 2 && outcome !== 0 ? value : null);
    post(report, outcome === 0, ((packed >>> 5) & 1) === 1);
    if (outcome !== 0) return value;

    // Pilot off: the browser's own dialog; its answer is reported when it closes.
    const result = apply(natives[KIND_NAMES[kind]], win, nativeArgs);
    post({
      __proto__: null,
      seq: report.seq,
      phase: 'closed',
      kind: KIND_NAMES[kind],
      accepted: kind === 0 || (result !== false && result !== null),
      value: kind === 2 ? result : null,
    }, false, true);
    return result;
  }
