//! The CDP bridge: the host reaches the extension's service worker over the browser's CDP
//! URL, where no native host can run (a hosted or pooled browser). No network path from
//! the browser to the agent is needed: it is the URL the agent's driver already uses.
//!
//! - **Finding the worker.** A browser-level auto-attach (`waitForDebuggerOnStart`, service
//!   workers only) gives a session on every service worker, the running ones and each one
//!   that starts later (paused). The browser-side is untrusted, Unmodal's own worker
//!   included: the worker is known by its target's URL, `chrome-extension://<id>/…`, which
//!   the browser sets and no extension can claim, and `<id>` must be the pinned one
//!   (`--extension-id`, by default Unmodal's keyed ID). What a worker says about itself
//!   never makes it Unmodal's (issue 49: a second extension that answered
//!   `unmodalBridgeUp` as Unmodal's took the bridge over). Every other worker is let run
//!   and let go with nothing added, heard or told. Two workers of the pinned ID in two
//!   browser contexts at once are both refused (`Link::Refused`) until one is gone. No hash
//!   of the worker's script (`Debugger.scriptParsed`) is checked besides: it would not make
//!   an extension under the ID Unmodal (one that copied the public `key` could run
//!   Unmodal's worker byte for byte and feed it from a content script of its own), it needs
//!   the debugger on in the worker, and it would bind this binary to one build of the zip.
//! - **Worker → host:** `Runtime.addBinding` `unmodalToHost` on that worker alone, before a
//!   paused one runs its first line; each call is one message (`Runtime.bindingCalled`),
//!   heard only from that worker's session. With `Runtime.enable` on the session the
//!   binding survives the worker being stopped and started again (REMOTE-FACTS 3).
//! - **Host → worker:** `Runtime.evaluate` calls the worker's `unmodalFromHost` with the
//!   queued messages as one JSON string, in order; a batch the worker did not take (it is
//!   restarting) waits for it.
//! - **The connection drops:** reconnect with backoff, the state intact. The worker is told
//!   a new connection number in `unmodalBridgeUp` and reconnects as after a host restart
//!   (`hello`; what it held for the old host is released). What was queued for the old
//!   connection is dropped: the new `hello` gets everything the state has.
//! - **The browser is gone** (no connection for `GONE_AFTER`): `LinkState` says so, and
//!   `unmodal mcp` answers every call with `browser_gone`.

use super::super::protocol::{Carried, FetchJob, ToBrowser};
use super::{Inbox, Outbox, Outcome, Report, remote_files, remote_uploads};
use crate::cdp::{Conn, Endpoint, Event};
use serde_json::{Value, json};
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
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
/// Messages from Unmodal's worker before it answered `unmodalBridgeUp` on this connection,
/// kept until it does (a worker says `hello` the moment it starts; the answer follows).
const MAX_EARLY: usize = 256;
/// Unmodal's worker not heard this long after connecting: the log says why.
const FIND_WITHIN: Duration = Duration::from_secs(5);
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
    /// Connected; Unmodal's worker not heard yet. `seen`: the other extensions whose
    /// workers the browser showed (`<id> (<worker URL>)`); `found`: a worker of the pinned
    /// ID is there but has not answered yet.
    Up {
        seen: Vec<String>,
        found: bool,
    },
    /// Connected, and Unmodal's worker answered.
    Ready,
    /// Unmodal's worker is there but not heard, on purpose: what to tell the agent (two
    /// workers of the pinned ID at once, or a worker there that is not Unmodal's).
    Refused(String),
    /// Lost since then; reconnecting.
    Down {
        since: Instant,
        why: String,
    },
    /// Given up: what to tell the agent (why, and what to do next).
    Gone(String),
}

#[derive(Clone)]
pub struct LinkState {
    tx: Arc<watch::Sender<Link>>,
    /// The extension ID whose worker is Unmodal's (`--extension-id`).
    extension_id: Arc<str>,
}

impl LinkState {
    pub fn new(extension_id: &str) -> Self {
        Self { tx: Arc::new(watch::channel(Link::Connecting).0), extension_id: extension_id.into() }
    }

    pub fn now(&self) -> Link {
        self.tx.borrow().clone()
    }

    pub fn extension_id(&self) -> &str {
        &self.extension_id
    }

    /// Why the browser is gone, once it is.
    pub fn gone(&self) -> Option<String> {
        match &*self.tx.borrow() {
            Link::Gone(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// Why Unmodal's worker is not heard, when the bridge knows (connected, and the worker
    /// missing, silent or refused): a sentence for the agent and the log.
    pub fn why_not_heard(&self) -> Option<String> {
        let id = &self.extension_id;
        match self.now() {
            Link::Up { found: false, seen } => Some(format!(
                "no worker of extension ID {id} found; workers seen: [{}]; pass --extension-id with the ID your \
provider gave the upload (the 32 letters of its chrome-extension:// URL; docs/remote-browsers.md says where to find \
it). If {id} is right, its worker may be asleep: opening a page wakes it",
                seen.join(", ")
            )),
            Link::Up { found: true, .. } => Some(format!(
                "the worker of extension ID {id} is there but has not answered as Unmodal's; if {id} is not Unmodal's \
upload, pass --extension-id with the ID your provider gave it"
            )),
            Link::Refused(why) => Some(why),
            _ => None,
        }
    }

    /// Waits (at most `limit`) until Unmodal's worker answered over the bridge; whether it
    /// did. Returns early once the bridge refused the worker or gave up.
    pub async fn wait_ready(&self, limit: Duration) -> bool {
        let mut rx = self.tx.subscribe();
        let settled = |l: &Link| matches!(l, Link::Ready | Link::Gone(_) | Link::Refused(_));
        let _ = tokio::time::timeout(limit, rx.wait_for(settled)).await;
        matches!(self.now(), Link::Ready)
    }

    fn set(&self, l: Link) {
        self.tx.send_if_modified(|now| {
            let changed = *now != l;
            *now = l;
            changed
        });
    }
}

/// The extension a worker's URL names, as the browser set it: `<id>` of
/// `chrome-extension://<id>/…`.
pub fn extension_of(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("chrome-extension://")?;
    let id = rest.split(['/', '?', '#']).next()?;
    (!id.is_empty()).then_some(id)
}

/// Chromium's form of an extension ID: 32 letters, `a` to `p`.
pub fn valid_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b))
}

/// A service worker of the pinned extension, as the browser describes it when auto-attach
/// gives a session on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Worker {
    pub session: String,
    pub target_id: String,
    pub url: String,
    /// Its browser context; a context runs one worker per extension.
    pub context: Option<String>,
    /// Held at its start by auto-attach until it is let run.
    pub waiting: bool,
}

/// What a `Target.attachedToTarget` is, for the bridge.
#[derive(Debug, PartialEq)]
pub enum Attached {
    /// Not a service worker (a page the bridge attached to itself): left as it is.
    NotAWorker,
    /// A worker of the pinned extension.
    Ours(Worker),
    /// Any other service worker: let run and let go. `extension`: its ID and URL, if it
    /// is an extension's.
    Other { session: Option<String>, waiting: bool, extension: Option<String> },
}

/// Sorts an attach by the target's URL alone, as the browser reports it; nothing the
/// worker says counts.
pub fn classify(params: &Value, pinned: &str) -> Attached {
    let info = &params["targetInfo"];
    if info["type"] != "service_worker" {
        return Attached::NotAWorker;
    }
    let session = params["sessionId"].as_str().map(str::to_owned);
    let waiting = params["waitingForDebugger"].as_bool().unwrap_or(false);
    let url = info["url"].as_str().unwrap_or_default();
    let id = extension_of(url);
    match (session, info["targetId"].as_str()) {
        (Some(session), Some(target_id)) if id == Some(pinned) => Attached::Ours(Worker {
            session,
            target_id: target_id.to_owned(),
            url: url.to_owned(),
            context: info["browserContextId"].as_str().map(str::to_owned),
            waiting,
        }),
        (session, _) => Attached::Other { session, waiting, extension: id.map(|id| format!("{id} ({url})")) },
    }
}

/// The workers of the pinned extension that this connection holds a session on.
#[derive(Debug, Default)]
pub struct Pinned {
    workers: Vec<Worker>,
}

/// Which worker is Unmodal's.
#[derive(Debug, PartialEq)]
pub enum Choice<'a> {
    None,
    One(&'a Worker),
    /// More than one at once (the extension in two browser contexts): none is.
    Several(&'a [Worker]),
}

impl Pinned {
    /// Adds a worker that started. One of the same browser context before it is stale (its
    /// worker restarted as a new target before the old one's end was reported): it is
    /// returned, to let go.
    pub fn add(&mut self, w: Worker) -> Option<Worker> {
        let stale = self.workers.iter().position(|o| o.context == w.context).map(|i| self.workers.remove(i));
        self.workers.push(w);
        stale
    }

    pub fn remove(&mut self, session: &str) -> Option<Worker> {
        let i = self.workers.iter().position(|w| w.session == session)?;
        Some(self.workers.remove(i))
    }

    pub fn choice(&self) -> Choice<'_> {
        match self.workers.as_slice() {
            [] => Choice::None,
            [one] => Choice::One(one),
            several => Choice::Several(several),
        }
    }

    /// Whether `session`'s worker still waits to be let run; it is let run now.
    fn take_waiting(&mut self, session: &str) -> bool {
        self.workers.iter_mut().find(|w| w.session == session).is_some_and(|w| std::mem::take(&mut w.waiting))
    }
}

/// What the agent and the log are told when two or more workers of the pinned ID run.
fn several_message(workers: &[Worker]) -> String {
    let listed: Vec<String> = workers
        .iter()
        .map(|w| format!("{} in browser context {}", w.url, w.context.as_deref().unwrap_or("(unnamed)")))
        .collect();
    format!(
        "{} workers of extension ID {} run at once ({}), so Unmodal hears none of them: it cannot tell which browser \
context the agent's tabs are in. This happens when the extension runs in two browser contexts (a split incognito \
profile, or a provider's second context with the extension in it). Close all but one, or give each session a browser \
of its own; Unmodal takes the one left",
        workers.len(),
        workers.first().and_then(|w| extension_of(&w.url)).unwrap_or_default(),
        listed.join("; ")
    )
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
    let numbers = Arc::new(AtomicU64::new(first));
    let mut connections = 0u64;
    let mut backoff = Duration::from_millis(100);
    let mut lost_since = Instant::now();
    loop {
        let why = match connect(&endpoint).await {
            Ok((conn, events)) => {
                connections += 1;
                backoff = Duration::from_millis(100);
                link.set(Link::Up { seen: Vec::new(), found: false });
                tracing::info!(endpoint = %endpoint.redacted(), extension_id = link.extension_id(), "bridge connected");
                let why = Connection::new(conn, inbox.clone(), numbers.clone(), link.clone())
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
            let msg = if connections == 0 {
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
    /// Unmodal's worker was told connection number `number`: its answer (`None`: its
    /// script has not run yet, or the call failed).
    Told { session: String, number: u64, answer: Option<Value> },
    /// Batch `batch` went to the worker: how many it took (`None`: none; try again later).
    Delivered { batch: u64, taken: Option<usize> },
}

struct Connection {
    conn: Arc<Conn>,
    inbox: Inbox,
    /// Connection numbers for `unmodalBridgeUp`, unique across connections and processes.
    numbers: Arc<AtomicU64>,
    /// The workers of the pinned extension, by the browser's word (their URL).
    pinned: Pinned,
    /// The session of Unmodal's worker: the one worker of the pinned ID, its binding added.
    /// Only it is heard and told anything.
    worker: Option<String>,
    /// The number it was told; whether it answered as Unmodal's bridge (until then what it
    /// sends waits in `early`).
    number: u64,
    told: bool,
    early: Vec<String>,
    /// The other extensions whose workers the browser showed, for the error naming them.
    seen: BTreeSet<String>,
    /// Why the pinned ID's worker was let go (it did not answer as Unmodal's), until
    /// another one is heard.
    refusal: Option<String>,
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
    /// The host's answerer, fed this connection's events while it lasts.
    answerer: Option<super::super::answerer::Answerer>,
}

/// Tells the answerer its connection is gone, however `serve` ends.
struct Lost(super::super::answerer::Answerer);

impl Drop for Lost {
    fn drop(&mut self) {
        self.0.lost();
    }
}

impl Connection {
    fn new(conn: Arc<Conn>, inbox: Inbox, numbers: Arc<AtomicU64>, link: LinkState) -> Self {
        let (done_tx, _) = mpsc::unbounded_channel();
        Self {
            conn,
            inbox,
            numbers,
            pinned: Pinned::default(),
            worker: None,
            number: 0,
            told: false,
            early: Vec::new(),
            seen: BTreeSet::new(),
            refusal: None,
            queue: VecDeque::new(),
            in_flight: None,
            batches: 0,
            done_tx,
            link,
            transfers: None,
            answerer: None,
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
        // The answerer hears the same connection (pages it attaches to are no workers:
        // `classify` leaves them be); it loses it when this ends.
        let answerer = self.inbox.answerer().map(|a| {
            a.connected(&self.conn);
            Lost(a)
        });
        self.answerer = answerer.as_ref().map(|l| l.0.clone());
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
                inbox.report(Report { kind: job.kind, done: Outcome::Fetched { record: job.record, result } });
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
                        let done = Outcome::NotDelivered { tab_id: *tab_id, id: *id, record: *record, why };
                        inbox.report(Report { kind: *kind, done });
                    }
                }
            }
        });
        let _uploader = AbortOnDrop(uploader);
        // Once, a while after connecting: the log says why Unmodal's worker is not heard.
        let find = tokio::time::sleep(FIND_WITHIN);
        tokio::pin!(find);
        let mut found_checked = false;
        loop {
            tokio::select! {
                () = &mut find, if !found_checked => {
                    found_checked = true;
                    if let Some(why) = self.link.why_not_heard() {
                        tracing::warn!("{why}");
                    }
                }
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
        if let Some(a) = &self.answerer {
            a.event(&ev);
        }
        match ev.method.as_str() {
            "Target.attachedToTarget" => self.attached(&ev.params),
            "Target.detachedFromTarget" => {
                let Some(session) = ev.params["sessionId"].as_str() else { return };
                if self.pinned.remove(session).is_some() {
                    if self.worker.as_deref() == Some(session) {
                        tracing::info!("the worker's session ended");
                        self.let_go_of_worker();
                    }
                    self.settle();
                }
            }
            "Runtime.bindingCalled" if ev.params["name"] == BINDING => {
                let (Some(session), Some(payload)) = (ev.session, ev.params["payload"].as_str()) else { return };
                // Only Unmodal's worker has the binding; a call from any other session (a
                // worker refused meanwhile) is not heard.
                if self.worker.as_deref() != Some(session.as_str()) {
                    return tracing::debug!("a binding call from a worker that is not Unmodal's, ignored");
                }
                if self.told {
                    self.inbox.frame(payload.as_bytes());
                    // The worker is there and running: what waited for it can go.
                    self.flush();
                } else {
                    if self.early.len() < MAX_EARLY {
                        self.early.push(payload.to_owned());
                    }
                    // It says `hello` as it starts: its script runs now, and it is told (again
                    // a few times should an answer be lost).
                    if matches!(self.early.len(), 1 | 16 | 128) {
                        self.tell(session);
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

    /// A session auto-attach gave: a worker of the pinned extension is kept (and maybe made
    /// Unmodal's worker); any other is let run and let go, told nothing.
    fn attached(&mut self, params: &Value) {
        match classify(params, self.link.extension_id()) {
            // Only auto-attach's service workers: a page this connection attached to itself
            // (`remote_files`' helper) is left as it is.
            Attached::NotAWorker => {}
            Attached::Other { session, waiting, extension } => {
                if let Some(e) = extension
                    && self.seen.insert(e)
                {
                    self.show_waiting();
                }
                let Some(session) = session else { return };
                let conn = self.conn.clone();
                tokio::spawn(async move {
                    if waiting {
                        let _ = conn.call("Runtime.runIfWaitingForDebugger", json!({}), Some(&session)).await;
                    }
                    let _ = conn.call("Target.detachFromTarget", json!({"sessionId": session}), None).await;
                });
            }
            Attached::Ours(w) => {
                tracing::info!(url = %w.url, context = ?w.context, "a worker of the pinned extension");
                if let Some(stale) = self.pinned.add(w) {
                    if self.worker.as_deref() == Some(stale.session.as_str()) {
                        self.let_go_of_worker();
                    }
                    let conn = self.conn.clone();
                    tokio::spawn(async move {
                        let _ = conn.call("Target.detachFromTarget", json!({"sessionId": stale.session}), None).await;
                    });
                }
                self.settle();
            }
        }
    }

    /// Makes the one worker of the pinned ID Unmodal's worker, or refuses them all when
    /// there are several.
    fn settle(&mut self) {
        let one = match self.pinned.choice() {
            Choice::None => return self.show_waiting(),
            Choice::One(w) => w.session.clone(),
            Choice::Several(all) => {
                let why = several_message(all);
                let waiting: Vec<String> = all.iter().map(|w| w.session.clone()).collect();
                // Neither is heard nor told anything; a paused one runs, with nothing added.
                if self.worker.is_some() {
                    self.let_go_of_worker();
                }
                for session in waiting {
                    if self.pinned.take_waiting(&session) {
                        let conn = self.conn.clone();
                        tokio::spawn(async move {
                            let _ = conn.call("Runtime.runIfWaitingForDebugger", json!({}), Some(&session)).await;
                        });
                    }
                }
                if self.link.now() != Link::Refused(why.clone()) {
                    tracing::error!("{why}");
                    self.link.set(Link::Refused(why));
                }
                return;
            }
        };
        if self.worker.as_deref() == Some(one.as_str()) {
            return;
        }
        self.worker = Some(one.clone());
        self.number = self.numbers.fetch_add(1, Ordering::Relaxed) + 1;
        (self.told, self.in_flight) = (false, None);
        self.early.clear();
        self.show_waiting();
        let waiting = self.pinned.take_waiting(&one);
        let (conn, done, number) = (self.conn.clone(), self.done_tx.clone(), self.number);
        tokio::spawn(async move {
            let s = Some(one.as_str());
            let ready = async {
                conn.call("Runtime.enable", json!({}), s).await?;
                conn.call("Runtime.addBinding", json!({"name": BINDING}), s).await?;
                Ok::<_, crate::cdp::CdpError>(())
            }
            .await;
            if waiting {
                // Let run whatever happened: a worker held forever is worse than one unheard.
                let _ = conn.call("Runtime.runIfWaitingForDebugger", json!({}), s).await;
            }
            if let Err(e) = ready {
                return tracing::warn!(error = %e, "Unmodal's worker could not be given its binding");
            }
            // A worker that ran before we came answers now; one we just let start has not
            // run its script yet and answers `null`: it says `hello` through the binding in
            // a moment, and is asked then.
            let answer = ask(&conn, &one, number).await;
            let _ = done.send(Done::Told { session: one, number, answer });
        });
    }

    /// Unmodal's worker is no longer heard (its session ended, a newer one replaced it, or
    /// it was refused).
    fn let_go_of_worker(&mut self) {
        self.worker = None;
        (self.told, self.in_flight) = (false, None);
        self.early.clear();
    }

    /// While Unmodal's worker is not heard: what the link says (heard once on this
    /// connection, it stays `Ready`: a worker asleep is woken by the next page).
    fn show_waiting(&self) {
        if matches!(self.pinned.choice(), Choice::Several(_)) {
            return; // refused, and said so
        }
        if let (Some(why), None) = (&self.refusal, &self.worker) {
            return self.link.set(Link::Refused(why.clone()));
        }
        if self.told || self.link.now() == Link::Ready {
            return;
        }
        self.link.set(Link::Up { seen: self.seen.iter().cloned().collect(), found: self.worker.is_some() });
    }

    /// Asks Unmodal's worker (again) to answer `unmodalBridgeUp`.
    fn tell(&self, session: String) {
        let (conn, done, number) = (self.conn.clone(), self.done_tx.clone(), self.number);
        tokio::spawn(async move {
            let answer = ask(&conn, &session, number).await;
            let _ = done.send(Done::Told { session, number, answer });
        });
    }

    fn on_done(&mut self, done: Done) {
        match done {
            Done::Told { session, number, answer } => {
                // An answer for a worker since let go, or for an earlier number, changes nothing.
                if self.worker.as_deref() != Some(session.as_str()) || number != self.number || self.told {
                    return;
                }
                let Some(answer) = answer else { return };
                if answer["unmodal"].as_u64() != Some(BRIDGE_VERSION) {
                    // The ID names an extension that is not Unmodal (or not this version's
                    // bridge): what it sends is never heard.
                    let url = self.pinned.remove(&session).map(|w| w.url).unwrap_or_default();
                    let why = format!(
                        "the worker of extension ID {} ({url}) does not answer as Unmodal's bridge (version \
{BRIDGE_VERSION}); it answered {}. Pass --extension-id with the ID your provider gave Unmodal's upload, of the \
same version as this unmodal",
                        self.link.extension_id(),
                        answer.to_string().chars().take(200).collect::<String>()
                    );
                    tracing::error!("{why}");
                    self.refusal = Some(why);
                    self.let_go_of_worker();
                    let conn = self.conn.clone();
                    tokio::spawn(async move {
                        let _ = conn.call("Target.detachFromTarget", json!({"sessionId": session}), None).await;
                    });
                    return self.settle();
                }
                // Whether auto-attach put the binding in before the worker's first line (it
                // does for a worker that starts after the bridge connected).
                tracing::info!(binding_at_start = answer["binding_at_start"].as_bool(), version = ?answer["version"].as_str(), "Unmodal's worker answered");
                self.told = true;
                self.refusal = None;
                self.link.set(Link::Ready);
                for payload in std::mem::take(&mut self.early) {
                    self.inbox.frame(payload.as_bytes());
                }
                self.flush();
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

/// Tells Unmodal's worker its connection number (`unmodalBridgeUp`); its answer, `None`
/// while its script has not run yet. Only ever asked of the pinned extension's worker.
async fn ask(conn: &Conn, session: &str, number: u64) -> Option<Value> {
    let expression = format!("typeof globalThis.{HELLO} === 'function' ? globalThis.{HELLO}({number}) : null");
    let r = conn
        .call("Runtime.evaluate", json!({"expression": expression, "returnByValue": true}), Some(session))
        .await
        .ok()?;
    let v = r["result"]["value"].clone();
    (!v.is_null()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cdp::fake::{self, until};
    use std::sync::Mutex;

    const OURS: &str = "aaaabbbbccccddddeeeeffffgggghhhh";
    const ROGUE: &str = "ppppoooonnnnmmmmllllkkkkjjjjiiii";

    fn info(session: &str, url: &str, context: &str, waiting: bool) -> Value {
        json!({
            "sessionId": session,
            "targetInfo": {"targetId": format!("T-{session}"), "type": "service_worker", "url": url, "browserContextId": context},
            "waitingForDebugger": waiting,
        })
    }

    fn worker(session: &str, context: &str) -> Worker {
        Worker {
            session: session.into(),
            target_id: format!("T-{session}"),
            url: format!("chrome-extension://{OURS}/background.js"),
            context: Some(context.into()),
            waiting: true,
        }
    }

    #[test]
    fn a_worker_is_known_by_the_id_in_its_url_never_by_what_it_says() {
        let ours = format!("chrome-extension://{OURS}/background.js");
        assert_eq!(classify(&info("U", &ours, "C", true), OURS), Attached::Ours(worker("U", "C")));
        // Another extension, whatever its files are called.
        for url in [
            format!("chrome-extension://{ROGUE}/background.js"),
            format!("chrome-extension://{OURS}x/background.js"),
            format!("chrome-extension://{ROGUE}/{OURS}/background.js"),
            format!("chrome-extension://{OURS}@{ROGUE}/background.js"),
            format!("chrome-extension://{}/background.js", OURS.to_uppercase()),
        ] {
            let got = classify(&info("R", &url, "C", true), OURS);
            let Attached::Other { session, waiting, extension: Some(named) } = got else { panic!("{url}: {got:?}") };
            assert_eq!((session.as_deref(), waiting), (Some("R"), true), "{url}");
            assert!(named.ends_with(&format!("({url})")), "{named}");
        }
        // A site's service worker; a page (the bridge's own helper); no URL at all.
        let site = classify(&info("S", "https://example.com/sw.js", "C", false), OURS);
        assert_eq!(site, Attached::Other { session: Some("S".into()), waiting: false, extension: None });
        let mut page = info("P", &ours, "C", false);
        page["targetInfo"]["type"] = json!("page");
        assert_eq!(classify(&page, OURS), Attached::NotAWorker);
        let bare = json!({"sessionId": "X", "targetInfo": {"type": "service_worker"}});
        assert!(matches!(classify(&bare, OURS), Attached::Other { extension: None, .. }));
        assert_eq!(extension_of("chrome-extension://abc?x"), Some("abc"));
        assert_eq!(extension_of("chrome-extension:///x"), None);
        assert!(valid_id(OURS) && !valid_id(&OURS.to_uppercase()) && !valid_id("abc") && !valid_id(&"q".repeat(32)));
    }

    #[test]
    fn two_workers_of_the_pinned_id_are_refused_until_one_is_gone() {
        let mut p = Pinned::default();
        assert_eq!(p.choice(), Choice::None);
        assert_eq!(p.add(worker("A", "C1")), None);
        assert_eq!(p.choice(), Choice::One(&worker("A", "C1")));
        // Another browser context: both refused.
        assert_eq!(p.add(worker("B", "C2")), None);
        let Choice::Several(all) = p.choice() else { panic!("{:?}", p.choice()) };
        let why = several_message(all);
        for named in [OURS, "C1", "C2", "background.js"] {
            assert!(why.contains(named), "{why}");
        }
        assert!(p.take_waiting("B") && !p.take_waiting("B"), "let run once");
        assert_eq!(p.remove("A").map(|w| w.session), Some("A".into()));
        assert_eq!(p.choice().clone_session(), Some("B".into()));
        // The same context again: the newer one replaces the stale one.
        assert_eq!(p.add(worker("B2", "C2")).map(|w| w.session), Some("B".into()));
        assert_eq!(p.choice().clone_session(), Some("B2".into()));
        assert_eq!(p.remove("nope"), None);
    }

    impl Choice<'_> {
        fn clone_session(&self) -> Option<String> {
            match self {
                Choice::One(w) => Some(w.session.clone()),
                _ => None,
            }
        }
    }

    #[derive(Default)]
    struct Frames(Mutex<Vec<String>>);

    impl super::super::Sink for Frames {
        fn frame(&self, bytes: &[u8]) {
            self.0.lock().unwrap().push(String::from_utf8_lossy(bytes).into_owned());
        }
        fn report(&self, _: super::super::Report) {}
        fn sites(&self, _: crate::host::sites::Change) {}
    }

    /// A browser over one WebSocket (`cdp::fake`): every worker answers `unmodalBridgeUp`
    /// as Unmodal's (a rogue would).
    struct FakeBrowser(fake::FakeBrowser);

    impl FakeBrowser {
        async fn start() -> Self {
            Self(
                fake::FakeBrowser::start(|_, cmd| {
                    let expression = cmd["params"]["expression"].as_str().unwrap_or_default();
                    Ok(if expression.contains(HELLO) {
                        json!({"result": {"type": "object", "value": {"unmodal": 1, "version": "0.1.0"}}})
                    } else if expression.contains(RECEIVER) {
                        json!({"result": {"type": "number", "value": 0}})
                    } else {
                        json!({})
                    })
                })
                .await,
            )
        }

        fn send(&self, method: &str, params: Value, session: Option<&str>) {
            self.0.send(method, params, session);
        }

        fn call(&self, session: &str, payload: &str) {
            self.send("Runtime.bindingCalled", json!({"name": BINDING, "payload": payload}), Some(session));
        }

        /// The commands sent to `session`'s target, and those naming it at the browser level.
        fn to(&self, session: &str) -> Vec<String> {
            let log = self.0.commands();
            log.iter()
                .filter(|(_, s, p)| s.as_deref() == Some(session) || p["sessionId"] == session)
                .map(|(m, _, p)| format!("{m} {}", p["expression"].as_str().unwrap_or_default()).trim().to_owned())
                .collect()
        }
    }

    /// Issue 49: a second extension whose worker answered `unmodalBridgeUp` as Unmodal's got
    /// the binding, and its forged tab list replaced the real one. Now that worker is let run
    /// and let go, told and given nothing, and what it sends is never heard.
    #[tokio::test]
    async fn another_extensions_worker_is_given_told_and_heard_nothing() {
        let browser = FakeBrowser::start().await;
        let frames = Arc::new(Frames::default());
        let (_out_tx, outbox) = mpsc::unbounded_channel();
        let (_fetch_tx, fetches) = mpsc::unbounded_channel();
        let link = LinkState::new(OURS);
        let endpoint = Endpoint::new(&browser.0.url, &[], None).unwrap();
        let bridge = tokio::spawn(run(
            endpoint,
            Inbox(frames.clone()),
            outbox,
            fetches,
            link.clone(),
            Arc::new(remote_files::Budget::new(u64::MAX)),
        ));
        until("auto-attach", || browser.0.commands().iter().any(|c| c.0 == "Target.setAutoAttach")).await;

        // The rogue first, paused at its start as auto-attach holds a new worker.
        let rogue = format!("chrome-extension://{ROGUE}/background.js");
        browser.send("Target.attachedToTarget", info("R", &rogue, "C1", true), None);
        until("the rogue seen", || matches!(link.now(), Link::Up { seen, .. } if !seen.is_empty())).await;
        let why = link.why_not_heard().unwrap();
        assert!(why.contains(&format!("no worker of extension ID {OURS} found; workers seen: [{ROGUE} (")), "{why}");
        assert!(why.contains("--extension-id"), "{why}");
        let forged = r#"{"type":"tabs","tabs":[{"id":424242,"url":"https://rogue.example/"}]}"#;
        browser.call("R", forged);

        let ours = format!("chrome-extension://{OURS}/background.js");
        browser.send("Target.attachedToTarget", info("U", &ours, "C1", true), None);
        browser.call("U", r#"{"type":"hello"}"#);
        assert!(link.wait_ready(Duration::from_secs(10)).await, "{:?}", link.now());
        browser.call("R", forged);
        browser.call("U", r#"{"type":"tabs","tabs":[]}"#);
        until("the real tabs heard", || frames.0.lock().unwrap().len() == 2).await;
        assert_eq!(*frames.0.lock().unwrap(), [r#"{"type":"hello"}"#, r#"{"type":"tabs","tabs":[]}"#]);
        // Wait on what the fake browser has been sent, not on the link's state alone.
        until("the rogue let go", || browser.to("R").len() >= 2).await;
        assert_eq!(browser.to("R"), ["Runtime.runIfWaitingForDebugger", "Target.detachFromTarget"], "let run, let go");
        until("ours let run", || browser.to("U").iter().any(|c| c.starts_with("Runtime.runIfWaitingForDebugger")))
            .await;
        let to_ours = browser.to("U");
        let at = |m: &str| to_ours.iter().position(|c| c.starts_with(m));
        let (enable, bind, run) =
            (at("Runtime.enable"), at("Runtime.addBinding"), at("Runtime.runIfWaitingForDebugger"));
        assert!(enable < bind && bind.is_some() && bind < run, "the binding in before its first line: {to_ours:?}");
        assert!(to_ours.iter().any(|c| c.contains(HELLO)), "{to_ours:?}");

        // A second worker of the pinned ID in another browser context: both refused, named.
        browser.send("Target.attachedToTarget", info("U2", &ours, "C2", true), None);
        browser.call("U", r#"{"type":"while refused"}"#);
        until("refused", || matches!(link.now(), Link::Refused(_))).await;
        let why = link.why_not_heard().unwrap();
        assert!(why.contains("2 workers of extension ID") && why.contains("C1") && why.contains("C2"), "{why}");
        assert!(!link.wait_ready(Duration::from_secs(1)).await, "a call is refused at once");
        // The refusal can be seen before its command reached the browser (under Wine it was).
        until("U2 let run", || !browser.to("U2").is_empty()).await;
        assert_eq!(browser.to("U2"), ["Runtime.runIfWaitingForDebugger"], "let run, nothing added");
        // One gone: the other is Unmodal's again, told a new connection number.
        browser.send("Target.detachedFromTarget", json!({"sessionId": "U2"}), None);
        until("ready again", || link.now() == Link::Ready).await;
        let hellos: Vec<String> = browser.to("U").into_iter().filter(|c| c.contains(HELLO)).collect();
        assert!(hellos.len() >= 2 && hellos.first() != hellos.last(), "{hellos:?}");
        browser.call("U", r#"{"type":"after"}"#);
        until("heard again", || frames.0.lock().unwrap().len() == 3).await;
        assert_eq!(frames.0.lock().unwrap()[2], r#"{"type":"after"}"#, "nothing sent while refused was heard");
        assert!(browser.to("U2").len() == 1 && browser.to("R").len() == 2, "nothing more to the others");
        bridge.abort();
    }

    #[test]
    fn a_worker_that_does_not_answer_as_unmodal_is_said_so() {
        let link = LinkState::new(OURS);
        link.set(Link::Up { seen: Vec::new(), found: true });
        let why = link.why_not_heard().unwrap();
        assert!(why.contains("has not answered as Unmodal's") && why.contains("--extension-id"), "{why}");
        link.set(Link::Ready);
        assert_eq!(link.why_not_heard(), None);
    }
}
