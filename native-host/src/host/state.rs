//! The state of record: tabs, rules and policies per tab, the 50-entry dialog history, the
//! pending queue and the dialogs held open. Mutated only under one short lock (see
//! `host/mod.rs`); nothing here waits on the browser. ARCHITECTURE.md maps the files that
//! `impl State` (one each for what they serve).

use super::logs::Logs;
pub use super::protocol::Tab;
use super::protocol::ToBrowser;
use super::record::{DialogRecord, HeldDialog};
use super::rules::{RuleStore, Stored, TabConfig};
use crate::api::DEFAULT_TIMEOUT_S;
use crate::redact::Redactor;
use crate::reply::{ErrorCode, ToolError};
use crate::rule::{DialogType, RuleSpec};
use ringbuf::HeapRb;
use ringbuf::traits::{Consumer, Observer, RingBuffer};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::time::Duration;
use unmodal_engine::{Policy, config::Encoder};

/// Dialogs kept in the history. A fixed-size ring (`ringbuf`): the oldest record goes when
/// a new one comes, in O(1), and memory stays flat whatever a page does.
pub const HISTORY: usize = 50;
/// Default-answered dialogs waiting for the agent's acknowledgement, at most.
pub const MAX_PENDING: usize = 5;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TabPolicy {
    pub policy: Policy,
    pub timeout_s: u32,
    /// Why the tab is back on `auto` although the agent asked for more.
    pub fallback: Option<Fallback>,
}

impl Default for TabPolicy {
    fn default() -> Self {
        Self { policy: Policy::Auto, timeout_s: DEFAULT_TIMEOUT_S, fallback: None }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub from: Policy,
    pub reason: String,
    pub at: String,
}

/// A rule as the state keeps it: its id, once, and what it answers.
pub type Rule = Stored<RuleSpec>;

/// A rule the tab's config carries (`RuleSpec::in_config`): every place that adds, clears,
/// spends or copies a rule asks this, so none can leave a stale config in force.
pub fn in_config(r: &RuleSpec) -> bool {
    r.in_config()
}

/// The newest numbered report the host recorded, and from which service worker.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ReportsSeen {
    pub worker: String,
    pub upto: u64,
}

impl ReportsSeen {
    /// How far the reports of `worker` got (0 for another worker).
    pub fn upto_for(&self, worker: Option<&str>) -> u64 {
        if worker == Some(self.worker.as_str()) { self.upto } else { 0 }
    }
}

/// The extension's answer to a config message.
#[derive(Clone, Debug, Default)]
pub struct Delivery {
    pub rev: u64,
    /// The tab's top frame (and every frame that answered) took the config.
    pub delivered: bool,
    /// The tab has the debugger session its policy needs.
    pub debugger_attached: bool,
    /// Why the debugger session the policy needs could not start.
    pub debugger_error: Option<String>,
}

pub struct State {
    /// AI Web Pilot, as a person switched it (`pilot_switch.rs`); the extension caches it.
    pub pilot: bool,
    /// The browser that started this host: decides where the pilot may be switched on from.
    pub browser: crate::parent_browser::ParentBrowser,
    /// The sites open in the browser as the host's own DevTools connection sees them.
    pub sites: super::sites::Sites,
    /// The CDP answerer on that connection (`answerer/`), and what the kinds want it to see
    /// (passed on, with the pilot's switch, at every change: `Shared::send`).
    pub answerer: super::answerer::Answerer,
    pub answer_want: super::answerer::Want,
    /// Answers a kind asked for outside `Spec::answerer_seen` (an agent's pick, a prompt that
    /// came after its chooser opened): the host takes them and gives them on the connection.
    pub answerer_asks: Vec<(crate::kind::Kind, super::answerer::Act)>,
    /// Pilot switches sent to the browser, and the newest it confirmed (`pilot_switch.rs`).
    pub(super) pilot_sent: u64,
    pub(super) pilot_seen: u64,
    pub extension_version: Option<String>,
    /// The extension's "Allow access to file URLs" switch, as the worker last said.
    pub file_access: Option<bool>,
    pub tabs: Vec<Tab>,
    pub tracked: Option<i64>,
    /// Every kind's rules per tab. Only page dialogs' rules reach a page (in its config) or
    /// the disk; the others live here only (auth rules hold credentials).
    pub rules: RuleStore<RuleSpec>,
    pub history: HeapRb<DialogRecord>,
    pub evicted: u64,
    /// Ids of dialogs that want the agent's attention: open native dialogs, and dialogs the
    /// default policy answered that the agent has not acknowledged yet.
    pub pending: VecDeque<u64>,
    pub(super) next_record_id: u64,
    /// Every config message carries a revision; the extension acknowledges it per tab once
    /// the tab's frames hold it, so a setup can answer only when it is in force.
    pub(super) config_rev: u64,
    pub delivered: HashMap<i64, Delivery>,
    /// The newest config revision sent to each tab.
    pub sent_rev: HashMap<i64, u64>,
    /// Per tab, when not the default: the dialog policy and its watchdog.
    pub policies: HashMap<i64, TabPolicy>,
    /// Dialogs the debugger session holds open; they join the history when they close.
    pub held: Vec<HeldDialog>,
    /// Watchdogs to start (record id, delay); the host's loop takes them.
    pub armed: Vec<(u64, Duration)>,
    /// Files a remote browser wrote that are to be copied here; the bridge takes them.
    pub fetches: Vec<super::protocol::FetchJob>,
    /// Per tab: dialog reports a flooding page folded into a count.
    pub folded: HashMap<i64, u64>,
    pub logs: Logs,
    pub redactor: Redactor,
    /// The service worker on the other end of the port (from its `hello`).
    pub worker: Option<String>,
    pub reports_seen: ReportsSeen,
    /// Barriers sent to the worker, and the newest it answered (`barrier.rs`).
    pub(super) sync_sent: u64,
    pub(super) sync_seen: u64,
    /// Each kind's own (`kind_state.rs`).
    pub kinds: super::kind_state::KindState,
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
            browser: Default::default(),
            sites: Default::default(),
            answerer: Default::default(),
            answer_want: Default::default(),
            answerer_asks: Vec::new(),
            pilot_sent: 0,
            pilot_seen: 0,
            extension_version: None,
            file_access: None,
            tabs: Vec::new(),
            tracked: None,
            rules: RuleStore::new(unmodal_engine::MAX_RULES),
            history: HeapRb::new(HISTORY),
            evicted: 0,
            pending: VecDeque::new(),
            next_record_id: 1,
            config_rev: 0,
            delivered: HashMap::new(),
            sent_rev: HashMap::new(),
            policies: HashMap::new(),
            held: Vec::new(),
            armed: Vec::new(),
            fetches: Vec::new(),
            folded: HashMap::new(),
            logs: Logs::default(),
            redactor: Redactor::default(),
            worker: None,
            reports_seen: ReportsSeen::default(),
            sync_sent: 0,
            sync_seen: 0,
            kinds: Default::default(),
        }
    }

    // ---- Tabs ----

    /// The browser's new tab list: what belonged to closed tabs goes.
    pub(super) fn set_tabs(&mut self, tabs: Vec<Tab>, tracked: Option<i64>) {
        let open = |id: &i64| tabs.iter().any(|t| t.id == *id);
        self.rules.retain_tabs(|id| open(&id));
        self.delivered.retain(|id, _| open(id));
        self.sent_rev.retain(|id, _| open(id));
        self.policies.retain(|id, _| open(id));
        self.tracked = tracked;
        self.tabs = tabs;
        self.drop_held_of_closed_tabs();
    }

    pub fn tab(&self, id: i64) -> Option<&Tab> {
        self.tabs.iter().find(|t| t.id == id)
    }

    // ---- Rules and each tab's config ----

    /// A new rule for `tab`; one for the same slot replaces the old.
    pub fn add_rule(&mut self, tab: i64, once: bool, rule: RuleSpec) -> Result<Rule, ToolError> {
        self.rules.add(tab, once, rule).cloned().map_err(|m| ToolError::new(ErrorCode::TooManyRules, m))
    }

    /// Removes the tab's rules for `what` (every kind for `all`); returns how many, and the
    /// tab's new config if one that left was in it.
    pub fn clear_rules(&mut self, tab: i64, what: DialogType) -> (usize, Option<ToBrowser>) {
        let gone = self.rules.clear(tab, |r| r.cleared_by(what));
        let msg = if gone.iter().any(in_config) { self.config_push(tab) } else { None };
        (gone.len(), msg)
    }

    pub fn rules_of(&self, tab: i64) -> &[Rule] {
        self.rules.of(tab)
    }

    /// A once-rule that answered leaves the tab's rule set; returns the config message if it
    /// was in the config (a page's engine already stopped using it; the worker has not).
    pub(super) fn spend_rule(&mut self, tab: i64, rule_id: u32) -> Option<ToBrowser> {
        let spent = self.rules.spend(tab, rule_id)?;
        if in_config(&spent) { self.config_push(tab) } else { None }
    }

    /// Tabs whose config is not the plain default (rules or a policy).
    pub(super) fn configured_tabs(&self) -> impl Iterator<Item = i64> + '_ {
        let with_rules = self.rules.tabs().filter(|&t| self.rules.any(t, in_config));
        let mut tabs: Vec<i64> = with_rules.chain(self.policies.keys().copied()).collect();
        tabs.sort_unstable();
        tabs.dedup();
        tabs.into_iter()
    }

    /// The tab's config for the extension, with a new revision: what the tab must hold now
    /// (with the pilot off, the record-only default: see `config_at`).
    pub fn config_message(&mut self, tab: i64) -> ToBrowser {
        self.config_rev += 1;
        self.sent_rev.insert(tab, self.config_rev);
        self.config_at(tab, self.config_rev)
    }

    /// The tab's new config after the agent changed its rules or policy, if the browser side
    /// is to hold it now: nothing while the pilot is off (the rules wait in the host, and
    /// the pilot's switch sends them: `pilot_flipped`).
    pub(super) fn config_push(&mut self, tab: i64) -> Option<ToBrowser> {
        self.pilot.then(|| self.config_message(tab))
    }

    /// The tab's config as revision `rev`: what its policy and its `in_config` rules say.
    /// While the pilot is off the browser side holds nothing of the agent's, whatever the
    /// worker says of the switch (code a DevTools client runs in the worker can say
    /// anything): no rule, no policy, no kind's fields, no debugger session.
    pub(super) fn config_at(&self, tab: i64, rev: u64) -> ToBrowser {
        if !self.pilot {
            // The extension's own PILOT_OFF (`config::fallback_configs`): nothing but the switch.
            return ToBrowser::Config {
                tab_id: tab,
                rev,
                config: Encoder::new().finish(),
                debugger: false,
                fields: Default::default(),
            };
        }
        let policy = self.policy_of(tab).policy;
        let (fields, kinds_need_debugger) = <RuleSpec as TabConfig>::tab_config(&self.rules, tab, policy);
        ToBrowser::Config {
            tab_id: tab,
            rev,
            config: self.encode_config(tab, policy),
            debugger: policy != Policy::Auto || kinds_need_debugger,
            fields,
        }
    }

    /// The tab's rules under `policy`, in the engine's wire format.
    pub fn encode_config(&self, tab: i64, policy: Policy) -> String {
        let mut enc = Encoder::new();
        enc.pilot(true).policy(policy);
        for r in self.rules_of(tab) {
            if let RuleSpec::Dialog { target, accept, text, matcher: m } = &r.rule {
                enc.rule_matching(
                    r.id,
                    *target,
                    *accept,
                    r.once,
                    text.as_deref(),
                    m.message_contains.as_deref(),
                    m.url_contains.as_deref(),
                );
            }
        }
        enc.finish()
    }

    /// Once the extension answered for revision `rev` (or newer) of `tab`'s config: whether
    /// the tab's frames received it. `None` while no answer came.
    pub fn delivery(&self, tab: i64, rev: u64) -> Option<&Delivery> {
        self.delivered.get(&tab).filter(|a| a.rev >= rev)
    }

    // ---- Records ----

    /// Whether the numbered report `n` of the current worker was recorded already (a worker
    /// sends again what a host may have missed); notes it as recorded otherwise.
    pub(super) fn seen_before(&mut self, n: Option<u64>) -> bool {
        let (Some(n), Some(worker)) = (n, self.worker.as_deref()) else { return false };
        if self.reports_seen.worker == worker {
            if n <= self.reports_seen.upto {
                return true;
            }
            self.reports_seen.upto = n;
        } else {
            self.reports_seen = ReportsSeen { worker: worker.to_owned(), upto: n };
        }
        false
    }

    /// `id` waits for the agent's acknowledgement (the oldest go past `MAX_PENDING`).
    pub(super) fn queue_pending(&mut self, id: u64) {
        self.pending.push_back(id);
        while self.pending.len() > MAX_PENDING {
            self.pending.pop_front();
        }
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

    /// A dialog by id: held open, or in the history.
    pub fn record(&self, id: u64) -> Option<&DialogRecord> {
        self.held_dialog(id).map(|h| &h.record).or_else(|| self.history.iter().find(|r| r.id == id))
    }

    /// The same, to change it (a kind amending what a record says).
    pub fn record_mut(&mut self, id: u64) -> Option<&mut DialogRecord> {
        use ringbuf::traits::Consumer as _;
        self.held.iter_mut().map(|h| &mut h.record).chain(self.history.iter_mut()).find(|r| r.id == id)
    }

    pub fn held_dialog(&self, id: u64) -> Option<&HeldDialog> {
        self.held.iter().find(|h| h.record.id == id)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::api::MatchArg;
    use crate::host::protocol::FromBrowser;
    use serde_json::{Value, json};
    use unmodal_engine::DialogKind;
    use unmodal_engine::RuleTarget;

    /// Feeds a message as the browser would send it.
    pub fn feed(s: &mut State, msg: Value) -> Result<Vec<ToBrowser>, String> {
        let msg = FromBrowser::parse(msg.to_string().as_bytes()).map_err(|e| e.to_string())?;
        s.on_browser(msg)
    }

    /// The pilot on, tabs 3 and 4 open (3 tracked) and `policy` (timeout 5 s) in tab 3.
    pub fn state_with(policy: unmodal_engine::Policy) -> State {
        let mut s = State::new();
        s.pilot = true;
        feed(&mut s, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"},{"id":4,"url":"http://a/"}]}))
            .unwrap();
        s.configure(crate::api::PolicyCall { tab: Some(3), policy, timeout_s: 5 }).unwrap();
        s
    }

    /// A page dialog's rule for `target`, with no text and no match.
    pub fn dialog_rule(target: RuleTarget, accept: bool) -> RuleSpec {
        RuleSpec::Dialog { target, accept, text: None, matcher: MatchArg::default() }
    }

    pub fn to_json(msgs: &[ToBrowser]) -> Vec<Value> {
        msgs.iter().map(|m| serde_json::to_value(m).unwrap()).collect()
    }

    #[test]
    fn spent_once_rule_leaves_and_the_config_is_pushed() {
        let mut s = State::new();
        s.pilot = true;
        let r = s.add_rule(7, true, dialog_rule(RuleTarget::One(DialogKind::Confirm), true)).unwrap();
        assert_eq!(
            s.spend_rule(7, r.id),
            Some(ToBrowser::Config {
                tab_id: 7,
                rev: 1,
                config: "U1E1".into(),
                debugger: false,
                fields: Default::default(),
            })
        );
        assert!(s.rules_of(7).is_empty());
        assert_eq!(s.spend_rule(7, r.id), None);
    }

    #[test]
    fn setup_for_the_same_type_replaces_and_clear_counts() {
        let mut s = State::new();
        let c = RuleTarget::One(DialogKind::Confirm);
        s.add_rule(1, true, dialog_rule(c, true)).unwrap();
        s.add_rule(1, false, dialog_rule(c, false)).unwrap();
        s.add_rule(
            1,
            true,
            RuleSpec::Dialog {
                target: RuleTarget::One(DialogKind::Prompt),
                accept: true,
                text: Some("x".into()),
                matcher: MatchArg::default(),
            },
        )
        .unwrap();
        assert_eq!(s.rules_of(1).len(), 2);
        assert_eq!(s.clear_rules(1, DialogType::of(crate::kind::Kind::CONFIRM)).0, 1);
        assert_eq!(s.clear_rules(1, DialogType::ALL).0, 1);
        assert_eq!(s.clear_rules(1, DialogType::ALL), (0, None));
    }

    #[test]
    fn closed_tabs_drop_their_rules() {
        let mut s = State::new();
        s.add_rule(1, false, dialog_rule(RuleTarget::All, true)).unwrap();
        feed(&mut s, json!({"type":"tabs","tracked":2,"tabs":[{"id":2,"url":"http://a/"}]})).unwrap();
        assert!(s.rules_of(1).is_empty());
        assert_eq!(s.tracked, Some(2));
    }

    #[test]
    fn hello_resends_every_configured_tab() {
        let mut s = State::new();
        s.add_rule(4, false, dialog_rule(RuleTarget::All, true)).unwrap();
        let out = feed(&mut s, json!({"type":"hello","version":"1","pilot":true})).unwrap();
        assert_eq!(out.len(), 3);
        assert!(
            matches!(out[0], ToBrowser::Pilot { on: false, rev: 1, .. }),
            "the host's switch, not the worker's claim"
        );
        assert_eq!(out[1].config_rev(), Some((4, 1, false)));
        assert_eq!(out[2], ToBrowser::Resume { upto: 0 });
        assert!(!s.pilot);
    }

    #[test]
    fn rules_show_in_answers_by_their_agent_names() {
        let m = MatchArg { message_contains: Some("alpha".into()), ..MatchArg::default() };
        let rule = Rule {
            id: 2,
            once: false,
            rule: RuleSpec::Dialog {
                target: RuleTarget::One(DialogKind::Prompt),
                accept: true,
                text: None,
                matcher: m,
            },
        };
        assert_eq!(
            serde_json::to_value(super::super::agent_calls::RuleView::from(&rule)).unwrap(),
            json!({"rule_id":2,"dialog_type":"prompt","accept":true,"once":false,"match":{"message_contains":"alpha"}})
        );
    }
}
