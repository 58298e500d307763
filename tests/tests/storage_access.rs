//! Storage access (dialog_type "storage_access"): `document.requestStorageAccess()`. In
//! another site's frame without access, a headful browser that blocks third-party cookies
//! asks the person; headless Chromium refuses at once with NotAllowedError (MODAL-FACTS 6).
//! With the pilot on the page hook holds the call: the default refuses it with the browser's
//! own error; a rule or the agent can leave it to the browser; a frame that has access
//! already is granted by the browser, unrecorded.

use serde_json::json;
use unmodal_e2e::browser::Browser;
use unmodal_e2e::framed;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

/// The call as a page awaits it: its outcome as the page sees it.
const REQUEST: &str = "document.requestStorageAccess()
  .then((v) => ['ok', String(v)], (e) => ['error', e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack'), String(e.stack)])";

async fn framed_session(pilot: bool) -> anyhow::Result<(Session, WebServer, String)> {
    let site = WebServer::other_site()?;
    let (s, widget) = Session::framed(&site, "", pilot).await?;
    Ok((s, site, widget))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_refuses_another_sites_frame_as_the_browser_does() -> anyhow::Result<()> {
    let (s, site, widget) = framed_session(true).await?;
    let ours = s.in_frame(REQUEST).await?;
    // The same frame in a browser without Unmodal: the browser's own refusal, value for value.
    let (plain, page) = Browser::plain_page(&s.web.page("/plain", "<title>plain</title>", &[]), "plain").await?;
    let (top, _) = framed::serve(&s.web, &site, "");
    page.goto(&top).await?;
    let theirs = framed::in_frame(
        |e| {
            let page = &page;
            async move { page.eval(&e).await }
        },
        REQUEST,
    )
    .await?;
    drop(plain);
    assert_eq!(ours, theirs, "the browser's own refusal");
    assert_eq!(ours[2], "NotAllowedError", "{ours}");
    let r = &s.closed_records("storage_access", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("default_policy"), Some(false)), "{r}");
    assert_eq!(r["url"].as_str(), Some(widget.as_str()), "the frame's own URL: {r}");
    s.takes_input().await?;
    assert_eq!(s.page_value("violations").await?, json!([]), "no CSP violation");
    // The top document has access: the browser grants it, nothing is asked or recorded.
    assert_eq!(s.page_value(REQUEST).await?, json!(["ok", "undefined"]));
    assert_eq!(s.closed_records("storage_access", 1).await?.len(), 1, "not recorded");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_leaves_it_to_the_browser_and_must_respond_holds_it() -> anyhow::Result<()> {
    let (s, _site, _) = framed_session(true).await?;
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "storage_access"})).await?;
    // Left to the browser, which refuses it headless by itself.
    assert_eq!(s.in_frame(REQUEST).await?[3], "requestStorageAccess not allowed");
    let r = &s.closed_records("storage_access", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");

    s.policy("must_respond", 2).await?;
    s.in_frame(&format!("window.held = 'pending'; {REQUEST}.then((r) => window.held = r); 0")).await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "storage_access");
    assert_eq!(s.in_frame("window.held").await?, json!("pending"), "the page's call waits");
    s.takes_input().await?;
    s.answer(&held[0], false).await?;
    let v = eventually(LIMIT, "the agent's refusal", || async {
        let v = s.in_frame("window.held").await?;
        Ok(v.is_array().then_some(v))
    })
    .await?;
    assert_eq!(v[2], "NotAllowedError");
    // Nobody answers the next one: the watchdog refuses it.
    s.in_frame(&format!("window.late = 'pending'; {REQUEST}.then((r) => window.late = r); 0")).await?;
    let v = eventually(LIMIT, "the watchdog's refusal", || async {
        let v = s.in_frame("window.late").await?;
        Ok(v.is_array().then_some(v))
    })
    .await?;
    assert_eq!(v[2], "NotAllowedError");
    assert_eq!(s.closed_by("storage_access", 3).await?, ["rule", "agent", "watchdog"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_has_it_and_a_flood_is_counted() -> anyhow::Result<()> {
    let (s, _site, _) = framed_session(false).await?;
    assert_eq!(s.in_frame(REQUEST).await?[2], "NotAllowedError");
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("storage_access"), Some("pilot_off")), "{d}");

    let (s, _site, _) = framed_session(true).await?;
    let names = s.in_frame(
        &format!("Promise.all(Array.from({{length: 1000}}, () => {REQUEST})).then((all) => [...new Set(all.map((r) => r[2]))])"),
    )
    .await?;
    assert_eq!(names, json!(["NotAllowedError"]), "every one refused");
    s.all_accounted("storage_access", 1000).await?;
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wrapper_looks_and_fails_like_the_browsers_own_and_a_hostile_page_sees_nothing() -> anyhow::Result<()> {
    let probe = "JSON.stringify([(() => {
        const f = Document.prototype.requestStorageAccess;
        const d = Object.getOwnPropertyDescriptor(Document.prototype, 'requestStorageAccess');
        return [String(f), f.name, f.length, 'prototype' in f, d.writable, d.enumerable, d.configurable,
                Function.prototype.toString.call(f), Object.getOwnPropertyNames(Document.prototype).indexOf('requestStorageAccess')];
      })()])";
    let wrong = "Document.prototype.requestStorageAccess.call({}).then(() => 'ok', (e) => [e.name, e.message])";
    let (s, _site, _) = framed_session(true).await?;
    let (_plain, page) = Browser::plain_page(&s.web.page("/plain", "<title>plain</title>", &[]), "plain").await?;
    assert_eq!(s.page_value(probe).await?, page.eval(probe).await?);
    assert_eq!(s.page_value(wrong).await?, page.eval(wrong).await?, "a wrong receiver: the browser's own error");
    // Traps on everything the hook could touch on its way: none runs.
    s.in_frame(
        "window.trapped = 0;
         for (const name of ['request', 'kind', 'what', 'method', 'detail', 'settled']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         // Both ways to the browser's DOMException replaced: the refusal is an Error by that name.
         const proto = DOMException.prototype;
         window.DOMException = function () { trapped++; };
         proto.constructor = function () { trapped++; };
         window.CustomEvent = function () { trapped++; };
         const then = Promise.prototype.then;
         Promise.prototype.then = function (...a) { if (new Error().stack.includes('chrome-extension')) trapped++; return then.apply(this, a); };
         Object.defineProperty(Promise.prototype, 'constructor', { get() { if (new Error().stack.includes('chrome-extension')) trapped++; return Promise; }, configurable: true });
         0",
    )
    .await?;
    let v = s.in_frame(&format!("{REQUEST}.then((r) => [r[2], r[3], r[5], trapped])")).await?;
    assert_eq!(
        v,
        json!([
            "NotAllowedError",
            "requestStorageAccess not allowed",
            "NotAllowedError: requestStorageAccess not allowed",
            0
        ])
    );
    Ok(())
}
