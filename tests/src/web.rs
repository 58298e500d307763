//! Test pages served from 127.0.0.1, each with the headers a test asks for (CSP above all).
//! Another port is only another origin; `other_site` names the server `localhost`, another
//! site, so its frames run in their own renderer (out-of-process iframes).

use anyhow::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

#[derive(Clone)]
struct Route {
    body: String,
    headers: Vec<(String, String)>,
}

pub struct WebServer {
    server: Arc<tiny_http::Server>,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    /// Every path requested, in order (CSP reports arrive here as POSTs).
    hits: Arc<Mutex<Vec<String>>>,
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
        let (s, r, h) = (server.clone(), routes.clone(), hits.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                let path = req.url().split('?').next().unwrap_or("/").to_owned();
                h.lock().unwrap().push(path.clone());
                let route = r.lock().unwrap().get(&path).cloned();
                let resp = match route {
                    Some(route) => {
                        let mut resp = tiny_http::Response::from_string(route.body)
                            .with_header(header("Content-Type", "text/html; charset=utf-8"));
                        for (k, v) in &route.headers {
                            resp.add_header(header(k, v));
                        }
                        resp.add_header(header("Cache-Control", "no-store"));
                        resp
                    }
                    None => tiny_http::Response::from_string("not found").with_status_code(404),
                };
                let _ = req.respond(resp);
            }
        });
        Ok(Self { server, routes, hits, thread: Some(thread), origin: format!("http://{host}:{port}") })
    }

    /// Serves `html` at `path` with extra response headers; returns the page's URL.
    pub fn page(&self, path: &str, html: &str, headers: &[(&str, &str)]) -> String {
        let route = Route {
            body: html.to_owned(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        self.routes.lock().unwrap().insert(path.to_owned(), route);
        format!("{}{path}", self.origin)
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
