//! Calls the page hook holds and refuses itself (`manifest/held_in_page.js`): Payment
//! Request's `show()`, `requestStorageAccess()`, `EyeDropper.open()`. They differ only in
//! words, so they are one kind of code with three descriptions (data below). A refusal
//! rejects the page's call at once with the browser's own error; an accept lets the
//! browser have it. Pilot off: the browser's way, recorded. FedCM sign-ins are such a call
//! too, with a rule and picks of their own (`sign_in/`): they share `HeldInPage`'s words
//! and `Asked`'s description.
//!
//! - **Payment** (`48-payment.js`): headless Chromium refuses it by itself within ~25 ms
//!   (no payment app); a headful browser with a payment app for the request's methods
//!   shows a payment sheet that waits for a person. The hook asks the browser's own
//!   `canMakePayment()` first (`able`: a sheet would show); a refusal is a person's
//!   closing of the sheet (`AbortError`).
//! - **Storage access** (`48-storage-access.js`): in another site's frame without access,
//!   a headful browser that blocks third-party cookies asks the person; headless refuses
//!   at once with `NotAllowedError`; a frame with access is granted without a prompt. The
//!   hook asks the browser's own `hasStorageAccess()` first (`granted`); a frame with
//!   access is left to the browser unrecorded unless a rule says otherwise.
//! - **Eye dropper** (`47-eye-dropper.js`): the browser makes the call first, and one still
//!   pending two microtasks later opened the eye dropper (every failure settles sooner),
//!   which never settles in headless Chromium and, headful, covers the screen until a
//!   person clicks a colour or presses Escape. A refusal is that Escape (`AbortError`).

use super::RuleSpec;
use super::args::Shown;
use super::args::{self, Api, Given, NoFields};
use super::rule::{OwnRule, camel};
use super::{
    Described, EXPIRED_REFUSED, Policies, PromptKind, Says, Spec, Verdict, Words, configured, pilot_off, url_fits,
};
use crate::api::{MatchArg, ParamError, article};
use crate::host::protocol::PromptDecision;
use crate::host::record::{self, DecidedBy, MAX_MESSAGE_CHARS};
use crate::kind::Kind;
use crate::redact::Redactor;
use serde::Deserialize;
use unmodal_engine::Policy;

/// These kinds' handles: the one place their names are written.
pub(crate) const PAYMENT_KIND: Kind = Kind::new("payment");
pub(crate) const STORAGE_ACCESS_KIND: Kind = Kind::new("storage_access");
pub(crate) const EYE_DROPPER_KIND: Kind = Kind::new("eye_dropper");

/// One kind of held call, as data.
pub(super) struct HeldInPage {
    /// Its kind, rule group and closed record's answers.
    pub(super) words: Words,
    /// Its part of `interact`: its words there; its rule is `HeldRule`.
    pub(super) api: Api,
    /// What the call is, as explanations begin ("Payment request").
    pub(super) what: &'static str,
    /// What the record says of it.
    pub(super) message: Message,
    /// A rule's name in explanations ("payment").
    pub(super) rule_name: &'static str,
    /// What an accept leaves it to.
    pub(super) browsers: &'static str,
    /// The page's error on a refusal.
    pub(super) refusal: &'static str,
    pub(super) policies: Policies,
    /// The default policy's answer when the browser refuses it itself, without a prompt
    /// (payment: no app can take it): left to the browser, and why.
    pub(super) auto_when_unable: Option<&'static str>,
    /// A frame that has what it asks for already (storage access) is left to the browser,
    /// unrecorded: nothing would prompt.
    pub(super) unprompted_when_granted: bool,
    /// What the browser does itself while the pilot is off.
    pub(super) pilot_off: &'static str,
    /// What a rule will do, as its setup says: (what, accepted, refused).
    pub(super) rule_set: (&'static str, &'static str, &'static str),
}

/// What a held call's record says.
pub(super) enum Message {
    /// Always the same.
    Plain(&'static str),
    /// By one flag of the request: (when set, when not).
    Flag(fn(&HeldAsk) -> bool, &'static str, &'static str),
    /// The provider the page named (cut, redacted) in `with`, at `{}`; `without` when none.
    Provider { with: (&'static str, &'static str), without: &'static str },
}

pub(super) static PAYMENT: HeldInPage = HeldInPage {
    api: held_api(
        "A Payment Request's show(): accept = the browser's own way (headful, with a payment\napp: its payment \
sheet, which waits for a person), dismiss = refused at once as a\nperson's closing of the sheet (AbortError).",
    ),
    words: Words {
        kind: PAYMENT_KIND,
        group: "payment",
        closed: (
            "left to the browser (its payment sheet, or its own refusal)",
            "refused (the page got AbortError, as after a person closes the payment sheet)",
        ),
        expired: EXPIRED_REFUSED,
    },
    what: "Payment request",
    message: Message::Flag(
        |a| a.able,
        "payment request (show): a payment app can take it",
        "payment request (show): no payment app can take it",
    ),
    rule_name: "payment",
    browsers: "the browser",
    refusal: "AbortError",
    policies: Policies {
        hold: "Payment request held for the agent (policy must_respond): the page's show() waits; answer with \
interact {action:\"handle_dialog\", dialog_id, accept} (true: the browser's payment sheet; false: AbortError at once)",
        auto: Says::Refuse(
            "Payment request refused at once by the default policy (AbortError, as when a person closes the payment \
sheet): a payment app can take it, so the browser would show its payment sheet and wait for a person; a payment rule \
with accept: true leaves it to the browser",
        ),
        auto_accept: Says::Accept("Payment request left to the browser (the tab's auto_accept policy)"),
        auto_dismiss: Says::Refuse("Payment request refused by the tab's auto_dismiss policy"),
    },
    auto_when_unable: Some(
        "Payment request left to the browser: no payment app can take it, so the browser refuses it itself at once \
(NotSupportedError), without a payment sheet",
    ),
    unprompted_when_granted: false,
    pilot_off: "the browser handles the payment request itself (headless: refused at once; headful, with a payment \
app: a payment sheet that waits for a person)",
    rule_set: (
        "payment request (show)",
        "leave it to the browser (headful, with a payment app: its payment sheet)",
        "refuse it at once (the page gets AbortError, as after a person closes the sheet)",
    ),
};

pub(super) static STORAGE_ACCESS: HeldInPage = HeldInPage {
    api: held_api(
        "document.requestStorageAccess(): accept = the browser's own way (headful, another\nsite's frame: it may \
ask the person), dismiss = refused at once (NotAllowedError, the\nbrowser's own refusal).",
    ),
    words: Words {
        kind: STORAGE_ACCESS_KIND,
        group: "storage access",
        closed: ("left to the browser (its grant, prompt or refusal)", "refused (the page got NotAllowedError)"),
        expired: EXPIRED_REFUSED,
    },
    what: "Storage access",
    message: Message::Flag(
        |a| a.granted,
        "storage access request (the frame has access already)",
        "storage access request (requestStorageAccess)",
    ),
    rule_name: "storage_access",
    browsers: "the browser",
    refusal: "NotAllowedError",
    policies: Policies {
        hold: "Storage access request held for the agent (policy must_respond): the page's call waits; answer with \
interact {action:\"handle_dialog\", dialog_id, accept} (true: the browser's own way; false: NotAllowedError at once)",
        auto: Says::Refuse(
            "Storage access refused at once by the default policy (NotAllowedError, the browser's own refusal): \
headless, the browser refuses it too; a headful one that blocks third-party cookies would ask the person; a \
storage_access rule with accept: true leaves it to the browser",
        ),
        auto_accept: Says::Accept("Storage access left to the browser (the tab's auto_accept policy)"),
        auto_dismiss: Says::Refuse("Storage access refused by the tab's auto_dismiss policy"),
    },
    auto_when_unable: None,
    unprompted_when_granted: true,
    pilot_off: "the browser handles the storage access request itself (headless: refused at once; headful, \
third-party cookies blocked: a prompt that waits for a person)",
    rule_set: (
        "storage access request",
        "leave it to the browser (its grant, prompt or refusal)",
        "refuse it at once (the page gets NotAllowedError, the browser's own refusal)",
    ),
};

pub(super) static EYE_DROPPER: HeldInPage = HeldInPage {
    api: held_api(
        "EyeDropper.open(), once the browser opened its eye dropper: accept = leave it to the\nbrowser (headless: it \
never settles; headful: it waits for a person's click),\ndismiss = the page gets a person's Escape at once \
(AbortError).",
    ),
    words: Words {
        kind: EYE_DROPPER_KIND,
        group: "eye dropper",
        closed: (
            "left to the browser's eye dropper",
            "refused (the page got AbortError, as after a person presses Escape)",
        ),
        expired: EXPIRED_REFUSED,
    },
    what: "Eye dropper",
    message: Message::Plain("eye dropper (EyeDropper.open): the page asks for a colour from the screen"),
    rule_name: "eye_dropper",
    browsers: "the browser's eye dropper",
    refusal: "AbortError",
    policies: Policies {
        hold: "Eye dropper held for the agent (policy must_respond): the page's open() waits; answer with interact \
{action:\"handle_dialog\", dialog_id, accept} (true: the browser's eye dropper; false: AbortError at once)",
        auto: Says::Refuse(
            "Eye dropper refused at once by the default policy (AbortError, as when a person presses Escape): \
headless, the browser's eye dropper never settles; a headful one covers the screen until a person clicks a colour; an \
eye_dropper rule with accept: true leaves it to the browser",
        ),
        auto_accept: Says::Accept("Eye dropper left to the browser (the tab's auto_accept policy)"),
        auto_dismiss: Says::Refuse("Eye dropper refused by the tab's auto_dismiss policy"),
    },
    auto_when_unable: None,
    unprompted_when_granted: false,
    pilot_off: "the browser handles the eye dropper itself (headless: it never settles; headful: it covers the \
screen until a person clicks a colour or presses Escape)",
    rule_set: (
        "eye dropper (EyeDropper.open)",
        "leave it to the browser's eye dropper",
        "refuse it at once (the page gets AbortError, as after a person presses Escape)",
    ),
};

/// A held call's part of `interact`: no fields of its own, `HeldRule`.
pub(super) const fn held_api(description: &'static str) -> Api {
    Api {
        description,
        instructions: "",
        fields: &[],
        schema: args::schema_of::<NoFields, NoFields>,
        read: args::read_of::<NoFields, NoFields>,
        rule: held_rule,
        answer: None,
        paths: &[],
        own_dir: None,
    }
}

/// A held call's rule: leave it to the browser (accept) or refuse it at once with the
/// browser's own refusal; `match.url_contains` is on the frame's URL.
#[derive(Clone, PartialEq)]
pub(crate) struct HeldRule {
    pub kind: Kind,
    pub accept: bool,
    pub matcher: MatchArg,
}

impl OwnRule for HeldRule {
    fn kind(&self) -> Kind {
        self.kind
    }
    fn accept(&self) -> bool {
        self.accept
    }
    fn matcher(&self) -> &MatchArg {
        &self.matcher
    }
    crate::own_plumbing!();
}

impl std::fmt::Debug for HeldRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("kind", &format_args!("{}", camel(self.kind.as_str())))
            .field("accept", &self.accept)
            .field("matcher", &Shown(&self.matcher))
            .finish()
    }
}

fn held_rule(kind: Kind, g: &Given) -> Result<RuleSpec, ParamError> {
    let name = kind.as_str();
    let a = article(name);
    let matcher = g.url_only_match(&format!("{a} {name} call"), "leave match out")?;
    g.no_text(format!("{a} {name} rule takes no text"))?;
    Ok(RuleSpec::own(HeldRule { kind, accept: g.accept(), matcher }))
}

impl Spec for HeldInPage {
    fn words(&self) -> &Words {
        &self.words
    }

    fn ask(&self, fields: serde_json::Value) -> Result<Box<dyn PromptKind + '_>, serde_json::Error> {
        Ok(Box::new(Asked { of: self, ask: HeldAsk::deserialize(fields)? }))
    }

    fn api(&self) -> Option<&Api> {
        Some(&self.api)
    }

    fn rule_set(&self, rule: &RuleSpec, once: bool) -> Option<String> {
        let HeldRule { kind, accept, .. } = rule.of()?;
        let (what, accepted, refused) = self.rule_set;
        (*kind == self.words.kind).then(|| configured(what, if *accept { accepted } else { refused }, once))
    }
}

/// A held call's request, with its kind's description.
pub(super) struct Asked<'a> {
    pub(super) of: &'a HeldInPage,
    pub(super) ask: HeldAsk,
}

impl PromptKind for Asked<'_> {
    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        match self.of.message {
            Message::Plain(message) => Described::plain(message, url),
            Message::Flag(flag, set, unset) => Described::plain(if flag(&self.ask) { set } else { unset }, url),
            Message::Provider { with: (before, after), without } => {
                let (provider, truncated) = record::clip(&self.ask.provider, MAX_MESSAGE_CHARS);
                let (provider, redacted) = redactor.apply(&provider);
                let message =
                    if provider.is_empty() { without.to_string() } else { format!("{before}{provider}{after}") };
                Described {
                    message,
                    truncated,
                    redacted,
                    url: record::clip(url, 2048).0,
                    details: record::Details::default(),
                }
            }
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let HeldRule { kind, matcher, .. } = rule.of()?;
        (*kind == self.of.words.kind && url_fits(matcher.url_contains.as_ref(), url))
            .then(|| usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        let HeldInPage { what, rule_name, browsers, refusal, .. } = self.of;
        if rule.accept() {
            let why = format!("{what} left to {browsers}: {rule_name} rule {id} matched");
            return Verdict::rule(PromptDecision::Accept, id, why);
        }
        Verdict::rule(PromptDecision::Refuse, id, format!("{what} refused: {rule_name} rule {id} matched ({refusal})"))
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        match self.of.auto_when_unable {
            Some(why) if policy == Policy::Auto && !self.ask.able => {
                Verdict::policy(PromptDecision::Accept, DecidedBy::DefaultPolicy, why)
            }
            _ => self.of.policies.verdict(policy),
        }
    }

    fn unprompted(&self) -> Option<PromptDecision> {
        (self.of.unprompted_when_granted && self.ask.granted).then_some(PromptDecision::Accept)
    }

    fn pilot_off(&self) -> String {
        pilot_off(self.of.pilot_off)
    }
}

/// A call the page hook holds and refuses itself (`manifest/held_in_page.js`): each kind
/// sends the one field it has.
#[derive(Debug, Deserialize)]
pub struct HeldAsk {
    /// Sign-in: the identity provider's config URL, as the page named its first one
    /// (page-made).
    #[serde(default)]
    pub provider: String,
    /// Payment: the browser's own canMakePayment(): can a payment app take it (so a headful
    /// browser would show its payment sheet)?
    #[serde(default)]
    pub able: bool,
    /// Storage access: the browser's own hasStorageAccess(): the frame has access already
    /// (the browser would grant it without asking).
    #[serde(default)]
    pub granted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::DialogCall;
    use crate::host::state::tests::{feed, state_with, to_json};
    use ringbuf::traits::Consumer;
    use serde_json::json;

    fn ask(n: u64, able: bool) -> serde_json::Value {
        json!({"type":"prompt_request","kind":"payment","tab_id":3,"id":n,"url":"https://shop/pay","able":able})
    }

    fn storage_ask(n: u64, granted: bool) -> serde_json::Value {
        json!({"type":"prompt_request","kind":"storage_access","tab_id":3,"id":n,"url":"https://widget/","granted":granted})
    }

    #[test]
    fn the_default_refuses_what_would_show_a_sheet_and_leaves_the_rest_to_the_browser() {
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, ask(1, true)).unwrap())[1]["decision"], "refuse");
        assert_eq!(to_json(&feed(&mut s, ask(2, false)).unwrap())[1]["decision"], "accept");
        let recs: Vec<_> = s.history.iter().map(|r| (r.kind, r.decided_by, r.message.clone())).collect();
        assert_eq!(recs.len(), 2, "both recorded");
        assert!(recs.iter().all(|r| r.0 == PAYMENT_KIND && r.1 == DecidedBy::DefaultPolicy), "{recs:?}");
        assert!(recs[0].2.contains("a payment app can take it"), "{recs:?}");
        let rule = RuleSpec::own(HeldRule { kind: PAYMENT_KIND, accept: true, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(3, true)).unwrap())[1]["decision"], "accept");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }

    #[test]
    fn must_respond_holds_every_one() {
        let mut s = state_with(Policy::MustRespond);
        for (n, able) in [(1, false), (2, true)] {
            let out = feed(&mut s, ask(n, able)).unwrap();
            assert!(to_json(&out).iter().all(|m| m["decision"].is_null()), "nothing answered: {out:?}");
        }
        assert_eq!(s.held.len(), 2);
    }
    #[test]
    fn an_eye_dropper_is_refused_by_default_left_to_the_browser_by_a_rule_and_held_under_must_respond() {
        let ask =
            |n: u64| json!({"type":"prompt_request","kind":"eye_dropper","tab_id":3,"id":n,"url":"https://paint/"});
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, ask(1)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by), (EYE_DROPPER_KIND, DecidedBy::DefaultPolicy));
        assert!(rec.message.starts_with("eye dropper (EyeDropper.open)"), "{}", rec.message);
        let rule = RuleSpec::own(HeldRule { kind: EYE_DROPPER_KIND, accept: true, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(2)).unwrap())[1]["decision"], "accept");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
        // Spent: the default again.
        assert_eq!(to_json(&feed(&mut s, ask(3)).unwrap())[1]["decision"], "refuse");
        let mut s = state_with(Policy::MustRespond);
        let out = feed(&mut s, ask(4)).unwrap();
        assert!(to_json(&out).iter().all(|m| m["decision"].is_null()), "nothing answered: {out:?}");
        assert_eq!(s.held.len(), 1);
        // A field that does not read as its description's: the whole request is refused.
        let mut bad = ask(5);
        bad["provider"] = json!(5);
        assert!(feed(&mut s, bad).is_err());
        assert_eq!(s.held.len(), 1);
    }

    #[test]
    fn the_default_refuses_a_frame_without_access_and_a_rule_decides_even_one_with_it() {
        let mut s = state_with(Policy::MustRespond);
        // Access already: nothing would prompt, nothing is held or recorded.
        assert_eq!(to_json(&feed(&mut s, storage_ask(1, true)).unwrap())[0]["decision"], "accept");
        assert_eq!((s.held.len(), s.history.iter().count()), (0, 0));
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, storage_ask(2, false)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by), (STORAGE_ACCESS_KIND, DecidedBy::DefaultPolicy));
        let rule = RuleSpec::own(HeldRule { kind: STORAGE_ACCESS_KIND, accept: false, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, storage_ask(3, true)).unwrap())[1]["decision"], "refuse");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }
}
