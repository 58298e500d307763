//! Permission prompts (camera, microphone, notifications, geolocation, clipboard read). No
//! browser event tells of them, so the page hook (`manifest/inject/45-permissions.js`)
//! holds each call that would prompt and asks, through `content.js`, the service worker
//! (`manifest/permissions.js`), which asks the host. The host answers like a dialog — a
//! rule, the tab's policy, the agent (held, with the watchdog) — with grant or deny; the
//! worker sets the browser's own content setting for the origin to `allow` or `block`, and
//! only then does the hook make the real call. So a granted call really works, a denied one
//! fails exactly as the browser fails it, and `navigator.permissions.query` tells the truth.
//!
//! Without a rule, an origin whose setting is no longer `ask` (granted or blocked before)
//! gets no prompt from the browser either: the call goes to the browser as it is, unrecorded.
//! Pilot off: the browser's own behaviour, recorded. Rules live in memory, like auth rules.

use super::held::PromptOutcome;
use super::protocol::{PermissionRequest, PermissionResult, ToBrowser};
use super::record::{self, DecidedBy, DialogRecord, DialogState};
use super::state::State;
use crate::api::{MatchArg, PermissionName};
use crate::kind::Kind;
use crate::reply::{ErrorCode, ToolError};
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

const MAX_PERMISSION_RULES: usize = 32;
/// Held requests, at most (a page can ask many times at once).
const MAX_HELD_PERMISSIONS: usize = 64;

/// What the worker does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    /// Set `allow`, then let the call through.
    Grant,
    /// Set `block`, then let the call through (the browser refuses it).
    Deny,
    /// Let the call through untouched: the browser already knows the answer.
    Native,
}

#[derive(Clone, Debug)]
pub struct PermissionRule {
    pub id: u32,
    pub accept: bool,
    pub once: bool,
    /// None: every permission.
    pub permission: Option<PermissionName>,
    pub matcher: MatchArg,
}

impl PermissionRule {
    fn matches(&self, names: &[PermissionName], url: &str) -> bool {
        let name_ok = self.permission.is_none_or(|p| names.contains(&p));
        let url_ok = self.matcher.url_contains.as_ref().is_none_or(|u| url.to_lowercase().contains(&u.to_lowercase()));
        name_ok && url_ok
    }

    fn specificity(&self) -> usize {
        usize::from(self.permission.is_some()) + usize::from(self.matcher.url_contains.is_some())
    }

    pub fn view(&self) -> PermissionRuleView<'_> {
        PermissionRuleView {
            rule_id: self.id,
            dialog_type: Kind::Permission,
            accept: self.accept,
            once: self.once,
            permission: self.permission,
            matcher: &self.matcher,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PermissionRuleView<'a> {
    pub rule_id: u32,
    pub dialog_type: Kind,
    pub accept: bool,
    pub once: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionName>,
    #[serde(rename = "match", skip_serializing_if = "MatchArg::is_empty")]
    pub matcher: &'a MatchArg,
}

/// What a permission record adds to a dialog record (flattened into it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDetails {
    /// What the call asks for (getUserMedia with audio and video asks for two).
    pub permissions: Vec<PermissionName>,
    /// The page's call: getUserMedia, requestPermission, getCurrentPosition, …
    pub api: String,
}

struct Verdict {
    decision: PermissionDecision,
    by: DecidedBy,
    rule: Option<u32>,
    why: String,
}

impl State {
    pub fn permission_rules_of(&self, tab: i64) -> &[PermissionRule] {
        self.permission_rules.get(&tab).map_or(&[], Vec::as_slice)
    }

    /// A new permission rule; one for the same permission and match replaces the old.
    pub fn add_permission_rule(
        &mut self,
        tab: i64,
        accept: bool,
        once: bool,
        permission: Option<PermissionName>,
        matcher: MatchArg,
    ) -> Result<PermissionRule, ToolError> {
        let rules = self.permission_rules.entry(tab).or_default();
        rules.retain(|r| !(r.matcher == matcher && r.permission == permission));
        if rules.len() >= MAX_PERMISSION_RULES {
            return Err(ToolError::new(
                ErrorCode::TooManyRules,
                format!("a tab holds at most {MAX_PERMISSION_RULES} permission rules; clear some first"),
            ));
        }
        let rule = PermissionRule { id: self.next_rule_id, accept, once, permission, matcher };
        self.next_rule_id += 1;
        rules.push(rule.clone());
        Ok(rule)
    }

    pub fn clear_permission_rules(&mut self, tab: i64) -> usize {
        self.permission_rules.remove(&tab).map_or(0, |r| r.len())
    }

    pub(super) fn permission_pos(&self, tab: i64, request: u64) -> Option<usize> {
        self.held.iter().position(|h| h.record.kind == Kind::Permission && h.record.tab_id == tab && h.hold == request)
    }

    /// A page asks for a permission (or, pilot off, the browser got the call).
    pub(super) fn on_permission_request(&mut self, m: PermissionRequest) -> Result<Vec<ToBrowser>, String> {
        let names: Vec<PermissionName> = m.permissions.iter().filter_map(|p| PermissionName::parse(p)).collect();
        if names.is_empty() || names.len() != m.permissions.len() || names.len() > PermissionName::ALL.len() {
            return Err("a permission request names no known permission".into());
        }
        if !m.native && self.permission_pos(m.tab_id, m.request).is_some() {
            return Err(format!("permission request {} reported twice", m.request));
        }
        let answer = |decision| ToBrowser::PermissionAnswer { tab_id: m.tab_id, request: m.request, decision };
        let tab = self.policy_of(m.tab_id);
        let verdict = if m.native { None } else { Some(self.permission_verdict(m.tab_id, &names, &m.url, tab.policy)) };
        // No rule, and the browser would not prompt: its stored answer stands.
        if let Some(v) = &verdict
            && v.rule.is_none()
            && (m.stored == "allow" || m.stored == "block")
        {
            return Ok(vec![answer(PermissionDecision::Native)]);
        }
        let waits = verdict.as_ref().is_some_and(|v| v.by == DecidedBy::Agent);
        if waits && self.held.len() >= MAX_HELD_PERMISSIONS {
            return Ok(vec![answer(PermissionDecision::Deny)]);
        }
        let listed = names.iter().map(|n| n.as_str()).collect::<Vec<_>>().join(", ");
        let (by, explanation) = match &verdict {
            None => (
                DecidedBy::PilotOff,
                format!(
                    "AI Web Pilot is off: the browser answers the {listed} permission request itself (headless Chromium \
denies at once; a headful one asks a human); a person must switch the pilot on (`unmodal pilot on` in a terminal)"
                ),
            ),
            Some(v) => (v.by, v.why.clone()),
        };
        let accepted = match &verdict {
            Some(v) if !waits => Some(v.decision == PermissionDecision::Grant),
            _ => None,
        };
        let id = self.next_id();
        let record = DialogRecord {
            id,
            kind: Kind::Permission,
            message: listed,
            message_truncated: false,
            default_text: None,
            state: if waits { DialogState::Open } else { DialogState::Closed },
            accepted,
            response_text: None,
            redacted: Vec::new(),
            decided_by: by,
            closed_by: if waits {
                None
            } else if verdict.is_none() {
                Some(DecidedBy::Remote)
            } else {
                Some(by)
            },
            rule_id: verdict.as_ref().and_then(|v| v.rule),
            rules_loaded: true,
            would_show: None,
            explanation,
            url: record::clip(&m.url, 2048).0,
            page_url: self.tab(m.tab_id).map(|t| t.url.clone()).unwrap_or_default(),
            tab_id: m.tab_id,
            frame_id: Some(m.frame_id),
            timestamp: record::now_rfc3339(),
            key: None,
            auth: None,
            permission: Some(PermissionDetails { permissions: names, api: record::clip(&m.api, 40).0 }),
            chooser: None,
        };
        self.logs.dialog(&record);
        let mut out = vec![ToBrowser::recorded(&record)];
        let Some(v) = verdict else {
            self.remember(record);
            return Ok(out);
        };
        if waits {
            let wait_ms = self.hold_prompt(record, m.request, tab.timeout_s);
            out.push(ToBrowser::PermissionHold { tab_id: m.tab_id, request: m.request, wait_ms });
            return Ok(out);
        }
        out.push(answer(v.decision));
        if let Some(rule) = v.rule
            && let Some(rules) = self.permission_rules.get_mut(&m.tab_id)
        {
            rules.retain(|r| !(r.id == rule && r.once));
        }
        self.settle_prompt(record);
        Ok(out)
    }

    /// The tab's permission rules (the most specific wins), then its policy. Under `auto` the
    /// safe default is deny: nothing is granted that nobody chose, and nothing waits.
    fn permission_verdict(&self, tab: i64, names: &[PermissionName], url: &str, policy: Policy) -> Verdict {
        let best = self
            .permission_rules_of(tab)
            .iter()
            .enumerate()
            .filter(|(_, r)| r.matches(names, url))
            .max_by_key(|(i, r)| (r.specificity(), *i))
            .map(|(_, r)| r);
        if let Some(r) = best {
            let (decision, what) =
                if r.accept { (PermissionDecision::Grant, "granted") } else { (PermissionDecision::Deny, "denied") };
            return Verdict {
                decision,
                by: DecidedBy::Rule,
                rule: Some(r.id),
                why: format!("Permission {what}: permission rule {} matched", r.id),
            };
        }
        let (decision, by, why) = match policy {
            Policy::MustRespond => (
                PermissionDecision::Deny,
                DecidedBy::Agent,
                "Permission request held for the agent (policy must_respond): the page's call waits; answer with \
interact {action:\"handle_dialog\", dialog_id, accept} (true = grant, false = deny)"
                    .to_string(),
            ),
            Policy::Auto => (
                PermissionDecision::Deny,
                DecidedBy::DefaultPolicy,
                "Permission denied by the default policy: no permission rule matched (set up dialog_type \
\"permission\" with accept:true to grant)"
                    .to_string(),
            ),
            Policy::AutoAccept => (
                PermissionDecision::Grant,
                DecidedBy::Policy,
                "Permission granted by the tab's auto_accept policy".to_string(),
            ),
            Policy::AutoDismiss => (
                PermissionDecision::Deny,
                DecidedBy::Policy,
                "Permission denied by the tab's auto_dismiss policy".into(),
            ),
        };
        Verdict { decision, by, rule: None, why }
    }

    /// The agent's (or the watchdog's) answer to a held request.
    pub(super) fn answer_permission(&mut self, pos: usize, accept: bool, by: DecidedBy) -> ToBrowser {
        let h = &mut self.held[pos];
        h.closing = Some(by);
        h.answer_error = None;
        let decision = if accept { PermissionDecision::Grant } else { PermissionDecision::Deny };
        ToBrowser::PermissionAnswer { tab_id: h.record.tab_id, request: h.hold, decision }
    }

    /// The worker applied an answer to a held request (or gave up on it).
    pub(super) fn on_permission_result(&mut self, m: &PermissionResult) {
        let Some(pos) = self.permission_pos(m.tab_id, m.request) else {
            if let Some(e) = &m.error {
                tracing::warn!(tab = m.tab_id, request = m.request, error = %e, "a permission answer was not applied");
            }
            return;
        };
        let outcome = PromptOutcome { applied: m.ok, expired: m.expired, accepted: m.granted };
        self.close_prompt(
            pos,
            outcome,
            "The page was gone before the answer reached it.",
            "The extension denied it: no answer came from the host in time.",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::{DialogCall, PolicyCall};
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        s.configure(PolicyCall { tab: Some(3), policy, timeout_s: 5 }).unwrap();
        s
    }

    fn ask(s: &mut State, n: u64, names: &[&str], stored: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"permission_request","tab_id":3,"request":n,"frame_id":0,"url":"http://a/cam",
                "permissions":names,"api":"getUserMedia","stored":stored}),
            )
            .unwrap(),
        )
    }

    fn setup(s: &mut State, accept: bool, permission: Option<PermissionName>) -> Value {
        let call =
            DialogCall::PermissionSetup { tab: None, accept, once: true, permission, matcher: MatchArg::default() };
        s.interact(call).unwrap().value
    }

    #[test]
    fn a_rule_grants_once_then_the_default_denies() {
        let mut s = state(Policy::Auto);
        let v = setup(&mut s, true, Some(PermissionName::Camera));
        assert_eq!((v["dialog_type"].as_str(), v["permission"].as_str()), (Some("permission"), Some("camera")));
        assert_eq!(v["auto_responses"][0]["dialog_type"], "permission");
        let out = ask(&mut s, 1, &["camera", "microphone"], "ask");
        assert_eq!(out[1], json!({"type":"permission_answer","tab_id":3,"request":1,"decision":"grant"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Rule, Some(DecidedBy::Rule), Some(true)));
        assert_eq!(rec.message, "camera, microphone");
        assert!(s.permission_rules_of(3).is_empty(), "a once-rule is spent");
        let out = ask(&mut s, 2, &["camera"], "ask");
        assert_eq!(out[1]["decision"], "deny");
        let rec = s.history.iter().last().unwrap();
        assert_eq!(rec.decided_by, DecidedBy::DefaultPolicy);
        assert_eq!(s.pending.back(), Some(&rec.id), "waits for the agent's acknowledgement");
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["type"].as_str(), j["permissions"][0].as_str()), (Some("permission"), Some("camera")));
    }

    #[test]
    fn a_rule_for_another_permission_does_not_match_and_a_stored_answer_stands() {
        let mut s = state(Policy::Auto);
        setup(&mut s, true, Some(PermissionName::Notifications));
        let out = ask(&mut s, 1, &["geolocation"], "block");
        assert_eq!(out, vec![json!({"type":"permission_answer","tab_id":3,"request":1,"decision":"native"})]);
        assert_eq!(s.history.iter().count(), 0, "no prompt, no record");
        // A matching rule wins over what is stored.
        setup(&mut s, true, None);
        let out = ask(&mut s, 2, &["geolocation"], "block");
        assert_eq!(out[1]["decision"], "grant");
    }

    #[test]
    fn must_respond_holds_until_the_agent_answers_and_the_watchdog_denies() {
        let mut s = state(Policy::MustRespond);
        let out = ask(&mut s, 7, &["notifications"], "ask");
        assert_eq!(out[1], json!({"type":"permission_hold","tab_id":3,"request":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!((note.dialogs[0].kind, note.dialogs[0].message.as_str()), (Kind::Permission, "notifications"));
        let id = note.dialogs[0].dialog_id;
        let done = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap();
        assert_eq!(done.answering, Some(id));
        assert_eq!(to_json(&done.msgs)[0]["decision"], "grant");
        feed(&mut s, json!({"type":"permission_result","tab_id":3,"request":7,"ok":true,"granted":true})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted),
            (DecidedBy::Agent, Some(DecidedBy::Agent), Some(true))
        );

        ask(&mut s, 8, &["geolocation"], "ask");
        let id = s.held[0].record.id;
        assert_eq!(to_json(&s.watchdog(id))[0]["decision"], "deny");
        feed(&mut s, json!({"type":"permission_result","tab_id":3,"request":8,"ok":true,"granted":false})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Watchdog), Some(false)));
    }

    #[test]
    fn policies_and_pilot_off() {
        let mut s = state(Policy::AutoAccept);
        assert_eq!(ask(&mut s, 1, &["clipboard-read"], "ask")[1]["decision"], "grant");
        let mut s = state(Policy::AutoDismiss);
        assert_eq!(ask(&mut s, 1, &["clipboard-read"], "ask")[1]["decision"], "deny");
        let out = feed(
            &mut s,
            json!({"type":"permission_request","tab_id":3,"request":2,"url":"http://a/","permissions":["camera"],
            "api":"getUserMedia","native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser does");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::PilotOff, Some(DecidedBy::Remote), None));
    }

    #[test]
    fn rules_belong_to_their_tab() {
        let mut s = state(Policy::Auto);
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":4,"url":"http://a/"}]}))
            .unwrap();
        s.add_permission_rule(4, true, false, None, MatchArg::default()).unwrap();
        assert_eq!(ask(&mut s, 1, &["camera"], "ask")[1]["decision"], "deny", "tab 3 has no rule");
        let v = feed(
            &mut s,
            json!({"type":"permission_request","tab_id":4,"request":2,"url":"http://a/","permissions":["camera"],
            "api":"getUserMedia","stored":"ask"}),
        )
        .unwrap();
        assert_eq!(to_json(&v)[1]["decision"], "grant");
        // A closed tab's rules go with it.
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        assert!(s.permission_rules_of(4).is_empty());
    }

    #[test]
    fn unknown_names_are_refused_whole() {
        let mut s = state(Policy::Auto);
        let bad = json!({"type":"permission_request","tab_id":3,"request":1,"url":"http://a/","permissions":["usb"],
            "api":"x"});
        assert!(feed(&mut s, bad).is_err());
        assert_eq!(s.history.iter().count(), 0);
    }
}
