//! What Linux does differently from macOS: `pipe2`, `/proc`, the XDG names of browsers.

use super::Browser;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

/// A pipe (read end, write end), both ends closed on exec.
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds on success; each is owned once, below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub fn command_lines() -> Option<Vec<(u32, Vec<String>)>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let all = entries.filter_map(Result::ok).filter_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        Some((pid, command_line(pid)?))
    });
    Some(all.collect())
}

pub fn command_line(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> =
        raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    (!args.is_empty()).then_some(args)
}

pub fn browser_candidates() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let names = |n: &[&str]| n.iter().map(PathBuf::from).collect();
    (
        names(&["chromium", "chromium-browser", "chrome", "google-chrome-for-testing"]),
        names(&["google-chrome", "google-chrome-stable"]),
    )
}

/// The user data directory's name inside the XDG config directory.
pub fn user_data_dir_name(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "google-chrome",
        Browser::Chromium => "chromium",
        Browser::Brave => "BraveSoftware/Brave-Browser",
        Browser::Edge => "microsoft-edge",
    }
}
