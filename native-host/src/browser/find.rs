//! Which browser binary `unmodal browser` starts: the one named, else the first Chromium or
//! Chrome for Testing found. Branded Google Chrome (137 and later) ignores
//! `--load-extension`, so it is named only when nothing else is there, with what to do.

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// Looked up on PATH, in this order.
const ON_PATH: &[&str] = &["chromium", "chromium-browser", "chrome", "google-chrome-for-testing"];
/// Where macOS keeps them.
const MAC_APPS: &[&str] = &[
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
];
/// Branded Chrome, which cannot load the extension from the command line.
const BRANDED: &[&str] =
    &["google-chrome", "google-chrome-stable", "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"];

pub const HOW_TO_GET_ONE: &str = "install Chromium (Debian/Ubuntu: `apt-get install chromium`; macOS: `brew install \
--cask chromium`) or Chrome for Testing (`npx @puppeteer/browsers install chrome@stable`), or name one with \
--browser-path";

pub fn browser(named: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = named {
        if !is_executable(p) {
            bail!("--browser-path {}: no such executable; {HOW_TO_GET_ONE}", p.display());
        }
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("UNMODAL_CHROMIUM").map(PathBuf::from).filter(|p| is_executable(p)) {
        return Ok(p);
    }
    let found = ON_PATH
        .iter()
        .find_map(|n| on_path(n))
        .or_else(|| MAC_APPS.iter().map(PathBuf::from).find(|p| is_executable(p)));
    if let Some(p) = found {
        return Ok(p);
    }
    if let Some(chrome) = BRANDED
        .iter()
        .find_map(|n| if n.starts_with('/') { Some(PathBuf::from(n)).filter(|p| is_executable(p)) } else { on_path(n) })
    {
        bail!(
            "only Google Chrome was found ({}), and Chrome 137 and later ignore --load-extension, so it cannot start \
with Unmodal loaded. Either {HOW_TO_GET_ONE}; or start Chrome yourself and load the extension by hand (see `unmodal \
install`).",
            chrome.display()
        );
    }
    bail!("no Chromium browser found: {HOW_TO_GET_ONE}")
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_path_that_is_not_there_says_what_to_do() {
        let err = browser(Some(Path::new("/nonexistent/chromium"))).unwrap_err().to_string();
        assert!(err.contains("/nonexistent/chromium") && err.contains("--browser-path"), "{err}");
    }

    #[test]
    fn a_named_executable_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("my-chromium");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(browser(Some(&exe)).unwrap(), exe);
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(browser(Some(&exe)).is_err(), "not executable");
    }
}
