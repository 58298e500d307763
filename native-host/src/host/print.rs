//! Print: a `window.print()` in any frame. In headless Chromium its job never ends (no
//! `afterprint`; later prints do nothing; `Page.printToPDF` fails until the page navigates),
//! and in a headful browser it blocks the page's script until a person closes the preview.
//! With the pilot on the page hook (`manifest/inject/49-print.js`) answers it itself, as a
//! person's cancel of the preview, without calling the browser's print(); the request only
//! tells the host, through `manifest/print.js`, for the record. The prompt pipeline
//! (`prompt.rs`) does the rest. Printing to a PDF file (a rule with `accept: true`) is not
//! built yet: every answer is a cancel. Pilot off: the browser's print(), recorded.

use super::prompt::{Described, PromptKind, Verdict, url_fits};
use super::protocol::{PrintAsk, PromptDecision};
use super::record::{self, DecidedBy};
use crate::api::RuleSpec;
use crate::redact::Redactor;
use unmodal_engine::Policy;

impl PromptKind for PrintAsk {
    fn describe(&self, _: &Redactor, url: &str) -> Described {
        Described {
            message: "print the page (window.print)".into(),
            truncated: false,
            redacted: Vec::new(),
            url: record::clip(url, 2048).0,
            details: None,
        }
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        let RuleSpec::Print { matcher, .. } = rule else { return None };
        url_fits(matcher.url_contains.as_ref(), url).then(|| usize::from(matcher.url_contains.is_some()))
    }

    fn by_rule(&self, id: u32, _: &RuleSpec) -> Verdict {
        Verdict::rule(
            PromptDecision::Refuse,
            id,
            format!("print() cancelled as a person closes the preview: print rule {id} matched"),
        )
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let cancel = |by, why: &str| Verdict::policy(PromptDecision::Refuse, by, why);
        match policy {
            Policy::MustRespond => Verdict::Hold {
                why: "print() held for the agent (policy must_respond): the page's call returned as after a cancel; \
answer with interact {action:\"handle_dialog\", dialog_id, accept:false} (printing to a PDF file is not built yet)"
                    .into(),
            },
            Policy::Auto => cancel(
                DecidedBy::DefaultPolicy,
                "print() answered by the default policy as a person's cancel of the preview: the call returned, no \
print job was left behind (the browser's own would never end in headless, and would block PDF printing)",
            ),
            Policy::AutoAccept => {
                cancel(DecidedBy::Policy, "print() cancelled: the tab's auto_accept policy cannot print to a file yet")
            }
            Policy::AutoDismiss => cancel(DecidedBy::Policy, "print() cancelled by the tab's auto_dismiss policy"),
        }
    }

    fn pilot_off(&self) -> String {
        "AI Web Pilot is off: the browser's own print() ran (headless: a print job that never ends and blocks PDF \
printing until the page navigates; headful: the preview, which blocks the page's script until a person closes \
it); a person must switch the pilot on (`unmodal pilot on` in a terminal)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::State;
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::kind::Kind;
    use ringbuf::traits::Consumer;
    use serde_json::json;

    #[test]
    fn the_default_cancels_and_the_record_has_no_details() {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        let out = to_json(
            &feed(&mut s, json!({"type":"prompt_request","kind":"print","tab_id":3,"id":1,"url":"http://a/r"}))
                .unwrap(),
        );
        assert_eq!(out[1], json!({"type":"prompt_answer","kind":"print","tab_id":3,"id":1,"decision":"refuse"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by, rec.accepted), (Kind::Print, DecidedBy::DefaultPolicy, Some(false)));
        let back: crate::host::record::DialogRecord =
            serde_json::from_value(serde_json::to_value(rec).unwrap()).unwrap();
        assert!(back.details.is_none());
    }
}
