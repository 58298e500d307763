//! What the agent's calls (`interact`, `observe`, `configure` in `policy.rs`) do to the state,
//! and the answers they get: typed views serialized once, each naming the tab it acted on.

use super::explain::{self, PILOT_OFF_WARNING};
pub use super::kinds::RuleView;
use super::kinds::{self, With};
use super::logs::{self, LogEntry};
use super::policy::PolicyView;
use super::protocol::ToBrowser;
use super::record::{DecidedBy, DialogRecord};
use super::state::{HISTORY, State, Tab, in_config};
use crate::api::{ObserveArgs, ObserveWhat};
use crate::host::kinds::{DialogCall, RuleSpec};
use crate::kind::Kind;
pub use crate::reply::Answered;
use crate::reply::{ErrorCode, ToolError};
use ringbuf::traits::Consumer;
use serde::Serialize;
use serde_json::Value;
use unmodal_engine::{DialogKind, RuleTarget};

/// Said after a rule set up while the pilot is off.
const RULE_WAITS_FOR_PILOT: &str = " It is kept by Unmodal and takes effect once a person switches AI Web Pilot on \
(`unmodal pilot on`); until then the browser holds no rule and pages see their dialogs as without Unmodal.";

/// What an `interact` call did: its answer, messages for the extension, and the held
/// dialog whose close the caller should wait for before answering the agent.
#[derive(Debug)]
pub struct Done {
    pub value: Answered,
    pub msgs: Vec<ToBrowser>,
    pub answering: Option<u64>,
}

impl Done {
    fn now(value: Answered, msgs: Vec<ToBrowser>) -> Self {
        Self { value, msgs, answering: None }
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Configured,
    Ok,
    Dismissed,
    NoPendingDialog,
    OpenNativeDialog,
}

/// What every answer about a tab carries besides its body.
#[derive(Serialize)]
struct About<'a> {
    tab: TabView<'a>,
    auto_responses: Vec<RuleView<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dialog_policy: Option<PolicyView>,
    pilot_enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<&'static str>,
}

/// Why no file can reach a page while the extension's file access is off.
const FILE_ACCESS_OFF: &str = "The browser refuses Unmodal's files: the extension's \"Allow access to file URLs\" is off. \
A person switches it on in chrome://extensions (Unmodal, Details); `unmodal doctor` checks it.";

#[derive(Serialize)]
struct TabView<'a> {
    id: i64,
    url: &'a str,
    title: &'a str,
}

#[derive(Serialize)]
struct WithAbout<'a, T> {
    #[serde(flatten)]
    body: &'a T,
    #[serde(flatten)]
    about: About<'a>,
}

/// A dialog as an answer to the agent shows it (`observe` shows whole records).
#[derive(Serialize)]
pub struct DialogSummary<'a> {
    dialog_id: u64,
    #[serde(rename = "type")]
    kind: Kind,
    message: &'a str,
    accepted: Option<bool>,
    response_text: Option<&'a str>,
    url: &'a str,
    timestamp: &'a str,
    decided_by: DecidedBy,
    closed_by: Option<DecidedBy>,
}

impl<'a> From<&'a DialogRecord> for DialogSummary<'a> {
    fn from(r: &'a DialogRecord) -> Self {
        Self {
            dialog_id: r.id,
            kind: r.kind,
            message: &r.message,
            accepted: r.accepted,
            response_text: r.response_text.as_deref(),
            url: &r.url,
            timestamp: &r.timestamp,
            decided_by: r.decided_by,
            closed_by: r.closed_by,
        }
    }
}

#[derive(Serialize)]
struct Configured<'a> {
    status: Status,
    #[serde(flatten)]
    rule: RuleView<'a>,
    message: String,
    /// Rules the host applies are in force as soon as they are set; a page dialog's rule
    /// is once the tab confirms it (the socket adds that).
    #[serde(skip_serializing_if = "Option::is_none")]
    rules_in_force: Option<bool>,
}

#[derive(Serialize)]
struct Cleared {
    status: Status,
    dialog_type: &'static str,
    removed: usize,
    message: String,
}

#[derive(Serialize)]
struct Pending<'a> {
    status: Status,
    pending_dialogs: Vec<&'a DialogRecord>,
}

#[derive(Serialize)]
struct Dismissed<'a> {
    status: Status,
    dialog: DialogSummary<'a>,
    agent_answer_applied: bool,
    message: String,
}

#[derive(Serialize)]
struct Note<'a> {
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    dialog: Option<&'a DialogRecord>,
    message: &'static str,
}

#[derive(Serialize)]
struct Dialogs<'a> {
    pending_dialogs: Vec<&'a DialogRecord>,
    recent_dialogs: Vec<&'a DialogRecord>,
    history_capacity: usize,
    evicted: u64,
    folded_by_flood_limit: u64,
}

#[derive(Serialize)]
struct Logs<'a> {
    logs: Vec<&'a LogEntry>,
    capacity: usize,
    evicted: u64,
}

#[derive(Serialize)]
struct Tabs<'a> {
    browser: Browser<'a>,
    tracked_tab: Option<i64>,
    tabs: &'a [Tab],
    pilot_enabled: bool,
}

#[derive(Serialize)]
struct Browser<'a> {
    host_pid: u32,
    extension_version: Option<&'a str>,
}

#[derive(Serialize)]
struct Info<'a> {
    pid: u32,
    version: &'static str,
    extension_version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_access: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    asks_where_to_save: Option<bool>,
    /// The host holds a DevTools connection of its own to the browser (`answerer/`): what
    /// a driver does there is seen beside what the extension reports.
    devtools_connection: bool,
    pilot_enabled: bool,
    tracked_tab: Option<i64>,
    tabs: usize,
}

fn to_value(v: &impl Serialize) -> Answered {
    // Only our own view types come here; they always serialize.
    serde_json::to_value(v).unwrap_or_default()
}

impl State {
    pub fn resolve_tab(&self, tab: Option<i64>) -> Result<&Tab, ToolError> {
        let known = || self.tabs.iter().map(|t| t.id.to_string()).collect::<Vec<_>>().join(", ");
        match tab {
            Some(id) => self.tab(id).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::TabNotFound,
                    format!("No tab {id} in the connected browser; open tabs: [{}].", known()),
                )
            }),
            None => self.tracked.and_then(|id| self.tab(id)).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::NoTrackedTab,
                    format!("No tab is active in a focused window; pass tab_id (open tabs: [{}]).", known()),
                )
            }),
        }
    }

    /// Every answer names the tab it acted on, the active auto-responses and the pilot.
    pub(super) fn answer(&self, body: &impl Serialize, tab: &Tab) -> Answered {
        let about = About {
            tab: TabView { id: tab.id, url: &tab.url, title: &tab.title },
            auto_responses: self.rules_of(tab.id).iter().map(RuleView::from).collect(),
            dialog_policy: self.policy_view(tab.id),
            pilot_enabled: self.pilot,
            warning: (!self.pilot).then_some(PILOT_OFF_WARNING),
        };
        to_value(&WithAbout { body, about })
    }

    /// Runs a validated `handle_dialog` call.
    pub fn interact(&mut self, call: DialogCall) -> Result<Done, ToolError> {
        match call {
            DialogCall::Setup { tab, once, mut rule } => {
                let tab = self.resolve_tab(tab)?.clone();
                if let RuleSpec::Dialog { target, text, .. } = &mut rule
                    && !matches!(target, RuleTarget::One(DialogKind::Prompt) | RuleTarget::All)
                {
                    *text = None;
                }
                if kinds::needs_file_access(&rule) && self.file_access == Some(false) {
                    return Err(ToolError::new(ErrorCode::InvalidParams, FILE_ACCESS_OFF));
                }
                let page = in_config(&rule);
                let rule = self.add_rule(tab.id, once, rule)?;
                // With the pilot off the rule waits here: nothing goes to the browser, and
                // nothing is in force until a person switches the pilot on.
                let in_force = match (self.pilot, page) {
                    (false, _) => Some(false),
                    (true, false) => Some(true),
                    (true, true) => None,
                };
                let mut message = explain::rule_set(&rule.rule, once);
                if let Some(caveat) = kinds::rule_caveat(self, &rule.rule) {
                    message = format!("{message} {caveat}");
                }
                if !self.pilot {
                    message.push_str(RULE_WAITS_FOR_PILOT);
                }
                let body = Configured {
                    status: Status::Configured,
                    message,
                    rule: RuleView::from(&rule),
                    rules_in_force: in_force,
                };
                let value = self.answer(&body, &tab);
                let msgs = if page { self.config_push(tab.id).into_iter().collect() } else { Vec::new() };
                Ok(Done::now(value, msgs))
            }
            DialogCall::Clear { tab, what } => {
                let tab = self.resolve_tab(tab)?.clone();
                let (removed, msg) = self.clear_rules(tab.id, what);
                let body = Cleared {
                    status: Status::Configured,
                    dialog_type: what.as_str(),
                    removed,
                    message: format!("Removed {removed} auto-response(s) for {}.", what.as_str()),
                };
                let value = self.answer(&body, &tab);
                Ok(Done::now(value, msg.into_iter().collect()))
            }
            DialogCall::Status { tab } => {
                let tab = self.resolve_tab(tab)?;
                let body = Pending { status: Status::Ok, pending_dialogs: self.pending_of(tab.id) };
                Ok(Done::now(self.answer(&body, tab), Vec::new()))
            }
            DialogCall::Carrying { with, .. } if with.gives_files() && self.file_access == Some(false) => {
                Err(ToolError::new(ErrorCode::InvalidParams, FILE_ACCESS_OFF))
            }
            DialogCall::Carrying { tab, dialog_id, with } => self.answer_carrying(tab, dialog_id, With::Own(with)),
            DialogCall::Respond { tab, accept, text, dialog_id } => {
                if let Some(id) = self.held_to_answer(tab, dialog_id)? {
                    let msg = self.answer_held(id, accept, text, With::Nothing, DecidedBy::Agent)?;
                    return Ok(Done { value: Value::Null, msgs: vec![msg], answering: Some(id) });
                }
                let tab = self.resolve_tab(tab)?.clone();
                Ok(Done::now(self.respond(&tab, accept, text), Vec::new()))
            }
        }
    }

    /// The agent's accept of a held prompt with what only its kind takes (a login, files, …).
    fn answer_carrying(&mut self, tab: Option<i64>, dialog_id: Option<u64>, with: With) -> Result<Done, ToolError> {
        let Some(id) = self.held_to_answer(tab, dialog_id)? else {
            let none = kinds::carrier(&with).map_or("No dialog is held open for the agent.", |(_, c)| c.none_held);
            return Err(ToolError::new(ErrorCode::DialogNotFound, none));
        };
        let msg = self.answer_held(id, true, None, with, DecidedBy::Agent)?;
        Ok(Done { value: Value::Null, msgs: vec![msg], answering: Some(id) })
    }

    /// Which held dialog an answer is for: the one named, or the only one that waits (in
    /// the given tab, or anywhere). Several and none named is an error listing them.
    fn held_to_answer(&self, tab: Option<i64>, dialog_id: Option<u64>) -> Result<Option<u64>, ToolError> {
        let waiting: Vec<_> =
            self.awaiting_agent().map(|h| &h.record).filter(|r| tab.is_none_or(|t| r.tab_id == t)).collect();
        let listed = || {
            if waiting.is_empty() {
                return "none".to_string();
            }
            waiting
                .iter()
                .map(|r| {
                    format!(
                        "dialog_id {} ({} in tab {}: {:?})",
                        r.id,
                        r.kind.as_str(),
                        r.tab_id,
                        r.message.chars().take(80).collect::<String>()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let Some(id) = dialog_id else {
            return match waiting.len() {
                0 => Ok(None),
                1 => Ok(Some(waiting[0].id)),
                n => Err(ToolError::new(
                    ErrorCode::SeveralDialogsPending,
                    format!("{n} dialogs are held open; say which one with dialog_id: {}.", listed()),
                )),
            };
        };
        if let Some(h) = self.held_dialog(id) {
            if tab.is_some_and(|t| t != h.record.tab_id) {
                return Err(ToolError::new(
                    ErrorCode::DialogNotFound,
                    format!("Dialog {id} is in tab {}, not in tab {}.", h.record.tab_id, tab.unwrap_or_default()),
                ));
            }
            return Ok(Some(id));
        }
        match self.record(id) {
            Some(r) => Err(ToolError::new(
                ErrorCode::DialogNotOpen,
                format!(
                    "Dialog {id} is not waiting for an answer ({}: {}). Open ones: {}.",
                    if r.is_open() { "open" } else { "closed" },
                    r.explanation,
                    listed()
                ),
            )),
            None => Err(ToolError::new(ErrorCode::DialogNotFound, format!("No dialog {id}. Held open: {}.", listed()))),
        }
    }

    /// The answer to the agent once its answer closed a held dialog.
    pub fn answered(&self, id: u64) -> Result<Answered, ToolError> {
        let rec = match self.answer_outcome(id) {
            Some(Ok(rec)) => rec,
            Some(Err(why)) => {
                return Err(ToolError::new(
                    ErrorCode::AnswerFailed,
                    format!("The browser did not take the answer: {why}."),
                ));
            }
            None => {
                return Err(ToolError::new(
                    ErrorCode::AnswerPending,
                    format!(
                        "The answer to dialog {id} went to the browser, which has not reported the dialog closed \
yet; observe {{what:\"dialogs\"}} shows when it does."
                    ),
                ));
            }
        };
        let tab = self.tab(rec.tab_id).cloned().unwrap_or(Tab {
            id: rec.tab_id,
            window_id: 0,
            url: rec.page_url.clone(),
            title: String::new(),
            active: false,
        });
        let applied = rec.closed_by == Some(DecidedBy::Agent);
        let body = Dismissed {
            status: Status::Dismissed,
            dialog: rec.into(),
            agent_answer_applied: applied,
            message: if applied { "The page received this answer.".to_string() } else { rec.explanation.clone() },
        };
        Ok(self.answer(&body, &tab))
    }

    /// The reactive path. The page already got its answer (a synchronous dialog cannot wait
    /// for the agent), so this acknowledges the oldest pending dialog and says honestly
    /// what happened and how to get a different answer next time.
    fn respond(&mut self, tab: &Tab, accept: bool, text: Option<String>) -> Answered {
        let found = self.pending.iter().position(|id| self.record(*id).is_some_and(|r| r.tab_id == tab.id));
        let Some(rec) = found.and_then(|pos| self.record(self.pending[pos])) else {
            let body = Note {
                status: Status::NoPendingDialog,
                dialog: None,
                message: "No dialog is currently pending. Use setup=true to pre-configure auto-responses for future \
dialogs.",
            };
            return self.answer(&body, tab);
        };
        if rec.is_open() {
            let body = Note {
                status: Status::OpenNativeDialog,
                dialog: Some(rec),
                message: "The browser's own dialog is open because AI Web Pilot is off; Unmodal cannot answer it. A \
person must answer it, or switch the pilot on (`unmodal pilot on` in a terminal) so rules and the default policy apply.",
            };
            return self.answer(&body, tab);
        }
        let applied = rec.kind == DialogKind::Alert
            || (rec.accepted == Some(accept) && (!accept || text.is_none() || text == rec.response_text));
        let message = if applied {
            "The page already received this answer.".to_string()
        } else {
            format!(
                "The page already got its answer: {}. A synchronous dialog cannot wait for the agent; to choose the \
answer, call setup=true with dialog_type=\"{}\" before the action that opens the dialog.",
                rec.explanation,
                rec.kind.as_str()
            )
        };
        let body = Dismissed { status: Status::Dismissed, dialog: rec.into(), agent_answer_applied: applied, message };
        let value = self.answer(&body, tab);
        if let Some(pos) = found {
            self.pending.remove(pos);
        }
        value
    }

    pub fn observe(&self, args: &ObserveArgs) -> Result<Answered, ToolError> {
        match args.what {
            ObserveWhat::Tabs => Ok(to_value(&Tabs {
                browser: Browser { host_pid: std::process::id(), extension_version: self.extension_version.as_deref() },
                tracked_tab: self.tracked,
                tabs: &self.tabs,
                pilot_enabled: self.pilot,
            })),
            ObserveWhat::Logs => {
                let tab = self.resolve_tab(args.tab_id)?;
                let body =
                    Logs { logs: self.logs.of_tab(tab.id), capacity: logs::CAPACITY, evicted: self.logs.evicted };
                Ok(self.answer(&body, tab))
            }
            ObserveWhat::Dialogs => {
                let tab = self.resolve_tab(args.tab_id)?;
                let body = Dialogs {
                    pending_dialogs: self.pending_of(tab.id),
                    recent_dialogs: self.history.iter().filter(|r| r.tab_id == tab.id).collect(),
                    history_capacity: HISTORY,
                    evicted: self.evicted,
                    folded_by_flood_limit: self.folded.get(&tab.id).copied().unwrap_or(0),
                };
                Ok(self.answer(&body, tab))
            }
        }
    }

    pub fn info(&self) -> Answered {
        to_value(&Info {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION"),
            extension_version: self.extension_version.as_deref(),
            file_access: self.file_access,
            asks_where_to_save: self.browser.asks_where_to_save(),
            devtools_connection: self.answerer.held(),
            pilot_enabled: self.pilot,
            tracked_tab: self.tracked,
            tabs: self.tabs.len(),
        })
    }

    /// Held dialogs first (they block the page), then what waits for acknowledgement.
    fn pending_of(&self, tab: i64) -> Vec<&DialogRecord> {
        let held = self.held.iter().map(|h| &h.record).filter(|r| r.tab_id == tab);
        let acknowledge = self.pending.iter().filter_map(|id| self.record(*id)).filter(|r| r.tab_id == tab);
        held.chain(acknowledge).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::feed;
    use super::*;
    use serde_json::json;

    fn state_with_tab() -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/","title":"A"},{"id":4,"url":"http://b/"}]}))
            .unwrap();
        s
    }

    fn respond(dialog_id: Option<u64>) -> DialogCall {
        DialogCall::Respond { tab: None, accept: true, text: None, dialog_id }
    }

    fn setup(s: &mut State, tab: Option<i64>) -> Value {
        let rule = RuleSpec::Dialog {
            matcher: Default::default(),
            target: RuleTarget::One(DialogKind::Confirm),
            accept: true,
            text: None,
        };
        let call = DialogCall::Setup { tab, once: true, rule };
        s.interact(call).unwrap().value
    }

    #[test]
    fn setup_answers_in_the_spec_shape_and_names_the_tab() {
        let mut s = state_with_tab();
        let v = setup(&mut s, None);
        assert_eq!(v["status"], "configured");
        assert_eq!(v["dialog_type"], "confirm");
        assert_eq!(v["accept"], true);
        assert_eq!(v["once"], true);
        assert_eq!(
            v["message"],
            "Auto-response configured for next confirm dialog. Will accept and revert to default."
        );
        assert_eq!(v["tab"]["id"], 3);
        assert_eq!(v["auto_responses"][0]["dialog_type"], "confirm");
        assert!(v.get("warning").is_none());
    }

    #[test]
    fn rules_are_per_tab() {
        let mut s = state_with_tab();
        setup(&mut s, Some(4));
        assert!(s.rules_of(3).is_empty());
        assert_eq!(s.rules_of(4).len(), 1);
    }

    #[test]
    fn unknown_tab_is_a_clear_error() {
        let mut s = state_with_tab();
        let err = s.interact(DialogCall::Status { tab: Some(99) }).unwrap_err();
        assert_eq!(err.code, ErrorCode::TabNotFound);
        assert!(err.message.contains("[3, 4]"), "{}", err.message);
    }

    #[test]
    fn respond_without_pending_says_no_pending_dialog() {
        let mut s = state_with_tab();
        let v = s.interact(respond(None)).unwrap().value;
        assert_eq!(v["status"], "no_pending_dialog");
        assert_eq!(v["auto_responses"], json!([]));
    }

    #[test]
    fn respond_acknowledges_a_default_answered_dialog_honestly() {
        let mut s = state_with_tab();
        feed(
            &mut s,
            json!({"type":"dialog","tab_id":3,"report":{"seq":1,"phase":"decided","kind":"confirm",
            "message":"Delete?","decided_by":"default_policy","rules_loaded":true,"accepted":false}}),
        )
        .unwrap();
        let v = s.interact(respond(None)).unwrap().value;
        assert_eq!(v["status"], "dismissed");
        assert_eq!(v["dialog"]["accepted"], false);
        assert_eq!(v["dialog"]["dialog_id"], 1, "one key for a dialog's id in every answer");
        assert_eq!(v["agent_answer_applied"], false);
        assert!(v["message"].as_str().unwrap().contains("setup=true"));
        let v = s.interact(respond(None)).unwrap().value;
        assert_eq!(v["status"], "no_pending_dialog");
    }

    #[test]
    fn pilot_off_is_stated_in_every_answer() {
        let mut s = state_with_tab();
        s.pilot = false;
        let v = setup(&mut s, None);
        assert!(v["warning"].as_str().unwrap().contains("popup"));
        assert_eq!(v["pilot_enabled"], false);
    }
}
