//! The extension this binary carries (built by `cargo xtask build`, see build.rs), unpacked
//! into the data directory for browsers to load: one directory per build, so a browser
//! running an older copy keeps it while a newer one is written beside it. The extension ID
//! comes from the `key` in its manifest, the same wherever the copy lives.

use anyhow::{Context, Result, bail};
use std::fs;
use std::path::{Path, PathBuf};

mod built {
    include!(concat!(env!("OUT_DIR"), "/extension_files.rs"));
}

/// What to tell a user whose binary carries no extension.
pub const NOT_CARRIED: &str = "this unmodal binary does not carry the extension (a plain `cargo build`): build \
it with `cargo xtask build` (target/release/unmodal then carries it), or load target/extension/ by hand in \
chrome://extensions (Developer mode, \"Load unpacked\")";

/// Whether this binary carries the extension.
pub fn carried() -> bool {
    !built::FILES.is_empty()
}

/// The carried extension's files, (path inside it, contents), sorted by path; empty when
/// none is carried.
pub fn files() -> &'static [(&'static str, &'static [u8])] {
    built::FILES
}

/// Where the extension copies live: `<data dir>/extension/`.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join("extension")
}

/// This build's copy: `<data dir>/extension/<version>-<digest>/`.
pub fn dir(data_dir: &Path) -> PathBuf {
    root(data_dir).join(format!("{}-{}", env!("CARGO_PKG_VERSION"), built::DIGEST))
}

/// Writes this build's copy unless it is there already, whole: into a directory beside
/// it, renamed into place, so a browser (or a crash) never meets half of one.
pub fn unpack(data_dir: &Path) -> Result<PathBuf> {
    if !carried() {
        bail!("{NOT_CARRIED}");
    }
    let dst = dir(data_dir);
    if intact(&dst) {
        return Ok(dst);
    }
    let root = root(data_dir);
    fs::create_dir_all(&root).with_context(|| {
        format!(
            "cannot create {} (is the data directory writable? \
UNMODAL_DATA_DIR names another)",
            root.display()
        )
    })?;
    let tmp = root.join(format!(".unpacking-{}-{}", std::process::id(), nanos()));
    let written = write_all(&tmp).and_then(|()| {
        if dst.exists() {
            // An incomplete copy (removed by hand in part): replaced whole.
            fs::remove_dir_all(&dst).with_context(|| format!("removing the damaged {}", dst.display()))?;
        }
        fs::rename(&tmp, &dst).with_context(|| format!("moving the extension into {}", dst.display()))
    });
    match written {
        Ok(()) => Ok(dst),
        // Another unmodal unpacked the same build meanwhile: theirs is as good.
        Err(_) if intact(&dst) => {
            let _ = fs::remove_dir_all(&tmp);
            Ok(dst)
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}

fn write_all(tmp: &Path) -> Result<()> {
    for (rel, bytes) in built::FILES {
        let file = tmp.join(rel);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(&file, bytes).with_context(|| format!("writing {}", file.display()))?;
    }
    Ok(())
}

/// Every file of this build is there with its contents.
pub fn intact(dir: &Path) -> bool {
    built::FILES.iter().all(|(rel, bytes)| fs::read(dir.join(rel)).is_ok_and(|b| b == *bytes))
}

/// Removes every copy (of every build) and what an interrupted write left; returns what
/// was removed.
pub fn remove_all(data_dir: &Path) -> Result<Vec<PathBuf>> {
    let root = root(data_dir);
    let entries = match fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", root.display())),
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        fs::remove_dir_all(&path).with_context(|| format!("removing {}", path.display()))?;
        removed.push(path);
    }
    let _ = fs::remove_dir(&root);
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpack_is_whole_idempotent_and_removable() {
        let tmp = tempfile::tempdir().unwrap();
        if !carried() {
            let err = unpack(tmp.path()).unwrap_err().to_string();
            assert!(err.contains("cargo xtask build"), "{err}");
            assert!(!root(tmp.path()).exists(), "nothing written");
            return;
        }
        let dir = unpack(tmp.path()).unwrap();
        assert!(dir.join("manifest.json").is_file() && dir.join("inject.js").is_file());
        // A damaged copy is made whole again; an intact one is left as it is.
        fs::remove_file(dir.join("inject.js")).unwrap();
        assert_eq!(unpack(tmp.path()).unwrap(), dir);
        assert!(intact(&dir));
        assert_eq!(remove_all(tmp.path()).unwrap(), vec![dir]);
        assert!(!root(tmp.path()).exists());
    }

    #[test]
    fn an_unwritable_data_dir_is_a_clear_error_and_leaves_nothing() {
        if !carried() {
            return; // covered by the test above
        }
        // A data directory under a plain file: unwritable for root too.
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("file"), "x").unwrap();
        let err = format!("{:#}", unpack(&tmp.path().join("file/unmodal")).unwrap_err());
        assert!(err.contains("UNMODAL_DATA_DIR"), "{err}");
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1, "nothing but the file");
    }
}
