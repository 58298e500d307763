//! Passkeys: a WebAuthn `navigator.credentials.create()` or `get()` with `publicKey`. The
//! browser's passkey sheet, which headless never shows, leaves the call pending whatever its
//! timeout and, from ~0.1 s on, drops every click and key to the tab until a reload; nothing
//! closes it once open. So the page hook (`manifest/inject/48-passkeys.js`) holds the call
//! before the browser sees it and asks, through `manifest/passkeys.js`: a refusal rejects
//! it as a person's cancel does (`NotAllowedError`), and sites then offer another way in.
//! The prompt pipeline (`prompt.rs`) does the rest; here is what is the passkey's own.
//! Answering with a virtual authenticator (a rule with `accept: true`) is not built yet:
//! every answer is a refusal. Pilot off: the browser's way, recorded.

use super::prompt::{Described, PromptKind, Verdict, url_fits};
use super::protocol::{PasskeyAsk, PromptDecision};
use super::record::{self, DecidedBy, Details, PasskeyDetails};
use crate::api::RuleSpec;
use crate::redact::Redactor;
use unmodal_engine::Policy;

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
            details: Some(Details::Passkey(PasskeyDetails { operation: self.operation.clone(), rp_id })),
        }
    }

    /// `url_contains` is on the page's URL, `rp_id` the relying party the page named.
    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let RuleSpec::Passkey { matcher, .. } = rule else { return None };
        let fits =
            url_fits(matcher.url_contains.as_ref(), url) && matcher.rp_id.as_ref().is_none_or(|r| *r == self.rp_id);
        fits.then(|| usize::from(matcher.url_contains.is_some()) + usize::from(matcher.rp_id.is_some()))
    }

    fn by_rule(&self, id: u32, _: &RuleSpec) -> Verdict {
        Verdict::rule(
            PromptDecision::Refuse,
            id,
            format!("Passkey request refused: passkey rule {id} matched (the page got NotAllowedError)"),
        )
    }

    /// Every answer refuses (no virtual authenticator yet); only `must_respond` waits.
    fn by_policy(&self, policy: Policy) -> Verdict {
        let refuse = |by, why: &str| Verdict::policy(PromptDecision::Refuse, by, why);
        match policy {
            Policy::MustRespond => Verdict::Hold {
                why: "Passkey request held for the agent (policy must_respond): the page's call waits; refuse it with \
interact {action:\"handle_dialog\", dialog_id, accept:false} (answering with a virtual authenticator is not built yet)"
                    .into(),
            },
            Policy::Auto => refuse(
                DecidedBy::DefaultPolicy,
                "Passkey request refused by the default policy, as a person's cancel (NotAllowedError): the browser's \
passkey sheet, invisible in headless, would have dropped every input to the tab until a reload",
            ),
            Policy::AutoAccept => refuse(
                DecidedBy::Policy,
                "Passkey request refused: the tab's auto_accept policy has no authenticator to answer with yet",
            ),
            Policy::AutoDismiss => {
                refuse(DecidedBy::Policy, "Passkey request refused by the tab's auto_dismiss policy")
            }
        }
    }

    fn pilot_off(&self) -> String {
        "AI Web Pilot is off: the browser handles the passkey request itself (in headless its sheet is invisible and \
drops every input to the tab until a reload); a person must switch the pilot on (`unmodal pilot on` in a terminal)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::State;
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::{DialogCall, MatchArg};
    use crate::kind::Kind;
    use crate::reply::ErrorCode;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        super::super::state::tests::state_with(policy)
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
        s.interact(DialogCall::Setup { tab: None, once: true, rule: RuleSpec::Passkey { accept: false, matcher } })
            .unwrap();
        assert_eq!(ask(&mut s, 1, "get", "b.example")[1]["decision"], "refuse");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
        assert_eq!(ask(&mut s, 2, "get", "c.example")[1]["type"], "prompt_hold");
        let id = s.held[0].record.id;
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        let done = s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: None }).unwrap();
        assert_eq!((done.answering, to_json(&done.msgs)[0]["decision"].as_str()), (Some(id), Some("refuse")));
    }

    #[test]
    fn bad_operations_are_refused_whole() {
        let mut s = state(Policy::Auto);
        let m = json!({"type":"prompt_request","kind":"passkey","tab_id":3,"id":1,"operation":"delete"});
        assert!(feed(&mut s, m).is_err());
        assert_eq!(s.history.iter().count(), 0);
    }
}
