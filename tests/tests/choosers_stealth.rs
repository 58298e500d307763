//! Device chooser wrappers (`manifest/inject/46-choosers.js`) seen from the page: they look
//! like the browser's own `requestDevice`/`requestPort` (source, name, length, descriptors,
//! what wrong receivers, bad arguments and calls without a gesture get, and how many
//! microtasks that takes), a cancelled chooser fails exactly as the browser's own cancel
//! does (a second chooser in a tab cancels the first: the browser's error to compare with),
//! and a hostile page's traps never see them at work. Every comparison is with a browser
//! without the extension, running the same script.

use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::page::Page;
use unmodal_e2e::{Session, eventually};

/// Makes `navigator.bluetooth` exist (it fails at once without an adapter here).
const EXPERIMENTAL: &str = "--enable-experimental-web-platform-features";
const LIMIT: Duration = Duration::from_secs(10);

/// What a page can learn of an error (or of a value that is not an object).
const FACTS: &str = r#"const facts = (e) => (e === null || typeof e !== 'object') ? ['not an object', typeof e, String(e)] : [
  e.constructor.name, e.name, e.message, String(e.code), e instanceof DOMException,
  Object.getPrototypeOf(e) === DOMException.prototype, e instanceof Error, String(e.stack),
  Reflect.ownKeys(e).map(String).join(),
  JSON.stringify(Object.getOwnPropertyDescriptor(e, 'stack') ?? null, (k, v) => typeof v === 'function' ? 'a function' : v)];"#;

/// Buttons that open each chooser with a gesture; `out[key]` holds what the page got.
fn chooser_page(extra: &str) -> String {
    format!(
        r#"<!doctype html><title>choosers</title>
<style>button {{ position: fixed; left: 0; width: 120px; height: 40px }}</style>
<button id=usb style="top: 0" onclick="ask('usb', () => navigator.usb.requestDevice({{filters: []}}))">usb</button>
<button id=hid style="top: 50px" onclick="ask('hid', () => navigator.hid.requestDevice({{filters: []}}))">hid</button>
<button id=serial style="top: 100px" onclick="ask('serial', () => navigator.serial.requestPort())">serial</button>
<button id=bluetooth style="top: 150px" onclick="ask('bluetooth', () => navigator.bluetooth.requestDevice({{acceptAllDevices: true}}))">bluetooth</button>
{extra}
<script>
window.out = {{}};
{FACTS}
function ask(k, call) {{
  out[k] = 'pending';
  call().then((v) => {{
    out[k] = ['resolved', Array.isArray(v), v.length, Object.getPrototypeOf(v) === Array.prototype,
      Reflect.ownKeys(v).map(String).join(), Object.isExtensible(v), JSON.stringify(v)];
  }}, (e) => {{ out[k] = ['rejected', ...facts(e)]; }});
}}
</script>"#
    )
}

async fn outcome(page: &Page, key: &str) -> anyhow::Result<Value> {
    page.eval(&format!("out[{}] ?? null", serde_json::to_string(key)?)).await
}

/// Waits until `out[key]` is something other than `pending` (or, with `pending`, until it is
/// exactly that: the click landed and the call is waiting on a chooser).
async fn wait_outcome(page: &Page, key: &str, pending: bool) -> anyhow::Result<Value> {
    eventually(LIMIT, &format!("{key}: the call {}", if pending { "pending" } else { "settled" }), || async {
        let v = outcome(page, key).await?;
        Ok((if pending { v == json!("pending") } else { !v.is_null() && v != json!("pending") }).then_some(v))
    })
    .await
}

/// The tab's device chooser records, once there are `n`, all closed.
async fn chooser_records(s: &Session, n: usize) -> anyhow::Result<Vec<Value>> {
    let found = eventually(LIMIT, &format!("{n} closed device chooser record(s)"), || async {
        let d = s.dialogs().await?;
        let recs: Vec<Value> = d["recent_dialogs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["type"] == "device_chooser")
            .cloned()
            .collect();
        Ok((recs.len() >= n && recs.iter().all(|r| r["state"] == "closed")).then_some(recs))
    })
    .await;
    match found {
        Ok(recs) => Ok(recs),
        Err(e) => anyhow::bail!("{e}: {}", s.dialogs().await?),
    }
}

// The wrappers against the natives: source text (own, through Function.prototype.toString,
// another realm's toString, the other realm's own wrapper), name, length, prototype,
// descriptors, key order; and every call that fails before a chooser (no gesture, wrong
// receivers, missing or bad arguments, a throwing getter): how it fails, the error's
// stack and keys, the promise it returns, how many microtasks until it settles, how often
// the page's getters are read.
const PROBE: &str = r#"(async () => {
  const out = { calls: {}, ticks: {} };
  const fts = Function.prototype.toString;
  const other = document.getElementById('f').contentWindow;
  FACTS
  // Microtasks until `p` settles (its reactions run), counted by a chain started after.
  const ticks = (p) => new Promise((done) => {
    let n = 0;
    let over = false;
    const end = (v) => { if (!over) { over = true; done(v); } };
    const step = () => { if (over) return; if (++n > 20) end('pending'); else queueMicrotask(step); };
    p.then(() => end(n), () => end(n));
    queueMicrotask(step);
  });
  const call = async (name, f) => {
    let p;
    try { p = f(); } catch (e) { return ['threw', ...facts(e)]; }
    if (p === null || typeof p !== 'object') return ['returned', typeof p];
    const shape = [p instanceof Promise, Object.getPrototypeOf(p) === Promise.prototype, Reflect.ownKeys(p).map(String).join()];
    if (!(p instanceof other.Promise) && !(p instanceof Promise)) return ['not a promise', ...shape];
    const t = await ticks(p);
    out.ticks[name] = t;
    if (t === 'pending') return ['pending', ...shape];
    try { return ['resolved', ...shape, JSON.stringify(await p)]; } catch (e) { return ['rejected', ...shape, ...facts(e)]; }
  };
  const targets = [['USB', 'requestDevice', 'usb'], ['HID', 'requestDevice', 'hid'], ['Serial', 'requestPort', 'serial'],
    ['Bluetooth', 'requestDevice', 'bluetooth']].filter(([iface]) => typeof window[iface] === 'function');
  out.exposed = targets.map(([iface]) => iface).join();
  for (const [iface, name] of targets) {
    const owner = window[iface].prototype;
    const fn = owner[name];
    const d = Object.getOwnPropertyDescriptor(owner, name);
    const otherFn = other[iface].prototype[name];
    out[iface + '.' + name] = {
      string: String(fn), viaProto: fts.call(fn), fromOtherRealm: other.Function.prototype.toString.call(fn),
      otherRealmFn: fts.call(otherFn), otherRealmOwn: other.Function.prototype.toString.call(otherFn),
      name: fn.name, length: fn.length, hasPrototype: 'prototype' in fn, ownKeys: Reflect.ownKeys(fn).map(String),
      descriptor: [d.writable, d.enumerable, d.configurable, typeof d.value],
      nameDesc: JSON.stringify(Object.getOwnPropertyDescriptor(fn, 'name')),
      lengthDesc: JSON.stringify(Object.getOwnPropertyDescriptor(fn, 'length')),
      proto: Object.getPrototypeOf(fn) === Function.prototype, extensible: Object.isExtensible(fn),
      construct: (() => { try { new fn(); return 'constructed'; } catch (e) { return facts(e); } })(),
      keyIndex: Object.keys(owner).indexOf(name), keys: Reflect.ownKeys(owner).map(String).join(),
      otherRealmDiffers: otherFn !== fn,
    };
  }
  let reads = 0;
  const counted = { get filters() { reads++; return []; }, get acceptAllDevices() { reads++; return true; } };
  const throwing = { get filters() { throw new Error('from the page'); } };
  const throwingAll = { get acceptAllDevices() { throw new RangeError('from the page'); } };
  const cases = {
    USB: {
      noGesture: () => navigator.usb.requestDevice({ filters: [] }),
      noArguments: () => navigator.usb.requestDevice(),
      emptyOptions: () => navigator.usb.requestDevice({}),
      primitive: () => navigator.usb.requestDevice(5),
      badFilters: () => navigator.usb.requestDevice({ filters: 5 }),
      productWithoutVendor: () => navigator.usb.requestDevice({ filters: [{ productId: 1 }] }),
      throwingGetter: () => navigator.usb.requestDevice(throwing),
      countedGetter: () => navigator.usb.requestDevice(counted),
      plainObject: () => USB.prototype.requestDevice.call({}, { filters: [] }),
      prototype: () => USB.prototype.requestDevice({ filters: [] }),
      otherInterface: () => USB.prototype.requestDevice.call(navigator.hid, { filters: [] }),
      noReceiver: () => USB.prototype.requestDevice.call(undefined, { filters: [] }),
      otherRealm: () => other.navigator.usb.requestDevice({ filters: [] }),
      otherRealmReceiver: () => USB.prototype.requestDevice.call(other.navigator.usb, { filters: [] }),
    },
    HID: {
      noGesture: () => navigator.hid.requestDevice({ filters: [] }),
      noArguments: () => navigator.hid.requestDevice(),
      emptyOptions: () => navigator.hid.requestDevice({}),
      primitive: () => navigator.hid.requestDevice(5),
      badFilters: () => navigator.hid.requestDevice({ filters: 5 }),
      productWithoutVendor: () => navigator.hid.requestDevice({ filters: [{ productId: 1 }] }),
      throwingGetter: () => navigator.hid.requestDevice(throwing),
      countedGetter: () => navigator.hid.requestDevice(counted),
      plainObject: () => HID.prototype.requestDevice.call({}, { filters: [] }),
      prototype: () => HID.prototype.requestDevice({ filters: [] }),
      otherInterface: () => HID.prototype.requestDevice.call(navigator.usb, { filters: [] }),
      otherRealm: () => other.navigator.hid.requestDevice({ filters: [] }),
    },
    Serial: {
      noGesture: () => navigator.serial.requestPort(),
      emptyOptions: () => navigator.serial.requestPort({}),
      primitive: () => navigator.serial.requestPort(5),
      badFilters: () => navigator.serial.requestPort({ filters: 5 }),
      productWithoutVendor: () => navigator.serial.requestPort({ filters: [{ usbProductId: 1 }] }),
      throwingGetter: () => navigator.serial.requestPort(throwing),
      countedGetter: () => navigator.serial.requestPort(counted),
      plainObject: () => Serial.prototype.requestPort.call({}),
      prototype: () => Serial.prototype.requestPort(),
      otherInterface: () => Serial.prototype.requestPort.call(navigator.usb),
      otherRealm: () => other.navigator.serial.requestPort(),
    },
    Bluetooth: {
      noGesture: () => navigator.bluetooth.requestDevice({ acceptAllDevices: true }),
      noArguments: () => navigator.bluetooth.requestDevice(),
      both: () => navigator.bluetooth.requestDevice({ filters: [], acceptAllDevices: true }),
      primitive: () => navigator.bluetooth.requestDevice(5),
      throwingGetter: () => navigator.bluetooth.requestDevice(throwingAll),
      countedGetter: () => navigator.bluetooth.requestDevice(counted),
      plainObject: () => Bluetooth.prototype.requestDevice.call({}, { acceptAllDevices: true }),
      otherRealm: () => other.navigator.bluetooth.requestDevice({ acceptAllDevices: true }),
    },
  };
  for (const [iface] of targets) {
    for (const [key, f] of Object.entries(cases[iface])) out.calls[iface + '.' + key] = await call(iface + '.' + key, f);
  }
  out.getterReads = reads;
  out.activation = navigator.userActivation.hasBeenActive;
  out.globals = Object.getOwnPropertyNames(window).filter((k) => /unmodal|engine|secret|chooser|cancel/i.test(k));
  return out;
})()"#;

/// The battery in a browser with the extension (pilot on) and in one without, `args` for both.
async fn stealth_battery(args: &[&str], exposed: &str) -> anyhow::Result<()> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let probe = PROBE.replace("FACTS", FACTS);
    let s = Session::start_with(Options { args: args.clone(), ..Options::default() }).await?;
    let page = chooser_page(r#"<iframe id="f" src="/child" style="position: fixed; top: 300px"></iframe>"#);
    let url = s.open("/stealth", &page, &[]).await?;
    s.web.page("/child", "<!doctype html><p>child</p>", &[]);
    s.enable_pilot().await?;
    s.page.goto(&url).await?;
    let ours = s.page.eval(&probe).await?;
    // Nothing was asked: every call above fails before any chooser.
    assert_eq!(s.dialogs().await?["recent_dialogs"], json!([]), "a call of the battery was taken for a chooser");
    // They really are the wrappers: a chooser opened with a gesture is cancelled.
    s.page.click("#usb").await?;
    let got = wait_outcome(&s.page, "usb", false).await?;
    assert_eq!(got[2], "NotFoundError", "{got}");
    let recs = chooser_records(&s, 1).await?;
    assert_eq!((&recs[0]["chooser"], &recs[0]["method"]), (&json!("usb"), &json!("requestDevice")), "{recs:?}");

    let baseline = Browser::launch(Options { extension: false, args, ..Options::default() }).await?;
    let bpage = baseline.first_page().await?;
    bpage.goto(&url).await?;
    let native = bpage.eval(&probe).await?;
    assert_eq!(native["exposed"], exposed, "baseline: {native}");
    assert_eq!(native["USB.requestDevice"]["string"], "function requestDevice() { [native code] }", "baseline is sane");
    assert_eq!(
        native["calls"]["USB.noGesture"][5], "SecurityError",
        "baseline: without a gesture the call fails at once"
    );
    let (ours, theirs) = (ours.as_object().unwrap(), native.as_object().unwrap());
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    assert_eq!(ours["calls"].as_object().map(|o| o.len()), theirs["calls"].as_object().map(|o| o.len()));
    // Every difference at once, each with what a browser without Unmodal gives.
    let mut differs = Vec::new();
    for (key, value) in theirs {
        if key == "ticks" {
            continue;
        } else if key == "calls" {
            for (call, v) in value.as_object().unwrap() {
                if &ours[key][call] != v {
                    differs.push(format!("`{call}`: ours {} / native {v}", ours[key][call]));
                }
            }
        } else if &ours[key] != value {
            differs.push(format!("`{key}`: ours {} / native {value}", ours[key]));
        }
    }
    assert!(differs.is_empty(), "differs from a browser without Unmodal:\n{}", differs.join("\n"));
    // The one known difference (README, "Limits today"): the browser's promise is already
    // rejected when it returns, the wrapper's settles when its reaction to the browser's runs,
    // a microtask later. The wrapper cannot return the browser's promise itself: the error
    // in it was made with the wrapper's frames on the stack, and only a reaction of ours,
    // run before the page's, can cut them (a reaction of ours would also make the promise
    // handled, so a page that never handles it would get no `unhandledrejection`).
    let (our_ticks, their_ticks) = (ours["ticks"].as_object().unwrap(), theirs["ticks"].as_object().unwrap());
    assert_eq!(our_ticks.len(), theirs["calls"].as_object().unwrap().len(), "every call settled: {our_ticks:?}");
    for (call, native_ticks) in their_ticks {
        assert_eq!(native_ticks, &json!(0), "`{call}`: the browser's promise is settled as it returns");
        assert_eq!(our_ticks[call], json!(1), "`{call}`: the wrapper's settles one microtask later");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_chooser_wrappers_pass_the_stealth_battery() -> anyhow::Result<()> {
    stealth_battery(&[], "USB,HID,Serial").await
}

/// With the experimental web platform features, `navigator.bluetooth` exists: its wrapper too.
#[tokio::test(flavor = "multi_thread")]
async fn the_bluetooth_wrapper_passes_the_stealth_battery() -> anyhow::Result<()> {
    stealth_battery(&[EXPERIMENTAL], "USB,HID,Serial,Bluetooth").await
}
