//! Downloads beside a driver that took them over (issue 52 item 5). Playwright's
//! `connectOverCDP` with its defaults sets `Browser.setDownloadBehavior {allowAndName}`: the
//! browser saves each download GUID-named into the driver's directory and the extension
//! hears nothing. The host's own DevTools connection still sees it: the download is recorded,
//! a rule's `save_dir` gets a copy, and the driver keeps its file. A real Playwright
//! (`tests/peers/download-driver.cjs`), a real `unmodal` and a real MCP client; locally (a
//! browser with a DevTools port, as `unmodal mcp --browser` starts one) and remotely (behind
//! the WS-only proxy).

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::bluetooth::answerer_hook;
use unmodal_e2e::browser::Options;
use unmodal_e2e::{Driver, Peer, Session, eventually};

use crate::remote::{Remote, Via};

const LIMIT: Duration = Duration::from_secs(30);
const BODY: &str = "id,total\n1,42\n";
const PAGE: &str = "<!doctype html><title>dl</title><a id=get href=/report.csv>get</a>";

/// Playwright, connected to `endpoint` with its defaults, clicks `#get` in the page at
/// `url` and has the download's file: what it says of it, and the process (which keeps
/// the driver connected and its file in place until dropped).
async fn driver_downloads(endpoint: &str, url: &str) -> Result<(Value, tokio::process::Child)> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/download-driver.cjs");
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args([endpoint, url, "#get"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("node")?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let line = tokio::time::timeout(LIMIT, lines.next_line()).await.context("the driver's download")??;
    let got: Value = serde_json::from_str(line.as_deref().unwrap_or_default())?;
    ensure!(got["path"].is_string(), "the driver: {got}");
    Ok((got, child))
}

/// The one download record of the agent's view, once it names a path.
async fn recorded(agent: &Agent, tab: Option<i64>) -> Result<Value> {
    eventually(LIMIT, "the download recorded with its path", || async {
        let mut args = json!({"what": "dialogs"});
        if let Some(t) = tab {
            args["tab_id"] = t.into();
        }
        let d = agent.ok("observe", args).await?;
        let recs: Vec<Value> =
            d["recent_dialogs"].as_array().into_iter().flatten().filter(|r| r["type"] == "download").cloned().collect();
        Ok(recs.iter().any(|r| r["path"].is_string() && r["path"] != r["remote_path"]).then_some(recs))
    })
    .await
    .and_then(|recs| {
        ensure!(recs.len() == 1, "recorded once: {recs:?}");
        Ok(recs[0].clone())
    })
}

/// A browser with a DevTools port (the host's own connection hears every download), its
/// downloads going to `browser_dir`, the page `PAGE` with the pilot on, and an agent whose
/// download rule saves into `work`.
struct Local {
    s: Session,
    url: String,
    agent: Agent,
    browser_dir: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Local {
    async fn start() -> Result<Self> {
        let (browser_dir, work) = (tempfile::tempdir()?, tempfile::tempdir()?);
        let prefs = json!({"download": {"default_directory": browser_dir.path()}});
        let s = Session::start_with(Options {
            preferences: Some(prefs),
            env: vec![("UNMODAL_TEST_ANSWERER".into(), "1".into())],
            ..Default::default()
        })
        .await?;
        s.web.page(
            "/report.csv",
            BODY,
            &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment; filename=report.csv")],
        );
        let url = s.open("/dl.html", PAGE, &[]).await?;
        s.enable_pilot().await?;
        let agent = Agent::start_with_roots(&s.browser.art.host, &s.browser.runtime, &[work.path().to_owned()]).await?;
        let rule =
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "save_dir": work.path()});
        agent.ok("interact", rule).await?;
        let watched = answerer_hook(&s.browser.runtime, json!({"op": "downloads_watched"})).await?;
        ensure!(watched["watched"] == true, "the host hears every download: {watched}");
        Ok(Local { s, url, agent, browser_dir, work })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_a_playwright_driver_took_is_recorded_and_copied_into_save_dir() -> Result<()> {
    let Local { s, url, agent, browser_dir, work } = Local::start().await?;
    let endpoint = format!("http://127.0.0.1:{}", s.browser.debugging_port()?);
    let (got, driver) = driver_downloads(&endpoint, &url).await?;
    let r = recorded(&agent, None).await?;
    let copy = work.path().canonicalize()?.join("report.csv");
    ensure!(r["path"].as_str() == copy.to_str(), "copied into save_dir: {r}");
    ensure!(r["decided_by"] == "rule" && r["download_state"] == "complete", "{r}");
    ensure!(r["explanation"].as_str().is_some_and(|e| e.contains("took this browser's downloads")), "{r}");
    ensure!(std::fs::read_to_string(&copy)? == BODY, "the server's bytes");
    let theirs = std::path::PathBuf::from(got["path"].as_str().unwrap_or_default());
    ensure!(std::fs::read_to_string(&theirs)? == BODY, "the driver's file is intact where it expects it: {got}");
    ensure!(crate::downloads::names(browser_dir.path()).is_empty(), "nothing in the browser's own directory");
    drop(driver);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_download_a_playwright_driver_took_in_a_remote_browser_is_copied_here() -> Result<()> {
    let work = tempfile::tempdir()?;
    let r = Remote::start_with_roots(Via::Query, &[work.path().to_owned()]).await?;
    r.pilot_on().await?;
    r.web.page(
        "/report.csv",
        BODY,
        &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment; filename=report.csv")],
    );
    let url = r.web.page("/dl.html", PAGE, &[]);
    let _page = r.browser.new_page(&url).await?;
    let tab = r.tab_of(&url).await?;
    r.agent
        .ok(
            "interact",
            json!({"action": "handle_dialog", "setup": true, "dialog_type": "download", "save_dir": work.path()}),
        )
        .await?;
    let watched = answerer_hook(r.runtime.path(), json!({"op": "downloads_watched"})).await?;
    ensure!(watched["watched"] == true, "the host hears every download: {watched}");
    let (got, driver) = driver_downloads(r.browser.direct_url(), &url).await?;
    let rec = recorded(&r.agent, Some(tab)).await?;
    let copy = work.path().canonicalize()?.join("report.csv");
    ensure!(rec["path"].as_str() == copy.to_str(), "copied into save_dir here: {rec}");
    ensure!(rec["remote_path"] == got["path"], "the driver's file on the browser's machine: {rec} {got}");
    ensure!(std::fs::read_to_string(&copy)? == BODY, "the server's bytes");
    let theirs = std::path::PathBuf::from(got["path"].as_str().unwrap_or_default());
    ensure!(std::fs::read_to_string(&theirs)? == BODY, "the driver's file is intact: {got}");
    drop(driver);
    Ok(())
}

/// An MCP driver that leaves downloads to the browser (`@playwright/mcp` connects with
/// `noDefaults`; chrome-devtools-mcp's Puppeteer sets no download behaviour unless told):
/// its click's download is the extension's, a rule saves it, and the host's own connection,
/// hearing the same download, pairs it with the worker's record instead of recording it
/// again as a driver's.
async fn an_mcp_driver_leaves_downloads_to_unmodal(driver: Driver) -> Result<()> {
    let Local { s, url, agent, browser_dir, work } = Local::start().await?;
    let peer = Peer::start(driver, s.browser.debugging_port()?).await?;
    let r = tokio::time::timeout(LIMIT, peer.click_role(&url, "link", "get")).await.context("the driver's click")??;
    ensure!(!r.is_error, "{driver:?}'s click: {}", r.text);
    let settled = answerer_hook(&s.browser.runtime, json!({"op": "settled"})).await?;
    let first = &settled["download"][0];
    ensure!(first["worker_reported"] == true, "{driver:?} left it to the browser: the worker's record: {settled}");
    let rec = recorded(&agent, None).await?;
    let copy = work.path().canonicalize()?.join("report.csv");
    ensure!(rec["dialog_id"] == first["record"], "the record the host paired it with: {rec} {settled}");
    ensure!(rec["path"].as_str() == copy.to_str() && rec["decided_by"] == "rule", "saved by the rule: {rec}");
    ensure!(rec["explanation"].as_str().is_some_and(|e| !e.contains("took this browser's downloads")), "{rec}");
    ensure!(std::fs::read_to_string(&copy)? == BODY, "the server's bytes");
    ensure!(crate::downloads::names(browser_dir.path()).is_empty(), "moved out of the browser's directory");
    peer.close().await
}

#[tokio::test(flavor = "multi_thread")]
async fn playwright_mcp_leaves_downloads_to_unmodal() -> Result<()> {
    an_mcp_driver_leaves_downloads_to_unmodal(Driver::PlaywrightMcp).await
}

#[tokio::test(flavor = "multi_thread")]
async fn chrome_devtools_mcp_leaves_downloads_to_unmodal() -> Result<()> {
    an_mcp_driver_leaves_downloads_to_unmodal(Driver::ChromeDevtoolsMcp).await
}
