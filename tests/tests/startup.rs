//! A browser just started: the page it opens first calls `confirm()` before the extension
//! has reached its host. That dialog must still reach the agent.

use serde_json::json;
use std::time::{Duration, Instant};
use unmodal_e2e::{Agent, Browser, Options, WebServer, eventually};

const LAUNCHES: usize = 20;

/// How long after the agent connected the host listed a dialog with `message` in the tab
/// showing `url`; `None` if it never did. A lost report never arrives, so the limit is
/// generous: a loaded machine may take seconds to start a browser's host.
async fn dialog_reported(agent: &Agent, url: &str, message: &str) -> Option<Duration> {
    let start = Instant::now();
    let seen = eventually(Duration::from_secs(30), "the dialog reaching the host", || async {
        let tabs = agent.ok("observe", json!({"what": "tabs"})).await?;
        let Some(id) = tabs["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).map(|t| t["id"].clone())
        else {
            return Ok(None);
        };
        let d = agent.ok("observe", json!({"what": "dialogs", "tab_id": id})).await?;
        Ok(d["recent_dialogs"].as_array().into_iter().flatten().any(|r| r["message"] == message).then_some(()))
    });
    seen.await.ok().map(|()| start.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_dialog_after_the_browser_starts_is_never_lost() -> anyhow::Result<()> {
    let web = WebServer::start()?;
    let url = web.page("/first", "<!doctype html><title>first</title><script>confirm('Right at start?')</script>", &[]);
    let (mut lost, mut slowest) = (Vec::new(), Duration::ZERO);
    for n in 1..=LAUNCHES {
        let browser = Browser::launch(Options { start_url: Some(url.clone()), ..Options::default() }).await?;
        let agent = Agent::start(&browser.art.host, &browser.runtime).await?;
        match dialog_reported(&agent, &url, "Right at start?").await {
            Some(t) => slowest = slowest.max(t),
            None => {
                // What the host and the browser knew, for whoever looks into a loss.
                let tabs = agent.call("observe", json!({"what": "tabs"})).await;
                eprintln!("launch {n}: lost; observe tabs: {tabs:?}\nbrowser and host log:\n{}", browser.log_tail());
                lost.push(n)
            }
        }
        agent.close().await?;
    }
    eprintln!("first dialog after start: {} of {LAUNCHES} lost, slowest reported after {slowest:?}", lost.len());
    assert_eq!(lost, Vec::<usize>::new(), "launches whose first dialog never reached the host (of {LAUNCHES})");
    Ok(())
}
