//! The CDP bridge: the host reaches the extension's service worker over the browser's CDP
//! URL, where no native host can run (a hosted or pooled browser). No network path from
//! the browser to the agent is needed: it is the URL the agent's driver already uses.
//!
//! - **Finding the worker.** A browser-level auto-attach (`waitForDebuggerOnStart`, service
//!   workers only) gives a session on every extension worker, the running one and each one
//!   that starts later (paused, so the binding exists before its first line). The worker
//!   is recognised by what it answers (`unmodalBridgeUp`: the extension's name and bridge
//!   version), not by its ID: an uploaded extension has no `key`. Other workers are let go.
//! - **Worker → host:** `Runtime.addBinding` `unmodalToHost`; each call is one message
//!   (`Runtime.bindingCalled`). With `Runtime.enable` on the session the binding survives
//!   the worker being stopped and started again (REMOTE-FACTS 3).
//! - **Host → worker:** `Runtime.evaluate` calls the worker's `unmodalFromHost` with the
//!   queued messages as one JSON string, in order; a batch the worker did not take (it is
//!   restarting) waits for it.
//! - **The connection drops:** reconnect with backoff, the state intact. The worker sees a
//!   new connection number in `unmodalBridgeUp` and reconnects as after a host restart
//!   (`hello`; what it held for the old host is released). What was queued for the old
//!   connection is dropped: the new `hello` gets everything the state has.
//! - **The browser is gone** (no connection for `GONE_AFTER`): `LinkState` says so, and
//!   `unmodal mcp` answers every call with `browser_gone`.

use super::super::protocol::{Carried, FetchJob, ToBrowser};
use super::{Inbox, Outbox, remote_files, remote_uploads};
use crate::cdp::{Conn, Endpoint, Event};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// The binding the worker sends through; the worker's own names (`manifest/bridge.js`).
pub const BINDING: &str = "unmodalToHost";
const RECEIVER: &str = "unmodalFromHost";
const HELLO: &str = "unmodalBridgeUp";
/// What `unmodalBridgeUp` answers: `{unmodal: BRIDGE_VERSION, version}`.
const BRIDGE_VERSION: u64 = 1;
/// No connection for this long: the browser (or the provider's session) is gone.
pub const GONE_AFTER: Duration = Duration::from_secs(10);
/// Messages from a worker not yet recognised, kept until it is (a worker says `hello` the
/// moment it starts; the check follows).
const MAX_UNRECOGNISED: usize = 256;
/// Messages kept for a worker that is not there (the extension not loaded, or restarting);
/// past this the oldest go (a `hello` gets the state anew anyway).
const MAX_QUEUED: usize = 4096;
/// One batch carries at most this many messages, or this many bytes.
const BATCH_MESSAGES: usize = 512;
const BATCH_BYTES: usize = 1 << 20;

/// How the bridge stands, for `unmodal mcp`'s answers.
#[derive(Clone, Debug, PartialEq)]
pub enum Link {
    Connecting,
    /// Connected; Unmodal's worker not found yet.
    Up,
    /// Connected, and Unmodal's worker answered.
    Ready,
    /// Lost since then; reconnecting.
    Down {
        since: Instant,
        why: String,
    },
    /// Given up: what to tell the agent (why, and what to do next).
    Gone(String),
}

#[derive(Clone)]
pub struct LinkState(Arc<watch::Sender<Link>>);

impl Default for LinkState {
    fn default() -> Self {
        Self(Arc::new(watch::channel(Link::Connecting).0))
    }
}

impl LinkState {
    pub fn now(&self) -> Link {
        self.0.borrow().clone()
    }

    /// Why the browser is gone, once it is.
    pub fn gone(&self) -> Option<String> {
        match &*self.0.borrow() {
            Link::Gone(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Waits (at most `limit`) until Unmodal's worker answered over the bridge; whether it did.
    pub async fn wait_ready(&self, limit: Duration) -> bool {
        let mut rx = self.0.subscribe();
        let _ = tokio::time::timeout(limit, rx.wait_for(|l| matches!(l, Link::Ready | Link::Gone(_)))).await;
        matches!(self.now(), Link::Ready)
    }

    fn set(&self, l: Link) {
        self.0.send_replace(l);
    }
}

/// Runs the bridge for as long as the process lives or the browser is there.
pub async fn run(
    endpoint: Endpoint,
    inbox: Inbox,
    mut outbox: Outbox,
    mut fetches: mpsc::UnboundedReceiver<FetchJob>,
    link: LinkState,
    copies: Arc<remote_files::Budget>,
) {
    // Connection numbers differ between processes too: a second `unmodal mcp` on the
    // same browser must not pass for the connection the worker already has. Milliseconds
    // since 1970 times 1024 stay a safe integer in JavaScript until the year 2248.
    let first = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let first = u64::try_from(first).unwrap_or(0) << 10;
    let mut generation = first;
    let mut backoff = Duration::from_millis(100);
    let mut lost_since = Instant::now();
    loop {
        let why = match connect(&endpoint).await {
            Ok((conn, events)) => {
                generation += 1;
                backoff = Duration::from_millis(100);
                link.set(Link::Up);
                tracing::info!(endpoint = %endpoint.redacted(), generation, "bridge connected");
                let why = Connection::new(conn, inbox.clone(), generation, link.clone())
                    .serve(events, &mut outbox, &mut fetches, copies.clone())
                    .await;
                tracing::warn!(reason = %why, "bridge lost; reconnecting");
                lost_since = Instant::now();
                link.set(Link::Down { since: lost_since, why: why.clone() });
                why
            }
            Err(e) => {
                let why = format!("{e:#}");
                tracing::debug!(error = %why, "bridge connection failed");
                why
            }
        };
        if lost_since.elapsed() >= GONE_AFTER {
            let msg = if generation == first {
                format!(
                    "Unmodal could not connect to the browser at {} (for {} s: {why}). Check the URL given to \
--cdp-endpoint, and --cdp-header or --cdp-ca if the endpoint wants them, then start `unmodal mcp` again.",
                    endpoint.redacted(),
                    GONE_AFTER.as_secs()
                )
            } else {
                format!(
                    "The browser at {} cannot be reached any more (for {} s: {why}); its session has ended. Nothing \
more can happen in it: start a new browser session and run `unmodal mcp --cdp-endpoint` with its URL.",
                    endpoint.redacted(),
                    GONE_AFTER.as_secs()
                )
            };
            tracing::error!("{msg}");
            link.set(Link::Gone(msg));
            // The outbox still drains, so the state never blocks on a browser that is gone.
            while outbox.recv().await.is_some() {}
            return;
        }
        // Messages meant for a connection that is gone: the next `hello` gets the state anew.
        while outbox.try_recv().is_ok() {}
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

async fn connect(endpoint: &Endpoint) -> anyhow::Result<(Arc<Conn>, mpsc::UnboundedReceiver<Event>)> {
    let url = endpoint.websocket_url().await?;
    let (conn, events) = Conn::open(endpoint, &url).await?;
    // Every service worker, those running now and those that start later (paused until
    // the binding is in); nothing else.
    conn.call(
        "Target.setAutoAttach",
        json!({
            "autoAttach": true,
            "waitForDebuggerOnStart": true,
            "flatten": true,
            "filter": [{"type": "service_worker", "exclude": false}, {"exclude": true}],
        }),
        None,
    )
    .await?;
    Ok((conn, events))
}

/// Ends a task with the connection that started it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What a task spawned by the connection reports back to its loop.
enum Done {
    /// A worker answered `unmodalBridgeUp` as Unmodal's (or did not).
    Recognised { session: String, ours: bool },
    /// Batch `batch` went to the worker: how many it took (`None`: none; try again later).
    Delivered { batch: u64, taken: Option<usize> },
}

struct Connection {
    conn: Arc<Conn>,
    inbox: Inbox,
    generation: u64,
    /// The session of Unmodal's worker, once recognised.
    worker: Option<String>,
    /// Messages from workers not yet recognised, by session.
    unrecognised: HashMap<String, Vec<String>>,
    /// Encoded messages for the worker, oldest first; the first of them may be on their way
    /// as one batch (its number, how many).
    queue: VecDeque<String>,
    in_flight: Option<(u64, usize)>,
    batches: u64,
    done_tx: mpsc::UnboundedSender<Done>,
    link: LinkState,
    /// Where the browser's file-transfer events go: uploads are written on the browser's
    /// machine through its downloads (`remote_uploads`).
    transfers: Option<mpsc::UnboundedSender<Event>>,
}

impl Connection {
    fn new(conn: Arc<Conn>, inbox: Inbox, generation: u64, link: LinkState) -> Self {
        let (done_tx, _) = mpsc::unbounded_channel();
        Self {
            conn,
            inbox,
            generation,
            worker: None,
            unrecognised: HashMap::new(),
            queue: VecDeque::new(),
            in_flight: None,
            batches: 0,
            done_tx,
            link,
            transfers: None,
        }
    }

    /// Until the connection ends; why it did.
    async fn serve(
        mut self,
        mut events: mpsc::UnboundedReceiver<Event>,
        outbox: &mut Outbox,
        fetches: &mut mpsc::UnboundedReceiver<FetchJob>,
        copies: Arc<remote_files::Budget>,
    ) -> String {
        let (done_tx, mut done_rx) = mpsc::unbounded_channel();
        self.done_tx = done_tx;
        // The host's own view of the pages open, for as long as this connection lasts.
        let _sites = super::super::sites::follow(&self.conn, self.inbox.clone());
        // Remote downloads are copied one at a time, on this connection, within the
        // session's budget (kept across connections).
        let (copy_tx, mut copy_rx) = mpsc::unbounded_channel::<FetchJob>();
        let (conn, inbox) = (self.conn.clone(), self.inbox.clone());
        let copier = tokio::spawn(async move {
            let mut helper = remote_files::Helper::default();
            while let Some(job) = copy_rx.recv().await {
                let result = remote_files::fetch(&conn, &mut helper, &job, &copies).await;
                if let Err(e) = &result {
                    tracing::warn!(error = %e, "a remote download was not copied here");
                }
                inbox.fetched(job.record, result);
            }
        });
        let _copier = AbortOnDrop(copier);
        // Files a chooser's answer gives go to the browser's machine first, one answer at
        // a time; the answer follows with their paths there. The worker holds the chooser
        // meanwhile.
        let (upload_tx, mut upload_rx) = mpsc::unbounded_channel::<ToBrowser>();
        let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<ToBrowser>();
        let (transfers_tx, mut transfers_rx) = mpsc::unbounded_channel::<Event>();
        self.transfers = Some(transfers_tx);
        let (conn, inbox) = (self.conn.clone(), self.inbox.clone());
        let uploader = tokio::spawn(async move {
            let mut uploader = remote_uploads::Uploader::new();
            while let Some(mut m) = upload_rx.recv().await {
                let ToBrowser::PromptAnswer {
                    kind,
                    tab_id,
                    id,
                    record,
                    carried: Carried { files: Some(files), .. },
                    ..
                } = &mut m
                else {
                    continue;
                };
                let wait_ms = u64::try_from(remote_uploads::wait_for(files).as_millis()).unwrap_or(u64::MAX);
                let _ = ready_tx.send(ToBrowser::PromptHold { kind: *kind, tab_id: *tab_id, id: *id, wait_ms });
                match uploader.copy_all(&conn, &mut transfers_rx, files).await {
                    Ok(there) => {
                        *files = there;
                        let _ = ready_tx.send(m);
                    }
                    Err(why) => {
                        tracing::warn!(error = %why, "files not copied to the remote browser");
                        inbox.upload_failed(*tab_id, *id, *record, &why);
                    }
                }
            }
        });
        let _uploader = AbortOnDrop(uploader);
        loop {
            tokio::select! {
                Some(job) = fetches.recv() => {
                    let _ = copy_tx.send(job);
                }
                ev = events.recv() => match ev {
                    Some(ev) => self.on_event(ev),
                    None => return "the WebSocket closed".into(),
                },
                msg = outbox.recv() => match msg {
                    Some(m) if remote_uploads::wanted(&m) => {
                        let _ = upload_tx.send(m);
                    }
                    Some(m) => self.enqueue(&m),
                    None => {
                        self.conn.close();
                        return "the host ended".into();
                    }
                },
                Some(m) = ready_rx.recv() => self.enqueue(&m),
                Some(done) = done_rx.recv() => self.on_done(done),
            }
        }
    }

    /// Queues `m` for the worker, and sends what is queued if nothing is on its way.
    fn enqueue(&mut self, m: &ToBrowser) {
        match serde_json::to_string(m) {
            Ok(text) => {
                if self.queue.len() >= MAX_QUEUED && self.in_flight.is_none() {
                    tracing::warn!("no worker takes the host's messages; the oldest dropped");
                    self.queue.pop_front();
                }
                self.queue.push_back(text);
            }
            Err(e) => tracing::error!(error = %e, "message to the browser not encodable; dropped"),
        }
        self.flush();
    }

    fn on_event(&mut self, ev: Event) {
        match ev.method.as_str() {
            "Target.attachedToTarget" => self.attached(&ev.params),
            "Target.detachedFromTarget" if ev.params["sessionId"].as_str() == self.worker.as_deref() => {
                tracing::info!("the worker's session ended");
                self.worker = None;
                self.in_flight = None;
            }
            "Runtime.bindingCalled" if ev.params["name"] == BINDING => {
                let (Some(session), Some(payload)) = (ev.session, ev.params["payload"].as_str()) else { return };
                if self.worker.as_deref() == Some(session.as_str()) {
                    self.inbox.frame(payload.as_bytes());
                    // The worker is there and running: what waited for it can go.
                    self.flush();
                } else {
                    let kept = self.unrecognised.entry(session.clone()).or_default();
                    if kept.len() < MAX_UNRECOGNISED {
                        kept.push(payload.to_owned());
                    }
                    if kept.len() == 1 {
                        self.recognise(session);
                    }
                }
            }
            "Browser.downloadWillBegin" | "Browser.downloadProgress" if ev.session.is_none() => {
                // Only the uploads' browser context reports these to this connection.
                if let Some(tx) = &self.transfers {
                    let _ = tx.send(ev);
                }
            }
            _ if super::super::sites::follows(&ev) => self.inbox.sites(ev.into()),
            "Runtime.executionContextCreated" if ev.session.is_some() && ev.session == self.worker => {
                // The worker started again in the same session (REMOTE-FACTS 3): a batch on
                // its way to the old one may be lost; it goes again to the new one.
                self.in_flight = None;
            }
            _ => {}
        }
    }

    /// A service worker's session: ours to check if it is an extension's, else let go.
    fn attached(&mut self, params: &Value) {
        let Some(session) = params["sessionId"].as_str().map(str::to_owned) else { return };
        let info = &params["targetInfo"];
        let waiting = params["waitingForDebugger"].as_bool().unwrap_or(false);
        // Only auto-attach's service workers: a page this connection attached to itself
        // (`remote_files`' helper) is left as it is.
        if info["type"] != "service_worker" {
            return;
        }
        let extension = info["url"].as_str().is_some_and(|u| u.starts_with("chrome-extension://"));
        let conn = self.conn.clone();
        if !extension {
            tokio::spawn(async move {
                if waiting {
                    let _ = conn.call("Runtime.runIfWaitingForDebugger", json!({}), Some(&session)).await;
                }
                let _ = conn.call("Target.detachFromTarget", json!({"sessionId": session}), None).await;
            });
            return;
        }
        let done = self.done_tx.clone();
        let generation = self.generation;
        tokio::spawn(async move {
            let s = Some(session.as_str());
            let ready = async {
                conn.call("Runtime.enable", json!({}), s).await?;
                conn.call("Runtime.addBinding", json!({"name": BINDING}), s).await?;
                if waiting {
                    conn.call("Runtime.runIfWaitingForDebugger", json!({}), s).await?;
                }
                Ok::<_, crate::cdp::CdpError>(())
            };
            if let Err(e) = ready.await {
                return tracing::debug!(error = %e, "an extension worker could not be prepared");
            }
            // A worker that ran before we came is asked now; one we just let start has not
            // run its script yet and answers `null`: it says `hello` through the binding
            // in a moment, and is asked then.
            if let Some(ours) = ask_identity(&conn, &session, generation).await {
                let _ = done.send(Done::Recognised { session, ours });
            }
        });
    }

    fn recognise(&self, session: String) {
        let (conn, done, generation) = (self.conn.clone(), self.done_tx.clone(), self.generation);
        tokio::spawn(async move {
            let ours = ask_identity(&conn, &session, generation).await.unwrap_or(false);
            let _ = done.send(Done::Recognised { session, ours });
        });
    }

    fn on_done(&mut self, done: Done) {
        match done {
            Done::Recognised { session, ours: true } => {
                if self.worker.as_ref() != Some(&session) {
                    tracing::info!("Unmodal's worker recognised");
                    self.worker = Some(session.clone());
                    self.in_flight = None;
                    self.link.set(Link::Ready);
                }
                for payload in self.unrecognised.remove(&session).unwrap_or_default() {
                    self.inbox.frame(payload.as_bytes());
                }
                self.flush();
            }
            Done::Recognised { session, ours: false } => {
                self.unrecognised.remove(&session);
                let conn = self.conn.clone();
                tokio::spawn(async move {
                    let _ = conn.call("Runtime.removeBinding", json!({"name": BINDING}), Some(&session)).await;
                    let _ = conn.call("Target.detachFromTarget", json!({"sessionId": session}), None).await;
                });
            }
            Done::Delivered { batch, taken } => {
                // An answer for a batch given up on (the worker restarted meanwhile) changes nothing.
                let Some((_, sent)) = self.in_flight.filter(|(b, _)| *b == batch) else { return };
                self.in_flight = None;
                let n = taken.unwrap_or(0).min(sent).min(self.queue.len());
                self.queue.drain(..n);
                if n > 0 {
                    self.flush();
                }
            }
        }
    }

    /// Sends what is queued to the worker as one batch, unless one is on its way.
    fn flush(&mut self) {
        let Some(session) = self.worker.clone() else { return };
        if self.in_flight.is_some() || self.queue.is_empty() {
            return;
        }
        let mut bytes = 0;
        let items: Vec<&str> = self
            .queue
            .iter()
            .take(BATCH_MESSAGES)
            .take_while(|m| {
                bytes += m.len() + 1;
                bytes <= BATCH_BYTES || bytes == m.len() + 1
            })
            .map(String::as_str)
            .collect();
        let text = format!("[{}]", items.join(","));
        self.batches += 1;
        let batch = self.batches;
        self.in_flight = Some((batch, items.len()));
        // The batch goes as one JSON string the worker parses: page-derived keys such as
        // `__proto__` stay data, which an object literal would not keep them.
        let literal = serde_json::to_string(&text).unwrap_or_else(|_| "\"[]\"".into());
        let expression = format!("typeof globalThis.{RECEIVER} === 'function' ? globalThis.{RECEIVER}({literal}) : -1");
        let (conn, done) = (self.conn.clone(), self.done_tx.clone());
        tokio::spawn(async move {
            let r = conn
                .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}), Some(&session))
                .await;
            let taken = match r {
                Ok(v) => v["result"]["value"].as_u64().and_then(|n| usize::try_from(n).ok()),
                Err(e) => {
                    tracing::debug!(error = %e, "a batch did not reach the worker");
                    None
                }
            };
            let _ = done.send(Done::Delivered { batch, taken });
        });
    }
}

/// Asks a worker whether it is Unmodal's, telling it this connection's number. `None`: its
/// script has not run yet.
async fn ask_identity(conn: &Conn, session: &str, generation: u64) -> Option<bool> {
    let expression = format!("typeof globalThis.{HELLO} === 'function' ? globalThis.{HELLO}({generation}) : null");
    let r = conn
        .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}), Some(session))
        .await
        .ok()?;
    let v = &r["result"]["value"];
    if v.is_null() {
        return None;
    }
    let ours = v["unmodal"].as_u64() == Some(BRIDGE_VERSION);
    if ours {
        // Whether auto-attach put the binding in before the worker's first line (it does
        // for a worker that starts after the bridge connected).
        tracing::info!(binding_at_start = v["binding_at_start"].as_bool(), version = ?v["version"].as_str(), "worker answered");
    }
    Some(ours)
}
