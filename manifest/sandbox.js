// Documents the browser shows no dialog because they are sandboxed without `allow-modals`,
// where the document cannot tell by itself (content.js reads the owner elements of
// same-origin ancestors only): a CSP `sandbox` header, read here off the response, and a
// frame of another origin (or an opaque one) whose owner element only its parent's world
// sees. Found once a frame says hello; content.js is told, and the page hook then answers
// as the browser does (inject/35-no-dialog.js).
const MAX_KEPT = 1000;

// Does a response's CSP sandbox its document without `allow-modals`? Every policy with a
// `sandbox` directive restricts on its own; report-only policies do not count.
export function cspBlocksModals(headers) {
  for (const h of headers ?? []) {
    if (String(h.name).toLowerCase() !== 'content-security-policy') continue;
    for (const policy of String(h.value ?? '').split(',')) {
      for (const directive of policy.split(';')) {
        const [name, ...tokens] = directive.trim().toLowerCase().split(/[\t\n\f\r ]+/);
        if (name === 'sandbox' && !tokens.includes('allow-modals')) return true;
      }
    }
  }
  return false;
}

const withoutFragment = (url) => String(url).split('#')[0];

// Runs in the parent frame's isolated world, where its content.js answers (by the child's
// window: Chromium gives content scripts no frame ids).
function ownerBlocksModals(index) {
  const bridge = globalThis.__unmodalBridge;
  return !!bridge && typeof bridge.childSandboxed === 'function' && bridge.childSandboxed(index) === true;
}

export function createSandbox() {
  const byHeader = new Map(); // `${tab}/${frame}` -> { url, blocks }: the frame's last document response
  const byDocument = new Map(); // documentId -> { tabId, blocks: Promise<boolean> }, for documents that said hello
  const keep = (map, key, value) => {
    map.delete(key); // newest last, for the cap
    map.set(key, value);
    if (map.size > MAX_KEPT) map.delete(map.keys().next().value);
  };
  chrome.webRequest.onHeadersReceived.addListener(
    (d) => {
      if (d.tabId >= 0) keep(byHeader, `${d.tabId}/${d.frameId}`, { url: withoutFragment(d.url), blocks: cspBlocksModals(d.responseHeaders) });
    },
    { urls: ['<all_urls>'], types: ['main_frame', 'sub_frame'] },
    ['responseHeaders'],
  );
  chrome.tabs.onRemoved.addListener((tabId) => {
    for (const key of [...byHeader.keys()]) if (key.startsWith(`${tabId}/`)) byHeader.delete(key);
    for (const [key, d] of [...byDocument]) if (d.tabId === tabId) byDocument.delete(key);
  });
  const headerBlocks = (tabId, frameId, url) => {
    const h = byHeader.get(`${tabId}/${frameId}`);
    return !!h && h.blocks && h.url === withoutFragment(url);
  };

  // By its CSP; by its parent's sandbox (what the worker found for the parent, or what the
  // parent's content.js knows); by its owner element, read in the parent's world.
  const find = async (tabId, frameId, url, index) => {
    if (headerBlocks(tabId, frameId, url)) return true;
    if (!frameId) return false;
    try {
      const frame = await chrome.webNavigation.getFrame({ tabId, frameId });
      if (!frame || frame.parentFrameId < 0) return false;
      const parent = byDocument.get(frame.parentDocumentId);
      if (parent && (await parent.blocks)) return true;
      if (!Number.isSafeInteger(index) || index < 0) return false;
      const [r] = await chrome.scripting.executeScript({
        target: { tabId, frameIds: [frame.parentFrameId] },
        world: 'ISOLATED',
        injectImmediately: true, // not at the parent's document_idle: the frame waits for this
        func: ownerBlocksModals,
        args: [index],
      });
      return r?.result === true;
    } catch {
      return false; // a frame gone, or not ours to read
    }
  };

  return {
    // The document that sent `sender` (at `url`, as the browser records it; `index`: its
    // window's number among its parent's) says hello: is it sandboxed without allow-modals
    // where it cannot see? False when unknown.
    blocksModals(sender, url, index) {
      const tabId = sender.tab?.id;
      if (!Number.isInteger(tabId)) return Promise.resolve(false);
      const blocks = find(tabId, sender.frameId ?? 0, url, index);
      if (typeof sender.documentId === 'string') keep(byDocument, sender.documentId, { tabId, blocks });
      return blocks;
    },
  };
}
