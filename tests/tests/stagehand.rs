//! Stagehand 4.4.0 (pinned in tests/peers) attached to `unmodal browser`'s port, no language
//! model: Stagehand has no dialog handling at all, so a click that opens a `confirm()` hangs
//! its session, unless Unmodal answers it. Its own extension's worker opens a WebSocket to
//! the browser: `--remote-allow-origins <its directory>` lets that one origin in, and both
//! extensions work side by side. Rules and records go through `unmodal call`, as the
//! recipe in docs/frameworks.md does it (Stagehand 4.4.0 has no MCP client).

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use unmodal_e2e::frameworks::{StagehandScript, UnmodalBrowser, dialog_open, stagehand_extension_dir};
use unmodal_e2e::{Browser, Options, WebServer, eventually};

const PAGE: &str = "<!doctype html><title>drafts</title>\
    <button id=delete onclick=\"document.querySelector('#out').textContent = 'confirm: ' + confirm('Delete the draft?')\">Delete</button>\
    <p id=out>none</p>";

/// Each Stagehand step that Unmodal keeps from hanging.
const STEP: Duration = Duration::from_secs(30);

async fn stagehand_on(b: &UnmodalBrowser) -> Result<StagehandScript> {
    let s = StagehandScript::start().await?;
    s.ok("connect", json!({"cdpUrl": b.cdp_url()}), STEP).await?;
    Ok(s)
}

fn allow_stagehand() -> String {
    stagehand_extension_dir().display().to_string()
}

async fn out(s: &StagehandScript) -> Result<Value> {
    Ok(s.ok("evaluate", json!({"expression": "document.querySelector('#out').textContent"}), STEP).await?["value"]
        .clone())
}

/// The recipe's start: `unmodal browser` letting Stagehand's extension in, Stagehand on it,
/// the pilot on, and Stagehand at the drafts page (served by the returned server).
async fn at_drafts() -> Result<(UnmodalBrowser, StagehandScript, WebServer)> {
    let b = UnmodalBrowser::start(&["--remote-allow-origins", &allow_stagehand()]).await?;
    let sh = stagehand_on(&b).await?;
    b.pilot_on().await?;
    let web = WebServer::start()?;
    let url = web.page("/drafts", PAGE, &[]);
    sh.ok("goto", json!({"url": url}), STEP).await?;
    Ok((b, sh, web))
}

/// The recipe: `unmodal browser --remote-allow-origins <Stagehand's extension>`, `unmodal
/// pilot on`, a rule through `unmodal call`, then Stagehand's own goto and click. The page
/// gets the rule's answer, the record is there, and Stagehand's extension works beside
/// Unmodal's (its connect and snapshot go through its worker's WebSocket).
#[tokio::test(flavor = "multi_thread")]
async fn a_rule_answers_stagehands_click_and_both_extensions_work() -> Result<()> {
    let (b, sh, _web) = at_drafts().await?;
    let rule = b
        .call_ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": false, "once": false}),
        )
        .await?;
    ensure!(rule["status"] == "configured", "{rule}");
    sh.ok("click", json!({"selector": "#delete"}), STEP).await?;
    assert_eq!(out(&sh).await?, json!("confirm: false"));
    let rec = eventually(STEP, "the dialog recorded", || b.recorded("Delete the draft?")).await?;
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(false)), "{rec}");
    // Stagehand's own extension answers too.
    let snap = sh.ok("snapshot", json!({}), STEP).await?;
    ensure!(snap["text"].as_str().is_some_and(|t| t.contains("Delete")), "Stagehand's snapshot: {snap}");
    Ok(())
}

/// Without `--remote-allow-origins`, Chromium refuses the WebSocket of Stagehand's worker and
/// Stagehand cannot attach: the option is what makes it work.
#[tokio::test(flavor = "multi_thread")]
async fn without_the_origin_stagehand_cannot_attach() -> Result<()> {
    let b = UnmodalBrowser::start(&[]).await?;
    let sh = StagehandScript::start().await?;
    let mut p = sh.send("connect", json!({"cdpUrl": b.cdp_url()})).await?;
    match p.within(STEP).await? {
        Some(Err(e)) => ensure!(e.contains("websocket"), "another failure: {e}"),
        other => anyhow::bail!("Stagehand attached without the origin allowed: {other:?}"),
    }
    Ok(())
}

/// Without Unmodal, the same click hangs: Stagehand's click does not return while the page's
/// `confirm()` is open, and fails only after its own timeout, with the dialog still open.
#[tokio::test(flavor = "multi_thread")]
async fn without_unmodal_the_click_hangs() -> Result<()> {
    let origin = format!("--remote-allow-origins=chrome-extension://{}", stagehand_id());
    let browser = Browser::launch(Options { extension: false, args: vec![origin], ..Options::default() }).await?;
    let port = browser.debugging_port()?;
    let sh = StagehandScript::start().await?;
    sh.ok("connect", json!({"cdpUrl": format!("http://127.0.0.1:{port}")}), STEP).await?;
    let web = WebServer::start()?;
    let url = web.page("/drafts", PAGE, &[]);
    sh.ok("goto", json!({"url": url}), STEP).await?;
    let start = Instant::now();
    let mut click = sh.send("click", json!({"selector": "#delete"})).await?;
    // The dialog is open: the browser announces it to a new DevTools client of the page.
    eventually(STEP, "the confirm() open in the page", || async {
        Ok(dialog_open(&browser, &url).await?.then_some(()))
    })
    .await?;
    let ended = click.within(Duration::from_secs(60)).await?;
    let took = start.elapsed();
    match ended {
        Some(Err(e)) => ensure!(took >= Duration::from_secs(10), "the click failed after {took:?} only: {e}"),
        other => anyhow::bail!("the click returned {other:?} after {took:?} with a confirm() open"),
    }
    eprintln!("stagehand: the click gave up after {took:?}");
    // And the session stays stuck: the page answers Stagehand no more.
    let mut next = sh.send("evaluate", json!({"expression": "document.title"})).await?;
    match next.within(Duration::from_secs(10)).await? {
        None | Some(Err(_)) => {}
        Some(Ok(v)) => anyhow::bail!("the page answered Stagehand again ({v}): the dialog was closed"),
    }
    Ok(())
}

/// Under `must_respond` Unmodal holds the dialog: Stagehand's click waits, the agent reads
/// the dialog and answers it (`unmodal call interact` with its dialog_id), and the click
/// returns with the page holding the agent's answer.
#[tokio::test(flavor = "multi_thread")]
async fn under_must_respond_the_agents_answer_releases_stagehands_click() -> Result<()> {
    let (b, sh, _web) = at_drafts().await?;
    let set =
        b.call_ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 60})).await?;
    ensure!(set["policy"] == "must_respond" || set.to_string().contains("must_respond"), "{set}");
    let mut click = sh.send("click", json!({"selector": "#delete"})).await?;
    let held = eventually(STEP, "the held dialog listed", || async {
        let d = b.call_ok("observe", json!({"what": "dialogs"})).await?;
        Ok(d["pending_dialogs"].as_array().into_iter().flatten().find(|p| p["message"] == "Delete the draft?").cloned())
    })
    .await?;
    ensure!(click.within(Duration::ZERO).await?.is_none(), "the click returned while the dialog was held");
    let answer = b
        .call_ok("interact", json!({"action": "handle_dialog", "dialog_id": held["dialog_id"], "accept": true}))
        .await?;
    ensure!(answer.get("error").is_none(), "{answer}");
    match click.within(STEP).await? {
        Some(Ok(_)) => {}
        other => anyhow::bail!("the click after the answer: {other:?}"),
    }
    assert_eq!(out(&sh).await?, json!("confirm: true"));
    Ok(())
}

/// The ID Chromium gives Stagehand's extension where tests/peers installed it.
fn stagehand_id() -> String {
    let dir = std::fs::canonicalize(stagehand_extension_dir()).unwrap_or_else(|_| stagehand_extension_dir());
    unmodal_e2e::remote::chromium_extension_id(&dir)
}
