//! `Engine`: one document's config (loaded from the wire format) and the decision for each
//! dialog: the most specific live rule, else the tab's policy, packed into one number for
//! the page.

use crate::config::{self, ARENA_UNITS, LoadError, MAX_RULES};
use crate::matching::contains_folded;
use crate::{DialogKind, Policy, RuleTarget};

/// What the page's call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Call the browser's own dialog: the pilot is off, beforeunload without a rule, or the
    /// tab's policy holds dialogs for the agent.
    Native = 0,
    Accept = 1,
    Dismiss = 2,
}

/// What made the decision; every reported event names it. (The host adds the deciders of
/// dialogs held open for the agent: the agent, the watchdog, someone else.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum DecidedBy {
    PilotOff = 0,
    Rule = 1,
    DefaultPolicy = 2,
    /// The tab's `dialog_policy` (held for the agent, or accepted/dismissed by policy).
    Policy = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub outcome: Outcome,
    pub by: DecidedBy,
    /// The rule slot that decided, when `by == Rule`.
    pub slot: Option<u8>,
    /// False while the tab's rules have not reached this document yet: a default then
    /// stands in for a rule that may exist.
    pub rules_loaded: bool,
    /// A `once` rule was used up by this decision (its report must reach the host).
    pub spent: bool,
}

impl Decision {
    /// `outcome | by << 2 | rules_loaded << 4 | spent << 5 | (slot + 1) << 8`, for the C ABI.
    pub fn pack(self) -> u32 {
        let slot = self.slot.map_or(0, |s| u32::from(s) + 1);
        self.outcome as u32
            | (self.by as u32) << 2
            | u32::from(self.rules_loaded) << 4
            | u32::from(self.spent) << 5
            | slot << 8
    }
}

#[derive(Clone, Copy)]
struct Slot {
    id: u32,
    target: RuleTarget,
    accept: bool,
    once: bool,
    live: bool,
    text: Option<(u16, u16)>,
    message: Option<(u16, u16)>,
    url: Option<(u16, u16)>,
}

impl Slot {
    // All zeros, so the slots stay in .bss instead of the in-page code.
    const EMPTY: Slot = Slot {
        id: 0,
        target: RuleTarget::One(DialogKind::Alert),
        accept: false,
        once: false,
        live: false,
        text: None,
        message: None,
        url: None,
    };

    /// Higher wins: each match condition counts more than naming the exact kind.
    fn specificity(&self) -> u8 {
        2 * u8::from(self.message.is_some())
            + 2 * u8::from(self.url.is_some())
            + u8::from(self.target != RuleTarget::All)
    }
}

/// What a dialog is matched against: its message and the page's URL (UTF-16).
#[derive(Clone, Copy, Debug, Default)]
pub struct Subject<'a> {
    pub message: &'a [u16],
    pub url: &'a [u16],
}

const SPENT_MEMORY: usize = 64;

/// Which parts of the subject the loaded rules look at (the page copies only those).
pub const NEEDS_MESSAGE: u32 = 1;
pub const NEEDS_URL: u32 = 2;

/// One document's engine: the pilot switch, the tab's policy and rules, and the decision.
pub struct Engine {
    enabled: bool,
    loaded: bool,
    policy: Policy,
    /// Ids of once-rules this document used up. The host drops such a rule only when the
    /// report arrives, so a rule set sent in between still holds it; it must stay spent.
    spent: [u32; SPENT_MEMORY],
    spent_next: usize,
    needs: u32,
    len: usize,
    slots: [Slot; MAX_RULES],
    arena: [u16; ARENA_UNITS],
}

impl Default for Engine {
    fn default() -> Self {
        Self::new()
    }
}

impl Engine {
    pub const fn new() -> Self {
        Self {
            enabled: false,
            loaded: false,
            policy: Policy::Auto,
            spent: [0; SPENT_MEMORY],
            spent_next: 0,
            needs: 0,
            len: 0,
            slots: [Slot::EMPTY; MAX_RULES],
            arena: [0; ARENA_UNITS],
        }
    }

    /// Replaces the config (pilot switch, policy, rules) with the encoded one in `input`.
    /// On error nothing changes.
    pub fn load(&mut self, input: &[u16]) -> Result<usize, LoadError> {
        let mut text_units = 0usize;
        config::parse(input, |r| text_units += r.units())?;
        if text_units > ARENA_UNITS {
            return Err(LoadError::TooManyRules);
        }
        let (mut n, mut used, mut needs) = (0, 0usize, 0);
        let (slots, arena, spent) = (&mut self.slots, &mut self.arena, &self.spent);
        let mut store = |t: Option<&[u16]>| {
            let t = t?;
            let dst = arena.get_mut(used..used + t.len())?;
            dst.copy_from_slice(t);
            let span = (used as u16, t.len() as u16);
            used += t.len();
            Some(span)
        };
        let (header, _) = config::parse(input, |r| {
            let (text, message, url) = (store(r.text), store(r.message), store(r.url));
            needs |= if message.is_some() { NEEDS_MESSAGE } else { 0 } | if url.is_some() { NEEDS_URL } else { 0 };
            if let Some(slot) = slots.get_mut(n) {
                *slot = Slot {
                    id: r.id,
                    target: r.target,
                    accept: r.accept,
                    once: r.once,
                    live: !(r.once && r.id != 0 && spent.contains(&r.id)),
                    text,
                    message,
                    url,
                };
            }
            n += 1;
        })?;
        self.enabled = header.enabled;
        self.policy = header.policy;
        self.needs = needs;
        self.len = n;
        self.loaded = !header.standin;
        Ok(n)
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The AI Web Pilot switch as the config says (off: every prompt keeps its native
    /// behaviour; the page hook asks before it cancels anything).
    pub fn pilot_on(&self) -> bool {
        self.enabled
    }

    /// What the loaded rules match on (`NEEDS_MESSAGE | NEEDS_URL`).
    pub fn needs(&self) -> u32 {
        self.needs
    }

    /// Decides a dialog that no rule matches on message or URL (see `decide_for`).
    pub fn decide(&mut self, kind: DialogKind) -> Decision {
        self.decide_for(kind, Subject::default())
    }

    /// Decides one dialog. Among the live rules that apply, the most specific wins (a
    /// message or URL match counts more than naming the exact kind rather than `all`);
    /// among equals the later one (the newer setup). A `once` rule is spent by the dialog
    /// it answers.
    pub fn decide_for(&mut self, kind: DialogKind, subject: Subject<'_>) -> Decision {
        let rules_loaded = self.loaded;
        if !self.enabled {
            return Decision {
                outcome: Outcome::Native,
                by: DecidedBy::PilotOff,
                slot: None,
                rules_loaded,
                spent: false,
            };
        }
        if let Some(i) = self.pick(kind, subject) {
            let slot = &mut self.slots[i];
            slot.live = !slot.once;
            let (once, id) = (slot.once, slot.id);
            let outcome = if slot.accept { Outcome::Accept } else { Outcome::Dismiss };
            if once {
                self.spent[self.spent_next % SPENT_MEMORY] = id;
                self.spent_next = self.spent_next.wrapping_add(1);
            }
            return Decision { outcome, by: DecidedBy::Rule, slot: Some(i as u8), rules_loaded, spent: once };
        }
        let (outcome, by) = match (self.policy, kind) {
            (Policy::Auto, DialogKind::Alert) => (Outcome::Accept, DecidedBy::DefaultPolicy),
            (Policy::Auto, DialogKind::Confirm | DialogKind::Prompt) => (Outcome::Dismiss, DecidedBy::DefaultPolicy),
            // Without a rule the page's own beforeunload behaviour stands.
            (Policy::Auto, DialogKind::BeforeUnload) => (Outcome::Native, DecidedBy::DefaultPolicy),
            (Policy::MustRespond, _) => (Outcome::Native, DecidedBy::Policy),
            (Policy::AutoAccept, _) => (Outcome::Accept, DecidedBy::Policy),
            // Dismissing a leave prompt means staying: the page's ask must reach the
            // browser, whose prompt the debugger session then dismisses.
            (Policy::AutoDismiss, DialogKind::BeforeUnload) => (Outcome::Native, DecidedBy::Policy),
            (Policy::AutoDismiss, _) => (Outcome::Dismiss, DecidedBy::Policy),
        };
        Decision { outcome, by, slot: None, rules_loaded, spent: false }
    }

    fn pick(&self, kind: DialogKind, subject: Subject<'_>) -> Option<usize> {
        let arena = &self.arena;
        let span = |s: (u16, u16)| arena.get(usize::from(s.0)..usize::from(s.0) + usize::from(s.1)).unwrap_or(&[]);
        let applies = |s: &Slot| {
            s.live
                && s.target.matches(kind)
                && s.message.is_none_or(|m| contains_folded(subject.message, span(m)))
                && s.url.is_none_or(|u| contains_folded(subject.url, span(u)))
        };
        let mut best: Option<(usize, u8)> = None;
        for (i, s) in self.slots.get(..self.len)?.iter().enumerate() {
            if applies(s) && best.is_none_or(|(_, b)| s.specificity() >= b) {
                best = Some((i, s.specificity()));
            }
        }
        best.map(|(i, _)| i)
    }

    pub fn rule_id(&self, slot: usize) -> Option<u32> {
        self.slots.get(..self.len)?.get(slot).map(|s| s.id)
    }

    /// The prompt text of a rule, if it set one.
    pub fn rule_text(&self, slot: usize) -> Option<&[u16]> {
        let (start, len) = self.slots.get(..self.len)?.get(slot)?.text?;
        self.arena.get(usize::from(start)..usize::from(start) + usize::from(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Encoder;

    fn engine(rules: &[(u32, RuleTarget, bool, bool, Option<&str>)]) -> Engine {
        let mut e = Encoder::new();
        e.pilot(true);
        for &(id, t, a, o, x) in rules {
            e.rule(id, t, a, o, x);
        }
        load(&e)
    }

    fn load(e: &Encoder) -> Engine {
        let mut engine = Engine::new();
        engine.load(&units(&e.finish())).unwrap();
        engine
    }

    fn units(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    const CONFIRM: RuleTarget = RuleTarget::One(DialogKind::Confirm);
    const PROMPT: RuleTarget = RuleTarget::One(DialogKind::Prompt);

    #[test]
    fn default_policy_accepts_alert_and_refuses_confirm_and_prompt() {
        let mut e = engine(&[]);
        let d = |e: &mut Engine, k| {
            let d = e.decide(k);
            assert_eq!(d.by, DecidedBy::DefaultPolicy);
            d.outcome
        };
        assert_eq!(d(&mut e, DialogKind::Alert), Outcome::Accept);
        assert_eq!(d(&mut e, DialogKind::Confirm), Outcome::Dismiss);
        assert_eq!(d(&mut e, DialogKind::Prompt), Outcome::Dismiss);
        assert_eq!(d(&mut e, DialogKind::BeforeUnload), Outcome::Native);
    }

    #[test]
    fn the_tabs_policy_answers_what_no_rule_matches() {
        let load = |p: Policy| {
            let mut enc = Encoder::new();
            enc.policy(p).pilot(true);
            enc.rule(1, PROMPT, true, false, Some("x"));
            let e = load(&enc);
            assert_eq!(e.policy(), p);
            e
        };
        let mut hold = load(Policy::MustRespond);
        for k in DialogKind::ALL.into_iter().filter(|k| *k != DialogKind::Prompt) {
            let d = hold.decide(k);
            assert_eq!((d.outcome, d.by), (Outcome::Native, DecidedBy::Policy), "{k:?}");
        }
        assert_eq!(hold.decide(DialogKind::Prompt).by, DecidedBy::Rule, "rules still come first");
        let mut accept = load(Policy::AutoAccept);
        assert_eq!(accept.decide(DialogKind::Confirm).outcome, Outcome::Accept);
        assert_eq!(accept.decide(DialogKind::BeforeUnload).outcome, Outcome::Accept);
        let mut dismiss = load(Policy::AutoDismiss);
        assert_eq!(dismiss.decide(DialogKind::Confirm).outcome, Outcome::Dismiss);
        assert_eq!(dismiss.decide(DialogKind::BeforeUnload).outcome, Outcome::Native);
        // A later rule set without a policy returns the tab to the default.
        hold.load(&units("U1E1")).unwrap();
        assert_eq!(hold.decide(DialogKind::Confirm).by, DecidedBy::DefaultPolicy);
    }

    #[test]
    fn pilot_off_keeps_native_behaviour_even_with_rules() {
        let mut enc = Encoder::new();
        enc.rule(1, CONFIRM, true, false, None);
        let mut e = load(&enc);
        let d = e.decide(DialogKind::Confirm);
        assert_eq!((d.outcome, d.by), (Outcome::Native, DecidedBy::PilotOff));
    }

    #[test]
    fn once_rule_answers_one_dialog_then_default_returns() {
        let mut e = engine(&[(5, CONFIRM, true, true, None)]);
        let first = e.decide(DialogKind::Confirm);
        assert_eq!((first.outcome, first.by), (Outcome::Accept, DecidedBy::Rule));
        assert_eq!(e.rule_id(first.slot.unwrap().into()), Some(5));
        assert!(first.spent);
        let second = e.decide(DialogKind::Confirm);
        assert_eq!((second.outcome, second.by), (Outcome::Dismiss, DecidedBy::DefaultPolicy));
        assert!(!second.spent);
    }

    #[test]
    fn persistent_rule_keeps_answering() {
        let mut e = engine(&[(1, CONFIRM, false, false, None)]);
        assert!(!e.decide(DialogKind::Confirm).spent);
        for _ in 0..3 {
            assert_eq!(e.decide(DialogKind::Confirm).by, DecidedBy::Rule);
        }
    }

    #[test]
    fn exact_kind_beats_all_and_newer_beats_older() {
        let mut e = engine(&[
            (1, RuleTarget::All, false, false, None),
            (2, CONFIRM, true, false, None),
            (3, CONFIRM, false, false, None),
        ]);
        let d = e.decide(DialogKind::Confirm);
        assert_eq!(e.rule_id(d.slot.unwrap().into()), Some(3));
        let d = e.decide(DialogKind::Prompt);
        assert_eq!(e.rule_id(d.slot.unwrap().into()), Some(1));
    }

    #[test]
    fn prompt_text_comes_from_the_rule() {
        let mut e = engine(&[(9, PROMPT, true, true, Some("Ada 🌍"))]);
        let d = e.decide(DialogKind::Prompt);
        let text = e.rule_text(d.slot.unwrap().into()).unwrap();
        assert_eq!(String::from_utf16(text).unwrap(), "Ada 🌍");
    }

    #[test]
    fn failed_load_keeps_previous_rules() {
        let mut e = engine(&[(1, CONFIRM, true, false, None)]);
        let bad: Vec<u16> = "U1Ri2;t1x9:short".encode_utf16().collect();
        assert_eq!(e.load(&bad), Err(LoadError::Truncated));
        let d = e.decide(DialogKind::Confirm);
        assert_eq!(e.rule_id(d.slot.unwrap().into()), Some(1));
    }

    #[test]
    fn rules_loaded_flag_is_honest() {
        let mut e = Engine::new();
        assert!(!e.decide(DialogKind::Confirm).rules_loaded);
        // The pilot is on, the rules are still on their way: the default answers, honestly.
        e.load(&units("U1E1S")).unwrap();
        let d = e.decide(DialogKind::Confirm);
        assert_eq!((d.by, d.rules_loaded), (DecidedBy::DefaultPolicy, false));
        e.load(&units("U1E1")).unwrap();
        assert!(e.decide(DialogKind::Confirm).rules_loaded);
    }

    #[test]
    fn pack_layout_is_stable() {
        let d =
            Decision { outcome: Outcome::Dismiss, by: DecidedBy::Rule, slot: Some(3), rules_loaded: true, spent: true };
        assert_eq!(d.pack(), 2 | 1 << 2 | 1 << 4 | 1 << 5 | 4 << 8);
    }

    #[test]
    fn message_and_url_matches_are_most_specific() {
        let mut e = Encoder::new();
        e.pilot(true);
        e.rule(1, RuleTarget::All, false, false, None);
        e.rule_matching(2, CONFIRM, true, false, None, Some("Project ALPHA"), None);
        e.rule_matching(3, RuleTarget::All, true, false, None, None, Some("admin.example"));
        let mut engine = load(&e);
        assert_eq!(engine.needs(), NEEDS_MESSAGE | NEEDS_URL);
        let u = |s: &str| s.encode_utf16().collect::<Vec<u16>>();
        let mut id = |msg: &str, url: &str| {
            let (m, l) = (u(msg), u(url));
            let d = engine.decide_for(DialogKind::Confirm, Subject { message: &m, url: &l });
            (engine.rule_id(d.slot.unwrap().into()).unwrap(), d.outcome)
        };
        assert_eq!(id("Delete project alpha?", "https://shop.example/"), (2, Outcome::Accept));
        assert_eq!(id("Delete project beta?", "https://shop.example/"), (1, Outcome::Dismiss));
        assert_eq!(id("Delete project beta?", "https://ADMIN.example/x"), (3, Outcome::Accept));
        // Both match: message + exact kind (3) beats URL + all (2).
        assert_eq!(id("Delete project alpha?", "https://admin.example/"), (2, Outcome::Accept));
    }

    #[test]
    fn a_spent_once_rule_stays_spent_when_the_same_set_arrives_again() {
        let mut e = Encoder::new();
        e.pilot(true);
        e.rule(7, RuleTarget::One(DialogKind::Prompt), true, true, None);
        let wire = units(&e.finish());
        let mut engine = load(&e);
        assert_eq!(engine.decide(DialogKind::Prompt).by, DecidedBy::Rule);
        // The host has not seen the report yet and sends the set again (say, with a new rule).
        engine.load(&wire).unwrap();
        assert_eq!(engine.decide(DialogKind::Prompt).by, DecidedBy::DefaultPolicy);
    }
}
