//! The battery for Bluetooth picks (issue 52), under a rule that picks (`pick: "first"`,
//! `device_id`): another site's frame asks, a page with a strict CSP, a hostile page that
//! tampers with what the hook could touch, what the page sees of a picked device beside a
//! browser without Unmodal where the test picks the same device itself (`DeviceAccess`),
//! and a flood of calls. Devices are emulated (`unmodal_e2e::bluetooth`); the host's own
//! DevTools connection picks, as in `device_picks.rs`, whose barrier this module uses too.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::bluetooth::{self, Bluetooth, answerer_hook};
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::{Session, WebServer, activation, eventually};

use super::device_picks::{
    HEART, LIMIT, THERMO, device_ids, listed, pair_until_title, pair_with_until_title, title, title_is,
};

/// A browser without Unmodal, its page at `url` with the emulated Heart Rate device and
/// `DeviceAccess` on: the baseline where the test itself picks.
async fn baseline_at(url: &str) -> Result<(Browser, unmodal_e2e::page::Page, Bluetooth)> {
    let baseline =
        Browser::launch(Options { extension: false, args: vec![bluetooth::SWITCH.into()], ..Options::default() })
            .await?;
    let page = baseline.first_page().await?;
    let bt = Bluetooth::emulate(&baseline.cdp).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    page.goto(url).await?;
    page.call("DeviceAccess.enable", json!({})).await?;
    Ok((baseline, page, bt))
}

/// A button that asks for any device; the page's title says what it got.
const ASK: &str = r#"<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => document.title = 'got ' + d.name, (e) => { window.why = e.message; document.title = 'error ' + e.name; })">pair</button>"#;

/// A browser with Bluetooth, the host's test hook, `HEART` (and `more`) connected, the page
/// `html` at `path` shown with the pilot on; its URL and the emulated adapter.
async fn session(path: &str, html: &str, headers: &[(&str, &str)]) -> Result<(Session, String, Bluetooth)> {
    let s = Session::start_with(Options {
        args: vec![bluetooth::SWITCH.into()],
        env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())],
        ..Options::default()
    })
    .await?;
    let url = s.open(path, html, headers).await?;
    s.enable_pilot().await?;
    let bt = Bluetooth::emulate(&s.browser.cdp).await?;
    bt.preconnected(HEART, "Heart Rate").await?;
    Ok((s, url, bt))
}

/// A rule for every Bluetooth chooser of the tab: `pick` is `{"pick": "first"}` or
/// `{"device_id": ...}`.
async fn picking_rule(s: &Session, pick: Value) -> Result<()> {
    let mut rule = json!({"action": "handle_dialog", "setup": true, "dialog_type": "device_chooser", "once": false});
    rule.as_object_mut().context("rule")?.extend(pick.as_object().cloned().unwrap_or_default());
    let v = s.agent.ok("interact", rule).await?;
    ensure!(v["rules_in_force"] == true, "{v}");
    Ok(())
}

/// Waits until the host's answerer watches `url` for choosers (a barrier only).
async fn watched(s: &Session, url: &str) -> Result<()> {
    super::device_picks::watched(&s.browser.runtime, url).await
}

/// The open choosers the host's answerer sees, eventually none (nothing left open).
async fn none_left_open(s: &Session) -> Result<()> {
    let left = eventually(LIMIT, "no chooser left open", || async {
        let v = answerer_hook(&s.browser.runtime, json!({"op": "prompts"})).await?;
        Ok(v["prompts"].as_array().is_some_and(Vec::is_empty).then_some(()))
    })
    .await;
    ensure!(left.is_ok(), "{:?}", answerer_hook(&s.browser.runtime, json!({"op": "prompts"})).await);
    Ok(())
}

/// Another site's frame (`localhost`, its own renderer and target) allowed Bluetooth asks
/// under a rule that takes the first device: the host's connection sees the frame's chooser
/// and picks; the frame gets the device and the record says so.
#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_is_picked_for() -> Result<()> {
    let other = WebServer::other_site()?;
    let child = other.page(
        "/widget",
        r#"<!doctype html><style>body { margin: 0 } button { width: 100vw; height: 100vh }</style>
<button onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => parent.postMessage('got ' + d.name, '*'), (e) => parent.postMessage('error ' + e.name + '|' + e.message, '*'))">pair</button>"#,
        &[],
    );
    let top = format!(
        r#"<!doctype html><title>shop</title><script>onmessage = (e) => {{ const [t, why] = String(e.data).split('|'); window.why = why || ''; document.title = t; }};</script>
<iframe id=f allow="bluetooth" src="{child}" style="position: fixed; top: 0; left: 0; width: 200px; height: 100px; border: 0"></iframe>"#
    );
    let (s, url, _bt) = session("/shop", &top, &[]).await?;
    picking_rule(&s, json!({"pick": "first"})).await?;
    watched(&s, &child).await?;
    pair_with_until_title(&s.page, "#f", "got Heart Rate").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    let rec = &recs[0];
    ensure!(rec["closed_by"] == "rule" && rec["picked"] == HEART, "{rec}");
    ensure!(rec["url"] == child.as_str() && rec["page_url"] == url.as_str(), "the frame's request: {rec}");
    ensure!(rec["frame_id"] != 0, "{rec}");
    none_left_open(&s).await
}

/// A page whose CSP forbids WebAssembly, eval and every other origin: a rule's pick still
/// reaches it, and the page sees no violation.
#[tokio::test(flavor = "multi_thread")]
async fn a_strict_csp_page_gets_its_pick() -> Result<()> {
    let csp = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'";
    let page = format!(
        "<!doctype html><title>bt</title><script>window.violations = []; \
         document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective + ' ' + e.blockedURI));</script>{ASK}"
    );
    let (s, url, bt) = session("/csp", &page, &[("Content-Security-Policy", csp)]).await?;
    // The policy really forbids WebAssembly here (else this test proves nothing).
    let wasm = s
        .page_value(
            "try { new WebAssembly.Module(new Uint8Array([0,97,115,109,1,0,0,0])); 'allowed' } catch (e) { e.name }",
        )
        .await?;
    ensure!(wasm == json!("CompileError"), "{wasm}");
    s.page_value("violations.length = 0").await?;
    bt.preconnected(THERMO, "Thermo").await?;
    picking_rule(&s, json!({"device_id": THERMO})).await?;
    watched(&s, &url).await?;
    pair_until_title(&s.page, "got Thermo").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    ensure!(recs[0]["closed_by"] == "rule" && recs[0]["picked"] == THERMO, "{recs:?}");
    ensure!(s.page_value("violations").await? == json!([]), "{}", s.page_value("violations").await?);
    none_left_open(&s).await
}

/// Before its call, the page traps what a careless hook would touch: globals and prototype
/// methods it replaces (each notes when it runs outside the page's own code), getters on
/// `Object.prototype` for the names the hook and the host speak of, and a forged message on
/// the channel's names. Under a rule that picks one device of two: the page gets that
/// device (no wrong pick), the call settles (no hang), no trap ran (no leak), and a second
/// call is picked the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_page_gets_no_wrong_pick_no_hang_and_no_leak() -> Result<()> {
    const TRAPS: &str = r#"<!doctype html><title>bt</title>
<script>
  // The page's own set-up and calls run with `mine` set: only others' calls are noted.
  window.caught = ''; window.mine = true;
  const note = (k) => { if (!mine) caught += k + '; '; };
  const apply = Reflect.apply, define = Object.defineProperty;
  const wrap = (obj, key, name) => {
    const orig = obj[key];
    define(obj, key, { configurable: true, writable: true,
      value: function (...a) { note(name); return apply(orig, this, a); } });
  };
  wrap(Promise.prototype, 'then', 'then');
  wrap(Promise.prototype, 'catch', 'catch');
  wrap(Promise, 'resolve', 'Promise.resolve');
  wrap(Array.prototype, 'push', 'push');
  wrap(Array.prototype, 'find', 'find');
  wrap(Array.prototype, Symbol.iterator, 'Symbol.iterator');
  wrap(Function.prototype, 'call', 'call');
  wrap(Function.prototype, 'apply', 'apply');
  wrap(Function.prototype, 'bind', 'bind');
  wrap(Function.prototype, 'toString', 'toString');
  wrap(Object, 'defineProperty', 'defineProperty');
  wrap(Object, 'getOwnPropertyDescriptor', 'getOwnPropertyDescriptor');
  wrap(Reflect, 'apply', 'Reflect.apply');
  wrap(JSON, 'stringify', 'stringify');
  wrap(JSON, 'parse', 'parse');
  wrap(EventTarget.prototype, 'dispatchEvent', 'dispatchEvent');
  wrap(EventTarget.prototype, 'addEventListener', 'addEventListener');
  wrap(Bluetooth.prototype, 'getAvailability', 'getAvailability');
  wrap(window, 'queueMicrotask', 'queueMicrotask');
  wrap(window, 'setTimeout', 'setTimeout');
  window.CustomEvent = function () { note('CustomEvent'); };
  window.DOMException = function () { note('DOMException'); };
  Error.prepareStackTrace = () => { note('prepareStackTrace'); return 'stack'; };
  for (const k of ['device_id', 'deviceId', 'devices', 'decision', 'accept', 'kind', 'chooser', 'id', 'target',
    'tab_id', 'page_request', 'acceptAllDevices', 'filters', 'optionalServices']) {
    define(Object.prototype, k, { configurable: true, get() { note('get ' + k); return undefined; },
      set(v) { note('set ' + k); define(this, k, { value: v, writable: true, enumerable: true, configurable: true }); } });
  }
  window.ask = () => {
    mine = true;
    const p = navigator.bluetooth.requestDevice({acceptAllDevices: true});
    p.then((d) => { mine = true; document.title = 'got ' + d.name; mine = false; },
      (e) => { mine = true; window.why = e.message; document.title = 'error ' + e.name; mine = false; });
    mine = false;
  };
  // Forged answers on names a channel might use, before and during the call.
  window.forge = () => { mine = true;
    for (const n of ['unmodal', 'unmodal:answer', 'prompt_answer', 'device_chooser']) {
      document.dispatchEvent(new Event(n)); window.postMessage({type: 'prompt_answer', decision: 'accept', device_id: '08:08:08:08:08:08'}, '*');
    }
    mine = false; };
  mine = false;
</script>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px" onclick="forge(); ask(); forge()">pair</button>"#;
    let (s, url, bt) = session("/traps", TRAPS, &[]).await?;
    bt.preconnected(THERMO, "Thermo").await?;
    picking_rule(&s, json!({"device_id": HEART})).await?;
    watched(&s, &url).await?;
    for n in 1..=2 {
        s.page.eval("mine = true; document.title = 'bt'; mine = false").await?;
        let settled = activation::click_until(&s.page, "#b", "the call settled", || async {
            let t = title(&s.page).await?;
            Ok((t != "bt").then_some(t))
        })
        .await;
        if let Err(e) = settled.and_then(|t| {
            ensure!(t == "got Heart Rate", "the page's title: {t:?} (wanted \"got Heart Rate\")");
            Ok(())
        }) {
            let d = s.dialogs().await?;
            let caught = s.page.eval("caught").await?;
            anyhow::bail!("{e}: records {d}, traps {caught}");
        }
        let recs = s.closed_records("device_chooser", n).await?;
        let last = &recs[n - 1];
        ensure!(last["closed_by"] == "rule" && last["picked"] == HEART, "{recs:?}");
        ensure!(device_ids(last) == [THERMO, HEART], "both offered, the rule's picked: {last}");
    }
    let caught = s.page.eval("caught").await?;
    ensure!(caught == json!(""), "the page's traps saw the hook at work: {caught}");
    let globals = s
        .page
        .eval("Object.getOwnPropertyNames(window).filter((k) => /unmodal|chooser|device_id|secret/i.test(k))")
        .await?;
    ensure!(globals == json!([]), "{globals}");
    none_left_open(&s).await
}

/// What a page learns of `requestDevice` and of the device it was given (`window.got`): the
/// same under Unmodal's rule as where a person picked it.
const PROBE: &str = r#"(() => {
  const fts = Function.prototype.toString;
  const fn = Bluetooth.prototype.requestDevice;
  const d = window.got;
  const desc = (o, k) => JSON.stringify(Object.getOwnPropertyDescriptor(o, k) ?? null, (_, v) => typeof v === 'function' ? 'a function' : v);
  return {
    fn: [String(fn), fts.call(fn), fn.name, fn.length, 'prototype' in fn, Reflect.ownKeys(fn).map(String).join(),
      desc(Bluetooth.prototype, 'requestDevice'), Object.keys(Bluetooth.prototype).indexOf('requestDevice'),
      String(navigator.bluetooth.requestDevice === fn)],
    device: d === undefined ? 'none' : [d.constructor.name, Object.getPrototypeOf(d) === BluetoothDevice.prototype,
      d.name, typeof d.id, d.id.length, /^[A-Za-z0-9+/]+={0,2}$/.test(d.id), typeof d.gatt, String(d.gatt && d.gatt.connected),
      Reflect.ownKeys(d).map(String).join(), JSON.stringify(d), String(d), d instanceof EventTarget,
      Reflect.ownKeys(BluetoothDevice.prototype).map(String).join()],
    settled: window.settledAs,
    globals: Object.getOwnPropertyNames(window).filter((k) => /unmodal|chooser|cancel|secret/i.test(k)),
  };
})()"#;

const STEALTH_PAGE: &str = r#"<!doctype html><title>bt</title>
<button id=b style="position: fixed; top: 10px; left: 10px; width: 100px; height: 40px"
  onclick="navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => { window.got = d; settledAs = 'resolved'; document.title = 'got ' + d.name; }, (e) => { settledAs = 'rejected ' + e.name + ': ' + e.message; window.why = e.message; document.title = 'error ' + e.name; })">pair</button>
<script>window.settledAs = 'pending';</script>"#;

/// Under a rule that picks, the page sees what it sees in a browser without Unmodal where a
/// person picked the same device (there the test picks it with `DeviceAccess.selectPrompt`
/// on its own session): `requestDevice`'s source, name and length, and the device's shape
/// (its `id` is the browser's own random one, so its length and alphabet are compared).
#[tokio::test(flavor = "multi_thread")]
async fn a_picked_device_looks_as_a_persons_pick_does() -> Result<()> {
    let (s, url, _bt) = session("/stealth", STEALTH_PAGE, &[]).await?;
    picking_rule(&s, json!({"device_id": HEART})).await?;
    watched(&s, &url).await?;
    pair_until_title(&s.page, "got Heart Rate").await?;
    let ours = s.page.eval(PROBE).await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    ensure!(recs[0]["picked"] == HEART, "{recs:?}");

    let (_baseline, page, _bt) = baseline_at(&url).await?;
    // The baseline's click may reach the browser process after its call did (no activation
    // there yet: the browser's SecurityError), on a busy machine: clicked again, printed.
    let prompt = activation::until_not_raced("the baseline's Bluetooth chooser", |_| async {
        page.eval("window.settledAs = 'pending'; document.title = 'bt'; 0").await?;
        let mut events = page.events();
        page.click("#b").await?;
        let me = page.session.clone();
        let prompted = async {
            loop {
                let e = events.recv().await?;
                if e.method == "DeviceAccess.deviceRequestPrompted"
                    && e.session.as_deref() == Some(me.as_str())
                    && e.params["devices"].as_array().is_some_and(|d| d.iter().any(|d| d["id"] == HEART))
                {
                    return anyhow::Ok(e.params["id"].as_str().unwrap_or_default().to_owned());
                }
            }
        };
        let settled = eventually(LIMIT, "the baseline's call settled", || async {
            let v = page.eval("window.settledAs").await?;
            Ok((v != "pending").then_some(v))
        });
        tokio::select! {
            id = prompted => Ok(activation::Try::Done(id?)),
            v = settled => match activation::judge(v?) {
                activation::Try::Raced(why) => Ok(activation::Try::Raced(why)),
                activation::Try::Done(v) => anyhow::bail!("the baseline's call settled without a chooser: {v}"),
            },
        }
    })
    .await
    .context("the baseline's chooser")?;
    page.call("DeviceAccess.selectPrompt", json!({"id": prompt, "deviceId": HEART})).await?;
    title_is(&page, "got Heart Rate").await?;
    let native = page.eval(PROBE).await?;
    ensure!(
        native["device"][0] == "BluetoothDevice" && native["fn"][2] == "requestDevice",
        "baseline is sane: {native}"
    );
    ensure!(ours == native, "differs from a browser without Unmodal:\nours   {ours}\nnative {native}");
    Ok(())
}

/// The page of a run of requests: `#one` asks for any device, and counts what each call
/// came to in `tally` (`settled` calls in all); `#b` takes a click (`takes_input`).
const RUN_PAGE: &str = "<!doctype html><title>bt</title>
<button id=one style='position: fixed; left: 0; top: 0; width: 120px; height: 40px'>one</button>
<button id=b style='position: fixed; left: 0; top: 60px; width: 120px; height: 40px'>b</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');
  window.tally = {}; window.settled = 0;
  document.getElementById('one').onclick = () => navigator.bluetooth.requestDevice({acceptAllDevices: true})
    .then((d) => 'got ' + d.name, (e) => e.name + ': ' + e.message).then((k) => { tally[k] = (tally[k] || 0) + 1; window.last = k; settled++; });</script>";

/// How many calls a run makes, each settled before the next click.
const RUN: u64 = 60;
/// The cancel a Bluetooth call gets (the browser's, and the page hook's in its stead).
const CANCELLED: &str = "NotFoundError: User cancelled the requestDevice() chooser.";
/// The page hook's flood limit (`manifest/inject/20-channel.js`): a frame's first asks,
/// before its token bucket (10 a second) runs dry.
const FLOOD_BURST: u64 = 10;

/// Clicks `#one` in `page` until `RUN` calls settled, each before the next click; the
/// page's tally of them. A call the browser refused for want of the click's activation (its
/// own race under load, with or without Unmodal: `activation`) is made again and left out
/// of the tally; how many were is returned too.
async fn run_of_clicks(page: &unmodal_e2e::page::Page) -> Result<(Value, u64)> {
    let mut clicks = 0u64;
    for _ in 0..RUN {
        activation::until_not_raced("a call of the run", |_| {
            clicks += 1;
            let n = clicks;
            async move {
                page.click("#one").await?;
                let got = eventually(LIMIT, "the call settled", || async {
                    Ok((page.eval("settled").await?.as_u64() == Some(n)).then_some(()))
                })
                .await;
                ensure!(got.is_ok(), "call {n}: {}", page.eval("tally").await?);
                Ok(activation::judge(page.eval("last").await?))
            }
        })
        .await?;
    }
    let mut tally = page.eval("tally").await?;
    if let Some(t) = tally.as_object_mut() {
        t.retain(|k, _| !activation::no_activation(&json!(k)));
    }
    Ok((tally, clicks - RUN))
}

/// Clicks one after the other under a rule that takes the first device, more than the
/// history holds, as fast as the test can click (about 20 a second unloaded): each call is
/// picked and recorded, or, past the page hook's flood limit (10 asks a second), cancelled
/// and counted by it, never asked; nothing else cancels (beside a browser without Unmodal,
/// the same run is all picked: the next test). No chooser is left open, the records stay
/// bounded, and the tab still takes input.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_requests_under_a_picking_rule_is_each_picked() -> Result<()> {
    let (s, url, _bt) = session("/run", RUN_PAGE, &[]).await?;
    picking_rule(&s, json!({"pick": "first"})).await?;
    watched(&s, &url).await?;
    let started = std::time::Instant::now();
    let (tally, raced) = run_of_clicks(&s.page).await?;
    let took = started.elapsed();
    let picked = tally["got Heart Rate"].as_u64().unwrap_or(0);
    let cancelled = tally[CANCELLED].as_u64().unwrap_or(0);
    ensure!(picked + cancelled == RUN && picked + raced >= FLOOD_BURST, "{tally}");
    // Each record's ask reached the host; the flood limit's cancels did not, but are
    // counted (the count travels with the frame's next batch).
    let (recorded, folded, kept, d) = eventually(LIMIT, "every call recorded or counted", || async {
        let d = s.dialogs().await?;
        let folded = d["folded_by_flood_limit"].as_u64().unwrap_or(0);
        let kept = d["recent_dialogs"].as_array().map_or(0, Vec::len);
        let recorded = kept as u64 + d["evicted"].as_u64().unwrap_or(0);
        Ok((folded + recorded >= RUN).then_some((recorded, folded, kept, d)))
    })
    .await
    .with_context(|| format!("a call neither recorded nor counted (tally {tally}, {raced} raced)"))?;
    // Measured: the cancels are the flood limit's, the records the picks. A call the browser
    // ended itself (a raced one, or a chooser it closed as it opened) is recorded unpicked;
    // a cancel neither counted nor recorded is Unmodal's, and fails here.
    let ended = recorded.checked_sub(picked).context("a pick without its record")?;
    ensure!(
        folded <= cancelled && cancelled - folded <= ended && ended <= cancelled - folded + raced,
        "every cancel is the flood limit's (or the browser's, recorded): tally {tally}, {raced} raced, {folded} folded, {recorded} recorded: {d}"
    );
    ensure!(kept <= 50, "bounded: {kept} kept");
    let unpicked = d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["picked"] != HEART).count();
    ensure!(unpicked as u64 <= ended, "{d}");
    // A chooser the hook cancelled stays open in the browser until the next call replaces
    // it (which ends it in the connection's list too): at most the last one is listed.
    let listed = answerer_hook(&s.browser.runtime, json!({"op": "prompts"})).await?["prompts"]
        .as_array()
        .map_or(0, Vec::len) as u64;
    ensure!(listed <= cancelled.min(1), "{listed} choosers listed, {cancelled} cancelled");
    s.takes_input().await?;
    eprintln!(
        "bluetooth run: {RUN} calls in {took:?}, tally {tally}, {raced} raced, {folded} folded, {recorded} recorded, {kept} kept, {listed} listed"
    );
    Ok(())
}

/// The same run in a browser without Unmodal, where the test's own DevTools client does
/// what the host's answerer does (`DeviceAccess.enable` on the page's session, the first
/// device picked on each `deviceRequestPrompted`): the browser cancels none of them.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_requests_in_a_browser_without_unmodal_is_each_picked() -> Result<()> {
    let web = WebServer::start()?;
    let url = web.page("/run", RUN_PAGE, &[]);
    let (baseline, page, _bt) = baseline_at(&url).await?;
    let (cdp, me, mut events) = (baseline.cdp.clone(), page.session.clone(), page.events());
    // A chooser is prompted again (the same id) each time its list changes: its first
    // prompt with a device is picked, and its later ones left alone (picked again, the
    // browser refuses: "Cannot find request with id").
    let picker = tokio::spawn(async move {
        let mut picked = std::collections::HashSet::new();
        while let Ok(e) = events.recv().await {
            if e.session.as_deref() != Some(me.as_str()) || e.method != "DeviceAccess.deviceRequestPrompted" {
                continue;
            }
            let (Some(id), Some(device)) = (e.params["id"].as_str(), e.params["devices"][0]["id"].as_str()) else {
                continue;
            };
            if picked.insert(id.to_owned()) {
                let _ = cdp.call(Some(&me), "DeviceAccess.selectPrompt", json!({"id": id, "deviceId": device})).await;
            }
        }
    });
    let started = std::time::Instant::now();
    let run = run_of_clicks(&page).await;
    picker.abort();
    let (tally, raced) = run?;
    ensure!(tally == json!({"got Heart Rate": RUN}), "{tally}");
    eprintln!("bluetooth run without Unmodal: {RUN} calls in {:?}, tally {tally}, {raced} raced", started.elapsed());
    Ok(())
}

/// Overlapping requests under a rule that takes the first device: clicks, each asking
/// several times at once, so each chooser replaces the one before while picks are given.
/// Measured: Chromium 156 itself crashes in 2 of 6 runs
/// (`bluetooth_device_chooser_controller.cc:559 Check failed: callback_`, seen as the
/// DevTools connection closing), a CHECK in the browser when a chooser is replaced while
/// picks are given. Ignored for that reason alone (docs/cdp-answers.md); run with
/// `--ignored`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "crashes Chromium 156 in 2 runs of 6 (a CHECK in its Bluetooth chooser controller)"]
async fn a_flood_of_requests_under_a_picking_rule_settles() -> Result<()> {
    const CLICKS: u64 = 12;
    const EACH: u64 = 4;
    let page = "<!doctype html><title>bt</title>
<button id=go style='position: fixed; left: 0; top: 0; width: 120px; height: 40px'>go</button>
<button id=b style='position: fixed; left: 0; top: 60px; width: 120px; height: 40px'>b</button>
<button id=one style='position: fixed; left: 0; top: 120px; width: 120px; height: 40px'>one</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');
  window.tally = {}; window.settled = 0;
  const note = (k) => { tally[k] = (tally[k] || 0) + 1; settled++; };
  document.getElementById('one').onclick = () => navigator.bluetooth.requestDevice({acceptAllDevices: true})
    .then((d) => document.title = 'got ' + d.name, (e) => document.title = 'error ' + e.name);
  document.getElementById('go').onclick = () => { for (let i = 0; i < EACH; i++) {
    navigator.bluetooth.requestDevice({acceptAllDevices: true}).then((d) => note('got ' + d.name), (e) => note(e.name)); } };</script>"
        .replace("EACH", &EACH.to_string());
    let (s, url, _bt) = session("/flood", &page, &[]).await?;
    picking_rule(&s, json!({"pick": "first"})).await?;
    watched(&s, &url).await?;
    for _ in 0..CLICKS {
        s.page.click("#go").await?;
    }
    let all = CLICKS * EACH;
    let settled = eventually(Duration::from_secs(60), "every call settled", || async {
        let n = s.page.eval("settled").await?.as_u64().unwrap_or(0);
        Ok((n == all).then_some(()))
    })
    .await;
    let tally = s.page.eval("tally").await?;
    ensure!(settled.is_ok(), "{} of {all} settled: {tally}", s.page.eval("settled").await?);
    let kinds: Vec<&str> = tally.as_object().map(|m| m.keys().map(String::as_str).collect()).unwrap_or_default();
    ensure!(
        kinds.iter().all(|k| ["got Heart Rate", "NotFoundError", "SecurityError", "InvalidStateError"].contains(k)),
        "only picks and the browser's own errors: {tally}"
    );
    ensure!(tally["got Heart Rate"].as_u64().unwrap_or(0) >= 1, "at least one picked: {tally}");
    // The connection is told of no chooser a newer one replaced; the answerer closed each
    // when the next came, and the last was picked: none stays listed.
    let listed = answerer_hook(&s.browser.runtime, json!({"op": "prompts"})).await?["prompts"]
        .as_array()
        .map_or(0, Vec::len) as u64;
    ensure!(listed == 0, "{listed} choosers still listed after {all} calls");
    let held = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(held["dialogs_blocking"]["dialogs"].as_array().is_none_or(Vec::is_empty), "nothing held: {held}");
    s.takes_input().await?;
    let d = s.dialogs().await?;
    let kept = d["recent_dialogs"].as_array().map_or(0, Vec::len);
    ensure!(kept <= 50, "{kept} records kept");
    let picked = d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["picked"] == HEART).count() as u64;
    let got = tally["got Heart Rate"].as_u64().unwrap_or(0);
    // Every device the page got has its record, and no record names a pick the browser
    // refused (its chooser replaced meanwhile).
    ensure!(picked == got, "{picked} picks recorded for {got} devices got: {d}");
    eprintln!(
        "bluetooth flood: {all} calls, tally {tally}, {kept} records kept, {picked} picks recorded, {listed} choosers still listed"
    );
    // And the next request is picked as ever.
    s.page.click("#one").await?;
    title_is(&s.page, "got Heart Rate").await
}

/// Another DevTools client (a driver with `DeviceAccess` on) picks in the chooser Unmodal
/// holds for the agent under `must_respond`: the page gets that client's device, the
/// record closes as `remote` with nothing picked by Unmodal, and the agent's late pick is
/// refused.
#[tokio::test(flavor = "multi_thread")]
async fn another_client_picking_first_closes_it_as_remote() -> Result<()> {
    let (s, url, _bt) = session("/other", &format!("<!doctype html><title>bt</title>{ASK}"), &[]).await?;
    s.policy("must_respond", 60).await?;
    watched(&s, &url).await?;
    s.page.call("DeviceAccess.enable", json!({})).await?;
    let mut events = s.page.events();
    let heart = |r: &Value| device_ids(r) == [HEART];
    let rec = activation::click_until(&s.page, "#b", "the chooser held with its devices", || {
        listed(&s.agent, None, &Value::Null, heart)
    })
    .await?;
    let me = s.page.session.clone();
    let prompt = tokio::time::timeout(LIMIT, async {
        loop {
            let e = events.recv().await?;
            if e.method == "DeviceAccess.deviceRequestPrompted"
                && e.session.as_deref() == Some(me.as_str())
                && e.params["devices"].as_array().is_some_and(|d| d.iter().any(|d| d["id"] == HEART))
            {
                return anyhow::Ok(e.params["id"].clone());
            }
        }
    })
    .await
    .context("the other client's prompt")??;
    s.page.call("DeviceAccess.selectPrompt", json!({"id": prompt, "deviceId": HEART})).await?;
    title_is(&s.page, "got Heart Rate").await?;
    let recs = s.closed_records("device_chooser", 1).await?;
    let r = &recs[0];
    ensure!(r["dialog_id"] == rec["dialog_id"], "{recs:?}");
    ensure!(r["closed_by"] == "remote" && r["picked"].is_null(), "another client answered: {r}");
    let late = s
        .agent
        .call("interact", json!({"action": "handle_dialog", "dialog_id": rec["dialog_id"], "device_id": HEART}))
        .await?;
    ensure!(format!("{late:?}").contains("dialog_not_open"), "the late pick is refused: {late:?}");
    Ok(())
}
