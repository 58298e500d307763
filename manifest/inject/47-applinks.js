  // @needs win, doc, apply, eventProto, nativePreventDefault, indexOf, sliceString, addEventListener
  // @needs getOwnPropertyDescriptor, getPrototypeOf, hasOwn, nativeToString, engine, boot
  // @needs ANSWER_ACCEPT, askBrowser
  // ---- App links: navigations to a scheme that is not the web's (mailto:, myapp://, web+x:) ----
  // Chromium hands such a URL to the OS. mailto: after a gesture starts the mail client;
  // any other scheme raises an "Open xdg-open?" dialog that drops every input to the tab,
  // outlives reloads, and headless never shows (MODAL-FACTS 5). The Navigation API's
  // `navigate` event comes first for each of them (a link, `location`, a form), cancelable:
  // with the pilot on the hook cancels it there and asks (rule, policy, agent); an answer
  // that opens it navigates again, as the page did. Pilot off: the browser's way, reported.
  //
  // Start-up cost: `navigation` and one listener on it; the engine is built (to read the
  // pilot switch) only when such a navigation comes.
  const WEB = { __proto__: null, 'http:': true, 'https:': true, 'about:': true, 'blob:': true, 'data:': true, 'javascript:': true, 'file:': true, 'filesystem:': true, 'chrome:': true, 'chrome-extension:': true, 'chrome-untrusted:': true, 'devtools:': true, 'view-source:': true };
  const cancelableOf = getOwnPropertyDescriptor(eventProto, 'cancelable').get;
  // The getters the hook reads an event with are looked up on the first event (their
  // interfaces cost every frame to make), from the event itself, and used only if they are
  // still the browser's own (their source says so; no page function can print it).
  let destinationOf = null;
  let urlOf = null;
  const nativeGetter = (o, name) => {
    const d = getOwnPropertyDescriptor(getPrototypeOf(o), name);
    const get = d !== undefined && hasOwn(d, 'get') ? d.get : undefined;
    return typeof get === 'function' && apply(nativeToString, get, []) === `function get ${name}() { [native code] }` ? get : null;
  };
  // An opened link goes through once: the navigation the hook starts again itself.
  let opening = null;
  const onNavigate = (event) => {
    let url;
    try {
      if (destinationOf === null) destinationOf = nativeGetter(event, 'destination');
      const destination = apply(destinationOf, event, []);
      if (urlOf === null) urlOf = nativeGetter(destination, 'url');
      url = apply(urlOf, destination, []);
    } catch {
      return;
    }
    const colon = apply(indexOf, url, [':']);
    if (colon < 0 || WEB[apply(sliceString, url, [0, colon + 1])] === true) return;
    if (url === opening) {
      opening = null;
      return;
    }
    if (engine === null) boot();
    if (engine.pilot() !== 1 || !apply(cancelableOf, event, [])) {
      askBrowser('app_link', url, 'navigate', () => {});
      return;
    }
    apply(nativePreventDefault, event, []);
    askBrowser('app_link', url, 'navigate', (code) => {
      if (code !== ANSWER_ACCEPT) return;
      opening = url;
      win.location.assign(url);
    });
  };
  // A document whose entries and events are disabled (a frame's initial about:blank, an
  // opaque origin: `currentEntry` is null) never fires `navigate`, so it gets no listener:
  // the first `navigate` listener costs a frame ~45 µs of the browser's own bookkeeping
  // (measured by the trace), for nothing there. An about:blank document is not even asked
  // (making `navigation` costs ~12 µs): a later about:blank (not its frame's first) does
  // fire the event, but only for its own script's navigations, which such a document
  // hardly has. What these frames are navigated to by their parent reaches the browser: the
  // worker reports the dialog it shows (applinks.js). No page script has run: the plain
  // reads below are the browser's own.
  const nav = doc.URL === 'about:blank' ? null : win.navigation;
  if (nav !== undefined && nav !== null && typeof nav === 'object' && nav.currentEntry !== null) {
    apply(addEventListener, nav, ['navigate', onNavigate]);
  }
