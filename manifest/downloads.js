// Downloads a page starts (a download link, an attachment, window.open of a file). The
// browser saves each to the profile's download directory without asking, and the agent
// would never hear of it (MODAL-FACTS 4). Each one waits here while the browser asks for its
// name (`onDeterminingFilename`, which holds the download until answered) and the host (the
// state of record) decides:
// - accept (also: no host): the browser's own name and place; the host moves the finished
//   file into a `save_dir` itself;
// - refuse: cancelled, nothing written (`chrome.downloads.cancel`);
// - pilot off: the browser's way, reported.
// What became of each goes back (`download_done`: state, path, size). Message shapes:
// native-host/src/host/protocol.rs.

const MAX_NAME = 256;

// `pilotOn()`: the human's switch; `toHost`: the native port.
export function createDownloads(prompts, pilotOn, toHost) {
  const asked = new Map(); // download id -> { tabId, request }

  // The tab a download came from: downloads carry no tab, so the one showing the page that
  // started it (its referrer), else one of its origin, else the active tab.
  const tabOf = async (item) => {
    const tabs = await chrome.tabs.query({});
    const referrer = String(item.referrer ?? '');
    const origin = (u) => { try { return new URL(u).origin; } catch { return null; } };
    const exact = tabs.find((t) => referrer !== '' && t.url === referrer);
    const same = tabs.find((t) => origin(referrer) !== null && origin(t.url) === origin(referrer));
    const active = (await chrome.tabs.query({ active: true, lastFocusedWindow: true }))[0];
    return (exact ?? same ?? active ?? tabs[0])?.id;
  };

  const decide = async (item, suggest) => {
    const tabId = await tabOf(item).catch(() => undefined);
    if (!Number.isInteger(tabId)) return suggest();
    const fields = {
      tab_id: tabId,
      frame_id: 0,
      url: String(item.finalUrl || item.url || ''),
      file_name: String(item.filename ?? '').split('/').pop().slice(0, MAX_NAME),
      mime: String(item.mime ?? '').slice(0, 128),
      size: Number.isSafeInteger(item.totalBytes) && item.totalBytes > 0 ? item.totalBytes : -1,
    };
    if (!pilotOn()) {
      suggest();
      asked.set(item.id, { tabId, request: prompts.native('download', fields) });
      return;
    }
    const apply = async (decision) => {
      if (decision !== 'refuse') {
        suggest();
        return true;
      }
      await chrome.downloads.cancel(item.id);
      return false;
    };
    const request = prompts.ask('download', fields, { apply, noHost: 'native' });
    if (request !== null) asked.set(item.id, { tabId, request });
  };

  // Every download waits for this listener's answer (`true`: it comes later).
  chrome.downloads.onDeterminingFilename.addListener((item, suggest) => {
    decide(item, suggest).catch(() => suggest());
    return true;
  });

  chrome.downloads.onChanged.addListener(async (delta) => {
    const state = delta.state?.current;
    const a = asked.get(delta.id);
    if (!a || (state !== 'complete' && state !== 'interrupted')) return;
    asked.delete(delta.id);
    const [item] = await chrome.downloads.search({ id: delta.id }).catch(() => []);
    toHost({
      type: 'download_done',
      tab_id: a.tabId,
      id: a.request,
      state,
      path: state === 'complete' ? String(item?.filename ?? '') : '',
      size: Number.isSafeInteger(item?.fileSize) ? item.fileSize : -1,
      ...(item?.error ? { error: String(item.error).slice(0, 64) } : {}),
    });
  });
}
