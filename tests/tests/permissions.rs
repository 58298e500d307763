//! Permission prompts (dialog_type "permission"): camera, microphone, notifications,
//! geolocation and clipboard read, decided by a rule, by the default (deny), held for the
//! agent under must_respond (and the watchdog), left to the browser while the pilot is off.
//! The browser itself grants or refuses (the extension sets its content setting first), so a
//! denied call fails with exactly the browser's own error and permissions.query agrees.

use anyhow::Context;
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::{Session, eventually};

const PAGE: &str = "<!doctype html><title>perm</title><p>perm</p>";
/// A camera and a microphone that exist (else getUserMedia fails before any permission).
const FAKE_DEVICES: &str = "--use-fake-device-for-media-stream";

async fn session(path: &str, html: &str, headers: &[(&str, &str)], pilot: bool) -> anyhow::Result<Session> {
    let s = Session::start_with(Options { args: vec![FAKE_DEVICES.into()], ..Options::default() }).await?;
    s.open(path, html, headers).await?;
    if pilot {
        s.enable_pilot().await?;
    }
    Ok(s)
}

// What a page sees of each call: a value, or the error's constructor, name, message and
// whether it is a DOMException (a geolocation error: its code and message).
const CAMERA: &str = "navigator.mediaDevices.getUserMedia({video: true}).then(
  (m) => ['ok', m.getVideoTracks().length],
  (e) => ['error', e.constructor.name, e.name, e.message, e instanceof DOMException, String(e.stack)])";
const MICROPHONE: &str = "navigator.mediaDevices.getUserMedia({audio: true}).then(
  (m) => ['ok', m.getAudioTracks().length],
  (e) => ['error', e.constructor.name, e.name, e.message, e instanceof DOMException, String(e.stack)])";
const NOTIFICATIONS: &str = "Notification.requestPermission().then((r) => [r, Notification.permission])";
const NOTIFICATIONS_CALLBACK: &str =
    "new Promise((done) => Notification.requestPermission((r) => done(['callback', r, Notification.permission])))";
const GEOLOCATION: &str = "new Promise((done) => navigator.geolocation.getCurrentPosition(
  () => done(['position']),
  (e) => done(['error', e.constructor.name, e.code, e.message, e.PERMISSION_DENIED]), {timeout: 3000}))";
// watchPosition returns its id at once; clearWatch takes it back.
const WATCH: &str = "new Promise((done) => { const g = navigator.geolocation; const id = g.watchPosition(
  () => { g.clearWatch(id); done(['position', typeof id]); },
  (e) => { g.clearWatch(id); done(['error', e.code, e.message, typeof id, id > 0]); }, {timeout: 3000}); })";
const CLIPBOARD: &str = "navigator.clipboard.readText().then(
  (t) => ['ok', typeof t],
  (e) => ['error', e.constructor.name, e.name, e.message, e instanceof DOMException, String(e.stack)])";
const QUERY: &str = "Promise.all(['camera', 'microphone', 'notifications', 'geolocation', 'clipboard-read']
  .map((name) => navigator.permissions.query({name}).then((s) => s.state)))";

fn rule(extra: Value) -> Value {
    let mut a = json!({"action": "handle_dialog", "setup": true, "dialog_type": "permission"});
    a.as_object_mut().unwrap().extend(extra.as_object().cloned().unwrap_or_default());
    a
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_grants_and_the_browser_really_grants() -> anyhow::Result<()> {
    let s = session("/grant", PAGE, &[], true).await?;
    assert_eq!(s.page_value(QUERY).await?, json!(["prompt", "prompt", "prompt", "prompt", "prompt"]));
    let v = s.agent.ok("interact", rule(json!({"once": false}))).await?;
    assert_eq!((v["status"].as_str(), v["dialog_type"].as_str()), (Some("configured"), Some("permission")), "{v}");
    assert_eq!(v["rules_in_force"], true);
    assert_eq!(v["auto_responses"][0]["dialog_type"], "permission");

    assert_eq!(s.page_value(CAMERA).await?, json!(["ok", 1]));
    assert_eq!(s.page_value(MICROPHONE).await?, json!(["ok", 1]));
    assert_eq!(s.page_value(NOTIFICATIONS).await?, json!(["granted", "granted"]));
    assert_eq!(s.page_value(CLIPBOARD).await?, json!(["ok", "string"]));
    // Granted: the browser asks its location provider, which headless has not (code 2, or a
    // timeout), never the refusal (code 1).
    let geo = s.page_value(GEOLOCATION).await?;
    assert!(geo[0] == "position" || (geo[0] == "error" && geo[2] != 1), "{geo}");
    // A watch cleared before its decision never starts: a second one, decided after it,
    // reports back while the first stayed silent.
    let cleared = "new Promise((done) => { const g = navigator.geolocation; let calls = 0;
      const first = g.watchPosition(() => calls++, () => calls++); g.clearWatch(first);
      const second = g.watchPosition((p) => { g.clearWatch(second); done([typeof first, second !== first, calls]); },
        (e) => { g.clearWatch(second); done([typeof first, second !== first, calls]); }, {timeout: 3000}); })";
    assert_eq!(s.page_value(cleared).await?, json!(["number", true, 0]));
    // The browser's own state says so.
    assert_eq!(s.page_value(QUERY).await?, json!(["granted", "granted", "granted", "granted", "granted"]));

    let recs = s.closed_records("permission", 7).await?;
    let asked: Vec<(&str, &str)> =
        recs.iter().map(|r| (r["message"].as_str().unwrap_or(""), r["api"].as_str().unwrap_or(""))).collect();
    assert_eq!(
        asked,
        [
            ("camera", "getUserMedia"),
            ("microphone", "getUserMedia"),
            ("notifications", "requestPermission"),
            ("clipboard-read", "readText"),
            ("geolocation", "getCurrentPosition"),
            ("geolocation", "watchPosition"),
            ("geolocation", "watchPosition")
        ]
    );
    for r in &recs {
        assert_eq!(
            (r["decided_by"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
            (Some("rule"), Some("rule"), Some(true)),
            "{r}"
        );
        assert_eq!(r["rule_id"], v["rule_id"], "{r}");
        assert!(r["explanation"].as_str().unwrap().contains("granted"), "{r}");
    }
    Ok(())
}

/// What a denied page sees, in the order the calls are made.
async fn denied_calls(s: &Session) -> anyhow::Result<Value> {
    let mut out = Vec::new();
    for call in [CAMERA, MICROPHONE, NOTIFICATIONS, GEOLOCATION, CLIPBOARD, WATCH] {
        out.push(s.page_value(call).await?);
    }
    out.push(s.page_value(QUERY).await?);
    Ok(Value::Array(out))
}

/// The browser's own refusals, measured in headless Chromium 156 with the pilot off (no
/// rule; the browser refuses on its own), and the same calls refused by a rule: identical,
/// to the stack and the constructor. Pinned here, so a browser that changes them shows.
#[tokio::test(flavor = "multi_thread")]
async fn a_rule_denies_with_exactly_the_browsers_errors() -> anyhow::Result<()> {
    let native = session("/deny", PAGE, &[], false).await?;
    let browser_own = denied_calls(&native).await?;
    let expected = json!([
        // getUserMedia's refusal has no stack at all.
        ["error", "DOMException", "NotAllowedError", "Permission denied", true, "undefined"],
        ["error", "DOMException", "NotAllowedError", "Permission denied", true, "undefined"],
        ["denied", "denied"],
        ["error", "GeolocationPositionError", 1, "User denied Geolocation", 1],
        [
            "error",
            "DOMException",
            "NotAllowedError",
            "Failed to execute 'readText' on 'Clipboard': Read permission denied.",
            true,
            "NotAllowedError: Failed to execute 'readText' on 'Clipboard': Read permission denied."
        ],
        ["error", 1, "User denied Geolocation", "number", true],
        ["denied", "denied", "denied", "denied", "denied"]
    ]);
    assert_eq!(browser_own, expected, "the browser's own refusals (pilot off)");
    // Pilot off: reported, left to the browser.
    let recs = native.closed_records("permission", 6).await?;
    for r in &recs {
        assert_eq!(
            (r["decided_by"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
            (Some("pilot_off"), Some("remote"), None),
            "{r}"
        );
    }
    drop(native);

    let s = session("/deny", PAGE, &[], true).await?;
    s.agent.ok("interact", rule(json!({"accept": false, "once": false}))).await?;
    assert_eq!(denied_calls(&s).await?, browser_own, "a rule's refusal is the browser's own");
    let recs = s.closed_records("permission", 6).await?;
    for r in &recs {
        assert_eq!(
            (r["decided_by"].as_str(), r["closed_by"].as_str(), r["accepted"].as_bool()),
            (Some("rule"), Some("rule"), Some(false)),
            "{r}"
        );
    }
    Ok(())
}

/// No rule: denied at once (the safe default), recorded and waiting for the agent's
/// acknowledgement; asked again, the browser's stored refusal stands (no prompt, no record).
/// The callback form gets the same answer.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_rule_the_default_denies_at_once() -> anyhow::Result<()> {
    let s = session("/default", PAGE, &[], true).await?;
    // "At once": the record below says the default policy decided, not a watchdog.
    assert_eq!(s.page_value(NOTIFICATIONS_CALLBACK).await?, json!(["callback", "denied", "denied"]));
    let recs = s.closed_records("permission", 1).await?;
    assert_eq!(
        (recs[0]["decided_by"].as_str(), recs[0]["accepted"].as_bool(), recs[0]["message"].as_str()),
        (Some("default_policy"), Some(false), Some("notifications")),
        "{recs:?}"
    );
    let d = s.dialogs().await?;
    assert!(d["pending_dialogs"].as_array().unwrap().iter().any(|p| p["type"] == "permission"), "{d}");
    assert_eq!(s.page_value(NOTIFICATIONS).await?, json!(["denied", "denied"]));
    assert_eq!(s.page_value(CAMERA).await?[2], "NotAllowedError");
    let recs = s.closed_records("permission", 2).await?;
    assert_eq!(recs.len(), 2, "the second notifications call was not a prompt: {recs:?}");
    assert_eq!(recs[1]["message"], "camera");
    Ok(())
}

/// must_respond: the page's call waits (no browser UI), the agent reads it in
/// dialogs_blocking and grants; a second one nobody answers is denied by the watchdog.
#[tokio::test(flavor = "multi_thread")]
async fn must_respond_holds_the_call_for_the_agent_then_the_watchdog() -> anyhow::Result<()> {
    let s = session("/held", PAGE, &[], true).await?;
    s.policy("must_respond", 60).await?;
    s.page_later(&format!("window.got = null; ({NOTIFICATIONS}).then((r) => window.got = r)")).await?;
    let held = s.held(1).await?;
    assert_eq!(
        (held[0]["type"].as_str(), held[0]["message"].as_str()),
        (Some("permission"), Some("notifications")),
        "{held:?}"
    );
    assert_eq!(s.page_value("window.got").await?, Value::Null, "the call waits for the agent");
    s.page_runs().await.context("the page itself keeps running")?;
    let id = held[0]["dialog_id"].as_u64().unwrap();
    let v = s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": true})).await?;
    assert_eq!(
        (v["agent_answer_applied"].as_bool(), v["dialog"]["accepted"].as_bool()),
        (Some(true), Some(true)),
        "{v}"
    );
    eventually(Duration::from_secs(10), "the page's call granted", || async {
        Ok((s.page_value("window.got").await? == json!(["granted", "granted"])).then_some(()))
    })
    .await?;
    let recs = s.closed_records("permission", 1).await?;
    assert_eq!(
        (recs[0]["decided_by"].as_str(), recs[0]["closed_by"].as_str(), recs[0]["accepted"].as_bool()),
        (Some("agent"), Some("agent"), Some(true)),
        "{recs:?}"
    );

    s.policy("must_respond", 1).await?;
    s.page_later(&format!("window.cam = null; ({CAMERA}).then((r) => window.cam = r)")).await?;
    s.held(1).await?;
    eventually(Duration::from_secs(10), "the watchdog's refusal", || async {
        let v = s.page_value("window.cam").await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await
    .map(|v| assert_eq!(v[2], "NotAllowedError", "{v}"))?;
    let recs = s.closed_records("permission", 2).await?;
    assert_eq!(
        (recs[1]["closed_by"].as_str(), recs[1]["accepted"].as_bool()),
        (Some("watchdog"), Some(false)),
        "{recs:?}"
    );
    Ok(())
}

/// A frame from another site asks through the browser's delegation (allow=): the rule
/// grants there too, and the record names the frame. A frame without allow= is refused by
/// the browser's permissions policy before any prompt: nothing is asked or recorded.
#[tokio::test(flavor = "multi_thread")]
async fn a_frame_from_another_site() -> anyhow::Result<()> {
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let child = other.page(
        "/widget",
        "<!doctype html><script>onmessage = async (e) => parent.postMessage(await (0, eval)(e.data), '*');</script>",
        &[],
    );
    let top = format!(
        "<!doctype html><title>host</title>
         <script>
           // Counted by the frames' own onload attributes: no load can come before them.
           let loads = 0, allLoaded;
           window.ready = new Promise((done) => allLoaded = done);
           window.frameLoaded = () => ++loads === 2 && allLoaded();
         </script>
         <iframe id=a onload='frameLoaded()' allow='camera; microphone; geolocation; clipboard-read' src='{child}'></iframe>
         <iframe id=b onload='frameLoaded()' src='{child}'></iframe>
         <script>
           window.inFrame = (f, code) => new Promise((done) => {{
             onmessage = (e) => done(e.data); f.contentWindow.postMessage(code, '*'); }});
         </script>"
    );
    let s = session("/host", &top, &[], true).await?;
    s.agent.ok("interact", rule(json!({"once": false, "permission": "camera"}))).await?;
    let code = serde_json::to_string(CAMERA)?;
    s.page_value("ready").await.context("the two frames did not load")?;
    let granted = s.page_value(&format!("inFrame(a, {code})")).await.context("the allowed frame's camera call")?;
    assert_eq!(granted, json!(["ok", 1]));
    let refused = s.page_value(&format!("inFrame(b, {code})")).await?;
    assert_eq!(
        refused.as_array().map(|a| a[..4].to_vec()),
        Some(vec![json!("error"), json!("DOMException"), json!("NotAllowedError"), json!("Permission denied")]),
        "{refused}"
    );
    let recs = s.closed_records("permission", 1).await?;
    assert_eq!(recs.len(), 1, "the refused frame asked nothing: {recs:?}");
    assert_eq!((recs[0]["decided_by"].as_str(), recs[0]["url"].as_str()), (Some("rule"), Some(child.as_str())));
    assert_ne!(recs[0]["frame_id"], 0);
    Ok(())
}

/// A page whose CSP forbids everything but its own inline script: granted and denied as
/// anywhere, and the page sees no violation of ours.
#[tokio::test(flavor = "multi_thread")]
async fn a_strict_csp_page() -> anyhow::Result<()> {
    let csp = "default-src 'none'; script-src 'self' 'unsafe-inline'; report-uri /csp-report";
    let s = session("/csp", unmodal_e2e::web::CSP_PAGE, &[("Content-Security-Policy", csp)], true).await?;
    s.agent.ok("interact", rule(json!({"permission": "notifications"}))).await?;
    s.agent.ok("interact", rule(json!({"permission": "camera", "accept": false}))).await?;
    assert_eq!(s.page_value(NOTIFICATIONS).await?, json!(["granted", "granted"]));
    assert_eq!(s.page_value(CAMERA).await?[2], "NotAllowedError");
    s.closed_records("permission", 2).await?;
    s.page_value(
        "document.head.append(Object.assign(document.createElement('script'), {src: 'http://127.0.0.2:9/marker.js'})); 0",
    )
    .await?;
    eventually(Duration::from_secs(10), "the marker's event and report", || async {
        Ok((s.page_value("violations.length").await? != json!(0) && s.web.hits("/csp-report") >= 1).then_some(()))
    })
    .await?;
    let v = s.page_value("violations").await?;
    assert_eq!(v.as_array().map(Vec::len), Some(1), "only the marker: {v}");
    assert_eq!(s.web.hits("/csp-report"), 1, "only the page's own probe may be reported");
    Ok(())
}

// After the hook installed itself, the page sets traps where a careless wrapper would read,
// write, iterate or call; each notes that it ran while armed.
const TRAPS: &str = r#"<!doctype html><title>traps</title>
<script>
  window.armed = false;
  window.spied = '';
  const note = (k) => { if (armed) spied += k + '; '; };
  const define = Object.defineProperty;
  const wrap = (obj, key, name) => {
    const orig = obj[key];
    define(obj, key, { configurable: true, writable: true,
      value: function (...a) { note(name); return Reflect.apply(orig, this, a); } });
  };
  // Not `then` on Object.prototype: resolving a promise with an object reads it, the
  // browser's own promise too (docs/kinds/permission.md: the MediaStream's `then` is read twice).
  for (const key of ['permission', 'names', 'api', 'detail']) {
    define(Object.prototype, key, { configurable: true,
      get() { note('get ' + key); return undefined; }, set(v) { note('set ' + key); } });
  }
  const ctor = Promise.prototype.constructor;
  define(Promise.prototype, 'constructor', { configurable: true, get() { note('get Promise constructor'); return ctor; } });
  wrap(Promise.prototype, 'then', 'then');
  wrap(Array.prototype, Symbol.iterator, 'Symbol.iterator');
  wrap(Map.prototype, 'get', 'Map.get');
  wrap(Map.prototype, 'set', 'Map.set');
  wrap(Map.prototype, 'delete', 'Map.delete');
  wrap(Function.prototype, 'call', 'call');
  wrap(Function.prototype, 'apply', 'apply');
  wrap(Reflect, 'apply', 'Reflect.apply');
  wrap(Object, 'defineProperty', 'defineProperty');
  wrap(Object, 'getOwnPropertyDescriptor', 'getOwnPropertyDescriptor');
  wrap(EventTarget.prototype, 'dispatchEvent', 'dispatchEvent');
  wrap(EventTarget.prototype, 'addEventListener', 'addEventListener');
  window.CustomEvent = function () { note('CustomEvent'); };
  window.Promise = function () { note('Promise'); };
  // The hook looks featurePolicy up on first use: a page's getter by then is never called.
  define(Document.prototype, 'featurePolicy', { configurable: true, get() { note('featurePolicy'); return undefined; } });
  window.constraintReads = 0;
  // Last (they make every later descriptor literal of the page's own odd): a descriptor read
  // through its prototype would find these.
  for (const key of ['get', 'set', 'value']) {
    define(Object.prototype, key, { configurable: true, get() { note('get ' + key); return undefined; } });
  }
</script>"#;

#[tokio::test(flavor = "multi_thread")]
async fn page_traps_never_see_the_wrappers_at_work() -> anyhow::Result<()> {
    let s = session("/traps", TRAPS, &[], true).await?;
    s.agent.ok("interact", rule(json!({"once": false}))).await?;
    s.page_value(
        "armed = true; window.cb = null;
         Notification.requestPermission((r) => { window.cb = r; });
         navigator.mediaDevices.getUserMedia({ get video() { constraintReads++; return true; } });
         0",
    )
    .await?;
    eventually(Duration::from_secs(10), "both calls answered", || async {
        // A string: an object result would be checked for `then` by the evaluation itself.
        let v = s.page_value("String([window.cb, window.constraintReads])").await?;
        Ok((v == json!("granted,1")).then_some(()))
    })
    .await?;
    s.closed_records("permission", 2).await?;
    assert_eq!(s.page_value("armed = false; spied").await?, json!(""), "the page's traps saw the hook at work");
    Ok(())
}

// The wrappers look like the natives: source text, name, length, prototype, descriptors,
// and what wrong receivers and bad arguments get (errors, their stacks). Nothing here
// prompts.
const PROBE: &str = r#"(async () => {
  const out = {};
  const fts = Function.prototype.toString;
  const other = document.getElementById('f').contentWindow;
  const facts = (e) => [e.constructor.name, e.name, e.message, String(e.stack).split('\n').slice(0, 3).join(' | '),
    Reflect.ownKeys(e).map(String).join()];
  const sync = (f) => { try { return ['returned', f()]; } catch (e) { return facts(e); } };
  const settled = async (f) => { try { return ['resolved', typeof await f()]; } catch (e) { return facts(e); } };
  const targets = [[MediaDevices.prototype, 'getUserMedia', 'MediaDevices'], [Notification, 'requestPermission', 'Notification'],
    [Geolocation.prototype, 'getCurrentPosition', 'Geolocation'], [Geolocation.prototype, 'watchPosition', 'Geolocation'],
    [Geolocation.prototype, 'clearWatch', 'Geolocation'], [Clipboard.prototype, 'readText', 'Clipboard'],
    [Clipboard.prototype, 'read', 'Clipboard']];
  for (const [owner, name, iface] of targets) {
    const fn = owner[name];
    const d = Object.getOwnPropertyDescriptor(owner, name);
    const otherFn = other[iface] && (owner === Notification ? other.Notification : other[iface].prototype)[name];
    out[iface + '.' + name] = {
      string: String(fn), viaProto: fts.call(fn), fromOtherRealm: other.Function.prototype.toString.call(fn),
      otherRealmFn: otherFn && fts.call(otherFn), name: fn.name, length: fn.length, hasPrototype: 'prototype' in fn,
      ownKeys: Reflect.ownKeys(fn).map(String), descriptor: [d.writable, d.enumerable, d.configurable, typeof d.value],
      proto: Object.getPrototypeOf(fn) === Function.prototype, construct: sync(() => new fn()),
      keyIndex: Object.keys(owner).indexOf(name), lengthDesc: JSON.stringify(Object.getOwnPropertyDescriptor(fn, 'length')),
    };
  }
  const geo = navigator.geolocation;
  out.calls = {
    gumWrongThis: await settled(() => MediaDevices.prototype.getUserMedia.call({}, {video: true})),
    gumNothing: await settled(() => navigator.mediaDevices.getUserMedia({})),
    gumNoArgs: await settled(() => navigator.mediaDevices.getUserMedia()),
    gumPrimitive: await settled(() => navigator.mediaDevices.getUserMedia(5)),
    positionWrongThis: sync(() => Geolocation.prototype.getCurrentPosition.call({}, () => {})),
    positionNoCallback: sync(() => geo.getCurrentPosition()),
    positionBadCallback: sync(() => geo.getCurrentPosition('x')),
    positionBadError: sync(() => geo.getCurrentPosition(() => {}, 5)),
    watchBadCallback: sync(() => geo.watchPosition(1)),
    clearUnknown: sync(() => geo.clearWatch(424242)),
    clearWrongThis: sync(() => Geolocation.prototype.clearWatch.call({}, 1)),
    readTextWrongThis: await settled(() => Clipboard.prototype.readText.call({})),
    readWrongThis: await settled(() => Clipboard.prototype.read.call(document)),
  };
  out.globals = Object.getOwnPropertyNames(window).filter((k) => /unmodal|engine|secret|perm/i.test(k));
  return out;
})()"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_wrappers_pass_the_stealth_battery() -> anyhow::Result<()> {
    let page = r#"<!doctype html><title>stealth</title><iframe id="f" src="/child"></iframe>"#;
    let s = session("/stealth", page, &[], true).await?;
    s.web.page("/child", "<!doctype html><p>child</p>", &[]);
    let url = s.page.eval("location.href").await?.as_str().unwrap_or_default().to_owned();
    s.page.goto(&url).await?;
    let with_extension = s.page.eval(PROBE).await?;
    // Nothing was asked: every call above fails or returns before any prompt.
    assert_eq!(s.records_caught_up().await?, Vec::<Value>::new());
    // They really are the wrappers (a rule decides).
    s.agent.ok("interact", rule(json!({"permission": "notifications"}))).await?;
    assert_eq!(s.page_value(NOTIFICATIONS).await?, json!(["granted", "granted"]));
    s.closed_records("permission", 1).await?;

    let baseline = Browser::launch(Options { extension: false, ..Options::default() }).await?;
    let bpage = baseline.first_page().await?;
    bpage.goto(&url).await?;
    let native = bpage.eval(PROBE).await?;
    assert_eq!(
        native["MediaDevices.getUserMedia"]["string"], "function getUserMedia() { [native code] }",
        "baseline is sane"
    );
    let (ours, theirs) = (with_extension.as_object().unwrap(), native.as_object().unwrap());
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, value) in theirs {
        if key == "calls" {
            for (call, v) in value.as_object().unwrap() {
                assert_eq!(&ours[key][call], v, "`{call}` differs from a browser without Unmodal");
            }
        } else {
            assert_eq!(&ours[key], value, "`{key}` differs from a browser without Unmodal");
        }
    }
    Ok(())
}

/// A page formatting stacks itself: V8 hands its `Error.prepareStackTrace` the frames.
const PREPARES_STACKS: &str = "<!doctype html><title>prepared</title><script>Error.prepareStackTrace = (e, sites) =>
  'prepared: ' + sites.length + ' frame(s) ' + sites.map(String).join(' | ');</script>";

// Calls the wrappers pass to the browser at once, failing: thrown, or rejected.
const FAILING_CALLS: &str = r#"(async () => {
  const facts = (e) => [e.constructor.name, e.name, e.message, String(e.stack), Reflect.ownKeys(e).map(String).join()];
  const sync = (f) => { try { f(); return 'no error'; } catch (e) { return ['threw', ...facts(e)]; } };
  const settled = async (f) => { try { await f(); return 'resolved'; } catch (e) { return ['rejected', ...facts(e)]; } };
  return {
    positionNoCallback: sync(() => navigator.geolocation.getCurrentPosition()),
    watchNoCallback: sync(() => navigator.geolocation.watchPosition()),
    clearWrongThis: sync(() => Geolocation.prototype.clearWatch.call({}, 1)),
    mediaNoArguments: await settled(() => navigator.mediaDevices.getUserMedia()),
    readTextWrongThis: await settled(() => Clipboard.prototype.readText.call({})),
    readWrongThis: await settled(() => Clipboard.prototype.read.call(document)),
  };
})()"#;

/// A stack as `PREPARES_STACKS` formats it: how many frames V8 handed the page's function.
fn prepared_frames(v: &Value) -> Option<usize> {
    let stack = v.as_array()?.iter().find_map(|f| f.as_str().filter(|s| s.starts_with("prepared: ")))?;
    stack["prepared: ".len()..].split_once(' ')?.0.parse().ok()
}

/// A page with its own `Error.prepareStackTrace` never gets a frame of the wrappers (nor the
/// extension's URL) in an error the browser made during their call: a throw reaches it with
/// exactly the page's frames, as without Unmodal. KNOWN DIFFERENCE, pinned: a rejection
/// reaches it with no frame at all (the browser's has the page's frames; the wrapper passes
/// the error on in a reaction of its own, where only its own frame is on the stack to cut).
#[tokio::test(flavor = "multi_thread")]
async fn a_page_formatting_stacks_gets_no_frame_of_the_wrappers() -> anyhow::Result<()> {
    let s = session("/prepared", PREPARES_STACKS, &[], true).await?;
    let url = s.page.eval("location.href").await?.as_str().unwrap_or_default().to_owned();
    let ours = s.page.eval(FAILING_CALLS).await?;
    let baseline = Browser::launch(Options { extension: false, ..Options::default() }).await?;
    let bpage = baseline.first_page().await?;
    bpage.goto(&url).await?;
    let native = bpage.eval(FAILING_CALLS).await?;
    let text = ours.to_string();
    assert!(!text.contains("chrome-extension://") && !text.contains("inject.js"), "the page saw our script: {ours}");
    assert_eq!(ours.as_object().map(|o| o.len()), Some(6), "{ours}");
    for (call, theirs) in native.as_object().unwrap() {
        let mine = &ours[call];
        let frames = prepared_frames(theirs);
        assert!(frames.is_some_and(|n| n > 0), "baseline: `{call}` has the page's frames: {theirs}");
        if theirs[0] == "threw" {
            assert_eq!(mine, theirs, "`{call}` differs from a browser without Unmodal");
            continue;
        }
        assert_eq!(theirs[0], "rejected", "baseline: {theirs}");
        assert_eq!(prepared_frames(mine), Some(0), "`{call}`: the page's prepareStackTrace got frames: {mine}");
        let mut no_frames = theirs.clone();
        no_frames[4] = json!("prepared: 0 frame(s) ");
        assert_eq!(mine, &no_frames, "`{call}` differs from a browser without Unmodal but for its frames");
    }
    Ok(())
}

/// A permission rule set for one tab decides there; another tab (another site: the decision
/// is the origin's setting) gets its own tab's default.
#[tokio::test(flavor = "multi_thread")]
async fn rules_belong_to_their_tab() -> anyhow::Result<()> {
    let s = session("/first", PAGE, &[], true).await?;
    let first = s.agent.ok("observe", json!({"what": "tabs"})).await?["tracked_tab"].clone();
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let url = other.page("/second", PAGE, &[]);
    let second_page = s.browser.new_page(&url).await?;
    let second = json!(s.agent.wait_for_tab_listed(&url).await?);
    s.agent.ok("interact", rule(json!({"tab_id": second, "once": false, "permission": "notifications"}))).await?;
    assert_eq!(second_page.eval(NOTIFICATIONS).await?, json!(["granted", "granted"]));
    assert_eq!(s.page_value(NOTIFICATIONS).await?, json!(["denied", "denied"]));
    let by_tab = s.decided_in_tabs("permission", &[second, first]).await?;
    assert_eq!(by_tab, vec![json!("rule"), json!("default_policy")]);
    Ok(())
}
