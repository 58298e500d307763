//! Per-tab dialog policies (`configure {action: "dialog_policy"}`): what answers a dialog no
//! rule matches, and the fallback to `auto` when the browser ends the debugger session.

use super::ops::HostError;
use super::record::now_rfc3339;
use super::state::State;
use crate::api::PolicyCall;
use serde::Serialize;
use serde_json::{Value, json};
use unmodal_engine::Policy;

/// The watchdog's default, in seconds (seed 001: dialogs left alone close after 10 s).
pub const DEFAULT_TIMEOUT_S: u32 = 10;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TabPolicy {
    pub policy: Policy,
    pub timeout_s: u32,
    /// Why the tab is back on `auto` although the agent asked for more.
    pub fallback: Option<Fallback>,
}

impl Default for TabPolicy {
    fn default() -> Self {
        Self { policy: Policy::Auto, timeout_s: DEFAULT_TIMEOUT_S, fallback: None }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fallback {
    pub from: &'static str,
    pub reason: String,
    pub at: String,
}

const ABOUT: &str = "must_respond: a dialog no rule answers stays open until you answer it with interact \
{action:\"handle_dialog\", dialog_id, accept, text?}, or the watchdog dismisses it after timeout_s. The tab is \
under the extension's debugger while the policy holds (headful Chrome shows a \"started debugging\" bar).";

impl State {
    pub fn policy_of(&self, tab: i64) -> TabPolicy {
        self.policies.get(&tab).cloned().unwrap_or_default()
    }

    /// Sets a tab's policy; the rules message that follows carries it to the tab.
    pub fn configure(&mut self, call: PolicyCall) -> Result<(Value, Vec<Value>), HostError> {
        let tab = self.resolve_tab(call.tab)?.clone();
        let next = TabPolicy { policy: call.policy, timeout_s: call.timeout_s, fallback: None };
        if next == TabPolicy::default() {
            self.policies.remove(&tab.id);
        } else {
            self.policies.insert(tab.id, next);
        }
        let message = match call.policy {
            Policy::Auto => "Dialogs no rule answers get the default policy (alert accepted, confirm false, prompt \
null); beforeunload is left to the page."
                .to_string(),
            Policy::Hold => format!("{ABOUT} Watchdog: {} s.", call.timeout_s),
            Policy::Accept => "Dialogs no rule answers are accepted at once (a prompt returns \"\"; a leave prompt \
leaves) and recorded with closed_by \"policy\"."
                .to_string(),
            Policy::Dismiss => "Dialogs no rule answers are dismissed at once (a leave prompt stays on the page) and \
recorded with closed_by \"policy\"."
                .to_string(),
        };
        let v = json!({
            "status": "configured",
            "policy": call.policy.as_str(),
            "timeout_s": call.timeout_s,
            "message": message,
        });
        let v = self.finish(v, &tab);
        Ok((v, vec![self.rules_message(tab.id)]))
    }

    /// The browser ended the debugger session of `tab`, or it could not start: the tab goes
    /// back to `auto`, and every answer about the tab says why until the agent sets a policy.
    pub fn fall_back(&mut self, tab: i64, reason: String) -> Vec<Value> {
        let Some(p) = self.policies.get_mut(&tab) else { return Vec::new() };
        if p.policy == Policy::Auto {
            return Vec::new();
        }
        let from = p.policy.as_str();
        self.logs.note(
            tab,
            "dialog_policy",
            format!("The tab fell back from {from} to auto: {reason}. Set the policy again once that is resolved."),
        );
        p.fallback = Some(Fallback { from, reason, at: now_rfc3339() });
        p.policy = Policy::Auto;
        vec![self.rules_message(tab)]
    }

    /// How the tab's policy shows in answers: only when it is not the plain default.
    pub fn policy_json(&self, tab: i64) -> Option<Value> {
        let p = self.policies.get(&tab)?;
        let mut v = json!({"policy": p.policy.as_str(), "timeout_s": p.timeout_s});
        if let Some(f) = &p.fallback {
            v["fallback"] = json!(f);
            v["message"] = json!(format!(
                "This tab is back on the auto policy (it was {}): {}. Dialogs no rule answers get the default again; \
call configure {{action:\"dialog_policy\"}} to set it anew.",
                f.from, f.reason
            ));
        }
        Some(v)
    }
}

/// The words for a `chrome.debugger.onDetach` reason.
pub fn detach_reason(reason: &str) -> String {
    match reason {
        "canceled_by_user" => "a human cancelled the debugging bar (or opened DevTools on the tab)".to_string(),
        "target_closed" => {
            "the browser ended the debugger session (the tab went to a page extensions may not debug, such as \
chrome://, or closed)"
                .to_string()
        }
        other => format!("the browser ended the debugger session ({other})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> State {
        let mut s = State::new();
        s.on_extension(&json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        s
    }

    #[test]
    fn must_respond_travels_in_the_rules_message() {
        let mut s = state();
        let (v, msgs) = s.configure(PolicyCall { tab: None, policy: Policy::Hold, timeout_s: 30 }).unwrap();
        assert_eq!((v["policy"].as_str(), v["timeout_s"].as_u64()), (Some("must_respond"), Some(30)));
        assert_eq!(msgs[0]["rules"], "U1P1");
        assert_eq!(msgs[0]["policy"], "must_respond");
        assert_eq!(v["dialog_policy"]["policy"], "must_respond");
    }

    #[test]
    fn a_detach_falls_back_to_auto_and_says_why() {
        let mut s = state();
        s.configure(PolicyCall { tab: Some(3), policy: Policy::Hold, timeout_s: 10 }).unwrap();
        let msgs = s.on_extension(&json!({"type":"debugger_detached","tab_id":3,"reason":"canceled_by_user"})).unwrap();
        assert_eq!(msgs[0]["rules"], "U1");
        let p = s.policy_json(3).unwrap();
        assert_eq!(p["policy"], "auto");
        assert_eq!(p["fallback"]["from"], "must_respond");
        assert!(p["message"].as_str().unwrap().contains("cancelled the debugging bar"), "{p}");
        // A second detach of a tab already on auto changes nothing.
        assert!(s.on_extension(&json!({"type":"debugger_detached","tab_id":3,"reason":"x"})).unwrap().is_empty());
        // Setting auto again clears the note.
        s.configure(PolicyCall { tab: Some(3), policy: Policy::Auto, timeout_s: DEFAULT_TIMEOUT_S }).unwrap();
        assert!(s.policy_json(3).is_none());
    }
}
