  // @needs win, apply, NewCustomEvent, dispatchEvent, addEventListener, detailOf, queueMicrotask
  // @needs getOwnPropertyDescriptor, deleteProperty, HANDOFF, engine, config, load, buildEngine
  // @gives secret, toIsolated, admit, post, fold, ask, boot, configs, fromDebugger
  // ---- Secret channel to content.js (ISOLATED world) ----
  // A random UUID (122 bits) names the channel's events: the page cannot listen to or forge
  // a name it cannot guess. This script runs first (listed first) and leaves the secret at the head of
  // window.status, a string the window keeps for every world and nothing else reads;
  // content.js, right after, takes it back off, before any page script runs. No event
  // carries it: an event at start costs every frame more than the rest of the hand-over.
  // (The other way round, a frame where only content.js runs, one sandboxed without
  // scripts, would keep the secret where a same-origin parent could read it.)
  // Called at once, before any page script: nothing to capture. randomUUID over
  // getRandomValues: one call, no typed array, no `Crypto` interface object to make (about
  // 10 µs a frame, measured). randomUUID exists in secure contexts only; elsewhere (an
  // http: page that is not localhost) 64 random bits from getRandomValues.
  const cryptoObj = crypto;
  let secret;
  if (typeof cryptoObj.randomUUID === 'function') secret = cryptoObj.randomUUID();
  else {
    const rnd = new Uint32Array(2);
    cryptoObj.getRandomValues(rnd);
    secret = 'u' + rnd[0].toString(36) + rnd[1].toString(36);
  }
  const toIsolated = secret + 'i';
  win.status = 'unmodal:' + secret + '\n' + win.status;

  // Reports leave in batches after the current task, so a dialog call costs only the
  // decision. A native dialog's "open" goes at once (the call is about to block).
  // Flood limit: a token bucket lets at most RATE reports a second (bursts of RATE) leave
  // this frame; the rest are counted, exactly, and the count travels with the next batch.
  // Reports that spend a once-rule or close a native dialog always go (the host needs them,
  // and they cannot flood: a rule set is small, a native dialog waits for a human).
  const RATE = 10;
  const now = Date.now;
  let tokens = RATE;
  let refilled = now();
  // The batch is a list without a prototype: a page-realm array would run the page's
  // setters on Array.prototype with our reports in hand.
  const newList = () => ({ __proto__: null, length: 0 });
  let queue = newList();
  let folded = 0;
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    const detail = { __proto__: null, reports: queue, folded };
    queue = newList();
    folded = 0;
    apply(dispatchEvent, win, [new NewCustomEvent(toIsolated, { __proto__: null, detail })]);
  };
  const admit = () => {
    const t = now();
    tokens = tokens + ((t - refilled) * RATE) / 1000;
    if (tokens > RATE) tokens = RATE;
    refilled = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
  const post = (report, urgent, always) => {
    if (always || admit()) queue[queue.length++] = report;
    else folded++;
    if (urgent) flush();
    else if (!flushQueued) {
      flushQueued = true;
      apply(queueMicrotask, win, [flush]);
    }
  };
  // One more call the flood limit kept from asking (44-ask): counted
  // with the dialogs, sent with the next batch.
  const fold = () => {
    folded++;
    if (!flushQueued) {
      flushQueued = true;
      apply(queueMicrotask, win, [flush]);
    }
  };

  // content.js's stand-in while the tab's config is on its way (engine `fallback_configs`).
  // It never replaces a config: the debugger's new-document script may have handed the real
  // one over before content.js knew anything.
  const PILOT_ON_STANDIN = 'U1E1S';
  // A config from content.js (or the debugger's new-document script). A string is all a
  // page-realm value may be here: nothing else is read from it.
  let configs = 0; // how many came: a new one may come with news (35-no-dialog asks again)
  const configure = (cfg) => {
    if (typeof cfg !== 'string' || cfg.length === 0) return;
    if (cfg === PILOT_ON_STANDIN && config !== null) return;
    config = cfg;
    configs += 1;
    if (engine !== null) load(cfg);
  };
  // A question to content.js, answered before dispatchEvent returns: yes is the event
  // cancelled. 'config': send the config now and every later one (listened for only from
  // then on: most frames never ask); 'active': has the frame had a user activation (what a
  // leave prompt needs), read in a world the page cannot touch.
  let listening = false;
  const ask = (what) => {
    if (what === 'config' && !listening) {
      listening = true;
      apply(addEventListener, win, [secret + 'm', (event) => configure(apply(detailOf, event, []))]);
    }
    return !apply(dispatchEvent, win, [new NewCustomEvent(toIsolated, { __proto__: null, detail: what, cancelable: true })]);
  };
  // The engine, built on a document's first dialog (40-dialogs, 50-beforeunload): content.js
  // holds the newest config, and sends later ones only once asked (a frame that never shows
  // a dialog never exchanges one).
  const boot = () => {
    ask('config');
    buildEngine();
  };
  // A tab under a dialog policy also gets its config from the debugger session's
  // new-document script, which runs before this file: no page script has run, none sees it.
  const handed = getOwnPropertyDescriptor(win, HANDOFF);
  const fromDebugger = handed !== undefined;
  if (handed !== undefined) {
    deleteProperty(win, HANDOFF);
    configure(handed.value);
  }
