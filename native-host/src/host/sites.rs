//! The sites open in the browser, as the host sees them over a DevTools connection of its
//! own: `Target.setDiscoverTargets` names every page and out-of-process frame with its URL
//! (`targetCreated`, `targetInfoChanged`, `targetDestroyed`). The worker's word on which page
//! asks is not enough where a DevTools client can run code in the worker (remote debugging,
//! a remote browser): what the host gives a page by the page's origin (a relying party's
//! passkeys) it gives only where this view shows a page of that site.
//!
//! - Remote mode (`unmodal mcp --cdp-endpoint`): the bridge's own connection
//!   (`transport/bridge.rs` calls `follow`).
//! - Local mode, a browser started with `--remote-debugging-port`: a connection through the
//!   profile's `DevToolsActivePort` (`watch_local`). With `--remote-debugging-pipe` there is
//!   no port, and so no view.
//!
//! A site is a registrable domain (eTLD+1, by the Public Suffix List): frames of the page's
//! own site are no targets of their own, so nothing finer can be told. Nor which tab: CDP
//! has no Chrome tab id.

use crate::cdp::{Conn, Endpoint, Event};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Targets kept, at most; past it new ones go unseen (a page that opens that many frames
/// only loses what this view would have let it have).
const MAX_TARGETS: usize = 4096;

/// What the host's connection said.
#[derive(Debug)]
pub enum Change {
    /// A new connection: nothing it saw before counts.
    Reset,
    /// The browser took `Target.setDiscoverTargets`: the view is whole from now on.
    Live,
    /// A target event (`follows`).
    Target { method: String, params: Value },
    /// The connection is gone.
    Lost,
}

impl From<Event> for Change {
    fn from(ev: Event) -> Self {
        Self::Target { method: ev.method, params: ev.params }
    }
}

/// Where the view's changes go: the host's state (the transports' `Inbox`).
pub trait Feed: Clone + Send + Sync + 'static {
    fn sites(&self, change: Change);
    /// The answerer that hears the same connection (`host/answerer/`), if there is one.
    fn answerer(&self) -> Option<super::answerer::Answerer> {
        None
    }
}

/// The browser's pages and out-of-process frames, by target id: their URL's site.
#[derive(Debug, Default)]
pub struct Sites {
    live: bool,
    targets: HashMap<String, String>,
}

impl Sites {
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Reset | Change::Lost => {
                self.live = false;
                self.targets.clear();
            }
            Change::Live => self.live = true,
            Change::Target { method, params } => self.target(&method, &params),
        }
    }

    fn target(&mut self, method: &str, params: &Value) {
        if method == "Target.targetDestroyed" {
            if let Some(id) = params["targetId"].as_str() {
                self.targets.remove(id);
            }
            return;
        }
        let info = &params["targetInfo"];
        let (Some(id), Some(kind)) = (info["targetId"].as_str(), info["type"].as_str()) else { return };
        if !matches!(kind, "page" | "iframe") {
            return;
        }
        match info["url"].as_str().and_then(web_host) {
            Some((_, host)) if self.targets.len() < MAX_TARGETS || self.targets.contains_key(id) => {
                self.targets.insert(id.to_owned(), site_of(&host));
            }
            // Navigated away from the web (about:blank, chrome://…): no site.
            _ => {
                self.targets.remove(id);
            }
        }
    }

    /// Whether the view is whole (the connection is up and the browser took the command).
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether a page or out-of-process frame of `site` is open; `None` while the host has
    /// no whole view (no connection of its own, or the browser did not take the command).
    pub fn shows(&self, site: &str) -> Option<bool> {
        self.live.then(|| self.targets.values().any(|s| s == site))
    }
}

/// Whether the bridge's event is one for this view (browser-level target events).
pub fn follows(ev: &Event) -> bool {
    ev.session.is_none()
        && matches!(ev.method.as_str(), "Target.targetCreated" | "Target.targetInfoChanged" | "Target.targetDestroyed")
}

/// The view, fed from `conn` for as long as the guard lives (dropped: the view is lost).
pub fn follow<F: Feed>(conn: &Arc<Conn>, feed: F) -> Following<F> {
    feed.sites(Change::Reset);
    let (conn, tx) = (conn.clone(), feed.clone());
    let task = tokio::spawn(async move {
        // Every existing target comes as `targetCreated` before the answer.
        match conn.call("Target.setDiscoverTargets", json!({"discover": true}), None).await {
            Ok(_) => tx.sites(Change::Live),
            Err(e) => tracing::warn!(error = %e, "no view of the browser's pages: passkeys are not given to any page"),
        }
    });
    Following { feed, task }
}

pub struct Following<F: Feed> {
    feed: F,
    task: tokio::task::JoinHandle<()>,
}

impl<F: Feed> Drop for Following<F> {
    fn drop(&mut self) {
        self.task.abort();
        self.feed.sites(Change::Lost);
    }
}

/// Local mode, a browser with a DevTools port: the view over the host's own connection
/// through `port_file` (`DevToolsActivePort`: the port, then the browser's WebSocket path),
/// connected again whenever it drops, for as long as the host runs.
pub async fn watch_local(port_file: PathBuf, feed: impl Feed) {
    let mut wait = Duration::from_millis(100);
    loop {
        if let Some(url) = browser_url(&port_file) {
            match open(&url).await {
                Ok((conn, mut events)) => {
                    tracing::info!("the host's own DevTools connection is up (the sites open in the browser)");
                    wait = Duration::from_millis(100);
                    // The answerer first: the targets `follow` brings are its too.
                    let answerer = feed.answerer();
                    if let Some(a) = &answerer {
                        a.connected(&conn);
                    }
                    let following = follow(&conn, feed.clone());
                    while let Some(ev) = events.recv().await {
                        if let Some(a) = &answerer {
                            a.event(&ev);
                        }
                        if follows(&ev) {
                            feed.sites(ev.into());
                        }
                    }
                    drop(following);
                    if let Some(a) = &answerer {
                        a.lost();
                    }
                    tracing::info!("the host's own DevTools connection closed");
                }
                Err(e) => tracing::debug!(error = %format!("{e:#}"), "the host's own DevTools connection failed"),
            }
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(5));
    }
}

async fn open(url: &str) -> anyhow::Result<(Arc<Conn>, tokio::sync::mpsc::UnboundedReceiver<Event>)> {
    Conn::open(&Endpoint::new(url, &[], None)?, url).await
}

/// The browser's WebSocket URL `DevToolsActivePort` names, if it is there and readable.
fn browser_url(port_file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(port_file).ok()?;
    let mut lines = text.lines();
    let port: u16 = lines.next()?.trim().parse().ok()?;
    let path = lines.next()?.trim();
    (path.starts_with("/devtools/browser/") && path.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| format!("ws://127.0.0.1:{port}{path}"))
}

/// An http(s) URL's scheme (`https` or `http`) and host, lowercase (an IPv6 host in its
/// brackets); `None` for anything else. The URLs come from the browser (`sender.url`, a
/// target's `url`), canonical; whatever is not is refused, not mended.
pub fn web_host(url: &str) -> Option<(&'static str, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "https" => "https",
        "http" => "http",
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#', '\\']).next()?;
    let hostport = authority.rsplit('@').next()?;
    let host = match hostport.strip_prefix('[') {
        Some(v6) => {
            let (inside, _) = v6.split_once(']')?;
            inside.parse::<std::net::Ipv6Addr>().ok()?;
            format!("[{inside}]")
        }
        None => {
            let host = hostport.split(':').next()?;
            if host.is_empty() || !host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
                return None;
            }
            host.to_owned()
        }
    };
    Some((scheme, host.to_ascii_lowercase()))
}

/// Whether `host` is an IP address (IPv6 in brackets).
pub fn is_ip(host: &str) -> bool {
    host.parse::<std::net::Ipv4Addr>().is_ok() || host.starts_with('[')
}

/// A host's site: its registrable domain (eTLD+1), else the host itself (an IP address,
/// `localhost`, a public suffix).
pub fn site_of(host: &str) -> String {
    let host = host.to_ascii_lowercase();
    if is_ip(&host) {
        return host;
    }
    psl::domain_str(&host).map_or_else(|| host.clone(), str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(id: &str, kind: &str, url: &str) -> Change {
        Change::Target {
            method: "Target.targetCreated".into(),
            params: json!({"targetInfo": {"targetId": id, "type": kind, "title": "", "url": url, "attached": false,
                "canAccessOpener": false, "browserContextId": "C1"}}),
        }
    }

    /// What Chromium 156 sent a connection that called `Target.setDiscoverTargets`, then
    /// opened a page on 127.0.0.1 with a frame from localhost (another site: a target of its
    /// own) and closed it (recorded; the browser's own `browser_ui` targets cut to one).
    const RECORDED: &str = r#"[
{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"253AA1F4A371BD82D65C1886219C70C2","type":"browser_ui","title":"","url":"chrome://omnibox-popup.top-chrome/","attached":false,"canAccessOpener":false,"browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"BE7B3FDD433A780BA2925730C43C6FBB","type":"page","title":"about:blank","url":"about:blank","attached":false,"canAccessOpener":false,"browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"D24FA9502CE333E7E067750686263952","type":"page","title":"","url":"http://127.0.0.1:18766/index.html","attached":false,"canAccessOpener":false,"browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"D24FA9502CE333E7E067750686263952","type":"page","title":"127.0.0.1:18766/index.html","url":"http://127.0.0.1:18766/index.html","attached":false,"canAccessOpener":false,"browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"051C155F1610BCE3BF271BAE8B4995FE","type":"iframe","title":"","url":"","attached":false,"parentId":"D24FA9502CE333E7E067750686263952","canAccessOpener":false,"parentFrameId":"D24FA9502CE333E7E067750686263952","browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"051C155F1610BCE3BF271BAE8B4995FE","type":"iframe","title":"http://localhost:18766/frame.html","url":"http://localhost:18766/frame.html","attached":false,"parentId":"D24FA9502CE333E7E067750686263952","canAccessOpener":false,"parentFrameId":"D24FA9502CE333E7E067750686263952","browserContextId":"273701CF4CA26167FAC916134D64A19E"}}},
{"method":"Target.targetDestroyed","params":{"targetId":"051C155F1610BCE3BF271BAE8B4995FE"}},
{"method":"Target.targetDestroyed","params":{"targetId":"D24FA9502CE333E7E067750686263952"}}
]"#;

    /// The recorded events one by one, and what the view shows after each.
    #[test]
    fn the_view_follows_recorded_target_events() {
        let events: Vec<Value> = serde_json::from_str(RECORDED).unwrap();
        let mut v = Sites::default();
        assert_eq!(v.shows("127.0.0.1"), None, "no connection: no view");
        v.apply(Change::Reset);
        let seen = |v: &Sites| (v.shows("127.0.0.1"), v.shows("localhost"));
        let mut after = Vec::new();
        for (i, e) in events.into_iter().enumerate() {
            let ev = Event { method: e["method"].as_str().unwrap().into(), params: e["params"].clone(), session: None };
            assert!(follows(&ev));
            v.apply(ev.into());
            if i == 1 {
                assert_eq!(seen(&v), (None, None), "not whole until the browser took the command");
                v.apply(Change::Live);
            }
            after.push(seen(&v));
        }
        let (no, page, both) = ((Some(false), Some(false)), (Some(true), Some(false)), (Some(true), Some(true)));
        assert_eq!(after, [(None, None), no, page, page, page, both, page, no]);
        // Another connection's events, or a session's, are not the browser's targets.
        let attached = Event { method: "Target.targetCreated".into(), params: Value::Null, session: Some("S1".into()) };
        assert!(!follows(&attached));
    }

    #[test]
    fn sites_not_hosts_and_a_lost_connection_leaves_no_view() {
        let mut v = Sites::default();
        v.apply(Change::Reset);
        v.apply(Change::Live);
        v.apply(created("F1", "iframe", "https://login.bank.example:8443/frame?x=1#y"));
        assert_eq!(v.shows("bank.example"), Some(true), "an out-of-process frame's site");
        assert_eq!(v.shows("login.bank.example"), Some(false), "sites, not hosts");
        // A worker's URL is no page.
        v.apply(created("W1", "service_worker", "https://w.example/sw.js"));
        assert_eq!(v.shows("w.example"), Some(false));
        // The frame navigates away from the web.
        v.apply(Change::Target {
            method: "Target.targetInfoChanged".into(),
            params: json!({"targetInfo": {"targetId": "F1", "type": "iframe", "url": "about:blank"}}),
        });
        assert_eq!(v.shows("bank.example"), Some(false));
        v.apply(created("P3", "page", "https://a.github.io/"));
        v.apply(Change::Lost);
        assert_eq!(v.shows("a.github.io"), None, "a lost connection leaves no view");
        v.apply(Change::Reset);
        v.apply(Change::Live);
        assert_eq!(v.shows("a.github.io"), Some(false), "nothing of the old connection counts");
    }

    #[test]
    fn a_flood_of_targets_stops_at_the_limit() {
        let mut v = Sites::default();
        v.apply(Change::Live);
        for i in 0..MAX_TARGETS + 10 {
            v.apply(created(&format!("T{i}"), "iframe", &format!("https://s{i}.example/")));
        }
        assert_eq!(v.targets.len(), MAX_TARGETS);
        assert_eq!(v.shows(&format!("s{}.example", MAX_TARGETS + 5)), Some(false));
        assert_eq!(v.shows("s0.example"), Some(true));
    }

    #[test]
    fn sites_and_hosts() {
        assert_eq!(site_of("login.bank.example"), "bank.example");
        assert_eq!(site_of("a.b.co.uk"), "b.co.uk");
        assert_eq!(site_of("x.github.io"), "x.github.io", "a private suffix counts");
        assert_eq!(site_of("localhost"), "localhost");
        assert_eq!(site_of("127.0.0.1"), "127.0.0.1");
        assert_eq!(web_host("https://U:p@Bank.Example:8443/x"), Some(("https", "bank.example".into())));
        assert_eq!(web_host("http://[::1]:80/"), Some(("http", "[::1]".into())));
        for bad in ["chrome://newtab/", "about:blank", "https://", "https://a b/", "https://[zz]/", "data:x,https://a/"]
        {
            assert_eq!(web_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_port_file_names_the_browsers_websocket() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("DevToolsActivePort");
        assert_eq!(browser_url(&f), None);
        std::fs::write(&f, "9222\n/devtools/browser/1b2c\n").unwrap();
        assert_eq!(browser_url(&f).as_deref(), Some("ws://127.0.0.1:9222/devtools/browser/1b2c"));
        std::fs::write(&f, "9222\n/elsewhere\n").unwrap();
        assert_eq!(browser_url(&f), None);
    }
}
