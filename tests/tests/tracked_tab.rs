//! The tracked tab (the default of every agent call) follows the tab the agent works in,
//! not only "the active tab of the last focused window": in a browser driven over CDP the
//! driver may work in a tab it never activates.

use anyhow::Result;
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::page::Page;
use unmodal_e2e::{Session, eventually};

const LIMIT: Duration = Duration::from_secs(10);

async fn tracked(s: &Session) -> Result<(Option<i64>, Value)> {
    let v = s.agent.ok("observe", json!({"what": "tabs"})).await?;
    Ok((v["tracked_tab"].as_i64(), v))
}

async fn wait_tracked(s: &Session, id: i64, what: &str) -> Result<Value> {
    eventually(LIMIT, what, || async {
        let (t, v) = tracked(s).await?;
        Ok((t == Some(id)).then_some(v))
    })
    .await
}

/// A tab made in the background, as a driver opens one to work in.
async fn background_tab(s: &Session) -> Result<Page> {
    let t = s.browser.cdp.call(None, "Target.createTarget", json!({"url": "about:blank", "background": true})).await?;
    let id = t["targetId"].as_str().unwrap_or_default().to_owned();
    Page::attach(s.browser.cdp.clone(), id).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tab_a_driver_navigates_or_clicks_in_becomes_the_tracked_tab() -> Result<()> {
    let s = Session::start().await?;
    let first = s.open("/first", "<!doctype html><title>first</title><button id=b>here</button>", &[]).await?;
    let first_id = s.agent.wait_for_tab_listed(&first).await?;

    // The driver works in a tab it never brings to the front.
    let other = background_tab(&s).await?;
    let second = s.web.page("/second", "<!doctype html><title>second</title><button id=b>there</button>", &[]);
    other.goto(&second).await?;
    let second_id = s.agent.wait_for_tab_listed(&second).await?;
    let v = wait_tracked(&s, second_id, "the navigated tab becoming the tracked tab").await?;
    let active: Vec<i64> = v["tabs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["active"] == true)
        .filter_map(|t| t["id"].as_i64())
        .collect();
    assert_eq!(active, vec![first_id], "the other tab stayed in the background: {v}");
    // Every answer names it.
    let d = s.dialogs().await?;
    assert_eq!(d["tab"]["id"].as_i64().or(d["tab_id"].as_i64()), Some(second_id), "{d}");

    // A click (trusted input) in the first tab brings the tracking back, still without
    // activating anything.
    s.page.click("#b").await?;
    wait_tracked(&s, first_id, "the clicked tab becoming the tracked tab").await?;
    // A page's own redirect is not the agent working there.
    other.eval("setTimeout(() => location.replace(location.href + '?moved'), 0); 0").await?;
    s.agent.wait_for_tab_listed(&format!("{second}?moved")).await?;
    assert_eq!(tracked(&s).await?.0, Some(first_id), "a client redirect must not take the tracking");
    Ok(())
}
