// manage_state: a tab's localStorage, sessionStorage, cookies and URL, saved under a name
// and made true again on load. Snapshots hold credentials, so they stay here, in the
// extension's own storage (only trusted extension pages reach it: background.js sets the
// access level), and never travel to the host: answers carry names, counts and sizes.
//
// Measured (DESIGN.md, fact 17): reads from an ISOLATED-world script are invisible to the
// page; writes fire `storage` events in other same-origin documents, so only what differs is
// written; cookies.getAll({url}) skips path-scoped and partitioned cookies, so the whole
// store is read (partitionKey: {}) and filtered by what applies to the tab's host; a
// host-only cookie is set back without `domain` (with it, it would become a domain cookie).

const INDEX = 'snapshotIndex';
const KEY = (name) => `snapshot:${name}`;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024;
const MAX_SNAPSHOTS = 100;
const LOAD_WAIT_MS = 8000;

// Runs in the page's ISOLATED world: the page can neither see nor change what it uses.
function readStorage() {
  const dump = (s) => {
    const out = [];
    for (let i = 0; i < s.length; i++) {
      const k = s.key(i);
      out.push([k, s.getItem(k)]);
    }
    return out;
  };
  return { origin: location.origin, local: dump(localStorage), session: dump(sessionStorage) };
}

// Also ISOLATED: writes only what differs, removes what the snapshot lacks; returns counts.
function writeStorage(local, session) {
  const apply = (s, entries) => {
    const want = new Map(entries);
    let written = 0;
    let removed = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      const k = s.key(i);
      if (k !== null && !want.has(k)) {
        s.removeItem(k);
        removed++;
      }
    }
    for (const [k, v] of want) {
      if (s.getItem(k) !== v) {
        s.setItem(k, v);
        written++;
      }
    }
    return { written, removed };
  };
  return { origin: location.origin, local: apply(localStorage, local), session: apply(sessionStorage, session) };
}

const hostOf = (url) => {
  try {
    return new URL(url);
  } catch {
    return null;
  }
};

// Whether a cookie would be sent to `host` at some path (path-scoped ones included).
const applies = (c, url) => {
  const host = url.hostname;
  if (c.hostOnly) return c.domain === host;
  const d = c.domain.startsWith('.') ? c.domain.slice(1) : c.domain;
  if (!(host === d || host.endsWith(`.${d}`))) return false;
  return true;
};
// A partitioned cookie applies when it was set under the tab's top-level site (its scheme
// aside, as for Secure cookies).
const partitionApplies = (c, url) => {
  const site = hostOf(c.partitionKey?.topLevelSite ?? '');
  if (!site) return true;
  return url.hostname === site.hostname || url.hostname.endsWith(`.${site.hostname}`);
};
const cookieId = (c) => JSON.stringify([c.name, c.domain, c.path, c.partitionKey?.topLevelSite ?? null, c.partitionKey?.hasCrossSiteAncestor ?? null]);
const FIELDS = ['name', 'value', 'domain', 'hostOnly', 'path', 'secure', 'httpOnly', 'sameSite', 'session', 'expirationDate', 'partitionKey', 'storeId'];
const keep = (c) => Object.fromEntries(FIELDS.filter((f) => c[f] !== undefined).map((f) => [f, c[f]]));
const same = (a, b) => ['value', 'hostOnly', 'secure', 'httpOnly', 'sameSite', 'session', 'expirationDate']
  .every((f) => a[f] === b[f]);
const cookieUrl = (c) => `${c.secure ? 'https' : 'http'}://${c.domain.replace(/^\./, '')}${c.path || '/'}`;

async function cookiesFor(url, storeId) {
  const all = await chrome.cookies.getAll({ partitionKey: {}, ...(storeId ? { storeId } : {}) });
  return all.filter((c) => applies(c, url) && (!c.partitionKey || partitionApplies(c, url))).map(keep);
}

export function createStateTools(PilotError) {
  const fail = (code, message) => new PilotError(code, message);

  const index = async () => (await chrome.storage.local.get(INDEX))[INDEX] ?? {};

  const inTab = async (tabId, func, args = []) => {
    const [res] = await chrome.scripting.executeScript({ target: { tabId, frameIds: [0] }, world: 'ISOLATED', func, args });
    if (!res || res.result === undefined) throw fail('pilot_failed', `Could not reach the page in tab ${tabId} (it may be a browser page, or still loading).`);
    return res.result;
  };

  const webTab = async (tabId) => {
    const tab = await chrome.tabs.get(tabId);
    const url = hostOf(tab.url ?? '');
    if (!url || !/^https?:$/.test(url.protocol)) throw fail('pilot_failed', `Tab ${tabId} shows ${JSON.stringify(tab.url ?? '')}, not a web page: there is no site state to save or load.`);
    return { tab, url };
  };

  const loaded = (tabId) => new Promise((resolve) => {
    const done = (ok) => {
      chrome.tabs.onUpdated.removeListener(listen);
      clearTimeout(timer);
      resolve(ok);
    };
    const listen = (id, change) => { if (id === tabId && change.status === 'complete') done(true); };
    const timer = setTimeout(() => done(false), LOAD_WAIT_MS);
    chrome.tabs.onUpdated.addListener(listen);
  });
  const navigate = async (tabId, url, reload = false) => {
    const wait = loaded(tabId);
    if (reload) await chrome.tabs.reload(tabId);
    else await chrome.tabs.update(tabId, { url });
    if (!(await wait)) throw fail('pilot_failed', `Tab ${tabId} did not finish loading ${url} within ${LOAD_WAIT_MS / 1000} s.`);
  };

  const save = async (tabId, name) => {
    const { tab, url } = await webTab(tabId);
    const storage = await inTab(tabId, readStorage);
    const cookies = await cookiesFor(url, tab.cookieStoreId);
    const snapshot = {
      name, url: tab.url, origin: storage.origin, timestamp: new Date().toISOString(),
      local: storage.local, session: storage.session, cookies,
    };
    const size = JSON.stringify(snapshot).length;
    if (size > MAX_SNAPSHOT_BYTES) {
      throw fail('snapshot_too_large', `The tab's state takes ${size} bytes; a snapshot holds at most ${MAX_SNAPSHOT_BYTES}. Nothing was saved. Clear large storage entries the flow does not need, then save again.`);
    }
    const idx = await index();
    if (!idx[name] && Object.keys(idx).length >= MAX_SNAPSHOTS) {
      throw fail('snapshot_too_large', `${MAX_SNAPSHOTS} snapshots are saved already; delete some first (manage_state list / delete).`);
    }
    idx[name] = { url: tab.url, timestamp: snapshot.timestamp, size_bytes: size };
    await chrome.storage.local.set({ [KEY(name)]: snapshot, [INDEX]: idx });
    const saved = { localStorage: storage.local.length, sessionStorage: storage.session.length, cookies: cookies.length };
    return { success: true, snapshot_name: name, size_bytes: size, saved };
  };

  const restoreCookies = async (url, saved, storeId) => {
    const now = await cookiesFor(url, storeId);
    const have = new Map(now.map((c) => [cookieId(c), c]));
    const want = new Set(saved.map(cookieId));
    let written = 0;
    let removed = 0;
    for (const c of now) {
      if (want.has(cookieId(c))) continue;
      const gone = { url: cookieUrl(c), name: c.name, ...(c.storeId ? { storeId: c.storeId } : {}) };
      if (c.partitionKey) gone.partitionKey = c.partitionKey;
      await chrome.cookies.remove(gone);
      removed++;
    }
    for (const c of saved) {
      const old = have.get(cookieId(c));
      if (old && same(old, c)) continue;
      const set = { url: cookieUrl(c), name: c.name, value: c.value, path: c.path, secure: c.secure, httpOnly: c.httpOnly, sameSite: c.sameSite };
      if (!c.hostOnly) set.domain = c.domain; // host-only stays host-only
      if (!c.session && c.expirationDate !== undefined) set.expirationDate = c.expirationDate;
      if (c.partitionKey) set.partitionKey = c.partitionKey;
      if (c.storeId) set.storeId = c.storeId;
      if (!(await chrome.cookies.set(set))) throw fail('pilot_failed', `The browser refused to restore cookie ${JSON.stringify(c.name)} for ${c.domain}.`);
      written++;
    }
    return { written, removed };
  };

  const load = async (tabId, name, includeUrl) => {
    const snap = (await chrome.storage.local.get(KEY(name)))[KEY(name)];
    if (!snap) throw fail('snapshot_not_found', `No snapshot ${JSON.stringify(name)}; manage_state {action:"list"} shows the saved ones.`);
    let { tab, url } = await webTab(tabId);
    const target = hostOf(snap.url);
    const sameOrigin = url.origin === snap.origin;
    if (!sameOrigin && !includeUrl) {
      throw fail('pilot_failed', `Snapshot ${JSON.stringify(name)} belongs to ${snap.origin}, but tab ${tabId} shows ${url.origin}. Load it with include_url: true, or open ${snap.origin} first. Nothing was changed.`);
    }
    const cookies = await restoreCookies(target, snap.cookies, tab.cookieStoreId);
    // Storage belongs to an origin: the tab must show it before it can be written.
    if (!sameOrigin) {
      await navigate(tabId, snap.url);
      ({ tab, url } = await webTab(tabId));
    }
    const storage = await inTab(tabId, writeStorage, [snap.local, snap.session]);
    if (storage.origin !== snap.origin) throw fail('pilot_failed', `Tab ${tabId} ended up on ${storage.origin}, not ${snap.origin} (a redirect?); its storage was not restored.`);
    // The page reads its state as it loads: load it again (or at the saved URL) to see it.
    let navigated = false;
    if (includeUrl) {
      if (sameOrigin) await navigate(tabId, snap.url);
      else await navigate(tabId, snap.url, true);
      navigated = true;
    }
    const count = { localStorage: snap.local.length, sessionStorage: snap.session.length, cookies: snap.cookies.length };
    return {
      success: true,
      snapshot_name: name,
      restored: count,
      written: { localStorage: storage.local.written, sessionStorage: storage.session.written, cookies: cookies.written },
      removed: { localStorage: storage.local.removed, sessionStorage: storage.session.removed, cookies: cookies.removed },
      navigated,
    };
  };

  const list = async () => {
    const idx = await index();
    const snapshots = Object.keys(idx).sort().map((name) => ({ name, url: idx[name].url, timestamp: idx[name].timestamp, size_bytes: idx[name].size_bytes }));
    return { snapshots };
  };

  const remove = async (name) => {
    const idx = await index();
    if (!idx[name]) throw fail('snapshot_not_found', `No snapshot ${JSON.stringify(name)}; manage_state {action:"list"} shows the saved ones.`);
    delete idx[name];
    await chrome.storage.local.remove(KEY(name));
    await chrome.storage.local.set({ [INDEX]: idx });
    return { success: true, deleted: name };
  };

  const run = async (tabId, call) => {
    const name = call.snapshot_name;
    if (call.action !== 'list' && !(typeof name === 'string' && NAME.test(name))) throw fail('invalid_params', 'snapshot_name: 1 to 64 of A-Z, a-z, 0-9, _ . -');
    if (call.action === 'save') return save(tabId, name);
    if (call.action === 'load') return load(tabId, name, call.include_url !== false);
    if (call.action === 'list') return list();
    if (call.action === 'delete') return remove(name);
    throw fail('invalid_params', `unknown action ${JSON.stringify(call.action)}`);
  };

  return { run };
}
