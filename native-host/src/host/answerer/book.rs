//! What the answerer knows, without any I/O: the page and frame targets the browser showed
//! (`Target.setDiscoverTargets`), the sessions the answerer holds on them, and the prompts
//! open in them with their choices. Events go in (`on_event`); what to send comes out
//! (`Step`), for `mod.rs` to send and report back.

use super::{Account, ClosedBy, Device, PromptView, Seen, Want, Which};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Targets and prompts kept, at most: a page that opens more only loses the answerer there.
pub const MAX_TARGETS: usize = 4096;
pub const MAX_PROMPTS: usize = 256;
/// Choices kept per prompt (a chooser listing more shows the first ones).
pub const MAX_CHOICES: usize = 64;
/// The longest id, name or URL kept from the browser's events.
const MAX_TEXT: usize = 2048;

/// What to send the browser.
#[derive(Debug, PartialEq)]
pub enum Step {
    Attach(String),
    /// Attach again after a refused attach, once `after` has passed (`retry_attach`).
    AttachLater {
        target: String,
        after: std::time::Duration,
    },
    Enable {
        session: String,
        which: Which,
    },
    Disable {
        session: String,
        which: Which,
    },
    Detach(String),
    /// Frames of other sites in session's target attached by the browser as they come
    /// (`Target.setAutoAttach`, flat, never paused): discovery alone never names a frame
    /// whose navigation was under way as it began, until something lists the targets
    /// (measured, Chromium 156: 2 runs of 60 under load). Such a session is the answerer's.
    AutoAttach(String),
}

#[derive(Debug, Default)]
struct Target {
    url: String,
    frame: bool,
    /// `Some` once attached; `attaching` while the command is on its way.
    session: Option<String>,
    /// The answerer's session the browser attached this one under (`Step::AutoAttach`):
    /// the browser ends it with that one, and its own detach has no session left to come on.
    under: Option<String>,
    attaching: bool,
    enabled: Want,
    /// Attaches the browser refused so far (a frame's target can refuse while its process
    /// is still being set up, and says nothing more afterwards).
    refused: u8,
    /// Sessions the browser detached while the target stayed, each attached again (a
    /// target that keeps dropping them is let be after `REATTACHES`).
    detached: u8,
}

/// Attaches tried after a refusal, at most, and the wait before the first (doubled each time).
const ATTACH_RETRIES: u8 = 3;
const ATTACH_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);
const REATTACHES: u8 = 5;

#[derive(Debug)]
pub(super) struct Prompt {
    pub target: String,
    pub session: String,
    /// The browser's id: `DeviceAccess`'s prompt id, `FedCm`'s dialog id.
    pub cdp_id: String,
    pub which: Which,
    pub dialog_type: Option<String>,
    pub devices: Vec<Device>,
    pub accounts: Vec<Account>,
    pub claimed: bool,
    /// The answerer's own answer is on its way: the browser's `dialogClosed` may come
    /// before the command's reply, and is that answer's, not someone else's.
    pub answering: bool,
}

#[derive(Debug, Default)]
pub struct Book {
    /// The connection is up and the browser took `Target.setDiscoverTargets`.
    pub live: bool,
    pilot: bool,
    wanted: Want,
    targets: HashMap<String, Target>,
    sessions: HashMap<String, String>,
    pub(super) prompts: BTreeMap<u64, Prompt>,
    next: u64,
}

fn text(v: &Value) -> String {
    let s = v.as_str().unwrap_or_default();
    if s.len() <= MAX_TEXT {
        return s.to_owned();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

impl Book {
    /// What the answerer should have on: what the host wants, and only with the pilot on.
    pub fn effective(&self) -> Want {
        if self.pilot { self.wanted } else { Want::NONE }
    }

    pub fn pilot(&self) -> bool {
        self.pilot
    }

    /// The URL of page or frame target `id`, as the browser last said.
    pub fn target_url(&self, id: &str) -> Option<String> {
        self.targets.get(id).map(|t| t.url.clone())
    }

    /// A new connection (or none): nothing of the old one counts; its prompts are closed.
    pub fn reset(&mut self, live: bool, seen: &mut Vec<Seen>) {
        for (id, _) in std::mem::take(&mut self.prompts) {
            seen.push(Seen::Closed { prompt: id, by: ClosedBy::Gone });
        }
        self.targets.clear();
        self.sessions.clear();
        self.live = live;
    }

    pub fn set(&mut self, pilot: bool, wanted: Want, seen: &mut Vec<Seen>) -> Vec<Step> {
        let before = self.effective();
        self.pilot = pilot;
        self.wanted = wanted;
        let now = self.effective();
        if now == before {
            return Vec::new();
        }
        let mut steps = Vec::new();
        let ids: Vec<String> = self.targets.keys().cloned().collect();
        for id in ids {
            steps.extend(self.bring_in_line(&id, seen));
        }
        steps
    }

    /// The steps that bring target `id` to what is wanted now.
    fn bring_in_line(&mut self, id: &str, seen: &mut Vec<Seen>) -> Vec<Step> {
        let want = self.effective();
        let Some(t) = self.targets.get_mut(id) else { return Vec::new() };
        let mut steps = Vec::new();
        match (&t.session, want.any()) {
            (None, true) if !t.attaching => {
                t.attaching = true;
                steps.push(Step::Attach(id.to_owned()));
            }
            (Some(s), true) => {
                for which in [Which::Devices, Which::Accounts] {
                    match (t.enabled.has(which), want.has(which)) {
                        (false, true) => steps.push(Step::Enable { session: s.clone(), which }),
                        (true, false) => steps.push(Step::Disable { session: s.clone(), which }),
                        _ => {}
                    }
                }
                t.enabled = want;
            }
            (Some(s), false) => {
                let s = s.clone();
                steps.push(Step::Detach(s.clone()));
                t.session = None;
                t.enabled = Want::NONE;
                self.sessions.remove(&s);
                self.close_where(seen, ClosedBy::Left, |p| p.session == s);
            }
            _ => {}
        }
        steps
    }

    /// The answer to `Step::Attach`: the session, or `None` (the target went, or refused).
    pub fn attached(&mut self, target: &str, session: Option<String>, seen: &mut Vec<Seen>) -> Vec<Step> {
        let wanted = self.effective().any();
        let Some(t) = self.targets.get_mut(target) else {
            return session.map(Step::Detach).into_iter().collect();
        };
        t.attaching = false;
        if t.session.is_some() {
            // The browser attached it first (auto-attach, under its page): one session is enough.
            return session.map(Step::Detach).into_iter().collect();
        }
        let Some(session) = session else {
            if t.refused >= ATTACH_RETRIES || !wanted {
                return Vec::new();
            }
            t.refused += 1;
            let after = ATTACH_BACKOFF * 2u32.pow(u32::from(t.refused - 1));
            return vec![Step::AttachLater { target: target.to_owned(), after }];
        };
        t.refused = 0;
        self.take(target, session, None, seen)
    }

    /// `session` is the answerer's on target `id` (known): its frames asked for as they
    /// come, and its domains brought to what is wanted.
    fn take(&mut self, id: &str, session: String, under: Option<&str>, seen: &mut Vec<Seen>) -> Vec<Step> {
        if let Some(t) = self.targets.get_mut(id) {
            t.session = Some(session.clone());
            t.under = under.map(str::to_owned);
            t.enabled = Want::NONE;
        }
        self.sessions.insert(session.clone(), id.to_owned());
        let mut steps = vec![Step::AutoAttach(session)];
        steps.extend(self.bring_in_line(id, seen));
        steps
    }

    /// The browser attached a frame of another site under one of the answerer's sessions
    /// (`Step::AutoAttach`): the answerer's session on it, unless it has one or wants none.
    fn auto_attached(&mut self, params: &Value, under: &str, seen: &mut Vec<Seen>) -> Vec<Step> {
        let Some(session) = params["sessionId"].as_str().map(str::to_owned) else { return Vec::new() };
        let info = &params["targetInfo"];
        let url = text(&info["url"]);
        let Some(id) = info["targetId"].as_str().filter(|_| info["type"] == "iframe" && web_or_blank(&url)) else {
            return vec![Step::Detach(session)];
        };
        let room = self.targets.contains_key(id) || self.targets.len() < MAX_TARGETS;
        if !self.effective().any() || !room {
            return vec![Step::Detach(session)];
        }
        let t = self.targets.entry(id.to_owned()).or_default();
        if t.session.is_some() || t.attaching {
            return vec![Step::Detach(session)];
        }
        t.url = url;
        t.frame = true;
        let id = id.to_owned();
        self.take(&id, session, Some(under), seen)
    }

    /// The browser let session `s` go: its target loses it (and is attached again while
    /// wanted, `REATTACHES` times at most), and so do the sessions the browser attached
    /// under it, whose own detach never comes.
    fn lost(&mut self, s: &str, seen: &mut Vec<Seen>) -> Vec<Step> {
        let Some(target) = self.sessions.remove(s) else { return Vec::new() };
        let again = self.targets.get_mut(&target).is_some_and(|t| {
            t.session = None;
            t.under = None;
            t.enabled = Want::NONE;
            t.detached = t.detached.saturating_add(1);
            t.detached <= REATTACHES
        });
        self.close_where(seen, ClosedBy::Gone, |p| p.session == s);
        // The browser let the session go but the target stays (it said nothing of it
        // going): attached again while wanted, or it is never covered again.
        tracing::debug!(target_id = %target, again, "the browser detached the answerer from a target");
        let mut steps = if again { self.bring_in_line(&target, seen) } else { Vec::new() };
        let below: Vec<String> =
            self.targets.values().filter(|t| t.under.as_deref() == Some(s)).filter_map(|t| t.session.clone()).collect();
        for child in below {
            steps.extend(self.lost(&child, seen));
        }
        steps
    }

    /// The wait after a refused attach is over: attach if still wanted and not attached.
    pub fn retry_attach(&mut self, target: &str, seen: &mut Vec<Seen>) -> Vec<Step> {
        self.bring_in_line(target, seen)
    }

    /// A browser-level or session event; what to send because of it.
    pub fn on_event(&mut self, method: &str, params: &Value, session: Option<&str>, seen: &mut Vec<Seen>) -> Vec<Step> {
        match (method, session) {
            ("Target.targetCreated" | "Target.targetInfoChanged", None) => {
                let info = &params["targetInfo"];
                let (Some(id), Some(kind)) = (info["targetId"].as_str(), info["type"].as_str()) else {
                    return Vec::new();
                };
                let url = text(&info["url"]);
                if !matches!(kind, "page" | "iframe") || !web_or_blank(&url) {
                    // Unmodal's own pages, the browser's: never attached.
                    return self.forget(id, seen);
                }
                if !self.targets.contains_key(id) && self.targets.len() >= MAX_TARGETS {
                    return Vec::new();
                }
                let t = self.targets.entry(id.to_owned()).or_default();
                t.url = url;
                t.frame = kind == "iframe";
                self.bring_in_line(id, seen)
            }
            ("Target.targetDestroyed", None) => {
                let Some(id) = params["targetId"].as_str() else { return Vec::new() };
                self.forget(id, seen);
                Vec::new()
            }
            ("Target.attachedToTarget", Some(under)) => self.auto_attached(params, under, seen),
            // On the browser's connection for a session the answerer attached, on its
            // page's session for one the browser attached under it.
            ("Target.detachedFromTarget", _) => match params["sessionId"].as_str() {
                Some(s) => self.lost(s, seen),
                None => Vec::new(),
            },
            ("DeviceAccess.deviceRequestPrompted", Some(s)) => {
                self.prompted(
                    s,
                    Which::Devices,
                    &params["id"],
                    None,
                    device_list(&params["devices"]),
                    Vec::new(),
                    seen,
                );
                Vec::new()
            }
            ("FedCm.dialogShown", Some(s)) => {
                let kind = Some(text(&params["dialogType"]));
                self.prompted(
                    s,
                    Which::Accounts,
                    &params["dialogId"],
                    kind,
                    Vec::new(),
                    account_list(&params["accounts"]),
                    seen,
                );
                Vec::new()
            }
            ("FedCm.dialogClosed", Some(s)) => {
                let id = text(&params["dialogId"]);
                // Closed by the answerer's own command was said when it answered.
                self.close_where(seen, ClosedBy::Remote, |p| {
                    p.session == s && p.which == Which::Accounts && p.cdp_id == id && !p.answering
                });
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn prompted(
        &mut self,
        session: &str,
        which: Which,
        id: &Value,
        dialog_type: Option<String>,
        devices: Vec<Device>,
        accounts: Vec<Account>,
        seen: &mut Vec<Seen>,
    ) {
        let Some(target) = self.sessions.get(session).cloned() else { return };
        let cdp_id = text(id);
        let open =
            self.prompts.iter_mut().find(|(_, p)| p.session == session && p.which == which && p.cdp_id == cdp_id);
        if let Some((&n, p)) = open {
            // The same prompt again: its list changed (a device that appeared later).
            p.devices = devices;
            p.accounts = accounts;
            p.dialog_type = dialog_type;
            seen.push(Seen::Updated(self.view(n).expect("just found")));
            return;
        }
        // A new prompt in a session replaces one of its kind still open there: the browser
        // shows one FedCM dialog at a time (the old one went without a `dialogClosed`), and
        // a page's second `requestDevice` cancels its first chooser, which `DeviceAccess`
        // never reports (measured): a pick sent to the old one is refused, or worse.
        self.close_where(seen, ClosedBy::Remote, |p| p.session == session && p.which == which);
        if self.prompts.len() >= MAX_PROMPTS {
            return;
        }
        self.next += 1;
        let n = self.next;
        self.prompts.insert(
            n,
            Prompt {
                target,
                session: session.to_owned(),
                cdp_id,
                which,
                dialog_type,
                devices,
                accounts,
                claimed: false,
                answering: false,
            },
        );
        seen.push(Seen::Opened(self.view(n).expect("just added")));
    }

    /// The target went (closed, or left the web): its session and prompts with it.
    fn forget(&mut self, id: &str, seen: &mut Vec<Seen>) -> Vec<Step> {
        let Some(t) = self.targets.remove(id) else { return Vec::new() };
        let Some(s) = t.session else { return Vec::new() };
        self.sessions.remove(&s);
        self.close_where(seen, ClosedBy::Gone, |p| p.session == s);
        let mut steps = vec![Step::Detach(s.clone())];
        // The frames the browser attached under it go with it.
        let below: Vec<String> =
            self.targets.iter().filter(|(_, t)| t.under.as_deref() == Some(&s)).map(|(id, _)| id.clone()).collect();
        for child in below {
            steps.extend(self.forget(&child, seen));
        }
        steps
    }

    pub(super) fn close_where(&mut self, seen: &mut Vec<Seen>, by: ClosedBy, f: impl Fn(&Prompt) -> bool) {
        let gone: Vec<u64> = self.prompts.iter().filter(|(_, p)| f(p)).map(|(n, _)| *n).collect();
        for n in gone {
            self.prompts.remove(&n);
            seen.push(Seen::Closed { prompt: n, by });
        }
    }

    pub fn view(&self, n: u64) -> Option<PromptView> {
        let p = self.prompts.get(&n)?;
        let t = self.targets.get(&p.target);
        Some(PromptView {
            prompt: n,
            which: p.which,
            target: p.target.clone(),
            url: t.map(|t| t.url.clone()).unwrap_or_default(),
            in_frame: t.is_some_and(|t| t.frame),
            dialog_type: p.dialog_type.clone(),
            devices: p.devices.clone(),
            accounts: p.accounts.clone(),
        })
    }

    pub fn views(&self) -> Vec<PromptView> {
        self.prompts.keys().filter_map(|n| self.view(*n)).collect()
    }

    pub(super) fn claim(&mut self, n: u64) -> bool {
        match self.prompts.get_mut(&n) {
            Some(p) if !p.claimed => {
                p.claimed = true;
                true
            }
            _ => false,
        }
    }

    /// Whether target `id` is attached with `which` on (for the record's "why no choice").
    pub fn covers(&self, url: &str, which: Which) -> bool {
        self.targets.values().any(|t| t.url == url && t.session.is_some() && t.enabled.has(which))
    }
}

/// Pages the answerer may attach to: the web's, and `about:blank` (a new tab, which then
/// navigates: the same target).
fn web_or_blank(url: &str) -> bool {
    url.is_empty() || url == "about:blank" || url.starts_with("http://") || url.starts_with("https://")
}

fn device_list(v: &Value) -> Vec<Device> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter().take(MAX_CHOICES).map(|d| Device { id: text(&d["id"]), name: text(&d["name"]) }).collect()
}

fn account_list(v: &Value) -> Vec<Account> {
    let list = v.as_array().map(Vec::as_slice).unwrap_or_default();
    list.iter()
        .take(MAX_CHOICES)
        .enumerate()
        .map(|(index, a)| Account {
            index,
            account_id: text(&a["accountId"]),
            name: text(&a["name"]),
            email: text(&a["email"]),
            config_url: text(&a["idpConfigUrl"]),
            login_state: text(&a["loginState"]),
        })
        .collect()
}
