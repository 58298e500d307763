//! The profile a browser runs in: who holds it, which DevTools port it opened, whether the
//! extension in it reached its host.

use crate::ipc::{self, Tool};
use crate::paths;
use anyhow::{Result, bail};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::process::Child;

const POLL: Duration = Duration::from_millis(100);

/// The pid of a live browser holding the profile (Chromium's `SingletonLock` is a symlink
/// to `<host>-<pid>`), if any.
pub fn locked_by(profile: &Path) -> Option<u32> {
    let target = std::fs::read_link(profile.join("SingletonLock")).ok()?;
    let pid: u32 = target.to_str()?.rsplit('-').next()?.parse().ok()?;
    (crate::platform::process_exists(pid) == Some(true)).then_some(pid)
}

/// A port the browser could open: Chromium carries on without DevTools when it cannot.
pub fn port_free(port: u16) -> Result<()> {
    match std::net::TcpListener::bind(("127.0.0.1", port)) {
        Ok(_) => Ok(()),
        Err(e) => bail!(
            "port {port} cannot be used ({e}): another program listens there. Pick another with --port N, or \
--port 0 for any free one"
        ),
    }
}

/// The port the browser opened, from the "DevTools listening on" line of its log (the
/// profile's `DevToolsActivePort` is written for port 0 only); an error if the browser
/// exits or does not open one in time.
pub async fn devtools_port(log: &Path, child: &mut Child, limit: Duration) -> Result<u16> {
    let start = Instant::now();
    loop {
        if let Some(port) = listening_port(&std::fs::read_to_string(log).unwrap_or_default()) {
            return Ok(port);
        }
        if let Some(status) = child.try_wait()? {
            bail!("the browser exited at once ({status})");
        }
        if start.elapsed() > limit {
            bail!("the browser opened no DevTools port within {}s", limit.as_secs());
        }
        tokio::time::sleep(POLL).await;
    }
}

fn listening_port(log: &str) -> Option<u16> {
    let rest = log.lines().find_map(|l| l.strip_prefix("DevTools listening on ws://127.0.0.1:"))?;
    rest.split('/').next()?.parse().ok()
}

/// Whether the pilot is on in the browser of `profile`, once its extension reached its
/// host; `None` if none did within `limit`.
pub async fn host_status(profile: &Path, limit: Duration) -> Option<bool> {
    let start = Instant::now();
    let dir = paths::runtime_dir();
    loop {
        let asked = ipc::ask_each(&dir, Tool::PilotSwitch, json!({ "user_data_dir": profile })).await;
        let on = asked.ok().into_iter().flatten().find_map(|(_, r)| r.ok()).map(|s| s["pilot_enabled"] == true);
        if on.is_some() || start.elapsed() >= limit {
            return on;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The end of the browser's log, with the likely fix for a browser that cannot start.
pub fn log_tail(log: &Path, headless: bool) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.contains("dbus")).collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    let hint = if !headless && (text.contains("DISPLAY") || text.contains("X server")) {
        "\nno display to show a window on: add --headless"
    } else {
        ""
    };
    format!("its log ({}):\n{tail}{hint}", log.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_in_use_is_named_with_the_fix() {
        let held = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = held.local_addr().unwrap().port();
        let err = port_free(port).unwrap_err().to_string();
        assert!(err.contains(&port.to_string()) && err.contains("--port 0"), "{err}");
        drop(held);
        port_free(port).unwrap();
    }

    #[test]
    fn the_port_is_read_from_the_browsers_log() {
        let log = "[1:1:ERROR:x] noise\n\nDevTools listening on ws://127.0.0.1:45679/devtools/browser/44727df6\n";
        assert_eq!(listening_port(log), Some(45679));
        assert_eq!(listening_port("DevTools listening on ws://[::1]:9/x"), None);
    }

    /// Chromium's lock is a symlink on Linux and macOS.
    #[test]
    #[cfg(unix)]
    fn a_lock_names_a_live_browser_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(locked_by(dir.path()), None);
        std::os::unix::fs::symlink(format!("myhost-{}", std::process::id()), dir.path().join("SingletonLock")).unwrap();
        assert_eq!(locked_by(dir.path()), Some(std::process::id()));
        std::fs::remove_file(dir.path().join("SingletonLock")).unwrap();
        // A pid far above any pid_max: no such process.
        std::os::unix::fs::symlink("myhost-2147483000", dir.path().join("SingletonLock")).unwrap();
        assert_eq!(locked_by(dir.path()), None);
    }
}
