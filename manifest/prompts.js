// Browser prompts the host decides (HTTP auth, permissions, device choosers): the one
// request machinery auth.js, permissions.js and choosers.js share. A request is numbered,
// sent to the host (`prompt_request`) and held for its answer (`prompt_answer`) for
// FIRST_WAIT_MS, or as long as the host says (`prompt_hold`); then the refusal applies
// here. What became of each one goes back (`prompt_result`). Message shapes:
// native-host/src/host/protocol.rs.
//
// Never a hang: with no host the adapter's no-host decision applies at once; a request no
// answer reaches in time, or still waiting when the host goes, gets the refusal.
const FIRST_WAIT_MS = 5000;
const MAX_HOLD_MS = 11 * 60 * 1000;
const MAX_URL = 2048;
const MAX_ERROR = 300;
const DECISIONS = ['accept', 'refuse', 'native'];

// `connected()`: a host is there to answer; `pilotOn()`: the human's switch (off: what a
// page asks about goes the browser's way, only reported).
export function createPrompts(toHost, connected, pilotOn) {
  let seq = 0; // one numbering for every kind: the host's answers name the request by it
  const waiting = new Map(); // id -> { kind, tabId, apply, tag, timer }

  const send = (kind, id, fields, native) => toHost({
    ...fields,
    type: 'prompt_request',
    kind,
    id,
    frame_id: Number.isInteger(fields.frame_id) ? fields.frame_id : 0,
    url: typeof fields.url === 'string' ? fields.url.slice(0, MAX_URL) : '',
    native,
  });

  const result = (kind, tabId, id, how, r) => toHost({
    type: 'prompt_result',
    kind,
    tab_id: tabId,
    id,
    ok: r.ok,
    accepted: r.ok && r.accepted,
    expired: how === 'expired',
    settled: how === 'settled',
    ...(r.error ? { error: r.error } : {}),
  });

  // The adapter's `apply(decision, answer)` gives the decision to the page or request (it
  // may be async; it throws when it could not) and returns true when that was an accept.
  const run = async (apply, decision, answer) => {
    try {
      return { ok: true, accepted: (await apply(decision, answer)) === true };
    } catch (err) {
      return { ok: false, accepted: false, error: String(err?.message ?? err).slice(0, MAX_ERROR) };
    }
  };

  // `how`: 'answer' (the host's), 'expired' (nobody answered in time, or the host went),
  // 'settled' (the browser answered first).
  const finish = async (id, decision, how, answer) => {
    const w = waiting.get(id);
    if (!w) return;
    waiting.delete(id); // before anything waits: a request ends once
    clearTimeout(w.timer);
    result(w.kind, w.tabId, id, how, await run(w.apply, decision, answer));
  };
  const expire = (id) => finish(id, 'refuse', 'expired');

  // The request the host's message names, if it is of the kind and tab the host says.
  const named = (msg) => {
    const w = waiting.get(msg.id);
    return w && w.kind === msg.kind && w.tabId === msg.tab_id ? w : null;
  };

  return {
    // `fields`: tab_id, frame_id, url and the kind's own. `noHost`: the decision when no host
    // is there (nothing is sent). `tag`: the adapter's own, for `settle` and `forget`.
    // Returns the request's id (null: no host).
    ask(kind, fields, { apply, noHost = 'refuse', tag = null }) {
      if (!connected()) {
        run(apply, noHost);
        return null;
      }
      const id = ++seq;
      waiting.set(id, { kind, tabId: fields.tab_id, apply, tag, timer: setTimeout(() => expire(id), FIRST_WAIT_MS) });
      send(kind, id, fields, false);
      return id;
    },
    // A page's request (the page hook's `ask`, through content.js): the kind's `fields` with
    // the sender's tab, frame and URL, for `ask`; null when the pilot is off, and then the
    // request is only recorded and the page goes the browser's way (`reply('native')`).
    fromPage(kind, sender, reply, fields) {
      const all = this.sent(sender, fields);
      if (pilotOn()) return all;
      this.native(kind, all);
      reply('native');
      return null;
    },
    // A page's request's fields: the kind's own, with the sender's tab, frame and URL (the
    // browser's word, not the page's).
    sent(sender, fields) {
      return { tab_id: sender.tab.id, frame_id: sender.frameId, url: String(sender.url ?? ''), ...fields };
    },
    // Pilot off: the browser handles it; the host only records it (nothing waits). Returns
    // the request's id.
    native(kind, fields) {
      send(kind, ++seq, fields, true);
      return seq;
    },
    answer(msg) {
      if (!DECISIONS.includes(msg.decision)) return;
      if (named(msg)) return void finish(msg.id, msg.decision, 'answer', msg);
      // Expired, settled or forgotten meanwhile (a request of another kind is left alone).
      if (!waiting.has(msg.id)) {
        result(msg.kind, msg.tab_id, msg.id, 'answer', { ok: false, accepted: false, error: 'the request is no longer waiting' });
      }
    },
    // The host holds it for the agent: wait that long (its watchdog answers first).
    hold(msg) {
      const w = named(msg);
      if (!w) return;
      clearTimeout(w.timer);
      const ms = Math.min(Math.max(Number(msg.wait_ms) || 0, FIRST_WAIT_MS), MAX_HOLD_MS);
      w.timer = setTimeout(() => expire(msg.id), ms);
    },
    // The browser answered the first request of `kind` whose tag `match`es: it keeps its answer.
    settle(kind, match) {
      for (const [id, w] of waiting) {
        if (w.kind === kind && match(w.tag)) return void finish(id, 'native', 'settled');
      }
    },
    // Requests of `kind` whose tag `match`es can no longer be answered: dropped, nothing applied.
    forget(kind, match) {
      for (const [id, w] of waiting) {
        if (w.kind === kind && match(w.tag)) {
          waiting.delete(id);
          clearTimeout(w.timer);
        }
      }
    },
    // The host went: nobody can answer what waits.
    releaseAll() {
      for (const id of [...waiting.keys()]) expire(id);
    },
  };
}
