//! Per-tab dialog policies (`configure {action: "dialog_policy"}`): what answers a dialog no
//! rule matches, the extension's acknowledgement that a tab's config (and debugger session)
//! is in place, and the fallback to `auto` when the browser ends the session.

use super::explain;
use super::protocol::{ConfigAck, ToBrowser};
use super::record::{self, now_rfc3339};
use super::state::{Delivery, Fallback, State, TabPolicy};
use crate::api::PolicyCall;
use crate::reply::Answered;
use crate::reply::ToolError;
use serde::Serialize;
use unmodal_engine::Policy;

/// Said after a policy set while the pilot is off.
const POLICY_WAITS_FOR_PILOT: &str = "It is kept by Unmodal and takes effect once a person switches AI Web Pilot \
on (`unmodal pilot on`); until then the browser holds no policy and no dialog is held for the agent.";

/// How a tab's policy shows in answers (only when it is not the plain default).
#[derive(Clone, Debug, Serialize)]
pub struct PolicyView {
    pub policy: Policy,
    pub timeout_s: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The tab confirmed the newest config and, unless `auto`, has the debugger session the
    /// policy needs (false for a moment after a change, or while a new host takes over).
    pub in_force: bool,
}

/// `configure`'s answer.
#[derive(Debug, Serialize)]
pub struct PolicySet {
    pub status: &'static str,
    pub policy: Policy,
    pub timeout_s: u32,
    pub message: String,
    /// Set here only while the pilot is off (false: nothing goes to the browser); otherwise
    /// once the tab acknowledged it (`socket.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_in_force: Option<bool>,
}

impl State {
    pub fn policy_of(&self, tab: i64) -> TabPolicy {
        self.policies.get(&tab).cloned().unwrap_or_default()
    }

    /// Sets a tab's policy; the config message that follows carries it to the tab.
    pub fn configure(&mut self, call: PolicyCall) -> Result<(Answered, Vec<ToBrowser>), ToolError> {
        let tab = self.resolve_tab(call.tab)?.clone();
        let next = TabPolicy { policy: call.policy, timeout_s: call.timeout_s, fallback: None };
        if next == TabPolicy::default() {
            self.policies.remove(&tab.id);
        } else {
            self.policies.insert(tab.id, next);
        }
        let body = PolicySet {
            status: "configured",
            policy: call.policy,
            timeout_s: call.timeout_s,
            message: if self.pilot {
                explain::policy(call.policy, call.timeout_s)
            } else {
                format!("{} {POLICY_WAITS_FOR_PILOT}", explain::policy(call.policy, call.timeout_s))
            },
            policy_in_force: (!self.pilot).then_some(false),
        };
        let answer = self.answer(&body, &tab);
        Ok((answer, self.config_push(tab.id).into_iter().collect()))
    }

    /// The extension acknowledged a config revision: remember how far it got. A debugger
    /// session that could not start sends the tab back to `auto`.
    pub(super) fn on_config_ack(&mut self, ack: ConfigAck) -> Vec<ToBrowser> {
        let tab = ack.tab_id;
        let known = self.delivered.entry(tab).or_default();
        if ack.rev < known.rev {
            return Vec::new();
        }
        let error = ack.debugger.error.filter(|_| !ack.debugger.attached).map(|e| record::clip(&e, 500).0);
        *known = Delivery {
            rev: ack.rev,
            delivered: ack.delivered,
            debugger_attached: ack.debugger.attached,
            debugger_error: error.clone(),
        };
        match error {
            Some(e) => self.fall_back(tab, format!("the debugger session could not start ({e})")),
            None => Vec::new(),
        }
    }

    pub(super) fn on_detached(&mut self, tab: i64, reason: &str) -> Vec<ToBrowser> {
        if self.tab(tab).is_none() {
            return Vec::new();
        }
        self.fall_back(tab, explain::detach_reason(reason))
    }

    /// The browser ended the debugger session of `tab`, or it could not start: the tab goes
    /// back to `auto`, and every answer about the tab says why until the agent sets a policy.
    pub fn fall_back(&mut self, tab: i64, reason: String) -> Vec<ToBrowser> {
        let Some(p) = self.policies.get_mut(&tab) else { return Vec::new() };
        if p.policy == Policy::Auto {
            return Vec::new();
        }
        let from = p.policy;
        self.logs.note(
            tab,
            "dialog_policy",
            format!(
                "The tab fell back from {} to auto: {reason}. Set the policy again once that is resolved.",
                from.as_str()
            ),
        );
        p.fallback = Some(Fallback { from, reason, at: now_rfc3339() });
        p.policy = Policy::Auto;
        self.config_push(tab).into_iter().collect()
    }

    pub fn policy_view(&self, tab: i64) -> Option<PolicyView> {
        let p = self.policies.get(&tab)?;
        let sent = self.sent_rev.get(&tab).copied().unwrap_or(0);
        // Nothing of the agent's is in force while the pilot is off (the browser holds none of it).
        let in_force = self.pilot
            && self.delivery(tab, sent).is_some_and(|d| match p.policy {
                Policy::Auto => d.delivered,
                _ => d.debugger_attached,
            });
        Some(PolicyView {
            policy: p.policy,
            timeout_s: p.timeout_s,
            fallback: p.fallback.clone(),
            message: p.fallback.as_ref().map(|f| explain::fallback(f.from, &f.reason)),
            in_force,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::DEFAULT_TIMEOUT_S;
    use serde_json::json;

    fn state() -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        s
    }

    #[test]
    fn must_respond_travels_in_the_config_message() {
        let mut s = state();
        let (v, msgs) = s.configure(PolicyCall { tab: None, policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        assert_eq!((v["policy"].as_str(), v["timeout_s"].as_u64()), (Some("must_respond"), Some(30)));
        let m = &to_json(&msgs)[0];
        assert_eq!((m["config"].as_str(), m["debugger"].as_bool()), (Some("U1E1P1"), Some(true)));
        assert_eq!(v["dialog_policy"]["policy"], "must_respond");
    }

    #[test]
    fn a_detach_falls_back_to_auto_and_says_why() {
        let mut s = state();
        s.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 10 }).unwrap();
        let msgs =
            to_json(&feed(&mut s, json!({"type":"debugger_detached","tab_id":3,"reason":"canceled_by_user"})).unwrap());
        assert_eq!((msgs[0]["config"].as_str(), msgs[0]["debugger"].as_bool()), (Some("U1E1"), Some(false)));
        let p = serde_json::to_value(s.policy_view(3).unwrap()).unwrap();
        assert_eq!(p["policy"], "auto");
        assert_eq!(p["fallback"]["from"], "must_respond");
        assert!(p["message"].as_str().unwrap().contains("cancelled the debugging bar"), "{p}");
        // A second detach of a tab already on auto changes nothing.
        assert!(feed(&mut s, json!({"type":"debugger_detached","tab_id":3,"reason":"x"})).unwrap().is_empty());
        // Setting auto again clears the note.
        s.configure(PolicyCall { tab: Some(3), policy: Policy::Auto, timeout_s: DEFAULT_TIMEOUT_S }).unwrap();
        assert!(s.policy_view(3).is_none());
    }

    #[test]
    fn a_session_that_cannot_start_falls_back_and_old_acks_are_ignored() {
        let mut s = state();
        s.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 10 }).unwrap();
        let out = feed(
            &mut s,
            json!({"type":"config_ack","tab_id":3,"rev":1,"delivered":false,"debugger":{"attached":false,"error":"Cannot access a chrome:// URL"}}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "the tab's new config (auto) goes out");
        assert_eq!(s.policy_of(3).policy, Policy::Auto);
        assert_eq!(s.delivery(3, 1).unwrap().debugger_error.as_deref(), Some("Cannot access a chrome:// URL"));
        feed(&mut s, json!({"type":"config_ack","tab_id":3,"rev":2,"delivered":true})).unwrap();
        feed(&mut s, json!({"type":"config_ack","tab_id":3,"rev":1,"delivered":false})).unwrap();
        assert!(s.delivery(3, 2).unwrap().delivered, "an older revision's ack came late and changed nothing");
    }
}
