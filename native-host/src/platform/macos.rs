//! What macOS does differently from Linux: no `pipe2`, no `/proc`, browsers in
//! `/Applications` and their data in `~/Library/Application Support`.

use super::Browser;
pub use super::process_list::command_lines;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

/// A pipe (read end, write end), both ends closed on exec. macOS has no `pipe2`: the flag
/// is set right after (nothing here forks meanwhile but `Command`, which sets it anyway).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two fds on success; each is owned once, below.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and ours alone.
    let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [ends.0.as_raw_fd(), ends.1.as_raw_fd()] {
        // SAFETY: a valid descriptor we own.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(ends)
}

/// No /proc: `ps` prints the command line as one string, split here before each ` -` (a
/// profile path with " -" in it would be cut; the remote switches are still seen).
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    let out = std::process::Command::new("ps").args(["-ww", "-o", "command=", "-p", &pid.to_string()]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || text.is_empty() {
        return None;
    }
    let mut args = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(" -") {
        args.push(rest[..at].to_owned());
        rest = &rest[at + 1..];
    }
    args.push(rest.to_owned());
    Some(args)
}

pub fn browser_candidates() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let names = |n: &[&str]| n.iter().map(PathBuf::from).collect();
    (
        names(&[
            "chromium",
            "chromium-browser",
            "chrome",
            "google-chrome-for-testing",
            "/Applications/Chromium.app/Contents/MacOS/Chromium",
            "/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
        ]),
        names(&[
            "google-chrome",
            "google-chrome-stable",
            "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
        ]),
    )
}

/// The user data directory's name inside `~/Library/Application Support`.
pub fn user_data_dir_name(browser: Browser) -> &'static str {
    match browser {
        Browser::Chrome => "Google/Chrome",
        Browser::Chromium => "Chromium",
        Browser::Brave => "BraveSoftware/Brave-Browser",
        Browser::Edge => "Microsoft Edge",
    }
}
