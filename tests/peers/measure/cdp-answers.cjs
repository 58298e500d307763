// Measures what a CDP client beside another one sees and can answer (docs/cdp-answers.md).
// Run: node tests/peers/measure/cdp-answers.cjs [downloads|rph|spc|frames|late|two] …
// (Chromium: UNMODAL_CHROMIUM or /usr/bin/chromium; nothing leaves the machine.)
'use strict';
const { chromium } = require('../node_modules/playwright-core');
const http = require('http');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const CHROMIUM = process.env.UNMODAL_CHROMIUM || '/usr/bin/chromium';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/// Polls `cond` (sync or async) until it holds or `ms` pass; whether it held. A limit, not
/// a wait: what is looked for ends it at once, and only a measured "nothing" waits it out.
async function until(cond, ms) {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return true;
    if (Date.now() >= end) return false;
    await sleep(25);
  }
}
const out = (k, v) => console.log(JSON.stringify({ [k]: v }));

function serve(routes) {
  return new Promise((resolve) => {
    const s = http.createServer((req, res) => {
      const u = new URL(req.url, 'http://x');
      const r = routes[u.pathname];
      if (!r) { res.writeHead(404); return res.end(); }
      r(req, res, u);
    });
    s.listen(0, '127.0.0.1', () => resolve({ server: s, port: s.address().port }));
  });
}
const html = (body) => (req, res) => { res.writeHead(200, { 'content-type': 'text/html' }); res.end(body); };

async function launch(extra = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cdp-answers-'));
  const p = spawn(CHROMIUM, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run',
    '--remote-debugging-port=0', `--user-data-dir=${dir}`, ...extra, 'about:blank'], { stdio: 'ignore' });
  const file = path.join(dir, 'DevToolsActivePort');
  const read = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '').split('\n');
  await until(() => (read()[1] || '').startsWith('/devtools'), 10000);
  const [port, wsPath] = read();
  return { proc: p, dir, ws: `ws://127.0.0.1:${port}${wsPath}`, close: () => p.kill() };
}

/// A second client, as Unmodal's host would be: nothing of Playwright's defaults.
async function rawClient(ws) {
  const b = await chromium.connectOverCDP(ws, { noDefaults: true });
  return { b, s: await b.newBrowserCDPSession() };
}

async function downloads() {
  const { server, port } = await serve({
    '/': html('<a id=d href="/file" download>get</a>'),
    '/file': (req, res) => { res.writeHead(200, { 'content-type': 'application/octet-stream' }); res.end('x'.repeat(1000)); },
  });
  const br = await launch();
  try {
    // The agent's driver, Playwright's defaults: Browser.setDownloadBehavior allowAndName.
    const driver = await chromium.connectOverCDP(br.ws);
    const page = driver.contexts()[0].pages()[0] || await driver.contexts()[0].newPage();
    const { s } = await rawClient(br.ws);
    const seen = [];
    s.on('Browser.downloadWillBegin', (e) => seen.push(['willBegin', e.guid, e.suggestedFilename]));
    s.on('Browser.downloadProgress', (e) => e.state !== 'inProgress' && seen.push(['progress', e.guid, e.state, e.filePath || null]));
    const drive = async (label) => {
      seen.length = 0;
      await page.goto(`http://127.0.0.1:${port}/`);
      const [d] = await Promise.all([page.waitForEvent('download'), page.click('#d')]);
      const p = await d.path();
      // The second client's word on it, if it hears any (the asking-nothing one does not).
      await until(() => seen.some((e) => e[0] === 'progress'), 2000);
      out(label, { driver_got: path.basename(p), driver_dir: path.dirname(p), second_client_saw: seen.slice() });
    };
    await drive('a_client_that_asked_nothing');
    // Events are per client (eventsEnabled), the behaviour per browser context: ask for
    // events for a context of its own, which leaves the driver's context alone.
    const ctx = await s.send('Target.createBrowserContext', {});
    await s.send('Browser.setDownloadBehavior', { behavior: 'default', browserContextId: ctx.browserContextId, eventsEnabled: true });
    await drive('events_asked_for_a_context_of_its_own');
    await s.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true }).catch((e) => out('default_context_refused', e.message));
    seen.length = 0;
    await page.goto(`http://127.0.0.1:${port}/`);
    const got = await Promise.race([
      Promise.all([page.waitForEvent('download'), page.click('#d')]).then(([d]) => d.path()).then((p) => 'driver got ' + p),
      sleep(5000).then(() => 'driver got nothing in 5 s'),
    ]);
    await until(() => seen.some((e) => e[0] === 'progress'), 2000);
    out('events_asked_for_the_default_context', { driver: got, second_client_saw: seen.slice() });
  } finally { br.close(); server.close(); }
}

async function rph() {
  const { server, port } = await serve({
    '/': html('<p>rph</p>'),
    '/h': html('<p>handler</p>'),
  });
  const br = await launch();
  try {
    const b = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const ctx = b.contexts()[0];
    for (const mode of ['none', 'autoAccept', 'autoReject']) {
      const page = await ctx.newPage();
      const s = await ctx.newCDPSession(page);
      await page.goto(`http://127.0.0.1:${port}/`);
      if (mode !== 'none') await s.send('Page.setRPHRegistrationMode', { mode });
      const scheme = 'web+um' + mode.toLowerCase();
      const t0 = Date.now();
      const r = await page.evaluate((sc) => { try { navigator.registerProtocolHandler(sc, '/h?x=%s'); return 'returned'; } catch (e) { return e.name; } }, scheme);
      const ms = Date.now() - t0;
      const runs = await page.evaluate(() => 1 + 1).then(() => true);
      await page.evaluate((sc) => { location.href = sc + ':abc'; }, scheme).catch(() => {});
      // Registered: the navigation goes to the handler; otherwise it stays (the limit).
      await until(() => page.url().includes('/h?'), 2000);
      out('rph_' + mode, { call: r, call_ms: ms, page_runs_after: runs, navigated_to: page.url() });
      await page.close();
    }
  } finally { br.close(); server.close(); }
}

async function spc() {
  const { server, port } = await serve({ '/': html('<p>spc</p>') });
  const br = await launch();
  try {
    const b = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const ctx = b.contexts()[0];
    for (const mode of ['none', 'autoAccept', 'autoReject', 'autoOptOut']) {
      const page = await ctx.newPage();
      const s = await ctx.newCDPSession(page);
      await page.goto(`http://localhost:${port}/`);
      await s.send('WebAuthn.enable');
      await s.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
      if (mode !== 'none') await s.send('Page.setSPCTransactionMode', { mode });
      const made = await page.evaluate(async () => {
        const c = await navigator.credentials.create({ publicKey: {
          rp: { id: 'localhost', name: 'rp' }, user: { id: new Uint8Array(8), name: 'u', displayName: 'u' },
          challenge: new Uint8Array(16), pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
          authenticatorSelection: { userVerification: 'required', residentKey: 'required', authenticatorAttachment: 'platform' },
          extensions: { payment: { isPayment: true } } } });
        return Array.from(new Uint8Array(c.rawId));
      }).catch((e) => 'create: ' + e.name + ': ' + e.message);
      if (typeof made === 'string') { out('spc_' + mode, made); await page.close(); continue; }
      const t0 = Date.now();
      const r = await Promise.race([
        page.evaluate(async (id) => {
          const req = new PaymentRequest([{ supportedMethods: 'secure-payment-confirmation', data: {
            credentialIds: [new Uint8Array(id)], challenge: new Uint8Array(16), rpId: 'localhost', payeeOrigin: location.origin, timeout: 60000,
            instrument: { displayName: 'card', icon: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' } } }],
            { total: { label: 't', amount: { currency: 'USD', value: '1' } } });
          try { const resp = await req.show(); await resp.complete('success'); return 'accepted'; } catch (e) { return e.name + ': ' + e.message; }
        }, made),
        sleep(8000).then(() => 'still waiting after 8 s'),
      ]);
      out('spc_' + mode, { show: r, ms: Date.now() - t0 });
      await page.close();
    }
  } finally { br.close(); server.close(); }
}

/// Where DeviceAccess and FedCm events come from for a frame of another site.
async function frames() {
  const inner = `<button id=b onclick="navigator.bluetooth.requestDevice({acceptAllDevices:true}).then(d=>document.title='got '+d.name,e=>document.title=e.name)">b</button>`;
  const { server, port } = await serve({ '/f': html(inner) });
  const { server: s2, port: p2 } = await serve({ '/': html('') });
  const br = await launch(['--enable-features=WebBluetooth']);
  try {
    const b = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const bs = await b.newBrowserCDPSession();
    await bs.send('BluetoothEmulation.enable', { state: 'powered-on', leSupported: true });
    await bs.send('BluetoothEmulation.simulatePreconnectedPeripheral', { address: '09:09:09:09:09:09', name: 'Heart Rate', manufacturerData: [], knownServiceUuids: [] });
    const events = [];
    bs.on('Target.attachedToTarget', async (e) => {
      const sid = e.sessionId, type = e.targetInfo.type;
      if (type !== 'page' && type !== 'iframe') return;
      // Child sessions: raw flat commands through the browser session's connection.
      out('attached', { type, url: e.targetInfo.url });
    });
    const ctx = b.contexts()[0];
    const page = await ctx.newPage();
    const ps = await ctx.newCDPSession(page);
    ps.on('DeviceAccess.deviceRequestPrompted', (e) => events.push(['page session', e.id, e.devices]));
    await ps.send('DeviceAccess.enable');
    await page.goto(`http://localhost:${p2}/`);
    await page.evaluate((u) => new Promise((r) => { const f = document.createElement('iframe'); f.allow = 'bluetooth'; f.src = u; f.onload = r; document.body.append(f); }), `http://127.0.0.1:${port}/f`);
    const frame = page.frames()[1];
    let fs_ = null;
    try {
      fs_ = await ctx.newCDPSession(frame);
      fs_.on('DeviceAccess.deviceRequestPrompted', (e) => events.push(['frame session', e.id, e.devices]));
      out('frame_session_enable', await fs_.send('DeviceAccess.enable').then(() => 'ok', (e) => e.message));
    } catch (e) { out('frame_session', e.message); }
    await frame.click('#b');
    await until(() => events.length > 0, 5000);
    out('device_events', events);
    if (events.length) {
      const [who, id, devs] = events[events.length - 1];
      const s = who === 'page session' ? ps : fs_;
      await s.send('DeviceAccess.selectPrompt', { id, deviceId: devs[0].id });
      await until(async () => (await frame.title()) !== '', 5000);
      out('frame_title_after_select', await frame.title());
    }
  } finally { br.close(); server.close(); s2.close(); }
}

/// A chooser already open when DeviceAccess is enabled; and two clients at once.
async function late() {
  const page0 = `<button id=b onclick="navigator.bluetooth.requestDevice({acceptAllDevices:true}).then(d=>document.title='got '+d.name,e=>document.title=e.name)">b</button>`;
  const { server, port } = await serve({ '/': html(page0) });
  const br = await launch(['--enable-features=WebBluetooth']);
  try {
    const b = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const bs = await b.newBrowserCDPSession();
    await bs.send('BluetoothEmulation.enable', { state: 'powered-on', leSupported: true });
    await bs.send('BluetoothEmulation.simulatePreconnectedPeripheral', { address: '09:09:09:09:09:09', name: 'Heart Rate', manufacturerData: [], knownServiceUuids: [] });
    const ctx = b.contexts()[0];
    const page = await ctx.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    const one = await ctx.newCDPSession(page);
    const ev1 = [];
    one.on('DeviceAccess.deviceRequestPrompted', (e) => ev1.push(e));
    // A probe on a connection of its own says when the chooser is open (events are per
    // client: `one` hears nothing of it).
    const probeBrowser = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const probePage = probeBrowser.contexts()[0].pages().find((p) => p.url().includes(String(port)));
    const probe = await probeBrowser.contexts()[0].newCDPSession(probePage);
    const probed = [];
    probe.on('DeviceAccess.deviceRequestPrompted', (e) => probed.push(e));
    await probe.send('DeviceAccess.enable');
    // Opened before `one` enabled the domain.
    await page.click('#b');
    await until(() => probed.length > 0, 5000);
    await one.send('DeviceAccess.enable');
    await until(() => ev1.length > 0, 2000);
    await probe.send('DeviceAccess.disable');
    await probeBrowser.close();
    out('late_enable_events', ev1.length);
    await page.evaluate(() => { document.title = ''; });
    // Two clients with the domain on; one answers.
    const b2 = await chromium.connectOverCDP(br.ws, { noDefaults: true });
    const page2 = b2.contexts()[0].pages().find((p) => p.url().includes(String(port)));
    const two = await b2.contexts()[0].newCDPSession(page2);
    const ev2 = [];
    two.on('DeviceAccess.deviceRequestPrompted', (e) => ev2.push(e));
    await two.send('DeviceAccess.enable');
    await page.reload();
    ev1.length = 0;
    await page.click('#b');
    await until(() => ev1.length > 0 && ev2.length > 0, 3000);
    out('two_clients_events', { one: ev1.length, two: ev2.length });
    if (ev2.length) {
      const id = ev2[0].id;
      await two.send('DeviceAccess.selectPrompt', { id, deviceId: '09:09:09:09:09:09' });
      await until(async () => (await page.title()) !== '', 3000);
      out('after_other_answered', { title: await page.title(),
        select_again: await one.send('DeviceAccess.selectPrompt', { id, deviceId: '09:09:09:09:09:09' }).then(() => 'ok', (e) => e.message),
        cancel_again: await one.send('DeviceAccess.cancelPrompt', { id }).then(() => 'ok', (e) => e.message) });
    }
    // A device id that is not offered.
    await page.reload();
    ev1.length = 0;
    await page.click('#b');
    await until(() => ev1.length > 0, 3000);
    if (ev1.length) out('gone_device', await one.send('DeviceAccess.selectPrompt', { id: ev1[0].id, deviceId: '01:02:03:04:05:06' }).then(() => 'ok', (e) => e.message));
    // The chooser stays open: the title stays as it is (the limit).
    await until(async () => (await page.title()) !== '', 1000);
    out('title_after_gone_pick', await page.title());
  } finally { br.close(); server.close(); }
}

(async () => {
  const all = { downloads, rph, spc, frames, late };
  const which = process.argv.slice(2);
  for (const name of which.length ? which : Object.keys(all)) {
    out('measure', name);
    try { await all[name](); } catch (e) { out('failed', `${name}: ${e.stack}`); }
  }
  process.exit(0);
})();
