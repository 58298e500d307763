//! The state of record on disk, so a host that dies (killed, crashed, or ended with its
//! service worker) hands everything to the one the browser starts next: rules, policies,
//! the history, the logs. One file per browser session (the extension names the session in
//! `hello`), private to the user like the sockets, written whole and renamed into place.

use super::logs::{LogEntry, Logs};
use super::record::{DecidedBy, DialogRecord, HeldDialog};
use super::rules::Stored;
use super::state::{ReportsSeen, State, Tab, TabPolicy};
use crate::api::MatchArg;
use crate::host::kinds::RuleSpec;
use ringbuf::traits::{Consumer, RingBuffer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use unmodal_engine::RuleTarget;

const FORMAT: u32 = 2;
/// Files of browser sessions older than this are removed when a host starts.
const STALE: Duration = Duration::from_secs(7 * 24 * 3600);

/// A held dialog on disk: its clocks as wall time (an `Instant` means nothing to the next
/// process).
#[derive(Serialize, Deserialize)]
struct SavedHeld {
    record: DialogRecord,
    hold: u64,
    opened_ms: u64,
    deadline_ms: Option<u64>,
    closing: Option<DecidedBy>,
}

impl SavedHeld {
    fn new(h: &HeldDialog, now: Instant, wall: u64) -> Self {
        let at = |i: Instant| {
            let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
            if i >= now { wall.saturating_add(ms(i - now)) } else { wall.saturating_sub(ms(now - i)) }
        };
        Self {
            record: h.record.clone(),
            hold: h.hold,
            opened_ms: at(h.opened),
            deadline_ms: h.deadline.map(at),
            closing: h.closing,
        }
    }

    fn into_held(self, now: Instant, wall: u64) -> HeldDialog {
        let at = |ms: u64| {
            if ms >= wall {
                now + Duration::from_millis(ms - wall)
            } else {
                now.checked_sub(Duration::from_millis(wall - ms)).unwrap_or(now)
            }
        };
        HeldDialog {
            record: self.record,
            hold: self.hold,
            opened: at(self.opened_ms),
            deadline: self.deadline_ms.map(at),
            closing: self.closing,
            // Not kept: `keep_held` answers again whatever was being answered.
            answer: None,
            answer_error: None,
        }
    }
}

/// A page dialog's rule on disk (the only kind saved: the others hold credentials or are
/// the browser's business, and live in memory).
#[derive(Serialize, Deserialize)]
struct SavedRule {
    rule_id: u32,
    #[serde(rename = "dialog_type", serialize_with = "target_name", deserialize_with = "target_of")]
    target: RuleTarget,
    accept: bool,
    once: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(rename = "match", default, skip_serializing_if = "MatchArg::is_empty")]
    matcher: MatchArg,
}

fn target_name<S: serde::Serializer>(t: &RuleTarget, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.as_str())
}

fn target_of<'de, D: serde::Deserializer<'de>>(d: D) -> Result<RuleTarget, D::Error> {
    let name = String::deserialize(d)?;
    RuleTarget::parse(&name).ok_or_else(|| serde::de::Error::custom(format!("unknown dialog type `{name}`")))
}

impl SavedRule {
    fn of(r: &Stored<RuleSpec>) -> Option<Self> {
        let RuleSpec::Dialog { target, accept, text, matcher } = &r.rule else { return None };
        let (target, accept, text, matcher) = (*target, *accept, text.clone(), matcher.clone());
        Some(Self { rule_id: r.id, target, accept, once: r.once, text, matcher })
    }

    fn into_rule(self) -> Stored<RuleSpec> {
        let (target, accept, text, matcher) = (self.target, self.accept, self.text, self.matcher);
        Stored { id: self.rule_id, once: self.once, rule: RuleSpec::Dialog { target, accept, text, matcher } }
    }
}

fn wall_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[derive(Serialize, Deserialize)]
pub struct Snapshot {
    format: u32,
    tabs: Vec<Tab>,
    tracked: Option<i64>,
    rules: HashMap<i64, Vec<SavedRule>>,
    next_rule_id: u32,
    policies: HashMap<i64, TabPolicy>,
    history: Vec<DialogRecord>,
    evicted: u64,
    pending: VecDeque<u64>,
    next_record_id: u64,
    config_rev: u64,
    /// Dialogs held open when the snapshot was taken.
    held: Vec<SavedHeld>,
    folded: HashMap<i64, u64>,
    logs: Vec<LogEntry>,
    logs_evicted: u64,
    reports_seen: ReportsSeen,
    /// The pilot switch, and the browser process it was switched on for: a host started by
    /// another browser (one that claims this session's name) does not inherit it.
    #[serde(default)]
    pilot_on_for: Option<u32>,
    /// What each kind keeps for a later host of this browser session, by the kind's name
    /// (`Spec::saved`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    kinds: BTreeMap<String, serde_json::Value>,
}

/// A browser session's name as the extension gives it: short, letters and digits only (it
/// becomes part of a file name).
pub fn valid_session(id: &str) -> bool {
    (8..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

pub fn path(dir: &Path, session: &str) -> PathBuf {
    dir.join(format!("state-{session}.json"))
}

impl State {
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            format: FORMAT,
            tabs: self.tabs.clone(),
            tracked: self.tracked,
            rules: self
                .rules
                .tabs()
                .map(|tab| (tab, self.rules.of(tab).iter().filter_map(SavedRule::of).collect::<Vec<_>>()))
                .filter(|(_, rules)| !rules.is_empty())
                .collect(),
            next_rule_id: self.rules.next_id(),
            policies: self.policies.clone(),
            history: self.history.iter().cloned().collect(),
            evicted: self.evicted,
            pending: self.pending.clone(),
            next_record_id: self.next_record_id,
            config_rev: self.config_rev,
            held: {
                let (now, wall) = (Instant::now(), wall_ms());
                self.held.iter().map(|h| SavedHeld::new(h, now, wall)).collect()
            },
            folded: self.folded.clone(),
            logs: self.logs.all(),
            logs_evicted: self.logs.evicted,
            reports_seen: self.reports_seen.clone(),
            pilot_on_for: if self.pilot { self.browser.pid } else { None },
            kinds: super::kinds::saved(self),
        }
    }

    /// Takes over what a previous host of this browser session left. Dialogs it held open
    /// stay held until the worker's `hello` says which are still open (`keep_held`).
    pub fn restore(&mut self, s: Snapshot) {
        self.tabs = s.tabs;
        self.tracked = s.tracked;
        let rules =
            s.rules.into_iter().map(|(tab, rules)| (tab, rules.into_iter().map(SavedRule::into_rule).collect()));
        self.rules.restore(rules, s.next_rule_id);
        self.policies = s.policies;
        self.evicted = s.evicted;
        self.pending = s.pending;
        self.next_record_id = s.next_record_id.max(1);
        self.config_rev = s.config_rev;
        self.folded = s.folded;
        self.logs = Logs::restored(s.logs, s.logs_evicted);
        self.reports_seen = s.reports_seen;
        self.pilot = s.pilot_on_for.is_some() && s.pilot_on_for == self.browser.pid;
        self.history.clear();
        for rec in s.history {
            self.history.push_overwrite(rec);
        }
        let (now, wall) = (Instant::now(), wall_ms());
        self.held = s.held.into_iter().map(|h| h.into_held(now, wall)).collect();
        super::kinds::restore(self, s.kinds);
    }
}

/// The snapshot a previous host left for this browser session, if any. A file that cannot
/// be read is reported and left aside (renamed), never trusted half.
pub fn load(dir: &Path, session: &str) -> Option<Snapshot> {
    let file = path(dir, session);
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::error!(file = %file.display(), error = %e, "cannot read the previous host's state");
            return None;
        }
    };
    match serde_json::from_slice::<Snapshot>(&bytes) {
        Ok(s) if s.format == FORMAT => Some(s),
        Ok(s) => {
            tracing::warn!(format = s.format, "state file of another format; starting empty");
            None
        }
        Err(e) => {
            tracing::error!(file = %file.display(), error = %e, "state file unreadable; set aside, starting empty");
            let _ = std::fs::rename(&file, file.with_extension("json.bad"));
            None
        }
    }
}

/// Holds the session's lock for as long as the returned file lives: the host that holds it
/// is the one that writes the session's state. A new host waits (up to `wait`) for the one
/// before it to finish its last save and exit; the lock goes with the process, however it
/// ends.
pub fn lock(dir: &Path, session: &str, wait: Duration) -> std::io::Result<std::fs::File> {
    use crate::platform;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    let file = platform::private_file(&mut opts).open(dir.join(format!("state-{session}.lock")))?;
    let start = std::time::Instant::now();
    loop {
        let Err(err) = platform::try_lock_exclusive(&file) else { return Ok(file) };
        if err.kind() != std::io::ErrorKind::WouldBlock || start.elapsed() > wait {
            return Err(err);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Writes the snapshot whole (`paths::write_private`: a reader never sees half a file).
pub fn save(dir: &Path, session: &str, bytes: &[u8]) -> std::io::Result<()> {
    crate::paths::write_private(&path(dir, session), bytes)
}

/// Removes the state files of browser sessions long gone.
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    for e in entries.filter_map(Result::ok) {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let old =
            e.metadata().and_then(|m| m.modified()).is_ok_and(|t| now.duration_since(t).unwrap_or_default() > STALE);
        if name.starts_with("state-") && name.ends_with(".json") && old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::DialogState;
    use super::super::state::tests::feed;
    use super::*;
    use crate::api::PolicyCall;
    use crate::host::state::tests::dialog_rule;
    use serde_json::json;
    use unmodal_engine::{DialogKind, Policy, RuleTarget};

    #[test]
    fn a_new_host_takes_over_rules_policies_history_and_logs() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = State::new();
        feed(&mut old, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        let rule = old.add_rule(3, false, dialog_rule(RuleTarget::One(DialogKind::Confirm), true)).unwrap();
        old.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        feed(
            &mut old,
            json!({"type":"dialog","tab_id":3,"report":{"seq":1,"phase":"decided","kind":"alert","message":"hi",
                "decided_by":"default_policy","rules_loaded":true,"accepted":true}}),
        )
        .unwrap();
        feed(&mut old, json!({"type":"held","tab_id":3,"hold":1,"kind":"prompt","message":"Name?"})).unwrap();
        save(dir.path(), "session01", &serde_json::to_vec(&old.snapshot()).unwrap()).unwrap();
        let mode = crate::platform::permission_bits(&path(dir.path(), "session01"));
        assert!(mode.is_none_or(|m| m & 0o077 == 0 && m != 0), "private to the user: {mode:?}");

        let mut new = State::new();
        new.restore(load(dir.path(), "session01").unwrap());
        assert_eq!(new.rules_of(3), old.rules_of(3));
        assert_eq!(new.policy_of(3).policy, Policy::MustRespond);
        assert_eq!(new.history.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(), ["hi"]);
        assert_eq!(new.logs.of_tab(3).len(), old.logs.of_tab(3).len());
        // Ids go on where the old host stopped.
        let next = new.add_rule(3, true, dialog_rule(RuleTarget::All, true)).unwrap();
        assert!(next.id > rule.id);
        // The worker did not keep the held dialog: it was dismissed when the old host died.
        let out = feed(&mut new, json!({"type":"hello","version":"1","pilot":true})).unwrap();
        assert_eq!(out.iter().filter(|m| m.config_rev().is_some()).count(), 1, "the tab's config goes out again");
        assert!(new.held.is_empty());
        let held = new.history.iter().last().unwrap();
        assert_eq!(
            (held.message.as_str(), held.state, held.closed_by, held.accepted),
            ("Name?", DialogState::Closed, Some(DecidedBy::DefaultPolicy), Some(false))
        );
        assert!(held.explanation.contains("host stopped"), "{}", held.explanation);
    }

    #[test]
    fn a_held_dialog_the_new_worker_kept_waits_on_with_its_watchdog() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = State::new();
        old.pilot = true;
        feed(&mut old, json!({"type":"tabs","tracked":3,"tabs":[{"id":3,"url":"http://a/"}]})).unwrap();
        old.configure(PolicyCall { tab: Some(3), policy: Policy::MustRespond, timeout_s: 30 }).unwrap();
        feed(&mut old, json!({"type":"held","tab_id":3,"hold":7,"kind":"confirm","message":"Sure?"})).unwrap();
        feed(&mut old, json!({"type":"held","tab_id":4,"hold":8,"kind":"alert","message":"Gone"})).unwrap();
        save(dir.path(), "session05", &serde_json::to_vec(&old.snapshot()).unwrap()).unwrap();

        let mut new = State::new();
        new.restore(load(dir.path(), "session05").unwrap());
        let out =
            feed(&mut new, json!({"type":"hello","pilot":true,"held":[{"tab_id":3,"hold":7},{"tab_id":3,"hold":9}]}))
                .unwrap();
        let answer = |hold| crate::host::protocol::ToBrowser::Answer { tab_id: 3, hold, accept: false, text: None };
        assert!(matches!(out[0], crate::host::protocol::ToBrowser::Pilot { on: false, .. }), "the switch first");
        assert_eq!(out[1], answer(9), "one the host never heard of is dismissed");
        assert_eq!(new.held.len(), 1);
        let id = new.held[0].record.id;
        assert_eq!(new.blocking_note().unwrap().dialogs[0].dialog_id, id);
        let (armed, after) = new.armed[0];
        assert_eq!(armed, id);
        assert!(after > Duration::from_secs(28) && after <= Duration::from_secs(30), "{after:?}");
        assert_eq!(new.history.iter().last().unwrap().message, "Gone", "the other one closed");
        // Answered as if nothing happened.
        let out = new.watchdog(id);
        assert_eq!(out, vec![answer(7)]);
    }

    #[test]
    fn one_host_holds_a_session_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path(), "session03", Duration::ZERO).unwrap();
        assert!(lock(dir.path(), "session03", Duration::from_millis(30)).is_err(), "held by the first");
        assert!(lock(dir.path(), "session04", Duration::ZERO).is_ok(), "another session is free");
        drop(first);
        // Soon, not at once: a process another test forks at that moment holds a copy of
        // the descriptor (and so the lock) until it execs (the file is close-on-exec).
        assert!(lock(dir.path(), "session03", Duration::from_secs(5)).is_ok(), "free once the first is gone");
    }

    #[test]
    fn bad_files_are_set_aside_and_names_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path(), "session02"), b"{not json").unwrap();
        assert!(load(dir.path(), "session02").is_none());
        assert!(path(dir.path(), "session02").with_extension("json.bad").exists());
        assert!(load(dir.path(), "nobody00").is_none());
        assert!(valid_session("a1b2c3d4e5"));
        for bad in ["", "short", "../../etc/x", "with space1", &"x".repeat(65)] {
            assert!(!valid_session(bad), "{bad:?}");
        }
    }
}
