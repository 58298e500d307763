//! What differs from one operating system to another, behind one interface: the rest of
//! the crate calls only the functions and types here, never `std::os::*`, `libc` or the
//! Windows API. One module per OS implements them: `unix.rs` (Linux and macOS, with
//! `linux.rs` and `macos.rs` for the little that differs between those two) and
//! `windows.rs`. A function an OS cannot do yet returns an `Unsupported` error that says
//! so; none panics.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(any(windows, target_os = "macos"))]
mod process_list;
#[cfg(all(test, target_os = "linux"))]
pub mod squatter;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use unix as os;
#[cfg(windows)]
use windows as os;

// ---- Names and files every OS module uses (here so that this module imports nothing of
// the crate above it) ---------------------------------------------------------------

/// The name the host is registered under: its manifest's file name on Linux and macOS, a
/// registry key on Windows.
pub const HOST_NAME: &str = "dev.unmodal.host";

pub fn manifest_file_name() -> String {
    format!("{HOST_NAME}.json")
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
}

/// Where a host binds its socket before renaming it to `socket_path` (clients never look here).
pub fn socket_being_bound(socket: &Path) -> PathBuf {
    socket.with_extension("sock.binding")
}

/// Writes `bytes` as `file`, private to the user (0600): into a temporary file beside it,
/// then renamed into place, so a reader never sees half a file and a symlink at `file` is
/// replaced, never written through.
pub fn write_private(file: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    let mut tmp_name = file.file_name().unwrap_or_default().to_owned();
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = file.with_file_name(tmp_name);
    // A new file: one left at the temporary name (by a crash, or planted: a hard link to
    // another file) is removed, never written through.
    let _ = std::fs::remove_file(&tmp);
    let written = create_private_new(&tmp).and_then(|mut f| f.write_all(bytes));
    match written.and_then(|()| std::fs::rename(&tmp, file)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// The path a `file://` URI's path names, percent-decoded (`/home/a`; on Windows
/// `/C:/Users/a` is `C:/Users/a`).
pub fn path_of_file_uri(decoded: &str) -> PathBuf {
    os::path_of_file_uri(decoded)
}

/// Whether `a` and `b` name the same directory, however written (symlinks, `..`).
pub fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

// ---- The private channel between `unmodal mcp` and a host ----------------------------
//
// A host is found by a file `host-<pid>.sock` in the runtime directory (newest first). On
// Unix that file is the socket; on Windows it marks a named pipe whose name is made from
// the file's path, and that only this user can open.
//
// Either end checks the other before it trusts a byte of it: the host, that each client
// runs as this user ([`check_peer`]); a client, before it writes anything, that the
// directory is this user's alone ([`check_runtime_dir`]) and that the listener runs as this
// user (in [`connect`]). Another user who made `/tmp/unmodal-<uid>` first, or put a socket
// in it while it was open, would otherwise read every request (a password `interact`
// types, say).

/// A connection as `unmodal mcp` sees it.
pub use os::ClientStream;
/// A host's listening end; [`Listener::accept`] gives the next connection.
pub use os::Listener;
/// A connection as the host sees it.
pub use os::ServerStream;

/// Starts listening at `path`. The name appears only once the host listens and nobody
/// else can connect: a client that found it earlier would take it for a dead host's.
pub fn listen(path: &Path) -> anyhow::Result<Listener> {
    os::listen(path)
}

/// `Ok` when the peer runs as this user; else why not, for the log.
pub fn check_peer(stream: &ServerStream) -> Result<(), String> {
    os::check_peer(stream)
}

/// What a client will not talk to. Nothing was written to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Untrusted {
    /// The runtime directory is not this user's alone; `why` says how (Unix: a symlink, or
    /// its owner's uid and its mode).
    Dir { dir: PathBuf, why: String },
    /// The host socket's listener runs as another user; `why` says which.
    Listener { socket: PathBuf, why: String },
}

/// Why a client did not get a stream to a host.
#[derive(Debug)]
pub enum ConnectError {
    /// The OS's error: nobody listening there is `ConnectionRefused`.
    Io(io::Error),
    Untrusted(Untrusted),
}

impl From<io::Error> for ConnectError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Whether a client may use the runtime directory `dir`. Unix: `lstat` finds a directory
/// (not a symlink) owned by this user, with no permission for group or others; an absent
/// one is fine (nothing to reach there). Windows: not checked (the pipes are).
pub fn check_runtime_dir(dir: &Path) -> Result<(), Untrusted> {
    os::check_runtime_dir(dir).map_err(|why| Untrusted::Dir { dir: dir.to_path_buf(), why })
}

/// Connects to the host at `path` once its directory passed [`check_runtime_dir`], and
/// checks that the listener runs as this user (Linux: `SO_PEERCRED`; macOS: `getpeereid`;
/// Windows: the pipe server's process token) before returning the stream: a stream that
/// fails is dropped unwritten. Nobody listening there is `Io(ConnectionRefused)`.
pub async fn connect(path: &Path) -> Result<ClientStream, ConnectError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    check_runtime_dir(dir).map_err(ConnectError::Untrusted)?;
    let stream = os::connect(path).await?;
    os::check_listener(&stream)
        .map_err(|why| ConnectError::Untrusted(Untrusted::Listener { socket: path.to_path_buf(), why }))?;
    Ok(stream)
}

// ---- Processes -------------------------------------------------------------------------

/// Whether process `pid` exists: `Some(false)` only when the OS says there is no such
/// process, `None` when it cannot tell.
pub fn process_exists(pid: u32) -> Option<bool> {
    os::process_exists(pid)
}

/// The process that started this host: its parent (on Windows, the parent of the
/// `cmd.exe` browsers start native hosts through).
pub fn launcher_pid() -> Option<u32> {
    os::launcher_pid()
}

/// Process `pid`'s command line, `None` when it cannot be read.
pub fn command_line(pid: u32) -> Option<Vec<String>> {
    os::command_line(pid)
}

/// Every running process whose command line can be read, as (pid, arguments); `None` when
/// the process list cannot be read here (Linux: `/proc`; macOS and Windows: `sysinfo`).
pub fn command_lines() -> Option<Vec<(u32, Vec<String>)>> {
    os::command_lines()
}

/// What a browser profile's lock says of the browser holding it (Chromium's, while it runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileLock {
    /// No browser holds it.
    Free,
    /// Held by this process (Linux and macOS: the `SingletonLock` symlink names it).
    HeldBy(u32),
    /// Held, by a process the lock does not name (Windows: `lockfile`, kept open and
    /// shared with no one).
    Held,
}

/// The lock of the browser profile `profile`.
pub fn profile_lock(profile: &Path) -> ProfileLock {
    os::profile_lock(profile)
}

/// Resolves when this process is asked to end (Unix: SIGTERM or SIGINT; Windows: Ctrl-C,
/// its console closing, log-off or shut-down). Never resolves if that cannot be watched.
pub async fn terminated() {
    os::terminated().await
}

/// Asks process `pid` (a child of ours) to exit (Unix: SIGTERM). An error means it was not
/// asked: the caller kills it instead of waiting.
pub fn ask_to_exit(pid: u32) -> io::Result<()> {
    os::ask_to_exit(pid)
}

/// Whether this process runs with the superuser's user id (Chromium's sandbox refuses it).
pub fn runs_as_root() -> bool {
    os::runs_as_root()
}

// ---- Files -----------------------------------------------------------------------------

/// The runtime directory when `UNMODAL_RUNTIME_DIR` does not name one.
pub fn default_runtime_dir() -> PathBuf {
    os::default_runtime_dir()
}

/// Creates `dir` private to the user, or checks that the existing one is ours and makes it
/// private again.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    os::ensure_private_dir(dir)
}

/// Creates `dir` and its parents, the last one private to the user (an existing one is
/// left as it is).
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    os::create_private_dir_all(dir)
}

/// Why a file that holds a secret is not the user's alone.
#[derive(Debug, PartialEq)]
pub enum NotPrivate {
    /// Another user owns it.
    Owner,
    /// Group or others may read or change it: these permission bits.
    Mode(u32),
}

/// Whether the open `file` is the user's alone (Unix: owned by this user, no group or
/// other bits). Windows is not checked: `None`.
pub fn not_private(file: &File) -> io::Result<Option<NotPrivate>> {
    os::not_private(file)
}

/// Makes a file `opts` creates private to the user (Unix: mode 0600).
pub fn private_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    os::private_file(opts)
}

/// Makes `opts` refuse to open through a symbolic link at the path itself.
pub fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    os::no_follow(opts)
}

/// Creates `path` to write, private to the user: never an existing file, never through a
/// symbolic link (Unix: `O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600). `AlreadyExists` when
/// anything, a symlink included, has the name.
pub fn create_private_new(path: &Path) -> io::Result<File> {
    no_follow(private_file(OpenOptions::new().write(true).create_new(true))).open(path)
}

/// Renames `from` to `to` unless something has that name (a symlink included): then
/// `AlreadyExists`, and nothing is written over.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    os::rename_no_replace(from, to)
}

// ---- A file the browser wrote, checked and moved by the one handle --------------------

/// What the OS says of a file through the handle that holds it open.
#[derive(Clone, Copy, Debug)]
pub struct HeldFacts {
    /// A regular file (not a symlink, a directory, a device or a pipe).
    pub regular: bool,
    /// Owned by this process's user; `None` where there is no owner to compare (Windows:
    /// the ACL decides).
    pub mine: Option<bool>,
    /// How many names (hard links) it has; `None` where the OS does not say.
    pub links: Option<u64>,
    /// The latest time its content or its directory entry changed (Unix: mtime and ctime,
    /// which a rename sets; Windows: last write and creation).
    pub touched: Option<std::time::SystemTime>,
}

/// A file opened once by its name in a directory, never through a symlink: what its
/// `facts` say and what `move_held` moves is that file, whatever the name points to later.
pub struct HeldFile(os::HeldFile);

impl HeldFile {
    pub fn facts(&self) -> HeldFacts {
        self.0.facts()
    }
}

/// Opens `name` (one name, no separator) in directory `dir` to read, never through a
/// symlink and never a device or a pipe (those are refused before opening).
pub fn open_held(dir: &Path, name: &std::ffi::OsStr) -> io::Result<HeldFile> {
    os::open_held(dir, name).map(HeldFile)
}

/// Moves the held file into directory `to` under the first of `names` nothing has (a taken
/// name, a symlink included, is never written over or through), private to the user; its
/// path there. Only the file held is moved: if its old name named another file by then,
/// that file is left (or put back) where it was and this fails.
pub fn move_held(
    file: HeldFile,
    to: &Path,
    names: &mut dyn Iterator<Item = std::ffi::OsString>,
) -> io::Result<PathBuf> {
    os::move_held(file.0, to, names)
}

/// Copies the held file into directory `to` under the first of `names` nothing has (never
/// written over or through a symlink), private to the user; its path there. The file held
/// stays where it is (someone else's: a driver's download).
pub fn copy_held(
    file: &HeldFile,
    to: &Path,
    names: &mut dyn Iterator<Item = std::ffi::OsString>,
) -> io::Result<PathBuf> {
    for name in names {
        let path = to.join(&name);
        let mut out = match create_private_new(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        if let Err(e) = io::copy(&mut file.0.reader(), &mut out).and_then(|_| out.sync_all()) {
            drop(out);
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        return Ok(path);
    }
    Err(no_free_name())
}

/// Why a file is not one to open: it is a symlink, or not a regular file.
fn not_regular(symlink: bool) -> io::Error {
    let what = if symlink { "a symbolic link" } else { "not a regular file" };
    io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}"))
}

/// No name of those offered was free.
fn no_free_name() -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, "no free name")
}

/// Takes an exclusive lock on `file` without waiting; `WouldBlock` when another process
/// holds it. The lock goes with the file (and the process, however it ends).
pub fn try_lock_exclusive(file: &File) -> io::Result<()> {
    os::try_lock_exclusive(file)
}

/// This binary's path with links resolved, in the form other programs take (Windows:
/// without the `\\?\` prefix `canonicalize` gives).
pub fn current_exe() -> io::Result<PathBuf> {
    os::current_exe()
}

/// Whether `path` is a file this user may run.
pub fn is_executable(path: &Path) -> bool {
    os::is_executable(path)
}

// ---- Browsers --------------------------------------------------------------------------

/// The browser's ends of a DevTools pipe, to drop once it is spawned (else a browser that
/// dies leaves our read open).
pub use os::BrowserEnds;

/// Gives the child `cmd` will start a DevTools pipe where `--remote-debugging-pipe` looks
/// for it; returns our ends (to the browser, from the browser) and the browser's.
pub fn devtools_pipe(cmd: &mut tokio::process::Command) -> io::Result<(File, File, BrowserEnds)> {
    os::devtools_pipe(cmd)
}

/// Where `unmodal browser` looks for a browser, in order: first those that load
/// `--load-extension`, then branded Google Chrome. A bare name is looked up on `PATH`, an
/// absolute path taken as it is.
pub fn browser_candidates() -> (Vec<PathBuf>, Vec<PathBuf>) {
    os::browser_candidates()
}

/// The directory browsers keep their user data directories in (Linux: the XDG config
/// directory; macOS: `~/Library/Application Support`; Windows: `%LOCALAPPDATA%`).
pub fn browsers_dir() -> Option<PathBuf> {
    os::browsers_dir()
}

/// `browser`'s default user data directory, inside `browsers_dir`.
pub fn user_data_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    os::user_data_dir(browser, browsers_dir)
}

/// The directory `unmodal install` writes `browser`'s host manifest into.
pub fn manifest_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    os::manifest_dir(browser, browsers_dir)
}

/// Tells `browser` (or, for a manifest in a user data directory, whichever browser runs
/// it) where the host manifest `manifest` is. Unix: the file in the browser's directory is
/// the registration, nothing more to do; Windows: a key under `HKCU`.
pub fn register_host(browser: Option<Browser>, manifest: &Path) -> io::Result<()> {
    os::register_host(browser, manifest)
}

/// Takes back what `register_host` did for `manifest`.
pub fn unregister_host(browser: Option<Browser>, manifest: &Path) -> io::Result<()> {
    os::unregister_host(browser, manifest)
}

/// The host manifest `browser` would read, if it is registered at all.
pub fn registered_manifest(browser: Browser, browsers_dir: &Path) -> Option<PathBuf> {
    os::registered_manifest(browser, browsers_dir)
}

// ---- For tests -------------------------------------------------------------------------

/// `path`'s permission bits where the OS has them (Unix), `None` elsewhere (Windows: the
/// ACL inherited from the user's directory keeps a file private).
#[cfg(test)]
pub fn permission_bits(path: &Path) -> Option<u32> {
    os::permission_bits(path)
}
