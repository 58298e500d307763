//! HTTP authentication challenges (401/407, Basic or Digest), a browser prompt the page
//! hook never sees: `manifest/auth.js` holds each one (`chrome.webRequest.onAuthRequired`,
//! `asyncBlocking`) and asks the host, which answers it like a dialog — a rule, the tab's
//! policy, the agent (held, with the watchdog) — with credentials or a cancel (the page then
//! gets the 401). While the pilot is off the browser keeps its own behaviour; the challenge
//! is only recorded.
//!
//! Credentials are secrets: auth rules live in the host's memory only (never in the page's
//! config, the state file, a record or a log), and go when the rule does; the password
//! leaves the host only in the answer to the browser. The prompt pipeline (`prompt.rs`)
//! does the rest; here is what is auth's own: matching by realm, refused credentials not
//! tried again, the attempt limit, and what became of the request.

use super::args::{self, Api, Given, Owned};
use super::rule::{Carry, CarryOf};
use super::{
    Carries, Described, EXPIRED_CANCELLED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words,
    configured, pilot_off, url_fits,
};
use crate::api::{self, Credentials, MatchArg, ParamError, Secret, bad};
use crate::host::protocol::Carried;
use crate::host::protocol::{PromptDecision, PromptResult, ToBrowser};
use crate::host::record::{self, DecidedBy, Details, DialogRecord, DialogState, MAX_MESSAGE_CHARS};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use ringbuf::traits::Consumer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("auth");

/// After this many challenges for one request, nothing is tried again: the one figure (the
/// extension asks the host every time).
pub const MAX_ATTEMPTS: u32 = 5;

/// `http://user:pass@host/` → `http://host/`: a URL's own credentials are never stored.
fn without_userinfo(url: &str) -> String {
    let Some(start) = url.find("://").map(|i| i + 3) else { return url.to_owned() };
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    match url[start..end].rfind('@') {
        Some(at) => format!("{}{}", &url[..start], &url[start + at + 1..]),
        None => url.to_owned(),
    }
}

/// Each policy's answer; `{refused}` is `REFUSED` after a challenge that came again.
const POLICIES: Policies = Policies {
    hold: "HTTP auth held for the agent (policy must_respond): {refused}answer with interact \
{action:\"handle_dialog\", dialog_id, accept:true, username, password} or accept:false to cancel",
    auto: Says::Refuse(
        "HTTP auth cancelled by the default policy: no auth rule matched; the page gets the 401 (set up dialog_type \
\"auth\" with username and password to log in)",
    ),
    auto_accept: Says::Refuse(
        "HTTP auth cancelled: {refused}the auto_accept policy has no credentials to give (only an auth rule has); the \
page gets the 401",
    ),
    auto_dismiss: Says::Refuse("HTTP auth cancelled by the tab's auto_dismiss policy; the page gets the 401"),
};
const REFUSED: &str = "the credentials given were refused, so ";

/// HTTP auth once recorded.
pub(super) struct Auth;

const WORDS: Words = Words {
    kind: KIND,
    group: "auth",
    closed: ("credentials given", "cancelled (the page gets the 401)"),
    expired: EXPIRED_CANCELLED,
};

/// HTTP auth: the longest username and password (UTF-16 units).
pub const MAX_USERNAME_UNITS: usize = 512;
pub const MAX_PASSWORD_UNITS: usize = 1024;

/// An auth rule: credentials to give, or none (cancel: the page gets the 401).
#[derive(Clone, PartialEq)]
pub(crate) struct AuthRule {
    pub credentials: Option<Credentials>,
    pub matcher: MatchArg,
}

crate::own_rule!(AuthRule, "Auth", KIND, accept: |r| r.credentials.is_some(), in_config: |_| false, show: [credentials]);

/// Its own fields of `interact`.
#[derive(Deserialize, JsonSchema)]
struct AuthFields {
    /// HTTP auth (dialog_type "auth"): the username to answer with, in a setup or in the
    /// answer to a held challenge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    username: Option<String>,
    /// HTTP auth: the password. Never stored on disk, logged or shown in any answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    password: Option<Secret>,
}

/// Its own match field.
#[derive(Deserialize, JsonSchema)]
struct AuthMatch {
    /// dialog_type "auth" only: only challenges whose realm is exactly this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    #[allow(dead_code)]
    realm: Option<String>,
}

static API: Api = Api {
    instructions: "HTTP auth (a 401 login) is dialog_type \"auth\": set it up with username and password, or under \
must_respond answer the held challenge with dialog_id, username and password (accept:false cancels; \
the page gets the 401); passwords are never shown or stored. ",
    description: "HTTP authentication (a 401/407 challenge the browser would ask a human about).",
    fields: &[
        Owned { name: "username", held: Some("auth challenge"), in_clear: true, late: false },
        Owned { name: "password", held: Some("auth challenge"), in_clear: true, late: false },
        // Checked last, after a prompt's own refusal of match.message_contains.
        Owned { name: "match.realm", held: None, in_clear: false, late: true },
    ],
    schema: args::schema_of::<AuthFields, AuthMatch>,
    read: args::read_of::<AuthFields, AuthMatch>,
    rule: auth_rule,
    answer: Some(auth_answer),
    paths: &[],
    own_dir: None,
};

/// Both halves of the credentials, within their limits.
fn credentials(g: &Given) -> Result<Credentials, ParamError> {
    let f: AuthFields = g.fields()?;
    let (Some(username), Some(password)) = (f.username.as_ref(), f.password.as_ref()) else {
        let missing = if f.username.is_none() { "username" } else { "password" };
        return Err(bad(missing, "HTTP auth needs both username and password"));
    };
    if username.encode_utf16().count() > MAX_USERNAME_UNITS {
        return Err(bad("username", format!("at most {MAX_USERNAME_UNITS} characters")));
    }
    if password.units() > MAX_PASSWORD_UNITS {
        return Err(bad("password", format!("at most {MAX_PASSWORD_UNITS} characters")));
    }
    Ok(Credentials { username: username.clone(), password: password.clone() })
}

fn auth_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.matcher();
    if matcher.message_contains.is_some() {
        return Err(bad("match.message_contains", "an auth challenge has no message; match url_contains or realm"));
    }
    api::match_texts(
        &[("match.url_contains", matcher.url_contains.as_ref()), ("match.realm", matcher.get("realm"))],
        "challenge",
    )?;
    g.no_text("an auth rule takes username and password, not text")?;
    let credentials = match g.accept() {
        true => Some(credentials(g)?),
        false if g.given("username") || g.given("password") => {
            return Err(bad("password", "a rule with accept: false cancels challenges; it takes no credentials"));
        }
        false => None,
    };
    Ok(RuleSpec::own(AuthRule { credentials, matcher }))
}

fn auth_answer(g: &Given) -> Result<Carry, ParamError> {
    if g.args.accept == Some(false) {
        return Err(bad("password", "accept: false cancels the challenge; send it without credentials"));
    }
    if g.args.text.is_some() {
        return Err(bad("text", "an auth challenge takes username and password, not text"));
    }
    Ok(Carry::new(Login(credentials(g)?)))
}

/// The login an accept carries to the worker.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Login(pub Credentials);

impl CarryOf for Login {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, _s: &mut State, _ids: (i64, u64, u64), accept: bool) -> Carried {
        let mut carried = Carried::default();
        if accept {
            carried.credentials = Some(self.0);
        }
        carried
    }
    crate::own_plumbing!(carry);
}

impl Spec for Auth {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<AuthAsk>(fields)
    }

    fn message(&self) -> Option<&'static str> {
        Some("auth_done")
    }

    fn on_message(&self, s: &mut State, fields: serde_json::Value) -> Result<Vec<ToBrowser>, serde_json::Error> {
        s.on_auth_done(&AuthDone::deserialize(fields)?);
        Ok(Vec::new())
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(AuthRule { credentials: Some(c), .. }) = rule.of() {
            v.insert("username".into(), c.username.clone().into());
        }
    }

    fn gone(&self, _settled: bool) -> &'static str {
        "The request ended before the answer reached it."
    }

    fn carries(&self) -> Option<Carries> {
        Some(Carries {
            only: "username and password answer only an auth challenge",
            none_held: "No HTTP auth challenge is held open for the agent (only the must_respond policy holds them; \
otherwise the request was already answered). To log in, set up a rule first: interact {action:\"handle_dialog\", \
setup:true, dialog_type:\"auth\", username, password}, then load the page again.",
        })
    }

    fn accept_refused(&self, held: &DialogRecord, carrying: bool) -> Option<String> {
        (!carrying).then(|| {
            format!(
                "Dialog {} is an HTTP auth challenge: accept it with username and password, or send accept: false to \
cancel it (the page gets the 401).",
                held.id
            )
        })
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let AuthRule { credentials, .. } = rule.of()?;
        let will =
            if credentials.is_some() { "log in with the username given" } else { "cancel it (the page gets the 401)" };
        Some(configured("HTTP auth challenge", will, once))
    }
}

impl AuthAsk {
    fn attempt(&self) -> u32 {
        self.attempt.max(1)
    }
}

impl PromptKind for AuthAsk {
    fn arrived(&self, s: &mut State) {
        if self.attempt() > 1 {
            s.auth_outcome(&self.request_id, AuthOutcome::Refused, None);
        }
    }

    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        let (realm, _) = record::clip(&self.realm, MAX_MESSAGE_CHARS);
        let (realm, redacted) = redactor.apply(&realm);
        Described {
            message: realm.clone(),
            truncated: self.realm.chars().count() > MAX_MESSAGE_CHARS,
            redacted,
            url: without_userinfo(url),
            details: Details::of(&AuthDetails {
                realm,
                scheme: record::clip(&self.scheme.to_lowercase(), 32).0,
                is_proxy: self.is_proxy,
                challenger: record::clip(&format!("{}:{}", self.challenger.host, self.challenger.port), 300).0,
                request_type: record::clip(&self.request_type, 40).0,
                request_id: record::clip(&self.request_id, 40).0,
                attempt: self.attempt(),
                outcome: None,
                status_code: None,
            }),
        }
    }

    /// Not for a challenge that came again: those credentials were just refused.
    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let AuthRule { matcher, .. } = rule.of()?;
        let realm = matcher.get("realm");
        let fits = self.attempt() == 1
            && url_fits(matcher.url_contains.as_ref(), url)
            && realm.is_none_or(|r| *r == self.realm);
        fits.then(|| usize::from(matcher.url_contains.is_some()) + usize::from(realm.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let Some(AuthRule { credentials, matcher }) = rule.of() else { unreachable!("fits() takes auth rules only") };
        let mut named = format!("rule {id}");
        if let Some(u) = &matcher.url_contains {
            named += &format!(" (URL contains {u:?})");
        }
        if let Some(realm) = matcher.get("realm") {
            named += &format!(" (realm {realm:?})");
        }
        let why = match credentials {
            Some(_) => format!("HTTP auth answered with credentials: auth {named} matched"),
            None => format!("HTTP auth cancelled: auth {named} matched (it cancels); the page gets the 401"),
        };
        let decision = if credentials.is_some() { PromptDecision::Accept } else { PromptDecision::Refuse };
        Verdict::rule(decision, id, why).carrying(credentials.clone().map_or(With::Nothing, |c| With::own(Login(c))))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let cancel = |by, why: String| Verdict::policy(PromptDecision::Refuse, by, why);
        if self.attempt() > MAX_ATTEMPTS {
            return cancel(
                DecidedBy::DefaultPolicy,
                format!(
                    "HTTP auth cancelled: the server refused {MAX_ATTEMPTS} answers for this request; the page gets the 401"
                ),
            );
        }
        let again = self.attempt() > 1;
        match policy {
            Policy::Auto if again => cancel(
                DecidedBy::DefaultPolicy,
                "HTTP auth cancelled: the credentials given were refused and are not tried again; the page gets the \
401"
                .into(),
            ),
            _ => POLICIES.verdict_with(policy, &[("{refused}", if again { REFUSED } else { "" })]),
        }
    }

    fn pilot_off(&self) -> String {
        pilot_off("the browser handles the HTTP auth challenge itself (a human may be asked)")
    }

    /// The browser's own login prompt stays until the request ends (`on_auth_done`).
    fn open_until_done(&self) -> bool {
        true
    }
}

/// An HTTP auth record's own fields.
fn auth(rec: &DialogRecord) -> Option<AuthDetails> {
    if rec.kind == KIND { rec.details.read() } else { None }
}

impl State {
    /// The request of a challenge ended: what the page got.
    pub(in crate::host) fn on_auth_done(&mut self, m: &AuthDone) {
        // Still held: the request went away first (navigation, closed tab).
        if let Some(h) = self
            .held
            .iter()
            .find(|h| h.record.tab_id == m.tab_id && auth(&h.record).is_some_and(|a| a.request_id == m.request_id))
        {
            let gone = PromptResult {
                kind: KIND,
                tab_id: m.tab_id,
                id: h.hold,
                ok: false,
                accepted: false,
                expired: false,
                settled: false,
                error: m.error.clone(),
            };
            self.on_prompt_result(&gone);
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
            .find(|r| auth(r).is_some_and(|a| a.request_id == request_id && a.outcome.is_none()))
        else {
            return;
        };
        rec.details.update(|a: &mut AuthDetails| {
            a.outcome = Some(outcome);
            a.status_code = status;
        });
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

#[derive(Debug, Deserialize)]
pub struct AuthAsk {
    pub request_id: String,
    #[serde(default)]
    pub request_type: String,
    #[serde(default)]
    pub realm: String,
    #[serde(default)]
    pub scheme: String,
    #[serde(default)]
    pub is_proxy: bool,
    #[serde(default)]
    pub challenger: Challenger,
    /// How many challenges this request has had (more than 1: credentials were refused).
    #[serde(default)]
    pub attempt: u32,
}

#[derive(Debug, Default, Deserialize)]
pub struct Challenger {
    #[serde(default)]
    pub host: String,
    #[serde(default)]
    pub port: u16,
}

/// An HTTP auth challenge: realm, scheme, proxy, what became of the request.
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

/// The request of an HTTP auth challenge ended: what the page got (`manifest/auth.js`).
#[derive(Debug, Deserialize)]
pub struct AuthDone {
    pub tab_id: i64,
    pub request_id: String,
    #[serde(default)]
    pub status_code: Option<u16>,
    #[serde(default)]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {

    fn call(v: serde_json::Value) -> Result<crate::host::kinds::DialogCall, crate::api::ParamError> {
        crate::call::interact(v).map(|c| c.call)
    }

    #[test]
    fn auth_calls_validate_and_name_what_is_wrong() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"ada",
            "password":"pw","once":false,"match":{"realm":"Staff","url_contains":"/admin"}}))
        .unwrap();
        let DialogCall::Setup { once: false, rule, .. } = &c else { panic!("{c:?}") };
        let Some(AuthRule { credentials: Some(c), matcher }) = rule.of() else { panic!("{c:?}") };
        assert_eq!((c.username.as_str(), c.password.expose()), ("ada", "pw"));
        assert_eq!(matcher.get("realm").map(String::as_str), Some("Staff"));
        assert!(!format!("{c:?}").contains("pw\""), "Debug withholds the password");
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","accept":false})),
            Ok(DialogCall::Setup { rule, .. }) if matches!(rule.of(), Some(AuthRule { credentials: None, .. }))
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogType::of(KIND) })
        );
        assert!(matches!(
            call(json!({"action":"handle_dialog","dialog_id":4,"username":"ada","password":"pw"})),
            Ok(DialogCall::Carrying { dialog_id: Some(4), with, .. }) if with.of::<Login>().is_some()
        ));
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"ada"})),
            "password"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","password":"pw"})),
            "username"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","username":"a","password":"b"})),
            "username"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"a","password":"b",
                "match":{"message_contains":"x"}})),
            "match.message_contains"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","match":{"realm":"x"}})),
            "match.realm"
        );
        assert_eq!(param(json!({"action":"handle_dialog","accept":false,"username":"a","password":"b"})), "password");
        let long = "x".repeat(MAX_PASSWORD_UNITS + 1);
        assert_eq!(param(json!({"action":"handle_dialog","username":"a","password":long})), "password");
        let err = crate::call::interact(json!({"action":"handle_dialog","password":918273645})).unwrap_err();
        assert_eq!(err.param, "password");
        assert!(!err.message.contains("918273645"), "{}", err.message);
    }

    use super::*;
    use crate::api::{Credentials, MatchArg, Secret};
    use crate::host::kinds::{Carry, DialogCall, DialogType};
    use crate::host::state::tests::{feed, to_json};
    use crate::reply::ErrorCode;
    use serde_json::{Value, json};

    const PASSWORD: &str = "correct-horse-battery-staple";

    fn state(policy: Policy) -> State {
        crate::host::state::tests::state_with(policy)
    }

    fn creds() -> Credentials {
        Credentials { username: "ada".into(), password: Secret::new(PASSWORD.into()) }
    }

    fn challenge(s: &mut State, n: u64, request: &str, attempt: u32) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"prompt_request","kind":"auth","tab_id":3,"id":n,"request_id":request,"url":"http://u:p@a/admin",
                "frame_id":0,"request_type":"main_frame","realm":"Admin area","scheme":"basic","is_proxy":false,
                "challenger":{"host":"a","port":80},"attempt":attempt}),
            )
            .unwrap(),
        )
    }

    fn setup(s: &mut State, accept: bool, matcher: MatchArg) -> Value {
        let credentials = accept.then(creds);
        s.interact(DialogCall::Setup { tab: None, once: true, rule: RuleSpec::own(AuthRule { credentials, matcher }) })
            .unwrap()
            .value
    }

    #[test]
    fn a_rule_answers_with_credentials_once_and_never_shows_the_password() {
        let mut s = state(Policy::Auto);
        let v = setup(&mut s, true, MatchArg::default().with("realm", "Admin area"));
        assert_eq!((v["dialog_type"].as_str(), v["username"].as_str()), (Some("auth"), Some("ada")));
        assert_eq!(v["auto_responses"][0]["dialog_type"], "auth");
        assert_eq!(v["rules_in_force"], true);
        let out = challenge(&mut s, 1, "r1", 1);
        assert_eq!(
            out[1],
            json!({"type":"prompt_answer","kind":"auth","tab_id":3,"id":1,"decision":"accept",
                "credentials":{"username":"ada","password":PASSWORD}})
        );
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Rule, Some(DecidedBy::Rule), Some(true)));
        assert_eq!(rec.url, "http://a/admin", "a URL's own credentials are not kept");
        assert!(s.rules_of(3).is_empty(), "a once-rule is spent");
        // The next challenge gets the default: cancel.
        let out = challenge(&mut s, 2, "r2", 1);
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"auth","tab_id":3,"id":2,"decision":"refuse"}));
        let everything = [
            serde_json::to_string(&s.snapshot()).unwrap(),
            serde_json::to_string(&s.logs.all()).unwrap(),
            v.to_string(),
            s.observe(&crate::api::ObserveArgs { what: crate::api::ObserveWhat::Dialogs, tab_id: None })
                .unwrap()
                .to_string(),
            format!("{:?}", s.rules),
        ]
        .concat();
        assert!(!everything.contains(PASSWORD));
    }

    #[test]
    fn refused_credentials_are_not_tried_again() {
        let mut s = state(Policy::Auto);
        s.add_rule(3, false, RuleSpec::own(AuthRule { credentials: Some(creds()), matcher: MatchArg::default() }))
            .unwrap();
        let out = challenge(&mut s, 1, "r1", 1);
        assert!(out[1]["credentials"].is_object());
        let out = challenge(&mut s, 2, "r1", 2);
        assert_eq!(out[1]["decision"], "refuse", "cancelled the second time");
        let recs: Vec<_> = s.history.iter().collect();
        assert_eq!(recs[0].details.read::<AuthDetails>().unwrap().outcome, Some(AuthOutcome::Refused));
        assert!(recs[1].explanation.contains("refused"), "{}", recs[1].explanation);
        feed(&mut s, json!({"type":"auth_done","tab_id":3,"request_id":"r1","status_code":401})).unwrap();
        assert_eq!(
            s.history.iter().last().unwrap().details.read::<AuthDetails>().unwrap().outcome,
            Some(AuthOutcome::Unauthorized)
        );
    }

    #[test]
    fn must_respond_holds_until_the_agent_gives_credentials() {
        let mut s = state(Policy::MustRespond);
        let out = challenge(&mut s, 7, "r1", 1);
        assert_eq!(out[1], json!({"type":"prompt_hold","kind":"auth","tab_id":3,"id":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!((note.dialogs[0].kind, note.dialogs[0].message.as_str()), (KIND, "Admin area"));
        let id = note.dialogs[0].dialog_id;
        // accept without credentials is refused and changes nothing.
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(s.blocking_note().is_some());
        let done =
            s.interact(DialogCall::Carrying { tab: None, dialog_id: None, with: Carry::new(Login(creds())) }).unwrap();
        assert_eq!(done.answering, Some(id));
        assert_eq!(to_json(&done.msgs)[0]["credentials"]["username"], "ada");
        assert!(s.blocking_note().is_none());
        feed(&mut s, json!({"type":"prompt_result","kind":"auth","tab_id":3,"id":7,"ok":true,"accepted":true}))
            .unwrap();
        let v = s.answered(id).unwrap();
        assert_eq!(v["agent_answer_applied"], true);
        assert_eq!((v["dialog"]["type"].as_str(), v["dialog"]["accepted"].as_bool()), (Some("auth"), Some(true)));
        feed(&mut s, json!({"type":"auth_done","tab_id":3,"request_id":"r1","status_code":200})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(rec.details.read::<AuthDetails>().unwrap().outcome, Some(AuthOutcome::Authenticated));
        assert!(!v.to_string().contains(PASSWORD));
    }

    #[test]
    fn the_watchdog_cancels_a_held_challenge() {
        let mut s = state(Policy::MustRespond);
        challenge(&mut s, 1, "r1", 1);
        let id = s.held[0].record.id;
        assert_eq!(s.armed, vec![(id, std::time::Duration::from_secs(5))]);
        assert_eq!(
            to_json(&s.watchdog(id)),
            vec![json!({"type":"prompt_answer","kind":"auth","tab_id":3,"id":1,"decision":"refuse"})]
        );
        feed(&mut s, json!({"type":"prompt_result","kind":"auth","tab_id":3,"id":1,"ok":true,"accepted":false}))
            .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Watchdog), Some(false)));
    }

    #[test]
    fn auto_accept_has_no_credentials_and_says_so() {
        let mut s = state(Policy::AutoAccept);
        let out = challenge(&mut s, 1, "r1", 1);
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"auth","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!(rec.decided_by, DecidedBy::Policy);
        assert!(rec.explanation.contains("no credentials"), "{}", rec.explanation);
    }

    #[test]
    fn pilot_off_is_recorded_and_closed_by_the_requests_end() {
        let mut s = state(Policy::Auto);
        let out = feed(
            &mut s,
            json!({"type":"prompt_request","kind":"auth","tab_id":3,"id":1,"request_id":"r9","url":"http://a/","realm":"R",
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
        s.add_rule(3, false, RuleSpec::own(AuthRule { credentials: None, matcher: MatchArg::default() })).unwrap();
        let url = MatchArg { url_contains: Some("/ADMIN".into()), ..MatchArg::default() };
        let r = s.add_rule(3, false, RuleSpec::own(AuthRule { credentials: Some(creds()), matcher: url })).unwrap();
        challenge(&mut s, 1, "r1", 1);
        assert_eq!(s.history.iter().last().unwrap().rule_id, Some(r.id));
        let v = s.interact(DialogCall::Clear { tab: None, what: DialogType::ALL }).unwrap().value;
        assert_eq!(v["removed"], 2);
        assert!(s.rules_of(3).is_empty());
    }

    #[test]
    fn userinfo_is_cut_from_urls() {
        assert_eq!(without_userinfo("https://u:p@h:8/x@y"), "https://h:8/x@y");
        assert_eq!(without_userinfo("http://h/a"), "http://h/a");
        assert_eq!(without_userinfo("nonsense"), "nonsense");
    }
}
