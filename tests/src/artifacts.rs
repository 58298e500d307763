//! Where the built pieces are: `cargo xtask build` puts them in target/.

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What the built extension and the host are each made from (relative to the repo root).
/// Each is checked against its own: cargo relinks the host only when its sources change.
const EXTENSION_SOURCES: &[&str] = &["manifest", "engine/src", "engine/Cargo.toml"];
const HOST_SOURCES: &[&str] =
    &["engine/src", "engine/Cargo.toml", "native-host/src", "native-host/build.rs", "native-host/Cargo.toml"];

#[derive(Clone, Debug)]
pub struct Artifacts {
    pub extension: PathBuf,
    pub host: PathBuf,
    pub extension_id: String,
}

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the repo").to_path_buf()
}

impl Artifacts {
    pub fn find() -> Result<Self> {
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo_root().join("target"), PathBuf::from);
        let extension = target.join("extension");
        // `cargo xtask test` names the test build's host (no release build there); else the
        // one `cargo xtask build` makes.
        let host = std::env::var_os("UNMODAL_TEST_HOST").map_or_else(|| target.join("release/unmodal"), PathBuf::from);
        for p in
            [extension.join("manifest.json"), extension.join("inject.js"), target.join("extension.stamp"), host.clone()]
        {
            if !p.exists() {
                bail!(
                    "{} is missing: run `cargo xtask build` (or `cargo xtask test`, which builds first)",
                    p.display()
                );
            }
        }
        // xtask rewrites only the extension's files that changed; its stamp marks each build.
        let extension_sources = EXTENSION_SOURCES.iter().map(|s| repo_root().join(s)).collect();
        let checks =
            [(vec![target.join("extension.stamp")], extension_sources), (vec![host.clone()], host_sources(&host))];
        for (built, sources) in checks {
            if let Some((artifact, source)) = stale(&built, &sources)? {
                bail!(
                    "{} is older than {}: the tests would run yesterday's build. Run `cargo xtask build` (or `cargo \
xtask test`, which builds first).",
                    artifact.display(),
                    source.display()
                );
            }
        }
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(extension.join("manifest.json"))?)?;
        let key = manifest["key"].as_str().context("manifest.json has no key")?;
        Ok(Self { extension_id: extension_id(key)?, extension, host })
    }
}

/// What the host binary was built from: the files cargo's dep-info lists beside it (only
/// those compiled for this OS: another OS's platform file does not make it stale), else
/// the host's source folders.
fn host_sources(host: &Path) -> Vec<PathBuf> {
    let listed = std::fs::read_to_string(host.with_extension("d")).ok().and_then(|d| {
        let (_, deps) = d.lines().next()?.split_once(": ")?;
        // Make escapes spaces in paths with a backslash.
        let deps = deps.replace("\\ ", "\u{0}");
        Some(deps.split_whitespace().map(|p| PathBuf::from(p.replace('\u{0}', " "))).collect::<Vec<_>>())
    });
    listed
        .filter(|l| !l.is_empty() && l.iter().all(|p| p.exists()))
        .unwrap_or_else(|| HOST_SOURCES.iter().map(|s| repo_root().join(s)).collect())
}

/// The oldest build artifact and the newest source, when the source is the newer one.
fn stale(built: &[PathBuf], sources: &[PathBuf]) -> Result<Option<(PathBuf, PathBuf)>> {
    let mut oldest: Option<(SystemTime, PathBuf)> = None;
    for b in built {
        let t = std::fs::metadata(b)?.modified()?;
        if oldest.as_ref().is_none_or(|(o, _)| t < *o) {
            oldest = Some((t, b.clone()));
        }
    }
    let Some((built_at, artifact)) = oldest else { return Ok(None) };
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    let mut stack: Vec<PathBuf> = sources.to_vec();
    while let Some(p) = stack.pop() {
        let meta = std::fs::metadata(&p)?;
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&p)?.filter_map(|e| e.ok().map(|e| e.path())));
        } else {
            let t = meta.modified()?;
            if newest.as_ref().is_none_or(|(n, _)| t > *n) {
                newest = Some((t, p));
            }
        }
    }
    Ok(newest.filter(|(t, _)| *t > built_at).map(|(_, source)| (artifact, source)))
}

/// Chrome's extension ID: the first 128 bits of SHA-256 of the public key, as letters a–p.
pub fn extension_id(key_base64: &str) -> Result<String> {
    let der = base64::engine::general_purpose::STANDARD.decode(key_base64).context("manifest key is not base64")?;
    let hash = Sha256::digest(der);
    Ok(hash[..16].iter().flat_map(|b| [b >> 4, b & 15]).map(|n| char::from(b'a' + n)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_source_newer_than_the_build_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (built, src) = (dir.path().join("built"), dir.path().join("src"));
        std::fs::create_dir(&src).unwrap();
        std::fs::write(&built, "x").unwrap();
        std::fs::write(src.join("a.rs"), "x").unwrap();
        let at =
            |p: &Path, t: SystemTime| std::fs::File::options().write(true).open(p).unwrap().set_modified(t).unwrap();
        let now = SystemTime::now();
        at(&built, now);
        at(&src.join("a.rs"), now - Duration::from_secs(60));
        assert!(stale(std::slice::from_ref(&built), std::slice::from_ref(&src)).unwrap().is_none());
        at(&src.join("a.rs"), now + Duration::from_secs(60));
        assert_eq!(
            stale(std::slice::from_ref(&built), std::slice::from_ref(&src)).unwrap(),
            Some((built, src.join("a.rs")))
        );
    }
}
