//! `unmodal browser …` run as a person runs it: started, and read until it says the browser
//! is up (its endpoint printed, Unmodal connected).

use anyhow::{Context, Result, bail};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A started `unmodal browser`: its process, its DevTools port, and what it printed.
pub struct Started {
    pub child: tokio::process::Child,
    pub port: u16,
    pub printed: String,
}

/// Spawns `cmd` (an `unmodal browser …` command) and reads its output until "Ctrl-C closes
/// the browser", for at most `limit`; on failure the error carries all it printed.
pub async fn unmodal_browser(mut cmd: tokio::process::Command, limit: Duration) -> Result<Started> {
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
    let mut printed = String::new();
    let read = async {
        while let Some(line) = lines.next_line().await? {
            printed.push_str(&line);
            printed.push('\n');
            if line.starts_with("Ctrl-C closes the browser") {
                return anyhow::Ok(());
            }
        }
        bail!("`unmodal browser` ended early")
    };
    if let Err(e) = tokio::time::timeout(limit, read).await.map_err(anyhow::Error::from).and_then(|r| r) {
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            use tokio::io::AsyncReadExt;
            let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut err)).await;
        }
        bail!("{e:#}; it printed:\n{printed}{err}");
    }
    let port = printed
        .lines()
        .find_map(|l| l.strip_prefix("DevTools endpoint: http://127.0.0.1:"))
        .and_then(|p| p.trim().parse().ok())
        .with_context(|| format!("no endpoint in:\n{printed}"))?;
    Ok(Started { child, port, printed })
}
