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
//! The worker's word is not enough to give a relying party's keys: where a DevTools client
//! can reach the worker (remote debugging, a remote browser) it can send any request in
//! the worker's name. So an accept goes only to a request whose relying party the asking
//! page may use (`rp.rs`, WebAuthn's rule) and, in such a browser, only while the host's
//! own view of the pages open there (`host/sites.rs`) shows a page of that site; else the
//! request is refused, the record saying why. The keys that come back are taken only for
//! an accept the host sent, once, for its relying party (`Accepted`).
//!
//! The prompt pipeline (`prompt.rs`) does the rest; here is what is the passkey's own.
//! Pilot off: the browser's way, recorded.

use super::args::{self, Api, Given, Owned};
use super::rule::CarryOf;
use super::{
    Described, EXPIRED_REFUSED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words, configured,
    pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::protocol::{Carried, PromptDecision, ToBrowser};
use crate::host::sites;
use keys::{PasskeyKey, PasskeyKeys};
use schemars::JsonSchema;
use std::collections::VecDeque;

mod keys;
mod rp;
use crate::host::record::{self, Details, DialogRecord};
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const KIND: Kind = Kind::new("passkey");

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
    kind: KIND,
    group: "passkey",
    closed: (
        "answered by Unmodal's virtual authenticator (the page's call went to the browser)",
        "refused (the page got NotAllowedError, as after a person's cancel)",
    ),
    expired: EXPIRED_REFUSED,
};

/// A passkey rule: answer it with Unmodal's virtual authenticator (accept; `keep`: the
/// passkeys made outlive the browser session) or refuse it (a person's cancel);
/// `match.url_contains` is on the page's URL, `match.rp_id` the relying party.
#[derive(Clone, PartialEq)]
pub(crate) struct PasskeyRule {
    pub accept: bool,
    pub keep: bool,
    pub matcher: MatchArg,
}

crate::own_rule!(PasskeyRule, "Passkey", KIND, accept: |r| r.accept, in_config: |_| false, show: [accept, keep]);

/// Its own field of `interact`.
#[derive(Deserialize, JsonSchema)]
struct PasskeyFields {
    /// dialog_type "passkey" with setup and accept: true: keep the passkeys this rule makes
    /// for the browser profile (in Unmodal's private data, never shown), so a later session
    /// signs in with them. Default false: they last as long as the browser session.
    #[serde(default)]
    keep: Option<bool>,
}

/// Its own match field.
#[derive(Deserialize, JsonSchema)]
struct PasskeyMatch {
    /// dialog_type "passkey" only: only requests for this relying party id (exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[allow(dead_code)]
    rp_id: Option<String>,
}

static API: Api = Api {
    instructions: "WebAuthn requests (passkeys: create/get) are dialog_type \"passkey\": refused by default (the page \
gets NotAllowedError); accept:true answers them with Unmodal's virtual authenticator (keep:true \
keeps the passkeys for the profile). ",
    description: "A WebAuthn request (navigator.credentials.create or get with publicKey): accept =\nUnmodal's \
virtual authenticator answers it, dismiss = refuse it as a person's cancel\n(NotAllowedError).",
    fields: &[Owned::setup("match.rp_id"), Owned::setup("keep")],
    schema: args::schema_of::<PasskeyFields, PasskeyMatch>,
    read: args::read_of::<PasskeyFields, PasskeyMatch>,
    rule: passkey_rule,
    answer: None,
    paths: &[],
    own_dir: None,
};

fn passkey_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a passkey request", "name the relying party (match.rp_id)")?;
    if matcher.get("rp_id").is_some_and(|r| r.is_empty() || r.len() > 256) {
        return Err(bad("match.rp_id", "a relying party id such as \"example.com\", at most 256 characters"));
    }
    let accept = g.accept();
    let keep = g.fields::<PasskeyFields>()?.keep.unwrap_or(false);
    if keep && !accept {
        return Err(bad("keep", "keeps the passkeys an accepting rule makes; leave it out with accept: false"));
    }
    g.no_text("a passkey rule takes no text")?;
    Ok(RuleSpec::own(PasskeyRule { accept, keep, matcher }))
}

/// An accept's: the relying party's keys arm the virtual authenticator; `keep`: what it
/// makes is kept for the profile.
#[derive(Clone, Debug, PartialEq)]
struct Passkeys {
    rp_id: String,
    keep: bool,
}

impl CarryOf for Passkeys {
    fn kind(&self) -> Kind {
        KIND
    }
    fn apply(self: Box<Self>, s: &mut State, (tab, id, _): (i64, u64, u64), accept: bool) -> Carried {
        let mut carried = Carried::default();
        if accept {
            arm(s, (tab, id), &self.rp_id, self.keep, &mut carried);
        }
        carried
    }
    crate::own_plumbing!(carry);
}

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
        s.on_passkeys_saved(m.tab_id, m.id, m.credentials);
        Ok(Vec::new())
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        if let Some(PasskeyRule { keep: true, .. }) = rule.of() {
            v.insert("keep".into(), true.into());
        }
    }

    /// Only a page that may use the relying party gets its passkeys (the module's header).
    fn host_refuses(&self, s: &State, url: &str, details: &Details) -> Option<String> {
        let p = details.read::<PasskeyDetails>()?;
        refused(s, url, &p.rp_id)
    }

    /// The agent's accept arms the authenticator with the relying party's passkeys.
    fn accept_with(&self, held: &DialogRecord) -> With {
        match held.details.read::<PasskeyDetails>() {
            Some(p) => With::own(Passkeys { rp_id: p.rp_id, keep: false }),
            None => With::Nothing,
        }
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let PasskeyRule { accept, keep, matcher } = rule.of()?;
        let what = matcher.get("rp_id").map_or("passkey request".to_string(), |r| format!("passkey request for {r}"));
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

/// The keys a virtual authenticator is armed with for an accepted request. Whether what it
/// makes is kept is the host's alone (`Accepted`): the worker is not told.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Arming {
    credentials: Vec<PasskeyKey>,
}

/// What arms the virtual authenticator for `rp_id`: its passkeys.
fn arming(s: &State, rp_id: &str) -> Arming {
    Arming { credentials: s.kinds.peek::<PasskeyKeys>().map_or_else(Vec::new, |k| k.for_rp(rp_id)) }
}

/// Accepts sent and not yet answered by their keys (`passkeys_saved`), at most; the oldest
/// go (a call that makes nothing sends none back).
const MAX_ACCEPTED: usize = 64;

/// The accepts the host sent, oldest first: what their calls hand back may be taken.
#[derive(Debug, Default)]
struct Accepted(VecDeque<Armed>);

/// One accept: prompt `id` of `tab`, armed for `rp_id`; `keep`: what it makes is kept.
#[derive(Debug)]
struct Armed {
    tab: i64,
    id: u64,
    rp_id: String,
    keep: bool,
}

/// Whether the page at `url` may have `rp_id`'s passkeys: `None`, or why not, for the record.
fn refused(s: &State, url: &str, rp_id: &str) -> Option<String> {
    let why = match rp::admits(url, rp_id) {
        Err(why) => why,
        // A browser without remote debugging: no DevTools client reaches the worker, so the
        // URL it passes on is the browser's own (`sender.url`) and WebAuthn's rule suffices.
        Ok(()) => match s.browser.remote_control() {
            None => return None,
            Some(remote) => {
                let site = sites::site_of(rp_id);
                let unseen = match s.sites.shows(&site) {
                    Some(true) => return None,
                    Some(false) => {
                        format!("no page or frame on {site} is open as the host's own DevTools connection sees it")
                    }
                    None => "the host has no DevTools connection of its own to see which pages are open (it has one \
for a browser started with --remote-debugging-port, or reached with --cdp-endpoint)"
                        .to_owned(),
                };
                format!(
                    "{remote}, so a DevTools client may have sent the request in the extension's name, and {unseen}"
                )
            }
        },
    };
    Some(format!(
        "Passkey request refused by the host: {why}; a relying party's passkeys go only to a page that may use them"
    ))
}

/// An accept's carried part for prompt `id` of `tab`, armed for `rp_id` (the worker reads
/// it as `passkeys`); what the call hands back is taken for this accept only.
fn arm(s: &mut State, (tab, id): (i64, u64), rp_id: &str, keep: bool, carried: &mut Carried) {
    let armed = serde_json::to_value(arming(s, rp_id)).expect("keys serialize");
    carried.more.insert("passkeys", armed);
    let accepted = &mut s.kinds.get::<Accepted>().0;
    accepted.retain(|a| (a.tab, a.id) != (tab, id));
    if accepted.len() >= MAX_ACCEPTED {
        accepted.pop_front();
    }
    accepted.push_back(Armed { tab, id, rp_id: rp_id.to_owned(), keep });
}

impl PasskeyAsk {
    /// The keys an accept arms the authenticator with: the relying party's.
    fn arming(&self, keep: bool) -> With {
        With::own(Passkeys { rp_id: self.rp_id.clone(), keep })
    }
}

impl PromptKind for PasskeyAsk {
    fn check(&self) -> Result<(), String> {
        // The record keeps 256 characters: the relying party checked is the one armed.
        if self.rp_id.chars().count() > 256 {
            return Err("a passkey request's rp_id is longer than 256 characters".into());
        }
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
        let PasskeyRule { matcher, .. } = rule.of()?;
        let rp_id = matcher.get("rp_id");
        let fits = url_fits(matcher.url_contains.as_ref(), url) && rp_id.is_none_or(|r| *r == self.rp_id);
        fits.then(|| usize::from(matcher.url_contains.is_some()) + usize::from(rp_id.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let Some(PasskeyRule { accept: true, keep, .. }) = rule.of() else {
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
    /// The keys an armed authenticator held when the call was done (made or signed with):
    /// taken only for an accept the host sent for prompt `id` of `tab`, once, and only the
    /// keys of the relying party it was armed for; `keep` is the accept's, not the worker's.
    pub(in crate::host) fn on_passkeys_saved(&mut self, tab: i64, id: u64, credentials: Vec<serde_json::Value>) {
        let accepted = &mut self.kinds.get::<Accepted>().0;
        let Some(pos) = accepted.iter().position(|a| (a.tab, a.id) == (tab, id)) else {
            return tracing::warn!(tab, id, "passkeys from the browser for no accept the host sent; not taken");
        };
        let Some(Armed { rp_id, keep, .. }) = accepted.remove(pos) else { return };
        let mut others = 0;
        let keys = credentials
            .into_iter()
            .filter_map(|v| match serde_json::from_value::<PasskeyKey>(v) {
                Ok(k) if k.rp_id == rp_id => Some(k),
                Ok(_) => {
                    others += 1;
                    None
                }
                Err(_) => {
                    tracing::warn!("a passkey from the browser was not in the protocol's shape; not kept");
                    None
                }
            })
            .collect();
        if others > 0 {
            tracing::warn!(
                tab,
                id,
                others,
                rp_id,
                "passkeys from the browser for another relying party than the accept's; not taken"
            );
        }
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
/// with): the call's tab and prompt id name the accept (`keys.rs`).
#[derive(Debug, Deserialize)]
struct PasskeysSaved {
    tab_id: i64,
    id: u64,
    credentials: Vec<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::DialogCall;
    use crate::host::kinds::DialogType;
    use crate::host::record::DecidedBy;
    use crate::host::sites::Change;
    use crate::host::state::State;
    use crate::host::state::tests::{feed, to_json};
    use crate::parent_browser::ParentBrowser;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    /// A browser without remote debugging: its command line read, no DevTools port.
    fn plain_local() -> ParentBrowser {
        ParentBrowser::from_args(
            42,
            Some(vec!["/usr/bin/chromium".into(), "--user-data-dir=/nonexistent/unmodal".into()]),
        )
    }

    /// `policy` in tab 3, in a plain local browser.
    fn state(policy: Policy) -> State {
        let mut s = crate::host::state::tests::state_with(policy);
        s.browser = plain_local();
        s
    }

    /// A request of tab 3 from a page on `url`.
    fn ask_from(s: &mut State, n: u64, url: &str, operation: &str, rp_id: &str) -> Vec<Value> {
        let m = json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":n,"frame_id":0,"url":url,
            "operation":operation,"rp_id":rp_id});
        to_json(&feed(s, m).unwrap())
    }

    /// A request of tab 3 from a page on the relying party's own host.
    fn ask(s: &mut State, n: u64, operation: &str, rp_id: &str) -> Vec<Value> {
        ask_from(s, n, &format!("https://{rp_id}/login"), operation, rp_id)
    }

    fn accept_rule(s: &mut State, keep: bool) {
        let rule = RuleSpec::own(PasskeyRule { accept: true, keep, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
    }

    /// A credential as the DevTools protocol gives it; `private`: its key.
    fn key(id: &str, rp: &str, private: &str, count: u32) -> Value {
        json!({"credentialId": id, "isResidentCredential": true, "rpId": rp, "privateKey": private,
            "userHandle": id, "signCount": count, "userName": "u@x"})
    }

    /// The worker hands back `credentials` for prompt `n` of tab 3.
    fn saved_for(s: &mut State, n: u64, credentials: Vec<Value>) {
        feed(s, json!({"type":"passkeys_saved","tab_id":3,"id":n,"credentials":credentials})).unwrap();
    }

    /// One key (and one the host cannot read) handed back for prompt `n`.
    fn saved(s: &mut State, n: u64, id: &str, rp: &str) {
        saved_for(s, n, vec![key(id, rp, "AAAA", 1), json!({"oops": 1})]);
    }

    /// Relying party `rp`'s keys the host holds: (credential id, private key, count).
    fn held(s: &mut State, rp: &str) -> Vec<(String, String, u32)> {
        s.kinds
            .get::<PasskeyKeys>()
            .for_rp(rp)
            .into_iter()
            .map(|k| (k.credential_id, k.private_key, k.sign_count))
            .collect()
    }

    fn credentials(answer: &Value) -> usize {
        answer["passkeys"]["credentials"].as_array().map_or(0, Vec::len)
    }

    #[test]
    fn the_default_refuses_and_the_record_names_the_relying_party() {
        let mut s = state(Policy::Auto);
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"passkey","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by, rec.accepted), (KIND, DecidedBy::DefaultPolicy, Some(false)));
        assert_eq!(rec.message, "create a passkey for a.example");
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!((j["operation"].as_str(), j["rp_id"].as_str()), (Some("create"), Some("a.example")));
        let back: crate::host::record::DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.details, rec.details);
    }

    #[test]
    fn a_rule_by_relying_party_and_must_respond_with_its_only_answer() {
        let mut s = state(Policy::MustRespond);
        let matcher = MatchArg::default().with("rp_id", "b.example");
        s.interact(DialogCall::Setup {
            tab: None,
            once: true,
            rule: RuleSpec::own(PasskeyRule { accept: false, keep: false, matcher }),
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

    #[test]
    fn an_accept_arms_the_authenticator_with_the_relying_partys_keys_only() {
        let mut s = state(Policy::Auto);
        accept_rule(&mut s, false);
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!(out[1]["decision"], "accept");
        assert_eq!(out[1]["passkeys"], json!({"credentials": []}), "keep is the host's, not told");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
        saved(&mut s, 1, "AQ==", "a.example");
        assert_eq!(ask(&mut s, 2, "create", "b.example")[1]["decision"], "accept");
        saved(&mut s, 2, "Ag==", "b.example");
        let out = ask(&mut s, 3, "get", "a.example");
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
        s.interact(DialogCall::Clear { tab: None, what: DialogType::of(KIND) }).unwrap();
        s.configure(crate::api::PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        assert_eq!(ask(&mut s, 4, "get", "b.example")[1]["type"], "prompt_hold");
        let done = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap();
        let m = &to_json(&done.msgs)[0];
        assert_eq!(m["decision"], "accept");
        assert_eq!(m["passkeys"]["credentials"][0]["credentialId"], "Ag==");
        let a = s.kinds.get::<Accepted>().0.back().map(|a| (a.tab, a.id, a.rp_id.clone(), a.keep));
        assert_eq!(a, Some((3, 4, "b.example".into(), false)));
    }

    /// A host that takes over the browser session (from its state file) arms with the
    /// session's keys; a file whose keys are unreadable costs only them.
    #[test]
    fn the_sessions_keys_go_to_the_next_host() {
        let mut old = state(Policy::Auto);
        accept_rule(&mut old, false);
        ask(&mut old, 1, "create", "a.example");
        saved(&mut old, 1, "AQ==", "a.example");
        let file = serde_json::to_value(old.snapshot()).unwrap();
        assert_eq!(file["kinds"]["passkey"][0]["credentialId"], "AQ==", "{file}");
        let mut new = state(Policy::Auto);
        new.restore(serde_json::from_value(file.clone()).unwrap());
        assert_eq!(arming(&new, "a.example").credentials.len(), 1);
        assert!(arming(&new, "b.example").credentials.is_empty());
        // Nothing kept: nothing written for the kind.
        assert!(serde_json::to_value(state(Policy::Auto).snapshot()).unwrap().get("kinds").is_none());
        let mut bad = file;
        bad["kinds"]["passkey"] = json!("not keys");
        let mut new = state(Policy::Auto);
        new.restore(serde_json::from_value(bad).unwrap());
        assert!(arming(&new, "a.example").credentials.is_empty());
        assert_eq!(new.tabs.len(), old.tabs.len(), "the rest of the state came back");
    }

    #[test]
    fn auto_accept_arms_and_keep_needs_an_accepting_rule() {
        let mut s = state(Policy::AutoAccept);
        let out = ask(&mut s, 1, "create", "a.example");
        assert_eq!(out[1]["decision"], "accept");
        assert!(!s.kinds.get::<Accepted>().0[0].keep);
        let args = json!({"action":"handle_dialog","setup":true,"dialog_type":"passkey","accept":false,"keep":true});
        let err = crate::call::interact(args).unwrap_err();
        assert_eq!(err.param, "keep");
        let args = json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","keep":true});
        let err = crate::call::interact(args).unwrap_err();
        assert_eq!(err.param, "keep");
    }

    #[test]
    fn bad_operations_are_refused_whole() {
        let mut s = state(Policy::Auto);
        let m = json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":1,"operation":"delete"});
        assert!(feed(&mut s, m).is_err());
        let long = "a".repeat(257);
        let m = json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":2,"operation":"get","rp_id":long});
        assert!(feed(&mut s, m).is_err(), "the record could not keep the relying party checked");
        assert_eq!(s.history.iter().count(), 0);
    }

    // ---- What code run in the worker can send (issue 49) ----

    /// A forged request naming a relying party its page may not use gets no keys, in any
    /// browser. On 892be98 the answer carried bank.example's key to a page on evil.example.
    #[test]
    fn a_relying_party_the_pages_url_does_not_admit_gets_no_keys() {
        let mut s = state(Policy::Auto);
        accept_rule(&mut s, false);
        ask(&mut s, 1, "create", "bank.example");
        saved(&mut s, 1, "AQ==", "bank.example");
        for (n, url) in [(2, "https://evil.example/login"), (3, "http://bank.example/login"), (4, "https://example/")] {
            let out = ask_from(&mut s, n, url, "get", "bank.example");
            assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("refuse"), 0), "{url}: {out:?}");
            let rec = s.history.iter().last().unwrap();
            assert_eq!((rec.accepted, rec.decided_by, rec.rule_id), (Some(false), DecidedBy::Rule, Some(1)));
            assert!(rec.explanation.starts_with("Passkey request refused by the host:"), "{}", rec.explanation);
            assert!(rec.explanation.contains("passkey rule 1 matched"), "{}", rec.explanation);
        }
        // The agent's accept of a held one is refused alike, and says so.
        s.interact(DialogCall::Clear { tab: None, what: DialogType::of(KIND) }).unwrap();
        s.configure(crate::api::PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        ask_from(&mut s, 5, "https://evil.example/", "get", "bank.example");
        let e = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).err().unwrap();
        assert!(e.message.contains("\"bank.example\"") && e.message.contains("accept: false"), "{}", e.message);
        assert_eq!(s.held.len(), 1, "still held for the agent's refusal");
    }

    /// Where a DevTools client reaches the worker, an admitted relying party needs a page
    /// of its site in the host's own view. On 892be98 the key went to the worker of a remote
    /// browser with no such page open.
    #[test]
    fn a_relying_party_whose_site_the_hosts_view_does_not_show_gets_no_keys() {
        let mut s = state(Policy::Auto);
        accept_rule(&mut s, false);
        ask(&mut s, 1, "create", "bank.example");
        saved(&mut s, 1, "AQ==", "bank.example");
        s.browser = ParentBrowser::over_cdp("wss://provider.example/…".into());
        let page = |id: &str, url: &str| Change::Target {
            method: "Target.targetCreated".into(),
            params: json!({"targetInfo": {"targetId": id, "type": "page", "url": url}}),
        };
        // No view yet: nothing can be tied.
        let out = ask(&mut s, 2, "get", "bank.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("refuse"), 0));
        let why = &s.history.iter().last().unwrap().explanation;
        assert!(why.contains("reached over CDP") && why.contains("no DevTools connection of its own"), "{why}");
        // A view with another site only.
        s.sites.apply(Change::Reset);
        s.sites.apply(page("P1", "https://evil.example/"));
        s.sites.apply(Change::Live);
        let out = ask(&mut s, 3, "get", "bank.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("refuse"), 0));
        let why = &s.history.iter().last().unwrap().explanation;
        assert!(why.contains("no page or frame on bank.example is open"), "{why}");
        // The site's page is open (another host of the site counts: same site).
        s.sites.apply(page("P2", "https://www.bank.example/home"));
        let out = ask_from(&mut s, 4, "https://login.bank.example/", "get", "bank.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("accept"), 1));
        // The connection goes: so does the view.
        s.sites.apply(Change::Lost);
        assert_eq!(credentials(&ask(&mut s, 5, "get", "bank.example")[1]), 0);
    }

    /// A browser without remote debugging: no DevTools client reaches the worker, and
    /// WebAuthn's rule on the URL the browser gave is the whole check.
    #[test]
    fn a_plain_local_browser_needs_only_the_pages_url() {
        let mut s = state(Policy::Auto);
        assert_eq!(s.browser.remote_control(), None);
        accept_rule(&mut s, false);
        ask(&mut s, 1, "create", "bank.example");
        saved(&mut s, 1, "AQ==", "bank.example");
        let out = ask_from(&mut s, 2, "https://login.bank.example/", "get", "bank.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("accept"), 1));
        let out = ask_from(&mut s, 3, "https://login.bank.example/", "get", "other.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("refuse"), 0));
        // A local browser with remote debugging and no view: refused.
        s.browser = ParentBrowser::from_args(42, Some(vec!["chromium".into(), "--remote-debugging-pipe".into()]));
        let out = ask(&mut s, 4, "get", "bank.example");
        assert_eq!((out[1]["decision"].as_str(), credentials(&out[1])), (Some("refuse"), 0));
        let why = &s.history.iter().last().unwrap().explanation;
        assert!(why.contains("--remote-debugging-pipe"), "{why}");
    }

    /// The real flow: an accept with keep, then the keys its call made, named by the
    /// request. Only that relying party's keys are taken, and the accept is spent once.
    #[test]
    fn what_an_accept_with_keep_made_is_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = state(Policy::Auto);
        *s.kinds.get::<PasskeyKeys>() = PasskeyKeys::open(dir.path().into());
        accept_rule(&mut s, true);
        assert_eq!(ask(&mut s, 1, "create", "a.example")[1]["decision"], "accept");
        saved_for(&mut s, 1, vec![key("AQ==", "a.example", "AAAA", 0), key("Ag==", "b.example", "AAAA", 0)]);
        assert_eq!(held(&mut s, "a.example"), [("AQ==".into(), "AAAA".into(), 0)]);
        assert!(held(&mut s, "b.example").is_empty(), "not the accept's relying party");
        let on_disk = std::fs::read_to_string(dir.path().join("passkeys.json")).unwrap();
        assert!(on_disk.contains("AQ==") && !on_disk.contains("Ag=="), "{on_disk}");
        // Spent: the same request again changes nothing.
        saved_for(&mut s, 1, vec![key("Aw==", "a.example", "AAAA", 0)]);
        assert_eq!(held(&mut s, "a.example").len(), 1);
        // A later call signs: the count moves on.
        assert_eq!(credentials(&ask(&mut s, 2, "get", "a.example")[1]), 1);
        saved_for(&mut s, 2, vec![key("AQ==", "a.example", "AAAA", 1)]);
        assert_eq!(held(&mut s, "a.example"), [("AQ==".into(), "AAAA".into(), 1)]);
        let again = PasskeyKeys::open(dir.path().into());
        assert_eq!(again.for_rp("a.example")[0].sign_count, 1, "kept with its count");
    }

    /// `passkeys_saved` that names no accept the host sent is not taken. On 892be98 a
    /// forged `keep: true` was written to the kept passkeys.
    #[test]
    fn passkeys_saved_without_a_hosts_accept_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = state(Policy::Auto);
        *s.kinds.get::<PasskeyKeys>() = PasskeyKeys::open(dir.path().into());
        accept_rule(&mut s, true);
        let forged = json!({"type":"passkeys_saved","tab_id":3,"id":7,"keep":true,
            "credentials":[key("AQ==", "bank.example", "BBBB", 1)]});
        feed(&mut s, forged).unwrap();
        // Request 9 was accepted in tab 3, not 4.
        ask(&mut s, 9, "get", "a.example");
        let wrong_tab =
            json!({"type":"passkeys_saved","tab_id":4,"id":9,"credentials":[key("AQ==", "a.example", "BBBB", 1)]});
        feed(&mut s, wrong_tab).unwrap();
        assert!(held(&mut s, "bank.example").is_empty() && held(&mut s, "a.example").is_empty());
        assert!(!dir.path().join("passkeys.json").exists());
    }

    /// Kept keys are never evicted, not even through an accept with keep. On 892be98 257
    /// keys in one `passkeys_saved` evicted every kept key.
    #[test]
    fn a_flood_of_new_keys_evicts_no_kept_key() {
        let mut s = state(Policy::Auto);
        accept_rule(&mut s, true);
        ask(&mut s, 1, "create", "bank.example");
        saved_for(&mut s, 1, vec![key("AQ==", "bank.example", "AAAA", 0)]);
        ask(&mut s, 2, "create", "bank.example");
        let flood: Vec<Value> = (0..257).map(|i| key(&format!("{i}AA="), "bank.example", "AAAA", 0)).collect();
        saved_for(&mut s, 2, flood.clone());
        // Without an accept, as any forged message on 892be98.
        feed(&mut s, json!({"type":"passkeys_saved","tab_id":3,"id":3,"keep":true,"credentials":flood})).unwrap();
        let keys = s.kinds.get::<PasskeyKeys>();
        assert!(keys.kept().iter().any(|k| k.credential_id == "AQ=="), "the first kept key is still kept");
        assert!(keys.kept().len() <= 256);
    }

    /// A known credential ID is taken only as the same key again. On 892be98 a key with a
    /// known ID and another private key replaced the kept one.
    #[test]
    fn a_known_credential_id_with_another_key_is_refused() {
        let mut s = state(Policy::Auto);
        accept_rule(&mut s, true);
        ask(&mut s, 1, "create", "bank.example");
        saved_for(&mut s, 1, vec![key("AQ==", "bank.example", "AAAA", 3)]);
        ask(&mut s, 2, "get", "bank.example");
        let mut other_user = key("AQ==", "bank.example", "AAAA", 4);
        other_user["userHandle"] = json!("dQ==");
        saved_for(
            &mut s,
            2,
            vec![key("AQ==", "bank.example", "BBBB", 4), key("AQ==", "bank.example", "AAAA", 2), other_user],
        );
        assert_eq!(held(&mut s, "bank.example"), [("AQ==".into(), "AAAA".into(), 3)]);
    }
}
