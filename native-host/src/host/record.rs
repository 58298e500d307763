//! Dialog reports from the page, as they arrive (untrusted), and the records the host keeps.

use serde::{Deserialize, Serialize};

/// Page text is cut to this many characters before it is stored or shown.
pub const MAX_MESSAGE_CHARS: usize = 4096;

/// One message from the service worker about a dialog. Tab, frame and URLs were added by
/// the browser; `report` came from the page hook.
#[derive(Debug, Deserialize)]
pub struct DialogMsg {
    pub tab_id: i64,
    #[serde(default)]
    pub frame_id: i64,
    #[serde(default)]
    pub document_id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub page_url: String,
    pub report: Report,
}

#[derive(Debug, Deserialize)]
pub struct Report {
    pub seq: u64,
    pub phase: Phase,
    pub kind: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub message_cut: bool,
    #[serde(default)]
    pub default_text: Option<String>,
    #[serde(default)]
    pub decided_by: Option<String>,
    #[serde(default)]
    pub rules_loaded: bool,
    #[serde(default)]
    pub rule_id: Option<u32>,
    #[serde(default)]
    pub accepted: Option<bool>,
    #[serde(default)]
    pub value: Option<String>,
    /// beforeunload: whether the browser would show its prompt (needs user activation).
    #[serde(default)]
    pub would_show: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The engine answered it.
    Decided,
    /// The browser's own dialog opened (pilot off).
    Open,
    /// That native dialog closed.
    Closed,
}

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    Rule,
    DefaultPolicy,
    PilotOff,
    /// The tab's dialog policy (auto_accept / auto_dismiss, or must_respond's ask).
    Policy,
    /// Held open for the agent (must_respond); the agent answers it.
    Agent,
    /// Held open, nobody answered in time.
    Watchdog,
    /// Held open, then closed outside Unmodal (navigation, the browser, a human).
    Remote,
}

impl DecidedBy {
    /// What a page report may claim (the other values come from the debugger path).
    pub fn parse(s: Option<&str>) -> Option<Self> {
        match s? {
            "rule" => Some(Self::Rule),
            "default_policy" => Some(Self::DefaultPolicy),
            "pilot_off" => Some(Self::PilotOff),
            "policy" => Some(Self::Policy),
            _ => None,
        }
    }
}

/// Who closed a dialog (the vocabulary of the reactive design, seed 002).
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ClosedBy {
    Rule,
    DefaultPolicy,
    /// auto_accept / auto_dismiss.
    Policy,
    Agent,
    Watchdog,
    /// Closed outside Unmodal: a human, the page's navigation, the browser.
    Remote,
}

impl ClosedBy {
    pub fn decided_by(self) -> DecidedBy {
        match self {
            Self::Rule => DecidedBy::Rule,
            Self::DefaultPolicy => DecidedBy::DefaultPolicy,
            Self::Policy => DecidedBy::Policy,
            Self::Agent => DecidedBy::Agent,
            Self::Watchdog => DecidedBy::Watchdog,
            Self::Remote => DecidedBy::Remote,
        }
    }
}

/// A dialog the extension's debugger session holds open in the browser.
#[derive(Clone, Debug)]
pub struct Held {
    /// The service worker's number for it (unique per browser session).
    pub hold: u64,
    pub opened: std::time::Instant,
    /// When the watchdog dismisses it, if it waits for the agent.
    pub deadline: Option<std::time::Instant>,
    /// Who the host asked to close it (the close event then names them).
    pub closing: Option<ClosedBy>,
    /// Why the last answer did not reach the browser.
    pub answer_error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct DialogRecord {
    /// What `interact {dialog_id}` names.
    #[serde(rename = "dialog_id")]
    pub id: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub message: String,
    pub message_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_text: Option<String>,
    /// "open" while a native dialog is showing, then "closed".
    pub state: &'static str,
    pub accepted: Option<bool>,
    /// What prompt() returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_text: Option<String>,
    /// What redaction removed from the texts above (e.g. "email", "card_number").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    pub decided_by: DecidedBy,
    pub closed_by: Option<ClosedBy>,
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
    #[serde(skip)]
    pub key: DocSeq,
    /// Set for dialogs the debugger session holds open.
    #[serde(skip)]
    pub held: Option<Held>,
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
mod tests {
    use super::*;

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 3), ("hél".to_string(), true));
        assert_eq!(clip("abc", 3), ("abc".to_string(), false));
        assert_eq!(clip("", 0), (String::new(), false));
    }
}
