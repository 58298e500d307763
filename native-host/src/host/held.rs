//! Dialogs the extension's debugger session holds open (tabs under a dialog policy). The
//! host decides who answers each: a rule (the same engine the page runs), the tab's policy,
//! the agent, or the watchdog; the browser reports when it closed. Also what every held
//! thing shares, page dialog or browser prompt (`prompt.rs`): the agent's and the
//! watchdog's answers, and the `dialogs_blocking` note.

use super::explain;
use super::kinds::{self, With};
use super::protocol::{AnswerResult, HeldClosed, HeldOpened, HeldRef, ToBrowser};
use super::record::{self, DecidedBy, DialogRecord, DialogState, HeldDialog, MAX_MESSAGE_CHARS};
use super::state::State;
use crate::host::kinds::RuleSpec;
use crate::reply::{BlockingDialog, BlockingNote, ErrorCode, ToolError};
use ringbuf::traits::Consumer;
use std::time::{Duration, Instant};
use unmodal_engine::{DialogKind, Engine, Policy, Subject};

/// More open held dialogs than this means a confused extension, not a real browser (it
/// shows one per tab at a time).
const MAX_HELD: usize = 64;
/// How much of a dialog's message the blocking note repeats.
const NOTE_CHARS: usize = 200;
/// The agent's answer to something held while the pilot is off.
const PILOT_OFF_NO_ANSWER: &str = "AI Web Pilot is off, so Unmodal answers nothing for the agent: a person answers \
the browser's own prompt, or switches the pilot on with `unmodal pilot on` in a terminal.";

/// What answered a held dialog as it opened, if anything did.
struct Verdict {
    pub accept: bool,
    pub text: Option<String>,
    pub by: DecidedBy,
    pub rule: Option<u32>,
}

impl State {
    pub(super) fn on_held(&mut self, m: HeldOpened) -> Result<Vec<ToBrowser>, String> {
        let kind = m.kind;
        if self.held_pos(m.tab_id, m.hold).is_some() {
            return Err(format!("held dialog {} reported twice", m.hold));
        }
        if self.held.len() >= MAX_HELD {
            return Err("too many held dialogs".into());
        }
        let (message, cut) = record::clip(&m.message, MAX_MESSAGE_CHARS);
        let tab = self.policy_of(m.tab_id);
        // With the pilot off no session should hold anything (the host sent no policy), so
        // this is a worker that says so on its own: recorded, answered by nobody here.
        let pilot = self.pilot;
        let verdict = if pilot { self.verdict(m.tab_id, kind, &message, &m.url, tab.policy) } else { None };
        let (clean, mut redacted) = self.redactor.apply(&message);
        let default_text = (kind == DialogKind::Prompt).then(|| {
            let (t, hits) = self.redactor.apply(&record::clip(&m.default_prompt, MAX_MESSAGE_CHARS).0);
            redacted.extend(hits.into_iter().filter(|h| !redacted.contains(h)).collect::<Vec<_>>());
            t
        });
        let now = Instant::now();
        let waits = pilot && verdict.is_none() && tab.policy == Policy::MustRespond;
        let deadline = waits.then(|| now + Duration::from_secs(u64::from(tab.timeout_s)));
        let id = self.next_id();
        let page_url = self.tab(m.tab_id).map(|t| t.url.clone()).unwrap_or_default();
        let record = DialogRecord {
            message: clean,
            message_truncated: cut,
            default_text,
            state: DialogState::Open,
            redacted,
            rule_id: verdict.as_ref().and_then(|v| v.rule),
            explanation: if pilot {
                explain::held(kind, verdict.as_ref().map(|v| (v.by, v.accept, v.rule)), &tab)
            } else {
                explain::held_pilot_off(kind)
            },
            url: m.url,
            page_url,
            frame_id: m.top_frame.then_some(0),
            ..DialogRecord::new(
                id,
                kind.into(),
                m.tab_id,
                match &verdict {
                    _ if !pilot => DecidedBy::PilotOff,
                    Some(v) => v.by,
                    None => DecidedBy::Agent,
                },
            )
        };
        self.logs.dialog(&record);
        let mut out = vec![ToBrowser::recorded(&record)];
        if let Some(v) = &verdict {
            out.push(answer_message(m.tab_id, m.hold, v.accept, v.text.clone()));
            if let Some(rule) = v.rule {
                out.extend(self.spend_rule(m.tab_id, rule));
            }
        }
        if let Some(d) = deadline {
            self.armed.push((id, d - now));
        }
        // Pilot off: whatever closes it is the browser's (nobody here may answer it).
        let closing = if pilot { verdict.as_ref().map(|v| v.by) } else { Some(DecidedBy::Remote) };
        let answer = verdict.as_ref().map(|v| (v.accept, v.text.clone()));
        self.held.push(HeldDialog { record, hold: m.hold, opened: now, deadline, closing, answer, answer_error: None });
        Ok(out)
    }

    /// The tab's rules first (decided by the page's own engine, natively), then its policy.
    fn verdict(&self, tab: i64, kind: DialogKind, message: &str, url: &str, policy: Policy) -> Option<Verdict> {
        let mut engine = Box::new(Engine::new());
        let config: Vec<u16> = self.encode_config(tab, Policy::MustRespond).encode_utf16().collect();
        if engine.load(&config).is_ok() {
            let (m, u): (Vec<u16>, Vec<u16>) = (message.encode_utf16().collect(), url.encode_utf16().collect());
            let d = engine.decide_for(kind, Subject { message: &m, url: &u });
            if let (unmodal_engine::DecidedBy::Rule, Some(slot)) = (d.by, d.slot) {
                let id = engine.rule_id(usize::from(slot))?;
                let rule = self.rules_of(tab).iter().find(|r| r.id == id)?;
                let RuleSpec::Dialog { accept, text, .. } = &rule.rule else { return None };
                let text = (kind == DialogKind::Prompt && *accept).then(|| text.clone().unwrap_or_default());
                return Some(Verdict { accept: *accept, text, by: DecidedBy::Rule, rule: Some(id) });
            }
        }
        let accept = match policy {
            Policy::AutoAccept => true,
            Policy::AutoDismiss => false,
            // Held for the agent (or, on auto, left to the human: the session is going away).
            Policy::MustRespond | Policy::Auto => return None,
        };
        let text = (kind == DialogKind::Prompt && accept).then(String::new);
        Some(Verdict { accept, text, by: DecidedBy::Policy, rule: None })
    }

    pub(super) fn on_held_closed(&mut self, m: &HeldClosed) {
        let Some(pos) = self.held_pos(m.tab_id, m.hold) else {
            return;
        };
        let HeldDialog { mut record, opened, closing, answer, .. } = self.held.remove(pos);
        // The close is recorded as the browser reports it: one that differs from the answer
        // the host sent was not that answer (another client's, or a worker's made-up close).
        // (A text was sent only with an accepted prompt: then the page's must be it.)
        let as_sent = answer
            .as_ref()
            .is_some_and(|(accept, sent)| *accept == m.accepted && sent.as_deref().is_none_or(|t| t == m.text));
        let by = match closing {
            _ if m.gone => DecidedBy::Remote,
            Some(by) if as_sent => by,
            _ => DecidedBy::Remote,
        };
        record.state = DialogState::Closed;
        record.accepted = if m.gone { None } else { Some(m.accepted) };
        record.response_text = (record.kind == DialogKind::Prompt && m.accepted && !m.gone)
            .then(|| self.redactor.apply(&record::clip(&m.text, MAX_MESSAGE_CHARS).0).0);
        record.closed_by = Some(by);
        if record.decided_by == DecidedBy::Agent {
            record.decided_by = by;
        }
        let summary = explain::closed(&record, by, opened.elapsed());
        record.explanation = format!("{} {summary}", record.explanation);
        self.logs.closed(&record, summary);
        self.remember(record);
    }

    pub(super) fn on_answer_result(&mut self, m: AnswerResult) {
        if let Some(pos) = self.held_pos(m.tab_id, m.hold)
            && !m.ok
        {
            let h = &mut self.held[pos];
            h.answer_error = Some(m.error.unwrap_or_else(|| "the browser refused the answer".into()));
            h.closing = None;
        }
    }

    /// A new service worker says which dialogs its debugger sessions hold (`hello`). Those
    /// a previous host left that it does not list were dismissed when that host went away
    /// (nobody could answer them): they close with the default answer. The others wait on,
    /// their watchdogs armed again; an answer that was on its way when the worker stopped
    /// may be lost, so such a dialog is dismissed at once. One the worker holds that this
    /// host knows nothing of (its state was lost) is dismissed: nobody could answer it.
    pub(super) fn keep_held(&mut self, open: &[HeldRef]) -> Vec<ToBrowser> {
        let now = Instant::now();
        let unknown = open
            .iter()
            .filter(|r| self.held_pos(r.tab_id, r.hold).is_none())
            .map(|r| answer_message(r.tab_id, r.hold, false, None))
            .collect();
        let (kept, gone): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            // A browser prompt is the worker's own (numbered anew by each worker): one that
            // restarted or a host that died let it go.
            .partition(|h| {
                !h.record.kind.is_browser_prompt() && open.contains(&HeldRef { tab_id: h.record.tab_id, hold: h.hold })
            });
        for h in kept {
            let due = if h.closing.is_some() { Some(now) } else { h.deadline };
            if let Some(d) = due {
                self.armed.push((h.record.id, d.saturating_duration_since(now)));
            }
            self.held.push(HeldDialog { closing: None, answer: None, deadline: due, ..h });
        }
        for h in gone {
            let mut record = h.record;
            record.state = DialogState::Closed;
            record.accepted = Some(false);
            record.closed_by = Some(DecidedBy::DefaultPolicy);
            if record.decided_by == DecidedBy::Agent {
                record.decided_by = DecidedBy::DefaultPolicy;
            }
            let summary = format!(
                "{} Unmodal's host stopped while it was held open, so the extension dismissed it at once.",
                explain::closed(&record, DecidedBy::DefaultPolicy, now.saturating_duration_since(h.opened))
            );
            record.explanation = format!("{} {summary}", record.explanation);
            self.logs.closed(&record, summary);
            self.remember(record);
        }
        unknown
    }

    /// A held page dialog (browser prompts are numbered apart: `prompt_pos`).
    fn held_pos(&self, tab: i64, hold: u64) -> Option<usize> {
        self.held.iter().position(|h| !h.record.kind.is_browser_prompt() && h.record.tab_id == tab && h.hold == hold)
    }

    /// Dialogs held open that wait for the agent (nobody is answering them yet).
    pub fn awaiting_agent(&self) -> impl Iterator<Item = &HeldDialog> {
        self.held.iter().filter(|h| h.closing.is_none())
    }

    /// Sends an answer to a held dialog or prompt on behalf of `by` (the agent or the
    /// watchdog); `with` what a browser prompt's accept carries (a login, a PDF file).
    pub(super) fn answer_held(
        &mut self,
        id: u64,
        accept: bool,
        text: Option<String>,
        with: With,
        by: DecidedBy,
    ) -> Result<ToBrowser, ToolError> {
        let Some(pos) = self.held.iter().position(|h| h.record.id == id) else {
            if let Some(why) = kinds::not_held(self, id) {
                return Err(ToolError::new(ErrorCode::InvalidParams, why));
            }
            return Err(ToolError::new(ErrorCode::DialogNotFound, format!("Dialog {id} is not open.")));
        };
        let h = &mut self.held[pos];
        if let Some((owner, carries)) = kinds::carrier(&with)
            && owner != h.record.kind
        {
            let kind = h.record.kind.as_str();
            let a = crate::api::article(kind);
            let why = format!("Dialog {id} is {a} {kind}; {} (use accept and text).", carries.only);
            return Err(ToolError::new(ErrorCode::InvalidParams, why));
        }
        // Only the watchdog's refusal goes to the browser while the pilot is off.
        if !self.pilot && by == DecidedBy::Agent {
            return Err(ToolError::new(ErrorCode::AiWebPilotDisabled, PILOT_OFF_NO_ANSWER));
        }
        if h.closing.is_some() {
            return Err(ToolError::new(ErrorCode::DialogNotFound, format!("Dialog {id} is being answered already.")));
        }
        if h.record.kind.is_browser_prompt() {
            return self.answer_prompt(pos, accept, with, by);
        }
        h.closing = Some(by);
        h.answer_error = None;
        let text = (h.record.kind == DialogKind::Prompt && accept).then(|| text.unwrap_or_default());
        h.answer = Some((accept, text.clone()));
        Ok(answer_message(h.record.tab_id, h.hold, accept, text))
    }

    /// The watchdog's turn: dismiss the dialog if nobody answered it.
    pub fn watchdog(&mut self, id: u64) -> Vec<ToBrowser> {
        self.answer_held(id, false, None, With::Nothing, DecidedBy::Watchdog).map(|m| vec![m]).unwrap_or_default()
    }

    /// Once the answer to `id` went to the browser: `Some(Ok(record))` when the dialog
    /// closed, `Some(Err(why))` when the browser refused the answer, `None` meanwhile.
    pub fn answer_outcome(&self, id: u64) -> Option<Result<&DialogRecord, String>> {
        if let Some(h) = self.held_dialog(id) {
            return h.answer_error.clone().map(Err);
        }
        self.record(id).map(Ok)
    }

    /// Held dialogs and prompts of tabs that are gone close as `remote`.
    pub(super) fn drop_held_of_closed_tabs(&mut self) {
        self.drop_prompts_of_closed_tabs();
        let gone: Vec<HeldClosed> = self
            .held
            .iter()
            .filter(|h| !h.record.kind.is_browser_prompt() && self.tab(h.record.tab_id).is_none())
            .map(|h| HeldClosed {
                tab_id: h.record.tab_id,
                hold: h.hold,
                accepted: false,
                text: String::new(),
                gone: true,
            })
            .collect();
        for m in &gone {
            self.on_held_closed(m);
        }
    }

    /// The note every answer carries while a dialog waits for the agent.
    pub fn blocking_note(&self) -> Option<BlockingNote> {
        let now = Instant::now();
        let secs = |d: Duration| (d.as_secs_f64() * 10.0).round() / 10.0;
        let held = self.awaiting_agent().map(|h| BlockingDialog {
            dialog_id: h.record.id,
            tab_id: h.record.tab_id,
            kind: h.record.kind,
            message: record::clip(&h.record.message, NOTE_CHARS).0,
            url: h.record.url.clone(),
            open_for_s: secs(now - h.opened),
            watchdog_in_s: h.deadline.map(|d| secs(d.saturating_duration_since(now))),
        });
        // The kinds' own dialogs the browser shows (an app link's): nothing answers them, no watchdog.
        let shown = kinds::shown(self).into_iter().filter_map(|(id, tab_id, opened)| {
            let r = self.history.iter().find(|r| r.id == id)?;
            Some(BlockingDialog {
                dialog_id: id,
                tab_id,
                kind: r.kind,
                message: record::clip(&r.message, NOTE_CHARS).0,
                url: r.url.clone(),
                open_for_s: secs(now - opened),
                watchdog_in_s: None,
            })
        });
        BlockingNote::new(held.chain(shown).collect())
    }
}

/// `text` is given only for an accepted prompt (the callers decide that).
fn answer_message(tab: i64, hold: u64, accept: bool, text: Option<String>) -> ToBrowser {
    ToBrowser::Answer { tab_id: tab, hold, accept, text }
}

#[cfg(test)]
mod tests {
    use super::super::agent_calls::Done;
    use super::super::state::tests::{feed, to_json};
    use super::*;
    use crate::api::{MatchArg, PolicyCall};
    use crate::host::kinds::DialogCall;
    use ringbuf::traits::Consumer;
    use serde_json::{Value, json};
    use unmodal_engine::RuleTarget;

    fn state(policy: Policy) -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":4,"url":"http://b/"}]}))
            .unwrap();
        for tab in [3, 4] {
            s.configure(PolicyCall { tab: Some(tab), policy, timeout_s: 5 }).unwrap();
        }
        s
    }

    fn held(s: &mut State, tab: i64, hold: u64, kind: &str, message: &str) -> Vec<Value> {
        to_json(
            &feed(
                s,
                json!({"type":"held","tab_id":tab,"hold":hold,"kind":kind,"message":message,
            "default_prompt":"d","url":"http://a/frame","top_frame":true}),
            )
            .unwrap(),
        )
    }

    fn answer(s: &mut State, dialog_id: Option<u64>, tab: Option<i64>) -> Result<Done, ToolError> {
        s.interact(DialogCall::Respond { tab, accept: true, text: Some("Ada".into()), dialog_id })
    }

    #[test]
    fn must_respond_holds_until_the_agent_answers() {
        let mut s = state(Policy::MustRespond);
        let out = held(&mut s, 3, 1, "prompt", "Name?");
        assert_eq!(out.len(), 1, "no answer goes out by itself: {out:?}");
        assert_eq!(s.armed.len(), 1);
        assert_eq!(s.armed[0].1, Duration::from_secs(5));
        let note = s.blocking_note().unwrap();
        assert_eq!(note.dialogs[0].kind, DialogKind::Prompt);
        let id = note.dialogs[0].dialog_id;
        let done = answer(&mut s, None, None).unwrap();
        assert_eq!(done.answering, Some(id));
        assert_eq!(to_json(&done.msgs)[0], json!({"type":"answer","tab_id":3,"hold":1,"accept":true,"text":"Ada"}));
        assert!(s.blocking_note().is_none(), "being answered, it no longer waits");
        assert!(s.answer_outcome(id).is_none());
        feed(&mut s, json!({"type":"held_closed","tab_id":3,"hold":1,"accepted":true,"text":"Ada"})).unwrap();
        let rec = s.answer_outcome(id).unwrap().unwrap();
        assert_eq!(
            (rec.state, rec.closed_by, rec.decided_by),
            (DialogState::Closed, Some(DecidedBy::Agent), DecidedBy::Agent)
        );
        assert_eq!(rec.response_text.as_deref(), Some("Ada"));
        assert_eq!(s.answered(id).unwrap()["agent_answer_applied"], true);
        // The watchdog, late, finds nothing to do.
        assert!(s.watchdog(id).is_empty());
    }

    #[test]
    fn the_watchdog_dismisses_what_nobody_answered() {
        let mut s = state(Policy::MustRespond);
        held(&mut s, 3, 1, "confirm", "Sure?");
        let id = s.held[0].record.id;
        assert_eq!(s.watchdog(id), vec![ToBrowser::Answer { tab_id: 3, hold: 1, accept: false, text: None }]);
        assert!(answer(&mut s, Some(id), None).is_err(), "the agent is too late");
        feed(&mut s, json!({"type":"held_closed","tab_id":3,"hold":1,"accepted":false})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.closed_by, rec.decided_by), (Some(DecidedBy::Watchdog), DecidedBy::Watchdog));
    }

    #[test]
    fn several_held_need_a_dialog_id() {
        let mut s = state(Policy::MustRespond);
        held(&mut s, 3, 1, "confirm", "First?");
        held(&mut s, 4, 2, "confirm", "Second?");
        let err = answer(&mut s, None, None).unwrap_err();
        assert_eq!(err.code, ErrorCode::SeveralDialogsPending);
        assert!(err.message.contains("First?") && err.message.contains("Second?"), "{}", err.message);
        let second = s.held[1].record.id;
        assert_eq!(answer(&mut s, Some(second), None).unwrap().answering, Some(second));
        // A tab narrows the candidates to one.
        let first = s.held[0].record.id;
        assert_eq!(answer(&mut s, None, Some(3)).unwrap().answering, Some(first));
        assert_eq!(answer(&mut s, Some(999), None).unwrap_err().code, ErrorCode::DialogNotFound);
    }

    #[test]
    fn rules_and_policies_answer_held_dialogs_at_once() {
        let mut s = state(Policy::MustRespond);
        let m = MatchArg { message_contains: Some("alpha".into()), ..MatchArg::default() };
        let rule = s
            .add_rule(
                3,
                true,
                RuleSpec::Dialog { target: RuleTarget::One(DialogKind::Confirm), accept: true, text: None, matcher: m },
            )
            .unwrap();
        let out = held(&mut s, 3, 1, "confirm", "Delete ALPHA?");
        assert_eq!(out[1], json!({"type":"answer","tab_id":3,"hold":1,"accept":true}));
        assert_eq!(out[2]["type"], "config", "the once-rule is spent");
        assert!(s.blocking_note().is_none());
        assert_eq!(s.held[0].record.rule_id, Some(rule.id));
        let mut s = state(Policy::AutoAccept);
        let out = held(&mut s, 3, 1, "beforeunload", "");
        assert_eq!(out[1], json!({"type":"answer","tab_id":3,"hold":1,"accept":true}));
        feed(&mut s, json!({"type":"held_closed","tab_id":3,"hold":1,"accepted":true})).unwrap();
        assert_eq!(s.history.iter().last().unwrap().closed_by, Some(DecidedBy::Policy));
    }

    #[test]
    fn a_refused_answer_reopens_the_dialog_for_the_agent() {
        let mut s = state(Policy::MustRespond);
        held(&mut s, 3, 1, "alert", "Hi");
        let id = s.held[0].record.id;
        answer(&mut s, None, None).unwrap();
        feed(&mut s, json!({"type":"answer_result","tab_id":3,"hold":1,"ok":false,"error":"No dialog is showing"}))
            .unwrap();
        assert_eq!(s.answered(id).unwrap_err().code, ErrorCode::AnswerFailed);
        assert!(s.blocking_note().is_some());
    }

    #[test]
    fn held_dialogs_of_closed_tabs_close_as_remote() {
        let mut s = state(Policy::MustRespond);
        held(&mut s, 4, 1, "confirm", "Leave?");
        let id = s.held[0].record.id;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        let rec = s.record(id).unwrap();
        assert_eq!((rec.state, rec.closed_by, rec.accepted), (DialogState::Closed, Some(DecidedBy::Remote), None));
    }

    #[test]
    fn malformed_held_messages_are_refused() {
        let mut s = state(Policy::MustRespond);
        for bad in [
            json!({"type":"held","tab_id":3,"hold":1,"kind":"shout"}),
            json!({"type":"held","tab_id":3,"kind":"alert"}),
            json!({"type":"held","tab_id":"x","hold":1,"kind":"alert"}),
            json!({"type":"held_closed","tab_id":3}),
            json!({"type":"answer_result","tab_id":3,"hold":1}),
        ] {
            assert!(feed(&mut s, bad.clone()).is_err(), "{bad}");
        }
        held(&mut s, 3, 1, "alert", "x");
        assert!(feed(&mut s, json!({"type":"held","tab_id":3,"hold":1,"kind":"alert"})).is_err(), "twice");
        assert_eq!(s.held.len(), 1);
    }
}
