//! The browser's DevTools pipe (`--remote-debugging-pipe`, fds 3 and 4), held for its
//! whole life: Chromium exits when the pipe closes (measured, Chromium 156), so a browser
//! Unmodal started never outlives it, however `unmodal` ends (SIGKILL included). Through it
//! branded Google Chrome (137+ ignores `--load-extension`) gets the extension:
//! `Extensions.loadUnpacked` with `--enable-unsafe-extension-debugging` loads it (our fixed
//! ID, its service worker running) beside the `--remote-debugging-port` for the driver.

use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;
use tokio::process::Command;

/// The largest answer read (the load answers in a few dozen bytes).
const MAX_ANSWER: usize = 64 * 1024;

/// Our ends of the browser's DevTools pipe.
pub struct Pipe {
    to_browser: std::fs::File,
    from_browser: std::fs::File,
}

pub use crate::platform::BrowserEnds;

/// Gives the browser its DevTools pipe where `--remote-debugging-pipe` expects it (Unix:
/// fd 3, it reads, and fd 4, it writes); returns our ends and the browser's. `None` where
/// the OS has no such pipe yet and the extension is not to be loaded through it: the
/// browser then runs unbound to this process.
pub fn attach(cmd: &mut Command, load_extensions: bool) -> Result<Option<(Pipe, BrowserEnds)>> {
    let (to_browser, from_browser, ends) = match crate::platform::devtools_pipe(cmd) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported && !load_extensions => return Ok(None),
        Err(e) => return Err(e).context("making the DevTools pipe"),
    };
    cmd.arg("--remote-debugging-pipe");
    if load_extensions {
        cmd.arg("--enable-unsafe-extension-debugging");
    }
    Ok(Some((Pipe { to_browser, from_browser }, ends)))
}

impl Pipe {
    /// `Browser.close`: the browser closes its windows and exits as if a person closed it
    /// (the only polite way on Windows, which has no signal for it). Not waited for.
    pub fn ask_to_close(&mut self) -> std::io::Result<()> {
        self.to_browser.write_all(b"{\"id\":2,\"method\":\"Browser.close\"}\0")
    }

    /// `Extensions.loadUnpacked`; the ID the browser gave it.
    pub async fn load_unpacked(mut self, dir: &Path, limit: Duration) -> Result<(Self, String)> {
        let call = serde_json::json!({"id": 1, "method": "Extensions.loadUnpacked", "params": {"path": dir}});
        let mut line = serde_json::to_vec(&call)?;
        line.push(0);
        let answer = tokio::task::spawn_blocking(move || -> Result<(Self, Vec<u8>)> {
            self.to_browser.write_all(&line).context("writing to the browser's DevTools pipe")?;
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = self.from_browser.read(&mut buf).context("reading the browser's DevTools pipe")?;
                if n == 0 {
                    bail!("the browser closed its DevTools pipe");
                }
                got.extend_from_slice(&buf[..n]);
                while let Some(end) = got.iter().position(|b| *b == 0) {
                    let msg: Vec<u8> = got.drain(..=end).collect();
                    let v: serde_json::Value = serde_json::from_slice(&msg[..end]).unwrap_or_default();
                    if v["id"] == 1 {
                        return Ok((self, msg[..end].to_vec()));
                    }
                }
                if got.len() > MAX_ANSWER {
                    bail!("the browser's DevTools pipe sent more than {MAX_ANSWER} bytes without an answer");
                }
            }
        });
        let (pipe, raw) = tokio::time::timeout(limit, answer)
            .await
            .context("the browser did not answer Extensions.loadUnpacked in time")???;
        let v: serde_json::Value = serde_json::from_slice(&raw)?;
        match v["result"]["id"].as_str() {
            Some(id) => Ok((pipe, id.to_owned())),
            None => bail!(
                "the browser refused to load the extension: {}",
                v["error"]["message"].as_str().unwrap_or("no reason given")
            ),
        }
    }
}
