//! Where things live: the private runtime directory with the host sockets, the user's home
//! and configuration directories, and each browser's native-messaging manifest directory.
//! What differs per OS comes from `platform`.

use crate::platform;
pub use crate::platform::{Browser, same_dir, socket_being_bound, write_private};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// `UNMODAL_RUNTIME_DIR`, else the user's runtime directory (`$XDG_RUNTIME_DIR` on Linux)
/// joined with `unmodal`, else `unmodal-<uid>` in the temporary directory (Windows:
/// `%LOCALAPPDATA%\unmodal\run`).
pub fn runtime_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("UNMODAL_RUNTIME_DIR") {
        return dir.into();
    }
    platform::default_runtime_dir()
}

/// Creates `dir` (mode 0700) or checks that the existing one is ours and private; another
/// user must never be able to reach the host sockets.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    platform::ensure_private_dir(dir)
}

pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("host-{pid}.sock"))
}

/// The process a host socket is named after is gone: its socket is stale.
pub fn socket_owner_gone(socket: &Path) -> bool {
    let pid = socket
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("host-")?.strip_suffix(".sock"))
        .and_then(|p| p.parse::<u32>().ok());
    pid.is_some_and(|pid| platform::process_exists(pid) == Some(false))
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

impl Browser {
    /// The browser's default user data directory (its profiles) inside `config_dir` (see
    /// [`config_dir`]).
    pub fn user_data_dir(self, config_dir: &Path) -> PathBuf {
        platform::user_data_dir(self, config_dir)
    }

    /// The directory `unmodal install` writes the browser's native-messaging manifest
    /// into, inside `config_dir` (Linux and macOS: the user-level one the browser reads,
    /// in its user data directory; Windows: Unmodal's, named in the registry).
    pub fn manifest_dir(self, config_dir: &Path) -> PathBuf {
        platform::manifest_dir(self, config_dir)
    }
}

/// The user's home directory.
pub fn home() -> io::Result<PathBuf> {
    dirs::home_dir().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "cannot tell the home directory (HOME is not set, and the user database names none); set HOME",
        )
    })
}

/// Where Unmodal keeps what outlives a browser session (the passkeys a `keep` rule made):
/// `UNMODAL_DATA_DIR`, else `$XDG_DATA_HOME/unmodal` (`~/.local/share/unmodal`), on macOS
/// `~/Library/Application Support/unmodal`.
pub fn data_dir() -> io::Result<PathBuf> {
    if let Some(d) = std::env::var_os("UNMODAL_DATA_DIR") {
        return Ok(d.into());
    }
    dirs::data_dir().map(|d| d.join("unmodal")).ok_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "cannot tell the data directory (no home directory is known); set HOME")
    })
}

/// The directory browsers keep their profiles in: on Linux `$XDG_CONFIG_HOME`, else
/// `~/.config`; on macOS `~/Library/Application Support`; on Windows `%LOCALAPPDATA%`.
pub fn config_dir() -> io::Result<PathBuf> {
    platform::browsers_dir().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "cannot tell the configuration directory (no home directory is known); set HOME or XDG_CONFIG_HOME",
        )
    })
}

/// A temporary runtime directory as a host leaves it: private (clients refuse another).
#[cfg(test)]
pub fn private_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    ensure_private_dir(dir.path()).unwrap();
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn private_dir_is_created_0700_and_loosened_modes_are_fixed() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rt");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        ensure_private_dir(&dir).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    }

    #[test]
    fn manifest_dirs_differ_per_browser_and_lie_in_the_config_dir() {
        let config = Path::new("/home/u/.config");
        let dirs: std::collections::HashSet<_> = Browser::ALL.iter().map(|b| b.manifest_dir(config)).collect();
        assert_eq!(dirs.len(), 4);
        assert!(dirs.iter().all(|d| d.starts_with(config) && d.iter().any(|c| c == "NativeMessagingHosts")));
        let chromium = Browser::Chromium.manifest_dir(config);
        if cfg!(windows) {
            assert_eq!(chromium, config.join(r"unmodal\NativeMessagingHosts\chromium"));
        } else if cfg!(target_os = "macos") {
            assert_eq!(chromium, config.join("Chromium/NativeMessagingHosts"));
        } else {
            assert_eq!(chromium, config.join("chromium/NativeMessagingHosts"));
        }
    }
}
