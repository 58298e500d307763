//! Dialog reports from the page hooks become records: cut, redacted, explained, logged, and
//! queued for the agent's acknowledgement when the agent did not choose the answer.

use super::logs::Origin;
use super::protocol::{DialogReport, NoDialog, Phase, Source, ToBrowser};
use super::record::{self, DecidedBy, DialogRecord, DialogState, DocSeq, MAX_MESSAGE_CHARS};
use super::state::State;
use ringbuf::traits::Consumer;
use unmodal_engine::DialogKind;

impl State {
    /// A dialog the browser would not have shown: the page got what the browser gives.
    fn on_no_dialog(&mut self, m: &DialogReport, why: NoDialog) -> Vec<ToBrowser> {
        let r = &m.report;
        let kind = r.kind;
        let (message, cut) = record::clip(r.message.as_deref().unwrap_or(""), MAX_MESSAGE_CHARS);
        let (message, redacted) = self.redactor.apply(&message);
        let given = match kind {
            DialogKind::Confirm => "false",
            DialogKind::Prompt => "null",
            _ => "undefined",
        };
        let id = self.next_id();
        let rec = DialogRecord {
            message,
            message_truncated: cut || r.message_cut,
            state: DialogState::Closed,
            closed_by: Some(DecidedBy::Browser),
            redacted,
            explanation: format!(
                "{} not shown: {}, where the browser shows no dialog; the page got {given}, as without Unmodal (no \
rule or policy applies)",
                kind.as_str(),
                why.why()
            ),
            url: m.from.url.clone(),
            page_url: m.from.page_url.clone(),
            frame_id: Some(m.from.frame_id),
            ..DialogRecord::new(id, kind.into(), m.from.tab_id, DecidedBy::Browser)
        };
        self.logs.dialog(&rec);
        let out = vec![ToBrowser::recorded(&rec)];
        self.remember(rec);
        out
    }

    pub(super) fn on_dialog(&mut self, m: DialogReport) -> Result<Vec<ToBrowser>, String> {
        let r = &m.report;
        let key = DocSeq {
            tab: m.from.tab_id,
            frame: m.from.frame_id,
            document: m.from.document_id.clone().unwrap_or_default(),
            seq: r.seq,
        };
        if r.phase == Phase::Closed {
            self.close_native(&key, r.accepted, r.value.as_deref());
            return Ok(Vec::new());
        }
        if let Some(why) = r.no_dialog {
            return Ok(self.on_no_dialog(&m, why));
        }
        let by: DecidedBy = r.decided_by.ok_or("report without decided_by")?.into();
        let kind = r.kind;
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
        let open = r.phase == Phase::Open;
        let response_text = if open { None } else { r.value.as_deref().map(&mut clean) };
        let rule = if by == DecidedBy::Rule { r.rule_id } else { None };
        let id = self.next_id();
        let rec = DialogRecord {
            message,
            message_truncated: cut || r.message_cut,
            default_text,
            state: if open { DialogState::Open } else { DialogState::Closed },
            accepted: if open { None } else { r.accepted },
            response_text,
            redacted,
            closed_by: match by {
                // The browser's own leave prompt (if any) is not ours to close.
                _ if kind == DialogKind::BeforeUnload && r.accepted != Some(true) => None,
                DecidedBy::Rule | DecidedBy::DefaultPolicy | DecidedBy::Policy => Some(by),
                _ => None,
            },
            rule_id: rule,
            rules_loaded: r.rules_loaded,
            would_show: if kind == DialogKind::BeforeUnload { r.would_show } else { None },
            explanation: self.explain(kind, by, rule, r.rules_loaded, r.accepted, m.from.tab_id),
            url: m.from.url,
            page_url: m.from.page_url,
            frame_id: Some(m.from.frame_id),
            key: Some(key),
            ..DialogRecord::new(id, kind.into(), m.from.tab_id, by)
        };
        self.logs.dialog(&rec);
        // The popup shows what the host stored (redacted), never the raw page text.
        let mut out = vec![ToBrowser::recorded(&rec)];
        let tab = rec.tab_id;
        self.remember(rec);
        // What the agent did not choose waits for its acknowledgement.
        if matches!(by, DecidedBy::DefaultPolicy | DecidedBy::PilotOff) {
            self.queue_pending(id);
        }
        // A page's word spends a once-rule only while pages hold rules (the pilot on).
        if let Some(rule_id) = rule.filter(|_| self.pilot) {
            out.extend(self.spend_rule(tab, rule_id));
        }
        Ok(out)
    }

    /// Reports a flooding frame did not send: counted, never stored one by one.
    pub(super) fn on_folded(&mut self, from: &Source, count: u64) {
        let n = self.folded.entry(from.tab_id).or_default();
        *n = n.saturating_add(count);
        let at = Origin { tab_id: from.tab_id, frame_id: from.frame_id, url: &from.url, page_url: &from.page_url };
        self.logs.folded(at, count);
    }

    /// A native dialog (pilot off) closed; a human answered it.
    fn close_native(&mut self, key: &DocSeq, accepted: Option<bool>, value: Option<&str>) {
        let Some(rec) = self.history.iter_mut().find(|r| r.key.as_ref() == Some(key) && r.is_open()) else {
            return;
        };
        rec.state = DialogState::Closed;
        rec.accepted = accepted;
        rec.response_text = value.map(|v| self.redactor.apply(&record::clip(v, MAX_MESSAGE_CHARS).0).0);
        rec.closed_by = Some(DecidedBy::Remote);
        let id = rec.id;
        self.pending.retain(|&p| p != id);
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{feed, to_json};
    use super::super::state::{HISTORY, MAX_PENDING};
    use super::*;
    use crate::host::state::tests::dialog_rule;
    use ringbuf::traits::{Consumer, Observer};
    use serde_json::{Value, json};
    use unmodal_engine::RuleTarget;

    fn report(tab: i64, seq: u64, phase: &str, kind: &str, by: &str, rule: Option<u32>) -> Value {
        json!({"type": "dialog", "tab_id": tab, "frame_id": 0, "document_id": "d1", "url": "http://x/", "page_url": "http://x/",
               "report": {"seq": seq, "phase": phase, "kind": kind, "message": "m", "decided_by": by, "rule_id": rule,
                          "rules_loaded": true, "accepted": phase == "decided"}})
    }

    #[test]
    fn history_keeps_fifty_and_counts_evictions() {
        let mut s = State::new();
        for i in 0..60 {
            feed(&mut s, report(1, i, "decided", "alert", "default_policy", None)).unwrap();
        }
        assert_eq!(s.history.occupied_len(), HISTORY);
        assert_eq!(s.evicted, 10);
        assert_eq!(s.history.iter().next().unwrap().id, 11);
        assert_eq!(s.pending.len(), MAX_PENDING);
        assert!(s.pending.iter().all(|id| s.record(*id).is_some()));
    }

    #[test]
    fn a_report_that_spends_a_once_rule_pushes_the_config() {
        let mut s = State::new();
        s.pilot = true;
        let r = s.add_rule(7, true, dialog_rule(RuleTarget::One(DialogKind::Confirm), true)).unwrap();
        let out = to_json(&feed(&mut s, report(7, 1, "decided", "confirm", "rule", Some(r.id))).unwrap());
        assert!(s.rules_of(7).is_empty());
        assert_eq!(out[0]["type"], "recorded");
        assert_eq!(out[1], json!({"type": "config", "tab_id": 7, "rev": 1, "config": "U1E1", "debugger": false}));
        assert!(s.pending.is_empty(), "rule-answered dialogs are not pending");
    }

    #[test]
    fn native_dialog_is_pending_until_it_closes() {
        let mut s = State::new();
        feed(&mut s, report(2, 9, "open", "confirm", "pilot_off", None)).unwrap();
        assert_eq!(s.pending.len(), 1);
        let id = s.pending[0];
        assert!(s.record(id).unwrap().is_open());
        feed(
            &mut s,
            json!({"type":"dialog","tab_id":2,"frame_id":0,"document_id":"d1",
            "report":{"seq":9,"phase":"closed","kind":"confirm","accepted":true}}),
        )
        .unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!(
            (rec.state, rec.accepted, rec.closed_by),
            (DialogState::Closed, Some(true), Some(DecidedBy::Remote))
        );
        assert!(s.pending.is_empty());
    }

    #[test]
    fn a_report_without_a_decider_is_refused_without_change() {
        let mut s = State::new();
        let mut m = report(1, 1, "decided", "alert", "rule", None);
        m["report"].as_object_mut().unwrap().remove("decided_by");
        assert!(feed(&mut s, m).is_err());
        assert_eq!(s.history.occupied_len(), 0);
    }

    #[test]
    fn page_text_is_redacted_before_it_is_stored_or_sent() {
        let mut s = State::new();
        let mut m = report(1, 1, "decided", "prompt", "default_policy", None);
        m["report"]["message"] = json!("Card 4111-1111-1111-1111 for ada@example.com?");
        m["report"]["default_text"] = json!("password=swordfish");
        let out = to_json(&feed(&mut s, m).unwrap());
        let rec = s.history.iter().next().unwrap();
        assert_eq!(rec.message, "Card [redacted:card_number] for [redacted:email]?");
        assert_eq!(rec.default_text.as_deref(), Some("password=[redacted:password]"));
        assert_eq!(rec.redacted, ["email", "card_number", "password"]);
        assert_eq!(out[0]["message"], "Card [redacted:card_number] for [redacted:email]?");
        let logs = serde_json::to_string(&s.logs.of_tab(1)).unwrap();
        assert!(!logs.contains("4111") && !logs.contains("ada@"), "{logs}");
    }

    #[test]
    fn a_dialog_the_browser_would_not_show_is_recorded_as_the_browsers_and_spends_no_rule() {
        let mut s = State::new();
        s.add_rule(1, true, dialog_rule(RuleTarget::One(DialogKind::Confirm), true)).unwrap();
        let mut m = report(1, 1, "decided", "confirm", "rule", None);
        let r = m["report"].as_object_mut().unwrap();
        r.remove("decided_by");
        r.insert("no_dialog".into(), json!("sandboxed"));
        feed(&mut s, m).unwrap();
        let rec = s.history.iter().next().unwrap();
        assert_eq!((rec.decided_by, rec.closed_by, rec.accepted), (DecidedBy::Browser, Some(DecidedBy::Browser), None));
        assert!(rec.explanation.contains("sandboxed without allow-modals") && rec.explanation.contains("got false"));
        assert_eq!(s.rules_of(1).len(), 1, "the rule stays");
        assert!(s.pending.is_empty(), "nothing for the agent to acknowledge");
        let mut bad = report(1, 2, "decided", "alert", "rule", None);
        bad["report"]["no_dialog"] = json!("because");
        assert!(feed(&mut s, bad).is_err(), "an unknown reason is refused");
    }

    #[test]
    fn huge_messages_are_cut_and_marked() {
        let mut s = State::new();
        let mut m = report(1, 1, "decided", "alert", "default_policy", None);
        m["report"]["message"] = json!("é".repeat(10_000));
        feed(&mut s, m).unwrap();
        let rec = s.history.iter().next().unwrap();
        assert_eq!(rec.message.chars().count(), MAX_MESSAGE_CHARS);
        assert!(rec.message_truncated);
    }
}
