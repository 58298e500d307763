//! The state of record: tabs, rules per tab, the 50-entry dialog history and the pending
//! queue. Mutated only under one short lock; nothing here waits on the browser.

use super::logs::{Logs, Origin};
use super::policy::{TabPolicy, detach_reason};
use super::record::{self, ClosedBy, DecidedBy, DialogMsg, DialogRecord, DocSeq, MAX_MESSAGE_CHARS, Phase};
use crate::api::MatchArg;
use crate::redact::Redactor;
use ringbuf::HeapRb;
use ringbuf::traits::{Consumer, Observer, RingBuffer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;
use unmodal_engine::{DialogKind, Policy, RuleTarget, rules::Encoder};

pub const HISTORY: usize = 50;
pub const MAX_PENDING: usize = 5;

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Tab {
    pub id: i64,
    #[serde(default)]
    pub window_id: i64,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub active: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub id: u32,
    pub target: RuleTarget,
    pub accept: bool,
    pub once: bool,
    pub text: Option<String>,
    pub matcher: MatchArg,
}

impl Rule {
    /// How the rule is named in a dialog's explanation.
    pub fn describe(&self) -> String {
        let mut d = format!("rule {}", self.id);
        if let Some(m) = &self.matcher.message_contains {
            d += &format!(" (message contains {m:?})");
        }
        if let Some(u) = &self.matcher.url_contains {
            d += &format!(" (URL contains {u:?})");
        }
        d
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "rule_id": self.id,
            "dialog_type": self.target.as_str(),
            "accept": self.accept,
            "once": self.once,
        });
        if let Some(t) = &self.text {
            v["text"] = json!(t);
        }
        if self.matcher != MatchArg::default() {
            v["match"] = json!(self.matcher);
        }
        v
    }
}

/// The extension's answer to a rules message.
#[derive(Clone, Debug, Default)]
pub struct RulesAck {
    pub rev: u64,
    /// The tab's top frame (and every frame that answered) took the config.
    pub delivered: bool,
    /// The tab has the debugger session a policy needs.
    pub debugger_attached: bool,
    /// Why the debugger session a policy needs could not start.
    pub debugger_error: Option<String>,
}

pub struct State {
    pub pilot: bool,
    pub extension_version: Option<String>,
    pub tabs: Vec<Tab>,
    pub tracked: Option<i64>,
    pub rules: HashMap<i64, Vec<Rule>>,
    next_rule_id: u32,
    pub history: HeapRb<DialogRecord>,
    pub evicted: u64,
    /// Ids of dialogs that want the agent's attention: open native dialogs, and dialogs the
    /// default policy answered that the agent has not acknowledged yet.
    pub pending: VecDeque<u64>,
    next_record_id: u64,
    /// Every rules message carries a revision; the extension acknowledges it per tab once
    /// the tab's frames hold the rules, so a setup can answer only when it is in force.
    rules_rev: u64,
    pub rules_acked: HashMap<i64, RulesAck>,
    /// Per tab, when not the default: the dialog policy and its watchdog.
    pub policies: HashMap<i64, TabPolicy>,
    /// Dialogs the debugger session holds open; they join the history when they close.
    pub held: Vec<DialogRecord>,
    /// Watchdogs to start (record id, delay); the host's loop takes them.
    pub armed: Vec<(u64, Duration)>,
    /// Per tab: dialog reports a flooding page folded into a count.
    pub folded: HashMap<i64, u64>,
    pub logs: Logs,
    pub redactor: Redactor,
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}

impl State {
    pub fn new() -> Self {
        Self {
            pilot: false,
            extension_version: None,
            tabs: Vec::new(),
            tracked: None,
            rules: HashMap::new(),
            next_rule_id: 1,
            history: HeapRb::new(HISTORY),
            evicted: 0,
            pending: VecDeque::new(),
            next_record_id: 1,
            rules_rev: 0,
            rules_acked: HashMap::new(),
            policies: HashMap::new(),
            held: Vec::new(),
            armed: Vec::new(),
            folded: HashMap::new(),
            logs: Logs::default(),
            redactor: Redactor::default(),
        }
    }

    // ---- Messages from the extension; each returns what to send back ----

    pub fn on_extension(&mut self, msg: &Value) -> Result<Vec<Value>, String> {
        let kind = msg.get("type").and_then(Value::as_str).ok_or("message without a type")?;
        match kind {
            "hello" => {
                self.extension_version = msg.get("version").and_then(Value::as_str).map(str::to_owned);
                self.pilot = msg.get("pilot").and_then(Value::as_bool).unwrap_or(false);
                let tabs: Vec<i64> = self.rules.keys().copied().collect();
                Ok(tabs.into_iter().map(|tab| self.rules_message(tab)).collect())
            }
            "pilot" => {
                self.pilot = msg.get("on").and_then(Value::as_bool).ok_or("pilot without `on`")?;
                Ok(Vec::new())
            }
            "tabs" => {
                let tabs: Vec<Tab> = serde_json::from_value(msg.get("tabs").cloned().unwrap_or_default())
                    .map_err(|e| format!("bad tabs list: {e}"))?;
                self.tracked = msg.get("tracked").and_then(Value::as_i64);
                self.rules.retain(|id, _| tabs.iter().any(|t| t.id == *id));
                self.rules_acked.retain(|id, _| tabs.iter().any(|t| t.id == *id));
                self.policies.retain(|id, _| tabs.iter().any(|t| t.id == *id));
                self.tabs = tabs;
                self.drop_held_of_closed_tabs();
                Ok(Vec::new())
            }
            "dialog" => {
                let m: DialogMsg =
                    serde_json::from_value(msg.clone()).map_err(|e| format!("bad dialog report: {e}"))?;
                self.on_dialog(m)
            }
            "folded" => {
                // Reports a flooding frame did not send; counted, never stored one by one.
                let tab = msg.get("tab_id").and_then(Value::as_i64).ok_or("folded without tab_id")?;
                let count = msg.get("count").and_then(Value::as_u64).ok_or("folded without count")?;
                let n = self.folded.entry(tab).or_default();
                *n = n.saturating_add(count);
                let text = |k: &str| msg.get(k).and_then(Value::as_str).unwrap_or("");
                let frame_id = msg.get("frame_id").and_then(Value::as_i64).unwrap_or(0);
                self.logs.folded(Origin { tab_id: tab, frame_id, url: text("url"), page_url: text("page_url") }, count);
                Ok(Vec::new())
            }
            "rules_ack" => {
                let tab = msg.get("tab_id").and_then(Value::as_i64).ok_or("rules_ack without tab_id")?;
                let rev = msg.get("rev").and_then(Value::as_u64).ok_or("rules_ack without rev")?;
                let delivered = msg.get("delivered").and_then(Value::as_bool).unwrap_or(false);
                let debugger_error = msg
                    .pointer("/debugger/error")
                    .and_then(Value::as_str)
                    .map(|e| record::clip(e, 500).0)
                    .filter(|_| msg.pointer("/debugger/attached") != Some(&Value::Bool(true)));
                let acked = self.rules_acked.entry(tab).or_default();
                if rev < acked.rev {
                    return Ok(Vec::new());
                }
                let debugger_attached = msg.pointer("/debugger/attached") == Some(&Value::Bool(true));
                *acked = RulesAck { rev, delivered, debugger_attached, debugger_error: debugger_error.clone() };
                match debugger_error {
                    Some(e) => Ok(self.fall_back(tab, format!("the debugger session could not start ({e})"))),
                    None => Ok(Vec::new()),
                }
            }
            "held" => self.on_held(msg),
            "held_closed" => self.on_held_closed(msg),
            "answer_result" => self.on_answer_result(msg),
            "debugger_detached" => {
                let tab = msg.get("tab_id").and_then(Value::as_i64).ok_or("debugger_detached without tab_id")?;
                let reason = msg.get("reason").and_then(Value::as_str).unwrap_or("unknown");
                if !self.tabs.iter().any(|t| t.id == tab) {
                    return Ok(Vec::new());
                }
                Ok(self.fall_back(tab, detach_reason(reason)))
            }
            other => Err(format!("unknown message type `{other}`")),
        }
    }

    fn on_dialog(&mut self, m: DialogMsg) -> Result<Vec<Value>, String> {
        let r = &m.report;
        let kind = DialogKind::parse(&r.kind).ok_or_else(|| format!("unknown dialog kind `{}`", r.kind))?;
        let key = DocSeq {
            tab: m.tab_id,
            frame: m.frame_id,
            document: m.document_id.clone().unwrap_or_default(),
            seq: r.seq,
        };
        if r.phase == Phase::Closed {
            self.close_native(&key, r.accepted, r.value.as_deref());
            return Ok(Vec::new());
        }
        let by = DecidedBy::parse(r.decided_by.as_deref()).ok_or("report without a valid decided_by")?;
        let (message, cut) = record::clip(r.message.as_deref().unwrap_or(""), MAX_MESSAGE_CHARS);
        let (message, mut redacted) = self.redactor.apply(&message);
        let mut clean = |t: &str| {
            let (t, hits) = self.redactor.apply(&record::clip(t, MAX_MESSAGE_CHARS).0);
            for h in hits {
                if !redacted.contains(&h) {
                    redacted.push(h);
                }
            }
            t
        };
        let default_text = r.default_text.as_deref().map(&mut clean);
        let response_text = if r.phase == Phase::Open { None } else { r.value.as_deref().map(&mut clean) };
        let open = r.phase == Phase::Open;
        let rule = if by == DecidedBy::Rule { r.rule_id } else { None };
        let id = self.next_id();
        let rec = DialogRecord {
            id,
            kind: kind.as_str(),
            message,
            message_truncated: cut || r.message_cut,
            default_text,
            state: if open { "open" } else { "closed" },
            accepted: if open { None } else { r.accepted },
            response_text,
            redacted,
            decided_by: by,
            closed_by: match by {
                // The browser's own leave prompt (if any) is not ours to close.
                _ if kind == DialogKind::BeforeUnload && r.accepted != Some(true) => None,
                DecidedBy::Rule => Some(ClosedBy::Rule),
                DecidedBy::DefaultPolicy => Some(ClosedBy::DefaultPolicy),
                DecidedBy::Policy => Some(ClosedBy::Policy),
                _ => None,
            },
            rule_id: rule,
            rules_loaded: r.rules_loaded,
            would_show: if kind == DialogKind::BeforeUnload { r.would_show } else { None },
            explanation: self.explain(kind, by, rule, r.rules_loaded, r.accepted, m.tab_id),
            url: m.url,
            page_url: m.page_url,
            tab_id: m.tab_id,
            frame_id: Some(m.frame_id),
            timestamp: record::now_rfc3339(),
            key,
            held: None,
        };
        self.logs.dialog(&rec);
        // The popup shows what the host stored (redacted), never the raw page text.
        let shown = json!({"type": "recorded", "tab_id": rec.tab_id, "kind": rec.kind, "message": rec.message,
            "decided_by": rec.decided_by, "accepted": rec.accepted, "state": rec.state});
        self.remember(rec);
        // What the agent did not choose waits for its acknowledgement.
        if matches!(by, DecidedBy::DefaultPolicy | DecidedBy::PilotOff) {
            self.pending.push_back(id);
            while self.pending.len() > MAX_PENDING {
                self.pending.pop_front();
            }
        }
        let mut out = vec![shown];
        if let Some(rule_id) = rule {
            out.extend(self.spend_rule(m.tab_id, rule_id));
        }
        Ok(out)
    }

    pub(super) fn next_id(&mut self) -> u64 {
        let id = self.next_record_id;
        self.next_record_id += 1;
        id
    }

    /// Adds a record to the history, evicting the oldest when full.
    pub(super) fn remember(&mut self, rec: DialogRecord) {
        if self.history.is_full() {
            self.evicted += 1;
        }
        if let Some(old) = self.history.push_overwrite(rec) {
            self.pending.retain(|&p| p != old.id);
        }
    }

    /// A once-rule that answered a dialog leaves the tab's rule set (the page already
    /// stopped using it); returns the rules message if one left.
    pub(super) fn spend_rule(&mut self, tab: i64, rule_id: u32) -> Option<Value> {
        let rules = self.rules.get_mut(&tab)?;
        let before = rules.len();
        rules.retain(|x| !(x.id == rule_id && x.once));
        (rules.len() != before).then(|| self.rules_message(tab))
    }

    fn explain(
        &self,
        kind: DialogKind,
        by: DecidedBy,
        rule: Option<u32>,
        loaded: bool,
        accepted: Option<bool>,
        tab: i64,
    ) -> String {
        let answer = match (kind, accepted) {
            (DialogKind::Alert, _) => "closed".to_string(),
            (DialogKind::Confirm, Some(a)) => format!("returned {a}"),
            (DialogKind::Prompt, Some(true)) => "accepted".to_string(),
            (DialogKind::Prompt, Some(false)) => "returned null".to_string(),
            (_, Some(a)) => (if a { "accepted" } else { "dismissed" }).to_string(),
            (_, None) => "left to the page".to_string(),
        };
        if kind == DialogKind::BeforeUnload {
            return match (by, accepted) {
                (DecidedBy::Rule, Some(true)) => format!(
                    "beforeunload: the page asked to confirm leaving; auto-response rule {} kept it from asking, so \
navigation goes on without a prompt",
                    rule.unwrap_or(0)
                ),
                (DecidedBy::PilotOff, _) => {
                    "beforeunload: the page asked to confirm leaving; AI Web Pilot is off, so the \
browser's own prompt stands"
                        .to_string()
                }
                (DecidedBy::Policy, Some(true)) => "beforeunload: the page asked to confirm leaving; the \
auto_accept policy kept it from asking, so navigation goes on without a prompt"
                    .to_string(),
                (DecidedBy::Policy, _) => "beforeunload: the page asked to confirm leaving; no user activation, \
so the browser shows no prompt and the tab's policy has nothing to answer"
                    .to_string(),
                _ => "beforeunload: the page asked to confirm leaving; no rule accepts it, so the browser's own \
\"Leave site?\" prompt stands (set up dialog_type \"beforeunload\" to leave without it)"
                    .to_string(),
            };
        }
        match by {
            DecidedBy::Rule => {
                let named = self
                    .rules_of(tab)
                    .iter()
                    .find(|r| Some(r.id) == rule)
                    .map_or_else(|| format!("rule {}", rule.unwrap_or(0)), Rule::describe);
                format!("{} {answer}: auto-response {named} matched", kind.as_str())
            }
            DecidedBy::DefaultPolicy if !loaded && self.rules.get(&tab).is_some_and(|r| !r.is_empty()) => {
                format!(
                    "{} {answer} by the default policy: the dialog came before this tab's rules reached the new document",
                    kind.as_str()
                )
            }
            DecidedBy::DefaultPolicy => {
                format!("{} {answer} by the default policy: no auto-response matched", kind.as_str())
            }
            DecidedBy::PilotOff => format!(
                "AI Web Pilot is off: the browser showed its own {} dialog; a human must switch the pilot on in the Unmodal popup",
                kind.as_str()
            ),
            DecidedBy::Policy => {
                format!("{} {answer} by the tab's {} policy", kind.as_str(), self.policy_of(tab).policy.as_str())
            }
            DecidedBy::Agent | DecidedBy::Watchdog | DecidedBy::Remote => {
                format!("{} {answer}", kind.as_str())
            }
        }
    }

    fn close_native(&mut self, key: &DocSeq, accepted: Option<bool>, value: Option<&str>) {
        let Some(rec) = self.history.iter_mut().find(|r| &r.key == key && r.state == "open") else {
            return;
        };
        rec.state = "closed";
        rec.accepted = accepted;
        rec.response_text = value.map(|v| self.redactor.apply(&record::clip(v, MAX_MESSAGE_CHARS).0).0);
        rec.closed_by = Some(ClosedBy::Remote);
        let id = rec.id;
        self.pending.retain(|&p| p != id);
    }

    // ---- Rules ----

    pub fn add_rule(
        &mut self,
        tab: i64,
        target: RuleTarget,
        accept: bool,
        once: bool,
        text: Option<String>,
        matcher: MatchArg,
    ) -> Result<Rule, String> {
        let rules = self.rules.entry(tab).or_default();
        // A new setup for the same dialog type and the same match replaces the old one.
        rules.retain(|r| r.target != target || r.matcher != matcher);
        if rules.len() >= unmodal_engine::MAX_RULES {
            return Err(format!("a tab holds at most {} rules; clear some first", unmodal_engine::MAX_RULES));
        }
        let rule = Rule { id: self.next_rule_id, target, accept, once, text, matcher };
        self.next_rule_id += 1;
        rules.push(rule.clone());
        Ok(rule)
    }

    /// Removes the rules for `target` (all rules for `All`); returns how many.
    pub fn clear_rules(&mut self, tab: i64, target: RuleTarget) -> usize {
        let Some(rules) = self.rules.get_mut(&tab) else {
            return 0;
        };
        let before = rules.len();
        rules.retain(|r| target != RuleTarget::All && r.target != target);
        before - rules.len()
    }

    pub fn rules_of(&self, tab: i64) -> &[Rule] {
        self.rules.get(&tab).map_or(&[], Vec::as_slice)
    }

    pub fn rules_message(&mut self, tab: i64) -> Value {
        let policy = self.policy_of(tab).policy;
        let rules = self.encode_rules(tab, policy);
        self.rules_rev += 1;
        json!({"type": "rules", "tab_id": tab, "rev": self.rules_rev, "rules": rules, "policy": policy.as_str()})
    }

    /// The tab's rules (and policy) in the engine's wire format.
    pub fn encode_rules(&self, tab: i64, policy: Policy) -> String {
        let mut enc = Encoder::new();
        enc.policy(policy);
        for r in self.rules_of(tab) {
            let m = &r.matcher;
            enc.rule_matching(
                r.id,
                r.target,
                r.accept,
                r.once,
                r.text.as_deref(),
                m.message_contains.as_deref(),
                m.url_contains.as_deref(),
            );
        }
        enc.finish()
    }

    /// Once the extension answered for revision `rev` (or newer) of `tab`'s rules: whether
    /// the tab's frames received them. `None` while no answer came.
    pub fn rules_delivered(&self, tab: i64, rev: u64) -> Option<&RulesAck> {
        self.rules_acked.get(&tab).filter(|a| a.rev >= rev)
    }

    /// A dialog by id: held open, or in the history.
    pub fn record(&self, id: u64) -> Option<&DialogRecord> {
        self.held.iter().find(|r| r.id == id).or_else(|| self.history.iter().find(|r| r.id == id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(tab: i64, seq: u64, phase: &str, kind: &str, by: &str, rule: Option<u32>) -> Value {
        json!({"type": "dialog", "tab_id": tab, "frame_id": 0, "document_id": "d1", "url": "http://x/", "page_url": "http://x/",
               "report": {"seq": seq, "phase": phase, "kind": kind, "message": "m", "decided_by": by, "rule_id": rule,
                          "rules_loaded": true, "accepted": phase == "decided"}})
    }

    #[test]
    fn history_keeps_fifty_and_counts_evictions() {
        let mut s = State::new();
        for i in 0..60 {
            s.on_extension(&report(1, i, "decided", "alert", "default_policy", None)).unwrap();
        }
        assert_eq!(s.history.occupied_len(), HISTORY);
        assert_eq!(s.evicted, 10);
        assert_eq!(s.history.iter().next().unwrap().id, 11);
        assert_eq!(s.pending.len(), MAX_PENDING);
        assert!(s.pending.iter().all(|id| s.record(*id).is_some()));
    }

    #[test]
    fn spent_once_rule_leaves_and_rules_are_pushed() {
        let mut s = State::new();
        let r = s.add_rule(7, RuleTarget::One(DialogKind::Confirm), true, true, None, MatchArg::default()).unwrap();
        let out = s.on_extension(&report(7, 1, "decided", "confirm", "rule", Some(r.id))).unwrap();
        assert!(s.rules_of(7).is_empty());
        assert_eq!(out[0]["type"], "recorded");
        assert_eq!(out[1], json!({"type": "rules", "tab_id": 7, "rev": 1, "rules": "U1", "policy": "auto"}));
        assert!(s.pending.is_empty(), "rule-answered dialogs are not pending");
    }

    #[test]
    fn native_dialog_is_pending_until_it_closes() {
        let mut s = State::new();
        s.on_extension(&report(2, 9, "open", "confirm", "pilot_off", None)).unwrap();
        assert_eq!(s.pending.len(), 1);
        let id = s.pending[0];
        assert_eq!(s.record(id).unwrap().state, "open");
        s.on_extension(&json!({"type":"dialog","tab_id":2,"frame_id":0,"document_id":"d1",
            "report":{"seq":9,"phase":"closed","kind":"confirm","accepted":true}}))
            .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.state, rec.accepted, rec.closed_by), ("closed", Some(true), Some(ClosedBy::Remote)));
        assert!(s.pending.is_empty());
    }

    #[test]
    fn setup_for_the_same_type_replaces_and_clear_counts() {
        let mut s = State::new();
        let c = RuleTarget::One(DialogKind::Confirm);
        s.add_rule(1, c, true, true, None, MatchArg::default()).unwrap();
        s.add_rule(1, c, false, false, None, MatchArg::default()).unwrap();
        s.add_rule(1, RuleTarget::One(DialogKind::Prompt), true, true, Some("x".into()), MatchArg::default()).unwrap();
        assert_eq!(s.rules_of(1).len(), 2);
        assert_eq!(s.clear_rules(1, c), 1);
        assert_eq!(s.clear_rules(1, RuleTarget::All), 1);
        assert_eq!(s.clear_rules(1, RuleTarget::All), 0);
    }

    #[test]
    fn closed_tabs_drop_their_rules() {
        let mut s = State::new();
        s.add_rule(1, RuleTarget::All, true, false, None, MatchArg::default()).unwrap();
        s.on_extension(&json!({"type":"tabs","tracked":2,"tabs":[{"id":2,"url":"http://a/"}]})).unwrap();
        assert!(s.rules_of(1).is_empty());
        assert_eq!(s.tracked, Some(2));
    }

    #[test]
    fn malformed_messages_are_refused_without_change() {
        let mut s = State::new();
        for bad in [
            json!(1),
            json!({}),
            json!({"type":"nope"}),
            json!({"type":"dialog","tab_id":"x"}),
            report(1, 1, "decided", "shout", "rule", None),
            report(1, 1, "decided", "alert", "someone", None),
            json!({"type":"tabs","tabs":"all"}),
        ] {
            assert!(s.on_extension(&bad).is_err(), "{bad}");
        }
        assert_eq!(s.history.occupied_len(), 0);
    }

    #[test]
    fn page_text_is_redacted_before_it_is_stored_or_sent() {
        let mut s = State::new();
        let mut m = report(1, 1, "decided", "prompt", "default_policy", None);
        m["report"]["message"] = json!("Card 4111-1111-1111-1111 for ada@example.com?");
        m["report"]["default_text"] = json!("password=swordfish");
        let out = s.on_extension(&m).unwrap();
        let rec = s.history.iter().next().unwrap();
        assert_eq!(rec.message, "Card [redacted:card_number] for [redacted:email]?");
        assert_eq!(rec.default_text.as_deref(), Some("password=[redacted:password]"));
        assert_eq!(rec.redacted, ["email", "card_number", "password"]);
        assert_eq!(out[0]["message"], "Card [redacted:card_number] for [redacted:email]?");
        let logs = serde_json::to_string(&s.logs.of_tab(1)).unwrap();
        assert!(!logs.contains("4111") && !logs.contains("ada@"), "{logs}");
    }

    #[test]
    fn huge_messages_are_cut_and_marked() {
        let mut s = State::new();
        let mut m = report(1, 1, "decided", "alert", "default_policy", None);
        m["report"]["message"] = json!("é".repeat(10_000));
        s.on_extension(&m).unwrap();
        let rec = s.history.iter().next().unwrap();
        assert_eq!(rec.message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(rec.message_truncated);
    }
}
