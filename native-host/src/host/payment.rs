//! Payment Request: `PaymentRequest.prototype.show()`. Headless Chromium refuses it by itself
//! within ~25 ms (no payment app; MODAL-FACTS 6); a headful browser with a payment app for
//! the request's methods shows a payment sheet that waits for a person. The page hook
//! (`manifest/inject/48-payment.js`) asks the browser's own `canMakePayment()` first, then
//! holds the call and asks, through `manifest/held_in_page.js`, saying whether an app can
//! take it (`able`: a sheet would show). A refusal rejects `show()` at once as a person's
//! closing of the sheet (`AbortError`); an accept lets the browser have it. The prompt
//! pipeline (`prompt.rs`) does the rest. Pilot off: the browser's way, recorded.

use super::prompt::{Described, PromptKind, Verdict, held_by_rule, held_fits};
use super::protocol::{PaymentAsk, PromptDecision};
use super::record::DecidedBy;
use crate::api::RuleSpec;
use crate::kind::Kind;
use crate::redact::Redactor;
use unmodal_engine::Policy;

impl PromptKind for PaymentAsk {
    fn describe(&self, _redactor: &Redactor, url: &str) -> Described {
        let message = if self.able {
            "payment request (show): a payment app can take it"
        } else {
            "payment request (show): no payment app can take it"
        };
        Described::plain(message, url)
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        held_fits(Kind::Payment, rule, url)
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        held_by_rule(id, rule, "Payment request", "payment", "the browser", "AbortError")
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let refuse = |by, why: &str| Verdict::policy(PromptDecision::Refuse, by, why);
        let browsers = |by, why: &str| Verdict::policy(PromptDecision::Accept, by, why);
        match policy {
            // Without a payment app the browser refuses it itself, without a sheet.
            Policy::Auto if !self.able => browsers(
                DecidedBy::DefaultPolicy,
                "Payment request left to the browser: no payment app can take it, so the browser refuses it itself \
at once (NotSupportedError), without a payment sheet",
            ),
            Policy::MustRespond => Verdict::Hold {
                why: "Payment request held for the agent (policy must_respond): the page's show() waits; answer with \
interact {action:\"handle_dialog\", dialog_id, accept} (true: the browser's payment sheet; false: AbortError at once)"
                    .into(),
            },
            Policy::Auto => refuse(
                DecidedBy::DefaultPolicy,
                "Payment request refused at once by the default policy (AbortError, as when a person closes the \
payment sheet): a payment app can take it, so the browser would show its payment sheet and wait for a person; a \
payment rule with accept: true leaves it to the browser",
            ),
            Policy::AutoAccept => {
                browsers(DecidedBy::Policy, "Payment request left to the browser (the tab's auto_accept policy)")
            }
            Policy::AutoDismiss => {
                refuse(DecidedBy::Policy, "Payment request refused by the tab's auto_dismiss policy")
            }
        }
    }

    fn pilot_off(&self) -> String {
        "AI Web Pilot is off: the browser handles the payment request itself (headless: refused at once; headful, \
with a payment app: a payment sheet that waits for a person); a person must switch the pilot on (`unmodal pilot on` \
in a terminal)"
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

    fn ask(n: u64, able: bool) -> serde_json::Value {
        json!({"type":"prompt_request","kind":"payment","tab_id":3,"id":n,"url":"https://shop/pay","able":able})
    }

    #[test]
    fn the_default_refuses_what_would_show_a_sheet_and_leaves_the_rest_to_the_browser() {
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, ask(1, true)).unwrap())[1]["decision"], "refuse");
        assert_eq!(to_json(&feed(&mut s, ask(2, false)).unwrap())[1]["decision"], "accept");
        let recs: Vec<_> = s.history.iter().map(|r| (r.kind, r.decided_by, r.message.clone())).collect();
        assert_eq!(recs.len(), 2, "both recorded");
        assert!(recs.iter().all(|r| r.0 == Kind::Payment && r.1 == DecidedBy::DefaultPolicy), "{recs:?}");
        assert!(recs[0].2.contains("a payment app can take it"), "{recs:?}");
        let rule = RuleSpec::Held { kind: HeldCall::Payment, accept: true, matcher: MatchArg::default() };
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
}
