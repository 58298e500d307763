//! The browser that started this host (the host's parent process): its profile directory,
//! and whether a program can drive it over DevTools. In such a browser any DevTools client
//! (the agent's own driver) can run code in Unmodal's popup and service worker, so nothing
//! inside the browser can carry a person's "switch the pilot on"; only `unmodal pilot on`,
//! run in a terminal, can (`host/pilot_switch.rs`).

use std::path::{Path, PathBuf};

/// What the host learnt of its browser when it started.
#[derive(Clone, Debug, Default)]
pub struct ParentBrowser {
    pub pid: Option<u32>,
    /// The browser's command line; `None` when it could not be read.
    pub args: Option<Vec<String>>,
    /// `--user-data-dir`, else the browser's default profile directory when it can be told.
    pub profile: Option<PathBuf>,
    /// The CDP endpoint (shown without its token) when the browser is remote and this host
    /// lives in `unmodal mcp --cdp-endpoint`.
    pub over_cdp: Option<String>,
}

/// Switches that open a browser to DevTools clients (or say a driver started it).
const REMOTE_SWITCHES: [&str; 3] = ["remote-debugging-port", "remote-debugging-pipe", "enable-automation"];

impl ParentBrowser {
    /// The profile's "Ask where to save each file before downloading" (`Default/Preferences`,
    /// `download.prompt_for_download`): on, the browser cancels every download where no
    /// person can answer its Save dialog (MODAL-FACTS 4). `None`: unknown.
    pub fn asks_where_to_save(&self) -> Option<bool> {
        Some(self.preferences()?["download"]["prompt_for_download"].as_bool().unwrap_or(false))
    }

    /// Where the browser saves downloads, as this host can tell by itself (never the
    /// worker's word): the profile's `download.default_directory`, else the platform's
    /// default (the XDG download directory, `~/Downloads`). A directory a DevTools client
    /// set for its own downloads (`Browser.setDownloadBehavior`) is not known here.
    pub fn download_dirs(&self) -> Vec<PathBuf> {
        let set = self.preferences().and_then(|v| v["download"]["default_directory"].as_str().map(PathBuf::from));
        if let Some(dir) = set.filter(|d| d.is_absolute()) {
            return vec![dir];
        }
        let mut dirs: Vec<PathBuf> = dirs::download_dir().into_iter().collect();
        dirs.extend(dirs::home_dir().map(|h| h.join("Downloads")).filter(|d| !dirs.contains(d)));
        dirs
    }

    /// The profile's `Default/Preferences`, if it can be read.
    fn preferences(&self) -> Option<serde_json::Value> {
        let prefs = std::fs::read(self.profile.as_ref()?.join("Default/Preferences")).ok()?;
        serde_json::from_slice(&prefs).ok()
    }

    /// The parent of this process, read from the OS.
    pub fn of_this_process() -> Self {
        let Some(pid) = crate::platform::launcher_pid() else { return Self::default() };
        if pid <= 1 {
            // Orphaned: the browser is gone (or never was); nothing to learn.
            return Self::default();
        }
        Self::from_args(pid, crate::platform::command_line(pid))
    }

    pub fn from_args(pid: u32, args: Option<Vec<String>>) -> Self {
        let profile = args
            .as_deref()
            .and_then(|a| switch_value(a, "user-data-dir").map(PathBuf::from).or_else(|| default_profile(a.first()?)));
        Self { pid: Some(pid), args, profile, over_cdp: None }
    }

    /// A browser reached over a CDP URL: a program drives it by definition.
    pub fn over_cdp(endpoint: String) -> Self {
        Self { over_cdp: Some(endpoint), ..Self::default() }
    }

    /// Why a program may control this browser, or `None` when nothing says so. Unknown
    /// counts as controllable: the pilot then turns on only from a terminal. Asked anew
    /// each time (remote debugging can be switched on while the browser runs).
    pub fn remote_control(&self) -> Option<String> {
        if let Some(url) = &self.over_cdp {
            return Some(format!("the browser is reached over CDP at {url}: a program drives it by definition"));
        }
        let Some(args) = &self.args else {
            return Some(
                "this host cannot read its browser's command line, so it cannot rule out that a program \
controls the browser"
                    .into(),
            );
        };
        if let Some(s) = REMOTE_SWITCHES.iter().find(|s| has_switch(args, s)) {
            return Some(format!("the browser was started with --{s}"));
        }
        let port_file = self.profile.as_deref().map(|p| p.join("DevToolsActivePort"));
        if port_file.as_deref().is_some_and(Path::exists) {
            return Some("the browser's profile has a DevToolsActivePort file: remote debugging is on".into());
        }
        None
    }

    /// Where the browser names its DevTools port, when it was started with one
    /// (`--remote-debugging-port`; `DevToolsActivePort` in the profile once it listens).
    pub fn devtools_port_file(&self) -> Option<PathBuf> {
        let args = self.args.as_deref()?;
        has_switch(args, "remote-debugging-port")
            .then(|| self.profile.as_ref().map(|p| p.join("DevToolsActivePort")))?
    }

    /// Whether `dir` names this browser's profile (the same directory, however written).
    pub fn has_profile(&self, dir: &Path) -> bool {
        self.profile.as_deref().is_some_and(|mine| crate::paths::same_dir(mine, dir))
    }
}

/// Chromium takes switches as `--name`, `--name=value` and `-name=value`; the first
/// non-switch argument ends nothing (URLs may come anywhere), so every argument is looked at.
fn switch_of<'a>(arg: &'a str, name: &str) -> Option<Option<&'a str>> {
    let bare = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
    let rest = bare.strip_prefix(name)?;
    match rest.strip_prefix('=') {
        Some(value) => Some(Some(value)),
        None if rest.is_empty() => Some(None),
        None => None,
    }
}

fn has_switch(args: &[String], name: &str) -> bool {
    args.iter().skip(1).any(|a| switch_of(a, name).is_some())
}

/// The value of the last `--name=value` (Chromium lets a later switch win).
fn switch_value<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().skip(1).filter_map(|a| switch_of(a, name).flatten()).next_back().filter(|v| !v.is_empty())
}

/// The default profile directory of the browser whose executable is `exe`.
fn default_profile(exe: &str) -> Option<PathBuf> {
    use crate::paths::Browser;
    let name = Path::new(exe).file_name()?.to_string_lossy().to_lowercase();
    let path = exe.to_lowercase();
    let browser = if path.contains("brave") {
        Browser::Brave
    } else if path.contains("edge") {
        Browser::Edge
    } else if name.contains("chromium") {
        Browser::Chromium
    } else if name.contains("chrome") && !path.contains("for-testing") && !path.contains("for testing") {
        Browser::Chrome
    } else {
        return None;
    };
    let config = crate::paths::config_dir().ok()?;
    Some(browser.user_data_dir(&config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browser(args: &[&str]) -> ParentBrowser {
        ParentBrowser::from_args(42, Some(args.iter().map(|s| s.to_string()).collect()))
    }

    #[test]
    fn remote_debugging_switches_make_it_controllable() {
        for sw in [
            "--remote-debugging-port=0",
            "--remote-debugging-pipe",
            "-remote-debugging-port=9222",
            "--enable-automation",
        ] {
            let b = browser(&["/usr/lib/chromium/chromium", "--headless=new", sw, "--user-data-dir=/nonexistent/p"]);
            assert!(b.remote_control().is_some_and(|r| r.contains("started with")), "{sw}");
        }
        let plain = browser(&[
            "/usr/lib/chromium/chromium",
            "--user-data-dir=/nonexistent/p",
            "https://x/?--remote-debugging-port",
        ]);
        assert_eq!(plain.remote_control(), None);
        // A switch-like name that is only a prefix of another does not count.
        assert_eq!(
            browser(&["chrome", "--remote-debugging-portal", "--user-data-dir=/nonexistent/p"]).remote_control(),
            None
        );
    }

    #[test]
    fn an_unreadable_command_line_counts_as_controllable() {
        assert!(ParentBrowser::from_args(42, None).remote_control().is_some());
        assert!(ParentBrowser::default().remote_control().is_some());
    }

    #[test]
    fn devtools_active_port_in_the_profile_makes_it_controllable() {
        let dir = tempfile::tempdir().unwrap();
        let arg = format!("--user-data-dir={}", dir.path().display());
        let b = browser(&["/usr/bin/chromium", &arg]);
        assert_eq!(b.remote_control(), None);
        std::fs::write(dir.path().join("DevToolsActivePort"), "9222\n/devtools/browser/x\n").unwrap();
        assert!(b.remote_control().unwrap().contains("DevToolsActivePort"));
    }

    #[test]
    fn the_profile_is_the_last_user_data_dir_or_the_default() {
        let b = browser(&["chrome", "--user-data-dir=/a", "--user-data-dir=/b"]);
        assert_eq!(b.profile.as_deref(), Some(Path::new("/b")));
        assert!(b.has_profile(Path::new("/b")) && !b.has_profile(Path::new("/a")));
        let dflt = browser(&["/usr/lib/chromium/chromium", "--headless"]);
        if let Ok(config) = crate::paths::config_dir() {
            assert_eq!(dflt.profile, Some(crate::paths::Browser::Chromium.user_data_dir(&config)));
        }
        assert_eq!(browser(&["/opt/x/unknown-browser"]).profile, None);
    }

    #[test]
    fn this_processs_parent_is_read() {
        // The test runner's parent is some process with a readable command line.
        let me = ParentBrowser::of_this_process();
        assert!(me.pid.is_some());
        assert!(me.args.as_ref().is_some_and(|a| !a.is_empty()));
    }
}
