//! Test pages served from 127.0.0.1, each with the headers a test asks for (CSP above all).
//! Another port is only another origin; `other_site` names the server `localhost`, another
//! site, so its frames run in their own renderer (out-of-process iframes).

use anyhow::Result;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue, TRANSFER_ENCODING};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

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

/// How long a dropped server lets a connection finish the request it is in. hyper closes
/// idle and never-used connections at once; one that sent half a request is closed when
/// this has passed.
const GRACE: Duration = Duration::from_millis(500);

/// What the connections share.
#[derive(Default)]
struct Site {
    routes: Mutex<HashMap<String, Route>>,
    /// Every path requested, in order (CSP reports arrive here as POSTs).
    hits: Mutex<Vec<String>>,
    /// Per protected path: (requests with the right credentials, with wrong ones, with none).
    auth_hits: AuthHits,
}

/// hyper on a runtime of its own thread, one task per connection for as long as the browser
/// keeps it open. (tiny_http, used before, ran each keep-alive connection on a thread of its
/// pool and queued a new connection when its count of idle threads was stale: with 5 or
/// more connections opened at once, one could wait, its request unread, until another
/// closed. A page starting many fetches at once lost one that way.)
pub struct WebServer {
    site: Arc<Site>,
    stop: Option<oneshot::Sender<()>>,
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
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let listener = {
            let _in_runtime = runtime.enter();
            TcpListener::from_std(std_listener)?
        };
        let site: Arc<Site> = Arc::default();
        let (stop, stopped) = oneshot::channel();
        let s = site.clone();
        // The runtime lives and dies on this thread: tests that drop a server run in a runtime
        // of their own, where dropping another one would panic.
        let thread = std::thread::spawn(move || runtime.block_on(serve(listener, s, stopped)));
        Ok(Self { site, stop: Some(stop), thread: Some(thread), origin: format!("http://{host}:{port}") })
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

/// Accepts connections until `stop`, then shuts the open ones down.
async fn serve(listener: TcpListener, site: Arc<Site>, mut stop: oneshot::Receiver<()>) {
    let mut http = http1::Builder::new();
    http.keep_alive(true);
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            conn = listener.accept() => {
                let Ok((stream, _)) = conn else { continue };
                let _ = stream.set_nodelay(true);
                let site = site.clone();
                let conn = http.serve_connection(TokioIo::new(stream), service_fn(move |req| answer(site.clone(), req)));
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
            _ = &mut stop => break,
        }
    }
    drop(listener);
    // Whatever is still open then closes with the runtime.
    let _ = tokio::time::timeout(GRACE, graceful.shutdown()).await;
}

/// Answers one request, its body read to the end and dropped.
async fn answer(site: Arc<Site>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_owned();
    let authorization = req.headers().get(AUTHORIZATION).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let mut body = req.into_body();
    while let Some(frame) = body.frame().await {
        frame?;
    }
    site.hits.lock().unwrap().push(path.clone());
    let route = site.routes.lock().unwrap().get(&path).cloned();
    let (status, content_type, headers, body) = respond(&site, &path, authorization.as_deref(), route);
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&content_type) {
        h.insert(CONTENT_TYPE, v);
    }
    for (k, v) in headers {
        // A test's header hyper cannot send is left out (hyper checks names and values).
        let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(&v)) else { continue };
        // The body's length frames the response, whatever a test says.
        if k != CONTENT_LENGTH && k != TRANSFER_ENCODING {
            h.append(k, v);
        }
    }
    Ok(resp)
}

/// The status, the content type, other headers and the body for a request to `path`.
fn respond(
    site: &Site,
    path: &str,
    authorization: Option<&str>,
    route: Option<Route>,
) -> (StatusCode, String, Vec<(String, String)>, Vec<u8>) {
    let no_store = ("Cache-Control".to_owned(), "no-store".to_owned());
    match route {
        Some(Route { auth: Some((realm, want)), .. }) if authorization != Some(&want) => {
            let mut counts = site.auth_hits.lock().unwrap();
            let c = counts.entry(path.to_owned()).or_default();
            if authorization.is_some() {
                c.1 += 1
            } else {
                c.2 += 1
            }
            let challenge = ("WWW-Authenticate".to_owned(), format!("Basic realm=\"{realm}\""));
            let headers = vec![challenge, no_store];
            (StatusCode::UNAUTHORIZED, "text/html; charset=utf-8".into(), headers, UNAUTHORIZED.as_bytes().to_vec())
        }
        Some(route) => {
            if route.auth.is_some() {
                site.auth_hits.lock().unwrap().entry(path.to_owned()).or_default().0 += 1;
            }
            // A Content-Type the test gives replaces the route's (a download's text/csv).
            let (mut content_type, mut headers) = (route.content_type, Vec::new());
            for (k, v) in route.headers {
                if k.eq_ignore_ascii_case("Content-Type") { content_type = v } else { headers.push((k, v)) }
            }
            headers.push(no_store);
            (StatusCode::OK, content_type, headers, route.body)
        }
        None => (StatusCode::NOT_FOUND, "text/plain; charset=utf-8".into(), Vec::new(), b"not found".to_vec()),
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
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
    use super::{UNAUTHORIZED, WebServer};
    use std::io::{ErrorKind, Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    /// Sends `request` on a new connection and reads until the server closes it.
    fn exchange(web: &WebServer, request: &str) -> String {
        let mut c = TcpStream::connect(web.origin.trim_start_matches("http://")).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out.to_ascii_lowercase()
    }

    fn get(web: &WebServer, method: &str, path: &str, extra: &str) -> String {
        exchange(web, &format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{extra}\r\n"))
    }

    #[test]
    fn routes_answer_with_their_headers_and_bodies() {
        let web = WebServer::start().unwrap();
        web.page("/a", "<p>hi", &[("Content-Security-Policy", "default-src 'none'")]);
        web.page("/f.csv", "x,y", &[("Content-Type", "text/csv"), ("Content-Disposition", "attachment")]);
        let a = get(&web, "GET", "/a?q=1", "");
        assert!(a.starts_with("http/1.1 200 ok\r\n"), "{a}");
        for h in [
            "content-type: text/html; charset=utf-8",
            "content-security-policy: default-src 'none'",
            "cache-control: no-store",
            "content-length: 5",
            "connection: close",
        ] {
            assert!(a.contains(&format!("\r\n{h}\r\n")), "{h} in {a}");
        }
        assert!(a.ends_with("\r\n\r\n<p>hi"), "{a}");
        let f = get(&web, "GET", "/f.csv", "");
        assert!(f.contains("\r\ncontent-type: text/csv\r\n") && !f.contains("text/html"), "{f}");
        assert!(f.contains("\r\ncontent-disposition: attachment\r\n"), "{f}");
        let head = get(&web, "HEAD", "/a", "");
        assert!(head.contains("\r\ncontent-length: 5\r\n") && head.ends_with("\r\n\r\n"), "{head}");
        let missing = get(&web, "POST", "/report", "Content-Length: 4\r\n\r\nbody");
        assert!(missing.starts_with("http/1.1 404") && missing.ends_with("not found"), "{missing}");
        assert_eq!((web.hits("/a"), web.hits("/f.csv"), web.hits("/report")), (2, 1, 1));
    }

    #[test]
    fn protected_routes_challenge_and_count() {
        let web = WebServer::start().unwrap();
        web.protected("/s", b"secret", "text/plain", "R", "u", "p");
        let none = get(&web, "GET", "/s", "");
        assert!(none.starts_with("http/1.1 401"), "{none}");
        assert!(none.contains("\r\nwww-authenticate: basic realm=\"r\"\r\n"), "{none}");
        assert!(none.ends_with(&UNAUTHORIZED.to_ascii_lowercase()), "{none}");
        let wrong = get(&web, "GET", "/s", "Authorization: Basic eDp5\r\n");
        assert!(wrong.starts_with("http/1.1 401"), "{wrong}");
        let right = get(&web, "GET", "/s", "Authorization: Basic dTpw\r\n");
        assert!(right.starts_with("http/1.1 200") && right.ends_with("\r\n\r\nsecret"), "{right}");
        assert_eq!(web.auth_hits("/s"), (1, 1, 1));
    }

    /// Dropping the server closes what is open: a connection kept after an answer, one that
    /// never sent anything, one that sent half a request.
    #[test]
    fn dropping_the_server_closes_its_connections() {
        let web = WebServer::start().unwrap();
        web.page("/p", "ok", &[]);
        let addr = web.origin.trim_start_matches("http://").to_owned();
        let mut used = TcpStream::connect(&addr).unwrap();
        used.write_all(b"GET /p HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        used.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0; 12];
        used.read_exact(&mut buf).unwrap();
        let unused = TcpStream::connect(&addr).unwrap();
        unused.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut half = TcpStream::connect(&addr).unwrap();
        half.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        half.write_all(b"GET /p HTTP/1.1\r\nHost:").unwrap();
        drop(web);
        // Closed: the end of the stream, or a reset for one the server had not accepted yet;
        // the read timeout makes one left open fail.
        for (name, mut c) in [("used", used), ("unused", unused), ("half", half)] {
            let end = c.read_to_end(&mut Vec::new());
            let closed = end.is_ok() || end.as_ref().is_err_and(|e| e.kind() == ErrorKind::ConnectionReset);
            assert!(closed, "{name}: {end:?}");
        }
    }

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
