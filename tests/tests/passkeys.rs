//! Passkeys (dialog_type "passkey"): a WebAuthn create() or get(). Without Unmodal, headless
//! Chromium opens its invisible passkey sheet: the call never settles and every input to the
//! tab is dropped until a reload (MODAL-FACTS 3). With the pilot on the page hook holds the
//! call before the browser sees it; the default refuses it as a person's cancel does, and an
//! accept (a rule, `auto_accept`, the agent) arms a virtual authenticator first, so the call
//! makes or uses a real passkey.

use serde_json::{Value, json};
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::peer::{Driver, Peer};
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

/// A page on `localhost` (WebAuthn refuses IP addresses as relying parties) with a button
/// that proves input still arrives.
const PAGE: &str = "<!doctype html><title>passkeys</title><button id=b>b</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');</script>";

/// A create() the page can await: its outcome as the page sees it.
fn create(rp: &str, extra: &str) -> String {
    format!(
        "navigator.credentials.create({{publicKey: {{rp: {{id: '{rp}', name: 'R'}}, user: {{id: new Uint8Array(16), name: 'u@x',
           displayName: 'U'}}, challenge: new Uint8Array(32), pubKeyCredParams: [{{type: 'public-key', alg: -7}}]{extra}}}}})
         .then((c) => ['ok', c.type], (e) => ['error', e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack')])"
    )
}

/// A create() that answers the new credential's id and how long the call took (ms).
const CREATE_ID: &str = "(() => { const t0 = performance.now();
  return navigator.credentials.create({publicKey: {rp: {id: 'localhost', name: 'R'},
      user: {id: new Uint8Array([1, 2, 3]), name: 'u@x', displayName: 'U'}, challenge: new Uint8Array(32),
      pubKeyCredParams: [{type: 'public-key', alg: -7}], authenticatorSelection: {residentKey: 'required'}}})
    .then((c) => ['ok', c.id, performance.now() - t0], (e) => ['error', e.name, e.message]); })()";

/// A get() of credential `id` (base64url, as `PublicKeyCredential.id` reads): its id as
/// signed, and the user handle's length.
fn get_id(id: &str) -> String {
    format!(
        "navigator.credentials.get({{publicKey: {{rpId: 'localhost', challenge: new Uint8Array(32),
           allowCredentials: [{{type: 'public-key',
             id: Uint8Array.from(atob('{id}'.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0))}}]}}}})
         .then((c) => ['ok', c.id, c.response.userHandle.byteLength], (e) => ['error', e.name, e.message])"
    )
}

const GET: &str = "navigator.credentials.get({publicKey: {rpId: 'localhost', challenge: new Uint8Array(32)}})
  .then((c) => ['ok', c.type], (e) => ['error', e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack')])";

async fn session(site: &WebServer, pilot: bool) -> anyhow::Result<Session> {
    Session::showing(&site.page("/passkeys", PAGE, &[]), pilot).await
}

/// What a browser without Unmodal gives a create() that is not allowed: its virtual
/// WebAuthn environment with no authenticator lets the request time out (MODAL-FACTS 3).
async fn browsers_refusal(site: &WebServer) -> anyhow::Result<Value> {
    let (_baseline, page) = Browser::plain_page(&site.page("/plain-passkeys", PAGE, &[]), "passkeys").await?;
    page.call("WebAuthn.enable", json!({})).await?;
    page.eval(&create("localhost", ", timeout: 300")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_refuses_as_a_person_would_and_the_tab_keeps_taking_input() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let ours = s.page_value(&create("localhost", "")).await?;
    assert_eq!(ours, browsers_refusal(&site).await?, "the browser's own refusal, value for value");
    assert_eq!(ours[2], "NotAllowedError");
    assert_eq!(s.page_value(GET).await?, ours, "get() is refused alike");
    let recs = s.closed_records("passkey", 2).await?;
    assert_eq!(
        (recs[0]["operation"].as_str(), recs[0]["rp_id"].as_str(), recs[0]["decided_by"].as_str()),
        (Some("create"), Some("localhost"), Some("default_policy"))
    );
    assert_eq!(
        (recs[1]["operation"].as_str(), recs[1]["message"].as_str()),
        (Some("get"), Some("sign in with a passkey for localhost"))
    );
    s.takes_input().await?;
    // A password credential is none of ours: the browser answers it.
    assert_eq!(s.page_value("navigator.credentials.get({password: true}).then((c) => c)").await?, json!(null));
    assert_eq!(s.closed_records("passkey", 2).await?.len(), 2, "not recorded");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_by_relying_party_and_must_respond_with_the_watchdog() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let v = s
        .agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "passkey", "accept": false,
                   "match": {"rp_id": "localhost"}}),
        )
        .await?;
    assert_eq!(v["match"]["rp_id"], "localhost", "{v}");
    assert_eq!(s.page_value(&create("localhost", "")).await?[2], "NotAllowedError");
    assert_eq!(s.closed_records("passkey", 1).await?[0]["decided_by"], "rule");

    s.policy("must_respond", 2).await?;
    s.page_later(&format!("window.held = 'pending'; {}.then((r) => window.held = r)", create("localhost", ""))).await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "passkey");
    assert_eq!(s.page_value("window.held").await?, json!("pending"), "the page's call waits");
    s.takes_input().await?;
    let id = held[0]["dialog_id"].clone();
    s.agent.ok("interact", json!({"action": "handle_dialog", "dialog_id": id, "accept": false})).await?;
    eventually(LIMIT, "the page's call refused by the agent", || async {
        let v = s.page_value("window.held").await?;
        Ok((v != json!("pending")).then_some(v))
    })
    .await?;
    // Nobody answers the next one: the watchdog refuses it.
    s.page_later(&format!("window.late = 'pending'; {}.then((r) => window.late = r)", create("localhost", ""))).await?;
    let late = eventually(LIMIT, "the watchdog's refusal", || async {
        let v = s.page_value("window.late").await?;
        Ok((v.is_array()).then_some(v))
    })
    .await?;
    assert_eq!(late[2], "NotAllowedError");
    assert_eq!(s.closed_by("passkey", 3).await?, ["rule", "agent", "watchdog"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_makes_the_call() -> anyhow::Result<()> {
    // A virtual authenticator the test arms itself answers the browser's own request, so the
    // tab is not wedged: the call reached the browser untouched.
    let site = WebServer::other_site()?;
    let s = session(&site, false).await?;
    s.page.call("WebAuthn.enable", json!({})).await?;
    s.page
        .call(
            "WebAuthn.addVirtualAuthenticator",
            json!({"options": {"protocol": "ctap2", "transport": "internal", "hasResidentKey": true,
                               "hasUserVerification": true, "isUserVerified": true}}),
        )
        .await?;
    assert_eq!(s.page_value(&create("localhost", "")).await?, json!(["ok", "public-key"]));
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("passkey"), Some("pilot_off")), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let (s, _) = Session::framed(&site, "publickey-credentials-create", true).await?;
    let got = s.in_frame(&create("localhost", "")).await?;
    assert_eq!(got[2], "NotAllowedError", "{got}");
    let r = &s.closed_records("passkey", 1).await?[0];
    assert!(r["url"].as_str().unwrap_or("").starts_with(&site.origin), "the frame's own URL: {r}");
    s.takes_input().await?;
    assert_eq!(s.page_value("violations").await?, json!([]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_page_neither_sees_the_hook_nor_escapes_it() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    s.page_value(
        "window.trapped = 0;
         for (const name of ['publicKey', 'rp', 'id', 'rpId', 'mediation', 'request', 'kind', 'what', 'method']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         window.DOMException = function () { trapped++; };
         const f = Promise.prototype.then;
         Promise.prototype.then = function (...a) { if (new Error().stack.includes('chrome-extension')) trapped++; return f.apply(this, a); };
         0",
    )
    .await?;
    let v = s.page_value(&create("localhost", "")).await?;
    assert_eq!((v[1].as_str(), v[2].as_str()), (Some("DOMException"), Some("NotAllowedError")), "{v}");
    assert_eq!(s.page_value("trapped").await?, json!(0));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wrappers_look_like_the_browsers_own() -> anyhow::Result<()> {
    let probe = "JSON.stringify(['create', 'get', 'store', 'preventSilentAccess'].map((n) => {
        const f = CredentialsContainer.prototype[n];
        const d = Object.getOwnPropertyDescriptor(CredentialsContainer.prototype, n);
        return [n, String(f), f.name, f.length, 'prototype' in f, d.writable, d.enumerable, d.configurable,
                Function.prototype.toString.call(f)];
      }).concat([Object.getOwnPropertyNames(CredentialsContainer.prototype).sort()]))";
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let ours = s.page_value(probe).await?;
    let (_baseline, page) = Browser::plain_page(&site.page("/plain", PAGE, &[]), "passkeys").await?;
    assert_eq!(ours, page.eval(probe).await?);
    // Called on something that is not a CredentialsContainer: the browser's own error.
    let wrong =
        "CredentialsContainer.prototype.create.call({}, {publicKey: {}}).then(() => 'ok', (e) => [e.name, e.message])";
    assert_eq!(s.page_value(wrong).await?, page.eval(wrong).await?);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_passkey_requests_is_counted_exactly_and_nothing_hangs() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let names = s
        .page_value(&format!(
            "Promise.all(Array.from({{length: 1000}}, () => {})).then((all) => [...new Set(all.map((r) => r[2]))])",
            create("localhost", "")
        ))
        .await?;
    assert_eq!(names, json!(["NotAllowedError"]), "every one refused");
    s.all_accounted("passkey", 1000).await?;
    s.takes_input().await
}

async fn accept_rule(s: &Session, keep: bool) -> anyhow::Result<Value> {
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "passkey", "accept": true, "once": false,
                   "keep": keep, "match": {"rp_id": "localhost"}}),
        )
        .await
}

/// The page's view of whether a platform authenticator is there: only while one is armed.
async fn authenticator_gone(s: &Session) -> anyhow::Result<()> {
    eventually(LIMIT, "the virtual authenticator removed after the call", || async {
        let v = s.page_value("PublicKeyCredential.isUserVerifyingPlatformAuthenticatorAvailable()").await?;
        Ok((v == json!(false)).then_some(()))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_answers_with_a_virtual_authenticator_create_then_get() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let v = accept_rule(&s, false).await?;
    assert_eq!((v["accept"].as_bool(), v.get("keep")), (Some(true), None), "{v}");
    let made = s.page_value(CREATE_ID).await?;
    assert_eq!(made[0], "ok", "{made}");
    let id = made[1].as_str().unwrap_or_default().to_owned();
    // How fast is a figure for a quiet machine (`cargo xtask bench -- --only-passkey`).
    eprintln!("create() answered in {} ms", made[2]);
    authenticator_gone(&s).await?;
    // Signed with the same passkey, armed again for this call.
    assert_eq!(s.page_value(&get_id(&id)).await?, json!(["ok", id, 3]));
    // Discoverable: no list, the authenticator finds it by relying party.
    let any = s.page_value(GET).await?;
    assert_eq!(any, json!(["ok", "public-key"]));
    let recs = s.closed_records("passkey", 3).await?;
    for r in &recs {
        assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");
    }
    s.takes_input().await?;
    // The agent sees no key anywhere.
    let all = [s.dialogs().await?.to_string(), s.agent.ok("observe", json!({"what": "logs"})).await?.to_string()];
    assert!(!all.concat().contains("privateKey"), "{all:?}");

    // must_respond: the agent's accept arms alike.
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true})).await?;
    s.policy("must_respond", 30).await?;
    s.page_later(&format!("window.held = 'pending'; {}.then((r) => window.held = r)", get_id(&id))).await?;
    let held = s.held(1).await?;
    assert_eq!(
        (held[0]["type"].as_str(), held[0]["message"].as_str()),
        (Some("passkey"), Some("sign in with a passkey for localhost"))
    );
    s.answer(&held[0], true).await?;
    let got = eventually(LIMIT, "the page's call answered after the agent's accept", || async {
        let v = s.page_value("window.held").await?;
        Ok((v != json!("pending")).then_some(v))
    })
    .await?;
    assert_eq!(got, json!(["ok", id, 3]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn kept_passkeys_sign_in_after_a_browser_restart() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let data = tempfile::tempdir()?;
    let opts =
        || Options { env: vec![("UNMODAL_DATA_DIR".into(), data.path().display().to_string())], ..Options::default() };
    let start = |opts| async {
        let s = Session::start_with(opts).await?;
        let url = site.page("/passkeys", PAGE, &[]);
        s.page.goto(&url).await?;
        s.page.bring_to_front().await?;
        s.agent.wait_for_tab(&url).await?;
        s.enable_pilot().await?;
        anyhow::Ok(s)
    };
    let first = start(opts()).await?;
    assert_eq!(accept_rule(&first, true).await?["keep"], true);
    let made = first.page_value(CREATE_ID).await?;
    let id = made[1].as_str().unwrap_or_default().to_owned();
    let file = data.path().join("passkeys.json");
    eventually(LIMIT, "the kept passkey written", || async { Ok(file.exists().then_some(())) }).await?;
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file)?.permissions().mode() & 0o777, 0o600);
    drop(first);

    let second = start(opts()).await?;
    accept_rule(&second, false).await?;
    assert_eq!(second.page_value(&get_id(&id)).await?, json!(["ok", id, 3]), "signed in with yesterday's passkey");
    // A browser without the data directory has no such passkey: the virtual authenticator
    // has nothing to sign with.
    let third = start(Options::default()).await?;
    accept_rule(&third, false).await?;
    let v = third.page_value(&get_id(&id)).await?;
    assert_eq!(v[0], "error", "{v}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn beside_playwright_mcp_attaching_and_detaching() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    accept_rule(&s, false).await?;
    let url = site.page("/passkeys", PAGE, &[]);
    let peer = Peer::start(Driver::PlaywrightMcp, s.browser.debugging_port()?).await?;
    // The driver's own evaluate makes the call: the authenticator answers it all the same.
    let call = CREATE_ID.replace("(() => {", "async () => { return await (() => {").replace("})()", "})(); }");
    let r = peer.evaluate(&url, &call).await?;
    assert!(!r.is_error && r.text.contains("\"ok\""), "{r:?}");
    // Its sessions leave (the virtual environment goes with them): the next call is armed again.
    peer.close().await?;
    let made = s.page_value(CREATE_ID).await?;
    assert_eq!(made[0], "ok", "{made}");
    let id = made[1].as_str().unwrap_or_default().to_owned();
    assert_eq!(s.page_value(&get_id(&id)).await?, json!(["ok", id, 3]));
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accepted_call_touches_nothing_of_the_pages() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    accept_rule(&s, false).await?;
    // Names the hook's own objects carry (none is a member WebAuthn reads from the options).
    s.page_value(
        "window.trapped = [];
         for (const name of ['settled', 'request', 'kind', 'what', 'method', 'detail', 'page_request']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped.push('get ' + name); },
             set(v) { trapped.push('set ' + name); }, configurable: true });
         }
         window.CustomEvent = function () { trapped.push('CustomEvent'); };
         const then = Promise.prototype.then;
         Promise.prototype.then = function (...a) {
           if (new Error().stack.includes('chrome-extension')) trapped.push('then');
           return then.apply(this, a);
         };
         0",
    )
    .await?;
    let made = s.page_value(CREATE_ID).await?;
    assert_eq!(made[0], "ok", "{made}");
    authenticator_gone(&s).await?;
    assert_eq!(s.page_value("trapped").await?, json!([]), "the page's traps saw the hook at work");
    Ok(())
}

/// Code the agent's driver runs in Unmodal's worker (a remote browser: the bridge's binding
/// is a global there) forges a passkey request for `localhost` from a tab with a passkey
/// rule. The host refuses it while its own view of the browser (the bridge's connection)
/// shows no page of that site, accepts the same request once one is open, and takes no key
/// the worker hands back for a request it refused. On 892be98 the forged request was
/// accepted at once (with the relying party's passkeys, had any been held).
#[tokio::test(flavor = "multi_thread")]
async fn a_request_forged_in_the_worker_gets_keys_only_for_a_site_the_host_sees() -> anyhow::Result<()> {
    use super::remote::{Remote, Via};
    use anyhow::Context;
    let (r, _url, _page, tab) = Remote::with_page(Via::Query, "/forged", PAGE).await?;
    r.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "passkey", "accept": true, "once": false,
                   "keep": true, "tab_id": tab}),
        )
        .await?;
    // As a driver does: its own session on the worker, over the provider's URL.
    let (cdp, session) = r.browser.worker_session().await?;
    let site = WebServer::other_site()?;
    let forge = |msg: Value| {
        let (cdp, session) = (cdp.clone(), session.clone());
        let expression = format!("unmodalToHost({})", json!(msg.to_string()));
        async move { cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": expression})).await }
    };
    let request = |id: u64| {
        json!({"type": "prompt_request", "kind": "passkey", "tab_id": tab, "id": id, "frame_id": 0,
               "url": format!("{}/login", site.origin), "operation": "get", "rp_id": "localhost"})
    };
    let passkey_records = |n: usize| {
        r.records(tab, "the forged requests recorded", move |recs| {
            recs.iter().filter(|x| x["type"] == "passkey").count() >= n
        })
    };
    forge(request(900_001)).await?;
    let recs = passkey_records(1).await?;
    let first = recs.iter().find(|x| x["type"] == "passkey").context("the record")?;
    let why = first["explanation"].as_str().unwrap_or_default();
    assert_eq!(first["accepted"], false, "{first}");
    assert!(why.contains("no page or frame on localhost is open"), "{why}");
    // Keys handed back for the refused request, to be kept: not taken.
    let key = json!({"credentialId": "AQ==", "isResidentCredential": true, "rpId": "localhost",
                     "privateKey": "AAAA", "userHandle": "AQ==", "signCount": 1});
    forge(json!({"type": "passkeys_saved", "tab_id": tab, "id": 900_001, "keep": true, "credentials": [key]})).await?;
    // A page of the site opens: the host's view shows it, and the same request is accepted.
    let _other = r.browser.new_page(&site.page("/login", PAGE, &[])).await?;
    let accepted = eventually(LIMIT, "a forged request accepted once the site is open", || async {
        let n = 1 + r.records(tab, "records", |_| true).await?.iter().filter(|x| x["type"] == "passkey").count();
        forge(request(900_000 + n as u64)).await?;
        let recs = passkey_records(n).await?;
        Ok(recs.iter().any(|x| x["type"] == "passkey" && x["accepted"] == true).then_some(n))
    })
    .await?;
    assert!(accepted >= 2);
    // The messages are taken in order: the forged keys were refused before.
    assert!(!r.data.path().join("passkeys.json").exists(), "no key was kept");
    Ok(())
}
