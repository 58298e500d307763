//! A tab opened by a tab (`window.open`, `target=_blank`, an OAuth-style popup) starts with
//! its opener's rules and policy.

use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Session, cdp, eventually};

const LIMIT: Duration = Duration::from_secs(10);

/// The popup asks at once, in its first inline script, and keeps the answer.
const POPUP: &str = "<!doctype html><title>sign in</title><script>window.first = confirm('Allow access?')</script>";

fn opener_page(popup_url: &str) -> String {
    format!(
        "<!doctype html><title>app</title>\
         <button id=open onclick=\"window.open('{popup_url}', 'auth', 'popup')\">Sign in</button>\
         <a id=link href='{popup_url}?tab' target=_blank>Docs</a>"
    )
}

/// The tab showing `url`, attached; a native dialog it opens is answered `true` (so the
/// test never hangs, and says it happened: the opener's rule would have answered `false`).
async fn attach_to(s: &Session, url: &str) -> Result<Page> {
    let id = eventually(LIMIT, &format!("a tab showing {url}"), || async {
        let t = s.browser.cdp.call(None, "Target.getTargets", json!({})).await?;
        Ok(t["targetInfos"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["type"] == "page" && t["url"] == url)
            .and_then(|t| t["targetId"].as_str().map(str::to_owned)))
    })
    .await?;
    let page = Page::attach(s.browser.cdp.clone(), id).await?;
    let mut ev = page.events();
    let (me, cdp) = (page.session.clone(), page.cdp.clone());
    tokio::spawn(async move {
        while cdp::wait_event(&mut ev, Duration::from_secs(60), |e| {
            e.method == "Page.javascriptDialogOpening" && e.session.as_deref() == Some(&me)
        })
        .await
        .is_ok()
        {
            let _ = cdp.call(Some(&me), "Page.handleJavaScriptDialog", json!({"accept": true})).await;
        }
    });
    Ok(page)
}

async fn value_of(page: &Page, expr: &str) -> Result<Value> {
    eventually(LIMIT, &format!("{expr} being set"), || async {
        let v = page.eval(expr).await?;
        Ok((!v.is_null()).then_some(v))
    })
    .await
}

async fn opened_tab_inherits(policy: Option<&str>) -> Result<()> {
    let s = Session::start().await?;
    let popup = s.web.page("/popup", POPUP, &[]);
    s.open("/app", &opener_page(&popup), &[]).await?;
    s.enable_pilot().await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": false, "once": false}),
        )
        .await?;
    if let Some(p) = policy {
        s.policy(p, 30).await?;
    }

    // window.open (a popup window), by a real click.
    s.page.click("#open").await?;
    let win = attach_to(&s, &popup).await?;
    let id = s.agent.wait_for_tab_listed(&popup).await?;
    let first = value_of(&win, "window.first").await?;
    // A later dialog is certainly answered by the opener's rule.
    let later = win.eval("confirm('Continue?')").await.context("a later confirm in the popup")?;
    assert_eq!(later, json!(false), "the opener's rule must answer in the popup");
    // The agent sees the copy as the new tab's own.
    let v = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": id})).await?;
    if v["auto_responses"].as_array().map(Vec::len) != Some(1) {
        eprintln!("LOG {id}\n{}", s.browser.log_tail());
    }
    assert_eq!(v["auto_responses"].as_array().map(Vec::len), Some(1), "{v}");
    if let Some(p) = policy {
        assert_eq!(v["dialog_policy"]["policy"], p, "{v}");
        // Under a policy the debugger session's new-document script has the config in place
        // before the popup's first inline script.
        assert_eq!(first, json!(false), "the popup's first inline script must meet the opener's rule");
    } else {
        println!("first inline script of the popup under auto: {first} (false: the opener's rule)");
    }

    // target=_blank, the same.
    let tab = format!("{popup}?tab");
    s.page.click("#link").await?;
    let t = attach_to(&s, &tab).await?;
    value_of(&t, "window.first").await?;
    assert_eq!(t.eval("confirm('Continue?')").await?, json!(false), "target=_blank inherits too");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tab_opened_by_a_tab_starts_with_its_rules() -> Result<()> {
    opened_tab_inherits(None).await
}

#[tokio::test(flavor = "multi_thread")]
async fn under_must_respond_even_the_first_inline_script_meets_them() -> Result<()> {
    opened_tab_inherits(Some("must_respond")).await
}

/// A page opens an empty window and calls its dialogs at once (before any message could
/// reach the new tab): the opener's rule answers them, as it answers the opener's own, and
/// they are recorded for the new tab. Without Unmodal the browser shows them there.
#[tokio::test(flavor = "multi_thread")]
async fn an_empty_window_used_at_once_meets_the_openers_rules() -> Result<()> {
    let s = Session::start().await?;
    let app = "<!doctype html><title>app</title><button id=open onclick=\"const w = window.open(''); \
               window.got = [typeof w.alert('a'), w.confirm('c'), w.prompt('p', 'd')]\">Open</button>";
    s.open("/app", app, &[]).await?;
    s.enable_pilot().await?;
    s.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "all", "text": "RULE", "once": false}),
        )
        .await?;
    let mine = s.agent.ok("observe", json!({"what": "tabs"})).await?["tracked_tab"].clone();
    s.page.click("#open").await?;
    assert_eq!(value_of(&s.page, "window.got ?? null").await?, json!(["undefined", true, "RULE"]));
    let recs = eventually(LIMIT, "the new tab's three records", || async {
        let tabs = s.agent.ok("observe", json!({"what": "tabs"})).await?;
        let Some(id) = tabs["tabs"].as_array().into_iter().flatten().map(|t| t["id"].clone()).find(|id| *id != mine)
        else {
            return Ok(None);
        };
        let v = s.agent.ok("observe", json!({"what": "dialogs", "tab_id": id})).await?;
        let recs: Vec<Value> = v["recent_dialogs"].as_array().into_iter().flatten().cloned().collect();
        Ok((recs.len() >= 3).then_some(recs))
    })
    .await?;
    for r in &recs {
        assert_eq!((r["decided_by"].as_str(), r["rule_id"].is_null()), (Some("rule"), false), "{r}");
    }
    Ok(())
}
