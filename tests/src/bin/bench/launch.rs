//! `unmodal browser` cold starts: from the command to the extension connected to its host
//! (the "Unmodal is connected" line), each in an empty home; beside the same browser started
//! without the extension, to its DevTools port, in turns in the same run.

use super::{row, stats};
use anyhow::{Context, Result, bail};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use unmodal_e2e::artifacts::Artifacts;
use unmodal_e2e::browser::chromium_binary;

const STARTS: usize = 10;
const LIMIT: Duration = Duration::from_secs(60);

/// Milliseconds from `unmodal browser --headless --port 0` to its "connected" line.
async fn ours(exe: &std::path::Path) -> Result<f64> {
    let home = tempfile::tempdir()?;
    let t0 = Instant::now();
    let mut child = tokio::process::Command::new(exe)
        .args(["browser", "--headless", "--port", "0"])
        .env("HOME", home.path())
        .env_remove("UNMODAL_DATA_DIR")
        .env("UNMODAL_RUNTIME_DIR", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let connected = async {
        while let Some(l) = lines.next_line().await? {
            if l.starts_with("Unmodal is connected") {
                return Ok(t0.elapsed().as_secs_f64() * 1000.0);
            }
            if l.starts_with("The extension has not reached") {
                bail!("{l}");
            }
        }
        bail!("`unmodal browser` ended early")
    };
    let ms = tokio::time::timeout(LIMIT, connected).await??;
    std::process::Command::new("kill").args(["-INT", &child.id().unwrap_or(0).to_string()]).status()?;
    let _ = tokio::time::timeout(LIMIT, child.wait()).await;
    Ok(ms)
}

/// Milliseconds from starting the same browser without the extension to its DevTools port.
async fn plain() -> Result<f64> {
    let profile = tempfile::tempdir()?;
    let t0 = Instant::now();
    let mut child = tokio::process::Command::new(chromium_binary()?)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    // The browser says so on stderr the moment its port is open: no polling to blur the clock.
    let mut lines = BufReader::new(child.stderr.take().context("stderr")?).lines();
    let listening = async {
        while let Some(l) = lines.next_line().await? {
            if l.starts_with("DevTools listening on") {
                return Ok(());
            }
        }
        bail!("the plain browser ended without opening a DevTools port")
    };
    tokio::time::timeout(LIMIT, listening).await.context("the plain browser opened no DevTools port")??;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    child.kill().await?;
    Ok(ms)
}

pub async fn rows() -> Result<()> {
    let exe = Artifacts::find()?.host;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..STARTS {
        // In turns, each going first every other start.
        if i % 2 == 0 {
            with.push(ours(&exe).await?);
            without.push(plain().await?);
        } else {
            without.push(plain().await?);
            with.push(ours(&exe).await?);
        }
    }
    let ratios: Vec<f64> = with.iter().zip(&without).map(|(a, b)| a / b).collect();
    println!("`unmodal browser` cold start, empty home ({STARTS} starts, in turns):");
    row("to the extension connected to its host", &stats(with), "ms");
    row("baseline: same browser, no extension, to port", &stats(without), "ms");
    row("ratio (ours / baseline, per pair)", &stats(ratios), "x");
    Ok(())
}
