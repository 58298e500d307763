//! Test pages served from 127.0.0.1, each with the headers a test asks for (CSP above all).
//! Another port is only another origin; `other_site` names the server `localhost`, another
//! site, so its frames run in their own renderer (out-of-process iframes).

use anyhow::Result;
use std::collections::HashMap;
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

pub struct WebServer {
    server: Arc<tiny_http::Server>,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    /// Every path requested, in order (CSP reports arrive here as POSTs).
    hits: Arc<Mutex<Vec<String>>>,
    /// Per protected path: (requests with the right credentials, with wrong ones, with none).
    auth_hits: AuthHits,
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
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").map_err(|e| anyhow::anyhow!("{e}"))?);
        let port = server.server_addr().to_ip().map(|a| a.port()).unwrap_or_default();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let hits: Arc<Mutex<Vec<String>>> = Arc::default();
        let auth_hits: AuthHits = Arc::default();
        let (s, r, h, a) = (server.clone(), routes.clone(), hits.clone(), auth_hits.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let path = req.url().split('?').next().unwrap_or("/").to_owned();
                h.lock().unwrap().push(path.clone());
                let route = r.lock().unwrap().get(&path).cloned();
                let given =
                    req.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.as_str().to_owned());
                let resp = match route {
                    Some(Route { auth: Some((realm, want)), .. }) if given.as_deref() != Some(&want) => {
                        let mut counts = a.lock().unwrap();
                        let c = counts.entry(path.clone()).or_default();
                        if given.is_some() {
                            c.1 += 1
                        } else {
                            c.2 += 1
                        }
                        tiny_http::Response::from_string(UNAUTHORIZED)
                            .with_status_code(401)
                            .with_header(header("WWW-Authenticate", &format!("Basic realm=\"{realm}\"")))
                            .with_header(header("Content-Type", "text/html; charset=utf-8"))
                            .with_header(header("Cache-Control", "no-store"))
                            .boxed()
                    }
                    Some(route) => {
                        if route.auth.is_some() {
                            a.lock().unwrap().entry(path.clone()).or_default().0 += 1;
                        }
                        let mut resp = tiny_http::Response::from_data(route.body)
                            .with_header(header("Content-Type", &route.content_type));
                        for (k, v) in &route.headers {
                            resp.add_header(header(k, v));
                        }
                        resp.add_header(header("Cache-Control", "no-store"));
                        resp.boxed()
                    }
                    None => tiny_http::Response::from_string("not found").with_status_code(404).boxed(),
                };
                let _ = req.respond(resp);
            }
        });
        Ok(Self { server, routes, hits, auth_hits, thread: Some(thread), origin: format!("http://{host}:{port}") })
    }

    /// Serves `html` at `path` with extra response headers; returns the page's URL.
    pub fn page(&self, path: &str, html: &str, headers: &[(&str, &str)]) -> String {
        let route = Route {
            body: html.as_bytes().to_vec(),
            content_type: "text/html; charset=utf-8".into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            auth: None,
        };
        self.routes.lock().unwrap().insert(path.to_owned(), route);
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
        self.routes.lock().unwrap().insert(path.to_owned(), route);
        format!("{}{path}", self.origin)
    }

    /// Requests that reached protected `path`: (with the right credentials, wrong ones, none).
    pub fn auth_hits(&self, path: &str) -> (usize, usize, usize) {
        self.auth_hits.lock().unwrap().get(path).copied().unwrap_or_default()
    }
}

impl WebServer {
    /// How many requests reached `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().iter().filter(|p| *p == path).count()
    }
}

fn header(k: &str, v: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()).expect("valid header")
}

impl Drop for WebServer {
    fn drop(&mut self) {
        self.server.unblock();
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
