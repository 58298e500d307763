//! Which browser binary `unmodal browser` starts: the one named, else the first Chromium or
//! Chrome for Testing found, else Google Chrome (which ignores `--load-extension` from 137
//! on: it gets the extension through the DevTools protocol instead).

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

pub const HOW_TO_GET_ONE: &str = "install Chromium (Debian/Ubuntu: `apt-get install chromium`; macOS: `brew install \
--cask chromium`) or Chrome for Testing (`npx @puppeteer/browsers install chrome@stable`), or name one with \
--browser-path";

/// A browser binary, and whether it is branded Google Chrome (which must be given the
/// extension through the DevTools protocol, pipe.rs).
#[derive(Debug)]
pub struct Found {
    pub path: PathBuf,
    pub branded: bool,
}

pub fn browser(named: Option<&Path>) -> Result<Found> {
    if let Some(p) = named {
        if !is_executable(p) {
            bail!("--browser-path {}: no such executable; {HOW_TO_GET_ONE}", p.display());
        }
        return Ok(Found { path: p.to_path_buf(), branded: is_branded(p) });
    }
    if let Some(p) = std::env::var_os("UNMODAL_CHROMIUM").map(PathBuf::from).filter(|p| is_executable(p)) {
        return Ok(Found { branded: is_branded(&p), path: p });
    }
    // The OS's places, in order: browsers that take --load-extension, then branded Chrome,
    // taken only when nothing else is there.
    let (unbranded, branded) = crate::platform::browser_candidates();
    if let Some(path) = unbranded.iter().find_map(|p| located(p)) {
        return Ok(Found { path, branded: false });
    }
    match branded.iter().find_map(|p| located(p)) {
        Some(path) => Ok(Found { path, branded: true }),
        None => bail!("no Chromium browser found: {HOW_TO_GET_ONE}"),
    }
}

/// Google Chrome itself, not Chrome for Testing or Chromium (`--version` says which).
fn is_branded(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if !(name.contains("google") || name == "chrome") {
        return false;
    }
    std::process::Command::new(p).arg("--version").output().is_ok_and(|o| {
        let v = String::from_utf8_lossy(&o.stdout);
        v.starts_with("Google Chrome ") && !v.contains("for Testing")
    })
}

/// An absolute path if it is there, a bare name on PATH.
fn located(p: &Path) -> Option<PathBuf> {
    if p.is_absolute() { Some(p.to_path_buf()).filter(|p| is_executable(p)) } else { on_path(p) }
}

fn on_path(name: &Path) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    crate::platform::is_executable(p)
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
    #[cfg(unix)]
    fn a_named_executable_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("my-chromium");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let found = browser(Some(&exe)).unwrap();
        assert_eq!((found.path, found.branded), (exe.clone(), false));
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(browser(Some(&exe)).is_err(), "not executable");
    }
}
