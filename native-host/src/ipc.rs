//! The private socket between `unmodal mcp` and a host: one JSON request per line, one
//! JSON answer per line. Several browsers mean several hosts, one socket each (on Windows a
//! named pipe, found by a file of the same name: `platform`).
//!
//! Before it writes a byte, a client (`unmodal mcp`, `call`, `pilot`, `doctor`, `browser`) checks
//! that the runtime directory is the user's own and closed to group and others (`lstat`, no
//! symlink), and that the host listening on the socket runs as the user
//! (`platform::connect`). A directory another user made first (`/tmp/unmodal-<uid>` when
//! `XDG_RUNTIME_DIR` is unset) or a listener of another user fails the call with
//! `untrusted_runtime_dir`, which names the directory or socket and the fix
//! (`UNMODAL_RUNTIME_DIR`); nothing of the request is sent, and nothing there is removed.

use crate::platform::{ConnectError, Untrusted};
use crate::reply::{ErrorCode, ToolError};
use crate::{paths, platform};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// Longest request or answer line; anything longer is refused, not buffered.
pub const MAX_LINE: usize = 4 * 1024 * 1024;
/// How long the MCP side waits for a host. Above the host's own wait for the browser.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    Interact,
    Observe,
    Configure,
    Info,
    HighlightElement,
    ManageState,
    ExecuteJavascript,
    /// `unmodal pilot on|off|status`, typed by a person; `unmodal mcp` never sends it.
    PilotSwitch,
    /// The end-to-end tests' hook on the CDP answerer (`host/answerer_hook.rs`): refused
    /// unless the host runs with `UNMODAL_TEST_ANSWERER=1`; `unmodal mcp` never sends it.
    TestAnswerer,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub tool: Tool,
    #[serde(default)]
    pub args: Value,
}

pub fn reply_json(reply: &Result<Value, ToolError>) -> Value {
    match reply {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "error": e }),
    }
}

fn parse_reply(line: &[u8]) -> Result<Value, ToolError> {
    #[derive(Deserialize)]
    struct Wire {
        ok: Option<Value>,
        error: Option<ToolError>,
    }
    let wire: Wire = serde_json::from_slice(line)
        .map_err(|e| ToolError::new(ErrorCode::HostProtocol, format!("unreadable answer from the host: {e}")))?;
    match (wire.ok, wire.error) {
        (_, Some(e)) => Err(e),
        (Some(v), None) => Ok(v),
        (None, None) => Err(ToolError::new(ErrorCode::HostProtocol, "the host answered neither ok nor error")),
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes into `buf`; `Ok(false)` at end of input.
pub async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<bool> {
    buf.clear();
    let n = (&mut *r).take(MAX_LINE as u64 + 1).read_until(b'\n', buf).await?;
    if n == 0 {
        return Ok(false);
    }
    if buf.len() > MAX_LINE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("line over {MAX_LINE} bytes")));
    }
    Ok(true)
}

/// Why a client will not use what it found, and what the person can do.
fn untrusted(u: Untrusted) -> ToolError {
    let message = match u {
        Untrusted::Dir { dir, why } => format!(
            "Unmodal did not use its runtime directory {dir}: {why}. Another user could listen there and read \
every call (a password interact types, say), so nothing was sent. Set UNMODAL_RUNTIME_DIR to a directory of your \
own that only you can enter (`mkdir -m 700 DIR`), for the browser and for unmodal alike; or, if {dir} is yours, \
`chmod 700` it; if it is another user's, have it removed (an administrator can).",
            dir = dir.display()
        ),
        Untrusted::Listener { socket, why } => format!(
            "Unmodal did not talk to the host at {socket}: {why}. A host of yours runs as you; this one could read \
every call (a password interact types, say), so nothing was sent. Remove {socket} (and find out who put it \
there), or set UNMODAL_RUNTIME_DIR to a directory of your own that only you can enter (`mkdir -m 700 DIR`), for \
the browser and for unmodal alike.",
            socket = socket.display()
        ),
    };
    ToolError::new(ErrorCode::UntrustedRuntimeDir, message)
}

async fn call_one(socket: &Path, line: &[u8]) -> Result<Result<Value, ToolError>, ConnectError> {
    let stream = platform::connect(socket).await?;
    let (r, mut w) = tokio::io::split(stream);
    w.write_all(line).await?;
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    if !read_line(&mut r, &mut buf).await? {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the host closed the connection").into());
    }
    Ok(parse_reply(&buf))
}

/// Sends a request to the connected browsers' hosts, newest first. A call that names a
/// tab goes on to the next host when this one does not know the tab.
pub async fn call(tool: Tool, args: Value) -> Result<Value, ToolError> {
    call_in(&paths::runtime_dir(), tool, args).await
}

/// As `call`, for a call the host may legitimately take longer over (a script's own
/// `timeout_ms`): waits `limit` for each host.
pub async fn call_within(tool: Tool, args: Value, limit: Duration) -> Result<Value, ToolError> {
    call_in_within(&paths::runtime_dir(), tool, args, limit).await
}

/// The one host `unmodal mcp --cdp-endpoint` asks (its own, in this process), and why its
/// browser is gone once it is. Unset: every host in the runtime directory.
pub struct Scope {
    pub socket: PathBuf,
    pub link: crate::host::transport::bridge::LinkState,
    /// The browser's endpoint, without its token, for errors.
    pub endpoint: String,
}

/// How long a call waits for the extension to answer over a bridge that just connected.
const REMOTE_READY: Duration = Duration::from_secs(5);

static SCOPE: std::sync::OnceLock<Scope> = std::sync::OnceLock::new();

/// Makes this process ask only `scope`'s host (once; later calls change nothing).
pub fn only(scope: Scope) {
    let _ = SCOPE.set(scope);
}

/// The hosts to ask, newest first; an error when this process's remote browser is gone.
async fn hosts(dir: &Path) -> Result<Vec<PathBuf>, ToolError> {
    let Some(scope) = SCOPE.get() else {
        // Before it is even listed: nothing is asked or cleaned up in another user's directory.
        platform::check_runtime_dir(dir).map_err(untrusted)?;
        return Ok(paths::host_sockets(dir));
    };
    if !scope.link.wait_ready(REMOTE_READY).await {
        if let Some(why) = scope.link.gone() {
            return Err(ToolError::browser_gone(&why));
        }
        let message = match scope.link.why_not_heard() {
            Some(why) => format!("The browser at {} is reachable, but {why}.", scope.endpoint),
            None => format!(
                "The browser at {} is reachable, but Unmodal's extension did not answer over it ({:?}). Check that \
the browser loaded the extension from `unmodal extension --zip` (your provider's extension upload, or \
--load-extension), then retry.",
                scope.endpoint,
                scope.link.now()
            ),
        };
        return Err(ToolError::new(ErrorCode::ExtensionNotConnected, message));
    }
    Ok(vec![scope.socket.clone()])
}

fn request_line(tool: Tool, args: Value) -> Result<Vec<u8>, ToolError> {
    let mut line = serde_json::to_vec(&Request { tool, args })
        .map_err(|e| ToolError::new(ErrorCode::Internal, format!("cannot encode the request: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// One host's answer; `None` when nobody listens there (a stale socket is removed). An error
/// when the socket or its directory is not this user's alone: nothing was sent, and the
/// caller asks no other host.
async fn ask(socket: &Path, line: &[u8], limit: Duration) -> Result<Option<Result<Value, ToolError>>, ToolError> {
    Ok(match tokio::time::timeout(limit, call_one(socket, line)).await {
        Ok(Ok(reply)) => Some(reply),
        Ok(Err(ConnectError::Untrusted(u))) => return Err(untrusted(u)),
        Ok(Err(ConnectError::Io(e))) => {
            if e.kind() == io::ErrorKind::ConnectionRefused && paths::socket_owner_gone(socket) {
                // A host that died without cleaning up (a live one may be starting: its
                // socket is only renamed into place once it listens, but never remove it).
                tracing::debug!(socket = %socket.display(), "removing stale host socket");
                let _ = std::fs::remove_file(socket);
            } else {
                tracing::debug!(socket = %socket.display(), error = %e, "host unreachable");
            }
            None
        }
        Err(_) => Some(Err(ToolError::new(
            ErrorCode::HostTimeout,
            format!(
                "The Unmodal host did not answer within {} s; the browser may be hung. Check the browser, then retry.",
                limit.as_secs()
            ),
        ))),
    })
}

pub async fn call_in(dir: &Path, tool: Tool, args: Value) -> Result<Value, ToolError> {
    call_in_within(dir, tool, args, CALL_TIMEOUT).await
}

async fn call_in_within(dir: &Path, tool: Tool, args: Value, limit: Duration) -> Result<Value, ToolError> {
    let line = request_line(tool, args)?;
    let mut last = None;
    for socket in hosts(dir).await? {
        match ask(&socket, &line, limit).await? {
            // Tabs and dialogs belong to one browser; another host may hold them.
            Some(Err(e))
                if matches!(e.code, ErrorCode::TabNotFound | ErrorCode::DialogNotFound | ErrorCode::HostTimeout) =>
            {
                last = Some(e)
            }
            Some(reply) => return reply,
            None => {}
        }
    }
    Err(last.unwrap_or_else(ToolError::not_connected))
}

/// Asks every connected host in `dir` (newest first); each answer with its socket.
pub async fn ask_each(
    dir: &Path,
    tool: Tool,
    args: Value,
) -> Result<Vec<(PathBuf, Result<Value, ToolError>)>, ToolError> {
    let line = request_line(tool, args)?;
    let mut answers = Vec::new();
    for socket in hosts(dir).await? {
        if let Some(reply) = ask(&socket, &line, CALL_TIMEOUT).await? {
            answers.push((socket, reply));
        }
    }
    Ok(answers)
}

/// Asks the host at `socket` alone.
pub async fn ask_socket(socket: &Path, tool: Tool, args: Value) -> Result<Value, ToolError> {
    let line = request_line(tool, args)?;
    ask(socket, &line, CALL_TIMEOUT).await?.unwrap_or_else(|| Err(ToolError::not_connected()))
}

/// Asks every connected host (newest first) and returns each one's answer.
pub async fn call_all(tool: Tool, args: Value) -> Result<Vec<Value>, ToolError> {
    let mut answers = Vec::new();
    let mut last = None;
    for (_, reply) in ask_each(&paths::runtime_dir(), tool, args).await? {
        match reply {
            Ok(v) => answers.push(v),
            Err(e) => last = Some(e),
        }
    }
    match (answers.is_empty(), last) {
        (true, Some(e)) => Err(e),
        (true, None) => Err(ToolError::not_connected()),
        (false, _) => Ok(answers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_round_trip() {
        let ok = reply_json(&Ok(json!({"a": 1})));
        assert_eq!(parse_reply(ok.to_string().as_bytes()), Ok(json!({"a": 1})));
        let err = ToolError::new(ErrorCode::TabNotFound, "no tab 3");
        let back = parse_reply(reply_json(&Err(err.clone())).to_string().as_bytes());
        assert_eq!(back, Err(err));
        assert_eq!(parse_reply(b"{}").unwrap_err().code, ErrorCode::HostProtocol);
        assert_eq!(parse_reply(b"\x00garbage").unwrap_err().code, ErrorCode::HostProtocol);
    }

    #[tokio::test]
    async fn long_lines_are_refused() {
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = BufReader::new(long.as_slice());
        let mut buf = Vec::new();
        assert!(read_line(&mut r, &mut buf).await.is_err());
        let mut r = BufReader::new(&b"{}\n{}"[..]);
        assert!(read_line(&mut r, &mut buf).await.unwrap());
        assert_eq!(buf, b"{}\n");
        assert!(read_line(&mut r, &mut buf).await.unwrap());
        assert!(!read_line(&mut r, &mut buf).await.unwrap());
    }

    #[tokio::test]
    async fn no_host_means_extension_not_connected() {
        let dir = paths::private_tempdir();
        // A stale socket file (nobody listening, its process gone) is skipped and cleaned up:
        // a listener dropped leaves its file (Windows: the pipe goes with it).
        let mut gone = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--list", "--exact", "no such test"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        gone.wait().unwrap();
        let stale = paths::socket_path(dir.path(), gone.id());
        drop(crate::platform::listen(&stale).unwrap());
        // One whose process lives (a host that is starting) is skipped and kept.
        let starting = paths::socket_path(dir.path(), std::process::id());
        drop(crate::platform::listen(&starting).unwrap());
        assert!(stale.exists() && starting.exists());
        let err = call_in(dir.path(), Tool::Info, Value::Null).await.unwrap_err();
        assert!(!stale.exists());
        assert!(starting.exists(), "a live process's socket is not removed");
        assert_eq!(err.code, ErrorCode::ExtensionNotConnected);
        assert!(err.message.contains("unmodal install"));
    }

    /// A client checks the runtime directory and the listener before it writes a byte; what
    /// fails gets nothing, and nothing in it is removed. Linux as root: the squatter runs
    /// as uid 65534 (`platform::squatter`).
    #[cfg(target_os = "linux")]
    mod untrusted {
        use super::*;
        use crate::platform::squatter::{self, Received, Squatter};
        use std::io::Write;
        use std::os::unix::fs::{PermissionsExt, chown};

        /// What a squatter wants: a password an agent types.
        fn typed() -> Value {
            json!({"action": "handle_dialog", "dialog_id": 1, "accept": true, "username": "me", "password": "hunter2"})
        }

        fn mode(path: &Path, mode: u32) {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
        }

        /// A directory like /tmp (1777), for another user to make things in.
        fn shared_tmp() -> tempfile::TempDir {
            let tmp = tempfile::tempdir().unwrap();
            mode(tmp.path(), 0o1777);
            tmp
        }

        /// Every way a client asks, each refused with `untrusted_runtime_dir`; the first
        /// error, for its message.
        async fn refused_every_way(dir: &Path, socket: &Path) -> ToolError {
            let err = call_in(dir, Tool::Interact, typed()).await.unwrap_err();
            assert_eq!(err.code, ErrorCode::UntrustedRuntimeDir, "{err:?}");
            let each = ask_each(dir, Tool::PilotSwitch, json!({})).await.unwrap_err();
            assert_eq!(each.code, ErrorCode::UntrustedRuntimeDir, "{each:?}");
            let one = ask_socket(socket, Tool::Interact, typed()).await.unwrap_err();
            assert_eq!(one.code, ErrorCode::UntrustedRuntimeDir, "{one:?}");
            err
        }

        fn skip_unless_root() -> bool {
            if Squatter::possible() {
                return false;
            }
            eprintln!("skipped: only root can run a listener as another user (uid {})", squatter::UID);
            true
        }

        /// What the tests below find it got is what it was sent.
        #[test]
        fn the_squatter_counts_what_it_is_sent() {
            if skip_unless_root() {
                return;
            }
            let tmp = shared_tmp();
            let socket = tmp.path().join("host-1.sock");
            let squatter = Squatter::listen(&socket).unwrap();
            std::os::unix::net::UnixStream::connect(&socket).unwrap().write_all(b"hello").unwrap();
            drop(std::os::unix::net::UnixStream::connect(&socket).unwrap());
            assert_eq!(squatter.received().unwrap(), Received { connections: 2, bytes: 5 });
        }

        #[tokio::test]
        async fn a_runtime_dir_open_to_others_is_refused_before_anything_is_sent() {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("unmodal-0");
            std::fs::create_dir(&dir).unwrap();
            mode(&dir, 0o777);
            let socket = paths::socket_path(&dir, 1);
            let listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            listening.set_nonblocking(true).unwrap();
            // A stale socket (nobody listens, its process gone), which a client removes from
            // a private directory: not from this one.
            let mut gone = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--list", "--exact", "no such test"])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            gone.wait().unwrap();
            let stale = paths::socket_path(&dir, gone.id());
            drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());

            let err = refused_every_way(&dir, &socket).await;
            let said = &err.message;
            assert!(said.contains(&dir.display().to_string()) && said.contains("mode 0777"), "{said}");
            assert!(said.contains("UNMODAL_RUNTIME_DIR") && said.contains("nothing was sent"), "{said}");
            let accepted = listening.accept().map(|_| ());
            assert_eq!(accepted.unwrap_err().kind(), io::ErrorKind::WouldBlock, "not even a connection");
            assert!(stale.exists(), "nothing removed");
        }

        #[tokio::test]
        async fn a_runtime_dir_another_user_made_is_refused_and_the_squatter_gets_nothing() {
            if skip_unless_root() {
                return;
            }
            let tmp = shared_tmp();
            for open in [0o777, 0o700] {
                // As when XDG_RUNTIME_DIR is unset: another user made /tmp/unmodal-<uid> first.
                let dir = tmp.path().join(format!("unmodal-{open:o}"));
                std::fs::create_dir(&dir).unwrap();
                chown(&dir, Some(squatter::UID), Some(squatter::UID)).unwrap();
                mode(&dir, open);
                let socket = paths::socket_path(&dir, 1);
                let squatter = Squatter::listen(&socket).unwrap();

                let err = refused_every_way(&dir, &socket).await;
                let said = &err.message;
                assert!(said.contains(&dir.display().to_string()), "{said}");
                assert!(said.contains(&format!("uid {}", squatter::UID)), "names the owner: {said}");
                assert!(said.contains(&format!("mode {open:04o}")), "{said}");
                assert!(said.contains("UNMODAL_RUNTIME_DIR"), "{said}");
                assert_eq!(squatter.received().unwrap(), Received { connections: 0, bytes: 0 });
                assert!(socket.exists(), "nothing removed");
            }
        }

        #[tokio::test]
        async fn a_listener_of_another_user_in_a_private_dir_is_refused_and_gets_nothing() {
            if skip_unless_root() {
                return;
            }
            let tmp = shared_tmp();
            let dir = tmp.path().join("run");
            // Ours and open for a while: another user puts a socket in it; then it is made
            // private again (as a host starting there does), which leaves the socket.
            std::fs::create_dir(&dir).unwrap();
            mode(&dir, 0o777);
            let socket = paths::socket_path(&dir, 1);
            let squatter = Squatter::listen(&socket).unwrap();
            mode(&dir, 0o700);

            let err = refused_every_way(&dir, &socket).await;
            let said = &err.message;
            assert!(said.contains(&socket.display().to_string()), "names the socket: {said}");
            assert!(said.contains(&format!("runs as uid {}", squatter::UID)), "{said}");
            assert!(said.contains("UNMODAL_RUNTIME_DIR") && said.contains("nothing was sent"), "{said}");
            // Connected (that is how the listener's uid is read), but not a byte written.
            assert_eq!(squatter.received().unwrap(), Received { connections: 3, bytes: 0 });

            // Without it, our own host in the same directory answers.
            std::fs::remove_file(&socket).unwrap();
            let mut ours = platform::listen(&paths::socket_path(&dir, std::process::id())).unwrap();
            tokio::spawn(async move {
                let stream = ours.accept().await.unwrap();
                platform::check_peer(&stream).unwrap();
                let (r, mut w) = tokio::io::split(stream);
                let mut line = Vec::new();
                assert!(read_line(&mut BufReader::new(r), &mut line).await.unwrap());
                w.write_all(b"{\"ok\": {\"answered\": true}}\n").await.unwrap();
            });
            assert_eq!(call_in(&dir, Tool::Interact, typed()).await, Ok(json!({"answered": true})));
        }
    }
}
