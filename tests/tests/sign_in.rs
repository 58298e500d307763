//! Sign-in (dialog_type "sign_in"): a FedCM `navigator.credentials.get({identity})`.
//! Without Unmodal, headless Chromium refuses it with NetworkError after a random 0.2–31 s
//! and a headful one shows an account chooser that waits for a person (MODAL-FACTS 6). With
//! the pilot on the page hook holds it first: the default refuses it at once with the
//! browser's own NetworkError; a rule or the agent can leave it to the browser.

use serde_json::json;
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Session, eventually};

const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);

const PAGE: &str = "<!doctype html><title>sign-in</title><button id=b>b</button>
<script>window.seen = []; document.getElementById('b').onclick = () => seen.push('click');</script>";

/// A FedCM request the page can await: its outcome and how long it took (ms).
const SIGN_IN: &str = "(() => { const t0 = performance.now();
  return navigator.credentials.get({identity: {providers: [{configURL: 'https://idp.example/config.json', clientId: 'x'}]}})
    .then(() => ['ok'], (e) => [e.constructor.name, e.name, e.message, performance.now() - t0]); })()";

async fn session(site: &WebServer, pilot: bool) -> anyhow::Result<Session> {
    Session::showing(&site.page("/sign-in", PAGE, &[]), pilot).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_refuses_at_once_with_the_browsers_own_error() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    let v = s.page_value(SIGN_IN).await?;
    // The browser's words for a sign-in it cannot complete (MODAL-FACTS 6), without its wait.
    assert_eq!(
        (&v[0], &v[1], &v[2]),
        (&json!("DOMException"), &json!("NetworkError"), &json!("Error retrieving a token.")),
        "{v}"
    );
    // "At once" is what the record says (the default policy, not the browser's own wait);
    // how long it took is no test of that on a loaded machine.
    eprintln!("the default's refusal took {} ms", v[3]);
    let r = &s.closed_records("sign_in", 1).await?[0];
    assert_eq!(
        (r["decided_by"].as_str(), r["accepted"].as_bool(), r["message"].as_str()),
        (Some("default_policy"), Some(false), Some("sign in with https://idp.example/config.json (FedCM)")),
        "{r}"
    );
    s.takes_input().await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_leaves_it_to_the_browser_and_must_respond_holds_it() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, true).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "sign_in", "once": false}))
        .await?;
    // The browser's own way: its answer comes after its own delay (0.2 s to over 30 s).
    s.page_later(&format!("window.browsers = 'pending'; {SIGN_IN}.then((r) => window.browsers = r)")).await?;
    let r = &s.closed_records("sign_in", 1).await?[0];
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");
    // The browser has it: while it waits, it refuses a second request itself, at once
    // (MODAL-FACTS 6), unless its first answer came already.
    let second = s.page_value(SIGN_IN).await?;
    let browsers = s.page_value("window.browsers").await?;
    let outstanding = second[2].as_str().is_some_and(|m| m.contains("may be outstanding"));
    assert!(outstanding || browsers.is_array(), "the browser's own answers: {second} {browsers}");
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true})).await?;

    s.policy("must_respond", 2).await?;
    s.page_later(&format!("window.held = 'pending'; {SIGN_IN}.then((r) => window.held = r)")).await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["type"], "sign_in");
    assert_eq!(s.page_value("window.held").await?, json!("pending"), "the page's call waits");
    s.takes_input().await?;
    s.answer(&held[0], false).await?;
    let v = eventually(LIMIT, "the agent's refusal", || async {
        let v = s.page_value("window.held").await?;
        Ok(v.is_array().then_some(v))
    })
    .await?;
    assert_eq!(v[1], "NetworkError");
    // Nobody answers the next one: the watchdog refuses it.
    s.page_later(&format!("window.late = 'pending'; {SIGN_IN}.then((r) => window.late = r)")).await?;
    let v = eventually(LIMIT, "the watchdog's refusal", || async {
        let v = s.page_value("window.late").await?;
        Ok(v.is_array().then_some(v))
    })
    .await?;
    assert_eq!(v[1], "NetworkError");
    assert_eq!(s.closed_by("sign_in", 4).await?, ["rule", "rule", "agent", "watchdog"]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_pilot_off_the_browser_has_it_and_a_flood_is_counted() -> anyhow::Result<()> {
    let site = WebServer::other_site()?;
    let s = session(&site, false).await?;
    s.page_later(&format!("{SIGN_IN}; 0")).await?;
    let d = s.last_dialog(1).await?;
    assert_eq!((d["type"].as_str(), d["decided_by"].as_str()), (Some("sign_in"), Some("pilot_off")), "{d}");

    let site2 = WebServer::other_site()?;
    let s = session(&site2, true).await?;
    let names = s
        .page_value(&format!(
            "Promise.all(Array.from({{length: 1000}}, () => {SIGN_IN})).then((all) => [...new Set(all.map((r) => r[1]))])"
        ))
        .await?;
    assert_eq!(names, json!(["NetworkError"]), "every one refused");
    s.all_accounted("sign_in", 1000).await?;
    s.takes_input().await
}
