//! Storage access: `document.requestStorageAccess()`. In another site's frame without access,
//! a headful browser that blocks third-party cookies asks the person (a prompt that waits);
//! headless Chromium refuses at once with `NotAllowedError` (MODAL-FACTS 6); a frame that has
//! access already is granted without a prompt. The page hook
//! (`manifest/inject/48-storage-access.js`) asks the browser's own `hasStorageAccess()`
//! first, then holds the call and asks, through `manifest/held_in_page.js`, saying whether
//! the frame has access (`granted`). A refusal is the browser's own `NotAllowedError`, at
//! once; an accept lets the browser have it. A frame with access is left to the browser
//! unrecorded unless a rule says otherwise: nothing would prompt. Pilot off: the browser's
//! way, recorded.

use super::prompt::{Described, PromptKind, Verdict, held_by_rule, held_fits};
use super::protocol::{PromptDecision, StorageAccessAsk};
use super::record::DecidedBy;
use crate::api::RuleSpec;
use crate::kind::Kind;
use crate::redact::Redactor;
use unmodal_engine::Policy;

impl PromptKind for StorageAccessAsk {
    fn describe(&self, _redactor: &Redactor, url: &str) -> Described {
        let message = if self.granted {
            "storage access request (the frame has access already)"
        } else {
            "storage access request (requestStorageAccess)"
        };
        Described::plain(message, url)
    }

    fn fits(&self, rule: &RuleSpec, url: &str) -> Option<usize> {
        held_fits(Kind::StorageAccess, rule, url)
    }

    fn by_rule(&self, id: u32, rule: &RuleSpec) -> Verdict {
        held_by_rule(id, rule, "Storage access", "storage_access", "the browser", "NotAllowedError")
    }

    fn by_policy(&self, policy: Policy) -> Verdict {
        let refuse = |by, why: &str| Verdict::policy(PromptDecision::Refuse, by, why);
        match policy {
            Policy::MustRespond => Verdict::Hold {
                why: "Storage access request held for the agent (policy must_respond): the page's call waits; answer \
with interact {action:\"handle_dialog\", dialog_id, accept} (true: the browser's own way; false: NotAllowedError at \
once)"
                    .into(),
            },
            Policy::Auto => refuse(
                DecidedBy::DefaultPolicy,
                "Storage access refused at once by the default policy (NotAllowedError, the browser's own refusal): \
headless, the browser refuses it too; a headful one that blocks third-party cookies would ask the person; a \
storage_access rule with accept: true leaves it to the browser",
            ),
            Policy::AutoAccept => Verdict::policy(
                PromptDecision::Accept,
                DecidedBy::Policy,
                "Storage access left to the browser (the tab's auto_accept policy)",
            ),
            Policy::AutoDismiss => refuse(DecidedBy::Policy, "Storage access refused by the tab's auto_dismiss policy"),
        }
    }

    fn unprompted(&self) -> Option<PromptDecision> {
        self.granted.then_some(PromptDecision::Accept)
    }

    fn pilot_off(&self) -> String {
        "AI Web Pilot is off: the browser handles the storage access request itself (headless: refused at once; \
headful, third-party cookies blocked: a prompt that waits for a person); a person must switch the pilot on \
(`unmodal pilot on` in a terminal)"
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

    fn ask(n: u64, granted: bool) -> serde_json::Value {
        json!({"type":"prompt_request","kind":"storage_access","tab_id":3,"id":n,"url":"https://widget/","granted":granted})
    }

    #[test]
    fn the_default_refuses_a_frame_without_access_and_a_rule_decides_even_one_with_it() {
        let mut s = state_with(Policy::MustRespond);
        // Access already: nothing would prompt, nothing is held or recorded.
        assert_eq!(to_json(&feed(&mut s, ask(1, true)).unwrap())[0]["decision"], "accept");
        assert_eq!((s.held.len(), s.history.iter().count()), (0, 0));
        let mut s = state_with(Policy::Auto);
        assert_eq!(to_json(&feed(&mut s, ask(2, false)).unwrap())[1]["decision"], "refuse");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.kind, rec.decided_by), (Kind::StorageAccess, DecidedBy::DefaultPolicy));
        let rule = RuleSpec::Held { kind: HeldCall::StorageAccess, accept: false, matcher: MatchArg::default() };
        s.interact(DialogCall::Setup { tab: None, once: true, rule }).unwrap();
        assert_eq!(to_json(&feed(&mut s, ask(3, true)).unwrap())[1]["decision"], "refuse");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Rule);
    }
}
