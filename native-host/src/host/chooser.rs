//! Device choosers (WebUSB, WebHID, Web Serial, Web Bluetooth). The page hook
//! (`manifest/inject/46-choosers.js`) lets the browser make the call and, when it is still
//! pending two microtasks later (a chooser opened), asks through `content.js` the service
//! worker (`manifest/choosers.js`), which asks the host. The host answers like a dialog — a
//! rule, the tab's policy, the agent (held, with the watchdog) — but the only answer there is
//! is cancel: Chromium refuses extensions the `DeviceAccess` domain, so nobody can list or
//! pick a device, and in headless a chooser left open never settles. On cancel the page gets
//! the browser's own cancel result. The browser's chooser may answer first (a person picks
//! in a headful browser): the page then has the browser's answer and the record says so.
//! Pilot off: the browser's chooser stands, recorded. Rules live in memory.

use super::held::PromptOutcome;
use super::protocol::{ChooserRequest, ChooserResult, ToBrowser};
use super::record::{self, DecidedBy, DialogRecord, DialogState};
use super::state::State;
use crate::api::{ChooserApi, MatchArg};
use crate::kind::Kind;
use crate::reply::{ErrorCode, ToolError};
use serde::{Deserialize, Serialize};
use unmodal_engine::Policy;

const MAX_CHOOSER_RULES: usize = 32;
/// Held choosers, at most (each needs a user gesture, but a page can call in a loop).
const MAX_HELD_CHOOSERS: usize = 64;

/// What the worker does with a chooser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChooserDecision {
    /// The page gets the browser's cancel result.
    Cancel,
    /// The browser's chooser stands.
    Native,
}

#[derive(Clone, Debug)]
pub struct ChooserRule {
    pub id: u32,
    pub once: bool,
    /// None: every chooser.
    pub chooser: Option<ChooserApi>,
    pub matcher: MatchArg,
}

impl ChooserRule {
    fn matches(&self, api: ChooserApi, url: &str) -> bool {
        let api_ok = self.chooser.is_none_or(|c| c == api);
        let url_ok = self.matcher.url_contains.as_ref().is_none_or(|u| url.to_lowercase().contains(&u.to_lowercase()));
        api_ok && url_ok
    }

    fn specificity(&self) -> usize {
        usize::from(self.chooser.is_some()) + usize::from(self.matcher.url_contains.is_some())
    }

    pub fn view(&self) -> ChooserRuleView<'_> {
        ChooserRuleView {
            rule_id: self.id,
            dialog_type: Kind::DeviceChooser,
            accept: false,
            once: self.once,
            chooser: self.chooser,
            matcher: &self.matcher,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ChooserRuleView<'a> {
    pub rule_id: u32,
    pub dialog_type: Kind,
    /// Always false: a chooser rule cancels.
    pub accept: bool,
    pub once: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chooser: Option<ChooserApi>,
    #[serde(rename = "match", skip_serializing_if = "MatchArg::is_empty")]
    pub matcher: &'a MatchArg,
}

/// What a chooser record adds to a dialog record (flattened into it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChooserDetails {
    pub chooser: ChooserApi,
    /// The page's call: requestDevice, requestPort.
    pub method: String,
}

struct Verdict {
    by: DecidedBy,
    rule: Option<u32>,
    why: String,
}

impl State {
    pub fn chooser_rules_of(&self, tab: i64) -> &[ChooserRule] {
        self.chooser_rules.get(&tab).map_or(&[], Vec::as_slice)
    }

    /// A new chooser rule; one for the same chooser and match replaces the old.
    pub fn add_chooser_rule(
        &mut self,
        tab: i64,
        once: bool,
        chooser: Option<ChooserApi>,
        matcher: MatchArg,
    ) -> Result<ChooserRule, ToolError> {
        let rules = self.chooser_rules.entry(tab).or_default();
        rules.retain(|r| !(r.matcher == matcher && r.chooser == chooser));
        if rules.len() >= MAX_CHOOSER_RULES {
            return Err(ToolError::new(
                ErrorCode::TooManyRules,
                format!("a tab holds at most {MAX_CHOOSER_RULES} chooser rules; clear some first"),
            ));
        }
        let rule = ChooserRule { id: self.next_rule_id, once, chooser, matcher };
        self.next_rule_id += 1;
        rules.push(rule.clone());
        Ok(rule)
    }

    pub fn clear_chooser_rules(&mut self, tab: i64) -> usize {
        self.chooser_rules.remove(&tab).map_or(0, |r| r.len())
    }

    pub(super) fn chooser_pos(&self, tab: i64, request: u64) -> Option<usize> {
        self.held
            .iter()
            .position(|h| h.record.kind == Kind::DeviceChooser && h.record.tab_id == tab && h.hold == request)
    }

    /// A page's chooser opened (or, pilot off, the browser's chooser stands).
    pub(super) fn on_chooser_request(&mut self, m: ChooserRequest) -> Result<Vec<ToBrowser>, String> {
        let api = ChooserApi::parse(&m.api).ok_or("a chooser request names no known chooser")?;
        if !m.native && self.chooser_pos(m.tab_id, m.request).is_some() {
            return Err(format!("chooser request {} reported twice", m.request));
        }
        let cancel =
            || ToBrowser::ChooserAnswer { tab_id: m.tab_id, request: m.request, decision: ChooserDecision::Cancel };
        let tab = self.policy_of(m.tab_id);
        let verdict = (!m.native).then(|| self.chooser_verdict(m.tab_id, api, &m.url, tab.policy));
        let waits = verdict.as_ref().is_some_and(|v| v.by == DecidedBy::Agent);
        if waits && self.held.len() >= MAX_HELD_CHOOSERS {
            return Ok(vec![cancel()]);
        }
        let method = record::clip(&m.method, 40).0;
        let (by, explanation) = match &verdict {
            None => (
                DecidedBy::PilotOff,
                format!(
                    "AI Web Pilot is off: the browser's {} stands (in headless Chromium it never settles, and the \
page's call waits); a person must switch the pilot on (`unmodal pilot on` in a terminal)",
                    api.describe().0
                ),
            ),
            Some(v) => (v.by, v.why.clone()),
        };
        let id = self.next_id();
        let record = DialogRecord {
            id,
            kind: Kind::DeviceChooser,
            message: {
                let (what, from) = api.describe();
                format!("{what} ({from}.{method})")
            },
            message_truncated: false,
            default_text: None,
            state: if waits { DialogState::Open } else { DialogState::Closed },
            accepted: (verdict.is_some() && !waits).then_some(false),
            response_text: None,
            redacted: Vec::new(),
            decided_by: by,
            closed_by: if waits {
                None
            } else if verdict.is_none() {
                Some(DecidedBy::Remote)
            } else {
                Some(by)
            },
            rule_id: verdict.as_ref().and_then(|v| v.rule),
            rules_loaded: true,
            would_show: None,
            explanation,
            url: record::clip(&m.url, 2048).0,
            page_url: self.tab(m.tab_id).map(|t| t.url.clone()).unwrap_or_default(),
            tab_id: m.tab_id,
            frame_id: Some(m.frame_id),
            timestamp: record::now_rfc3339(),
            key: None,
            auth: None,
            permission: None,
            chooser: Some(ChooserDetails { chooser: api, method }),
        };
        self.logs.dialog(&record);
        let mut out = vec![ToBrowser::recorded(&record)];
        let Some(v) = verdict else {
            self.remember(record);
            return Ok(out);
        };
        if waits {
            let wait_ms = self.hold_prompt(record, m.request, tab.timeout_s);
            out.push(ToBrowser::ChooserHold { tab_id: m.tab_id, request: m.request, wait_ms });
            return Ok(out);
        }
        out.push(cancel());
        if let Some(rule) = v.rule
            && let Some(rules) = self.chooser_rules.get_mut(&m.tab_id)
        {
            rules.retain(|r| !(r.id == rule && r.once));
        }
        self.settle_prompt(record);
        Ok(out)
    }

    /// The tab's chooser rules (the most specific wins), then its policy. Every answer is a
    /// cancel; only `must_respond` waits (for the agent's cancel, or the browser's chooser).
    fn chooser_verdict(&self, tab: i64, api: ChooserApi, url: &str, policy: Policy) -> Verdict {
        let best = self
            .chooser_rules_of(tab)
            .iter()
            .enumerate()
            .filter(|(_, r)| r.matches(api, url))
            .max_by_key(|(i, r)| (r.specificity(), *i))
            .map(|(_, r)| r);
        if let Some(r) = best {
            return Verdict {
                by: DecidedBy::Rule,
                rule: Some(r.id),
                why: format!("Device chooser cancelled: chooser rule {} matched", r.id),
            };
        }
        let (by, why) = match policy {
            Policy::MustRespond => (
                DecidedBy::Agent,
                "Device chooser held for the agent (policy must_respond): the page's call waits; cancel it with \
interact {action:\"handle_dialog\", dialog_id, accept:false} (no extension can pick a device)",
            ),
            Policy::Auto => (
                DecidedBy::DefaultPolicy,
                "Device chooser cancelled by the default policy: nobody can pick a device through an extension, and \
a chooser left open never settles in headless Chromium",
            ),
            Policy::AutoAccept => (
                DecidedBy::Policy,
                "Device chooser cancelled: the tab's auto_accept policy has no device to pick (no extension can pick one)",
            ),
            Policy::AutoDismiss => (DecidedBy::Policy, "Device chooser cancelled by the tab's auto_dismiss policy"),
        };
        Verdict { by, rule: None, why: why.to_string() }
    }

    /// The agent's (or the watchdog's) answer to a held chooser: cancel is the only one.
    pub(super) fn answer_chooser(&mut self, pos: usize, accept: bool, by: DecidedBy) -> Result<ToBrowser, ToolError> {
        let h = &mut self.held[pos];
        if accept {
            return Err(ToolError::new(
                ErrorCode::InvalidParams,
                format!(
                    "Dialog {} is a device chooser: no extension can pick a device (Chromium refuses extensions its \
DeviceAccess domain), so it can only be cancelled; send accept: false.",
                    h.record.id
                ),
            ));
        }
        h.closing = Some(by);
        h.answer_error = None;
        Ok(ToBrowser::ChooserAnswer { tab_id: h.record.tab_id, request: h.hold, decision: ChooserDecision::Cancel })
    }

    /// The worker answered a held chooser (or gave up on it, or the browser's chooser
    /// answered first).
    pub(super) fn on_chooser_result(&mut self, m: &ChooserResult) {
        let Some(pos) = self.chooser_pos(m.tab_id, m.request) else {
            return;
        };
        // Settled: the page has the browser's answer, whoever the host had asked.
        let outcome = PromptOutcome { applied: m.ok && !m.settled, expired: m.expired, accepted: false };
        let gone = if m.settled {
            "The browser's own chooser settled first (a person picked or cancelled, or the browser ended the call): \
the page got the browser's answer."
        } else {
            "The page was gone before the answer reached it."
        };
        self.close_prompt(pos, outcome, gone, "The extension cancelled it: no answer came from the host in time.");
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::{DialogCall, PolicyCall};
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};

    fn state(policy: Policy) -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":4,"url":"http://a/"}]}))
            .unwrap();
        s.configure(PolicyCall { tab: Some(3), policy, timeout_s: 5 }).unwrap();
        s
    }

    fn ask(s: &mut State, tab: i64, n: u64, api: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"chooser_request","tab_id":tab,"request":n,"frame_id":0,"url":"http://a/flash",
                "api":api,"method":"requestDevice"}),
            )
            .unwrap(),
        )
    }

    #[test]
    fn the_default_cancels_at_once_and_waits_for_acknowledgement() {
        let mut s = state(Policy::Auto);
        let out = ask(&mut s, 3, 1, "usb");
        assert_eq!(out[1], json!({"type":"chooser_answer","tab_id":3,"request":1,"decision":"cancel"}));
        let rec = s.history.iter().last().unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted, rec.kind),
            (DecidedBy::DefaultPolicy, Some(DecidedBy::DefaultPolicy), Some(false), Kind::DeviceChooser)
        );
        assert_eq!(s.pending.back(), Some(&rec.id));
        let j = serde_json::to_value(rec).unwrap();
        assert_eq!(
            (j["type"].as_str(), j["chooser"].as_str(), j["method"].as_str()),
            (Some("device_chooser"), Some("usb"), Some("requestDevice"))
        );
        assert_eq!(j["message"], "USB device chooser (navigator.usb.requestDevice)");
        // A record read back (persist.rs) keeps what it was.
        let back: DialogRecord = serde_json::from_value(j).unwrap();
        assert_eq!(back.chooser, rec.chooser);
        assert!(back.permission.is_none() && back.auth.is_none());
    }

    #[test]
    fn a_rule_cancels_once_and_belongs_to_its_tab() {
        let mut s = state(Policy::MustRespond);
        let call = DialogCall::ChooserSetup {
            tab: Some(4),
            once: true,
            chooser: Some(ChooserApi::Serial),
            matcher: MatchArg::default(),
        };
        let v = s.interact(call).unwrap().value;
        assert_eq!((v["dialog_type"].as_str(), v["chooser"].as_str()), (Some("device_chooser"), Some("serial")));
        assert_eq!(v["accept"], false);
        // Another chooser, another tab: no rule.
        assert_eq!(ask(&mut s, 4, 1, "hid")[1]["decision"], "cancel", "tab 4 has the default policy");
        assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::DefaultPolicy);
        assert_eq!(ask(&mut s, 3, 2, "serial")[1]["type"], "chooser_hold", "tab 3's rules are its own");
        assert_eq!(ask(&mut s, 4, 3, "serial")[1]["decision"], "cancel");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.rule_id.is_some()), (DecidedBy::Rule, true));
        assert!(s.chooser_rules_of(4).is_empty(), "a once-rule is spent");
    }

    #[test]
    fn must_respond_holds_the_agent_can_only_cancel_and_the_watchdog_cancels() {
        let mut s = state(Policy::MustRespond);
        let out = ask(&mut s, 3, 7, "hid");
        assert_eq!(out[1], json!({"type":"chooser_hold","tab_id":3,"request":7,"wait_ms":10000}));
        let note = s.blocking_note().unwrap();
        assert_eq!(note.dialogs[0].kind, Kind::DeviceChooser);
        let id = note.dialogs[0].dialog_id;
        let err = s.interact(DialogCall::Respond { tab: None, accept: true, text: None, dialog_id: None }).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert!(s.blocking_note().is_some(), "a refused answer leaves it waiting");
        let done = s.interact(DialogCall::Respond { tab: None, accept: false, text: None, dialog_id: None }).unwrap();
        assert_eq!((done.answering, to_json(&done.msgs)[0]["decision"].as_str()), (Some(id), Some("cancel")));
        feed(&mut s, json!({"type":"chooser_result","tab_id":3,"request":7,"ok":true})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.decided_by, rec.closed_by, rec.accepted),
            (DecidedBy::Agent, Some(DecidedBy::Agent), Some(false))
        );

        ask(&mut s, 3, 8, "usb");
        let id = s.held[0].record.id;
        assert_eq!(to_json(&s.watchdog(id))[0]["decision"], "cancel");
        feed(&mut s, json!({"type":"chooser_result","tab_id":3,"request":8,"ok":true})).unwrap();
        assert_eq!(s.record(id).unwrap().closed_by, Some(DecidedBy::Watchdog));
    }

    #[test]
    fn the_browsers_chooser_answering_first_closes_it_as_remote() {
        let mut s = state(Policy::MustRespond);
        ask(&mut s, 3, 9, "bluetooth");
        let id = s.held[0].record.id;
        feed(&mut s, json!({"type":"chooser_result","tab_id":3,"request":9,"ok":true,"settled":true})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.accepted), (Some(DecidedBy::Remote), None));
        assert!(rec.explanation.contains("chooser settled first"), "{}", rec.explanation);
    }

    #[test]
    fn policies_pilot_off_and_bad_input() {
        for policy in [Policy::AutoAccept, Policy::AutoDismiss] {
            let mut s = state(policy);
            assert_eq!(ask(&mut s, 3, 1, "serial")[1]["decision"], "cancel", "{policy:?}");
            assert_eq!(s.history.iter().last().unwrap().decided_by, DecidedBy::Policy);
        }
        let mut s = state(Policy::Auto);
        let out = feed(
            &mut s,
            json!({"type":"chooser_request","tab_id":3,"request":2,"url":"http://a/","api":"usb",
            "method":"requestDevice","native":true}),
        )
        .unwrap();
        assert_eq!(out.len(), 1, "nothing answered: the browser's chooser stands");
        let rec = s.history.iter().last().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::PilotOff, Some(DecidedBy::Remote), None));
        let before = s.history.iter().count();
        let bad = json!({"type":"chooser_request","tab_id":3,"request":3,"url":"http://a/","api":"camera"});
        assert!(feed(&mut s, bad).is_err());
        assert_eq!(s.history.iter().count(), before, "refused whole");
    }
}
