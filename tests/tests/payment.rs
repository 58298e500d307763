//! Payment Request (dialog_type "payment"): `PaymentRequest.prototype.show()`. Headless
//! Chromium refuses it by itself within ~25 ms (no payment app); a headful browser with a
//! payment app shows a payment sheet that waits for a person (MODAL-FACTS 6). With the pilot
//! on the page hook asks the browser's own canMakePayment() and holds the call: under `auto`
//! what no app can take is left to the browser (its own refusal), what one can is refused at
//! once as a person's closing of the sheet (AbortError); a rule or the agent decides too.

use serde_json::{Value, json};
use unmodal_e2e::browser::Browser;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

const PAGE: &str = "<!doctype html><title>payment</title><button id=b>b</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');</script>";

/// A show() as a page awaits it: its outcome as the page sees it.
const SHOW: &str = "new PaymentRequest([{supportedMethods: 'basic-card'}],
    {total: {label: 'T', amount: {currency: 'USD', value: '1.00'}}}).show()
  .then((r) => ['ok', typeof r], (e) => ['error', e.constructor.name, e.name, e.message, Object.hasOwn(e, 'stack'), String(e.stack)])";

async fn session(site: &WebServer, pilot: bool) -> anyhow::Result<Session> {
    Session::showing(&site.page("/pay", PAGE, &[]), pilot).await
}

async fn plain(site: &WebServer) -> anyhow::Result<(Browser, unmodal_e2e::page::Page)> {
    Browser::plain_page(&site.page("/plain-pay", PAGE, &[]), "payment").await
}

async fn settled(s: &Session, key: &str) -> anyhow::Result<Value> {
    eventually(LIMIT, "the page's call settled", || async {
        let v = s.page_value(&format!("window.{key}")).await?;
        Ok(v.is_array().then_some(v))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_leaves_what_no_app_can_take_to_the_browser_and_records_it() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let ours = s.page_value(SHOW).await?;
    let (_plain, page) = plain(&site).await?;
    assert_eq!(ours, page.eval(SHOW).await?, "the browser's own refusal, value for value");
    assert_eq!(ours[2], "NotSupportedError", "{ours}");
    let r = &s.closed_records("payment", 1).await?[0];
    assert_eq!(
        (r["decided_by"].as_str(), r["accepted"].as_bool(), r["message"].as_str()),
        (Some("default_policy"), Some(true), Some("payment request (show): no payment app can take it")),
        "{r}"
    );
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_refuses_as_a_person_closing_the_sheet_and_must_respond_holds_it() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "payment", "accept": false}))
        .await?;
    let v = s.page_value(SHOW).await?;
    assert_eq!(
        json!([v[1], v[2], v[3], v[4], v[5]]),
        json!([
            "DOMException",
            "AbortError",
            "User closed the Payment Request UI.",
            true,
            "AbortError: User closed the Payment Request UI."
        ]),
        "a person's close, with no frame of ours"
    );
    assert_eq!(s.closed_records("payment", 1).await?[0]["decided_by"], "rule");

    s.policy("must_respond", 2).await?;
    s.page_later(&format!("window.held = 'pending'; {SHOW}.then((r) => window.held = r)")).await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "payment");
    assert_eq!(s.page_value("window.held").await?, json!("pending"), "the page's call waits");
    s.takes_input().await?;
    s.answer(&held[0], true).await?;
    // The agent left it to the browser: its own refusal.
    assert_eq!(settled(&s, "held").await?[2], "NotSupportedError");
    // Nobody answers the next one: the watchdog refuses it.
    s.page_later(&format!("window.late = 'pending'; {SHOW}.then((r) => window.late = r)")).await?;
    assert_eq!(settled(&s, "late").await?[2], "AbortError");
    assert_eq!(s.closed_by("payment", 3).await?, ["rule", "agent", "watchdog"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_has_it_and_a_flood_is_counted() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, false).await?;
    assert_eq!(s.page_value(SHOW).await?[2], "NotSupportedError");
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("payment"), Some("pilot_off")), "{d}");

    let site2 = WebServer::other_site()?;
    let s = session(&site2, true).await?;
    // A thousand at once: each settles (the browser may refuse some for another showing).
    let n = s
        .page_value(&format!("Promise.all(Array.from({{length: 1000}}, () => {SHOW})).then((all) => all.length)"))
        .await?;
    assert_eq!(n, json!(1000));
    s.all_accounted("payment", 1000).await?;
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn another_sites_frame_under_a_strict_csp() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let (s, widget) = Session::framed(&site, "payment", true).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "payment", "accept": false}))
        .await?;
    let got = s.in_frame(SHOW).await?;
    assert_eq!(got[2], "AbortError", "{got}");
    let r = &s.closed_records("payment", 1).await?[0];
    assert_eq!(r["url"].as_str(), Some(widget.as_str()), "the frame's own URL: {r}");
    s.takes_input().await?;
    assert_eq!(s.page_value("violations").await?, json!([]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wrapper_looks_and_fails_like_the_browsers_own_and_a_hostile_page_sees_nothing() -> anyhow::Result<()> {
    let probe = "JSON.stringify(['show', 'abort', 'canMakePayment'].map((n) => {
        const f = PaymentRequest.prototype[n];
        const d = Object.getOwnPropertyDescriptor(PaymentRequest.prototype, n);
        return [n, String(f), f.name, f.length, 'prototype' in f, d.writable, d.enumerable, d.configurable,
                Function.prototype.toString.call(f)];
      }).concat([Object.getOwnPropertyNames(PaymentRequest.prototype)]))";
    let wrong = "PaymentRequest.prototype.show.call({}).then(() => 'ok', (e) => [e.name, e.message])";
    let twice = "(() => { const r = new PaymentRequest([{supportedMethods: 'basic-card'}],
        {total: {label: 'T', amount: {currency: 'USD', value: '1.00'}}});
      const first = r.show().catch((e) => e.name);
      return Promise.all([first, r.show().then(() => 'ok', (e) => [e.name, e.message])]); })()";
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let (_plain, page) = plain(&site).await?;
    assert_eq!(s.page_value(probe).await?, page.eval(probe).await?);
    assert_eq!(s.page_value(wrong).await?, page.eval(wrong).await?, "a wrong receiver: the browser's own error");
    assert_eq!(s.page_value(twice).await?, page.eval(twice).await?, "show() twice: the browser's own error");
    // A fresh document (the browser lets one show() without a gesture through per page).
    let url = site.page("/pay-hostile", PAGE, &[]);
    s.page.goto(&url).await?;
    s.agent.wait_for_tab(&url).await?;
    s.page_value(
        "window.trapped = 0;
         for (const name of ['request', 'kind', 'what', 'method', 'detail']) {
           Object.defineProperty(Object.prototype, name, { get() { trapped++; }, set() { trapped++; }, configurable: true });
         }
         window.DOMException = function () { trapped++; };
         window.CustomEvent = function () { trapped++; };
         const then = Promise.prototype.then;
         Promise.prototype.then = function (...a) { if (new Error().stack.includes('chrome-extension')) trapped++; return then.apply(this, a); };
         Object.defineProperty(Promise.prototype, 'constructor', { get() { if (new Error().stack.includes('chrome-extension')) trapped++; return Promise; }, configurable: true });
         0",
    )
    .await?;
    assert_eq!(s.page_value(&format!("{SHOW}.then((r) => [r[2], trapped])")).await?, json!(["NotSupportedError", 0]));
    Ok(())
}
