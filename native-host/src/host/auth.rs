//! HTTP authentication challenges (401/407, Basic or Digest), a browser prompt the page
//! hook never sees: `manifest/auth.js` holds each one (`chrome.webRequest.onAuthRequired`,
//! `asyncBlocking`) and asks the host, which answers it like a dialog — a rule, the tab's
//! policy, the agent (held, with the watchdog) — with credentials or a cancel (the page then
//! gets the 401). While the pilot is off the browser keeps its own behaviour; the challenge
//! is only recorded.
//!
//! Credentials are secrets: auth rules live here, in memory only (never in the page's
//! config, the state file, a record or a log), and go when the rule does; the password
//! leaves the host only in the answer to the browser.

use super::held::PromptOutcome;
use super::protocol::{AuthChallenge, AuthDone, AuthResult, ToBrowser};
use super::record::{self, DecidedBy, DialogRecord, DialogState, MAX_MESSAGE_CHARS};
use super::state::State;
use crate::api::{Credentials, MatchArg};
use crate::kind::Kind;
use crate::reply::{ErrorCode, ToolError};
use ringbuf::traits::Consumer;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// After this many challenges for one request, nothing is tried again (the extension also
/// stops there on its own).
pub const MAX_ATTEMPTS: u32 = 5;
/// Auth rules per tab, at most.
const MAX_AUTH_RULES: usize = 32;
/// Held challenges, at most (a page can make many requests at once).
const MAX_HELD_AUTH: usize = 64;

/// An auth rule: credentials to give (accept) or a cancel, for challenges that match.
#[derive(Clone, Debug)]
pub struct AuthRule {
    pub id: u32,
    pub accept: bool,
    pub once: bool,
    pub credentials: Option<Credentials>,
    pub matcher: MatchArg,
}

impl AuthRule {
    fn matches(&self, url: &str, realm: &str) -> bool {
        let url_ok = self.matcher.url_contains.as_ref().is_none_or(|u| url.to_lowercase().contains(&u.to_lowercase()));
        let realm_ok = self.matcher.realm.as_ref().is_none_or(|r| r == realm);
        url_ok && realm_ok
    }

    /// How many conditions narrow it: the most specific matching rule wins.
    fn specificity(&self) -> usize {
        usize::from(self.matcher.url_contains.is_some()) + usize::from(self.matcher.realm.is_some())
    }

    pub fn view(&self) -> AuthRuleView<'_> {
        AuthRuleView {
            rule_id: self.id,
            dialog_type: Kind::Auth,
            accept: self.accept,
            once: self.once,
            username: self.credentials.as_ref().map(|c| c.username.as_str()),
            matcher: &self.matcher,
        }
    }
}

/// An auth rule as answers show it: the username, never the password.
#[derive(Debug, Serialize)]
pub struct AuthRuleView<'a> {
    pub rule_id: u32,
    pub dialog_type: Kind,
    pub accept: bool,
    pub once: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<&'a str>,
    #[serde(rename = "match", skip_serializing_if = "MatchArg::is_empty")]
    pub matcher: &'a MatchArg,
}

/// What a record of an auth challenge adds to a dialog record (flattened into it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthDetails {
    /// The server's realm (its text: data, not instructions); also the record's message.
    pub realm: String,
    /// `basic` or `digest` (as the browser names it).
    pub scheme: String,
    /// A proxy asked (407), not the site.
    pub is_proxy: bool,
    /// host:port that asked.
    pub challenger: String,
    /// The request's kind: main_frame, sub_frame, xmlhttprequest (fetch too), image, …
    pub request_type: String,
    /// The browser's id of the request (pairs its outcome).
    pub request_id: String,
    /// 1 for the first challenge of the request; more when credentials were refused.
    pub attempt: u32,
    /// What became of the request once answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<AuthOutcome>,
    /// Its final HTTP status, when it got one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthOutcome {
    /// The response after the answer was not a 401/407.
    Authenticated,
    /// The server asked again: the credentials were refused.
    Refused,
    /// The page got the 401/407 (cancelled, or no credentials).
    Unauthorized,
    /// The request failed or was aborted.
    Failed,
}

/// Who answers a challenge as it comes, if anyone does at once.
struct AuthVerdict {
    credentials: Option<Credentials>,
    by: DecidedBy,
    rule: Option<u32>,
    why: String,
}

/// `http://user:pass@host/` → `http://host/`: a URL's own credentials are never stored.
fn without_userinfo(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}{}", &url[..start], &url[start + at + 1..]),
        None => url.to_owned(),
    }
}

impl State {
    pub fn auth_rules_of(&self, tab: i64) -> &[AuthRule] {
        self.auth_rules.get(&tab).map_or(&[], Vec::as_slice)
    }

    /// A new auth rule; one with the same match replaces the old.
    pub fn add_auth_rule(
        &mut self,
        tab: i64,
        accept: bool,
        once: bool,
        credentials: Option<Credentials>,
        matcher: MatchArg,
    ) -> Result<AuthRule, ToolError> {
        let rules = self.auth_rules.entry(tab).or_default();
        rules.retain(|r| r.matcher != matcher);
        if rules.len() >= MAX_AUTH_RULES {
            return Err(ToolError::new(
                ErrorCode::TooManyRules,
                format!("a tab holds at most {MAX_AUTH_RULES} auth rules; clear some first"),
            ));
        }
        let rule = AuthRule { id: self.next_rule_id, accept, once, credentials, matcher };
        self.next_rule_id += 1;
        rules.push(rule.clone());
        Ok(rule)
    }

    pub fn clear_auth_rules(&mut self, tab: i64) -> usize {
        self.auth_rules.remove(&tab).map_or(0, |r| r.len())
    }

    /// The extension holds a challenge (or, pilot off, saw the browser take it).
    pub(super) fn on_auth_required(&mut self, m: AuthChallenge) -> Result<Vec<ToBrowser>, String> {
        if !m.native && self.auth_pos(m.tab_id, m.challenge).is_some() {
            return Err(format!("auth challenge {} reported twice", m.challenge));
        }
        if !m.native && self.held.len() >= MAX_HELD_AUTH {
            return Err("too many held auth challenges".into());
        }
        let url = without_userinfo(&m.url);
        let (realm, _) = record::clip(&m.realm, MAX_MESSAGE_CHARS);
        let (clean_realm, redacted) = self.redactor.apply(&realm);
        let attempt = m.attempt.max(1);
        if attempt > 1 {
            self.auth_outcome(&m.request_id, AuthOutcome::Refused, None);
        }
        let tab = self.policy_of(m.tab_id);
        let verdict =
            if m.native { None } else { Some(self.auth_verdict(m.tab_id, &url, &m.realm, attempt, tab.policy)) };
        let waits = verdict.as_ref().is_some_and(|v| v.by == DecidedBy::Agent);
        let id = self.next_id();
        let page_url = self.tab(m.tab_id).map(|t| t.url.clone()).unwrap_or_default();
        let (by, explanation) = match &verdict {
            None => (
                DecidedBy::PilotOff,
                "AI Web Pilot is off: the browser handles the HTTP auth challenge itself (a human may be asked); a \
human must switch the pilot on in the Unmodal popup"
                    .to_string(),
            ),
            Some(v) => (v.by, v.why.clone()),
        };
        let accepted = verdict.as_ref().filter(|_| !waits).map(|v| v.credentials.is_some());
        let record = DialogRecord {
            id,
            kind: Kind::Auth,
            message: clean_realm.clone(),
            message_truncated: m.realm.chars().count() > MAX_MESSAGE_CHARS,
            default_text: None,
            state: if accepted.is_some() { DialogState::Closed } else { DialogState::Open },
            accepted,
            response_text: None,
            redacted,
            decided_by: by,
            closed_by: accepted.map(|_| by),
            rule_id: verdict.as_ref().and_then(|v| v.rule),
            rules_loaded: true,
            would_show: None,
            explanation,
            url,
            page_url,
            tab_id: m.tab_id,
            frame_id: Some(m.frame_id),
            timestamp: record::now_rfc3339(),
            key: None,
            auth: Some(AuthDetails {
                realm: clean_realm,
                scheme: record::clip(&m.scheme.to_lowercase(), 32).0,
                is_proxy: m.is_proxy,
                challenger: record::clip(&format!("{}:{}", m.challenger.host, m.challenger.port), 300).0,
                request_type: record::clip(&m.request_type, 40).0,
                request_id: record::clip(&m.request_id, 40).0,
                attempt,
                outcome: None,
                status_code: None,
            }),
            permission: None,
            chooser: None,
        };
        self.logs.dialog(&record);
        let mut out = vec![ToBrowser::recorded(&record)];
        let Some(v) = verdict else {
            // Pilot off: the browser's own prompt; pending until the request ends.
            self.remember(record);
            self.pending.push_back(id);
            self.trim_pending();
            return Ok(out);
        };
        if waits {
            let wait_ms = self.hold_prompt(record, m.challenge, tab.timeout_s);
            out.push(ToBrowser::AuthHold { tab_id: m.tab_id, challenge: m.challenge, wait_ms });
            return Ok(out);
        }
        out.push(ToBrowser::AuthAnswer { tab_id: m.tab_id, challenge: m.challenge, credentials: v.credentials });
        if let Some(rule) = v.rule {
            self.spend_auth_rule(m.tab_id, rule);
        }
        self.settle_prompt(record);
        Ok(out)
    }

    /// The tab's auth rules first (not for a challenge that came again: those credentials
    /// were just refused), then its policy.
    fn auth_verdict(&self, tab: i64, url: &str, realm: &str, attempt: u32, policy: Policy) -> AuthVerdict {
        let again = attempt > 1;
        if attempt > MAX_ATTEMPTS {
            return AuthVerdict {
                credentials: None,
                by: DecidedBy::DefaultPolicy,
                rule: None,
                why: format!(
                    "HTTP auth cancelled: the server refused {MAX_ATTEMPTS} answers for this request; the page gets the 401"
                ),
            };
        }
        if !again {
            let best = self
                .auth_rules_of(tab)
                .iter()
                .enumerate()
                .filter(|(_, r)| r.matches(url, realm))
                .max_by_key(|(i, r)| (r.specificity(), *i))
                .map(|(_, r)| r);
            if let Some(r) = best {
                let why = if r.accept {
                    format!("HTTP auth answered with credentials: auth {} matched", describe(r))
                } else {
                    format!("HTTP auth cancelled: auth {} matched (it cancels); the page gets the 401", describe(r))
                };
                return AuthVerdict { credentials: r.credentials.clone(), by: DecidedBy::Rule, rule: Some(r.id), why };
            }
        }
        let refused = if again { "the credentials given were refused, so " } else { "" };
        let (by, why) = match policy {
            Policy::MustRespond => (
                DecidedBy::Agent,
                format!(
                    "HTTP auth held for the agent (policy must_respond): {refused}answer with interact \
{{action:\"handle_dialog\", dialog_id, accept:true, username, password}} or accept:false to cancel"
                ),
            ),
            Policy::Auto if again => (
                DecidedBy::DefaultPolicy,
                "HTTP auth cancelled: the credentials given were refused and are not tried again; the page gets the \
401"
                .to_string(),
            ),
            Policy::Auto => (
                DecidedBy::DefaultPolicy,
                "HTTP auth cancelled by the default policy: no auth rule matched; the page gets the 401 (set up \
dialog_type \"auth\" with username and password to log in)"
                    .to_string(),
            ),
            Policy::AutoAccept => (
                DecidedBy::Policy,
                format!(
                    "HTTP auth cancelled: {refused}the auto_accept policy has no credentials to give (only an auth \
rule has); the page gets the 401"
                ),
            ),
            Policy::AutoDismiss => (
                DecidedBy::Policy,
                "HTTP auth cancelled by the tab's auto_dismiss policy; the page gets the 401".into(),
            ),
        };
        AuthVerdict { credentials: None, by, rule: None, why }
    }

    fn spend_auth_rule(&mut self, tab: i64, rule: u32) {
        if let Some(rules) = self.auth_rules.get_mut(&tab) {
            rules.retain(|r| !(r.id == rule && r.once));
        }
    }

    pub(super) fn auth_pos(&self, tab: i64, challenge: u64) -> Option<usize> {
        self.held.iter().position(|h| h.record.kind == Kind::Auth && h.record.tab_id == tab && h.hold == challenge)
    }

    /// The agent's credentials for a held challenge.
    pub(super) fn authenticate(&mut self, id: u64, credentials: Credentials) -> Result<ToBrowser, ToolError> {
        let Some(h) = self.held.iter_mut().find(|h| h.record.id == id) else {
            return Err(ToolError::new(ErrorCode::DialogNotFound, format!("Dialog {id} is not open.")));
        };
        if h.record.kind != Kind::Auth {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "Dialog {id} is a {}; username and password answer only an auth challenge (use accept and text).",
                    h.record.kind.as_str()
                ),
            ));
        }
        if h.closing.is_some() {
            return Err(ToolError::new(ErrorCode::DialogNotFound, format!("Dialog {id} is being answered already.")));
        }
        h.closing = Some(DecidedBy::Agent);
        h.answer_error = None;
        Ok(ToBrowser::AuthAnswer { tab_id: h.record.tab_id, challenge: h.hold, credentials: Some(credentials) })
    }

    /// The extension applied an answer (or could not: the request was gone).
    pub(super) fn on_auth_result(&mut self, m: &AuthResult) {
        let Some(pos) = self.auth_pos(m.tab_id, m.challenge) else { return };
        let outcome = PromptOutcome { applied: m.ok, expired: m.expired, accepted: m.credentials };
        self.close_prompt(
            pos,
            outcome,
            "The request ended before the answer reached it.",
            "The extension cancelled it: no answer came from the host in time.",
        );
    }

    /// The request of a challenge ended: what the page got.
    pub(super) fn on_auth_done(&mut self, m: &AuthDone) {
        // Still held: the request went away first (navigation, closed tab).
        if let Some(pos) = self.held.iter().position(|h| {
            h.record.auth.as_ref().is_some_and(|a| a.request_id == m.request_id) && h.record.tab_id == m.tab_id
        }) {
            let challenge = self.held[pos].hold;
            self.on_auth_result(&AuthResult {
                tab_id: m.tab_id,
                challenge,
                ok: false,
                credentials: false,
                expired: false,
                error: m.error.clone(),
            });
        }
        let outcome = match (m.status_code, &m.error) {
            (Some(401 | 407), _) => AuthOutcome::Unauthorized,
            (Some(_), _) => AuthOutcome::Authenticated,
            (None, _) => AuthOutcome::Failed,
        };
        self.auth_outcome(&m.request_id, outcome, m.status_code);
    }

    /// Notes what became of the newest record of `request_id`; a challenge the browser
    /// handled itself (pilot off) closes here.
    fn auth_outcome(&mut self, request_id: &str, outcome: AuthOutcome, status: Option<u16>) {
        let Some(rec) = self
            .history
            .iter_mut()
            .rev()
            .find(|r| r.auth.as_ref().is_some_and(|a| a.request_id == request_id && a.outcome.is_none()))
        else {
            return;
        };
        if let Some(a) = rec.auth.as_mut() {
            a.outcome = Some(outcome);
            a.status_code = status;
        }
        if rec.is_open() {
            rec.state = DialogState::Closed;
            rec.closed_by = Some(DecidedBy::Remote);
            rec.accepted = match outcome {
                AuthOutcome::Authenticated => Some(true),
                AuthOutcome::Unauthorized => Some(false),
                AuthOutcome::Refused | AuthOutcome::Failed => None,
            };
            let id = rec.id;
            self.pending.retain(|&p| p != id);
        }
    }
}

fn describe(r: &AuthRule) -> String {
    let mut d = format!("rule {}", r.id);
    if let Some(u) = &r.matcher.url_contains {
        d += &format!(" (URL contains {u:?})");
    }
    if let Some(realm) = &r.matcher.realm {
        d += &format!(" (realm {realm:?})");
    }
    d
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::{DialogCall, PolicyCall, Secret};
    use serde_json::{Value, json};

    const PASSWORD: &str = "correct-horse-battery-staple";

    fn state(policy: Policy) -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        s.configure(PolicyCall { tab: Some(3), policy, timeout_s: 5 }).unwrap();
        s
    }

    fn creds() -> Credentials {
        Credentials { username: "ada".into(), password: Secret::new(PASSWORD.into()) }
    }

    fn challenge(s: &mut State, n: u64, request: &str, attempt: u32) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"auth_required","tab_id":3,"challenge":n,"request_id":request,"url":"http://u:p@a/admin",
                "frame_id":0,"request_type":"main_frame","realm":"Admin area","scheme":"basic","is_proxy":false,
                "challenger":{"host":"a","port":80},"attempt":attempt}),
            )
            .unwrap(),
        )
    }

    fn setup(s: &mut State, accept: bool, matcher: MatchArg) -> Value {
        let credentials = accept.then(creds);
        s.interact(DialogCall::AuthSetup { tab: None, accept, once: true, credentials, matcher }).unwrap().value
    }

    #[test]
    fn a_rule_answers_with_credentials_once_and_never_shows_the_password() {
        let mut s = state(Policy::Auto);
        let v = setup(&mut s, true, MatchArg { realm: Some("Admin area".into()), ..MatchArg::default() });
        assert_eq!((v["dialog_type"].as_str(), v["username"].as_str()), (Some("auth"), Some("ada")));
        assert_eq!(v["auto_responses"][0]["dialog_type"], "auth");
        assert_eq!(v["rules_in_force"], true);
        let out = challenge(&mut s, 1, "r1", 1);
        assert_eq!(
            out[1],
            json!({"type":"auth_answer","tab_id":3,"challenge":1,"credentials":{"username":"ada","password":PASSWORD}})
        );
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Rule, Some(DecidedBy::Rule), Some(true)));
        assert_eq!(rec.url, "http://a/admin", "a URL's own credentials are not kept");
        assert!(s.auth_rules_of(3).is_empty(), "a once-rule is spent");
        // The next challenge gets the default: cancel.
        let out = challenge(&mut s, 2, "r2", 1);
        assert_eq!(out[1], json!({"type":"auth_answer","tab_id":3,"challenge":2}));
        let everything = [
            serde_json::to_string(&s.snapshot()).unwrap(),
            serde_json::to_string(&s.logs.all()).unwrap(),
            v.to_string(),
            s.observe(&crate::api::ObserveArgs { what: crate::api::ObserveWhat::Dialogs, tab_id: None })
                .unwrap()
                .to_string(),
            format!("{:?}", s.auth_rules),
        ]
        .concat();
        assert!(!everything.contains(PASSWORD));
    }

    #[test]
    fn refused_credentials_are_not_tried_again() {
        let mut s = state(Policy::Auto);
        s.add_auth_rule(3, true, false, Some(creds()), MatchArg::default()).unwrap();
        let out = challenge(&mut s, 1, "r1", 1);
        assert!(out[1]["credentials"].is_object());
        let out = challenge(&mut s, 2, "r1", 2);
        assert_eq!(out[1], json!({"type":"auth_answer","tab_id":3,"challenge":2}), "cancelled the second time");
        let recs: Vec<_> = s.history.iter().collect();
        assert_eq!(recs[0].auth.as_ref().unwrap().outcome, Some(AuthOutcome::Refused));
        assert!(recs[1].explanation.contains("refused"), "{}", recs[1].explanation);
        feed(&mut s, json!({"type":"auth_done","tab_id":3,"request_id":"r1","status_code":401})).unwrap();
        assert_eq!(s.history.iter().last().unwrap().auth.as_ref().unwrap().outcome, Some(AuthOutcome::Unauthorized));
    }

    #[test]
    fn must_respond_holds_until_the_agent_gives_credentials() {
        let mut s = state(Policy::MustRespond);
        let out = challenge(&mut s, 7, "r1", 1);
        assert_eq!(out[1], json!({"type":"auth_hold","tab_id":3,"challenge":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!((note.dialogs[0].kind, note.dialogs[0].message.as_str()), (Kind::Auth, "Admin area"));
        let id = note.dialogs[0].dialog_id;
        // accept without credentials is refused and changes nothing.
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(s.blocking_note().is_some());
        let done = s.interact(DialogCall::Authenticate { tab: None, dialog_id: None, credentials: creds() }).unwrap();
        assert_eq!(done.answering, Some(id));
        assert_eq!(to_json(&done.msgs)[0]["credentials"]["username"], "ada");
        assert!(s.blocking_note().is_none());
        feed(&mut s, json!({"type":"auth_result","tab_id":3,"challenge":7,"ok":true,"credentials":true})).unwrap();
        let v = s.answered(id).unwrap();
        assert_eq!(v["agent_answer_applied"], true);
        assert_eq!((v["dialog"]["type"].as_str(), v["dialog"]["accepted"].as_bool()), (Some("auth"), Some(true)));
        feed(&mut s, json!({"type":"auth_done","tab_id":3,"request_id":"r1","status_code":200})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(rec.auth.as_ref().unwrap().outcome, Some(AuthOutcome::Authenticated));
        assert!(!v.to_string().contains(PASSWORD));
    }

    #[test]
    fn the_watchdog_cancels_a_held_challenge() {
        let mut s = state(Policy::MustRespond);
        challenge(&mut s, 1, "r1", 1);
        let id = s.held[0].record.id;
        assert_eq!(s.armed, vec![(id, std::time::Duration::from_secs(5))]);
        assert_eq!(to_json(&s.watchdog(id)), vec![json!({"type":"auth_answer","tab_id":3,"challenge":1})]);
        feed(&mut s, json!({"type":"auth_result","tab_id":3,"challenge":1,"ok":true,"credentials":false})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Watchdog), Some(false)));
    }

    #[test]
    fn auto_accept_has_no_credentials_and_says_so() {
        let mut s = state(Policy::AutoAccept);
        let out = challenge(&mut s, 1, "r1", 1);
        assert_eq!(out[1], json!({"type":"auth_answer","tab_id":3,"challenge":1}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!(rec.decided_by, DecidedBy::Policy);
        assert!(rec.explanation.contains("no credentials"), "{}", rec.explanation);
    }

    #[test]
    fn pilot_off_is_recorded_and_closed_by_the_requests_end() {
        let mut s = state(Policy::Auto);
        let out = feed(
            &mut s,
            json!({"type":"auth_required","tab_id":3,"challenge":1,"request_id":"r9","url":"http://a/","realm":"R",
            "scheme":"digest","native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser does");
        let id = s.pending[0];
        assert!(s.record(id).unwrap().is_open());
        feed(&mut s, json!({"type":"auth_done","tab_id":3,"request_id":"r9","status_code":401})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted),
            (DecidedBy::PilotOff, Some(DecidedBy::Remote), Some(false))
        );
        assert!(s.pending.is_empty());
    }

    #[test]
    fn the_most_specific_rule_wins_and_clear_all_removes_auth_rules() {
        let mut s = state(Policy::Auto);
        s.add_auth_rule(3, false, false, None, MatchArg::default()).unwrap();
        let url = MatchArg { url_contains: Some("/ADMIN".into()), ..MatchArg::default() };
        let r = s.add_auth_rule(3, true, false, Some(creds()), url).unwrap();
        challenge(&mut s, 1, "r1", 1);
        assert_eq!(s.history.iter().last().unwrap().rule_id, Some(r.id));
        let v = s.interact(DialogCall::Clear { tab: None, target: unmodal_engine::RuleTarget::All }).unwrap().value;
        assert_eq!(v["removed"], 2);
        assert!(s.auth_rules_of(3).is_empty());
    }

    #[test]
    fn userinfo_is_cut_from_urls() {
        assert_eq!(without_userinfo("https://u:p@h:8/x@y"), "https://h:8/x@y");
        assert_eq!(without_userinfo("http://h/a"), "http://h/a");
        assert_eq!(without_userinfo("nonsense"), "nonsense");
    }
}
