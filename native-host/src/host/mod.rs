//! Host mode: Chrome starts `unmodal chrome-extension://<id>/` and talks native messaging
//! over stdin/stdout. The host keeps the state of record and serves `unmodal mcp` over a
//! Unix socket that only this user can reach.

pub mod agent_calls;
pub mod answerer;
mod answerer_hook;
mod barrier;
mod dispatch;
mod explain;
// Unix only, as `prompt_snapshot`, whose sample requests it forges; the host's logic it
// plays against is the same on every system.
#[cfg(all(test, unix))]
mod forged;
mod held;
mod kind_state;
pub mod kinds;
#[cfg(test)]
mod layers;
pub mod logs;
mod opener;
pub mod persist;
mod pilot;
mod pilot_switch;
mod pilot_value;
pub mod policy;
mod prompt;
// Unix only: the snapshot holds the answers' paths as Unix writes them (`<dir>/out.pdf`);
// what each kind does with a path is the same on every system.
#[cfg(all(test, unix))]
mod prompt_snapshot;
pub mod protocol;
pub mod record;
mod reports;
pub mod rules;
mod sites;
mod socket;
pub mod state;
pub mod transport;

use crate::redact::Redactor;
use crate::{paths, platform};
use anyhow::{Context, Result};
use protocol::{FromBrowser, ToBrowser};
use state::State;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, mpsc};

/// What the stdin loop, the socket clients and the stdout writer share.
/// How long a host whose browser has a DevTools port waits for its own view of the pages
/// before it reads the browser's messages (`sites.rs`).
const VIEW_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

pub struct Shared {
    state: Mutex<State>,
    to_browser: mpsc::UnboundedSender<ToBrowser>,
    /// Woken after every message from the browser (rule acknowledgements wait on it).
    browser_spoke: Notify,
    /// The runtime directory (sockets, state files).
    dir: PathBuf,
    /// The browser session whose state this host keeps on disk, once `hello` named it,
    /// and the lock that makes this host its only writer.
    session: Mutex<Option<(String, std::fs::File)>>,
    /// Woken when the state changed: the saver writes a snapshot soon after.
    changed: Notify,
    /// AI Web Pilot calls waiting for the browser's result.
    pilot: pilot::PilotCalls,
    /// Where files a remote browser wrote go to be copied here (the bridge's, when there is one).
    fetch: Mutex<Option<mpsc::UnboundedSender<protocol::FetchJob>>>,
    /// How many snapshots were taken, and the newest one on disk.
    snapshots: std::sync::atomic::AtomicU64,
    written: Mutex<u64>,
    /// The state directory was found gone (said once).
    dir_gone: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// What serves `state`, saving it under `dir`; and what it sends the browser.
    fn new(state: State, dir: PathBuf) -> (Arc<Self>, mpsc::UnboundedReceiver<ToBrowser>) {
        let (tx, outbox) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            to_browser: tx,
            browser_spoke: Notify::new(),
            dir,
            session: Mutex::new(None),
            changed: Notify::new(),
            pilot: pilot::PilotCalls::default(),
            fetch: Mutex::new(None),
            snapshots: 0.into(),
            written: Mutex::new(0),
            dir_gone: Default::default(),
        });
        (shared, outbox)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave State half-updated in a way that
        // matters more than losing the browser; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends to the browser. Takes the state's guard so messages leave in the order the
    /// state made them: a rules message overtaken by an older one would put the older
    /// rules (or policy) in force after the agent was told the newer ones were.
    fn send(&self, state: &MutexGuard<'_, State>, msgs: Vec<ToBrowser>) {
        // The answerer follows the pilot's switch at every change (nothing sent when the
        // same): pilot off, it holds no session and picks nothing.
        state.answerer.set(state.pilot, state.answer_want | kinds::answerer_want(state));
        for m in msgs {
            let _ = self.to_browser.send(m);
        }
    }

    /// The copies the kinds asked of the transport go to it (a remote download's file). Only
    /// a download's end asks for one: reports pay nothing for it.
    fn hand_over_fetches(&self, state: &mut State) {
        if state.fetches.is_empty() {
            return;
        }
        let fetches = std::mem::take(&mut state.fetches);
        if let Some(tx) = self.fetch.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            for job in fetches {
                let _ = tx.send(job);
            }
        }
    }

    /// Waits (at most `limit`) until `done` holds of the state, checking after each message
    /// from the browser; whether it did.
    async fn wait_until(&self, limit: std::time::Duration, done: impl Fn(&State) -> bool) -> bool {
        let wait = async {
            loop {
                let spoke = self.browser_spoke.notified();
                if done(&self.state()) {
                    return;
                }
                spoke.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// The browser named its session: take over what an earlier host of it left on disk.
    fn adopt(&self, session: &str, state: &mut State) {
        if !persist::valid_session(session) {
            tracing::warn!("hello with an unusable session name; state is kept in memory only");
            return;
        }
        let mut mine = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if mine.is_some() {
            return;
        }
        // The host before this one may still be writing its last snapshot.
        let lock = match persist::lock(&self.dir, session, std::time::Duration::from_secs(3)) {
            Ok(l) => l,
            Err(e) => {
                return tracing::error!(error = %e, "another host keeps this browser's state; keeping mine in memory");
            }
        };
        if let Some(snapshot) = persist::load(&self.dir, session) {
            state.restore(snapshot);
            tracing::info!(session, "took over the state of the previous host");
        }
        *mine = Some((session.to_owned(), lock));
    }

    /// Writes the state to disk now (when a session is named).
    fn save(&self) {
        let snapshot = self.snapshot_locked(&self.state());
        if let Some(s) = snapshot {
            self.write(s);
        }
    }

    /// The state as it will be written, taken by a caller that holds the state's lock; the
    /// writing (`write`) happens after the lock is released, so nobody waits on the disk.
    fn snapshot_locked(&self, state: &State) -> Option<Snapshot> {
        let session = self.session.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|s| s.0.clone())?;
        let seq = self.snapshots.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        match serde_json::to_vec(&state.snapshot()) {
            Ok(bytes) => Some(Snapshot { session, seq, bytes }),
            Err(e) => {
                tracing::error!(error = %e, "state not encodable");
                None
            }
        }
    }

    /// Writes a snapshot unless a newer one is already on disk (writers may finish out of
    /// the order their snapshots were taken in).
    fn write(&self, s: Snapshot) {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        if *written >= s.seq {
            return;
        }
        match persist::save(&self.dir, &s.session, &s.bytes) {
            Ok(()) => *written = s.seq,
            // The runtime directory was removed (a logout, a test's teardown): no later host
            // can look there either. Said once, not at every snapshot.
            Err(_) if !self.dir.exists() => {
                if !self.dir_gone.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(dir = %self.dir.display(), "the state directory is gone: state is not saved");
                }
            }
            Err(e) => tracing::error!(error = %e, "state not saved"),
        }
    }
}

/// The state of one moment, encoded, with its place in the order snapshots were taken.
struct Snapshot {
    session: String,
    seq: u64,
    bytes: Vec<u8>,
}

/// How long changes gather before the saver writes them. Dialog reports need no quicker
/// save: one the host recorded but had not saved yet is still with the worker, which sends
/// it again to the next host (`resume`). What must not wait is saved on the spot
/// (`FromBrowser::must_be_saved_first`, and the agent's calls before they are answered).
const SAVE_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Saves the state after it changes, at most once per `SAVE_EVERY`: a flood of reports
/// costs a few writes a second, not one per report.
async fn saver(shared: Arc<Shared>) {
    loop {
        shared.changed.notified().await;
        tokio::time::sleep(SAVE_EVERY).await;
        let s = shared.clone();
        let _ = tokio::task::spawn_blocking(move || s.save()).await;
    }
}

/// Removes the socket file when the host ends, however it ends.
struct SocketFile(PathBuf);

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The socket appears under its name only once it listens and is private: a client that
/// connected between `bind` and `listen` would be refused and take it for a dead host's.
fn listen(path: &std::path::Path) -> Result<platform::Listener> {
    platform::listen(path)
}

pub fn run(origin: &str) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(serve_native(origin))
}

/// A host that runs, whatever its transport: the state, its private socket, the saver.
struct Started {
    shared: Arc<Shared>,
    outbox: transport::Outbox,
    socket: SocketFile,
}

impl Started {
    fn inbox(&self) -> transport::Inbox {
        transport::Inbox(Arc::new(HostSink { shared: self.shared.clone(), rt: tokio::runtime::Handle::current() }))
    }
}

/// The host's side of a transport's `Inbox`.
struct HostSink {
    shared: Arc<Shared>,
    rt: tokio::runtime::Handle,
}

impl transport::Sink for HostSink {
    fn frame(&self, bytes: &[u8]) {
        let msg = match FromBrowser::parse(bytes) {
            Ok(m) => m,
            Err(e) => return tracing::warn!(error = %e, "unreadable frame from the browser skipped"),
        };
        if let FromBrowser::PilotResult(r) = msg {
            return self.shared.pilot.finish(r);
        }
        on_browser_message(&self.shared, &self.rt, msg);
    }

    fn sites(&self, change: sites::Change) {
        self.shared.state().sites.apply(change);
        self.shared.browser_spoke.notify_waiters();
    }

    fn answerer(&self) -> Option<answerer::Answerer> {
        Some(self.shared.state().answerer.clone())
    }

    fn report(&self, report: transport::Report) {
        {
            let mut state = self.shared.state();
            let msgs = kinds::transport_report(&mut state, &report);
            self.shared.send(&state, msgs);
        }
        // An agent waiting for its answer's outcome learns it now.
        self.shared.browser_spoke.notify_waiters();
        self.shared.changed.notify_one();
    }
}

async fn start(browser: crate::parent_browser::ParentBrowser) -> Result<Started> {
    let dir = paths::runtime_dir();
    paths::ensure_private_dir(&dir).with_context(|| format!("preparing {}", dir.display()))?;
    let path = paths::socket_path(&dir, std::process::id());
    let listener = listen(&path)?;
    let socket = SocketFile(path.clone());
    tracing::info!(socket = %path.display(), "host started");

    let mut state = State::new();
    state.browser = browser;
    tracing::info!(browser = ?state.browser.pid, profile = ?state.browser.profile, remote = ?state.browser.remote_control(), "browser");
    match Redactor::load() {
        Ok(r) => state.redactor = r,
        Err(e) => tracing::error!(error = %e, "redaction config unreadable; using the built-in patterns"),
    }
    match paths::data_dir() {
        Ok(data) => kinds::open(&mut state, &data),
        Err(e) => {
            tracing::warn!(error = %e, "no data directory: what a kind keeps (a kept passkey) lasts this session only")
        }
    }
    persist::remove_stale(&dir);
    let (shared, outbox) = Shared::new(state, dir);
    tokio::spawn(answerer_changes(shared.clone()));
    tokio::spawn(socket::accept(listener, shared.clone()));
    tokio::spawn(saver(shared.clone()));
    Ok(Started { shared, outbox, socket })
}

/// Host mode: Chrome started us; native messaging on stdin and stdout.
async fn serve_native(origin: &str) -> Result<()> {
    tracing::info!(%origin, "native messaging");
    let started = start(crate::parent_browser::ParentBrowser::of_this_process()).await?;
    let inbox = started.inbox();
    let Started { shared, outbox, socket: _socket } = started;
    // A browser with a DevTools port: the host sees its pages itself (`sites.rs`).
    let port_file = shared.state().browser.devtools_port_file();
    if let Some(file) = port_file {
        tokio::spawn(sites::watch_local(file, inbox.clone()));
        // The browser's first messages wait (a moment, at most VIEW_WAIT) until the view is
        // whole: a passkey request that came before it was refused for want of it (the first
        // sign-in of a fresh browser, 2 of 4 runs of `passkeys::kept_passkeys_sign_in_after_a_browser_restart`).
        if !shared.wait_until(VIEW_WAIT, |s| s.sites.is_live()).await {
            tracing::warn!("the host's own DevTools connection is not up yet: passkeys wait for it");
        }
    }
    tokio::spawn(transport::native::write(outbox));
    let (done, reader_end) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("from-browser".into())
        .spawn(move || {
            let _ = done.send(transport::native::read(&inbox));
        })
        .context("cannot start the browser reader")?;
    let end = tokio::select! {
        r = reader_end => r.unwrap_or(Ok(())),
        _ = terminated() => Ok(()),
    };
    // The next host of this browser session starts from here.
    shared.save();
    end
}

/// A host inside `unmodal mcp --cdp-endpoint`: the state of record for a browser reached
/// over CDP, served on a private socket as any host is (`unmodal pilot` finds it there).
pub struct RemoteHost {
    pub socket: PathBuf,
    pub link: transport::bridge::LinkState,
    shared: Arc<Shared>,
    _socket: SocketFile,
}

impl RemoteHost {
    /// Writes the state to disk (the agent is leaving).
    pub fn save(&self) {
        self.shared.save();
    }
}

/// Starts the host for a remote browser and its bridge; returns once the socket listens.
/// `extension_id`: the only extension whose worker is heard; `max_copied`: bytes of the
/// browser's downloads copied to this machine, at most, in all.
pub async fn serve_remote(endpoint: crate::cdp::Endpoint, extension_id: &str, max_copied: u64) -> Result<RemoteHost> {
    let started = start(crate::parent_browser::ParentBrowser::over_cdp(endpoint.redacted())).await?;
    let inbox = started.inbox();
    let Started { shared, outbox, socket } = started;
    let link = transport::bridge::LinkState::new(extension_id);
    let (fetch_tx, fetches) = mpsc::unbounded_channel();
    *shared.fetch.lock().unwrap_or_else(|e| e.into_inner()) = Some(fetch_tx);
    let copies = Arc::new(transport::remote_files::Budget::new(max_copied));
    tokio::spawn(transport::bridge::run(endpoint, inbox, outbox, fetches, link.clone(), copies));
    Ok(RemoteHost { socket: socket.0.clone(), link, shared, _socket: socket })
}

/// What the CDP answerer sees goes to the kinds, one change at a time, and the answers they
/// ask for are given on the connection. Through a channel: the answerer may call back while
/// the state's lock is held (`Shared::send` passes the pilot's switch on).
async fn answerer_changes(shared: Arc<Shared>) {
    let (tx, mut rx) = mpsc::unbounded_channel::<answerer::Seen>();
    let answerer = shared.state().answerer.clone();
    answerer.on_change(move |seen| {
        let _ = tx.send(seen.clone());
    });
    while let Some(seen) = rx.recv().await {
        let (out, armed) = {
            let mut state = shared.state();
            let mut out = kinds::answerer_seen(&mut state, &seen);
            out.acts.extend(std::mem::take(&mut state.answerer_asks));
            shared.hand_over_fetches(&mut state);
            shared.send(&state, Vec::new());
            (out, std::mem::take(&mut state.armed))
        };
        // A kind may hold what the answerer saw for the agent (a FedCM account chooser).
        for (id, after) in armed {
            tokio::spawn(watchdog(shared.clone(), id, after));
        }
        give_answers(&shared, out).await;
    }
}

/// Sends what the kinds made of a change and gives the answers they asked for on the
/// connection, each kind hearing how its own went (and asking for more, maybe).
async fn give_answers(shared: &Shared, mut out: kinds::Answered) {
    let answerer = shared.state().answerer.clone();
    while !out.to_browser.is_empty() || !out.acts.is_empty() {
        let acts = std::mem::take(&mut out.acts);
        {
            let state = shared.state();
            shared.send(&state, std::mem::take(&mut out.to_browser));
        }
        for (kind, act) in acts {
            let gate = answerer::PilotOn::of(shared.state().pilot);
            let result = match &gate {
                Some(g) => answerer.act(g, &act).await,
                None => Err(answerer::PickError::PilotOff),
            };
            let mut state = shared.state();
            let more = kinds::answerer_acted(&mut state, kind, &act, &result);
            out.to_browser.extend(more.to_browser);
            out.acts.extend(more.acts);
            out.acts.extend(std::mem::take(&mut state.answerer_asks));
        }
    }
    shared.browser_spoke.notify_waiters();
    shared.changed.notify_one();
}

/// Answers the kinds asked for outside the answerer's changes (`State::answerer_asks`),
/// given on a task of their own.
fn give_asked(shared: &Arc<Shared>, rt: &tokio::runtime::Handle, state: &mut State) {
    if state.answerer_asks.is_empty() {
        return;
    }
    let acts = std::mem::take(&mut state.answerer_asks);
    let shared = shared.clone();
    rt.spawn(async move { give_answers(&shared, kinds::Answered { to_browser: Vec::new(), acts }).await });
}

async fn terminated() {
    platform::terminated().await
}

fn on_browser_message(shared: &Arc<Shared>, rt: &tokio::runtime::Handle, msg: FromBrowser) {
    // What the agent acts on (a held dialog, a policy's fall-back) is written at once,
    // the moment the state lock is released: an agent may see it a few milliseconds
    // before it is on disk, but never waits for the disk (beside a CDP driver, the agent
    // asks as soon as its driver saw the dialog). Reports, which can come in floods, are
    // saved by the saver.
    let urgent = msg.must_be_saved_first();
    let (armed, snapshot) = {
        let mut state = shared.state();
        if let FromBrowser::Hello { session: Some(session), .. } = &msg {
            shared.adopt(session, &mut state);
        }
        match state.on_browser(msg) {
            Ok(msgs) => shared.send(&state, msgs),
            Err(e) => tracing::warn!(error = %e, "message from the browser refused"),
        }
        give_asked(shared, rt, &mut state);
        let snapshot = if urgent { shared.snapshot_locked(&state) } else { None };
        shared.hand_over_fetches(&mut state);
        (std::mem::take(&mut state.armed), snapshot)
    };
    shared.browser_spoke.notify_waiters();
    if let Some(s) = snapshot {
        shared.write(s);
    }
    for (id, after) in armed {
        rt.spawn(watchdog(shared.clone(), id, after));
    }
    shared.changed.notify_one();
}

/// Dismisses held dialog `id` after `after`, unless someone answered it first.
async fn watchdog(shared: Arc<Shared>, id: u64, after: std::time::Duration) {
    tokio::time::sleep(after).await;
    let mut state = shared.state();
    let msgs = state.watchdog(id);
    if !msgs.is_empty() {
        tracing::info!(dialog = id, "watchdog dismissed a held dialog");
    }
    shared.send(&state, msgs);
    shared.changed.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_socket_is_under_its_name_only_once_it_listens_and_is_private() {
        let dir = paths::private_tempdir();
        let path = paths::socket_path(dir.path(), 7);
        let mut listener = listen(&path).unwrap();
        assert!(path.exists());
        // Unix: the socket itself, 0600; Windows: the file naming the pipe.
        assert!(crate::platform::permission_bits(&path).is_none_or(|m| m == 0o600));
        assert!(!paths::socket_being_bound(&path).exists());
        let (client, accepted) = tokio::join!(crate::platform::connect(&path), listener.accept());
        assert!(client.is_ok() && accepted.is_ok(), "the renamed socket takes connections");
    }

    /// Snapshots are written under the session's name; once the directory is gone (a
    /// logout, a test's teardown) none is, and it is said once; when it is back, they are.
    #[test]
    fn a_removed_state_directory_is_said_once_and_saving_resumes_when_it_is_back() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        let (shared, _outbox) = Shared::new(State::new(), dir.clone());
        *shared.session.lock().unwrap() = Some(("session0001".into(), tempfile::tempfile().unwrap()));
        let save = || shared.write(shared.snapshot_locked(&shared.state()).unwrap());
        save();
        assert!(persist::path(&dir, "session0001").exists());
        std::fs::remove_dir_all(&dir).unwrap();
        save();
        save();
        assert!(shared.dir_gone.load(std::sync::atomic::Ordering::Relaxed), "said");
        std::fs::create_dir(&dir).unwrap();
        save();
        assert!(persist::path(&dir, "session0001").exists(), "saved again");
    }
}
