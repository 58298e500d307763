//! Passkeys: a WebAuthn `navigator.credentials.create()` or `get()` with `publicKey`. The
//! browser's passkey sheet, which headless never shows, leaves the call pending whatever its
//! timeout and, from ~0.1 s on, drops every click and key to the tab until a reload; nothing
//! closes it once open. So the page hook (`manifest/inject/48-passkeys.js`) holds the call
//! before the browser sees it and asks, through `manifest/passkeys.js`:
//! - refuse: the page gets a person's cancel (`NotAllowedError`), and sites then offer
//!   another way in;
//! - accept: the worker arms a virtual authenticator (the DevTools protocol's WebAuthn
//!   domain) with the relying party's keys (`keys.rs`), then lets the call through:
//!   `create()` makes a real credential, `get()` signs with one; the keys come back after.
//!
//! The prompt pipeline (`prompt.rs`) does the rest; here is what is the passkey's own.
//! Pilot off: the browser's way, recorded.

use super::{
    Described, EXPIRED_REFUSED, Policies, PromptKind, RuleView, Says, Spec, Verdict, With, Words, configured,
    pilot_off, url_fits,
};
use crate::api::RuleSpec;
use crate::host::protocol::{Carried, PromptDecision, ToBrowser};
use keys::{PasskeyKey, PasskeyKeys};

mod keys;
use crate::host::record::{self, Details, DialogRecord};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// Each policy's answer.
const POLICIES: Policies = Policies {
    hold: "Passkey request held for the agent (policy must_respond): the page's call waits; answer with interact \
{action:\"handle_dialog\", dialog_id, accept} (true: Unmodal's virtual authenticator answers; false: the page gets \
NotAllowedError)",
    auto: Says::Refuse(
        "Passkey request refused by the default policy, as a person's cancel (NotAllowedError): the browser's \
passkey sheet, invisible in headless, would have dropped every input to the tab until a reload; a passkey rule with \
accept: true answers it with Unmodal's virtual authenticator",
    ),
    auto_accept: Says::Accept(
        "Passkey request answered by Unmodal's virtual authenticator (the tab's auto_accept policy)",
    ),
    auto_dismiss: Says::Refuse("Passkey request refused by the tab's auto_dismiss policy"),
};

/// A passkey request once recorded.
pub(super) struct Passkey;

const WORDS: Words = Words {
    kind: Kind::Passkey,
    group: "passkey",
    closed: (
        "answered by Unmodal's virtual authenticator (the page's call went to the browser)",
        "refused (the page got NotAllowedError, as after a person's cancel)",
    ),
    expired: EXPIRED_REFUSED,
};

impl Spec for Passkey {
    fn words(&self) -> &Words {
        &WORDS
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        super::read::<PasskeyAsk>(fields)
    }

    fn message(&self) -> Option<&'static str> {
        Some("passkeys_saved")
    }

    /// The keys the data directory keeps (`keep` rules' passkeys).
    fn open(&self, s: &mut State, data_dir: &std::path::Path) {
        *s.kinds.get::<PasskeyKeys>() = PasskeyKeys::open(data_dir.to_path_buf());
    }

    /// This browser session's keys go in its state file.
    fn saved(&self, s: &State) -> Option<serde_json::Value> {
        let keys = &s.kinds.peek::<PasskeyKeys>()?.session;
        (!keys.is_empty()).then(|| serde_json::to_value(keys).ok()).flatten()
    }

    fn restore(&self, s: &mut State, saved: serde_json::Value) {
        match serde_json::from_value::<Vec<PasskeyKey>>(saved) {
            Ok(keys) => s.kinds.get::<PasskeyKeys>().save(keys, false),
            Err(e) => tracing::warn!(error = %e, "the session's passkeys in its state file are unreadable; not used"),
        }
    }

    fn on_message(&self, s: &mut State, fields: serde_json::Value) -> Result<Vec<ToBrowser>, serde_json::Error> {
        let m = PasskeysSaved::deserialize(fields)?;
        s.on_passkeys_saved(m.keep, m.credentials);
        Ok(Vec::new())
    }

    fn owns(&self, rule: &RuleSpec) -> bool {
        matches!(rule, RuleSpec::Passkey { .. })
    }

    fn view<'a>(&self, rule: &'a RuleSpec, v: &mut RuleView<'a>) {
        if let RuleSpec::Passkey { keep, .. } = rule {
            v.keep = keep.then_some(true);
        }
    }

    /// The agent's accept arms the authenticator with the relying party's passkeys.
    fn accept_with(&self, held: &DialogRecord) -> With {
        match held.details.read::<PasskeyDetails>() {
            Some(p) => With::Passkeys { rp_id: p.rp_id, keep: false },
            None => With::Nothing,
        }
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let RuleSpec::Passkey { accept, keep, matcher } = rule else { return None };
        let what = matcher.rp_id.as_ref().map_or("passkey request".to_string(), |r| format!("passkey request for {r}"));
        let will = match (accept, keep) {
            (true, true) => {
                "answer it with Unmodal's virtual authenticator, keeping the passkeys made for this profile"
            }
            (true, false) => "answer it with Unmodal's virtual authenticator (passkeys last for the browser session)",
            _ => "refuse it (the page gets NotAllowedError, as after a person's cancel)",
        };
        Some(configured(&what, will, once))
    }
}

/// The keys a virtual authenticator is armed with for an accepted request; `keep`: what it
/// makes is kept for the profile (the worker says so in `passkeys_saved`).
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Arming {
    keep: bool,
    credentials: Vec<PasskeyKey>,
}

/// What arms the virtual authenticator for `rp_id`: its passkeys, and whether what it makes
/// is kept for the profile.
fn arming(s: &State, rp_id: &str, keep: bool) -> Arming {
    Arming { keep, credentials: s.kinds.peek::<PasskeyKeys>().map_or_else(Vec::new, |k| k.for_rp(rp_id)) }
}

/// An accept's carried part, armed for `rp_id` (the worker reads it as `passkeys`).
pub(super) fn arm(s: &State, rp_id: &str, keep: bool, carried: &mut Carried) {
    let armed = serde_json::to_value(arming(s, rp_id, keep)).expect("keys serialize");
    carried.more.insert("passkeys", armed);
}

impl PasskeyAsk {
    /// The keys an accept arms the authenticator with: the relying party's.
    fn arming(&self, keep: bool) -> With {
        With::Passkeys { rp_id: self.rp_id.clone(), keep }
    }
}

impl PromptKind for PasskeyAsk {
    fn check(&self) -> Result<(), String> {
        match self.operation.as_str() {
            "create" | "get" => Ok(()),
            _ => Err("a passkey request is neither create nor get".into()),
        }
    }

    fn describe(&self, _: &Redactor, url: &str) -> Described {
        let rp_id = record::clip(&self.rp_id, 256).0;
        let what = if self.operation == "create" { "create a passkey" } else { "sign in with a passkey" };
        let message = if rp_id.is_empty() { what.to_string() } else { format!("{what} for {rp_id}") };
        Described {
            message,
            truncated: false,
            redacted: Vec::new(),
            url: record::clip(url, 2048).0,
            details: Details::of(&PasskeyDetails { operation: self.operation.clone(), rp_id }),
        }
    }

    /// `url_contains` is on the page's URL, `rp_id` the relying party the page named.
    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let RuleSpec::Passkey { matcher, .. } = rule else { return None };
        let fits =
            url_fits(matcher.url_contains.as_ref(), url) && matcher.rp_id.as_ref().is_none_or(|r| *r == self.rp_id);
        fits.then(|| usize::from(matcher.url_contains.is_some()) + usize::from(matcher.rp_id.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let RuleSpec::Passkey { accept: true, keep, .. } = rule else {
            return Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("Passkey request refused: passkey rule {id} matched (the page got NotAllowedError)"),
            );
        };
        let kept = if *keep { ", keeping the passkeys it makes for this profile" } else { "" };
        let why =
            format!("Passkey request answered by Unmodal's virtual authenticator: passkey rule {id} matched{kept}");
        Verdict::rule(PromptDecision::Accept, id, why).carrying(self.arming(*keep))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        // Only an accept arms the authenticator: a refusal carries nothing.
        POLICIES.verdict(policy).carrying(self.arming(false))
    }

    fn pilot_off(&self) -> String {
        pilot_off(
            "the browser handles the passkey request itself (in headless its sheet is invisible and drops every \
input to the tab until a reload)",
        )
    }
}

impl State {
    /// The keys an armed authenticator held when the call was done (made or signed with).
    pub(in crate::host) fn on_passkeys_saved(&mut self, keep: bool, credentials: Vec<serde_json::Value>) {
        let keys = credentials
            .into_iter()
            .filter_map(|v| match serde_json::from_value(v) {
                Ok(k) => Some(k),
                Err(_) => {
                    tracing::warn!("a passkey from the browser was not in the protocol's shape; not kept");
                    None
                }
            })
            .collect();
        self.kinds.get::<PasskeyKeys>().save(keys, keep);
    }
}

#[derive(Debug, Deserialize)]
pub struct PasskeyAsk {
    /// `create` or `get`.
    pub operation: String,
    /// The relying party's id as the page named it (empty: its own origin's host).
    #[serde(default)]
    pub rp_id: String,
}

/// A WebAuthn request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyDetails {
    /// `create` (a new passkey) or `get` (signing in with one).
    pub operation: String,
    /// The relying party's id as the page named it (empty: its own origin's host).
    pub rp_id: String,
}

/// The keys a virtual authenticator holds after an accepted passkey call (made or signed
/// with), and whether the answer said to keep them (`keys.rs`).
#[derive(Debug, Deserialize)]
struct PasskeysSaved {
    #[serde(default)]
    keep: bool,
    credentials: Vec<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{DialogCall, MatchArg};
    use crate::host::record::DecidedBy;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use crate::kind::Kind;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        crate::host::state::tests::state_with(policy)
    }

    fn ask(s: &mut State, n: u64, operation: &str, rp_id: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":n,"frame_id":0,"url":"http://a/login",
                "operation":operation,"rp_id":rp_id}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_default_refuses_and_the_record_names_the_relying_party() {
        let mut s = state(Policy::Auto);
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"passkey","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by, rec.accepted), (Kind::Passkey, DecidedBy::DefaultPolicy, Some(false)));
        assert_eq!(rec.message, "create a passkey for a.example");
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["operation"].as_str(), j["rp_id"].as_str()), (Some("create"), Some("a.example")));
        let back: crate::host::record::DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.details, rec.details);
    }

    #[test]
    fn a_rule_by_relying_party_and_must_respond_with_its_only_answer() {
        let mut s = state(Policy::MustRespond);
        let matcher = MatchArg { rp_id: Some("b.example".into()), ..MatchArg::default() };
        s.interact(DialogCall::Setup {
            tab: None,
            once: true,
            rule: RuleSpec::Passkey { accept: false, keep: false, matcher },
        })
        .unwrap();
        assert_eq!(ask(&mut s, 1, "get", "b.example")[1]["decision"], "refuse");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
        assert_eq!(ask(&mut s, 2, "get", "c.example")[1]["type"], "prompt_hold");
        let id = s.held[0].record.id;
        let done = s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: None }).unwrap();
        assert_eq!((done.answering, to_json(&done.msgs)[0]["decision"].as_str()), (Some(id), Some("refuse")));
        assert!(to_json(&done.msgs)[0].get("passkeys").is_none(), "a refusal arms nothing");
    }

    fn saved(s: &mut State, keep: bool, id: &str, rp: &str) {
        let key = json!({"credentialId": id, "isResidentCredential": true, "rpId": rp, "privateKey": "AAAA",
            "userHandle": "dQ==", "signCount": 1, "userName": "u@x"});
        feed(s, json!({"type":"passkeys_saved","tab_id":3,"keep":keep,"credentials":[key, {"oops": 1}]})).unwrap();
    }

    #[test]
    fn an_accept_arms_the_authenticator_with_the_relying_partys_keys_only() {
        let mut s = state(Policy::Auto);
        let rule = |keep| RuleSpec::Passkey { accept: true, keep, matcher: MatchArg::default() };
        s.interact(DialogCall::Setup { tab: None, once: false, rule: rule(false) }).unwrap();
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!(out[1]["decision"], "accept");
        assert_eq!(out[1]["passkeys"], json!({"keep": false, "credentials": []}));
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
        saved(&mut s, false, "AQ==", "a.example");
        saved(&mut s, false, "Ag==", "b.example");
        let out = ask(&mut s, 2, "get", "a.example");
        let keys = &out[1]["passkeys"]["credentials"];
        assert_eq!((keys.as_array().map(Vec::len), keys[0]["credentialId"].as_str()), (Some(1), Some("AQ==")));
        assert_eq!(keys[0]["privateKey"], "AAAA", "the worker needs the key itself");
        // Nothing the agent can read shows a key.
        let observe = |what| crate::api::ObserveArgs { what, tab_id: None };
        let seen = [
            s.observe(&observe(crate::api::ObserveWhat::Dialogs)).unwrap().to_string(),
            s.observe(&observe(crate::api::ObserveWhat::Logs)).unwrap().to_string(),
        ]
        .concat();
        assert!(!seen.contains("AAAA") && seen.contains("a.example"), "{seen}");
        // The agent's accept of a held one arms alike; keep comes only from a rule.
        s.interact(DialogCall::Clear { tab: None, what: crate::api::DialogTypeArg::Passkey }).unwrap();
        s.configure(crate::api::PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        assert_eq!(ask(&mut s, 3, "get", "b.example")[1]["type"], "prompt_hold");
        let done = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap();
        let m = &to_json(&done.msgs)[0];
        assert_eq!((m["decision"].as_str(), m["passkeys"]["keep"].as_bool()), (Some("accept"), Some(false)));
        assert_eq!(m["passkeys"]["credentials"][0]["credentialId"], "Ag==");
    }

    /// A host that takes over the browser session (from its state file) arms with the
    /// session's keys; a file whose keys are unreadable costs only them.
    #[test]
    fn the_sessions_keys_go_to_the_next_host() {
        let mut old = state(Policy::Auto);
        saved(&mut old, false, "AQ==", "a.example");
        let file = serde_json::to_value(old.snapshot()).unwrap();
        assert_eq!(file["kinds"]["passkey"][0]["credentialId"], "AQ==", "{file}");
        let mut new = state(Policy::Auto);
        new.restore(serde_json::from_value(file.clone()).unwrap());
        assert_eq!(arming(&new, "a.example", false).credentials.len(), 1);
        assert!(arming(&new, "b.example", false).credentials.is_empty());
        // Nothing kept: nothing written for the kind.
        assert!(serde_json::to_value(state(Policy::Auto).snapshot()).unwrap().get("kinds").is_none());
        let mut bad = file;
        bad["kinds"]["passkey"] = json!("not keys");
        let mut new = state(Policy::Auto);
        new.restore(serde_json::from_value(bad).unwrap());
        assert!(arming(&new, "a.example", false).credentials.is_empty());
        assert_eq!(new.tabs.len(), old.tabs.len(), "the rest of the state came back");
    }

    #[test]
    fn auto_accept_arms_and_keep_needs_an_accepting_rule() {
        let mut s = state(Policy::AutoAccept);
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!((out[1]["decision"].as_str(), out[1]["passkeys"]["keep"].as_bool()), (Some("accept"), Some(false)));
        let args = json!({"action":"handle_dialog","setup":true,"dialog_type":"passkey","accept":false,"keep":true});
        let err = crate::api::parse::<crate::api::InteractArgs>(args).unwrap().validate().unwrap_err();
        assert_eq!(err.param, "keep");
        let args = json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","keep":true});
        let err = crate::api::parse::<crate::api::InteractArgs>(args).unwrap().validate().unwrap_err();
        assert_eq!(err.param, "keep");
    }

    #[test]
    fn bad_operations_are_refused_whole() {
        let mut s = state(Policy::Auto);
        let m = json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":1,"operation":"delete"});
        assert!(feed(&mut s, m).is_err());
        assert_eq!(s.history.iter().count(), 0);
    }
}
