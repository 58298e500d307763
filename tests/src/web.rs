//! Test pages served from 127.0.0.1, each with the headers a test asks for (CSP above all).
//! Another port is only another origin; `other_site` names the server `localhost`, another
//! site, so its frames run in their own renderer (out-of-process iframes).

use anyhow::Result;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

#[derive(Clone)]
struct Route {
    body: Vec<u8>,
    content_type: String,
    headers: Vec<(String, String)>,
    /// HTTP auth the route asks for: the realm and the `Authorization` value it takes.
    auth: Option<(String, String)>,
}

/// Per protected path: requests (with the right credentials, with wrong ones, with none).
type AuthHits = Arc<Mutex<HashMap<String, (usize, usize, usize)>>>;

/// A 1x1 GIF, for image requests.
pub const GIF: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";
/// What a protected route answers without the right credentials.
pub const UNAUTHORIZED: &str = "401: log in first";

/// A request head longer than this is refused (the connection is closed).
const MAX_HEAD: usize = 64 * 1024;

/// What the connections share.
#[derive(Default)]
struct Site {
    routes: Mutex<HashMap<String, Route>>,
    /// Every path requested, in order (CSP reports arrive here as POSTs).
    hits: Mutex<Vec<String>>,
    /// Per protected path: (requests with the right credentials, with wrong ones, with none).
    auth_hits: AuthHits,
    /// Open connections, so that dropping the server closes them.
    open: Mutex<HashMap<u64, TcpStream>>,
    stopping: AtomicBool,
}

/// One thread per connection, for as long as the browser keeps it open. (tiny_http, used
/// before, ran each keep-alive connection on a thread of its pool and queued a new
/// connection when its count of idle threads was stale: with 5 or more connections opened
/// at once, one could wait, its request unread, until another closed. A page starting many
/// fetches at once lost one that way.)
pub struct WebServer {
    site: Arc<Site>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
    pub origin: String,
}

impl WebServer {
    pub fn start() -> Result<Self> {
        Self::start_as("127.0.0.1")
    }

    /// A server on another site than `start()`'s: Chromium puts its frames in another process.
    pub fn other_site() -> Result<Self> {
        Self::start_as("localhost")
    }

    fn start_as(host: &str) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let site: Arc<Site> = Arc::default();
        let s = site.clone();
        let thread = std::thread::spawn(move || {
            let ids = AtomicU64::new(0);
            for conn in listener.incoming() {
                if s.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let id = ids.fetch_add(1, Ordering::Relaxed);
                if let Ok(c) = conn.try_clone() {
                    s.open.lock().unwrap().insert(id, c);
                }
                let s = s.clone();
                std::thread::spawn(move || {
                    serve(&s, conn);
                    s.open.lock().unwrap().remove(&id);
                });
            }
        });
        Ok(Self { site, addr, thread: Some(thread), origin: format!("http://{host}:{}", addr.port()) })
    }

    /// Serves `html` at `path` with extra response headers; returns the page's URL.
    pub fn page(&self, path: &str, html: &str, headers: &[(&str, &str)]) -> String {
        let route = Route {
            body: html.as_bytes().to_vec(),
            content_type: "text/html; charset=utf-8".into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            auth: None,
        };
        self.site.routes.lock().unwrap().insert(path.to_owned(), route);
        format!("{}{path}", self.origin)
    }

    /// Serves `body` at `path` only to requests with HTTP Basic credentials `user`:`password`;
    /// others get a 401 asking for `realm` (body `UNAUTHORIZED`). Returns the URL.
    pub fn protected(
        &self,
        path: &str,
        body: &[u8],
        content_type: &str,
        realm: &str,
        user: &str,
        password: &str,
    ) -> String {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let route = Route {
            body: body.to_vec(),
            content_type: content_type.to_owned(),
            headers: Vec::new(),
            auth: Some((realm.to_owned(), format!("Basic {token}"))),
        };
        self.site.routes.lock().unwrap().insert(path.to_owned(), route);
        format!("{}{path}", self.origin)
    }

    /// Requests that reached protected `path`: (with the right credentials, wrong ones, none).
    pub fn auth_hits(&self, path: &str) -> (usize, usize, usize) {
        self.site.auth_hits.lock().unwrap().get(path).copied().unwrap_or_default()
    }

    /// How many requests reached `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.site.hits.lock().unwrap().iter().filter(|p| *p == path).count()
    }
}

/// A request as far as the routes care.
struct Request {
    method: String,
    path: String,
    authorization: Option<String>,
    /// The client keeps the connection for another request.
    keep_alive: bool,
}

/// Answers the requests of one connection, in order, until it closes or sends what this
/// server does not read.
fn serve(site: &Site, conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else { return };
    let mut input = BufReader::new(conn);
    while let Some(req) = read_request(&mut input) {
        site.hits.lock().unwrap().push(req.path.clone());
        let route = site.routes.lock().unwrap().get(&req.path).cloned();
        let (status, content_type, headers, body) = respond(site, &req, route);
        let mut head =
            format!("HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in &headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(if req.keep_alive { "\r\n" } else { "Connection: close\r\n\r\n" });
        let mut bytes = head.into_bytes();
        if req.method != "HEAD" {
            bytes.extend_from_slice(&body);
        }
        if out.write_all(&bytes).and_then(|()| out.flush()).is_err() || !req.keep_alive {
            break;
        }
    }
    let _ = out.shutdown(Shutdown::Both);
}

/// The status line's rest, the content type, other headers and the body for `req`.
fn respond(site: &Site, req: &Request, route: Option<Route>) -> (&'static str, String, Vec<(String, String)>, Vec<u8>) {
    let no_store = ("Cache-Control".to_owned(), "no-store".to_owned());
    match route {
        Some(Route { auth: Some((realm, want)), .. }) if req.authorization.as_deref() != Some(&want) => {
            let mut counts = site.auth_hits.lock().unwrap();
            let c = counts.entry(req.path.clone()).or_default();
            if req.authorization.is_some() {
                c.1 += 1
            } else {
                c.2 += 1
            }
            let challenge = ("WWW-Authenticate".to_owned(), format!("Basic realm=\"{realm}\""));
            let headers = vec![challenge, no_store];
            ("401 Unauthorized", "text/html; charset=utf-8".into(), headers, UNAUTHORIZED.as_bytes().to_vec())
        }
        Some(route) => {
            if route.auth.is_some() {
                site.auth_hits.lock().unwrap().entry(req.path.clone()).or_default().0 += 1;
            }
            // A Content-Type the test gives replaces the route's (a download's text/csv).
            let (mut content_type, mut headers) = (route.content_type, Vec::new());
            for (k, v) in route.headers {
                if k.eq_ignore_ascii_case("Content-Type") { content_type = v } else { headers.push((k, v)) }
            }
            headers.push(no_store);
            ("200 OK", content_type, headers, route.body)
        }
        None => ("404 Not Found", "text/plain; charset=utf-8".into(), Vec::new(), b"not found".to_vec()),
    }
}

/// The next request on the connection, its body read and dropped; None at its end or on
/// anything malformed.
fn read_request(input: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut head = Vec::new();
    let mut line = String::new();
    let mut size = 0;
    loop {
        line.clear();
        // `take` bounds a line a client never ends.
        let n = input.by_ref().take((MAX_HEAD + 1 - size) as u64).read_line(&mut line).ok()?;
        size += n;
        if n == 0 || !line.ends_with('\n') || size > MAX_HEAD {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if head.is_empty() {
                continue; // a stray blank line between requests
            }
            break;
        }
        head.push(l.to_owned());
    }
    let mut parts = head[0].split(' ');
    let (method, target, version) = (parts.next()?.to_owned(), parts.next()?, parts.next()?);
    let path = target.split('?').next().unwrap_or("/").to_owned();
    let header = |name: &str| {
        head[1..].iter().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let connection = header("Connection").unwrap_or_default().to_ascii_lowercase();
    let keep_alive =
        if version == "HTTP/1.0" { connection.contains("keep-alive") } else { !connection.contains("close") };
    let chunked = header("Transfer-Encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    if chunked {
        skip_chunked(input)?;
    } else if let Some(len) = header("Content-Length") {
        let len: u64 = len.parse().ok()?;
        if std::io::copy(&mut input.by_ref().take(len), &mut std::io::sink()).ok()? != len {
            return None;
        }
    }
    Some(Request { method, path, authorization: header("Authorization"), keep_alive })
}

/// Reads a chunked body to its end (trailers included) and drops it.
fn skip_chunked(input: &mut BufReader<TcpStream>) -> Option<()> {
    let mut line = String::new();
    loop {
        line.clear();
        input.by_ref().take(1024).read_line(&mut line).ok()?;
        let size = u64::from_str_radix(line.trim().split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            // Trailers, up to the blank line.
            loop {
                line.clear();
                if input.by_ref().take(MAX_HEAD as u64).read_line(&mut line).ok()? == 0 {
                    return None;
                }
                if line.trim_end_matches(['\r', '\n']).is_empty() {
                    return Some(());
                }
            }
        }
        // The chunk and its CRLF.
        if std::io::copy(&mut input.by_ref().take(size + 2), &mut std::io::sink()).ok()? != size + 2 {
            return None;
        }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.site.stopping.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stopping`.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for c in self.site.open.lock().unwrap().values() {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

/// A page for a strict Content-Security-Policy: its first inline script keeps every
/// `securitypolicyviolation` in `window.violations` (serve it with `report-uri` and the
/// browser tells the server too).
pub const CSP_PAGE: &str = r#"<!doctype html><title>csp</title>
<script>
  window.violations = [];
  document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective + ' ' + e.sourceFile));
</script>
<p>strict</p>"#;

/// A page with one button per device chooser (a click is the gesture a chooser needs). Each
/// call's outcome lands in `out[name]`: "pending", "resolved <json>" or "<name>: <message>".
pub const CHOOSERS_PAGE: &str = r#"<!doctype html><title>choosers</title>
<style>button { position: fixed; left: 0; width: 120px; height: 40px }</style>
<button id=usb style="top: 0" onclick="ask('usb', () => navigator.usb.requestDevice({filters: []}))">usb</button>
<button id=hid style="top: 50px" onclick="ask('hid', () => navigator.hid.requestDevice({filters: []}))">hid</button>
<button id=serial style="top: 100px" onclick="ask('serial', () => navigator.serial.requestPort())">serial</button>
<button id=bluetooth style="top: 150px" onclick="ask('bluetooth', () => navigator.bluetooth.requestDevice({acceptAllDevices: true}))">bluetooth</button>
<script>
window.out = {};
function ask(k, call) {
  out[k] = 'pending';
  try {
    call().then((v) => { out[k] = 'resolved ' + JSON.stringify(v); }, (e) => { out[k] = e.name + ': ' + e.message; });
  } catch (e) {
    out[k] = 'threw ' + e.name + ': ' + e.message;
  }
}
</script>"#;

#[cfg(test)]
mod tests {
    use super::WebServer;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    /// A browser opens several connections to a site at once and keeps each open after its
    /// response: every one is answered, whatever the others do.
    #[test]
    fn connections_opened_together_are_all_answered() {
        let web = WebServer::start().unwrap();
        web.page("/p", "ok", &[]);
        let addr = web.origin.trim_start_matches("http://").to_owned();
        let mut kept = Vec::new();
        for round in 0..10 {
            let conns: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(&addr).unwrap()).collect();
            for c in &conns {
                let mut c = c;
                c.write_all(b"GET /p HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n").unwrap();
            }
            for (i, mut c) in conns.into_iter().enumerate() {
                // A deadline, not a pause: the answer comes at once or never.
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0; 12];
                let read = c.read_exact(&mut buf);
                assert!(read.is_ok(), "round {round}, connection {i}: no answer ({read:?})");
                assert_eq!(&buf, b"HTTP/1.1 200");
                kept.push(c);
            }
        }
        assert_eq!(web.hits("/p"), 80);
    }
}
