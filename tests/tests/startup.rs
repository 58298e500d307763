//! A browser just started: the page on its command line calls `confirm()` as its first
//! script, while the browser is still loading the extension. That dialog must reach the
//! agent.
//!
//! The browser begins that navigation before the extension is loaded, so its document may
//! commit before the content scripts reach the renderer and run without them (stalled.js).
//! With the real build that was about 1 launch in 100 in the suite. The test loads content
//! scripts that take long to reach the renderer (`slow_scripts`), which widens the window:
//! the build before the fix lost 4 launches of 10 that way in one run, though none in
//! later runs on a machine loaded differently, so a pass here is evidence, not proof.

use serde_json::json;
use std::time::Duration;
use unmodal_e2e::slow_scripts::slow_scripts_copy;
use unmodal_e2e::{Agent, Browser, Options, WebServer};

const LAUNCHES: usize = 10;

/// A lost report never arrives, so the limit is generous: a loaded machine may take
/// seconds to start a browser's host, and a document that ran without the content scripts
/// is loaded again only after 3 s of silence.
const REPORT_LIMIT: Duration = Duration::from_secs(30);

/// Whether the first tab's page is held by a dialog (it runs no script), or what it is if
/// it runs: with a dialog showing but unrecorded, the report went missing; with none, the
/// page never showed it. (`Runtime.enable` and `Page.enable` get no answer while a dialog
/// shows, and `Page.handleJavaScriptDialog` sees none without them: a bare evaluate it is.)
async fn page_state(browser: &Browser) -> anyhow::Result<String> {
    let cdp = &browser.cdp;
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let list = targets["targetInfos"].as_array().cloned().unwrap_or_default();
    let id = list.iter().find(|t| t["type"] == "page").map(|t| t["targetId"].clone()).unwrap_or_default();
    let attached = cdp.call(None, "Target.attachToTarget", json!({"targetId": id, "flatten": true})).await?;
    let session = attached["sessionId"].as_str().unwrap_or_default().to_owned();
    let expr = "JSON.stringify([location.href, document.title, performance.getEntriesByType('navigation').map((e) => e.type)])";
    let eval = cdp.call(Some(&session), "Runtime.evaluate", json!({"expression": expr, "returnByValue": true}));
    Ok(match tokio::time::timeout(Duration::from_secs(2), eval).await {
        Err(_) => "blocked: a dialog shows".into(),
        Ok(r) => format!("runs: {}", r?["result"]["value"]),
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn the_first_dialog_after_the_browser_starts_is_never_lost() -> anyhow::Result<()> {
    let web = WebServer::start()?;
    let url = web.page("/first", "<!doctype html><title>first</title><script>confirm('Right at start?')</script>", &[]);
    let slow = slow_scripts_copy(&unmodal_e2e::artifacts::Artifacts::find()?.extension)?;
    let (mut lost, mut slowest) = (Vec::new(), Duration::ZERO);
    for n in 1..=LAUNCHES {
        let opts =
            Options { start_url: Some(url.clone()), extension_dir: Some(slow.path().into()), ..Options::default() };
        let browser = Browser::launch(opts).await?;
        let agent = Agent::start(&browser.art.host, &browser.runtime).await?;
        match agent.dialog_listed_within(&url, "Right at start?", REPORT_LIMIT).await {
            Some(t) => slowest = slowest.max(t),
            None => {
                // What the host and the browser knew, for whoever looks into a loss.
                let tabs = agent.call("observe", json!({"what": "tabs"})).await;
                let page = page_state(&browser).await;
                eprintln!(
                    "launch {n}: lost; observe tabs: {tabs:?}\nthe page: {page:?}\nbrowser and \
host log:\n{}",
                    browser.log_tail()
                );
                lost.push(n)
            }
        }
        agent.close().await?;
    }
    eprintln!("first dialog after start: {} of {LAUNCHES} lost, slowest reported after {slowest:?}", lost.len());
    assert_eq!(lost, Vec::<usize>::new(), "launches whose first dialog never reached the host (of {LAUNCHES})");
    Ok(())
}
