//! Browsers started for a CDP driver (Playwright MCP `--cdp-endpoint`, chrome-devtools-mcp
//! `--browserUrl`, a script's `connectOverCDP`): running Chromium browser processes with
//! `--remote-debugging-port`. `unmodal doctor` finds them in the process list and says, for each,
//! whether Unmodal works beside the driver there: the extension loaded, the host
//! registered for that browser's profile.

use std::path::{Path, PathBuf};

#[derive(Debug, PartialEq, Eq)]
pub struct Debuggable {
    pub pid: u32,
    /// The DevTools port: the one asked for, or (`=0`) the one the profile's
    /// `DevToolsActivePort` names.
    pub port: Option<u16>,
    /// `--user-data-dir`, when given (else the browser's default profile).
    pub user_data_dir: Option<PathBuf>,
    /// `--load-extension` directories.
    pub extensions: Vec<PathBuf>,
    /// `--silent-debugger-extension-api`: without it the "started debugging this browser"
    /// bar shrinks the tab's viewport whenever the extension's debugger attaches.
    pub silent_debugger: bool,
}

/// The browser process's command line, if it is a Chromium browser open to CDP drivers
/// (renderers and other helpers carry `--type=`).
pub fn parse(pid: u32, args: &[String]) -> Option<Debuggable> {
    let exe = Path::new(args.first()?).file_name()?.to_string_lossy().to_lowercase();
    if !(exe.contains("chrom") || exe.contains("chrome")) || args.iter().any(|a| a.starts_with("--type=")) {
        return None;
    }
    // Chromium takes a switch's last value (Debian's wrapper puts an empty
    // `--load-extension=` before the user's).
    let value = |flag: &str| args.iter().rev().find_map(|a| a.strip_prefix(flag)?.strip_prefix('='));
    let asked: u16 = value("--remote-debugging-port")?.parse().ok()?;
    let user_data_dir = value("--user-data-dir").map(PathBuf::from);
    let port = if asked != 0 {
        Some(asked)
    } else {
        let file = user_data_dir.as_ref().map(|d| d.join("DevToolsActivePort"));
        file.and_then(|f| std::fs::read_to_string(f).ok()).and_then(|t| t.lines().next()?.trim().parse().ok())
    };
    let extensions = value("--load-extension")
        .map(|v| v.split(',').filter(|p| !p.is_empty()).map(PathBuf::from).collect())
        .unwrap_or_default();
    let silent_debugger = args.iter().any(|a| a == "--silent-debugger-extension-api");
    Some(Debuggable { pid, port, user_data_dir, extensions, silent_debugger })
}

/// Every such browser running now (none when the process list cannot be read).
pub fn running() -> Vec<Debuggable> {
    let all = crate::platform::command_lines().unwrap_or_default();
    let mut found: Vec<Debuggable> = all.iter().filter_map(|(pid, args)| parse(*pid, args)).collect();
    found.sort_by_key(|d| d.pid);
    found
}

/// Whether `dir` holds an unpacked Unmodal (its manifest names it and carries the fixed key
/// that gives it its ID).
pub fn is_unmodal(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else { return false };
    serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|m| m["name"] == "Unmodal" && m["key"].is_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn finds_the_browser_process_and_its_flags() {
        let d = parse(
            7,
            &args(&[
                "/usr/lib/chromium/chromium",
                "--load-extension=",
                "--remote-debugging-port=9222",
                "--user-data-dir=/tmp/p",
                "--load-extension=/a,/b",
                "--silent-debugger-extension-api",
            ]),
        )
        .unwrap();
        assert!(d.silent_debugger);
        assert_eq!(d.port, Some(9222));
        assert_eq!(d.user_data_dir.as_deref(), Some(Path::new("/tmp/p")));
        assert_eq!(d.extensions, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
    }

    #[test]
    fn skips_helpers_other_programs_and_browsers_closed_to_drivers() {
        assert!(
            parse(1, &args(&["/usr/lib/chromium/chromium", "--type=renderer", "--remote-debugging-port=9222"]))
                .is_none()
        );
        assert!(parse(1, &args(&["/usr/bin/node", "--remote-debugging-port=9222"])).is_none());
        assert!(parse(1, &args(&["/usr/lib/chromium/chromium", "--user-data-dir=/tmp/p"])).is_none());
        assert!(parse(1, &args(&["/usr/lib/chromium/chromium", "--remote-debugging-port=x"])).is_none());
        assert!(parse(1, &args(&[])).is_none());
        // Port 0 with no profile to read the chosen port from: listed, port unknown.
        let d = parse(1, &args(&["chrome", "--remote-debugging-port=0"])).unwrap();
        assert_eq!((d.port, d.user_data_dir, d.silent_debugger), (None, None, false));
    }
}
