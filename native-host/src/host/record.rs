//! The records the host keeps of dialogs (history and held), and who decides and closes
//! them. Page text in a record is already cut and redacted.

use crate::kind::Kind;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Page text is cut to this many characters before it is stored or shown.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// Who answered a dialog, or who closed it. The page reports the first four (the engine's
/// own `DecidedBy`); the rest happen to dialogs held open for the agent.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// An auto-response the agent set up.
    Rule,
    /// No rule matched: alert accepted, confirm false, prompt null.
    DefaultPolicy,
    /// The pilot is off: the browser showed its own dialog.
    PilotOff,
    /// The tab's dialog policy (auto_accept / auto_dismiss, or must_respond's ask).
    Policy,
    /// Held open, answered by the agent.
    Agent,
    /// Held open, nobody answered in time.
    Watchdog,
    /// Closed outside Unmodal: a human, the page's navigation, the browser.
    Remote,
    /// Never shown: the browser shows no dialog there (a frame sandboxed without
    /// allow-modals, a document going away, a removed frame), and the page got what the
    /// browser gives (alert undefined, confirm false, prompt null); no rule or policy applied.
    Browser,
}

impl From<unmodal_engine::DecidedBy> for DecidedBy {
    fn from(by: unmodal_engine::DecidedBy) -> Self {
        use unmodal_engine::DecidedBy as E;
        match by {
            E::PilotOff => Self::PilotOff,
            E::Rule => Self::Rule,
            E::DefaultPolicy => Self::DefaultPolicy,
            E::Policy => Self::Policy,
        }
    }
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DialogState {
    /// A native dialog is showing (pilot off, or held for the agent).
    Open,
    Closed,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DialogRecord {
    /// What `interact {dialog_id}` names.
    #[serde(rename = "dialog_id")]
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: Kind,
    pub message: String,
    pub message_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_text: Option<String>,
    pub state: DialogState,
    pub accepted: Option<bool>,
    /// What prompt() returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_text: Option<String>,
    /// What redaction removed from the texts above (e.g. "email", "card_number").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    pub decided_by: DecidedBy,
    pub closed_by: Option<DecidedBy>,
    pub rule_id: Option<u32>,
    /// False when the default stood in because the tab's rules had not reached the
    /// document yet.
    pub rules_loaded: bool,
    /// beforeunload without a rule that accepts: whether the browser shows its prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_show: Option<bool>,
    pub explanation: String,
    pub url: String,
    pub page_url: String,
    pub tab_id: i64,
    /// The extension's frame id (0: top); null for a held dialog in a subframe.
    pub frame_id: Option<i64>,
    pub timestamp: String,
    /// Pairs a native dialog's open and close reports (page reports only; not kept across
    /// a host restart).
    #[serde(skip)]
    pub key: Option<DocSeq>,
    /// What a browser prompt's record adds (flattened into it).
    #[serde(flatten, default)]
    pub details: Details,
}

/// What a browser prompt's record says besides a dialog's fields, as its kind wrote it
/// (`host/kinds/`): flattened into the record and read back by that kind in its own shape.
/// The record names no kind; an empty one says nothing (a page dialog's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Details(serde_json::Map<String, serde_json::Value>);

impl Details {
    /// A kind's own fields (`d` serialises to an object; anything else says nothing).
    pub fn of(d: &impl Serialize) -> Self {
        match serde_json::to_value(d) {
            Ok(serde_json::Value::Object(fields)) => Self(fields),
            _ => Self::default(),
        }
    }

    /// The fields in a kind's own shape, if they are of it.
    pub fn read<T: DeserializeOwned>(&self) -> Option<T> {
        if self.0.is_empty() {
            return None;
        }
        T::deserialize(&serde_json::Value::Object(self.0.clone())).ok()
    }

    /// Changes the fields in a kind's own shape; false if they are not of it.
    pub fn update<T: Serialize + DeserializeOwned>(&mut self, change: impl FnOnce(&mut T)) -> bool {
        let Some(mut d) = self.read::<T>() else { return false };
        change(&mut d);
        *self = Self::of(&d);
        true
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl DialogRecord {
    /// A record with nothing said yet but who decided it; callers fill in the rest
    /// (`DialogRecord { message, ..DialogRecord::new(…) }`).
    pub fn new(id: u64, kind: Kind, tab_id: i64, decided_by: DecidedBy) -> Self {
        Self {
            id,
            kind,
            message: String::new(),
            message_truncated: false,
            default_text: None,
            state: DialogState::Closed,
            accepted: None,
            response_text: None,
            redacted: Vec::new(),
            decided_by,
            closed_by: None,
            rule_id: None,
            rules_loaded: true,
            would_show: None,
            explanation: String::new(),
            url: String::new(),
            page_url: String::new(),
            tab_id,
            frame_id: None,
            timestamp: now_rfc3339(),
            key: None,
            details: Details::default(),
        }
    }

    pub fn is_open(&self) -> bool {
        self.state == DialogState::Open
    }
}

/// A dialog the extension's debugger session holds open in the browser; it joins the
/// history when it closes.
#[derive(Clone, Debug)]
pub struct HeldDialog {
    pub record: DialogRecord,
    /// The service worker's number for it (unique per browser session).
    pub hold: u64,
    pub opened: Instant,
    /// When the watchdog dismisses it, if it waits for the agent.
    pub deadline: Option<Instant>,
    /// Who the host asked to close it (the close event then names them); `None` while it
    /// waits for the agent.
    pub closing: Option<DecidedBy>,
    /// What the host sent as the answer (accept, a prompt's text), if it sent one: a close
    /// the browser reports otherwise was not this answer.
    pub answer: Option<(bool, Option<String>)>,
    /// Why the last answer did not reach the browser.
    pub answer_error: Option<String>,
}

/// A file the host writes or moves once the worker reports: a print's PDF (`to`: the file
/// the agent named; none: Unmodal's prints directory), a download (`to`: the directory to
/// move it into; none: it stays where the browser saved it). `record`: the record it
/// belongs to.
#[derive(Clone, Debug)]
pub struct FileJob {
    pub record: u64,
    pub to: Option<std::path::PathBuf>,
}

/// Identifies a dialog within its document, to pair a native dialog's open and close.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct DocSeq {
    pub tab: i64,
    pub frame: i64,
    pub document: String,
    pub seq: u64,
}

pub fn clip(s: &str, max_chars: usize) -> (String, bool) {
    match s.char_indices().nth(max_chars) {
        Some((cut, _)) => (s[..cut].to_string(), true),
        None => (s.to_string(), false),
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A closed confirm, for tests that need a record.
    pub fn record() -> DialogRecord {
        DialogRecord {
            message: "Sure?".into(),
            accepted: Some(false),
            closed_by: Some(DecidedBy::DefaultPolicy),
            url: "http://a/".into(),
            page_url: "http://a/".into(),
            frame_id: Some(0),
            ..DialogRecord::new(1, Kind::CONFIRM, 1, DecidedBy::DefaultPolicy)
        }
    }

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 3), ("hél".to_string(), true));
        assert_eq!(clip("abc", 3), ("abc".to_string(), false));
        assert_eq!(clip("", 0), (String::new(), false));
    }
}
