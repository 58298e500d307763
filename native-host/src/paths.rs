//! Where things live: the private runtime directory with the host sockets, and each
//! browser's native-messaging manifest directory.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// `UNMODAL_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/unmodal`, else `/tmp/unmodal-<uid>`.
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("UNMODAL_RUNTIME_DIR") {
        return dir.into();
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") {
        return Path::new(&dir).join("unmodal");
    }
    std::env::temp_dir().join(format!("unmodal-{}", uid()))
}

/// Creates `dir` (mode 0700) or checks that the existing one is ours and private; another
/// user must never be able to reach the host sockets.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = fs::metadata(dir)?;
    if meta.uid() != uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} belongs to another user; set UNMODAL_RUNTIME_DIR to a directory of your own", dir.display()),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("host-{pid}.sock"))
}

/// Host sockets in `dir`, newest first.
pub fn host_sockets(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("host-") && name.ends_with(".sock")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Browser {
    Chrome,
    Chromium,
    Brave,
    Edge,
}

impl Browser {
    pub const ALL: [Browser; 4] = [Self::Chrome, Self::Chromium, Self::Brave, Self::Edge];

    pub fn name(self) -> &'static str {
        match self {
            Self::Chrome => "Chrome",
            Self::Chromium => "Chromium",
            Self::Brave => "Brave",
            Self::Edge => "Edge",
        }
    }

    /// The user-level directory the browser reads native-messaging manifests from.
    pub fn manifest_dir(self, home: &Path) -> PathBuf {
        let rel = if cfg!(target_os = "macos") {
            match self {
                Self::Chrome => "Library/Application Support/Google/Chrome",
                Self::Chromium => "Library/Application Support/Chromium",
                Self::Brave => "Library/Application Support/BraveSoftware/Brave-Browser",
                Self::Edge => "Library/Application Support/Microsoft Edge",
            }
        } else {
            match self {
                Self::Chrome => ".config/google-chrome",
                Self::Chromium => ".config/chromium",
                Self::Brave => ".config/BraveSoftware/Brave-Browser",
                Self::Edge => ".config/microsoft-edge",
            }
        };
        home.join(rel).join("NativeMessagingHosts")
    }
}

pub fn home() -> io::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "HOME is not set"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_dir_is_created_0700_and_loosened_modes_are_fixed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rt");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn manifest_dirs_differ_per_browser() {
        let home = Path::new("/home/u");
        let dirs: std::collections::HashSet<_> = Browser::ALL.iter().map(|b| b.manifest_dir(home)).collect();
        assert_eq!(dirs.len(), 4);
        assert!(dirs.iter().all(|d| d.ends_with("NativeMessagingHosts")));
    }
}
