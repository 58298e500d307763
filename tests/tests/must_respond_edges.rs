//! What the debugger session of a must_respond tab catches beyond plain dialogs: the real
//! beforeunload prompt, dialogs in same- and cross-origin frames, a dialog from a new
//! document's first inline script; and the fallback to auto when the session ends.

use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::{Session, eventually};

const DRAFT: &str = r#"<!doctype html><title>draft</title><p id=p>editing</p>
<script>addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'unsaved'; });</script>"#;

async fn held_session(path: &str, html: &str) -> anyhow::Result<(Session, String)> {
    let (s, url) = Session::with_pilot(path, html).await?;
    s.policy("must_respond", 60).await?;
    Ok((s, url))
}

/// Starts a navigation without waiting for it (a held dialog may stop it).
fn navigate(s: &Session, url: &str) {
    let (cdp, session, url) = (s.page.cdp.clone(), s.page.session.clone(), url.to_owned());
    tokio::spawn(async move { cdp.call(Some(&session), "Page.navigate", json!({"url": url})).await });
}

async fn answer(s: &Session, accept: bool, text: Option<&str>) -> anyhow::Result<Value> {
    let mut a = json!({"action": "handle_dialog", "accept": accept});
    if let Some(t) = text {
        a["text"] = json!(t);
    }
    s.agent.ok("interact", a).await
}

/// Waits until `expr` evaluates to `want` in the page.
async fn page_becomes(s: &Session, expr: &str, want: Value) -> anyhow::Result<()> {
    let what = format!("{expr} becoming {want}");
    eventually(Duration::from_secs(10), &what, || async { Ok((s.page.eval(expr).await? == want).then_some(())) }).await
}

async fn title_becomes(s: &Session, want: &str) -> anyhow::Result<()> {
    page_becomes(s, "document.title", json!(want)).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_leave_prompt_is_held_and_answered_stay_then_leave() -> anyhow::Result<()> {
    let (s, _) = held_session("/draft", DRAFT).await?;
    s.page.click("#p").await?; // the prompt needs a user activation
    let away = s.web.page("/away", "<!doctype html><title>away</title>", &[]);

    navigate(&s, &away);
    let held = s.held(1).await?;
    assert_eq!((held[0]["type"].as_str(), held[0]["message"].as_str()), (Some("beforeunload"), Some("")));
    let v = answer(&s, false, None).await?;
    assert_eq!(v["dialog"]["closed_by"], "agent");
    assert_eq!(s.page.eval("document.title").await?, json!("draft"), "stay keeps the page");

    // Only the draft asks before leaving: a second prompt proves the tab stayed.
    navigate(&s, &away);
    s.held(1).await?;
    answer(&s, true, None).await?;
    title_becomes(&s, "away").await?;
    let d = s.dialogs().await?;
    let unload: Vec<&Value> =
        d["recent_dialogs"].as_array().unwrap().iter().filter(|r| r["type"] == "beforeunload").collect();
    let answers: Vec<_> = unload.iter().map(|r| (r["closed_by"].as_str(), r["accepted"].as_bool())).collect();
    assert_eq!(answers, [(Some("agent"), Some(false)), (Some("agent"), Some(true))], "{d}");
    assert!(unload[1]["explanation"].as_str().unwrap().contains("leave"), "{d}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn dialogs_in_same_and_cross_origin_frames_are_held() -> anyhow::Result<()> {
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let child = other.page("/widget", "<!doctype html><script>onmessage = () => { window.got = confirm('Pay from the widget?'); parent.postMessage(String(window.got), '*'); };</script>", &[]);
    let top = format!(
        "<!doctype html><title>shop</title>
         <script>let loads = 0, allLoaded; window.loaded = new Promise((d) => allLoaded = d);
         window.frameLoaded = () => ++loads === 2 && allLoaded();</script>
         <iframe id=same onload='frameLoaded()' srcdoc='<p>inner</p>'></iframe><iframe id=w onload='frameLoaded()' src='{child}'></iframe>
         <script>onmessage = (e) => window.fromWidget = e.data;</script>"
    );
    let (s, url) = held_session("/shop", &top).await?;
    s.page.eval("loaded").await?;

    s.page_later("window.got = same.contentWindow.prompt('Coupon code?')").await?;
    let held = s.held(1).await?;
    assert_eq!(held[0]["message"], "Coupon code?");
    answer(&s, true, Some("SAVE10")).await?;
    assert_eq!(s.page.eval("window.got").await?, json!("SAVE10"));

    s.page.eval("w.contentWindow.postMessage('go', '*'); 0").await?;
    let held = s.held(1).await?;
    assert_eq!(
        (held[0]["message"].as_str(), held[0]["url"].as_str()),
        (Some("Pay from the widget?"), Some(child.as_str()))
    );
    answer(&s, true, None).await?;
    page_becomes(&s, "window.fromWidget", json!("true")).await?;
    let r = s.last_dialog(2).await?;
    assert_eq!((r["closed_by"].as_str(), r["page_url"].as_str()), (Some("agent"), Some(url.as_str())), "{r}");
    assert_eq!(r["frame_id"], Value::Null, "a subframe: {r}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_new_documents_first_inline_script_gets_the_rules_or_is_held() -> anyhow::Result<()> {
    let (s, _) = held_session("/form", "<!doctype html><title>form</title>").await?;
    // With a rule: every reload's first script gets it (the config reaches the document
    // before its first script), where without the debugger it often got the default.
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    let early = s.web.page(
        "/early",
        "<!doctype html><script>window.first = confirm('First?');</script><title>early</title>",
        &[],
    );
    for n in 1..=5 {
        s.page.goto(&early).await?;
        assert_eq!(s.page.eval("window.first").await?, json!(true), "load {n}");
        let r = s.last_dialog(n).await?;
        assert_eq!((r["decided_by"].as_str(), r["rules_loaded"].as_bool()), (Some("rule"), Some(true)), "{r}");
    }
    // Without one: the first script waits for the agent.
    let asks = s.web.page(
        "/asks",
        "<!doctype html><script>window.first = prompt('Early question?');</script><title>asks</title>",
        &[],
    );
    navigate(&s, &asks);
    let held = s.held(1).await?;
    assert_eq!(held[0]["message"], "Early question?");
    answer(&s, true, Some("early answer")).await?;
    title_becomes(&s, "asks").await?;
    assert_eq!(s.page.eval("window.first").await?, json!("early answer"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cross_site_frames_first_inline_script_gets_the_rules_or_is_held() -> anyhow::Result<()> {
    // A frame from another site runs in its own renderer, which the tab's new-document
    // script does not reach by itself.
    let other = unmodal_e2e::web::WebServer::other_site()?;
    let child = other.page(
        "/early-widget",
        "<!doctype html><script>parent.postMessage(String(confirm('Widget first?')), '*');</script>",
        &[],
    );
    let top = format!(
        "<!doctype html><title>shop</title><script>onmessage = (e) => window.fromWidget = e.data;</script><iframe src='{child}'></iframe>"
    );
    let (s, _) = held_session("/form", "<!doctype html><title>form</title>").await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    let shop = s.web.page("/shop", &top, &[]);
    for n in 1..=5 {
        navigate(&s, &format!("{shop}?load={n}"));
        let answer_here = format!("location.search === '?load={n}' ? window.fromWidget ?? null : null");
        // The widget answers "true" (the rule), "false" (the default), or its dialog is held.
        let (got, blocking) =
            eventually(Duration::from_secs(10), &format!("load {n}: the widget answering"), || async {
                let got = s.page.eval(&answer_here).await?;
                let blocking = s.agent.ok("observe", json!({"what": "tabs"})).await?["dialogs_blocking"].clone();
                Ok((got != Value::Null || blocking.is_object()).then_some((got, blocking)))
            })
            .await?;
        if blocking.is_object() {
            answer(&s, false, None).await?;
            anyhow::bail!("load {n}: the widget's first confirm() missed the rule and was held: {blocking}");
        }
        anyhow::ensure!(got == json!("true"), "load {n}: the default answered: {}", s.dialogs().await?);
        let r = s.last_dialog(n).await?;
        assert_eq!(
            (r["url"].as_str(), r["decided_by"].as_str(), r["rules_loaded"].as_bool()),
            (Some(child.as_str()), Some("rule"), Some(true)),
            "load {n}: {r}"
        );
    }
    // Without a rule, it waits for the agent like any other dialog.
    s.agent.ok("interact", json!({"action": "handle_dialog", "setup": true, "clear": true})).await?;
    navigate(&s, &format!("{shop}?load=held"));
    let held = s.held(1).await?;
    assert_eq!((held[0]["message"].as_str(), held[0]["url"].as_str()), (Some("Widget first?"), Some(child.as_str())));
    answer(&s, true, None).await?;
    page_becomes(&s, "location.search === '?load=held' ? window.fromWidget ?? null : null", json!("true")).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn when_the_browser_ends_the_session_the_tab_falls_back_to_auto() -> anyhow::Result<()> {
    let (s, url) = held_session("/form", "<!doctype html><title>form</title>").await?;
    // Extensions may not debug browser pages: going there ends the session.
    s.page.goto("chrome://version").await?;
    let policy = eventually(Duration::from_secs(10), "the fallback reported", || async {
        let tab = s.agent.ok("observe", json!({"what": "tabs"})).await?["tracked_tab"].clone();
        let d = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
        Ok(d["dialog_policy"]["fallback"].is_object().then(|| d["dialog_policy"].clone()))
    })
    .await?;
    assert_eq!((policy["policy"].as_str(), policy["fallback"]["from"].as_str()), (Some("auto"), Some("must_respond")));
    assert!(policy["message"].as_str().unwrap().contains("chrome://"), "{policy}");
    // Back on a web page, dialogs get the default again instead of waiting.
    s.page.goto(&url).await?;
    assert_eq!(s.page_value("confirm('Still held?')").await?, json!(false));
    let logs = s.agent.ok("observe", json!({"what": "logs"})).await?;
    let note = logs["logs"].as_array().unwrap().iter().find(|e| e["source"] == "unmodal").cloned();
    assert!(note.is_some_and(|n| n["summary"].as_str().unwrap().contains("fell back")), "{logs}");
    // Setting the policy again works, and clears the note.
    let v = s.policy("must_respond", 60).await?;
    assert!(v["dialog_policy"].get("fallback").is_none(), "{v}");
    s.page_later("window.got = confirm('Held again?')").await?;
    s.held(1).await?;
    answer(&s, true, None).await?;
    assert_eq!(s.page.eval("window.got").await?, json!(true));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_page_cannot_take_the_policy_and_the_agent_is_told_why() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/form", "<!doctype html><title>form</title>").await?;
    s.page.goto("chrome://version").await?;
    let tab = s.agent.wait_for_tab_listed("chrome://version/").await?;
    let r =
        s.agent.call("configure", json!({"action": "dialog_policy", "policy": "must_respond", "tab_id": tab})).await?;
    match r {
        unmodal_e2e::Reply::Failed(v) => {
            assert_eq!(v["error"]["code"], "debugger_unavailable", "{v}");
            assert!(v["error"]["message"].as_str().unwrap().contains("stays on auto"), "{v}");
        }
        other => anyhow::bail!("must_respond on chrome:// must fail: {other:?}"),
    }
    let d = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": tab})).await?;
    assert_eq!(d["dialog_policy"]["policy"], "auto", "{d}");
    Ok(())
}
