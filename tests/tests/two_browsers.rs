//! Two browsers at once: each starts its own host; one agent sees the tabs of both and
//! `tab_id` reaches the right one.

use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::browser::{Browser, Options};
use unmodal_e2e::web::WebServer;
use unmodal_e2e::{Agent, eventually};

#[tokio::test(flavor = "multi_thread")]
async fn one_agent_two_browsers() -> anyhow::Result<()> {
    let run = unmodal_e2e::private_dir("unmodal-rt-")?;
    let opts = || Options { runtime: Some(run.path().to_path_buf()), ..Options::default() };
    let (a, b) = (Browser::launch(opts()).await?, Browser::launch(opts()).await?);
    let web = WebServer::start()?;
    let page = "<!doctype html><title>two</title>";
    let (url_a, url_b) = (web.page("/a", page, &[]), web.page("/b", page, &[]));
    let (pa, pb) = (a.first_page().await?, b.first_page().await?);
    pa.goto(&url_a).await?;
    pb.goto(&url_b).await?;
    let agent = Agent::start(&a.art.host, run.path()).await?;

    // Both hosts answer; the tab list covers both browsers.
    let (v, tab_a, tab_b) = eventually(Duration::from_secs(15), "the tabs of both browsers listed", || async {
        let v = agent.ok("observe", json!({"what": "tabs"})).await?;
        let find = |url: &str| v["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).cloned();
        Ok(match (find(&url_a), find(&url_b)) {
            (Some(x), Some(y)) => Some((v.clone(), x, y)),
            _ => None,
        })
    })
    .await?;
    assert_eq!(v["browsers"].as_array().map(Vec::len), Some(2), "{v}");
    assert_ne!(tab_a["browser"]["host_pid"], tab_b["browser"]["host_pid"]);
    let status = |t: &Value| json!({"action": "handle_dialog", "status": true, "tab_id": t["id"]});
    assert_eq!(agent.ok("interact", status(&tab_a)).await?["tab"]["url"], url_a.as_str());
    assert_eq!(agent.ok("interact", status(&tab_b)).await?["tab"]["url"], url_b.as_str());
    // A rule set through tab_id lands in that browser only (pilot off there: stored, flagged).
    let set = agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "alert", "tab_id": tab_b["id"]}),
        )
        .await?;
    // Kept in that browser's host; with the pilot off nothing reaches the browser (SECURITY.md).
    assert_eq!(
        (set["tab"]["url"].as_str(), set["rules_in_force"].as_bool(), set["pilot_enabled"].as_bool()),
        (Some(url_b.as_str()), Some(false), Some(false)),
        "{set}"
    );
    assert_eq!(agent.ok("interact", status(&tab_a)).await?["auto_responses"], json!([]));
    assert_eq!(agent.ok("interact", status(&tab_b)).await?["auto_responses"].as_array().map(Vec::len), Some(1));
    agent.close().await
}
