//! `unmodal call TOOL 'JSON'`: one MCP tool call from a shell, as docs/frameworks.md shows
//! it. Locally it reaches the browsers' hosts; a remote browser's session lives in an
//! `unmodal mcp --cdp-endpoint` process, which `--serve` keeps for scripts. Exit 0 with the
//! answer, 1 with the tool's structured error, 2 when no tool was reached. It has no MCP
//! roots (only files.allowed_dirs of config.json let a file through) and never switches the
//! pilot.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::frameworks::call_with;
use unmodal_e2e::remote::RemoteBrowser;
use unmodal_e2e::{Session, WebServer, eventually};

const LIMIT: Duration = Duration::from_secs(15);

const PAGE: &str = "<!doctype html><title>drafts</title>\
    <button id=delete onclick=\"document.querySelector('#out').textContent = 'confirm: ' + confirm('Delete the draft?')\">Delete</button>\
    <p id=out>none</p>";

/// `unmodal call TOOL ARGS` with this runtime directory (and `env`).
async fn call(runtime: &Path, tool: &str, args: &str, env: &[(&str, &Path)]) -> Result<(i32, Value)> {
    let mut cmd = tokio::process::Command::new(Artifacts::find()?.host);
    cmd.args(["call", tool, args]).env("UNMODAL_RUNTIME_DIR", runtime).env_remove("UNMODAL_CONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    call_with(cmd).await
}

async fn ok(runtime: &Path, tool: &str, args: Value) -> Result<Value> {
    match call(runtime, tool, &args.to_string(), &[]).await? {
        (0, v) => Ok(v),
        (code, v) => anyhow::bail!("`unmodal call {tool} '{args}'` exited {code}: {v}"),
    }
}

async fn tab_of(runtime: &Path, url: &str) -> Result<Value> {
    eventually(LIMIT, "the tab listed", || async {
        let v = ok(runtime, "observe", json!({"what": "tabs"})).await?;
        Ok(v["tabs"].as_array().into_iter().flatten().find(|t| t["url"] == url).map(|t| t["id"].clone()))
    })
    .await
}

/// What a shell script meets: usage errors exit 2, tool errors exit 1 with the structured
/// error, a file outside files.allowed_dirs is refused (no roots) and one inside is taken,
/// and no call switches the pilot.
#[tokio::test(flavor = "multi_thread")]
async fn exit_codes_files_and_the_pilot_locally() -> Result<()> {
    let s = Session::start().await?;
    let url = s.open("/drafts", PAGE, &[]).await?;
    let run = s.browser.runtime.clone();

    let (code, v) = call(&run, "pilot_switch", "{}", &[]).await?;
    assert_eq!((code, v["error"]["code"].as_str()), (2, Some("unknown_tool")), "{v}");
    let (code, v) = call(&run, "observe", "what: dialogs", &[]).await?;
    assert_eq!((code, v["error"]["code"].as_str()), (2, Some("invalid_params")), "{v}");
    let (code, v) =
        call(&run, "interact", r#"{"action": "handle_dialog", "setup": true, "dialog_type": "nope"}"#, &[]).await?;
    assert_eq!(
        (code, v["error"]["code"].as_str(), v["error"]["param"].as_str()),
        (1, Some("invalid_params"), Some("dialog_type")),
        "{v}"
    );
    let (code, v) =
        call(&run, "interact", r#"{"action": "handle_dialog", "dialog_id": 999, "accept": true}"#, &[]).await?;
    assert_eq!(code, 1, "{v}");
    ensure!(v["error"]["code"].is_string() && v["error"]["message"].is_string(), "{v}");

    // The pilot is off (only a person switches it): a rule can be set, the pilot stays off.
    let tab = tab_of(&run, &url).await?;
    ok(
        &run,
        "interact",
        json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true, "tab_id": tab}),
    )
    .await?;
    let tabs = ok(&run, "observe", json!({"what": "tabs"})).await?;
    assert_eq!(tabs["pilot_enabled"], false, "{tabs}");

    // Files: none allowed without config.json's allowed_dirs; inside them, taken.
    let work = tempfile::tempdir()?;
    let cv = work.path().join("cv.txt");
    std::fs::write(&cv, "cv")?;
    let rule =
        json!({"action": "handle_dialog", "setup": true, "dialog_type": "file_chooser", "files": [cv], "tab_id": tab});
    let (code, v) = call(&run, "interact", &rule.to_string(), &[]).await?;
    assert_eq!((code, v["error"]["param"].as_str()), (1, Some("files")), "{v}");
    ensure!(v["error"]["message"].as_str().is_some_and(|m| m.contains("files.allowed_dirs")), "{v}");
    let config = work.path().join("config.json");
    std::fs::write(&config, json!({"files": {"allowed_dirs": [work.path()]}}).to_string())?;
    let (code, v) = call(&run, "interact", &rule.to_string(), &[("UNMODAL_CONFIG", &config)]).await?;
    assert_eq!((code, v["status"].as_str()), (0, Some("configured")), "{v}");

    // --serve is for a remote browser's session only.
    let out = tokio::process::Command::new(Artifacts::find()?.host)
        .args(["mcp", "--serve"])
        .env("UNMODAL_RUNTIME_DIR", &run)
        .env_remove("UNMODAL_CDP_ENDPOINT")
        .stdin(Stdio::null())
        .output()
        .await?;
    let said = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success() && said.contains("--cdp-endpoint"), "`unmodal mcp --serve`: {said}");
    Ok(())
}

/// `unmodal mcp --cdp-endpoint URL --serve`: a remote browser's session kept for scripts.
/// `unmodal call` sets a rule there, the page's confirm() gets its answer, the record reads
/// back; once the process ends, calls say no browser is connected.
#[tokio::test(flavor = "multi_thread")]
async fn a_remote_session_served_for_scripts() -> Result<()> {
    let browser = RemoteBrowser::launch().await?;
    let art = Artifacts::find()?;
    let runtime = unmodal_e2e::private_dir("unmodal-call-rt-")?;
    let data = tempfile::tempdir()?;
    let run = runtime.path().to_owned();
    let mut serve = tokio::process::Command::new(&art.host)
        .args(["mcp", "--cdp-endpoint", &browser.ws_url(), "--extension-id", browser.extension_id(), "--serve"])
        .env("UNMODAL_RUNTIME_DIR", &run)
        .env("UNMODAL_DATA_DIR", data.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(serve.stdout.take().context("stdout")?).lines();
    let first =
        tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.context("no line from --serve")??;
    let first = first.unwrap_or_default();
    ensure!(first.starts_with("serving ") && first.contains("for `unmodal call`"), "--serve said: {first}");
    ensure!(!first.contains(browser.token()), "the token shows: {first}");

    let pilot =
        std::process::Command::new(&art.host).args(["pilot", "on"]).env("UNMODAL_RUNTIME_DIR", &run).output()?;
    ensure!(String::from_utf8_lossy(&pilot.stdout).contains("AI Web Pilot is on"), "{pilot:?}");
    let web = WebServer::start()?;
    let url = web.page("/drafts", PAGE, &[]);
    let page = browser.new_page(&url).await?;
    let tab = tab_of(&run, &url).await?;
    let set = ok(&run, "interact", json!({"action": "handle_dialog", "setup": true, "dialog_type": "confirm", "accept": true, "once": false, "tab_id": tab})).await?;
    assert_eq!(set["status"], "configured", "{set}");
    page.click("#delete").await?;
    eventually(LIMIT, "the page getting the rule's answer", || async {
        Ok((page.eval("document.querySelector('#out').textContent").await? == json!("confirm: true")).then_some(()))
    })
    .await?;
    let rec = eventually(LIMIT, "the record", || async {
        let d = ok(&run, "observe", json!({"what": "dialogs", "tab_id": tab})).await?;
        Ok(d["recent_dialogs"].as_array().into_iter().flatten().find(|r| r["message"] == "Delete the draft?").cloned())
    })
    .await?;
    assert_eq!((rec["decided_by"].as_str(), rec["accepted"].as_bool()), (Some("rule"), Some(true)), "{rec}");

    let pid = serve.id().context("the --serve process")?;
    // SAFETY: a plain signal to our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = tokio::time::timeout(LIMIT, serve.wait()).await.context("--serve did not end on SIGTERM")??;
    ensure!(status.success(), "--serve ended with {status}");
    let (code, v) = call(&run, "observe", r#"{"what": "tabs"}"#, &[]).await?;
    assert_eq!((code, v["error"]["code"].as_str()), (1, Some("extension_not_connected")), "{v}");
    Ok(())
}

/// Every `unmodal call TOOL '{...}'` in docs/frameworks.md, run with no browser: each gets
/// past the MCP server's checks (the tool exists, the arguments are valid) and fails only
/// for want of a browser.
#[tokio::test]
async fn every_unmodal_call_in_the_docs_passes_the_servers_checks() -> Result<()> {
    let doc = std::fs::read_to_string(unmodal_e2e::artifacts::repo_root().join("docs/frameworks.md"))?;
    let empty = unmodal_e2e::private_dir("unmodal-call-docs-")?;
    let mut checked = 0;
    for line in doc.lines() {
        let Some(rest) = line.split("unmodal call ").nth(1) else { continue };
        let Some((tool, quoted)) = rest.split_once(" '") else { continue };
        let Some(args) = quoted.split_once('\'').map(|(a, _)| a) else { continue };
        if tool.starts_with('<') {
            continue;
        }
        let (code, v) = call(empty.path(), tool, args, &[]).await?;
        assert_eq!((code, v["error"]["code"].as_str()), (1, Some("extension_not_connected")), "{line}: {v}");
        checked += 1;
    }
    ensure!(checked >= 8, "only {checked} `unmodal call` lines found in docs/frameworks.md");
    Ok(())
}
