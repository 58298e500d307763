//! Windows: a named pipe only this user can open, host registration in the registry,
//! processes through the Windows API and `sysinfo`. Typechecked here; run only under Wine.

use super::Browser;
pub use super::process_list::command_lines;
use std::ffi::c_void;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::net::windows::named_pipe::{ClientOptions, NamedPipeClient, NamedPipeServer, ServerOptions};
use windows_sys::Win32::Foundation::{
    CloseHandle, ERROR_ACCESS_DENIED, ERROR_FILE_NOT_FOUND, ERROR_INVALID_PARAMETER, ERROR_LOCK_VIOLATION,
    ERROR_PIPE_BUSY, ERROR_SHARING_VIOLATION, HANDLE, HANDLE_FLAG_INHERIT, LocalFree, STILL_ACTIVE,
    SetHandleInformation,
};
use windows_sys::Win32::Security::Authorization::{
    ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
};
use windows_sys::Win32::Security::{
    EqualSid, GetTokenInformation, PSECURITY_DESCRIPTOR, SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER, TokenUser,
};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_FLAG_OPEN_REPARSE_POINT, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx,
};
use windows_sys::Win32::System::IO::OVERLAPPED;
use windows_sys::Win32::System::Pipes::{CreatePipe, GetNamedPipeClientProcessId, GetNamedPipeServerProcessId};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetExitCodeProcess, OpenProcess, OpenProcessToken, PROCESS_QUERY_LIMITED_INFORMATION,
};

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("{what} is not supported on Windows yet"))
}

// ---- Handles and users -----------------------------------------------------------------

/// A handle closed on drop.
struct Owned(HANDLE);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: a handle we opened and close once.
        unsafe { CloseHandle(self.0) };
    }
}

fn open_process(pid: u32) -> io::Result<Owned> {
    // SAFETY: no pointers; a null handle is the failure.
    let h = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if h.is_null() { Err(io::Error::last_os_error()) } else { Ok(Owned(h)) }
}

/// The `TOKEN_USER` of a process's token, in a buffer aligned for it.
struct UserOf(Vec<u64>);

impl UserOf {
    fn process(process: HANDLE) -> io::Result<Self> {
        let mut token: HANDLE = std::ptr::null_mut();
        // SAFETY: `token` is written on success only.
        if unsafe { OpenProcessToken(process, TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let token = Owned(token);
        let mut len = 0u32;
        // SAFETY: asks only for the size (null buffer of length 0).
        unsafe { GetTokenInformation(token.0, TokenUser, std::ptr::null_mut(), 0, &mut len) };
        if len == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u64; (len as usize).div_ceil(8)];
        // SAFETY: `buf` holds at least `len` bytes, aligned for TOKEN_USER.
        if unsafe { GetTokenInformation(token.0, TokenUser, buf.as_mut_ptr().cast(), len, &mut len) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Self(buf))
    }

    fn this_process() -> io::Result<Self> {
        // SAFETY: a pseudo-handle that needs no closing.
        Self::process(unsafe { GetCurrentProcess() })
    }

    fn of_pid(pid: u32) -> io::Result<Self> {
        Self::process(open_process(pid)?.0)
    }

    fn sid(&self) -> *mut c_void {
        // SAFETY: the buffer holds a TOKEN_USER whose SID points inside the buffer.
        unsafe { (*self.0.as_ptr().cast::<TOKEN_USER>()).User.Sid }
    }

    fn same_user(&self, other: &Self) -> bool {
        // SAFETY: both SIDs are valid for as long as their buffers live.
        unsafe { EqualSid(self.sid(), other.sid()) != 0 }
    }

    fn sid_string(&self) -> io::Result<String> {
        let mut text: *mut u16 = std::ptr::null_mut();
        // SAFETY: `text` is allocated by the call on success and freed below.
        if unsafe { ConvertSidToStringSidW(self.sid(), &mut text) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a NUL-terminated UTF-16 string from the call above.
        let s = unsafe {
            let len = (0..).take_while(|&i| *text.add(i) != 0).count();
            String::from_utf16_lossy(std::slice::from_raw_parts(text, len))
        };
        // SAFETY: allocated with LocalAlloc by ConvertSidToStringSidW.
        unsafe { LocalFree(text.cast()) };
        Ok(s)
    }
}

/// Whether the process at the other end of a pipe (`peer_pid` reads its id) runs as this user.
fn peer_is_this_user(
    pipe: RawHandle,
    peer_pid: unsafe extern "system" fn(HANDLE, *mut u32) -> i32,
) -> Result<(), String> {
    let mut pid = 0u32;
    // SAFETY: a pipe handle that lives as long as the stream it came from.
    if unsafe { peer_pid(pipe.cast(), &mut pid) } == 0 {
        return Err(format!("its process is unknown: {}", io::Error::last_os_error()));
    }
    let theirs = UserOf::of_pid(pid).map_err(|e| format!("process {pid}: {e}"))?;
    let ours = UserOf::this_process().map_err(|e| format!("this process's user: {e}"))?;
    if ours.same_user(&theirs) { Ok(()) } else { Err(format!("process {pid} runs as another user")) }
}

// ---- The private channel ---------------------------------------------------------------

/// The pipe that the marker file `path` stands for: named after the path (made absolute,
/// case folded) so hosts of different runtime directories never meet.
fn pipe_name(path: &Path) -> String {
    let abs = path
        .parent()
        .and_then(|d| fs::canonicalize(d).ok())
        .zip(path.file_name())
        .map_or_else(|| path.to_path_buf(), |(d, n)| d.join(n));
    // FNV-1a: the same in every build, unlike std's hasher.
    let hash = abs
        .to_string_lossy()
        .to_lowercase()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!(r"\\.\pipe\unmodal-{hash:016x}")
}

/// A new instance of the pipe: a DACL that grants this user alone, remote clients refused.
fn create(name: &str, first: bool) -> io::Result<NamedPipeServer> {
    let sid = UserOf::this_process()?.sid_string()?;
    let sddl: Vec<u16> = format!("D:P(A;;GA;;;{sid})").encode_utf16().chain([0]).collect();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: a NUL-terminated string; `sd` is allocated on success and freed below.
    if unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            std::ptr::null_mut(),
        )
    } == 0
    {
        return Err(io::Error::last_os_error());
    }
    let mut attrs = SECURITY_ATTRIBUTES {
        nLength: size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: sd,
        bInheritHandle: 0,
    };
    // SAFETY: `attrs` and the descriptor it points to outlive the call.
    let made = unsafe {
        ServerOptions::new()
            .first_pipe_instance(first)
            .reject_remote_clients(true)
            .create_with_security_attributes_raw(name, (&raw mut attrs).cast())
    };
    // SAFETY: allocated with LocalAlloc by the conversion above.
    unsafe { LocalFree(sd) };
    made
}

pub struct Listener {
    name: String,
    next: NamedPipeServer,
}

pub type ServerStream = NamedPipeServer;
pub type ClientStream = NamedPipeClient;

impl Listener {
    /// The connected instance goes to the caller; a new one waits for the next client.
    pub async fn accept(&mut self) -> io::Result<ServerStream> {
        if let Err(e) = self.next.connect().await {
            // That instance is spent (the client left first): wait on a fresh one.
            self.next = create(&self.name, false)?;
            return Err(e);
        }
        let fresh = create(&self.name, false)?;
        Ok(std::mem::replace(&mut self.next, fresh))
    }
}

/// The pipe first (the first instance, so nobody else holds the name), then the marker
/// file clients find it by.
pub fn listen(path: &Path) -> anyhow::Result<Listener> {
    use anyhow::Context;
    let name = pipe_name(path);
    let next = create(&name, true).with_context(|| format!("creating the pipe {name}"))?;
    super::write_private(path, name.as_bytes()).with_context(|| format!("placing {}", path.display()))?;
    Ok(Listener { name, next })
}

pub fn check_peer(stream: &ServerStream) -> Result<(), String> {
    peer_is_this_user(stream.as_raw_handle(), GetNamedPipeClientProcessId)
}

/// The process serving the pipe runs as this user.
pub fn check_listener(stream: &ClientStream) -> Result<(), String> {
    peer_is_this_user(stream.as_raw_handle(), GetNamedPipeServerProcessId)
}

/// Nothing to check yet: the directory is under the user's profile, each pipe carries its own
/// DACL, and [`check_listener`] checks the process serving it.
pub fn check_runtime_dir(_dir: &Path) -> Result<(), String> {
    Ok(())
}

/// Opens the host's pipe. No such pipe is `ConnectionRefused`, as for a Unix socket nobody
/// listens on.
pub async fn connect(path: &Path) -> io::Result<ClientStream> {
    let name = pipe_name(path);
    let client = loop {
        match ClientOptions::new().open(&name) {
            Ok(c) => break c,
            Err(e) if e.raw_os_error() == Some(ERROR_PIPE_BUSY as i32) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) if e.raw_os_error() == Some(ERROR_FILE_NOT_FOUND as i32) => {
                return Err(io::Error::new(io::ErrorKind::ConnectionRefused, e));
            }
            Err(e) => return Err(e),
        }
    };
    Ok(client)
}

pub fn path_of_file_uri(decoded: &str) -> PathBuf {
    let b = decoded.as_bytes();
    let drive = b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':';
    PathBuf::from(if drive { &decoded[1..] } else { decoded })
}

// ---- Processes -------------------------------------------------------------------------

/// Chromium keeps the profile's `lockfile` open, shared with no one, while it runs; the file
/// names no process. Opening it without sharing fails with a sharing violation then.
pub fn profile_lock(profile: &Path) -> super::ProfileLock {
    match OpenOptions::new().read(true).share_mode(0).open(profile.join("lockfile")) {
        Err(e) if e.raw_os_error() == Some(ERROR_SHARING_VIOLATION as i32) => super::ProfileLock::Held,
        _ => super::ProfileLock::Free,
    }
}

pub fn process_exists(pid: u32) -> Option<bool> {
    match open_process(pid) {
        Ok(h) => {
            let mut code = 0u32;
            // SAFETY: a valid process handle; `code` is written on success.
            if unsafe { GetExitCodeProcess(h.0, &mut code) } == 0 {
                return None;
            }
            Some(code == STILL_ACTIVE as u32)
        }
        Err(e) if e.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => Some(false),
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => Some(true),
        Err(_) => None,
    }
}

fn processes(pids: &[sysinfo::Pid], cmd: bool) -> sysinfo::System {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, UpdateKind};
    let mut sys = sysinfo::System::new();
    let kind = ProcessRefreshKind::nothing();
    let kind = if cmd { kind.with_cmd(UpdateKind::Always) } else { kind };
    sys.refresh_processes_specifics(ProcessesToUpdate::Some(pids), false, kind);
    sys
}

/// Browsers start a native host through `cmd.exe`: the browser is that one's parent.
pub fn launcher_pid() -> Option<u32> {
    let me = sysinfo::get_current_pid().ok()?;
    let parent = processes(&[me], false).process(me)?.parent()?;
    let sys = processes(&[parent], false);
    let launcher = sys.process(parent)?;
    if launcher.name().eq_ignore_ascii_case("cmd.exe") {
        return launcher.parent().map(sysinfo::Pid::as_u32);
    }
    Some(parent.as_u32())
}

pub fn command_line(pid: u32) -> Option<Vec<String>> {
    let pid = sysinfo::Pid::from_u32(pid);
    let sys = processes(&[pid], true);
    let args: Vec<String> = sys.process(pid)?.cmd().iter().map(|a| a.to_string_lossy().into_owned()).collect();
    (!args.is_empty()).then_some(args)
}

pub async fn terminated() {
    use tokio::signal::windows::{ctrl_c, ctrl_close, ctrl_logoff, ctrl_shutdown};
    match (ctrl_c(), ctrl_close(), ctrl_logoff(), ctrl_shutdown()) {
        (Ok(mut c), Ok(mut close), Ok(mut logoff), Ok(mut shutdown)) => {
            tokio::select! {
                _ = c.recv() => {}, _ = close.recv() => {}, _ = logoff.recv() => {}, _ = shutdown.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

/// No signal to ask a GUI process to close with: a browser Unmodal started is asked over its
/// DevTools pipe instead (`Browser.close`, `browser/pipe.rs`).
pub fn ask_to_exit(_pid: u32) -> io::Result<()> {
    Err(unsupported("asking a process to close by its id"))
}

pub fn runs_as_root() -> bool {
    false
}

// ---- Files -----------------------------------------------------------------------------

/// `%LOCALAPPDATA%\unmodal\run`: under the user's profile, which only the user can read.
pub fn default_runtime_dir() -> PathBuf {
    match dirs::data_local_dir() {
        Some(d) => d.join("unmodal").join("run"),
        None => std::env::temp_dir().join("unmodal"),
    }
}

/// Created; what it inherits from the user's profile keeps it private. (Its ACL is not
/// checked yet; the pipes carry their own.)
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

/// Not checked: a file's ACL, not a mode, says who reads it (the help says so).
pub fn not_private(_file: &File) -> io::Result<Option<super::NotPrivate>> {
    Ok(None)
}

pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}

/// Files inherit their directory's ACL (the user's profile: private).
pub fn private_file(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts
}

pub fn no_follow(opts: &mut OpenOptions) -> &mut OpenOptions {
    opts.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING`: a taken name fails.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::windows::ffi::OsStrExt;
    use windows_sys::Win32::Storage::FileSystem::MoveFileExW;
    let wide = |p: &Path| p.as_os_str().encode_wide().chain(Some(0)).collect::<Vec<u16>>();
    let (from, to) = (wide(from), wide(to));
    // SAFETY: two NUL-terminated wide strings that outlive the call.
    if unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub struct HeldFile {
    file: File,
    meta: fs::Metadata,
}

/// Opened with `DELETE` access, to remove this very file through its handle once it is
/// copied, and shared for reading only: nobody renames, deletes or writes it meanwhile.
pub fn open_held(dir: &Path, name: &std::ffi::OsStr) -> io::Result<HeldFile> {
    use std::os::windows::fs::MetadataExt;
    use windows_sys::Win32::Storage::FileSystem::{
        DELETE, FILE_ATTRIBUTE_REPARSE_POINT, FILE_GENERIC_READ, FILE_SHARE_READ,
    };
    let file = OpenOptions::new()
        .read(true)
        .access_mode(FILE_GENERIC_READ | DELETE)
        .share_mode(FILE_SHARE_READ)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(dir.join(name))?;
    let meta = file.metadata()?;
    let link = meta.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0;
    if link || !meta.is_file() {
        return Err(super::not_regular(link));
    }
    Ok(HeldFile { file, meta })
}

impl HeldFile {
    /// Its bytes, from where reading last stopped.
    pub fn reader(&self) -> &File {
        &self.file
    }

    pub fn facts(&self) -> super::HeldFacts {
        let m = &self.meta;
        super::HeldFacts {
            regular: m.is_file(),
            mine: None,
            links: None,
            touched: m.modified().ok().max(m.created().ok()),
        }
    }
}

/// Copied from the handle into a new file, then that handle's file deleted (it goes when
/// the handle closes): no name is looked up again.
pub fn move_held(h: HeldFile, to: &Path, names: &mut dyn Iterator<Item = std::ffi::OsString>) -> io::Result<PathBuf> {
    use windows_sys::Win32::Storage::FileSystem::{
        FILE_DISPOSITION_INFO, FileDispositionInfo, SetFileInformationByHandle,
    };
    for name in names {
        let path = to.join(&name);
        let mut out = match super::create_private_new(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        if let Err(e) = io::copy(&mut &h.file, &mut out).and_then(|_| out.sync_all()) {
            drop(out);
            let _ = fs::remove_file(&path);
            return Err(e);
        }
        let gone = FILE_DISPOSITION_INFO { DeleteFile: true };
        let size = u32::try_from(std::mem::size_of::<FILE_DISPOSITION_INFO>()).unwrap_or(0);
        // The copy is made either way; a browser's file that could not be deleted stays.
        // SAFETY: a valid file handle, and a FILE_DISPOSITION_INFO of the size given that
        // outlives the call.
        let _ = unsafe {
            SetFileInformationByHandle(
                h.file.as_raw_handle(),
                FileDispositionInfo,
                std::ptr::from_ref(&gone).cast(),
                size,
            )
        };
        return Ok(path);
    }
    Err(super::no_free_name())
}

pub fn try_lock_exclusive(file: &File) -> io::Result<()> {
    // SAFETY: OVERLAPPED is plain data; all zero locks from offset 0.
    let mut at: OVERLAPPED = unsafe { std::mem::zeroed() };
    let flags = LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY;
    // SAFETY: a valid file handle and an OVERLAPPED that outlives the (immediate) call.
    if unsafe { LockFileEx(file.as_raw_handle().cast(), flags, 0, u32::MAX, u32::MAX, &mut at) } != 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        return Err(io::Error::new(io::ErrorKind::WouldBlock, e));
    }
    Err(e)
}

/// A browser starts the host through `cmd.exe`, which does not take `\\?\` paths.
pub fn current_exe() -> io::Result<PathBuf> {
    let exe = fs::canonicalize(std::env::current_exe()?)?;
    let text = exe.to_string_lossy();
    Ok(match text.strip_prefix(r"\\?\") {
        Some(unc) if unc.starts_with(r"UNC\") => PathBuf::from(format!(r"\\{}", &unc[4..])),
        Some(local) if local.as_bytes().get(1) == Some(&b':') => PathBuf::from(local),
        _ => exe,
    })
}

pub fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file())
}

// ---- Browsers --------------------------------------------------------------------------

/// The browser's ends of its DevTools pipe: inherited by the browser, closed here once it
/// has started (then the pipe ends when the browser does).
pub struct BrowserEnds(#[allow(dead_code)] OwnedHandle, #[allow(dead_code)] OwnedHandle);

/// An anonymous pipe whose one end (the reading one if `child_reads`) the next process
/// started inherits; the other stays here alone. Returns (the child's end, ours).
fn pipe_for_child(child_reads: bool) -> io::Result<(OwnedHandle, OwnedHandle)> {
    let inherit = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: std::ptr::null_mut(),
        bInheritHandle: 1,
    };
    let (mut read, mut write): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: valid out pointers and attributes that outlive the call.
    if unsafe { CreatePipe(&mut read, &mut write, &inherit, 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: CreatePipe just made both handles; nothing else owns them.
    let (read, write) = unsafe { (OwnedHandle::from_raw_handle(read), OwnedHandle::from_raw_handle(write)) };
    let (child, ours) = if child_reads { (read, write) } else { (write, read) };
    // SAFETY: a handle this process owns.
    if unsafe { SetHandleInformation(ours.as_raw_handle(), HANDLE_FLAG_INHERIT, 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((child, ours))
}

/// Chromium on Windows takes its DevTools pipe as two inherited handles named on its
/// command line (`--remote-debugging-io-pipes=<it reads>,<it writes>`; the process starter
/// inherits inheritable handles). Returns our writing and reading ends.
pub fn devtools_pipe(cmd: &mut tokio::process::Command) -> io::Result<(File, File, BrowserEnds)> {
    let (browser_reads, we_write) = pipe_for_child(true)?;
    let (browser_writes, we_read) = pipe_for_child(false)?;
    cmd.arg(format!(
        "--remote-debugging-io-pipes={},{}",
        browser_reads.as_raw_handle() as usize,
        browser_writes.as_raw_handle() as usize
    ));
    Ok((File::from(we_write), File::from(we_read), BrowserEnds(browser_reads, browser_writes)))
}

pub fn browser_candidates() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let under = |var: &str, rel: &str| std::env::var_os(var).map(|d| PathBuf::from(d).join(rel));
    let chromium = r"Chromium\Application\chrome.exe";
    let chrome = r"Google\Chrome\Application\chrome.exe";
    let unbranded =
        [Some(PathBuf::from("chromium.exe")), under("LOCALAPPDATA", chromium), under("ProgramFiles", chromium)];
    let branded = [under("ProgramFiles", chrome), under("ProgramFiles(x86)", chrome), under("LOCALAPPDATA", chrome)];
    (unbranded.into_iter().flatten().collect(), branded.into_iter().flatten().collect())
}

/// `%LOCALAPPDATA%`, where the browsers keep their `User Data`.
pub fn browsers_dir() -> Option<PathBuf> {
    dirs::data_local_dir()
}

pub fn user_data_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    browsers_dir.join(match browser {
        Browser::Chrome => r"Google\Chrome\User Data",
        Browser::Chromium => r"Chromium\User Data",
        Browser::Brave => r"BraveSoftware\Brave-Browser\User Data",
        Browser::Edge => r"Microsoft\Edge\User Data",
    })
}

/// Browsers on Windows find manifests through the registry only: ours live with Unmodal.
pub fn manifest_dir(browser: Browser, browsers_dir: &Path) -> PathBuf {
    browsers_dir.join(r"unmodal\NativeMessagingHosts").join(browser.name().to_lowercase())
}

fn registry_key(browser: Browser) -> String {
    let vendor = match browser {
        Browser::Chrome => r"Google\Chrome",
        Browser::Chromium => "Chromium",
        Browser::Brave => r"BraveSoftware\Brave-Browser",
        Browser::Edge => r"Microsoft\Edge",
    };
    format!(r"Software\{vendor}\NativeMessagingHosts\{}", super::HOST_NAME)
}

fn registry_value(browser: Browser) -> Option<PathBuf> {
    let hkcu = winreg::RegKey::predef(winreg::enums::HKEY_CURRENT_USER);
    let value: String = hkcu.open_subkey(registry_key(browser)).ok()?.get_value("").ok()?;
    Some(PathBuf::from(value))
}

/// A manifest in a user data directory is for whichever browser runs it: the registry is
/// per user, not per profile, so it is registered for all four.
fn browsers(browser: Option<Browser>) -> Vec<Browser> {
    browser.map_or_else(|| Browser::ALL.to_vec(), |b| vec![b])
}

pub fn register_host(browser: Option<Browser>, manifest: &Path) -> io::Result<()> {
    let hkcu = winreg::RegKey::predef(winreg::enums::HKEY_CURRENT_USER);
    for b in browsers(browser) {
        let (key, _) = hkcu.create_subkey(registry_key(b))?;
        key.set_value("", &manifest.to_string_lossy().into_owned())?;
    }
    Ok(())
}

/// Only keys that name `manifest`: another install's stay.
pub fn unregister_host(browser: Option<Browser>, manifest: &Path) -> io::Result<()> {
    let hkcu = winreg::RegKey::predef(winreg::enums::HKEY_CURRENT_USER);
    for b in browsers(browser) {
        if registry_value(b).is_some_and(|v| super::same_dir(&v, manifest)) {
            match hkcu.delete_subkey(registry_key(b)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

pub fn registered_manifest(browser: Browser, _browsers_dir: &Path) -> Option<PathBuf> {
    registry_value(browser)
}

#[cfg(test)]
pub fn permission_bits(_path: &Path) -> Option<u32> {
    None
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    const CHILD: &str = "UNMODAL_TEST_PIPE_CHILD";
    const NAME: &str = "platform::windows::tests::the_devtools_pipe_reaches_a_child_by_its_handles";

    /// What a browser does with its pipe, cut short: reads one message from the first handle
    /// named, writes it back reversed on the second, and exits.
    fn echo(handles: &str) {
        use std::os::windows::io::FromRawHandle;
        let (a, b) = handles.split_once(',').expect("two handles");
        let handle = |h: &str| h.parse::<usize>().expect("a handle's number") as super::RawHandle;
        // SAFETY: the handles this process inherited, named by its parent; used once here.
        let (mut input, mut output) =
            unsafe { (std::fs::File::from_raw_handle(handle(a)), std::fs::File::from_raw_handle(handle(b))) };
        let mut got = Vec::new();
        let mut byte = [0u8];
        while input.read(&mut byte).expect("reading the pipe") == 1 && byte[0] != 0 {
            got.push(byte[0]);
        }
        got.reverse();
        got.push(0);
        output.write_all(&got).expect("writing the pipe");
    }

    /// The pipe's handles reach a process started after it, by the numbers its command line
    /// names; once it exits, our reading end ends (the browser's ends are not kept here).
    /// The child is this test binary again.
    #[test]
    fn the_devtools_pipe_reaches_a_child_by_its_handles() {
        if let Ok(handles) = std::env::var(CHILD) {
            return echo(&handles);
        }
        let mut browser = tokio::process::Command::new("chrome.exe");
        let (mut to, mut from, ends) = super::devtools_pipe(&mut browser).expect("a pipe");
        let arg = browser.as_std().get_args().last().expect("an argument").to_string_lossy().into_owned();
        let handles = arg.strip_prefix("--remote-debugging-io-pipes=").expect("the switch").to_owned();
        let mut child = std::process::Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--exact", NAME, "--test-threads", "1"])
            .env(CHILD, &handles)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the child starts");
        drop(ends);
        to.write_all(b"ping\0").expect("writing");
        let mut got = Vec::new();
        from.read_to_end(&mut got).expect("reading up to the end");
        assert_eq!(got, b"gnip\0");
        assert!(child.wait().expect("the child ends").success());
    }

    #[test]
    fn file_uris_name_drive_paths() {
        let p = super::path_of_file_uri;
        assert_eq!(p("/C:/Users/a b"), std::path::Path::new(r"C:\Users\a b"));
        assert_eq!(p("/c:/w"), std::path::Path::new("c:/w"));
        assert_eq!(p("/srv/x"), std::path::Path::new("/srv/x"));
    }
}
