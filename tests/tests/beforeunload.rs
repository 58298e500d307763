//! beforeunload (the leave-page prompt): after a real click (the prompt needs user
//! activation), a page that asks to confirm leaving gets the browser's prompt unless a rule
//! accepts; with one, the page's handlers still run but their ask is swallowed and
//! navigation goes on.

use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::{Session, cdp, eventually};

const LISTENER: &str = r#"<!doctype html><title>draft</title><p id=p>editing</p>
<script>
  addEventListener('beforeunload', (e) => { localStorage.setItem('saved', String(Date.now())); e.preventDefault(); e.returnValue = 'unsaved'; });
</script>"#;
const ATTRIBUTE: &str = r#"<!doctype html><title>legacy</title><p id=p>editing</p>
<script>window.onbeforeunload = function () { return 'You have unsaved changes'; };</script>"#;

/// Navigates away; returns the type of the native dialog that opened (answered "leave"), if any.
async fn leave(s: &Session, to: &str) -> anyhow::Result<Option<String>> {
    let mut ev = s.page.events();
    let me = s.page.session.clone();
    let nav = s.page.goto(to);
    tokio::pin!(nav);
    let opened = cdp::wait_event(&mut ev, Duration::from_secs(5), |e| {
        e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me)
    });
    tokio::select! {
        r = &mut nav => { r?; Ok(None) }
        e = opened => {
            let kind = e?.params["type"].as_str().unwrap_or("").to_owned();
            s.page.call("Page.handleJavaScriptDialog", json!({"accept": true})).await?;
            nav.await?;
            Ok(Some(kind))
        }
    }
}

async fn unload_record(s: &Session) -> anyhow::Result<Value> {
    eventually(Duration::from_secs(10), "a beforeunload record", || async {
        let d = s.dialogs().await?;
        Ok(d["recent_dialogs"].as_array().into_iter().flatten().find(|r| r["type"] == "beforeunload").cloned())
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_rule_the_prompt_stands_and_is_reported() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/draft", LISTENER).await?;
    s.page.click("#p").await?;
    let away = s.web.page("/away", "<!doctype html><title>away</title>", &[]);
    assert_eq!(leave(&s, &away).await?.as_deref(), Some("beforeunload"));
    assert_eq!(s.page.eval("document.title").await?, json!("away"));
    let r = unload_record(&s).await?;
    assert_eq!((r["decided_by"].as_str(), r["would_show"].as_bool()), (Some("default_policy"), Some(true)), "{r}");
    assert!(r["explanation"].as_str().unwrap().contains("Leave site?"), "{r}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accepting_rule_lets_navigation_go_on_and_handlers_still_run() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/draft", LISTENER).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "beforeunload", "once": false}))
        .await?;
    s.page.click("#p").await?;
    let away = s.web.page("/away", "<!doctype html><title>away</title>", &[]);
    assert_eq!(leave(&s, &away).await?, None, "no prompt may open");
    assert_eq!(s.page.eval("document.title").await?, json!("away"));
    // The page's handler ran (its side effect happened); only its ask was swallowed.
    s.page.goto(&url).await?;
    assert!(s.page.eval("localStorage.getItem('saved')").await?.is_string());
    let r = unload_record(&s).await?;
    assert_eq!((r["decided_by"].as_str(), r["accepted"].as_bool()), (Some("rule"), Some(true)), "{r}");

    // The legacy form: a string returned from window.onbeforeunload.
    s.page.goto(&s.web.page("/legacy", ATTRIBUTE, &[])).await?;
    assert_eq!(s.page.eval("typeof window.onbeforeunload").await?, json!("function"));
    s.page.click("#p").await?;
    assert_eq!(leave(&s, &away).await?, None, "no prompt may open");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_handler_prompts_without_a_rule() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/legacy", ATTRIBUTE).await?;
    s.page.click("#p").await?;
    let away = s.web.page("/away", "<!doctype html><title>away</title>", &[]);
    assert_eq!(leave(&s, &away).await?.as_deref(), Some("beforeunload"));
    Ok(())
}
