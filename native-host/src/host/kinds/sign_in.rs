//! Sign-in (`navigator.credentials.get({identity})`, from `48-passkeys.js`): a FedCM
//! request the page hook holds before the browser sees it. Headless Chromium refuses it
//! with `NetworkError` after a random 0.2–31 s (FedCM's anti-probing delay; MODAL-FACTS 6);
//! a headful one shows an account chooser that waits for a person. One of the calls held in
//! the page (`held_in_page.rs`), with words of its own.

use super::held_in_page::{HeldInPage, Message, held_api};
use super::{EXPIRED_REFUSED, Policies, Says, Words};
use crate::kind::Kind;

/// This kind's handle: the one place its name is written.
pub(crate) const SIGN_IN_KIND: Kind = Kind::new("sign_in");

pub(super) static SIGN_IN: HeldInPage = HeldInPage {
    api: held_api(
        "A FedCM sign-in (navigator.credentials.get with identity): accept = the browser's own\naccount chooser \
(headful: it waits for a person), dismiss = refused at once\n(NetworkError, as the browser refuses one it cannot \
complete).",
    ),
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
{action:\"handle_dialog\", dialog_id, accept} (true: the browser's account chooser; false: NetworkError at once)",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::kinds::held_in_page::HeldRule;
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
        let rule = RuleSpec::own(HeldRule { kind: SIGN_IN_KIND, accept: true, matcher: MatchArg::default() });
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(2)).unwrap())[1]["decision"], "accept");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }
}
