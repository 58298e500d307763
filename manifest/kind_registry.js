// The kinds' registry. Each kind of browser prompt the worker carries (HTTP auth, a download,
// a passkey request, …) is a file of its own, listed once in kinds.js, that declares what it
// is to the rest of the worker; background.js routes by these declarations and names no kind.
// A kind is an object:
// - `name`: its wire name (the host's `Kind`, the page hook's `ask`); written in its own file
//   and nowhere else in the worker;
// - `tab` (optional): what it keeps per tab from the host's `config` message: `fields` (the
//   message's fields it owns), `read(fields)` (its state, from those fields only) and `reset`
//   (the state of a tab the host said nothing of, and of every tab while the pilot is off);
// - `takes` (optional): the types of the host's messages it handles (its adapter's
//   `fromHost(msg)`);
// - `sends` (optional): the types of its own messages to the host (the host's
//   `Spec::message`); the `toHost` it is given refuses any other;
// - `create(ctx)`: its adapter, made once as the worker starts, synchronously: a worker an
//   event woke must have registered its listeners in its first turn. `ctx`: `name`,
//   `prompts` (prompts.js), `holds` (debugger.js), `toHost`, `pilotOn()`, `ready` (the pilot's
//   state is known), `tab(tabId)` (the kind's state for the tab now).
// An adapter may have `request(msg, sender, reply)` (the page hook asks about its kind),
// `settled(msg, sender)` (a page's call the browser settled first: each adapter looks for its
// own), `applyTab(tabId, state)` (the tab's config changed: done before the host hears it is
// in force) and `fromHost(msg)`.
// No two kinds share a name, a config field or a message type (checked as the worker starts,
// and by tools/worker_kinds.test.mjs, which also checks that background.js names no kind).

// The config message's own fields (protocol.rs `ToBrowser::Config`), read by background.js.
const CONFIG_CORE = ['type', 'tab_id', 'rev', 'config', 'debugger'];

// Throws unless the kinds' declarations hold together; returns who claims what.
export function checkKinds(kinds) {
  const names = new Set();
  const fields = new Map(CONFIG_CORE.map((f) => [f, 'the config message itself']));
  const types = new Map(); // message type -> kind name
  const claim = (map, key, by, what) => {
    if (typeof key !== 'string' || key === '') throw new Error(`kind ${by}: a ${what} must be a non-empty string`);
    if (map.has(key)) throw new Error(`kind ${by}: ${what} \`${key}\` is claimed by ${map.get(key)} already`);
    map.set(key, by);
  };
  for (const k of kinds) {
    if (typeof k?.name !== 'string' || !/^[a-z][a-z_]*$/.test(k.name)) throw new Error(`a kind without a wire name: ${k?.name}`);
    if (names.has(k.name)) throw new Error(`kind ${k.name} is registered twice`);
    names.add(k.name);
    if (typeof k.create !== 'function') throw new Error(`kind ${k.name} has no create(ctx)`);
    if (k.tab !== undefined) {
      if (!Array.isArray(k.tab.fields) || typeof k.tab.read !== 'function' || !('reset' in k.tab)) {
        throw new Error(`kind ${k.name}: tab needs fields, read and reset`);
      }
      for (const f of k.tab.fields) claim(fields, f, k.name, 'config field');
    }
    for (const t of [...(k.takes ?? []), ...(k.sends ?? [])]) claim(types, t, k.name, 'message type');
  }
  return { names, fields, types };
}

// `kinds`: the list (kinds.js); `tabKinds(tabId)`: what the host's config for the tab gave
// each kind (`fromConfig`), or nothing (no config, or the pilot off).
export function createKinds(kinds, { prompts, holds, toHost, pilotOn, ready, tabKinds }) {
  checkKinds(kinds);
  const made = []; // [kind, adapter]
  const asks = { __proto__: null }; // kind name -> adapter: what content.js's `ask` names
  const takers = new Map(); // host message type -> adapter
  for (const k of kinds) {
    const sends = new Set(k.sends ?? []);
    const tab = (tabId) => {
      const all = tabKinds(tabId);
      return all && k.name in all ? all[k.name] : k.tab?.reset;
    };
    const ctx = {
      name: k.name,
      prompts,
      holds,
      pilotOn,
      ready,
      tab,
      toHost(msg) {
        if (!sends.has(msg?.type)) throw new Error(`kind ${k.name} does not send \`${msg?.type}\``);
        toHost(msg);
      },
    };
    const adapter = k.create(ctx) ?? {};
    for (const t of k.takes ?? []) {
      if (typeof adapter.fromHost !== 'function') throw new Error(`kind ${k.name} takes \`${t}\` but has no fromHost`);
      takers.set(t, adapter);
    }
    if (typeof adapter.request === 'function') asks[k.name] = adapter;
    made.push([k, adapter, tab]);
  }
  const withTab = made.filter(([k]) => k.tab !== undefined);
  const settling = made.filter(([, a]) => typeof a.settled === 'function').map(([, a]) => a);
  const applying = made.filter(([, a]) => typeof a.applyTab === 'function');

  return {
    // Content.js's `ask`s, by the kind they name.
    asks,
    // What each kind keeps of the host's config message for a tab: kind name -> state.
    fromConfig(msg) {
      const out = { __proto__: null };
      for (const [k] of withTab) out[k.name] = k.tab.read(Object.fromEntries(k.tab.fields.map((f) => [f, msg[f]])));
      return out;
    },
    // Each kind brings the tab in line with its state (resolves once all are done; one that
    // fails does not hold the others, nor the config's acknowledgement).
    applyTab: (tabId) => Promise.allSettled(applying.map(([, a, tab]) => a.applyTab(tabId, tab(tabId)))),
    // A page's call the browser settled first: the kind that asked about it keeps it.
    settled(msg, sender) {
      for (const a of settling) a.settled(msg, sender);
    },
    // A host message of a kind's own: to it. False when no kind takes its type.
    fromHost(msg) {
      const a = takers.get(msg.type);
      if (!a) return false;
      a.fromHost(msg);
      return true;
    },
  };
}
