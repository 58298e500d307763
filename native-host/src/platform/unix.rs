//! Linux and macOS: a Unix socket in a 0700 directory, file modes, signals, `kill(2)`.

use super::Browser;
#[cfg(target_os = "linux")]
use super::linux as this;
#[cfg(target_os = "macos")]
use super::macos as this;
use anyhow::Context;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tokio::net::{UnixListener, UnixStream};

pub use this::{browser_candidates, command_line, command_lines};

fn uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

pub struct Listener(UnixListener);
pub type ServerStream = UnixStream;
pub type ClientStream = UnixStream;

impl Listener {
    pub async fn accept(&mut self) -> io::Result<ServerStream> {
        self.0.accept().await.map(|(s, _)| s)
    }
}

/// Bound under another name, made private, then renamed into place.
pub fn listen(path: &Path) -> anyhow::Result<Listener> {
    let hidden = super::socket_being_bound(path);
    let _ = fs::remove_file(&hidden);
    let listener = UnixListener::bind(&hidden).with_context(|| format!("binding {}", hidden.display()))?;
    let placed =
        fs::set_permissions(&hidden, fs::Permissions::from_mode(0o600)).and_then(|()| fs::rename(&hidden, path));
    if let Err(e) = placed {
        let _ = fs::remove_file(&hidden);
        return Err(e).with_context(|| format!("placing the socket at {}", path.display()));
    }
    Ok(Listener(listener))
}

/// `Ok` when the process at the other end of `stream` runs as this user, by the uid the
/// kernel recorded when it connected or listened (Linux: `SO_PEERCRED`; macOS and the BSDs:
/// `getpeereid`); else who it is. The host asks it of each client, a client of the host.
fn same_user(stream: &UnixStream) -> Result<(), String> {
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == uid() => Ok(()),
        Ok(cred) => Err(format!("it runs as uid {}, not as you (uid {})", cred.uid(), uid())),
        Err(e) => Err(format!("its user cannot be told: {e}")),
    }
}

/// The directory is private already; the uid check also covers a socket handed on.
pub fn check_peer(stream: &ServerStream) -> Result<(), String> {
    same_user(stream)
}

/// A socket another user placed in the directory while it was open to them (the host
/// closes it again, but leaves what is in it) is found here.
pub fn check_listener(stream: &ClientStream) -> Result<(), String> {
    same_user(stream)
}

pub async fn connect(path: &Path) -> io::Result<ClientStream> {
    UnixStream::connect(path).await
}

/// What keeps a directory from being this user's alone.
enum NotPrivate {
    Symlink(Option<PathBuf>),
    NotDir,
    /// Another user's (uid, mode).
    Owner(u32, u32),
    /// This user's, but open to group or others (mode).
    Open(u32),
}

impl NotPrivate {
    /// `meta` as `lstat` (symlinks) or `stat` gives it for `dir`; `None` when private.
    fn of(dir: &Path, meta: &fs::Metadata) -> Option<Self> {
        let mode = meta.mode() & 0o7777;
        if meta.file_type().is_symlink() {
            Some(Self::Symlink(fs::read_link(dir).ok()))
        } else if !meta.is_dir() {
            Some(Self::NotDir)
        } else if meta.uid() != uid() {
            Some(Self::Owner(meta.uid(), mode))
        } else if mode & 0o077 != 0 {
            Some(Self::Open(mode))
        } else {
            None
        }
    }

    fn said(&self) -> String {
        match self {
            Self::Symlink(Some(to)) => format!("it is a symbolic link (to {})", to.display()),
            Self::Symlink(None) => "it is a symbolic link".into(),
            Self::NotDir => "it is not a directory".into(),
            Self::Owner(owner, mode) => {
                format!("it is owned by uid {owner}, not by you (uid {}); mode {mode:04o}", uid())
            }
            Self::Open(mode) => format!("it is yours (uid {}) but open to group or others: mode {mode:04o}", uid()),
        }
    }
}

/// `lstat`, so a symlink is refused, not followed: another user can point one in a shared
/// directory (`/tmp`) wherever they like, and change it later. Absent is `Ok`: nothing
/// can be reached there.
pub fn check_runtime_dir(dir: &Path) -> Result<(), String> {
    match fs::symlink_metadata(dir) {
        Ok(meta) => NotPrivate::of(dir, &meta).map_or(Ok(()), |p| Err(p.said())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("it cannot be checked: {e}")),
    }
}

pub fn path_of_file_uri(decoded: &str) -> PathBuf {
    PathBuf::from(decoded)
}

/// Chromium's `SingletonLock` is a symlink to `<host name>-<pid>`; a lock left by a browser
/// that crashed names a process that is gone, so it is `Free`.
pub fn profile_lock(profile: &Path) -> super::ProfileLock {
    let pid = std::fs::read_link(profile.join("SingletonLock"))
        .ok()
        .and_then(|target| target.to_str()?.rsplit('-').next()?.parse::<u32>().ok());
    match pid {
        Some(pid) if process_exists(pid) == Some(true) => super::ProfileLock::HeldBy(pid),
        _ => super::ProfileLock::Free,
    }
}

pub fn process_exists(pid: u32) -> Option<bool> {
    let pid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0)?;
    // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return Some(true);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EPERM) => Some(true),
        Some(libc::ESRCH) => Some(false),
        _ => None,
    }
}

pub fn launcher_pid() -> Option<u32> {
    // SAFETY: getppid has no preconditions and cannot fail.
    u32::try_from(unsafe { libc::getppid() }).ok()
}

pub async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
        }
        _ => std::future::pending().await,
    }
}

pub fn ask_to_exit(pid: u32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill(2) with a pid the caller started and has not reaped.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub fn runs_as_root() -> bool {
    uid() == 0
}

/// The user's runtime directory (`$XDG_RUNTIME_DIR` on Linux) joined with `unmodal`, else
/// `unmodal-<uid>` in the temporary directory.
pub fn default_runtime_dir() -> PathBuf {
    if let Some(dir) = dirs::runtime_dir() {
        return dir.join("unmodal");
    }
    std::env::temp_dir().join(format!("unmodal-{}", uid()))
}

/// Mode 0700, owned by this user; another user must never be able to reach the sockets.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    match NotPrivate::of(dir, &fs::metadata(dir)?) {
        None => Ok(()),
        Some(NotPrivate::Open(_)) => fs::set_permissions(dir, fs::Permissions::from_mode(0o700)),
        Some(other) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {}; set UNMODAL_RUNTIME_DIR to a directory of your own", dir.display(), other.said()),
        )),
    }
}

pub fn not_private(file: &File) -> io::Result<Option<super::NotPrivate>> {
    let meta = file.metadata()?;
    Ok(if meta.uid() != uid() {
        Some(super::NotPrivate::Owner)
    } else if meta.mode() & 0o077 != 0 {
        Some(super::NotPrivate::Mode(meta.mode() & 0o7777))
    } else {
        None
    })
}

pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

pub fn private_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.mode(0o600)
}

pub fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW)
}

/// `renameat2(RENAME_NOREPLACE)` (macOS: `renameatx_np(RENAME_EXCL)`); where the file
/// system has no such rename, a hard link (which never replaces) and the old name removed.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use rustix::io::Errno;
    match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
            fs::hard_link(from, to)?;
            fs::remove_file(from)
        }
        r => r.map_err(io::Error::from),
    }
}

pub struct HeldFile {
    /// The directory it was opened in, and its name there.
    dir: OwnedFd,
    name: std::ffi::OsString,
    file: File,
    /// `fstat` of the handle: what the checks read.
    meta: fs::Metadata,
}

/// (device, inode) of a `statat`; the fields' types differ between targets.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn id_of(st: &rustix::fs::Stat) -> (u64, u64) {
    (st.st_dev as u64, st.st_ino as u64)
}

fn at(secs: i64, nanos: i64) -> Option<std::time::SystemTime> {
    let d = std::time::Duration::new(u64::try_from(secs).ok()?, u32::try_from(nanos).ok()?);
    std::time::UNIX_EPOCH.checked_add(d)
}

pub fn open_held(dir: &Path, name: &std::ffi::OsStr) -> io::Result<HeldFile> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, openat, statat};
    let dir = rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    // Looked at before it is opened: opening a device or a pipe can do something, or block.
    let kind = FileType::from_raw_mode(statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode);
    if kind != FileType::RegularFile {
        return Err(super::not_regular(kind == FileType::Symlink));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let file = File::from(openat(&dir, name, flags, Mode::empty())?);
    let meta = file.metadata()?;
    Ok(HeldFile { dir, name: name.to_owned(), file, meta })
}

impl HeldFile {
    /// Its bytes, from where reading last stopped.
    pub fn reader(&self) -> &File {
        &self.file
    }

    pub fn facts(&self) -> super::HeldFacts {
        let m = &self.meta;
        let touched = at(m.mtime(), m.mtime_nsec()).max(at(m.ctime(), m.ctime_nsec()));
        super::HeldFacts {
            regular: m.file_type().is_file(),
            mine: Some(m.uid() == uid()),
            links: Some(m.nlink()),
            touched,
        }
    }

    fn id(&self) -> (u64, u64) {
        (self.meta.dev(), self.meta.ino())
    }
}

/// Renamed without replacing, then checked: a rename moves whatever has the name by then,
/// so the moved entry must be the (device, inode) that was opened and checked, else it
/// goes back. Another file system (or one without a no-replace rename): copied from the
/// handle into a new file, and the old name removed only if it still names that inode.
pub fn move_held(h: HeldFile, to: &Path, names: &mut dyn Iterator<Item = std::ffi::OsString>) -> io::Result<PathBuf> {
    use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags, renameat_with, statat};
    use rustix::io::Errno;
    let to_dir = rustix::fs::open(to, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    while let Some(name) = names.next() {
        match renameat_with(&h.dir, &h.name, &to_dir, &name, RenameFlags::NOREPLACE) {
            Ok(()) => {
                if statat(&to_dir, &name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| id_of(&st) == h.id()) {
                    h.file.set_permissions(fs::Permissions::from_mode(0o600))?;
                    return Ok(to.join(name));
                }
                let back = renameat_with(&to_dir, &name, &h.dir, &h.name, RenameFlags::NOREPLACE);
                return Err(io::Error::other(match back {
                    Ok(()) => {
                        "its name named another file by the time it was moved; that file was left in place".into()
                    }
                    Err(_) => format!(
                        "its name named another file by the time it was moved; that file is now {}",
                        to.join(&name).display()
                    ),
                }));
            }
            Err(Errno::EXIST) => continue,
            Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {
                return copy_held(&h, &to_dir, to, &mut std::iter::once(name).chain(names));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(super::no_free_name())
}

fn copy_held(
    h: &HeldFile,
    to_dir: &OwnedFd,
    to: &Path,
    names: &mut dyn Iterator<Item = std::ffi::OsString>,
) -> io::Result<PathBuf> {
    use rustix::fs::{AtFlags, Mode, OFlags, openat, statat, unlinkat};
    use rustix::io::Errno;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for name in names {
        let out = match openat(to_dir, &name, flags, Mode::RUSR | Mode::WUSR) {
            Ok(fd) => File::from(fd),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        };
        if let Err(e) = io::copy(&mut &h.file, &mut &out).and_then(|_| out.sync_all()) {
            let _ = unlinkat(to_dir, &name, AtFlags::empty());
            return Err(e);
        }
        // No unlink-if-inode call exists: between this look and the unlink a few
        // instructions run, and at worst a name in the download directory goes, never a
        // file elsewhere nor a symlink's target. The copy is the checked file's either way.
        if statat(&h.dir, &h.name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| id_of(&st) == h.id()) {
            let _ = unlinkat(&h.dir, &h.name, AtFlags::empty());
        }
        return Ok(to.join(name));
    }
    Err(super::no_free_name())
}

pub fn try_lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: a valid open descriptor; flock has no other preconditions.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    Err(io::Error::last_os_error())
}

pub fn current_exe() -> io::Result<PathBuf> {
    std::env::current_exe().and_then(fs::canonicalize)
}

pub fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub struct BrowserEnds(#[allow(dead_code)] OwnedFd, #[allow(dead_code)] OwnedFd);

/// The browser reads fd 3 and writes fd 4.
pub fn devtools_pipe(cmd: &mut tokio::process::Command) -> io::Result<(File, File, BrowserEnds)> {
    let (browser_reads, we_write) = this::pipe_cloexec()?;
    let (we_read, browser_writes) = this::pipe_cloexec()?;
    let (r, w) = (browser_reads.as_raw_fd(), browser_writes.as_raw_fd());
    // SAFETY: only async-signal-safe calls (fcntl, dup2, close) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Moved above 10 first: either end may itself be fd 3 or 4.
            let (r2, w2) = (libc::fcntl(r, libc::F_DUPFD, 10), libc::fcntl(w, libc::F_DUPFD, 10));
            if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                return Err(io::Error::last_os_error());
            }
            libc::close(r2);
            libc::close(w2);
            Ok(())
        });
    }
    Ok((we_write.into(), we_read.into(), BrowserEnds(browser_reads, browser_writes)))
}

/// Linux: the XDG config directory; macOS: `~/Library/Application Support`.
pub fn browsers_dir() -> Option<PathBuf> {
    dirs::config_dir()
}

pub fn user_data_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    browsers_dir.join(this::user_data_dir_name(browser))
}

/// The user-level directory the browser reads native-messaging manifests from.
pub fn manifest_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    user_data_dir(browser, browsers_dir).join("NativeMessagingHosts")
}

/// The file in the browser's manifest directory is the registration.
pub fn register_host(_browser: Option<Browser>, _manifest: &Path) -> io::Result<()> {
    Ok(())
}

pub fn unregister_host(_browser: Option<Browser>, _manifest: &Path) -> io::Result<()> {
    Ok(())
}

pub fn registered_manifest(browser: Browser, browsers_dir: &Path) -> Option<PathBuf> {
    Some(manifest_dir(browser, browsers_dir).join(super::manifest_file_name()))
}

/// A missing file reads as 0: no test takes that for private.
#[cfg(test)]
pub fn permission_bits(path: &Path) -> Option<u32> {
    Some(fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o777))
}

#[cfg(test)]
mod tests {
    /// The move across file systems (not made here: `copy_held` is called as `move_held`
    /// calls it on `EXDEV`): the copy is of the file held, private, and the old name goes
    /// only while it still names that file.
    #[test]
    fn the_copy_from_the_handle_removes_the_old_name_only_if_it_still_is_that_file() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("from"), tmp.path().join("to"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::create_dir_all(&to).unwrap();
        let to_dir = rustix::fs::open(&to, rustix::fs::OFlags::DIRECTORY, rustix::fs::Mode::empty()).unwrap();
        std::fs::write(from.join("a"), b"abc").unwrap();
        std::fs::write(to.join("a"), b"old").unwrap();
        let held = super::open_held(&from, "a".as_ref()).unwrap();
        let copied = super::copy_held(&held, &to_dir, &to, &mut ["a".into(), "a (1)".into()].into_iter()).unwrap();
        assert_eq!(copied, to.join("a (1)"));
        assert_eq!(std::fs::read(&copied).unwrap(), b"abc");
        assert_eq!(std::fs::read(to.join("a")).unwrap(), b"old", "a taken name is not written over");
        assert_eq!(std::fs::metadata(&copied).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!from.join("a").exists(), "the old name goes");
        // Another file took the name after it was opened: the copy is still of the file
        // held, and the other file stays.
        std::fs::write(from.join("b"), b"checked").unwrap();
        let held = super::open_held(&from, "b".as_ref()).unwrap();
        std::fs::write(tmp.path().join("other"), b"other").unwrap();
        std::fs::rename(tmp.path().join("other"), from.join("b")).unwrap();
        let copied = super::copy_held(&held, &to_dir, &to, &mut std::iter::once("b".into())).unwrap();
        assert_eq!(std::fs::read(&copied).unwrap(), b"checked");
        assert_eq!(std::fs::read(from.join("b")).unwrap(), b"other");
    }

    #[tokio::test]
    async fn the_host_file_is_the_socket_itself() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host-1.sock");
        let _listener = super::listen(&path).unwrap();
        assert!(std::fs::metadata(&path).unwrap().file_type().is_socket());
    }

    #[test]
    fn a_runtime_dir_must_be_ours_and_closed_and_is_checked_without_following_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("rt");
        assert_eq!(super::check_runtime_dir(&dir), Ok(()), "absent: nothing to reach there");
        super::ensure_private_dir(&dir).unwrap();
        assert_eq!(super::check_runtime_dir(&dir), Ok(()));

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let why = super::check_runtime_dir(&link).unwrap_err();
        assert!(why.contains("symbolic link") && why.contains(&dir.display().to_string()), "{why}");

        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        let why = super::check_runtime_dir(&dir).unwrap_err();
        assert!(why.contains("open to group or others: mode 0750"), "{why}");
        // The host makes it private again (what others put in it meanwhile is the
        // listener check's to find).
        super::ensure_private_dir(&dir).unwrap();
        assert_eq!(super::check_runtime_dir(&dir), Ok(()));

        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(super::check_runtime_dir(&file).unwrap_err().contains("not a directory"));
    }
}
