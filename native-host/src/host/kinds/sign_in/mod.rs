//! Sign-in (`navigator.credentials.get({identity})`, from `48-passkeys.js`): a FedCM
//! request the page hook holds before the browser sees it. Headless Chromium refuses it
//! with `NetworkError` after a random 0.2–31 s (FedCM's anti-probing delay; MODAL-FACTS 6);
//! a headful one shows an account chooser that waits for a person. One of the calls held in
//! the page (`held_in_page.rs`), with words and a rule of its own.
//!
//! **Picks** (issue 52, `picks.rs`): where the host's CDP answerer covers the frame (a
//! connection held, the pilot on, `FedCm` on in its target), a rule that picks an account
//! (`account_id`, `account_email`, `only_account`) or `must_respond` lets the call through
//! (the hook's ordinary accept: nothing new is sent to, or read from, the page). The browser
//! then asks the provider and shows its account chooser, which the answerer sees
//! (`dialogShown`); the account is picked there, by the rule, or by the agent on a record of
//! the chooser held for it. Where nothing is covered such a rule refuses, as a refusal
//! always did: the provider is never asked.

mod picks;

use super::args::{self, Api, Given, NoFields, Owned};
use super::held_in_page::{Asked, HeldAsk, HeldInPage, Message, held_api};
use super::rule::Carry;
use super::{
    Described, EXPIRED_REFUSED, Policies, PromptKind, RuleSpec, Says, Spec, Verdict, With, Words, configured, url_fits,
};
use crate::api::{MatchArg, ParamError, bad};
use crate::host::answerer::{Act, Answerer, PickError, Seen, Want, Which};
use crate::host::kinds::Answered;
use crate::host::protocol::PromptDecision;
use crate::host::record::DialogRecord;
use crate::host::state::State;
use crate::kind::Kind;
use crate::redact::Redactor;
use picks::Pick;
use schemars::JsonSchema;
use serde::Deserialize;
use std::cell::RefCell;
use unmodal_engine::Policy;

/// This kind's handle: the one place its name is written.
pub(crate) const SIGN_IN_KIND: Kind = Kind::new("sign_in");

/// The sign-in kind (its words are `DATA`'s, a held call's; its rule and picks its own).
pub(super) struct SignIn;

pub(super) static SIGN_IN: SignIn = SignIn;

static DATA: HeldInPage = HeldInPage {
    // Unused: the kind's part of `interact` is `API`.
    api: held_api(""),
    words: Words {
        kind: SIGN_IN_KIND,
        group: "sign-in",
        closed: ("left to the browser's account chooser", "refused (the page got NetworkError)"),
        expired: EXPIRED_REFUSED,
    },
    what: "Sign-in",
    message: Message::Provider { with: ("sign in with ", " (FedCM)"), without: "sign in (FedCM)" },
    rule_name: "sign-in",
    browsers: "the browser's account chooser",
    refusal: "NetworkError",
    policies: Policies {
        hold: "Sign-in held for the agent (policy must_respond): the page's call waits; answer with interact \
{action:\"handle_dialog\", dialog_id, accept} (true: the browser's account chooser, held for you next with its \
accounts where Unmodal's own DevTools connection covers the page; false: NetworkError at once, the provider never \
asked)",
        auto: Says::Refuse(
            "Sign-in refused at once by the default policy (NetworkError, the browser's own refusal): headless, the \
browser would have refused it after a random delay of up to 31 s; a headful one would show an account chooser that \
waits for a person; a sign_in rule with accept: true leaves it to the browser",
        ),
        auto_accept: Says::Accept("Sign-in left to the browser's account chooser (the tab's auto_accept policy)"),
        auto_dismiss: Says::Refuse("Sign-in refused by the tab's auto_dismiss policy"),
    },
    auto_when_unable: None,
    unprompted_when_granted: false,
    pilot_off: "the browser handles the sign-in itself (headless: a NetworkError after up to 31 s; headful: an \
account chooser that waits for a person)",
    rule_set: (
        "sign-in (FedCM)",
        "leave it to the browser's account chooser",
        "refuse it at once (the page gets NetworkError)",
    ),
};

/// How a sign-in rule picks an account in the browser's account chooser.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AccountPick {
    /// The account with this `account_id` (the provider's id, as the chooser lists it).
    Id(String),
    /// The account with this email (case-insensitive; matched on the provider's own list,
    /// before any redaction).
    Email(String),
    /// The only account offered; with several, none is picked and the chooser is closed.
    Only,
}

/// A sign-in rule: leave it to the browser (accept), refuse it at once (NetworkError), or,
/// with an account, let it through and pick that account; `match.url_contains` is on the
/// frame's URL.
#[derive(Clone, PartialEq)]
pub(crate) struct SignInRule {
    pub accept: bool,
    pub account: Option<AccountPick>,
    pub matcher: MatchArg,
}

crate::own_rule!(SignInRule, "SignIn", SIGN_IN_KIND, accept: |r| r.accept, in_config: |_| false, show: [accept, account]);

/// Longest account id or email a rule or answer takes.
const MAX_ACCOUNT: usize = 512;

/// Its own fields of `interact`.
#[derive(Deserialize, JsonSchema)]
struct SignInFields {
    /// dialog_type "sign_in": with setup (accept: true), the account the rule picks in the
    /// browser's FedCM account chooser; answering a held sign-in account chooser, the
    /// account to pick (one of those its record lists). Needs Unmodal's own DevTools
    /// connection (unmodal mcp --browser or --cdp-endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account_id: Option<String>,
    /// dialog_type "sign_in", with setup and accept: true: the rule picks the account with
    /// this email (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    account_email: Option<String>,
    /// dialog_type "sign_in", with setup and accept: true: the rule picks the only account
    /// the provider offers (with several, none is picked and the chooser is closed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    only_account: Option<bool>,
}

static API: Api = Api {
    description: "A FedCM sign-in (navigator.credentials.get with identity): accept = the browser's own\naccount chooser \
(headful: it waits for a person), dismiss = refused at once\n(NetworkError, as the browser refuses one it cannot \
complete).",
    instructions: "",
    fields: &[
        Owned { name: "account_id", held: Some("sign-in account chooser"), in_clear: false, late: false },
        Owned::setup("account_email"),
        Owned::setup("only_account"),
    ],
    schema: args::schema_of::<SignInFields, NoFields>,
    read: args::read_of::<SignInFields, NoFields>,
    rule: sign_in_rule,
    answer: Some(sign_in_answer),
    paths: &[],
    own_dir: None,
};

/// An account id or email as given: not empty, not too long.
fn account_text(field: &str, v: String) -> Result<String, ParamError> {
    if v.trim().is_empty() || v.chars().count() > MAX_ACCOUNT {
        return Err(bad(field, format!("an account's id or email: 1 to {MAX_ACCOUNT} characters")));
    }
    Ok(v)
}

fn sign_in_rule(_: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let matcher = g.url_only_match("a sign_in call", "leave match out")?;
    g.no_text("a sign_in rule takes no text")?;
    let f: SignInFields = g.fields()?;
    let account = match (f.account_id, f.account_email, f.only_account) {
        (None, None, None) => None,
        (Some(id), None, None) => Some(AccountPick::Id(account_text("account_id", id)?)),
        (None, Some(e), None) => Some(AccountPick::Email(account_text("account_email", e)?)),
        (None, None, Some(true)) => Some(AccountPick::Only),
        (None, None, Some(false)) => return Err(bad("only_account", "takes true (or leave it out)")),
        _ => return Err(bad("account_id", "a rule picks by one of account_id, account_email, only_account")),
    };
    let accept = g.accept();
    if account.is_some() && !accept {
        let field = if g.given("account_id") {
            "account_id"
        } else if g.given("account_email") {
            "account_email"
        } else {
            "only_account"
        };
        return Err(bad(field, "picks an account: only with accept: true"));
    }
    Ok(RuleSpec::own(SignInRule { accept, account, matcher }))
}

fn sign_in_answer(g: &Given) -> Result<Carry, ParamError> {
    if g.args.accept == Some(false) || g.args.text.is_some() {
        return Err(bad(
            "account_id",
            "picks an account in a held sign-in account chooser: only with accept: true (or left out), without text",
        ));
    }
    let f: SignInFields = g.fields()?;
    Ok(Carry::new(picks::Choice(Some(account_text("account_id", f.account_id.unwrap_or_default())?))))
}

impl AccountPick {
    /// As explanations name it.
    fn said(&self) -> String {
        match self {
            Self::Id(id) => format!("account_id {id:?}"),
            Self::Email(_) => "the account with the rule's email".to_owned(),
            Self::Only => "the only account".to_owned(),
        }
    }
}

impl Spec for SignIn {
    fn words(&self) -> &Words {
        &DATA.words
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        let ask = HeldAsk::deserialize(fields)?;
        Ok(Box::new(SignInAsk { inner: Asked { of: &DATA, ask }, seen: RefCell::default() }))
    }

    fn api(&self) -> Option<&Api> {
        Some(&API)
    }

    fn view(&self, rule: &RuleSpec, v: &mut serde_json::Map<String, serde_json::Value>) {
        match rule.of::<SignInRule>().and_then(|r| r.account.as_ref()) {
            Some(AccountPick::Id(id)) => drop(v.insert("account_id".into(), id.clone().into())),
            // Personal data: an answer shows the rule's email only through the redactor.
            Some(AccountPick::Email(_)) => drop(v.insert("account_email".into(), "(set)".into())),
            Some(AccountPick::Only) => drop(v.insert("only_account".into(), true.into())),
            None => {}
        }
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let SignInRule { accept, account, .. } = rule.of()?;
        let (what, accepted, refused) = DATA.rule_set;
        let will = match account {
            Some(pick) => format!(
                "let it through and pick {} in the browser's account chooser, where Unmodal's own DevTools \
connection covers the page and the pilot is on (elsewhere refuse it at once: the provider is never asked)",
                pick.said()
            ),
            None if *accept => accepted.to_owned(),
            None => refused.to_owned(),
        };
        Some(configured(what, &will, once))
    }

    fn accept_refused(&self, held: &DialogRecord, carrying: bool) -> Option<String> {
        picks::accept_refused(held, carrying)
    }

    fn accept_with(&self, _held: &DialogRecord) -> With {
        With::own(picks::Choice(None))
    }

    fn answered_on_connection(&self, s: &State, record: u64) -> bool {
        picks::is_chooser(s, record)
    }

    fn answerer_want(&self, s: &State) -> Want {
        Want { accounts: picks::wanted(s), ..Want::NONE }
    }

    fn answerer_seen(&self, s: &mut State, seen: &Seen, out: &mut Answered) {
        picks::seen(s, seen, out);
    }

    fn answerer_acted(&self, s: &mut State, act: &Act, result: &Result<(), PickError>, _out: &mut Answered) {
        picks::acted(s, act, result);
    }
}

/// What the pipeline saw of the state as the request came, for the verdict: the pilot, the
/// answerer, the frame's URL.
#[derive(Default)]
struct AtRequest {
    pilot: bool,
    answerer: Option<Answerer>,
    url: String,
}

/// A sign-in request, with what decides whether a pick can come.
struct SignInAsk<'a> {
    inner: Asked<'a>,
    seen: RefCell<AtRequest>,
}

impl SignInAsk<'_> {
    /// A pick can come: the pilot is on and the answerer covers the frame (its target
    /// attached, `FedCm` on), as the answerer itself sees it, never the page's word.
    fn covered(&self) -> bool {
        let at = self.seen.borrow();
        covers(at.pilot, at.answerer.as_ref(), &at.url)
    }

    fn pick(&self, by: picks::PickBy) -> With {
        With::own(Pick { url: self.seen.borrow().url.clone(), by })
    }
}

/// Whether a pick can come for a call at `url`: the pilot on, the answerer covering it.
fn covers(pilot: bool, answerer: Option<&Answerer>, url: &str) -> bool {
    pilot && answerer.is_some_and(|a| a.held() && a.covers(url, Which::Accounts))
}

impl PromptKind for SignInAsk<'_> {
    fn arrived(&self, s: &mut State) {
        let mut at = self.seen.borrow_mut();
        at.pilot = s.pilot;
        at.answerer = Some(s.answerer.clone());
    }

    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        self.seen.borrow_mut().url = url.to_owned();
        self.inner.describe(redactor, url)
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let SignInRule { matcher, .. } = rule.of()?;
        url_fits(matcher.url_contains.as_ref(), url).then(|| usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let Some(SignInRule { accept, account, .. }) = rule.of::<SignInRule>() else {
            return self.inner.by_policy(Policy::Auto);
        };
        let HeldInPage { what, rule_name, browsers, refusal, .. } = &DATA;
        match account {
            Some(pick) if self.covered() => {
                let why = format!(
                    "{what} let through for {rule_name} rule {id}'s pick ({}): the browser asks the provider, and the \
account is picked in its account chooser",
                    pick.said()
                );
                Verdict::rule(PromptDecision::Accept, id, why)
                    .carrying(self.pick(picks::PickBy::Rule { rule: id, account: pick.clone() }))
            }
            Some(_) => Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!(
                    "{what} refused: {rule_name} rule {id} picks an account, but {} ({refusal}; the provider was not \
asked)",
                    picks::why_no_pick(self.seen.borrow().answerer.as_ref())
                ),
            ),
            None if *accept => Verdict::rule(
                PromptDecision::Accept,
                id,
                format!("{what} left to {browsers}: {rule_name} rule {id} matched"),
            ),
            None => Verdict::rule(
                PromptDecision::Refuse,
                id,
                format!("{what} refused: {rule_name} rule {id} matched ({refusal})"),
            ),
        }
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        // Under must_respond the call is held for the agent before the provider is asked,
        // as always; the agent's accept lets it through for its own pick (`picks::Choice`).
        self.inner.by_policy(policy)
    }

    fn pilot_off(&self) -> String {
        self.inner.pilot_off()
    }
}
#[cfg(test)]
mod picks_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::sign_in::SignInRule;
    use crate::host::kinds::{DialogCall, RuleSpec};
    use crate::host::record::DecidedBy;
    use crate::host::state::tests::{feed, state_with, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::json;
    use unmodal_engine::Policy;

    #[test]
    fn the_default_refuses_a_rule_leaves_it_to_the_browser_and_page_text_is_redacted() {
        let mut s = state_with(Policy::Auto);
        let ask = |n: u64| {
            json!({"type":"prompt_request","kind":"sign_in","tab_id":3,"id":n,"url":"http://a/login",
                   "provider":"https://idp.example/config.json?token=s3cretvalue1"})
        };
        assert_eq!(to_json(&feed(&mut s, ask(1)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by), (SIGN_IN_KIND, DecidedBy::DefaultPolicy));
        assert!(rec.message.starts_with("sign in with https://idp.example/") && !rec.message.contains("s3cret"));
        let rule = RuleSpec::own(SignInRule { accept: true, account: None, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(2)).unwrap())[1]["decision"], "accept");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }

    fn call(v: serde_json::Value) -> Result<DialogCall, crate::api::ParamError> {
        let mut a = json!({"action": "handle_dialog"});
        a.as_object_mut().unwrap().extend(v.as_object().unwrap().clone());
        crate::host::kinds::args::validate(&crate::host::kinds::args::read(a)?)
    }

    #[test]
    fn a_rule_picks_by_one_of_its_fields_with_accept_and_an_answer_names_an_account() {
        let setup = |more: serde_json::Value| {
            let mut v = json!({"setup": true, "dialog_type": "sign_in"});
            v.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
            call(v)
        };
        let rule = |c: DialogCall| match c {
            DialogCall::Setup { rule, .. } => rule.of::<SignInRule>().cloned().unwrap().account,
            other => panic!("{other:?}"),
        };
        assert_eq!(rule(setup(json!({"account_id": "u1"})).unwrap()), Some(AccountPick::Id("u1".into())));
        assert_eq!(rule(setup(json!({"account_email": "a@b.c"})).unwrap()), Some(AccountPick::Email("a@b.c".into())));
        assert_eq!(rule(setup(json!({"only_account": true})).unwrap()), Some(AccountPick::Only));
        assert_eq!(rule(setup(json!({})).unwrap()), None);
        let e = setup(json!({"account_id": "u1", "accept": false})).unwrap_err();
        assert!(e.param == "account_id" && e.message.contains("accept: true"), "{e:?}");
        let e = setup(json!({"account_id": "u1", "only_account": true})).unwrap_err();
        assert!(e.message.contains("one of"), "{e:?}");
        assert_eq!(setup(json!({"account_id": " "})).unwrap_err().param, "account_id");
        assert_eq!(setup(json!({"only_account": false})).unwrap_err().param, "only_account");
        // account_email and only_account are a rule's; account_id also answers a held chooser.
        assert!(call(json!({"dialog_id": 4, "account_email": "a@b.c"})).is_err());
        match call(json!({"dialog_id": 4, "account_id": "u2"})).unwrap() {
            DialogCall::Carrying { dialog_id: Some(4), with, .. } => {
                assert_eq!(with.of::<picks::Choice>(), Some(&picks::Choice(Some("u2".into()))));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(call(json!({"dialog_id": 4, "account_id": "u2", "accept": false})).unwrap_err().param, "account_id");
        // Another kind's setup takes none of them.
        assert!(call(json!({"setup": true, "dialog_type": "payment", "account_id": "u1"})).is_err());
    }

    /// Where the host holds no DevTools connection, a rule that picks refuses the call at
    /// once (the provider is never asked) and says why; must_respond holds it as before.
    #[test]
    fn with_no_connection_a_picking_rule_refuses_and_must_respond_holds() {
        let ask = |n: u64| {
            json!({"type":"prompt_request","kind":"sign_in","tab_id":3,"id":n,"url":"http://a/login",
                   "provider":"https://idp.example/config.json"})
        };
        let mut s = state_with(Policy::Auto);
        let account = Some(AccountPick::Id("u1".into()));
        let rule = RuleSpec::own(SignInRule { accept: true, account, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: false, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(1)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.accepted), (DecidedBy::Rule, Some(false)));
        assert!(rec.explanation.contains("holds no DevTools connection"), "{}", rec.explanation);
        assert!(!picks::wanted_by_pending(&s), "nothing waits for a chooser");
        let mut s = state_with(Policy::MustRespond);
        let out = feed(&mut s, ask(2)).unwrap();
        assert!(to_json(&out).iter().all(|m| m["decision"].is_null()), "held: {out:?}");
        assert_eq!(s.held.len(), 1);
    }
}
