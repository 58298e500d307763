//! Rules belong to the tab they were set for (another tab, even on the same page, never gets
//! them) and stay with it across reloads, navigations and the new documents of its frames.

use serde_json::json;
use unmodal_e2e::{Session, eventually};

const PAGE: &str =
    "<!doctype html><title>nav</title><button id=b onclick=\"document.title = String(confirm('Go?'))\">go</button>";

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_for_one_tab_never_answers_another() -> anyhow::Result<()> {
    let (s, first) = Session::with_pilot("/a", PAGE).await?;
    let mine = s.agent.wait_for_tab(&first).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false, "tab_id": mine["id"]}))
        .await?;
    let url_b = s.web.page("/b", PAGE, &[]);
    let other = s.browser.new_page(&url_b).await?;
    other.bring_to_front().await?;
    let theirs = s.agent.wait_for_tab(&url_b).await?;
    assert_ne!(theirs["id"], mine["id"]);
    // Same origin, same page, other tab: the default policy, not the rule.
    assert_eq!(other.eval("confirm('Other tab?')").await?, json!(false));
    // The rule's tab still gets it.
    assert_eq!(s.page.eval("confirm('This tab?')").await?, json!(true));
    let d = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": theirs["id"]})).await?;
    assert_eq!(d["recent_dialogs"][0]["decided_by"], "default_policy", "{d}");
    assert_eq!(d["auto_responses"], json!([]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_persistent_rule_survives_reload_navigation_and_frame_documents() -> anyhow::Result<()> {
    let (s, url) = Session::with_pilot("/nav", PAGE).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    // The click's handler sets the title to the dialog's answer. Under `auto` a new
    // document gets the rules by message, after it started: a dialog before they arrive is
    // answered by default (and says so), so the click waits until the document holds them.
    let click_answer = async || -> anyhow::Result<serde_json::Value> {
        eventually(std::time::Duration::from_secs(10), "the new document holding the rule", || async {
            Ok((s.page.eval("confirm('Rules here yet?')").await? == json!(true)).then_some(()))
        })
        .await?;
        s.page.eval("document.title = ''").await?;
        s.page.click("#b").await?;
        eventually(std::time::Duration::from_secs(10), "the click's answer", || async {
            let title = s.page.eval("document.title").await?;
            Ok((title != json!("")).then_some(title))
        })
        .await
    };
    assert_eq!(click_answer().await?, json!("true"));
    s.page.goto(&url).await?; // reload
    assert_eq!(click_answer().await?, json!("true"));
    let other = s.web.page("/nav2", PAGE, &[]);
    s.page.goto(&other).await?; // new document, same tab
    assert_eq!(click_answer().await?, json!("true"));
    // A frame that loads a new document of its own: it gets the rule too, once it arrived.
    s.web.page("/inner", "<!doctype html><p>inner</p>", &[]);
    s.page
        .eval(
            "new Promise((done) => { const f = document.createElement('iframe'); f.id = 'inner'; f.src = '/inner';
               f.onload = () => done(0); document.body.append(f); })",
        )
        .await?;
    eventually(std::time::Duration::from_secs(10), "the frame's document holding the rule", || async {
        let v = s.page.eval("document.getElementById('inner').contentWindow.confirm('framed?')").await?;
        Ok((v == json!(true)).then_some(()))
    })
    .await?;
    Ok(())
}

/// A new document's first inline script can run before the tab's rules reach it. Whatever
/// answered, the record must say so honestly (the rate is measured by `cargo xtask bench`).
#[tokio::test(flavor = "multi_thread")]
async fn first_inline_script_dialog_is_explained_honestly() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/start", PAGE).await?;
    s.agent
        .ok("interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "once": false}))
        .await?;
    let url = s.web.page("/early", "<!doctype html><script>document.title = String(confirm('early'))</script>", &[]);
    s.page.goto(&url).await?;
    let title = s.page.eval("document.title").await?;
    let d = s.last_dialog(1).await?;
    match title.as_str() {
        Some("true") => assert_eq!((d["decided_by"].as_str(), d["rules_loaded"].as_bool()), (Some("rule"), Some(true))),
        Some("false") => {
            assert_eq!((d["decided_by"].as_str(), d["rules_loaded"].as_bool()), (Some("default_policy"), Some(false)));
            assert!(
                d["explanation"].as_str().unwrap().contains("before this tab's rules reached the new document"),
                "{d}"
            );
        }
        other => panic!("unexpected page state {other:?}"),
    }
    Ok(())
}

/// A frame the page makes (about:blank) gets no pilot.js of its own: it takes the switch from
/// its parent's bridge. Raised from the new document's first inline script, before any config
/// can have arrived, its dialog is answered by the default, never left to the browser.
#[tokio::test(flavor = "multi_thread")]
async fn a_made_frame_knows_the_pilot_is_on_before_any_config() -> anyhow::Result<()> {
    let (s, _) = Session::with_pilot("/start", PAGE).await?;
    let url = s.web.page(
        "/made-early",
        "<!doctype html><body><script>const f = document.createElement('iframe'); document.body.append(f);
           document.title = 'made:' + String(f.contentWindow.confirm('made early'))</script>",
        &[],
    );
    s.page.goto(&url).await?;
    let d = s.last_dialog_where(1, |d| d["message"] == "made early").await?;
    assert_eq!(d["decided_by"], json!("default_policy"), "{d}");
    let title = s.page.eval("document.title").await?;
    assert!(title.as_str().is_some_and(|t| t.starts_with("made:")), "{title}");
    Ok(())
}
