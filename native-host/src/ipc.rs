//! The private socket between `unmodal mcp` and a host: one JSON request per line, one
//! JSON answer per line. Several browsers mean several hosts, one socket each (on Windows a
//! named pipe, found by a file of the same name: `platform`).

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

async fn call_one(socket: &Path, line: &[u8]) -> io::Result<Result<Value, ToolError>> {
    let stream = platform::connect(socket).await?;
    let (r, mut w) = tokio::io::split(stream);
    w.write_all(line).await?;
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    if !read_line(&mut r, &mut buf).await? {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the host closed the connection"));
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
    let Some(scope) = SCOPE.get() else { return Ok(paths::host_sockets(dir)) };
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

/// One host's answer; `None` when nobody listens there (a stale socket is removed).
async fn ask(socket: &Path, line: &[u8], limit: Duration) -> Option<Result<Value, ToolError>> {
    match tokio::time::timeout(limit, call_one(socket, line)).await {
        Ok(Ok(reply)) => Some(reply),
        Ok(Err(e)) => {
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
    }
}

pub async fn call_in(dir: &Path, tool: Tool, args: Value) -> Result<Value, ToolError> {
    call_in_within(dir, tool, args, CALL_TIMEOUT).await
}

async fn call_in_within(dir: &Path, tool: Tool, args: Value, limit: Duration) -> Result<Value, ToolError> {
    let line = request_line(tool, args)?;
    let mut last = None;
    for socket in hosts(dir).await? {
        match ask(&socket, &line, limit).await {
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
        if let Some(reply) = ask(&socket, &line, CALL_TIMEOUT).await {
            answers.push((socket, reply));
        }
    }
    Ok(answers)
}

/// Asks the host at `socket` alone.
pub async fn ask_socket(socket: &Path, tool: Tool, args: Value) -> Result<Value, ToolError> {
    let line = request_line(tool, args)?;
    ask(socket, &line, CALL_TIMEOUT).await.unwrap_or_else(|| Err(ToolError::not_connected()))
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
        let dir = tempfile::tempdir().unwrap();
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
}
