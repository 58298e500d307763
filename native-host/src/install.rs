//! Registers the host with browsers: writes the native-messaging manifest that names this
//! binary and allows only the Unmodal extension to start it (on Windows also the registry
//! key that names the manifest: `platform`); unpacks the extension this binary carries into
//! the data directory (extension.rs).

use crate::extension;
use crate::paths::{self, Browser};
use crate::platform;
pub use crate::platform::{HOST_NAME, manifest_file_name};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};

/// Fixed by the `key` in manifest/manifest.json (checked by a test).
pub const EXTENSION_ID: &str = "bikfjgnmfngjaklooejgpomkebgnmckk";

pub fn host_manifest(exe: &Path) -> Value {
    json!({
        "name": HOST_NAME,
        "description": "Unmodal native host: keeps dialog state for AI agents",
        "path": exe,
        "type": "stdio",
        "allowed_origins": [format!("chrome-extension://{EXTENSION_ID}/")],
    })
}

/// The manifest directories for `browsers`, or the one inside `user_data_dir` (for no
/// browser in particular), each with its label.
pub fn targets(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Vec<(String, PathBuf)>> {
    Ok(targets_for(browsers, user_data_dir)?.into_iter().map(|(label, _, dir)| (label, dir)).collect())
}

fn targets_for(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Vec<(String, Option<Browser>, PathBuf)>> {
    if let Some(dir) = user_data_dir {
        return Ok(vec![(format!("user data dir {}", dir.display()), None, dir.join("NativeMessagingHosts"))]);
    }
    let config = paths::config_dir()?;
    Ok(browsers.iter().map(|b| (b.name().to_string(), Some(*b), b.manifest_dir(&config))).collect())
}

/// What `install` did: the host manifests written, and the extension's unpacked copy (or
/// why there is none).
pub struct Installed {
    pub manifests: Vec<PathBuf>,
    pub extension: Result<PathBuf, String>,
}

/// Registers the host and unpacks the extension. A binary without the extension still
/// registers the host (the extension may be loaded by hand) and says so.
pub fn install_all(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Installed> {
    let extension = if extension::carried() {
        let data = paths::data_dir()?;
        Ok(extension::unpack(&data)?)
    } else {
        Err(extension::NOT_CARRIED.to_owned())
    };
    Ok(Installed { manifests: install(browsers, user_data_dir)?, extension })
}

/// Takes back what `install_all` wrote: the host manifests and every unpacked extension.
pub fn uninstall_all(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let mut removed = uninstall(browsers, user_data_dir)?;
    if user_data_dir.is_none() {
        removed.extend(extension::remove_all(&paths::data_dir()?)?);
    }
    Ok(removed)
}

pub fn install(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let exe = platform::current_exe().context("cannot tell where the unmodal binary is")?;
    let body = serde_json::to_string_pretty(&host_manifest(&exe))?;
    let mut written = Vec::new();
    for (label, browser, dir) in targets_for(browsers, user_data_dir)? {
        fs::create_dir_all(&dir).with_context(|| format!("creating {} for {label}", dir.display()))?;
        let file = dir.join(manifest_file_name());
        fs::write(&file, &body).with_context(|| format!("writing {}", file.display()))?;
        platform::register_host(browser, &file)
            .with_context(|| format!("registering {} for {label}", file.display()))?;
        written.push(file);
    }
    Ok(written)
}

pub fn uninstall(browsers: &[Browser], user_data_dir: Option<&Path>) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for (label, browser, dir) in targets_for(browsers, user_data_dir)? {
        let file = dir.join(manifest_file_name());
        platform::unregister_host(browser, &file)
            .with_context(|| format!("unregistering {} for {label}", file.display()))?;
        match fs::remove_file(&file) {
            Ok(()) => removed.push(file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", file.display())),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_allows_only_our_extension() {
        let m = host_manifest(Path::new("/opt/unmodal"));
        assert_eq!(m["name"], HOST_NAME);
        assert_eq!(m["type"], "stdio");
        assert_eq!(m["path"], "/opt/unmodal");
        assert_eq!(m["allowed_origins"], json!(["chrome-extension://bikfjgnmfngjaklooejgpomkebgnmckk/"]));
    }

    #[test]
    fn install_then_uninstall_in_a_user_data_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let written = install(&[], Some(tmp.path())).unwrap();
        assert_eq!(written, vec![tmp.path().join("NativeMessagingHosts/dev.unmodal.host.json")]);
        let m: Value = serde_json::from_str(&fs::read_to_string(&written[0]).unwrap()).unwrap();
        assert!(Path::new(m["path"].as_str().unwrap()).is_absolute());
        assert_eq!(uninstall(&[], Some(tmp.path())).unwrap(), written);
        assert!(!written[0].exists());
        assert!(uninstall(&[], Some(tmp.path())).unwrap().is_empty());
    }
}
