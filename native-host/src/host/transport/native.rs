//! Native messaging: Chrome started this process and speaks length-prefixed JSON on its
//! stdin and stdout (`frame.rs`).

use super::{Inbox, Outbox};
use crate::frame;
use anyhow::{Context, Result};

/// Writes the outbox to stdout until the browser stops reading.
pub async fn write(mut outbox: Outbox) {
    let mut out = tokio::io::stdout();
    while let Some(msg) = outbox.recv().await {
        let bytes = match serde_json::to_vec(&msg) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "message to the browser not encodable; dropped");
                continue;
            }
        };
        match frame::write(&mut out, &bytes).await {
            Ok(()) => {}
            Err(frame::FrameError::OutgoingTooLarge(n)) => {
                tracing::error!(bytes = n, "message to the browser dropped")
            }
            Err(e) => {
                tracing::info!(error = %e, "browser stopped reading");
                return;
            }
        }
    }
}

/// Reads stdin until the browser closes the port. Bad frames are logged and skipped, never
/// fatal. Runs on a thread of its own: a held dialog goes from the pipe into the state with
/// no hand-over between threads (an agent beside a CDP driver asks for it as soon as the
/// driver saw it).
pub fn read(inbox: &Inbox) -> Result<()> {
    let mut input = std::io::BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    loop {
        let bytes = match frame::read_blocking(&mut input) {
            Ok(Some(b)) => b,
            Ok(None) => {
                tracing::info!("browser closed the port");
                return Ok(());
            }
            Err(frame::FrameError::TooLarge(n)) => {
                tracing::warn!(bytes = n, "oversize frame from the browser skipped");
                continue;
            }
            Err(e) => return Err(e).context("reading from the browser"),
        };
        inbox.frame(&bytes);
    }
}
