//! browser-use 0.13.14 (pinned with hashes in tests/frameworks/requirements.txt, in the venv
//! `cargo xtask test` makes) on `unmodal browser`'s port, no language model. Its popups
//! watchdog accepts every confirm blindly and cannot be switched off by a setting; an Unmodal
//! rule answers in the page first, so the watchdog never sees a dialog. Under `must_respond`
//! the watchdog answers the held dialog within milliseconds, unless the script leaves
//! dialogs to Unmodal (docs/frameworks.md). Its downloads go where it tells the browser
//! unless `downloads_path=''`. Its own `MCPClient` lists and calls Unmodal's tools.

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use unmodal_e2e::frameworks::{UnmodalBrowser, browser_use};
use unmodal_e2e::{WebServer, eventually};

const PAGE: &str = "<!doctype html><title>drafts</title>\
    <button onclick=\"document.querySelector('#out').textContent = 'confirm: ' + confirm('Delete the draft?')\">Delete</button>\
    <p id=out>none</p>";

/// A browser-use script: importing browser-use alone takes 20 s on a busy 2-core machine.
const SCRIPT: Duration = Duration::from_secs(180);

async fn run(b: &UnmodalBrowser, args: &[&str]) -> Result<Value> {
    let (home, run) = (b.home(), b.runtime());
    browser_use("browser_use_check.py", args, &[("HOME", &home), ("UNMODAL_RUNTIME_DIR", &run)], SCRIPT).await
}

async fn with_pilot() -> Result<(UnmodalBrowser, WebServer)> {
    let b = UnmodalBrowser::start(&[]).await?;
    b.pilot_on().await?;
    Ok((b, WebServer::start()?))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_refuses_its_click_and_its_watchdog_never_fires() -> Result<()> {
    let (b, web) = with_pilot().await?;
    let url = web.page("/drafts", PAGE, &[]);
    b.call_ok(
        "interact",
        json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": false, "once": false}),
    )
    .await?;
    let found = run(&b, &["click", &b.cdp_url(), &url]).await?;
    assert_eq!(found["out"], "confirm: false", "{found}");
    assert_eq!(found["closed_popup_messages"], json!([]), "browser-use's watchdog saw a dialog: {found}");
    let rec = eventually(Duration::from_secs(15), "the dialog recorded", || b.recorded("Delete the draft?")).await?;
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(false)), "{rec}");
    Ok(())
}

/// Who wins under `must_respond`: browser-use's watchdog answers the held dialog (accept)
/// within milliseconds, and Unmodal records it closed by someone else; with the watchdog
/// left out (`leave_dialogs_to_unmodal` in the script, as the recipe shows), the dialog
/// waits for the agent, whose answer the page gets.
#[tokio::test(flavor = "multi_thread")]
async fn under_must_respond_its_watchdog_wins_unless_dialogs_are_left_to_unmodal() -> Result<()> {
    let (b, web) = with_pilot().await?;
    let url = web.page("/drafts", PAGE, &[]);
    b.call_ok("configure", json!({"action": "dialog_policy", "policy": "must_respond", "timeout_s": 120})).await?;

    let found = run(&b, &["click", &b.cdp_url(), &url]).await?;
    assert_eq!(found["out"], "confirm: true", "{found}");
    // Its handler is registered twice (the tab's session and the root client): one entry each.
    let popups = found["closed_popup_messages"].as_array().cloned().unwrap_or_default();
    ensure!(!popups.is_empty() && popups.iter().all(|m| m == "[confirm] Delete the draft?"), "{found}");
    let first = eventually(Duration::from_secs(15), "the dialog recorded", || b.recorded("Delete the draft?")).await?;
    assert_eq!((first["closed_by"].as_str(), first["accepted"].as_bool()), (Some("remote"), Some(true)), "{first}");

    let url = web.page("/drafts2", PAGE, &[]);
    let cdp = b.cdp_url();
    let args = ["click", &cdp, &url, "--leave-dialogs-to-unmodal"];
    let script = run(&b, &args);
    let agent = async {
        let held = eventually(SCRIPT, "the held dialog listed", || async {
            let d = b.call_ok("observe", json!({"what": "dialogs"})).await?;
            Ok(d["pending_dialogs"].as_array().into_iter().flatten().find(|p| p["page_url"] == url.as_str()).cloned())
        })
        .await?;
        b.call_ok("interact", json!({"action": "handle_dialog", "dialog_id": held["dialog_id"], "accept": false})).await
    };
    let (found, answered) = tokio::join!(script, agent);
    let (found, answered) = (found?, answered?);
    ensure!(answered["agent_answer_applied"] == true, "{answered}");
    assert_eq!(found["out"], "confirm: false", "{found}");
    assert_eq!(found["closed_popup_messages"], json!([]), "{found}");
    Ok(())
}

const DOWNLOAD: &str =
    "<!doctype html><title>report</title><a href=\"/report.txt\" download>Get the report</a><p id=out>none</p>";

/// browser-use takes the browser's downloads over on connect (`Browser.setDownloadBehavior`
/// allow, into a temporary directory of its own): the file lands there and the extension is
/// not told, but the host sees it on its own DevTools connection and records it as the
/// driver's (`remote`, its path in browser-use's directory). With `downloads_path=''`
/// browser-use leaves downloads to the browser, and Unmodal records the download where the
/// browser saved it.
#[tokio::test(flavor = "multi_thread")]
async fn its_downloads_are_its_own_unless_left_to_the_browser() -> Result<()> {
    let (b, web) = with_pilot().await?;
    web.page("/report.txt", "the report\n", &[("Content-Type", "text/plain")]);
    let url = web.page("/report", DOWNLOAD, &[]);
    let found = run(&b, &["download", &b.cdp_url(), &url]).await?;
    assert_eq!(found["files"], json!(["report.txt"]), "{found}");
    let download = |path: Option<std::path::PathBuf>| {
        let b = &b;
        async move {
            let v = b.call_ok("observe", json!({"what": "dialogs"})).await?;
            let mine = |r: &&Value| {
                r["type"] == "download"
                    && r["download_state"] == "complete"
                    && path.as_ref().is_none_or(|p| r["path"].as_str() == p.to_str())
            };
            Ok(v["recent_dialogs"].as_array().into_iter().flatten().find(mine).cloned())
        }
    };
    let theirs = eventually(Duration::from_secs(30), "browser-use's download recorded", || download(None)).await?;
    ensure!(theirs["closed_by"] == "remote" && theirs["decided_by"] == "remote", "{theirs}");
    let path = theirs["path"].as_str().unwrap_or_default();
    ensure!(path.ends_with("/report.txt") && !path.starts_with(b.home().to_str().unwrap_or("/")), "{theirs}");

    let found = run(&b, &["download", &b.cdp_url(), &url, "--leave-downloads-to-the-browser"]).await?;
    assert_eq!(found["downloads_path"], "", "{found}");
    let saved = b.home().join("Downloads/report.txt");
    let rec = eventually(Duration::from_secs(30), "the download recorded", || download(Some(saved.clone()))).await?;
    ensure!(rec["dialog_id"] != theirs["dialog_id"], "{rec}");
    assert_eq!(std::fs::read_to_string(&saved)?, "the report\n");
    Ok(())
}

/// The agent's MCP set-up in browser-use: its own `MCPClient` on `unmodal mcp` lists the
/// tools, registers them as actions (what `Agent(tools=...)` takes), and an observe and an
/// interact status go through its registry with no model.
#[tokio::test(flavor = "multi_thread")]
async fn its_mcp_client_lists_and_calls_unmodals_tools() -> Result<()> {
    let b = UnmodalBrowser::start(&[]).await?;
    let exe = b.exe.display().to_string();
    let found = run(&b, &["mcp", &exe, "mcp"]).await?;
    let tools = json!(["configure", "execute_javascript", "highlight_element", "interact", "manage_state", "observe"]);
    assert_eq!(found["tools"], tools, "{found}");
    assert_eq!(found["observe"]["error"], Value::Null, "{found}");
    let observed: Value = serde_json::from_str(found["observe"]["content"].as_str().unwrap_or("null"))?;
    ensure!(observed["tabs"].is_array(), "{found}");
    assert_eq!(found["interact"]["error"], Value::Null, "{found}");
    let status: Value = serde_json::from_str(found["interact"]["content"].as_str().unwrap_or("null"))?;
    ensure!(status["pending_dialogs"].is_array(), "{found}");
    Ok(())
}
