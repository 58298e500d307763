//! Sign-in (FedCM): `navigator.credentials.get({identity})`. Headless Chromium refuses it
//! with `NetworkError` after a random 0.2–31 s (FedCM's anti-probing delay; MODAL-FACTS 6),
//! and a headful one shows an account chooser that waits for a person. The page hook
//! (`manifest/inject/48-passkeys.js`, which wraps the same method) holds the call before the
//! browser sees it and asks, through `manifest/held_in_page.js`: a refusal rejects it at once
//! with the browser's own `NetworkError`; an accept lets the browser have it (its chooser,
//! or its refusal). The prompt pipeline (`prompt.rs`) does the rest. Pilot off: the
//! browser's way, recorded.

use super::prompt::{Described, PromptKind, Verdict, held_by_rule, held_fits};
use super::protocol::{PromptDecision, SignInAsk};
use super::record::{self, DecidedBy, MAX_MESSAGE_CHARS};
use crate::api::RuleSpec;
use crate::kind::Kind;
use crate::redact::Redactor;
use unmodal_engine::Policy;

impl PromptKind for SignInAsk {
    fn describe(&self, redactor: &Redactor, url: &str) -> Described {
        let (provider, truncated) = record::clip(&self.provider, MAX_MESSAGE_CHARS);
        let (provider, redacted) = redactor.apply(&provider);
        let message = if provider.is_empty() {
            "sign in (FedCM)".to_string()
        } else {
            format!("sign in with {provider} (FedCM)")
        };
        Described { message, truncated, redacted, url: record::clip(url, 2048).0, details: None }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        held_fits(Kind::SignIn, rule, url)
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        held_by_rule(id, rule, "Sign-in", "sign-in", "the browser's account chooser", "NetworkError")
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let refuse = |by, why: &str| Verdict::policy(PromptDecision::Refuse, by, why);
        match policy {
            Policy::MustRespond => Verdict::Hold {
                why: "Sign-in held for the agent (policy must_respond): the page's call waits; answer with interact \
{action:\"handle_dialog\", dialog_id, accept} (true: the browser's account chooser; false: NetworkError at once)"
                    .into(),
            },
            Policy::Auto => refuse(
                DecidedBy::DefaultPolicy,
                "Sign-in refused at once by the default policy (NetworkError, the browser's own refusal): headless, \
the browser would have refused it after a random delay of up to 31 s; a headful one would show an account chooser \
that waits for a person; a sign_in rule with accept: true leaves it to the browser",
            ),
            Policy::AutoAccept => Verdict::policy(
                PromptDecision::Accept,
                DecidedBy::Policy,
                "Sign-in left to the browser's account chooser (the tab's auto_accept policy)",
            ),
            Policy::AutoDismiss => refuse(DecidedBy::Policy, "Sign-in refused by the tab's auto_dismiss policy"),
        }
    }

    fn pilot_off(&self) -> String {
        "AI Web Pilot is off: the browser handles the sign-in itself (headless: a NetworkError after up to 31 s; \
headful: an account chooser that waits for a person); a person must switch the pilot on (`unmodal pilot on` in a \
terminal)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, state_with, to_json};
    use super::*;
    use crate::api::{DialogCall, HeldCall, MatchArg};
    use ringbuf::traits::Consumer;
    use serde_json::json;

    #[test]
    fn the_default_refuses_a_rule_leaves_it_to_the_browser_and_page_text_is_redacted() {
        let mut s = state_with(Policy::Auto);
        let ask = |n: u64| {
            json!({"type":"prompt_request","kind":"sign_in","tab_id":3,"id":n,"url":"http://a/login",
                   "provider":"https://idp.example/config.json?token=s3cretvalue1"})
        };
        assert_eq!(to_json(&feed(&mut s, ask(1)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by), (Kind::SignIn, DecidedBy::DefaultPolicy));
        assert!(rec.message.starts_with("sign in with https://idp.example/") && !rec.message.contains("s3cret"));
        let rule = RuleSpec::Held { kind: HeldCall::SignIn, accept: true, matcher: MatchArg::default() };
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(2)).unwrap())[1]["decision"], "accept");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }
}
