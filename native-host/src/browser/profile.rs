//! The profile a browser runs in: who holds it, which DevTools port it opened, whether the
//! extension in it reached its host.

use crate::ipc::{self, Tool};
use crate::paths;
use crate::platform::{self, ProfileLock};
use anyhow::{Result, bail};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::process::Child;

const POLL: Duration = Duration::from_millis(100);

/// The pid of a live browser holding the profile, if any. Linux and macOS: the lock names
/// it. Windows: the lock names no process, so it is the browser whose command line names
/// the profile, or else (a browser in its default profile is started without one) a
/// browser whose command line names none.
pub fn locked_by(profile: &Path) -> Option<u32> {
    match platform::profile_lock(profile) {
        ProfileLock::Free => None,
        ProfileLock::HeldBy(pid) => Some(pid),
        ProfileLock::Held => holder_by_command_line(&platform::command_lines()?, profile),
    }
}

/// Among processes (pid, arguments), the browser that holds `profile`: the one naming it,
/// else one naming no profile.
fn holder_by_command_line(all: &[(u32, Vec<String>)], profile: &Path) -> Option<u32> {
    let named = all.iter().find(|(_, args)| is_browser(args, Some(profile)));
    let unnamed = || {
        all.iter().find(|(_, args)| is_browser(args, None) && !args.iter().any(|a| a.starts_with("--user-data-dir=")))
    };
    named.or_else(unnamed).map(|(pid, _)| *pid)
}

/// Whether a command line is a browser's main process (in `profile`, if named).
pub fn is_browser(args: &[String], profile: Option<&Path>) -> bool {
    let Some(exe) = args.first().and_then(|a| Path::new(a).file_name()).map(|n| n.to_string_lossy().to_lowercase())
    else {
        return false;
    };
    let family = ["chrome", "chromium", "brave", "msedge"].iter().any(|b| exe.contains(b))
        && !exe.contains("crashpad")
        && !exe.contains("driver");
    let helper = args.iter().any(|a| a.starts_with("--type="));
    let in_profile = profile.is_none_or(|p| {
        args.iter().filter_map(|a| a.strip_prefix("--user-data-dir=")).any(|d| paths::same_dir(Path::new(d), p))
    });
    family && !helper && in_profile
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

    #[test]
    fn browsers_are_told_from_their_helpers_and_other_programs() {
        let a = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(is_browser(&a(&["/usr/lib/chromium/chromium", "--user-data-dir=/p"]), None));
        assert!(!is_browser(&a(&["/usr/lib/chromium/chrome_crashpad_handler", "--monitor-self"]), None));
        assert!(is_browser(&a(&["/opt/google/chrome/chrome", "--user-data-dir=/p"]), Some(Path::new("/p"))));
        assert!(!is_browser(&a(&["/opt/google/chrome/chrome", "--user-data-dir=/p"]), Some(Path::new("/q"))));
        assert!(!is_browser(&a(&["/usr/lib/chromium/chromium", "--type=renderer"]), None));
        assert!(!is_browser(&a(&["/usr/bin/node", "chrome.js"]), None));
        assert!(!is_browser(&[], None));
    }

    /// Windows' lock names no process: the browser naming the profile holds it, else the
    /// one naming none (the default profile's); never a helper or another profile's.
    #[test]
    fn a_lock_without_a_pid_is_matched_by_command_line() {
        let p = |pid: u32, l: &[&str]| (pid, l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let profile = Path::new("/p");
        let helper = p(1, &["chrome.exe", "--type=renderer", "--user-data-dir=/p"]);
        let other = p(2, &["chrome.exe", "--user-data-dir=/q"]);
        let default = p(3, &["msedge.exe", "--no-first-run"]);
        let named = p(4, &["chrome.exe", "--user-data-dir=/p"]);
        let all = [helper.clone(), other.clone(), default.clone(), named];
        assert_eq!(holder_by_command_line(&all, profile), Some(4));
        assert_eq!(holder_by_command_line(&[helper.clone(), other.clone(), default], profile), Some(3));
        assert_eq!(holder_by_command_line(&[helper, other], profile), None);
    }

    /// Chromium's lock on Windows: `lockfile`, open and shared with no one while it runs.
    #[test]
    #[cfg(windows)]
    fn a_lockfile_held_open_unshared_is_a_held_profile() {
        use std::os::windows::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(platform::profile_lock(dir.path()), ProfileLock::Free);
        let held = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .share_mode(0)
            .open(dir.path().join("lockfile"))
            .unwrap();
        assert_eq!(platform::profile_lock(dir.path()), ProfileLock::Held);
        drop(held);
        // Left behind by a browser that is gone: free.
        assert_eq!(platform::profile_lock(dir.path()), ProfileLock::Free);
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
