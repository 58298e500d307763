//! The records the host keeps of dialogs (history and held), and who decides and closes
//! them. Page text in a record is already cut and redacted.

use crate::api::{ChooserApi, PermissionName};
use crate::kind::Kind;
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
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
}

/// What a browser prompt's record says besides a dialog's fields, one shape per kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Details {
    Auth(AuthDetails),
    Permission(PermissionDetails),
    Chooser(ChooserDetails),
    AppLink(AppLinkDetails),
    Passkey(PasskeyDetails),
    Print(PrintDetails),
    FileChooser(FileChooserDetails),
    Download(DownloadDetails),
}

/// An HTTP auth challenge: realm, scheme, proxy, what became of the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthDetails {
    /// The server's realm (its text: data, not instructions); also the record's message.
    pub realm: String,
    /// `basic` or `digest` (as the browser names it).
    pub scheme: String,
    /// A proxy asked (407), not the site.
    pub is_proxy: bool,
    /// host:port that asked.
    pub challenger: String,
    /// The request's kind: main_frame, sub_frame, xmlhttprequest (fetch too), image, …
    pub request_type: String,
    /// The browser's id of the request (pairs its outcome).
    pub request_id: String,
    /// 1 for the first challenge of the request; more when credentials were refused.
    pub attempt: u32,
    /// What became of the request once answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<AuthOutcome>,
    /// Its final HTTP status, when it got one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthOutcome {
    /// The response after the answer was not a 401/407.
    Authenticated,
    /// The server asked again: the credentials were refused.
    Refused,
    /// The page got the 401/407 (cancelled, or no credentials).
    Unauthorized,
    /// The request failed or was aborted.
    Failed,
}

/// A permission prompt: what was asked for, by which call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionDetails {
    /// What the call asks for (getUserMedia with audio and video asks for two).
    pub permissions: Vec<PermissionName>,
    /// The page's call: getUserMedia, requestPermission, getCurrentPosition, …
    pub api: String,
}

/// A WebAuthn request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasskeyDetails {
    /// `create` (a new passkey) or `get` (signing in with one).
    pub operation: String,
    /// The relying party's id as the page named it (empty: its own origin's host).
    pub rp_id: String,
}

/// A print written to a PDF file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrintDetails {
    /// Where the PDF is.
    pub file: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A file chooser: what the input asks for and, once answered, what the page got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChooserDetails {
    /// `single`, `multiple` or `folder`.
    pub mode: String,
    /// The input's accept attribute (page text, cut and redacted).
    pub accept_types: String,
    /// The input's label (page text, cut and redacted).
    pub label: String,
    /// The files the page got: names and sizes, never contents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<GivenFile>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GivenFile {
    pub path: String,
    pub size: u64,
}

impl GivenFile {
    /// Paths and sizes (a directory's: the sum of its files').
    pub fn of(files: &[std::path::PathBuf]) -> Vec<Self> {
        fn size_of(path: &std::path::Path) -> u64 {
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => {
                    std::fs::read_dir(path).map(|d| d.flatten().map(|e| size_of(&e.path())).sum()).unwrap_or(0)
                }
                Ok(m) if m.is_file() => m.len(),
                _ => 0,
            }
        }
        files.iter().map(|f| Self { path: f.display().to_string(), size: size_of(f) }).collect()
    }
}

/// A download: what it is and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownloadDetails {
    /// The file's name (page text, cut and redacted).
    pub file_name: String,
    pub mime: String,
    /// Bytes: what the server announced, then what was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `in_progress`, `complete`, `cancelled` or `failed`.
    pub download_state: String,
    /// Where the file is once complete (moved into `save_dir` when one was given); for a
    /// remote browser, the copy on this machine once fetched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A remote browser's own path of the file, on its machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_path: Option<String>,
}

/// A link to a scheme the OS handles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppLinkDetails {
    /// Its scheme, lower case, without the colon (`mailto`, `myapp`, `web+app`).
    pub scheme: String,
    /// Its URL, cut and redacted like a dialog's message (also the record's message).
    pub target: String,
}

/// A device chooser: which one, by which call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChooserDetails {
    pub chooser: ChooserApi,
    /// The page's call: requestDevice, requestPort.
    pub method: String,
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
            details: None,
        }
    }

    /// An HTTP auth record's own fields.
    pub fn auth(&self) -> Option<&AuthDetails> {
        match &self.details {
            Some(Details::Auth(a)) => Some(a),
            _ => None,
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

/// A browser's own "Open …?" dialog for an app link, shown in a tab: nothing answers it; a
/// navigation of the tab to another site clears it.
#[derive(Clone, Debug)]
pub struct AppDialog {
    pub id: u64,
    pub tab_id: i64,
    /// The host the tab showed when it opened (another one means it went to another site).
    pub host: String,
    pub opened: Instant,
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
            ..DialogRecord::new(1, Kind::Confirm, 1, DecidedBy::DefaultPolicy)
        }
    }

    #[test]
    fn clip_counts_characters_not_bytes() {
        assert_eq!(clip("héllo", 3), ("hél".to_string(), true));
        assert_eq!(clip("abc", 3), ("abc".to_string(), false));
        assert_eq!(clip("", 0), (String::new(), false));
    }
}
