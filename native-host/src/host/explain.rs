//! The sentences Unmodal explains itself with: why a dialog got its answer, who closed a
//! held one, what a policy does, why a tab fell back. Written by Unmodal, never page text.

use super::kinds;
use super::record::{DecidedBy, DialogRecord};
use super::state::{Rule, State, TabPolicy};
use crate::host::kinds::RuleSpec;
use crate::kind::Kind;
use std::time::Duration;
use unmodal_engine::{DialogKind, Policy};

pub const PILOT_OFF_WARNING: &str = "AI Web Pilot is off in this browser: dialogs keep their native behaviour and \
rules are stored but not applied until a person switches the pilot on: `unmodal pilot on` in a terminal, or the \
Unmodal toolbar popup in a browser no program controls.";

/// How a rule is named in an explanation: its id and what narrows it.
pub fn rule(r: &Rule) -> String {
    let m = r.rule.matcher();
    let mut d = format!("rule {}", r.id);
    if let Some(m) = &m.message_contains {
        d += &format!(" (message contains {m:?})");
    }
    if let Some(u) = &m.url_contains {
        d += &format!(" (URL contains {u:?})");
    }
    // A kind's own texts by their names (an auth rule's realm).
    for (name, text) in &m.more {
        d += &format!(" ({name} {text:?})");
    }
    d
}

impl State {
    /// Why the page hook's engine answered a dialog as it did.
    pub(super) fn explain(
        &self,
        kind: DialogKind,
        by: DecidedBy,
        rule: Option<u32>,
        loaded: bool,
        accepted: Option<bool>,
        tab: i64,
    ) -> String {
        let k = kind.as_str();
        if kind == DialogKind::BeforeUnload {
            return leave_prompt(by, rule, accepted);
        }
        let answer = match (kind, accepted) {
            (DialogKind::Alert, _) => "closed".to_string(),
            (DialogKind::Confirm, Some(a)) => format!("returned {a}"),
            (DialogKind::Prompt, Some(true)) => "accepted".to_string(),
            (DialogKind::Prompt, Some(false)) => "returned null".to_string(),
            (_, Some(a)) => (if a { "accepted" } else { "dismissed" }).to_string(),
            (_, None) => "left to the page".to_string(),
        };
        match by {
            DecidedBy::Rule => {
                let named = self
                    .rules_of(tab)
                    .iter()
                    .find(|r| Some(r.id) == rule)
                    .map_or_else(|| format!("rule {}", rule.unwrap_or(0)), self::rule);
                format!("{k} {answer}: auto-response {named} matched")
            }
            DecidedBy::DefaultPolicy if !loaded && !self.rules_of(tab).is_empty() => {
                format!(
                    "{k} {answer} by the default policy: the dialog came before this tab's rules reached the new document"
                )
            }
            DecidedBy::DefaultPolicy => format!("{k} {answer} by the default policy: no auto-response matched"),
            DecidedBy::PilotOff => format!(
                "AI Web Pilot is off: the browser showed its own {k} dialog; a person must switch the pilot on (`unmodal pilot on` in a terminal)"
            ),
            DecidedBy::Policy => format!("{k} {answer} by the tab's {} policy", self.policy_of(tab).policy.as_str()),
            DecidedBy::Agent | DecidedBy::Watchdog | DecidedBy::Remote | DecidedBy::Browser => format!("{k} {answer}"),
        }
    }
}

fn leave_prompt(by: DecidedBy, rule: Option<u32>, accepted: Option<bool>) -> String {
    const ASKED: &str = "beforeunload: the page asked to confirm leaving;";
    match (by, accepted) {
        (DecidedBy::Rule, Some(true)) => format!(
            "{ASKED} auto-response rule {} kept it from asking, so navigation goes on without a prompt",
            rule.unwrap_or(0)
        ),
        (DecidedBy::PilotOff, _) => format!("{ASKED} AI Web Pilot is off, so the browser's own prompt stands"),
        (DecidedBy::Policy, Some(true)) => {
            format!("{ASKED} the auto_accept policy kept it from asking, so navigation goes on without a prompt")
        }
        (DecidedBy::Policy, _) => format!(
            "{ASKED} no user activation, so the browser shows no prompt and the tab's policy has nothing to answer"
        ),
        _ => format!(
            "{ASKED} no rule accepts it, so the browser's own \"Leave site?\" prompt stands (set up dialog_type \
\"beforeunload\" to leave without it)"
        ),
    }
}

/// Why a dialog the debugger session holds is (or is not yet) answered: `answered` says
/// who answered it as it opened (and with what), if anyone did.
pub fn held(kind: DialogKind, answered: Option<(DecidedBy, bool, Option<u32>)>, tab: &TabPolicy) -> String {
    let k = kind.as_str();
    match answered {
        Some((DecidedBy::Rule, _, rule)) => format!(
            "The browser opened a {k} dialog the page hook did not answer; auto-response rule {} answered it.",
            rule.unwrap_or(0)
        ),
        Some((_, accept, _)) => format!(
            "The browser opened a {k} dialog; the tab's {} policy {} it.",
            tab.policy.as_str(),
            if accept { "accepted" } else { "dismissed" }
        ),
        None if tab.policy == Policy::MustRespond => format!(
            "A {k} dialog is held open for the agent (policy must_respond); the watchdog dismisses it after {} s.",
            tab.timeout_s
        ),
        None => format!("The browser opened a {k} dialog; it is left to the browser and its user."),
    }
}

/// A dialog a debugger session says it holds while the pilot is off (no session should).
pub fn held_pilot_off(kind: DialogKind) -> String {
    format!(
        "The browser showed a {} dialog while AI Web Pilot was off: it is left to the browser and its user, and \
Unmodal answers nothing.",
        kind.as_str()
    )
}

/// Who closed a held dialog, after how long, with what answer.
pub fn closed(rec: &DialogRecord, by: DecidedBy, open_for: Duration) -> String {
    let who = match by {
        DecidedBy::Agent => "the agent",
        DecidedBy::Watchdog => "the watchdog",
        DecidedBy::Rule => "the rule",
        DecidedBy::Policy => "the policy",
        DecidedBy::DefaultPolicy => "the default policy",
        DecidedBy::Browser => "the browser",
        // Only a held chooser the pilot's switch-off cancelled closes so (device choosers).
        DecidedBy::PilotOff => "AI Web Pilot switching off",
        DecidedBy::Remote => "someone else (the page navigated, the browser or a human closed it)",
    };
    let answer = match (rec.kind, rec.accepted) {
        (_, None) => "without an answer".to_string(),
        (k, Some(a)) if k == Kind::BEFORE_UNLOAD => (if a { "leave" } else { "stay" }).to_string(),
        (k, Some(true)) if k == Kind::PROMPT => format!("returned {:?}", rec.response_text.as_deref().unwrap_or("")),
        (k, Some(false)) if k == Kind::PROMPT => "returned null".to_string(),
        (k, Some(_)) if k == Kind::ALERT => "closed".to_string(),
        (k, Some(a)) => match kinds::spec(k) {
            Some(k) => k.closed(a).to_string(),
            None => format!("returned {a}"),
        },
    };
    format!("Closed by {who} after {} ms: {answer}.", open_for.as_millis())
}

/// What a new rule will do, as the setup answers it.
pub fn rule_set(rule: &RuleSpec, once: bool) -> String {
    match rule {
        RuleSpec::Dialog { target, accept, .. } => {
            let verb = if *accept { "accept" } else { "dismiss" };
            let t = target.as_str();
            if once {
                format!("Auto-response configured for next {t} dialog. Will {verb} and revert to default.")
            } else {
                format!("Auto-response configured for every {t} dialog until cleared. Will {verb}.")
            }
        }
        _ => kinds::rule_set(rule, once),
    }
}

/// What a policy does, as `configure` answers it.
pub fn policy(policy: Policy, timeout_s: u32) -> String {
    match policy {
        Policy::Auto => "Dialogs no rule answers get the default policy (alert accepted, confirm false, prompt null); \
beforeunload is left to the page."
            .to_string(),
        Policy::MustRespond => format!(
            "must_respond: a dialog no rule answers stays open until you answer it with interact \
{{action:\"handle_dialog\", dialog_id, accept, text?}}, or the watchdog dismisses it after timeout_s. The tab is under \
the extension's debugger while the policy holds (headful Chrome shows a \"started debugging\" bar). Watchdog: {timeout_s} s."
        ),
        Policy::AutoAccept => "Dialogs no rule answers are accepted at once (a prompt returns \"\"; a leave prompt \
leaves) and recorded with closed_by \"policy\"."
            .to_string(),
        Policy::AutoDismiss => "Dialogs no rule answers are dismissed at once (a leave prompt stays on the page) and \
recorded with closed_by \"policy\"."
            .to_string(),
    }
}

/// The note on a tab that fell back to `auto`.
pub fn fallback(from: Policy, reason: &str) -> String {
    format!(
        "This tab is back on the auto policy (it was {}): {reason}. Dialogs no rule answers get the default again; call \
configure {{action:\"dialog_policy\"}} to set it anew.",
        from.as_str()
    )
}

/// The words for a `chrome.debugger.onDetach` reason.
pub fn detach_reason(reason: &str) -> String {
    match reason {
        "canceled_by_user" => "a human cancelled the debugging bar (or opened DevTools on the tab)".to_string(),
        "target_closed" => "the browser ended the debugger session (the tab went to a page extensions may not debug, \
such as chrome://, handed a link to the OS, such as an opened mailto: or app link, or closed)"
            .to_string(),
        other => format!("the browser ended the debugger session ({other})"),
    }
}
