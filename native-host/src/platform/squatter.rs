//! For tests: a host socket's listener run by another user, as a squatter's would be (uid
//! and gid 65534, `nobody`), that counts what it is sent and answers nothing. Linux, as
//! root: it forks, and the child changes user. It needs only `std` and `libc`, so the
//! end-to-end tests compile this same file (tests/src/lib.rs).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The squatter's uid and gid.
pub const UID: u32 = 65534;

/// What the squatter got, over every connection it accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received {
    pub connections: u64,
    pub bytes: u64,
}

/// The listening process; killed on drop if [`Squatter::received`] did not end it.
pub struct Squatter {
    pid: libc::pid_t,
    go: Option<File>,
    report: File,
}

impl Squatter {
    /// Whether this process can start one: only root can change to another user.
    pub fn possible() -> bool {
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() == 0 }
    }

    /// Binds and listens at `socket` as uid 65534, and returns once it listens. That user
    /// must be able to create `socket` in its directory.
    pub fn listen(socket: &Path) -> io::Result<Self> {
        let addr = sockaddr(socket)?;
        let (report_r, report_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        // SAFETY: the child makes only async-signal-safe calls (raw system calls, no
        // allocation) and ends with `_exit`.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: in the child, with both descriptors open.
            unsafe { child(&addr, report_w.as_raw_fd(), go_r.as_raw_fd()) }
        }
        drop((report_w, go_r));
        let mut squatter = Self { pid, go: Some(File::from(go_w)), report: File::from(report_r) };
        let mut said = [0u8; 5];
        squatter.report.read_exact(&mut said)?;
        match said[0] {
            b'R' => Ok(squatter),
            step => Err(io::Error::other(format!(
                "the squatter failed at step {}: {}",
                char::from(step),
                io::Error::from_raw_os_error(i32::from_ne_bytes([said[1], said[2], said[3], said[4]]))
            ))),
        }
    }

    /// Tells it to take what was sent (connections wait in its queue until then), and
    /// returns that once it has exited.
    pub fn received(mut self) -> io::Result<Received> {
        drop(self.go.take());
        let mut counts = [0u8; 16];
        self.report.read_exact(&mut counts)?;
        let word = |i: usize| u64::from_ne_bytes(counts[i..i + 8].try_into().unwrap_or_default());
        Ok(Received { connections: word(0), bytes: word(8) })
    }
}

impl Drop for Squatter {
    fn drop(&mut self) {
        // SAFETY: our child, not yet reaped (kill after it exited only hits the zombie).
        unsafe {
            if self.go.is_some() {
                libc::kill(self.pid, libc::SIGKILL);
            }
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two fds on success; each is owned once, below.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn sockaddr(socket: &Path) -> io::Result<libc::sockaddr_un> {
    // SAFETY: all zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = socket.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "socket path too long"));
    }
    for (to, from) in addr.sun_path.iter_mut().zip(bytes) {
        *to = *from as libc::c_char;
    }
    Ok(addr)
}

/// Reports a failure on `fd` (its step and the errno) and ends the child.
unsafe fn fail(fd: RawFd, step: u8) -> ! {
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0).to_ne_bytes();
    let said = [step, errno[0], errno[1], errno[2], errno[3]];
    // SAFETY: a valid buffer; the process ends right after.
    unsafe {
        libc::write(fd, said.as_ptr().cast(), said.len());
        libc::_exit(1)
    }
}

/// The forked child: becomes uid 65534, listens, says so, waits for the word, then counts
/// what every queued connection carries (without waiting for more) and reports it.
unsafe fn child(addr: &libc::sockaddr_un, report: RawFd, go: RawFd) -> ! {
    // SAFETY: raw system calls on descriptors and memory this process owns.
    unsafe {
        // What the parent had open (other tests' sockets and pipes) must not live on here.
        let (lo, hi) = (report.min(go), report.max(go));
        for (first, last) in [(3, lo - 1), (lo + 1, hi - 1), (hi + 1, RawFd::MAX)] {
            if first <= last {
                libc::syscall(libc::SYS_close_range, first as libc::c_uint, last as libc::c_uint, 0);
            }
        }
        // Raw calls: they change this thread alone, which is all the child has.
        let id = libc::c_long::from(UID);
        if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
            || libc::syscall(libc::SYS_setgid, id) != 0
            || libc::syscall(libc::SYS_setuid, id) != 0
        {
            fail(report, b'u');
        }
        let s = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
        if s < 0 {
            fail(report, b's');
        }
        if libc::bind(s, (addr as *const libc::sockaddr_un).cast(), size_of::<libc::sockaddr_un>() as u32) != 0 {
            fail(report, b'b');
        }
        if libc::listen(s, 64) != 0 {
            fail(report, b'l');
        }
        let ready = [b'R', 0, 0, 0, 0];
        libc::write(report, ready.as_ptr().cast(), ready.len());
        let mut word = 0u8;
        // Returns when the parent closes its end (or dies).
        libc::read(go, (&raw mut word).cast(), 1);
        // Every connection made before the word is queued: none is waited for.
        libc::fcntl(s, libc::F_SETFL, libc::O_NONBLOCK);
        let (mut connections, mut bytes) = (0u64, 0u64);
        loop {
            let c = libc::accept4(s, std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_NONBLOCK);
            if c < 0 {
                break;
            }
            connections += 1;
            let mut buf = [0u8; 4096];
            loop {
                let n = libc::read(c, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                bytes += n as u64;
            }
            libc::close(c);
        }
        let mut counts = [0u8; 16];
        counts[..8].copy_from_slice(&connections.to_ne_bytes());
        counts[8..].copy_from_slice(&bytes.to_ne_bytes());
        libc::write(report, counts.as_ptr().cast(), counts.len());
        libc::_exit(0)
    }
}
