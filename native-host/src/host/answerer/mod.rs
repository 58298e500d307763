//! The CDP answerer: where the host holds a DevTools connection of its own (the bridge's,
//! remotely; the profile's `DevToolsActivePort` locally), it is a full CDP client, and it
//! can answer what `chrome.debugger` cannot reach: a Bluetooth device chooser
//! (`DeviceAccess`) and the FedCM account chooser (`FedCm`). See ARCHITECTURE.md, "The CDP
//! answerer", and `docs/cdp-answers.md` for what was measured.
//!
//! - **Attaching.** While something is wanted (`want`) and the pilot is on, every page and
//!   frame target the connection's `Target.setDiscoverTargets` shows (pages a page opens and
//!   other sites' frames are targets of their own) is attached with `Target.attachToTarget`
//!   (`flatten`): nothing pauses a page, nothing is added in it. Then `DeviceAccess.enable`
//!   and `FedCm.enable {disableRejectionDelay: true}` on that session, as wanted. A prompt
//!   that opened before the domain was on is never reported (measured): the kinds ask for
//!   what they may pick *before* the page can ask (a rule or policy that picks).
//! - **Nothing wanted, or the pilot off:** nothing attached, every session let go; the
//!   browser's own choosers and FedCM dialog as without Unmodal's connection. Every pick
//!   needs a `PilotOn` and is refused besides while the answerer's own pilot flag is off.
//! - **The prompts:** per prompt its choices as the browser gives them, kept current
//!   (`deviceRequestPrompted` again when the list changes; `dialogShown`), and its end: the
//!   answerer's own answer, `dialogClosed` or a failed answer (another client answered:
//!   `ClosedBy::Remote`), the target or session gone (`Gone`), the answerer letting go
//!   (`Left`). Each change goes to the host's `on_change` (`Seen`).
//! - **Matching a page hook's request to a prompt** (`find`): by what the answerer sees
//!   itself, the target's URL and the prompt's kind; a target id the worker names (from
//!   `chrome.debugger.getTargets`) only chooses among those candidates, never adds one.

mod book;
#[cfg(test)]
pub(in crate::host) mod tests;
mod transfers;

use crate::cdp::{Conn, Event};
use book::{Book, Step};
use serde::Serialize;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
pub use transfers::TransferView;

/// Which of the answerer's domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    /// `DeviceAccess`: Bluetooth device choosers (USB, HID and Serial give no prompt).
    Devices,
    /// `FedCm`: the sign-in account chooser and its other dialogs.
    Accounts,
}

/// What the host wants the answerer to see.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Want {
    pub devices: bool,
    pub accounts: bool,
    /// Every download reported (`Seen::Transfer`), through a browser context of the
    /// answerer's own (`watch_transfers`); nothing is attached for it.
    pub transfers: bool,
}

impl Want {
    pub const NONE: Want = Want { devices: false, accounts: false, transfers: false };
    pub const ALL: Want = Want { devices: true, accounts: true, transfers: true };

    pub fn any(self) -> bool {
        self.devices || self.accounts
    }

    pub fn has(self, w: Which) -> bool {
        match w {
            Which::Devices => self.devices,
            Which::Accounts => self.accounts,
        }
    }
}

impl std::ops::BitOr for Want {
    type Output = Want;
    fn bitor(self, o: Want) -> Want {
        Want {
            devices: self.devices || o.devices,
            accounts: self.accounts || o.accounts,
            transfers: self.transfers || o.transfers,
        }
    }
}

/// An answer a kind asks the answerer to give (`Answerer::act`): the kinds decide under
/// the state's lock, the host gives it after, on the connection.
#[derive(Clone, Debug, PartialEq)]
pub enum Act {
    SelectDevice { prompt: u64, device_id: String },
    CancelDevice { prompt: u64 },
    SelectAccount { prompt: u64, account_id: String },
    Dismiss { prompt: u64 },
    Click { prompt: u64, button: DialogButton },
}

impl Act {
    /// The prompt it answers.
    pub fn prompt(&self) -> u64 {
        match self {
            Act::SelectDevice { prompt, .. }
            | Act::CancelDevice { prompt }
            | Act::SelectAccount { prompt, .. }
            | Act::Dismiss { prompt }
            | Act::Click { prompt, .. } => *prompt,
        }
    }
}

/// A device as the chooser lists it (`name` was empty in every measurement: the page gets
/// the advertised name, the event does not carry it).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Device {
    pub id: String,
    pub name: String,
}

/// An account as the FedCM dialog lists it. `email` is personal data: the record shows it
/// only through the redaction rules.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Account {
    pub index: usize,
    pub account_id: String,
    pub name: String,
    pub email: String,
    pub config_url: String,
    pub login_state: String,
}

/// An open prompt, for the kinds to record and decide on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptView {
    /// The answerer's number for it (the browser's own ids stay inside).
    pub prompt: u64,
    pub which: Which,
    /// The CDP target it is in (a page, or another site's frame).
    pub target: String,
    pub url: String,
    pub in_frame: bool,
    /// FedCM: `AccountChooser`, `AutoReauthn`, `ConfirmIdpLogin`, `Error`.
    pub dialog_type: Option<String>,
    pub devices: Vec<Device>,
    pub accounts: Vec<Account>,
}

/// Who ended a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedBy {
    /// The answerer's own command.
    Answerer,
    /// Someone else: another CDP client answered, or the browser or page ended it.
    Remote,
    /// The target, its session or the connection went.
    Gone,
    /// The answerer let go (nothing wanted any more, or the pilot went off).
    Left,
}

/// A change the host hears of (`on_change`).
#[derive(Clone, Debug, PartialEq)]
pub enum Seen {
    Opened(PromptView),
    Updated(PromptView),
    Closed {
        prompt: u64,
        by: ClosedBy,
    },
    /// A download began or ended (whoever handles it: a driver's too).
    Transfer(TransferView),
}

/// The pilot is on: the only way to ask for a pick. Made from the state's switch under its
/// lock (`PilotOn::of(state.pilot)`); the answerer checks its own copy besides.
#[derive(Debug)]
pub struct PilotOn(());

impl PilotOn {
    pub fn of(pilot: bool) -> Option<Self> {
        pilot.then_some(PilotOn(()))
    }
}

/// Why the answerer did not answer.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PickError {
    #[error("the pilot is off: nothing is picked")]
    PilotOff,
    #[error("Unmodal holds no DevTools connection to this browser, so nothing can be picked")]
    NoConnection,
    #[error("prompt {0} is not open (it closed, or was answered by someone else)")]
    NotOpen(u64),
    #[error("this prompt is a {0:?} prompt")]
    WrongKind(Which),
    #[error("no device {0:?} is offered now (offered: {1})")]
    NoSuchDevice(String, String),
    #[error("no account {0:?} is offered (offered: {1})")]
    NoSuchAccount(String, String),
    #[error("this dialog ({0}) takes no such answer")]
    WrongDialog(String),
    #[error("the browser refused: {0}")]
    Refused(String),
}

/// What `find` found for a page hook's request.
#[derive(Debug, PartialEq)]
pub enum Found {
    One(u64),
    None,
    /// Several open prompts fit and nothing the answerer saw tells them apart: none is picked.
    Several(Vec<u64>),
}

/// A button of a FedCM dialog (`FedCm.clickDialogButton`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DialogButton {
    ConfirmIdpLoginContinue,
    ErrorGotIt,
    ErrorMoreDetails,
}

type OnChange = Box<dyn Fn(&Seen) + Send + Sync>;

struct Inner {
    book: Mutex<Book>,
    transfers: Mutex<transfers::Transfers>,
    conn: Mutex<Option<Arc<Conn>>>,
    changed: Notify,
    on_change: Mutex<Option<OnChange>>,
    /// Attaches and domain enables sent and not answered yet (`settled`).
    in_flight: AtomicUsize,
}

/// The answerer: cheap to clone; one per host.
#[derive(Clone)]
pub struct Answerer {
    inner: Arc<Inner>,
}

impl Default for Answerer {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Answerer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerer").field("held", &self.held()).finish()
    }
}

impl Answerer {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                book: Mutex::default(),
                transfers: Mutex::default(),
                conn: Mutex::default(),
                changed: Notify::new(),
                on_change: Mutex::default(),
                in_flight: AtomicUsize::new(0),
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.inner.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn conn(&self) -> Option<Arc<Conn>> {
        self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Where changes go (the host: into its state, through the kinds).
    pub fn on_change(&self, f: impl Fn(&Seen) + Send + Sync + 'static) {
        *self.inner.on_change.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(f));
    }

    fn said(&self, seen: Vec<Seen>) {
        if seen.is_empty() {
            return;
        }
        if let Some(f) = self.inner.on_change.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            for s in &seen {
                f(s);
            }
        }
        self.inner.changed.notify_waiters();
    }

    // --- The connection's owner (`sites::watch_local`, the bridge) ---

    /// A connection is up and the browser took `Target.setDiscoverTargets`: every existing
    /// target came (or comes) as `targetCreated`, which `event` hears.
    pub fn connected(&self, conn: &Arc<Conn>) {
        *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
        let mut seen = Vec::new();
        self.book().reset(true, &mut seen);
        self.said(seen);
        self.transfers().forget_connection();
        self.sync_transfers();
    }

    /// The connection is gone: every prompt with it.
    pub fn lost(&self) {
        *self.inner.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let mut seen = Vec::new();
        self.book().reset(false, &mut seen);
        self.said(seen);
        self.transfers().forget_connection();
    }

    /// An event of the connection (any: what is not the answerer's is skipped at once).
    pub fn event(&self, ev: &Event) {
        if ev.session.is_none() && ev.method.starts_with("Browser.download") {
            // The page that started it, by the answerer's own view of the targets.
            let page = self.book().target_url(ev.params["frameId"].as_str().unwrap_or_default());
            let d = self.transfers().on_event(&ev.method, &ev.params, page);
            return self.said(d.map(Seen::Transfer).into_iter().collect());
        }
        let interesting = match ev.session {
            None => ev.method.starts_with("Target."),
            Some(_) => {
                ev.method.starts_with("DeviceAccess.")
                    || ev.method.starts_with("FedCm.")
                    || matches!(ev.method.as_str(), "Target.attachedToTarget" | "Target.detachedFromTarget")
            }
        };
        if !interesting {
            return;
        }
        let mut seen = Vec::new();
        let steps = self.book().on_event(&ev.method, &ev.params, ev.session.as_deref(), &mut seen);
        self.said(seen);
        self.run(steps);
    }

    // --- The host ---

    /// The pilot's switch (the host passes it on at every change of its state) and what the
    /// kinds want seen. With the pilot off or nothing wanted, every session is let go.
    pub fn set(&self, pilot: bool, want: Want) {
        let mut seen = Vec::new();
        let steps = self.book().set(pilot, want, &mut seen);
        self.said(seen);
        self.run(steps);
        self.transfers().kinds_want = want.transfers;
        self.sync_transfers();
    }

    fn transfers(&self) -> std::sync::MutexGuard<'_, transfers::Transfers> {
        self.inner.transfers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the host wants every download reported (`Seen::Transfer`), with the pilot
    /// on: through a browser context of the answerer's own, so a driver's download set-up
    /// is left as it is.
    pub fn watch_transfers(&self, on: bool) {
        self.transfers().wanted = on;
        self.sync_transfers();
    }

    /// The downloads heard of, oldest first.
    pub fn transfers_seen(&self) -> Vec<TransferView> {
        self.transfers().list()
    }

    /// Whether downloads are reported to this connection now.
    pub fn transfers_watched(&self) -> bool {
        self.transfers().context.is_some()
    }

    fn sync_transfers(&self) {
        let pilot = self.book().pilot();
        let Some(conn) = self.conn() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let mut d = self.transfers();
        if d.asking {
            return;
        }
        let on = pilot && (d.wanted || d.kinds_want);
        match (on, d.context.take()) {
            (true, None) => {
                d.asking = true;
                let me = self.clone();
                rt.spawn(async move {
                    let made = conn.call("Target.createBrowserContext", json!({}), None).await;
                    let context = made.ok().and_then(|v| v["browserContextId"].as_str().map(str::to_owned));
                    let mut ok = None;
                    if let Some(c) = context {
                        let p = json!({"behavior": "default", "browserContextId": c, "eventsEnabled": true});
                        match conn.call("Browser.setDownloadBehavior", p, None).await {
                            Ok(_) => ok = Some(c),
                            Err(e) => tracing::warn!(error = %e, "downloads are not reported to the host's connection"),
                        }
                    }
                    {
                        let mut d = me.transfers();
                        d.asking = false;
                        d.context = ok;
                    }
                    me.inner.changed.notify_waiters();
                    // Switched off meanwhile: undone.
                    me.sync_transfers();
                });
            }
            (false, Some(c)) => {
                rt.spawn(async move {
                    let _ = conn.call("Target.disposeBrowserContext", json!({"browserContextId": c}), None).await;
                });
            }
            (_, kept) => d.context = kept,
        }
    }

    /// Whether the host holds a connection with the browser's page list: where it does not,
    /// nothing can be picked, and the record says so (`PickError::NoConnection`).
    pub fn held(&self) -> bool {
        self.book().live && self.conn().is_some()
    }

    /// What the answerer attaches for now: what the host wants, and nothing with the pilot
    /// off (set synchronously by `set`; the attaching itself follows).
    pub fn attaching(&self) -> Want {
        self.book().effective()
    }

    /// Whether a page or frame at `url` is attached with `which` on: a prompt there will be
    /// seen.
    pub fn covers(&self, url: &str, which: Which) -> bool {
        self.book().covers(url, which)
    }

    /// The open prompts with their choices.
    pub fn prompts(&self) -> Vec<PromptView> {
        self.book().views()
    }

    pub fn prompt(&self, n: u64) -> Option<PromptView> {
        self.book().view(n)
    }

    /// Waits (at most `limit`) until every attach and domain enable sent so far has its
    /// answer: from then on a prompt in a page the answerer knew is seen. The agent's setup
    /// answer waits on this, so a chooser opened right after it is not missed.
    pub async fn settled(&self, limit: std::time::Duration) -> bool {
        let wait = async {
            loop {
                let changed = self.inner.changed.notified();
                if self.inner.in_flight.load(Ordering::Acquire) == 0 {
                    return;
                }
                changed.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// Waits for the next change (a prompt opened, changed or closed), at most `limit`.
    pub async fn next_change(&self, limit: std::time::Duration) -> bool {
        tokio::time::timeout(limit, self.inner.changed.notified()).await.is_ok()
    }

    /// The open prompt of kind `which` a page hook's request at `url` is, not claimed yet.
    /// `hint`: a target id the worker named (it only picks among the candidates).
    pub fn find(&self, which: Which, url: &str, hint: Option<&str>) -> Found {
        let book = self.book();
        let fits: Vec<PromptView> = book.views().into_iter().filter(|v| v.which == which && v.url == url).collect();
        let free: Vec<&PromptView> =
            fits.iter().filter(|v| book.prompts.get(&v.prompt).is_some_and(|p| !p.claimed)).collect();
        match (free.as_slice(), hint) {
            ([], _) => Found::None,
            ([one], _) => Found::One(one.prompt),
            (many, Some(h)) => match many.iter().find(|v| v.target == h) {
                Some(v) => Found::One(v.prompt),
                None => Found::Several(many.iter().map(|v| v.prompt).collect()),
            },
            (many, None) => Found::Several(many.iter().map(|v| v.prompt).collect()),
        }
    }

    /// Marks prompt `n` as a host request's own: `find` offers it to no other. False when
    /// it is not open or already claimed.
    pub fn claim(&self, n: u64) -> bool {
        self.book().claim(n)
    }

    /// Picks device `device_id` in Bluetooth chooser `n`. A device not offered now is an
    /// error, and the chooser stays open.
    pub async fn select_device(&self, gate: &PilotOn, n: u64, device_id: &str) -> Result<(), PickError> {
        let (session, id) = self.open_prompt(gate, n, Which::Devices, |p| {
            if p.devices.iter().any(|d| d.id == device_id) {
                Ok(())
            } else {
                Err(PickError::NoSuchDevice(device_id.to_owned(), ids(p.devices.iter().map(|d| d.id.as_str()))))
            }
        })?;
        let picked =
            self.answer(n, &session, "DeviceAccess.selectPrompt", json!({"id": &id, "deviceId": device_id})).await;
        if picked.is_err()
            && let Some(conn) = self.conn()
        {
            // A refused pick may leave the chooser open (its device went between the list and
            // the pick), and the page hook already leaves the call to the browser: cancelled,
            // so the page never waits. Refused again where another client answered first.
            let _ = conn.call("DeviceAccess.cancelPrompt", json!({"id": id}), Some(&session)).await;
        }
        picked
    }

    /// Gives `act` (one of the answers below).
    pub async fn act(&self, gate: &PilotOn, act: &Act) -> Result<(), PickError> {
        match act {
            Act::SelectDevice { prompt, device_id } => self.select_device(gate, *prompt, device_id).await,
            Act::CancelDevice { prompt } => self.cancel_device(gate, *prompt).await,
            Act::SelectAccount { prompt, account_id } => self.select_account(gate, *prompt, account_id).await,
            Act::Dismiss { prompt } => self.dismiss(gate, *prompt).await,
            Act::Click { prompt, button } => self.click_dialog_button(gate, *prompt, *button).await,
        }
    }

    /// Cancels Bluetooth chooser `n`, as a person's Cancel.
    pub async fn cancel_device(&self, gate: &PilotOn, n: u64) -> Result<(), PickError> {
        let (session, id) = self.open_prompt(gate, n, Which::Devices, |_| Ok(()))?;
        self.answer(n, &session, "DeviceAccess.cancelPrompt", json!({"id": id})).await
    }

    /// Picks account `account_id` in FedCM account chooser `n`.
    pub async fn select_account(&self, gate: &PilotOn, n: u64, account_id: &str) -> Result<(), PickError> {
        let mut index = 0;
        let (session, id) = self.open_prompt(gate, n, Which::Accounts, |p| {
            if p.dialog_type.as_deref() != Some("AccountChooser") {
                return Err(PickError::WrongDialog(p.dialog_type.clone().unwrap_or_default()));
            }
            match p.accounts.iter().find(|a| a.account_id == account_id) {
                Some(a) => {
                    index = a.index;
                    Ok(())
                }
                None => Err(PickError::NoSuchAccount(
                    account_id.to_owned(),
                    ids(p.accounts.iter().map(|a| a.account_id.as_str())),
                )),
            }
        })?;
        self.answer(n, &session, "FedCm.selectAccount", json!({"dialogId": id, "accountIndex": index})).await
    }

    /// Closes FedCM dialog `n` as a person's close: the page's call is refused.
    pub async fn dismiss(&self, gate: &PilotOn, n: u64) -> Result<(), PickError> {
        let (session, id) = self.open_prompt(gate, n, Which::Accounts, |_| Ok(()))?;
        self.answer(n, &session, "FedCm.dismissDialog", json!({"dialogId": id})).await
    }

    /// Clicks a button of FedCM dialog `n` (`ConfirmIdpLogin`'s continue, `Error`'s).
    pub async fn click_dialog_button(&self, gate: &PilotOn, n: u64, button: DialogButton) -> Result<(), PickError> {
        let (name, fits) = match button {
            DialogButton::ConfirmIdpLoginContinue => ("ConfirmIdpLoginContinue", "ConfirmIdpLogin"),
            DialogButton::ErrorGotIt => ("ErrorGotIt", "Error"),
            DialogButton::ErrorMoreDetails => ("ErrorMoreDetails", "Error"),
        };
        let (session, id) = self.open_prompt(gate, n, Which::Accounts, |p| match p.dialog_type.as_deref() {
            Some(t) if t == fits => Ok(()),
            t => Err(PickError::WrongDialog(t.unwrap_or_default().to_owned())),
        })?;
        self.answer(n, &session, "FedCm.clickDialogButton", json!({"dialogId": id, "dialogButton": name})).await
    }

    /// Prompt `n`'s session and browser id, if it is open, of kind `which`, and `check`
    /// holds of it; with the pilot on (the caller's gate and the answerer's own flag).
    fn open_prompt(
        &self,
        _gate: &PilotOn,
        n: u64,
        which: Which,
        check: impl FnOnce(&book::Prompt) -> Result<(), PickError>,
    ) -> Result<(String, String), PickError> {
        let book = self.book();
        if !book.pilot() {
            return Err(PickError::PilotOff);
        }
        if !book.live {
            return Err(PickError::NoConnection);
        }
        let p = book.prompts.get(&n).ok_or(PickError::NotOpen(n))?;
        if p.which != which {
            return Err(PickError::WrongKind(p.which));
        }
        check(p)?;
        Ok((p.session.clone(), p.cdp_id.clone()))
    }

    /// Sends the answer; the prompt is closed by the answerer, or, refused (another client
    /// answered it first, the page went), by `Remote`.
    async fn answer(&self, n: u64, session: &str, method: &str, params: Value) -> Result<(), PickError> {
        let conn = self.conn().ok_or(PickError::NoConnection)?;
        if let Some(p) = self.book().prompts.get_mut(&n) {
            p.answering = true;
        }
        let result = conn.call(method, params, Some(session)).await;
        let by = match &result {
            Ok(_) => ClosedBy::Answerer,
            Err(crate::cdp::CdpError::Refused { .. }) => ClosedBy::Remote,
            Err(_) => ClosedBy::Gone,
        };
        let mut seen = Vec::new();
        {
            let mut book = self.book();
            if book.prompts.contains_key(&n) {
                book.prompts.remove(&n);
                seen.push(Seen::Closed { prompt: n, by });
            }
        }
        self.said(seen);
        result.map(|_| ()).map_err(|e| PickError::Refused(e.to_string()))
    }

    /// Sends steps, each on its own task (nothing waits on the browser under a lock).
    fn run(&self, steps: Vec<Step>) {
        if steps.is_empty() {
            return;
        }
        let Some(conn) = self.conn() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        for step in steps {
            let (me, conn) = (self.clone(), conn.clone());
            // Counted before the task starts, so `settled` cannot look between the two.
            let counted =
                matches!(step, Step::Attach(_) | Step::AttachLater { .. } | Step::Enable { .. } | Step::AutoAttach(_));
            if counted {
                self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
            }
            rt.spawn(async move {
                me.send(&conn, step).await;
                if counted {
                    me.inner.in_flight.fetch_sub(1, Ordering::AcqRel);
                    me.inner.changed.notify_waiters();
                }
            });
        }
    }

    async fn send(&self, conn: &Arc<Conn>, step: Step) {
        match step {
            Step::Attach(target) => {
                let r = conn.call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None).await;
                let session = match r {
                    Ok(v) => v["sessionId"].as_str().map(str::to_owned),
                    Err(e) => {
                        tracing::debug!(error = %e, "the answerer could not attach to a target");
                        None
                    }
                };
                let mut seen = Vec::new();
                let steps = self.book().attached(&target, session, &mut seen);
                self.said(seen);
                self.run(steps);
            }
            Step::AttachLater { target, after } => {
                tokio::time::sleep(after).await;
                let mut seen = Vec::new();
                let steps = self.book().retry_attach(&target, &mut seen);
                self.said(seen);
                self.run(steps);
            }
            Step::Enable { session, which } => {
                let (method, params) = match which {
                    Which::Devices => ("DeviceAccess.enable", json!({})),
                    Which::Accounts => ("FedCm.enable", json!({"disableRejectionDelay": true})),
                };
                if let Err(e) = conn.call(method, params, Some(&session)).await {
                    tracing::debug!(error = %e, "the answerer's domain is not on in a target");
                }
                // Whoever waits for a target to be covered looks again.
                self.inner.changed.notify_waiters();
            }
            Step::Disable { session, which } => {
                let method = match which {
                    Which::Devices => "DeviceAccess.disable",
                    Which::Accounts => "FedCm.disable",
                };
                let _ = conn.call(method, json!({}), Some(&session)).await;
            }
            Step::Detach(session) => {
                let _ = conn.call("Target.detachFromTarget", json!({"sessionId": session}), None).await;
            }
            Step::AutoAttach(session) => {
                let only_frames = json!({"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true,
                    "filter": [{"type": "iframe", "exclude": false}]});
                if let Err(e) = conn.call("Target.setAutoAttach", only_frames, Some(&session)).await {
                    tracing::debug!(error = %e, "the answerer's frames are not attached as they come in a target");
                }
            }
        }
    }
}

fn ids<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = it.collect();
    if v.is_empty() { "none".to_owned() } else { v.join(", ") }
}
