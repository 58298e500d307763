//! What the agent can ask of the host (through `unmodal mcp`), answered from the state.

use super::record::ClosedBy;
use super::state::{State, Tab};
use crate::api::{DialogCall, ObserveArgs, ObserveWhat};
use ringbuf::traits::Consumer;
use serde::Serialize;
use serde_json::{Value, json};
use unmodal_engine::{DialogKind, RuleTarget};

/// An answer the agent can act on: a stable code and a sentence saying what to do.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HostError {
    pub code: &'static str,
    pub message: String,
}

impl HostError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

/// What an `interact` call did: its answer, messages for the extension, and the held
/// dialog whose close the caller should wait for before answering the agent.
#[derive(Debug)]
pub struct Done {
    pub value: Value,
    pub msgs: Vec<Value>,
    pub answering: Option<u64>,
}

impl Done {
    fn now(value: Value, msgs: Vec<Value>) -> Self {
        Self { value, msgs, answering: None }
    }
}

const PILOT_OFF_WARNING: &str = "AI Web Pilot is off in this browser: dialogs keep their native behaviour and \
rules are stored but not applied until a human switches the pilot on in the Unmodal popup.";

fn tab_json(t: &Tab) -> Value {
    json!({"id": t.id, "url": t.url, "title": t.title})
}

impl State {
    pub fn resolve_tab(&self, tab: Option<i64>) -> Result<&Tab, HostError> {
        let known = || self.tabs.iter().map(|t| t.id.to_string()).collect::<Vec<_>>().join(", ");
        match tab {
            Some(id) => self.tabs.iter().find(|t| t.id == id).ok_or_else(|| {
                HostError::new(
                    "tab_not_found",
                    format!("No tab {id} in the connected browser; open tabs: [{}].", known()),
                )
            }),
            None => self.tracked.and_then(|id| self.tabs.iter().find(|t| t.id == id)).ok_or_else(|| {
                HostError::new(
                    "no_tracked_tab",
                    format!("No tab is active in a focused window; pass tab_id (open tabs: [{}]).", known()),
                )
            }),
        }
    }

    /// Runs a validated `handle_dialog` call.
    pub fn interact(&mut self, call: DialogCall) -> Result<Done, HostError> {
        match call {
            DialogCall::Setup { tab, target, accept, text, once, matcher } => {
                let tab = self.resolve_tab(tab)?.clone();
                let text = if target == RuleTarget::One(DialogKind::Prompt) || target == RuleTarget::All {
                    text
                } else {
                    None
                };
                let rule = self
                    .add_rule(tab.id, target, accept, once, text, matcher)
                    .map_err(|m| HostError::new("too_many_rules", m))?;
                let verb = if accept { "accept" } else { "dismiss" };
                let message = if once {
                    format!(
                        "Auto-response configured for next {} dialog. Will {verb} and revert to default.",
                        target.as_str()
                    )
                } else {
                    format!("Auto-response configured for every {} dialog until cleared. Will {verb}.", target.as_str())
                };
                let mut v = json!({
                    "status": "configured",
                    "dialog_type": target.as_str(),
                    "accept": accept,
                    "once": once,
                    "rule_id": rule.id,
                    "message": message,
                });
                if let Some(t) = &rule.text {
                    v["text"] = json!(t);
                }
                if rule.matcher != Default::default() {
                    v["match"] = json!(rule.matcher);
                }
                Ok(Done::now(self.finish(v, &tab), vec![self.rules_message(tab.id)]))
            }
            DialogCall::Clear { tab, target } => {
                let tab = self.resolve_tab(tab)?.clone();
                let removed = self.clear_rules(tab.id, target);
                let v = json!({
                    "status": "configured",
                    "dialog_type": target.as_str(),
                    "removed": removed,
                    "message": format!("Removed {removed} auto-response(s) for {}.", target.as_str()),
                });
                Ok(Done::now(self.finish(v, &tab), vec![self.rules_message(tab.id)]))
            }
            DialogCall::Status { tab } => {
                let tab = self.resolve_tab(tab)?.clone();
                let v = json!({"status": "ok", "pending_dialogs": self.pending_json(tab.id)});
                Ok(Done::now(self.finish(v, &tab), Vec::new()))
            }
            DialogCall::Respond { tab, accept, text, dialog_id } => {
                if let Some(id) = self.held_to_answer(tab, dialog_id)? {
                    let msg = self.answer_held(id, accept, text, ClosedBy::Agent)?;
                    return Ok(Done { value: Value::Null, msgs: vec![msg], answering: Some(id) });
                }
                let tab = self.resolve_tab(tab)?.clone();
                Ok(Done::now(self.respond(&tab, accept, text), Vec::new()))
            }
        }
    }

    /// Which held dialog an answer is for: the one named, or the only one that waits (in
    /// the given tab, or anywhere). Several and none named is an error listing them.
    fn held_to_answer(&self, tab: Option<i64>, dialog_id: Option<u64>) -> Result<Option<u64>, HostError> {
        let waiting: Vec<_> = self.awaiting_agent().filter(|r| tab.is_none_or(|t| r.tab_id == t)).collect();
        let listed = || {
            waiting
                .iter()
                .map(|r| {
                    format!(
                        "dialog_id {} ({} in tab {}: {:?})",
                        r.id,
                        r.kind,
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
                n => Err(HostError::new(
                    "several_dialogs_pending",
                    format!("{n} dialogs are held open; say which one with dialog_id: {}.", listed()),
                )),
            };
        };
        match self.record(id) {
            Some(r) if r.held.is_some() && r.state == "open" => {
                if tab.is_some_and(|t| t != r.tab_id) {
                    return Err(HostError::new(
                        "dialog_not_found",
                        format!("Dialog {id} is in tab {}, not in tab {}.", r.tab_id, tab.unwrap_or_default()),
                    ));
                }
                Ok(Some(id))
            }
            Some(r) => Err(HostError::new(
                "dialog_not_open",
                format!(
                    "Dialog {id} is not waiting for an answer ({}: {}). Open ones: {}.",
                    r.state,
                    r.explanation,
                    if waiting.is_empty() { "none".to_string() } else { listed() }
                ),
            )),
            None => Err(HostError::new(
                "dialog_not_found",
                format!(
                    "No dialog {id}. Held open: {}.",
                    if waiting.is_empty() { "none".to_string() } else { listed() }
                ),
            )),
        }
    }

    /// The answer to the agent once its answer closed a held dialog.
    pub fn answered(&self, id: u64) -> Result<Value, HostError> {
        let rec = match self.answer_outcome(id) {
            Some(Ok(rec)) => rec.clone(),
            Some(Err(why)) => {
                return Err(HostError::new("answer_failed", format!("The browser did not take the answer: {why}.")));
            }
            None => {
                return Err(HostError::new(
                    "answer_pending",
                    format!(
                        "The answer to dialog {id} went to the browser, which has not reported the dialog closed \
yet; observe {{what:\"dialogs\"}} shows when it does."
                    ),
                ));
            }
        };
        let tab = self.tabs.iter().find(|t| t.id == rec.tab_id).cloned().unwrap_or(Tab {
            id: rec.tab_id,
            window_id: 0,
            url: rec.page_url.clone(),
            title: String::new(),
            active: false,
        });
        let applied = rec.closed_by == Some(ClosedBy::Agent);
        let v = json!({
            "status": "dismissed",
            "dialog": {
                "dialog_id": rec.id,
                "type": rec.kind,
                "message": rec.message,
                "accepted": rec.accepted,
                "response_text": rec.response_text,
                "url": rec.url,
                "timestamp": rec.timestamp,
                "decided_by": rec.decided_by,
                "closed_by": rec.closed_by,
            },
            "agent_answer_applied": applied,
            "message": if applied { "The page received this answer.".to_string() } else { rec.explanation.clone() },
        });
        Ok(self.finish(v, &tab))
    }

    /// The reactive path. The page already got its answer (a synchronous dialog cannot wait
    /// for the agent), so this acknowledges the oldest pending dialog and says honestly
    /// what happened and how to get a different answer next time.
    fn respond(&mut self, tab: &Tab, accept: bool, text: Option<String>) -> Value {
        let Some(pos) = self.pending.iter().position(|id| self.record(*id).is_some_and(|r| r.tab_id == tab.id)) else {
            let v = json!({
                "status": "no_pending_dialog",
                "message": "No dialog is currently pending. Use setup=true to pre-configure auto-responses for future dialogs.",
            });
            return self.finish(v, tab);
        };
        let id = self.pending[pos];
        let rec = self.record(id).cloned().expect("pending ids are in the history");
        if rec.state == "open" {
            let v = json!({
                "status": "open_native_dialog",
                "dialog": rec,
                "message": "The browser's own dialog is open because AI Web Pilot is off; Unmodal cannot answer it. \
            A human must answer it, or switch the pilot on in the Unmodal popup so rules and the default policy apply.",
            });
            return self.finish(v, tab);
        }
        self.pending.remove(pos);
        let applied = rec.kind == "alert"
            || (rec.accepted == Some(accept) && (!accept || text.is_none() || text == rec.response_text));
        let note = if applied {
            "The page already received this answer.".to_string()
        } else {
            format!(
                "The page already got its answer: {}. A synchronous dialog cannot wait for the agent; to choose the \
answer, call setup=true with dialog_type=\"{}\" before the action that opens the dialog.",
                rec.explanation, rec.kind
            )
        };
        let v = json!({
            "status": "dismissed",
            "dialog": {
                "id": rec.id,
                "type": rec.kind,
                "message": rec.message,
                "accepted": rec.accepted,
                "response_text": rec.response_text,
                "url": rec.url,
                "timestamp": rec.timestamp,
                "decided_by": rec.decided_by,
                "closed_by": rec.closed_by,
            },
            "agent_answer_applied": applied,
            "message": note,
        });
        self.finish(v, tab)
    }

    pub fn observe(&self, args: &ObserveArgs) -> Result<Value, HostError> {
        match args.what {
            ObserveWhat::Tabs => Ok(json!({
                "browser": {"host_pid": std::process::id(), "extension_version": self.extension_version},
                "tracked_tab": self.tracked,
                "tabs": self.tabs,
                "pilot_enabled": self.pilot,
            })),
            ObserveWhat::Logs => self.logs_view(args.tab_id),
            ObserveWhat::Dialogs => {
                let tab = self.resolve_tab(args.tab_id)?.clone();
                let recent: Vec<_> = self.history.iter().filter(|r| r.tab_id == tab.id).collect();
                let v = json!({
                    "pending_dialogs": self.pending_json(tab.id),
                    "recent_dialogs": recent,
                    "history_capacity": super::state::HISTORY,
                    "evicted": self.evicted,
                    "folded_by_flood_limit": self.folded.get(&tab.id).copied().unwrap_or(0),
                });
                Ok(self.finish(v, &tab))
            }
        }
    }

    fn logs_view(&self, tab: Option<i64>) -> Result<Value, HostError> {
        let tab = self.resolve_tab(tab)?.clone();
        let v = json!({
            "logs": self.logs.of_tab(tab.id),
            "capacity": super::logs::CAPACITY,
            "evicted": self.logs.evicted,
        });
        Ok(self.finish(v, &tab))
    }

    pub fn info(&self) -> Value {
        json!({
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "extension_version": self.extension_version,
            "pilot_enabled": self.pilot,
            "tracked_tab": self.tracked,
            "tabs": self.tabs.len(),
        })
    }

    /// Held dialogs first (they block the page), then what waits for acknowledgement.
    fn pending_json(&self, tab: i64) -> Vec<Value> {
        let held = self.held.iter().filter(|r| r.tab_id == tab);
        let acknowledge = self.pending.iter().filter_map(|id| self.record(*id)).filter(|r| r.tab_id == tab);
        held.chain(acknowledge).map(|r| serde_json::to_value(r).unwrap_or_default()).collect()
    }

    /// Every answer names the tab it acted on, the active auto-responses and the pilot.
    pub(super) fn finish(&self, mut v: Value, tab: &Tab) -> Value {
        v["tab"] = tab_json(tab);
        v["auto_responses"] = self.rules_of(tab.id).iter().map(|r| r.to_json()).collect();
        if let Some(p) = self.policy_json(tab.id) {
            v["dialog_policy"] = p;
        }
        v["pilot_enabled"] = json!(self.pilot);
        if !self.pilot {
            v["warning"] = json!(PILOT_OFF_WARNING);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_with_tab() -> State {
        let mut s = State::new();
        s.pilot = true;
        s.on_extension(&json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/","title":"A"},{"id":4,"url":"http://b/"}]})).unwrap();
        s
    }

    fn respond(dialog_id: Option<u64>) -> DialogCall {
        DialogCall::Respond { tab: None, accept: true, text: None, dialog_id }
    }

    fn setup(s: &mut State, tab: Option<i64>) -> Value {
        let call = DialogCall::Setup {
            matcher: Default::default(),
            tab,
            target: RuleTarget::One(DialogKind::Confirm),
            accept: true,
            text: None,
            once: true,
        };
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
        assert_eq!(err.code, "tab_not_found");
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
        s.on_extension(&json!({"type":"dialog","tab_id":3,"report":{"seq":1,"phase":"decided","kind":"confirm",
            "message":"Delete?","decided_by":"default_policy","rules_loaded":true,"accepted":false}}))
            .unwrap();
        let v = s.interact(respond(None)).unwrap().value;
        assert_eq!(v["status"], "dismissed");
        assert_eq!(v["dialog"]["accepted"], false);
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
