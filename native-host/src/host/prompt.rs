//! The one way every browser prompt goes (HTTP auth, permission prompts, device choosers:
//! prompts the browser shows, which the host decides). A kind plugs in with `PromptKind`
//! and `Spec` (`kinds/`); the pipeline owns the rest, once:
//! request → verdict (the tab's most specific rule, then its policy, else held for the
//! agent with the watchdog) → answer → the worker's result → record closed. What nobody
//! chose waits for the agent's acknowledgement; a closed tab closes what it held.

use super::explain;
use super::kinds::{self, HOLD_MARGIN, PromptKind, Verdict, With};
use super::protocol::{PromptDecision, PromptRequest, PromptResult, ToBrowser};
use super::record::{DecidedBy, DialogRecord, DialogState, HeldDialog};
use super::state::State;
use crate::kind::Kind;
use crate::reply::{ErrorCode, ToolError};
use std::time::{Duration, Instant};

/// Held prompts, at most (a page can ask many times at once); past it, refused at once.
const MAX_HELD: usize = 64;

/// What the worker says became of a held prompt's answer.
struct Outcome {
    /// The answer reached the request (false: the request or page was gone).
    applied: bool,
    /// The worker's own time limit answered: nobody did in time.
    expired: bool,
    /// What was applied was an accept.
    accepted: bool,
}

impl State {
    /// A browser prompt came (or, pilot off, the browser took it): decided, held or recorded.
    pub(super) fn on_prompt(&mut self, m: &PromptRequest, k: &dyn PromptKind) -> Result<Vec<ToBrowser>, String> {
        let kind = m.kind;
        k.check()?;
        if !m.native && self.prompt_pos(kind, m.tab_id, m.id).is_some() {
            return Err(format!("{} request {} reported twice", kind.as_str(), m.id));
        }
        k.arrived(self);
        let described = k.describe(&self.redactor, &m.url);
        let answer =
            |s: &mut State, decision, with, record| s.prompt_answer(kind, (m.tab_id, m.id, record), decision, with);
        let tab = self.policy_of(m.tab_id);
        // The host's own switch decides, not the worker's `native`: code a DevTools client
        // runs in the worker can send any request, and with the pilot off it is only
        // recorded (no rule, no policy, no answer, no secret leaves the host).
        let verdict = if m.native || !self.pilot {
            None
        } else {
            let best = self.rules.best(m.tab_id, |r| k.fits(r, &described.url));
            match (best, k.unprompted()) {
                (None, Some(decision)) => return Ok(vec![answer(self, decision, With::Nothing, 0)]),
                (Some(r), _) => Some(k.by_rule(r.id, &r.rule)),
                (None, None) => Some(k.by_policy(tab.policy)),
            }
        };
        // The host's own check of an accept, whatever gave it (`Spec::host_refuses`).
        let spec = kinds::spec(kind);
        let verdict = verdict.map(|v| v.unless(|| spec?.host_refuses(self, &described.url, &described.details)));
        let waits = matches!(verdict, Some(Verdict::Hold { .. }));
        if waits && self.held.len() >= MAX_HELD {
            return Ok(vec![answer(self, PromptDecision::Refuse, With::Nothing, 0)]);
        }
        let (by, why, rule) = match &verdict {
            None => match k.not_shown() {
                Some(why) => (DecidedBy::Browser, why, None),
                None => (DecidedBy::PilotOff, k.pilot_off(), None),
            },
            Some(Verdict::Hold { why }) => (DecidedBy::Agent, why.clone(), None),
            Some(Verdict::Answer { by, why, rule, .. }) => (*by, why.clone(), *rule),
        };
        let open = waits || (verdict.is_none() && k.open_until_done());
        let mut details = described.details;
        if let Some(Verdict::Answer { decision: PromptDecision::Accept, with, .. }) = &verdict {
            with.name_on(&mut details);
        }
        let record = DialogRecord {
            message: described.message,
            message_truncated: described.truncated,
            redacted: described.redacted,
            state: if open { DialogState::Open } else { DialogState::Closed },
            accepted: match &verdict {
                Some(Verdict::Answer { decision, .. }) => Some(*decision == PromptDecision::Accept),
                _ => None,
            },
            closed_by: match verdict {
                _ if open => None,
                None if by == DecidedBy::Browser => Some(DecidedBy::Browser),
                None => Some(DecidedBy::Remote),
                Some(_) => Some(by),
            },
            rule_id: rule,
            explanation: why,
            url: described.url,
            page_url: self.tab(m.tab_id).map(|t| t.url.clone()).unwrap_or_default(),
            frame_id: Some(m.frame_id),
            details,
            ..DialogRecord::new(self.next_id(), kind, m.tab_id, by)
        };
        self.logs.dialog(&record);
        let mut out = vec![ToBrowser::recorded(&record)];
        match verdict {
            None => {
                let id = record.id;
                k.left_to_browser(self, m.tab_id, m.id, id);
                self.remember(record);
                if open {
                    self.queue_pending(id);
                }
            }
            Some(Verdict::Hold { .. }) => {
                let id = record.id;
                let wait_ms = self.hold_prompt(record, m.id, tab.timeout_s);
                out.push(ToBrowser::PromptHold { kind, tab_id: m.tab_id, id: m.id, wait_ms });
                if let Some(k) = spec {
                    out.extend(k.prompt_held(self, id));
                }
            }
            Some(Verdict::Answer { decision, with, rule, .. }) => {
                out.push(answer(self, decision, with, record.id));
                if let Some(rule) = rule {
                    out.extend(self.spend_rule(m.tab_id, rule));
                }
                let (id, acknowledge) = (record.id, record.decided_by == DecidedBy::DefaultPolicy);
                self.remember(record);
                if acknowledge {
                    self.queue_pending(id);
                }
            }
        }
        Ok(out)
    }

    /// Holds a prompt for the agent, with the watchdog armed for the tab's timeout. Returns
    /// how long the worker waits before it refuses on its own.
    fn hold_prompt(&mut self, record: DialogRecord, hold: u64, timeout_s: u32) -> u64 {
        let now = Instant::now();
        let wait = Duration::from_secs(u64::from(timeout_s));
        self.armed.push((record.id, wait));
        self.held.push(HeldDialog {
            record,
            hold,
            opened: now,
            deadline: Some(now + wait),
            closing: None,
            answer: None,
            answer_error: None,
        });
        u64::try_from((wait + HOLD_MARGIN).as_millis()).unwrap_or(u64::MAX)
    }

    pub(super) fn prompt_pos(&self, kind: Kind, tab: i64, id: u64) -> Option<usize> {
        self.held.iter().position(|h| h.record.kind == kind && h.record.tab_id == tab && h.hold == id)
    }

    /// The agent's (or the watchdog's) answer to the held prompt at `pos`.
    pub(super) fn answer_prompt(
        &mut self,
        pos: usize,
        accept: bool,
        with: With,
        by: DecidedBy,
    ) -> Result<ToBrowser, ToolError> {
        let spec = kinds::spec(self.held[pos].record.kind);
        let r = &self.held[pos].record;
        if accept && let Some(why) = spec.and_then(|k| k.host_refuses(self, &r.url, &r.details)) {
            return Err(ToolError::new(ErrorCode::InvalidParams, format!("{why}. Answer it with accept: false.")));
        }
        let h = &mut self.held[pos];
        let kind = h.record.kind;
        let carrying = !matches!(with, With::Nothing);
        if accept && let Some(why) = spec.and_then(|k| k.accept_refused(&h.record, carrying)) {
            return Err(ToolError::new(ErrorCode::InvalidParams, why));
        }
        if accept && let Some(why) = spec.and_then(|k| k.accept_check(self, &self.held[pos].record, &with)) {
            return Err(ToolError::new(ErrorCode::InvalidParams, why));
        }
        let h = &mut self.held[pos];
        h.closing = Some(by);
        h.answer = Some((accept, None));
        h.answer_error = None;
        if accept {
            with.name_on(&mut h.record.details);
        }
        let (tab, hold, record) = (h.record.tab_id, h.hold, h.record.id);
        let with = match (spec, with) {
            (Some(k), With::Nothing) => k.accept_with(&h.record),
            (_, with) => with,
        };
        let decision = if accept { PromptDecision::Accept } else { PromptDecision::Refuse };
        Ok(self.prompt_answer(kind, (tab, hold, record), decision, with))
    }

    /// The answer message to prompt `id` of `tab_id` (its record: `record`). An accept
    /// carries what it needs (a login, the passkeys to arm) or leaves what the worker's
    /// result will need (where a print's PDF goes).
    fn prompt_answer(
        &mut self,
        kind: Kind,
        (tab_id, id, record): (i64, u64, u64),
        decision: PromptDecision,
        with: With,
    ) -> ToBrowser {
        let accept = decision == PromptDecision::Accept;
        let carried = with.apply(self, (tab_id, id, record), accept);
        ToBrowser::PromptAnswer { kind, tab_id, id, decision, carried, record }
    }

    /// The worker applied an answer to a held prompt, gave up on it, or the browser's own
    /// prompt settled first.
    pub(super) fn on_prompt_result(&mut self, m: &PromptResult) {
        let Some(pos) = self.prompt_pos(m.kind, m.tab_id, m.id) else {
            if let Some(e) = &m.error {
                tracing::warn!(kind = m.kind.as_str(), tab = m.tab_id, id = m.id, error = %e, "an answer was not applied");
            }
            return;
        };
        // Answered on the host's own connection (`Spec::answered_on_connection`): the kind
        // closes it once the answerer saw it close.
        let record = self.held[pos].record.id;
        if kinds::spec(m.kind).is_some_and(|k| k.answered_on_connection(self, record)) {
            return;
        }
        let o = Outcome { applied: m.ok && !m.settled, expired: m.expired, accepted: m.accepted };
        let HeldDialog { mut record, opened, closing, answer, .. } = self.held.remove(pos);
        // As the worker reports it: an outcome that is not the answer the host sent is not
        // that answer's (the record never says the agent accepted what it refused).
        let as_sent = answer.is_some_and(|(accept, _)| accept == o.accepted);
        let (by, accepted) = match (o.applied, o.expired) {
            (true, false) if as_sent => (closing.unwrap_or(DecidedBy::Remote), Some(o.accepted)),
            (true, false) => (DecidedBy::Remote, Some(o.accepted)),
            (true, true) => (DecidedBy::DefaultPolicy, Some(false)),
            (false, _) => (DecidedBy::Remote, None),
        };
        record.state = DialogState::Closed;
        record.accepted = accepted;
        record.closed_by = Some(by);
        if record.decided_by == DecidedBy::Agent {
            record.decided_by = by;
        }
        let mut summary = explain::closed(&record, by, opened.elapsed());
        let spec = kinds::spec(record.kind);
        if !o.applied {
            summary = format!("{summary} {}", spec.map_or("", |k| k.gone(m.settled)));
        } else if o.expired {
            summary = format!("{summary} {}", spec.map_or("", |k| k.expired()));
        }
        record.explanation = format!("{}. {summary}", record.explanation);
        self.logs.closed(&record, summary);
        let id = record.id;
        self.remember(record);
        if let Some(k) = spec {
            k.prompt_closed(self, id);
        }
    }

    /// Held prompts of tabs that are gone close as `remote`.
    pub(super) fn drop_prompts_of_closed_tabs(&mut self) {
        let gone: Vec<PromptResult> = self
            .held
            .iter()
            .filter(|h| h.record.kind.is_browser_prompt() && self.tab(h.record.tab_id).is_none())
            .map(|h| PromptResult {
                kind: h.record.kind,
                tab_id: h.record.tab_id,
                id: h.hold,
                ok: false,
                accepted: false,
                expired: false,
                settled: false,
                error: None,
            })
            .collect();
        for m in &gone {
            self.on_prompt_result(m);
        }
    }
}
