//! A stand-in for a hosted browser provider: real headless Chromium that loads the carried
//! extension (`unmodal extension --dir`) in an empty HOME with no native host anywhere, and
//! is reachable only through a WebSocket-only proxy that demands a token and forwards
//! nothing but the browser endpoint (no `/json`), as the fleets hand out a `wss://` URL.
//! Tests break it on purpose: drop every connection, stop the extension's worker, kill
//! the browser. Other extensions can be loaded beside it (`launch_beside`).
//!
//! The carried extension has no `key`, so Chromium names it by the directory it was loaded
//! from (`chromium_extension_id`); tests pass that ID to `unmodal mcp --extension-id`, as a
//! user passes the one their provider's browser gave the upload.

use crate::artifacts::Artifacts;
use crate::browser::{QUIET_ARGS, Slot, chromium_binary, log_tail, slot};
use crate::cdp::Cdp;
use crate::page::Page;
use crate::wait::eventually;
use anyhow::{Context, Result, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// A request head larger than this is not a WebSocket upgrade anyone sends.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head, and the proxy to reach the browser.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

pub struct RemoteBrowser {
    // Declared first: dropped (killed) before the directories it writes in are removed.
    child: ChildGuard,
    proxy: Arc<Proxy>,
    accept: JoinHandle<()>,
    cdp: Arc<Cdp>,
    direct_url: String,
    extension_id: String,
    log: PathBuf,
    home: TempDir,
    profile: TempDir,
    extension: TempDir,
    _slot: Arc<Slot>,
}

/// Chromium, killed when dropped (also when `launch` fails half-way).
struct ChildGuard(Mutex<Child>);

impl ChildGuard {
    fn kill(&self) {
        crate::chromium_group::kill(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The proxy's state, shared with its tasks.
struct Proxy {
    port: u16,
    /// `/devtools/browser/<random>`: the one path it answers.
    path: String,
    token: String,
    /// The browser's own endpoint, `ws://127.0.0.1:<port>/devtools/browser/<id>`.
    upstream: String,
    /// Set by `kill_browser`: new clients get 502, as from a provider whose session ended.
    gone: AtomicBool,
    accepted: AtomicUsize,
    open: Arc<AtomicUsize>,
    /// Every client's task, from its first byte; aborting one closes both its sockets.
    tasks: Mutex<JoinSet<()>>,
}

impl RemoteBrowser {
    /// Starts Chromium with the carried extension and no native host, waits for the
    /// extension's service worker, and opens the proxy in front of it.
    pub async fn launch() -> Result<Self> {
        Self::launch_beside(&[]).await
    }

    /// As `launch`, with the unpacked extensions in `others` loaded too (after Unmodal's).
    pub async fn launch_beside(others: &[PathBuf]) -> Result<Self> {
        let slot = slot().await;
        let art = Artifacts::find()?;
        let home = tempfile::Builder::new().prefix("unmodal-remote-home-").tempdir()?;
        let profile = tempfile::Builder::new().prefix("unmodal-remote-profile-").tempdir()?;
        let extension = tempfile::Builder::new().prefix("unmodal-remote-ext-").tempdir()?;
        let ext_dir = extension.path().join("unmodal");
        // The real binary writes the directory, as a user would before handing it over.
        let out = Command::new(&art.host).arg("extension").arg("--dir").arg(&ext_dir).output()?;
        if !out.status.success() {
            bail!("`unmodal extension --dir` failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let ext_dir = std::fs::canonicalize(&ext_dir)?;
        let extension_id = chromium_extension_id(&ext_dir);
        let mut loaded = vec![ext_dir.display().to_string()];
        for other in others {
            loaded.push(std::fs::canonicalize(other)?.display().to_string());
        }
        let loaded = loaded.join(",");

        let log = profile.path().join("chromium.log");
        let child = crate::chromium_group::spawn(
            Command::new(chromium_binary()?)
                .arg("--headless=new")
                .args(QUIET_ARGS)
                .args(["--remote-debugging-port=0", "--window-size=1024,768"])
                // `navigator.bluetooth` on Linux, as Chrome has it elsewhere (device picks).
                .arg(crate::bluetooth::SWITCH)
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(format!("--load-extension={loaded}"))
                .arg(format!("--disable-extensions-except={loaded}"))
                .arg("about:blank")
                // A machine of its own: nothing of this user's config, so no host registered.
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path().join(".config"))
                .env("XDG_CACHE_HOME", home.path().join(".cache"))
                .env("XDG_DATA_HOME", home.path().join(".local/share"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log)?),
        )
        .context("starting Chromium")?;
        let child = ChildGuard(Mutex::new(child));

        let direct_url = devtools_url(profile.path(), &log).await?;
        let cdp = Cdp::connect(&direct_url).await?;
        // Its worker, under the ID computed from its path: the computation is checked here.
        eventually(Duration::from_secs(15), "the carried extension's service worker starting", || async {
            worker_target(&cdp, &extension_id).await
        })
        .await
        .with_context(|| format!("no worker of {extension_id}; log: {}", log_tail(&log, 40)))?;

        // No host anywhere this browser would look. Chromium makes an empty
        // `NativeMessagingHosts` in its user data dir itself; in HOME there is none.
        if let Some(found) = native_host_dirs(home.path()).into_iter().next() {
            bail!("a native messaging host directory in the browser's HOME: {}", found.display());
        }
        for dir in native_host_dirs(profile.path()) {
            if std::fs::read_dir(&dir)?.next().is_some() {
                bail!("a native messaging host is registered in {}", dir.display());
            }
        }

        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = Arc::new(Proxy {
            port: listener.local_addr()?.port(),
            path: format!("/devtools/browser/{}", random_hex()?),
            token: random_hex()?,
            upstream: direct_url.clone(),
            gone: AtomicBool::new(false),
            accepted: AtomicUsize::new(0),
            open: Arc::new(AtomicUsize::new(0)),
            tasks: Mutex::new(JoinSet::new()),
        });
        let accept = tokio::spawn(accept_loop(listener, proxy.clone()));
        Ok(Self { child, proxy, accept, cdp, direct_url, extension_id, log, home, profile, extension, _slot: slot })
    }

    /// The provider's URL, token in the query: `ws://127.0.0.1:P/devtools/browser/<r>?token=<t>`.
    pub fn ws_url(&self) -> String {
        format!("{}?token={}", self.ws_url_needing_header(), self.proxy.token)
    }

    /// The same endpoint without the token: it answers only with `header()` sent.
    pub fn ws_url_needing_header(&self) -> String {
        format!("ws://127.0.0.1:{}{}", self.proxy.port, self.proxy.path)
    }

    /// The header that opens `ws_url_needing_header()`, as `--cdp-header` takes it:
    /// `Authorization: Bearer <t>`.
    pub fn header(&self) -> String {
        format!("Authorization: Bearer {}", self.proxy.token)
    }

    /// `http://127.0.0.1:P`: the proxy as an HTTP endpoint, where `/json/version` is 404.
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.proxy.port)
    }

    pub fn token(&self) -> &str {
        &self.proxy.token
    }

    /// WebSocket connections the proxy has accepted so far (upgraded, browser reached).
    pub fn connections(&self) -> usize {
        self.proxy.accepted.load(Ordering::SeqCst)
    }

    /// Proxied connections open now.
    pub fn open_connections(&self) -> usize {
        self.proxy.open.load(Ordering::SeqCst)
    }

    /// Closes every client connection at once, both its sides, with no closing handshake
    /// (a provider's network hiccup, not a goodbye); the browser keeps running and the
    /// proxy keeps accepting. Returns how many proxied connections were open; when it
    /// returns, their sockets are closed.
    pub async fn drop_all(&self) -> usize {
        let was_open = self.open_connections();
        let mut tasks = std::mem::take(&mut *self.proxy.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        was_open
    }

    /// Kills Chromium: proxied connections end with it and new ones get 502, as from a
    /// provider whose session ended.
    pub fn kill_browser(&self) {
        self.proxy.gone.store(true, Ordering::SeqCst);
        self.child.kill();
    }

    /// Stops the extension's service worker (`Target.closeTarget` on its target, over the
    /// direct connection); returns once the browser said it did. Whether its target is then
    /// seen gone depends on timing: the browser may start the worker again at once, as a
    /// new target, or (while a client such as Unmodal's bridge keeps a session on it) under
    /// the same target id (REMOTE-FACTS 3). Returns the stopped target's id; an error if no
    /// worker ran.
    pub async fn stop_worker(&self) -> Result<String> {
        let target = worker_target(&self.cdp, &self.extension_id)
            .await?
            .context("the extension's service worker is not running")?;
        let id = target["targetId"].as_str().context("a target without targetId")?.to_owned();
        let r = self.cdp.call(None, "Target.closeTarget", json!({"targetId": id})).await?;
        if r["success"] == false {
            bail!("Target.closeTarget refused the worker: {r}");
        }
        Ok(id)
    }

    /// The extension's service worker target (`Target.getTargets`' entry), if it runs.
    pub async fn worker(&self) -> Result<Option<Value>> {
        worker_target(&self.cdp, &self.extension_id).await
    }

    /// A session of a client of its own on Unmodal's worker, over the provider's URL, as
    /// any driver sharing that URL can open one (the client and the session's id): code it
    /// runs there plays the untrusted worker (SECURITY.md).
    pub async fn worker_session(&self) -> Result<(Arc<Cdp>, String)> {
        let cdp = Cdp::connect(&self.ws_url()).await?;
        let worker = worker_target(&cdp, &self.extension_id).await?.context("Unmodal's worker is not running")?;
        let s =
            cdp.call(None, "Target.attachToTarget", json!({"targetId": worker["targetId"], "flatten": true})).await?;
        let session = s["sessionId"].as_str().context("attachToTarget without a session")?.to_owned();
        Ok((cdp, session))
    }

    /// The service worker of the extension `id` (one loaded beside Unmodal's), if it runs.
    pub async fn worker_of(&self, id: &str) -> Result<Option<Value>> {
        worker_target(&self.cdp, id).await
    }

    /// A direct DevTools connection to the browser, past the proxy, for the test's own
    /// checks and actions. Never dropped by `drop_all`.
    pub fn cdp(&self) -> &Arc<Cdp> {
        &self.cdp
    }

    /// The browser's own endpoint, past the proxy.
    pub fn direct_url(&self) -> &str {
        &self.direct_url
    }

    /// A new tab at `url`, attached over the direct connection.
    pub async fn new_page(&self, url: &str) -> Result<Page> {
        let t = self.cdp.call(None, "Target.createTarget", json!({"url": url})).await?;
        let id = t["targetId"].as_str().context("createTarget without targetId")?.to_owned();
        Page::attach(self.cdp.clone(), id).await
    }

    /// The ID the browser gave the carried (keyless) extension, from the path it was loaded
    /// from, as Chromium computes it; `launch` saw its worker under it.
    pub fn extension_id(&self) -> &str {
        &self.extension_id
    }

    /// The carried extension as loaded (`unmodal extension --dir`'s output).
    pub fn extension_dir(&self) -> PathBuf {
        self.extension.path().join("unmodal")
    }

    /// The browser's HOME (also holds its XDG config, cache and data dirs).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The browser's `--user-data-dir`.
    pub fn profile(&self) -> &Path {
        self.profile.path()
    }

    /// The last lines Chromium logged.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log, 80)
    }
}

impl Drop for RemoteBrowser {
    fn drop(&mut self) {
        self.accept.abort();
        self.proxy.tasks.lock().unwrap_or_else(PoisonError::into_inner).abort_all();
        self.child.kill();
    }
}

/// Directories under `root` where Chromium looks for native messaging hosts.
pub fn native_host_dirs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = entry.file_name().to_string_lossy().to_lowercase();
            if name == "nativemessaginghosts" || name == "native-messaging-hosts" {
                found.push(path.clone());
            }
            stack.push(path);
        }
    }
    found
}

/// The ID Chromium gives an extension loaded unpacked without `key`: the SHA-256 of its
/// absolute path, the first 32 hex digits written with the letters a-p for 0-f.
pub fn chromium_extension_id(dir: &Path) -> String {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(dir.as_os_str().as_encoded_bytes());
    hash.iter().take(16).flat_map(|b| [b >> 4, b & 0xf]).map(|n| char::from(b'a' + n)).collect()
}

async fn worker_target(cdp: &Cdp, id: &str) -> Result<Option<Value>> {
    let targets = cdp.call(None, "Target.getTargets", json!({})).await?;
    let prefix = format!("chrome-extension://{id}/");
    Ok(targets["targetInfos"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["type"] == "service_worker" && t["url"].as_str().is_some_and(|u| u.starts_with(&prefix)))
        .cloned())
}

/// `DevToolsActivePort` in the profile, or the browser's log saying why not.
async fn devtools_url(profile: &Path, log: &Path) -> Result<String> {
    crate::browser::devtools_url(profile, Duration::from_secs(30))
        .await
        .with_context(|| format!("its log:\n{}", log_tail(log, 40)))
}

fn random_hex() -> Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

async fn accept_loop(listener: TcpListener, proxy: Arc<Proxy>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            // Out of file descriptors, say: the stand-in stops taking connections, and the
            // test that needed one fails on its own deadline, saying what it waited for.
            return;
        };
        let mut tasks = proxy.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(serve(tcp, proxy.clone()));
    }
}

/// No limits on a message's size: the proxy carries what the browser sends (screenshots).
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(None).max_frame_size(None)
}

/// One client: its request head checked by hand (tungstenite would close a plain GET
/// without an answer), then, if it may, forwarded to a connection of its own to the browser.
async fn serve(mut tcp: TcpStream, proxy: Arc<Proxy>) {
    let Ok(Ok((head, tail))) = tokio::time::timeout(HANDSHAKE_LIMIT, read_head(&mut tcp)).await else {
        return;
    };
    let key = match check(&head, &proxy) {
        Ok(key) => key,
        Err((status, why)) => return refuse(&mut tcp, status, why).await,
    };
    if proxy.gone.load(Ordering::SeqCst) {
        return refuse(&mut tcp, "502 Bad Gateway", "the browser is gone").await;
    }
    let upstream = tokio::time::timeout(
        HANDSHAKE_LIMIT,
        tokio_tungstenite::connect_async_with_config(proxy.upstream.as_str(), Some(ws_config()), true),
    )
    .await;
    let Ok(Ok((mut upstream, _))) = upstream else {
        return refuse(&mut tcp, "502 Bad Gateway", "the browser is not reachable").await;
    };
    let accept = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n",
        derive_accept_key(key.as_bytes())
    );
    if tcp.write_all(accept.as_bytes()).await.is_err() {
        return;
    }
    let _ = tcp.set_nodelay(true);
    let mut client = WebSocketStream::from_partially_read(tcp, tail, Role::Server, Some(ws_config())).await;
    proxy.accepted.fetch_add(1, Ordering::SeqCst);
    let _open = OpenGuard::new(proxy.open.clone());
    loop {
        tokio::select! {
            m = client.next() => if !forward(m, &mut client, &mut upstream).await { break },
            m = upstream.next() => if !forward(m, &mut upstream, &mut client).await { break },
        }
    }
}

/// Sends what `from` read on to `to`; false once the connection is over. A close is passed
/// on and answered; a side that ends without one leaves the other to end the same way.
async fn forward<A, B>(
    m: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
    from: &mut WebSocketStream<A>,
    to: &mut WebSocketStream<B>,
) -> bool
where
    A: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    B: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match m {
        Some(Ok(m @ (Message::Text(_) | Message::Binary(_)))) => to.send(m).await.is_ok(),
        // Each side keeps its own connection alive.
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => true,
        Some(Ok(Message::Close(frame))) => {
            let closing = async {
                let _ = to.send(Message::Close(frame)).await;
                let _ = from.close(None).await;
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), closing).await;
            false
        }
        Some(Err(_)) | None => false,
    }
}

/// Counts a proxied connection as open for as long as its task lives (aborted too).
struct OpenGuard(Arc<AtomicUsize>);

impl OpenGuard {
    fn new(open: Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::SeqCst);
        Self(open)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads up to the end of the request head; returns the head and any bytes after it.
async fn read_head(tcp: &mut TcpStream) -> Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = tcp.read(&mut chunk).await?;
        if n == 0 {
            bail!("the client left before its request ended");
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let tail = buf.split_off(end + 4);
            return Ok((String::from_utf8_lossy(&buf).into_owned(), tail));
        }
        if buf.len() > MAX_HEAD {
            bail!("a request head over {MAX_HEAD} bytes");
        }
    }
}

/// Whether the request may be proxied: the secret path (else 404: no `/json`, nothing
/// else), the token in the query or a Bearer header (else 401), and a WebSocket upgrade
/// (else 400). Returns the client's `Sec-WebSocket-Key`.
fn check(head: &str, proxy: &Proxy) -> Result<String, (&'static str, &'static str)> {
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or_default().split(' ');
    let (method, target) = (request.next().unwrap_or_default(), request.next().unwrap_or_default());
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != proxy.path {
        return Err(("404 Not Found", "not found"));
    }
    let headers: Vec<(String, &str)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let in_query = query.split('&').any(|kv| kv.strip_prefix("token=") == Some(proxy.token.as_str()));
    let in_header = header("authorization")
        .and_then(|v| v.split_once(' '))
        .is_some_and(|(scheme, t)| scheme.eq_ignore_ascii_case("bearer") && t.trim() == proxy.token);
    if !in_query && !in_header {
        return Err(("401 Unauthorized", "a token is needed"));
    }
    let upgrade = method == "GET"
        && header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
        && header("connection").is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade")))
        && header("sec-websocket-version") == Some("13");
    match header("sec-websocket-key") {
        Some(key) if upgrade => Ok(key.to_owned()),
        _ => Err(("400 Bad Request", "only a WebSocket upgrade is served here")),
    }
}

async fn refuse(tcp: &mut TcpStream, status: &str, body: &str) {
    let auth = if status.starts_with("401") { "WWW-Authenticate: Bearer\r\n" } else { "" };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{auth}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tcp.write_all(response.as_bytes()).await;
    let _ = tcp.shutdown().await;
}
