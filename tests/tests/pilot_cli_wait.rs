//! `unmodal pilot on|off|status` typed while a browser starts: it waits (saying so) for the
//! extension to reach its host instead of failing with "not connected", and gives up after
//! its limit saying what to check.

use anyhow::{Context, Result, ensure};
use serde_json::json;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use unmodal_e2e::agent::Agent;
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::browser::{self, Browser, Options};

/// The CLI's own limits (native-host/src/pilot_cli.rs), and slack for a busy machine.
const CONNECT_WAIT: Duration = Duration::from_secs(20);
const NO_BROWSER_WAIT: Duration = Duration::from_secs(2);
const SLACK: Duration = Duration::from_secs(5);

/// `unmodal pilot <args>` against the hosts in `runtime`, started now.
fn pilot(host: &Path, runtime: &Path, args: &[&str]) -> Result<tokio::process::Child> {
    tokio::process::Command::new(host)
        .arg("pilot")
        .args(args)
        .env("UNMODAL_RUNTIME_DIR", runtime)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting `unmodal pilot`")
}

/// Its output once it ended, and how long it took; an error if it outlives `limit`.
async fn ended(child: tokio::process::Child, started: Instant, limit: Duration) -> Result<(Output, Duration)> {
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .with_context(|| format!("`unmodal pilot` still running after {limit:?}"))??;
    Ok((out, started.elapsed()))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn pilot_on_typed_as_the_browser_starts_waits_for_it() -> Result<()> {
    // The test's browser slot first, so the launch right after the command never queues
    // behind other tests while the command waits.
    let _slot = browser::slot().await;
    let art = Artifacts::find()?;
    let runtime = unmodal_e2e::private_dir("unmodal-rt-")?;
    let started = Instant::now();
    let cli = pilot(&art.host, runtime.path(), &["on"])?;
    let b = Browser::launch(Options { runtime: Some(runtime.path().to_owned()), ..Default::default() }).await?;
    let launched = started.elapsed();
    let (out, took) = ended(cli, started, CONNECT_WAIT + SLACK).await?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    ensure!(out.status.success(), "`unmodal pilot on` failed: {stdout}{stderr}");
    ensure!(stderr.contains("waiting up to"), "it did not say it waits: {stderr:?}");
    ensure!(stdout.contains("AI Web Pilot is on") && !stdout.contains("not confirmed"), "{stdout}");
    eprintln!("browser launched in {launched:?}; `unmodal pilot on` typed with it returned after {took:?}");
    let agent = Agent::start(&art.host, &b.runtime).await?;
    let tabs = agent.ok("observe", json!({"what": "tabs"})).await?;
    ensure!(tabs["pilot_enabled"] == true, "{tabs}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn with_no_browser_it_fails_at_once_saying_what_to_check() -> Result<()> {
    let art = Artifacts::find()?;
    let (runtime, profile) = (unmodal_e2e::private_dir("unmodal-rt-")?, tempfile::tempdir()?);
    let dir = profile.path().to_str().context("a UTF-8 temp path")?;
    let started = Instant::now();
    let cli = pilot(&art.host, runtime.path(), &["on", "--user-data-dir", dir])?;
    let (out, took) = ended(cli, started, NO_BROWSER_WAIT + SLACK).await?;
    let stderr = text(&out.stderr);
    ensure!(!out.status.success(), "{stderr}");
    ensure!(
        stderr.contains("no browser with the Unmodal extension runs with the profile")
            && stderr.contains(dir)
            && stderr.contains("unmodal doctor"),
        "{stderr}"
    );
    ensure!(took < CONNECT_WAIT, "no browser runs there: only the short wait, took {took:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_browser_whose_extension_never_connects_is_named_after_the_wait() -> Result<()> {
    let b = Browser::launch(Options { extension: false, ..Default::default() }).await?;
    let runtime = unmodal_e2e::private_dir("unmodal-rt-")?;
    let dir = b.profile.path().to_str().context("a UTF-8 temp path")?;
    let started = Instant::now();
    let cli = pilot(&b.art.host, runtime.path(), &["status", "--user-data-dir", dir])?;
    let (out, took) = ended(cli, started, CONNECT_WAIT + SLACK).await?;
    let stderr = text(&out.stderr);
    ensure!(!out.status.success(), "{stderr}");
    ensure!(stderr.contains("waiting up to 20 s"), "{stderr}");
    ensure!(
        stderr.contains("runs (pid")
            && stderr.contains("did not reach the host within 20 s")
            && stderr.contains("chrome://extensions")
            && stderr.contains("unmodal doctor"),
        "{stderr}"
    );
    ensure!(took >= CONNECT_WAIT, "gave up after {took:?}, before its limit");
    Ok(())
}
