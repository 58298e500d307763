//! The browser ↔ host protocol: what the extension's service worker sends (`FromBrowser`)
//! and what the host sends it (`ToBrowser`), one JSON object per native-messaging frame,
//! tagged by `type`. `manifest/background.js`, `debugger.js` and `prompts.js` speak the
//! other side. Each frame is parsed once, here; one that does not fit is refused whole and
//! changes nothing. Types only: `dispatch.rs` hands each message to its handler.

use super::record::{DecidedBy, DialogRecord, DialogState};
use serde::{Deserialize, Serialize};
use unmodal_engine::DialogKind;

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromBrowser {
    /// The port opened (the browser started, or its service worker did).
    Hello {
        #[serde(default)]
        version: Option<String>,
        /// Names this browser session (it outlives service worker restarts): a host it
        /// starts takes over the state an earlier one left (`persist.rs`).
        #[serde(default)]
        session: Option<String>,
        /// Names this service worker instance, whose reports are numbered (`n`).
        #[serde(default)]
        worker: Option<String>,
        /// Dialogs the worker's debugger sessions hold open now (a worker that restarted
        /// took over its predecessor's sessions); held dialogs of a previous host not listed
        /// here are closed.
        #[serde(default)]
        held: Vec<HeldRef>,
    },
    /// The AI Web Pilot switch was flipped in the browser (`via`: the toolbar popup, or
    /// anything for off). Off is always taken; on only where no program can control the
    /// browser (`pilot_switch.rs`). The host answers `Pilot` with the same `id`.
    Pilot {
        on: bool,
        via: PilotVia,
        #[serde(default)]
        id: Option<u64>,
    },
    /// The worker refused a way to switch the pilot on (a page in a tab, a storage write,
    /// DevTools on the popup): recorded in the logs.
    PilotRefused { via: PilotVia, reason: String },
    /// The worker applied the `Pilot` message of revision `rev`.
    PilotApplied { rev: u64 },
    /// The browser's tabs, and the one calls without `tab_id` act on.
    Tabs {
        tabs: Vec<Tab>,
        #[serde(default)]
        tracked: Option<i64>,
    },
    /// One report of a page hook, with where it came from.
    Dialog(DialogReport),
    /// Reports a flooding frame counted instead of sending.
    Folded {
        #[serde(flatten)]
        from: Source,
        count: u64,
        /// The worker's number for this report (see `Resume`).
        #[serde(default)]
        n: Option<u64>,
    },
    /// A tab took config revision `rev` (or could not).
    ConfigAck(ConfigAck),
    /// The debugger session holds a dialog open.
    Held(HeldOpened),
    /// A held dialog closed.
    HeldClosed(HeldClosed),
    /// What became of an `Answer`.
    AnswerResult(AnswerResult),
    /// The extension's "Allow access to file URLs" switch (`chrome.extension
    /// .isAllowedFileSchemeAccess`): off, no file reaches a file chooser (sent after `hello`).
    FileAccess { allowed: bool },
    /// The browser ended a tab's debugger session.
    DebuggerDetached {
        tab_id: i64,
        #[serde(default)]
        reason: String,
    },
    /// A browser prompt (HTTP auth, a permission, a device chooser): held by the extension
    /// for the host's answer, or (pilot off) left to the browser and only recorded.
    PromptRequest(PromptRequest),
    /// What became of a held prompt (answered, given up on, or settled by the browser).
    PromptResult(PromptResult),
    /// What became of a `PilotCall` (see `host/pilot.rs`).
    PilotResult(PilotResult),
    /// A tab opened another (`window.open`, `target=_blank`, a popup): it starts with the
    /// opener's rules and policy (`opener.rs`).
    Opened { tab_id: i64, opener_tab_id: i64 },
    /// The answer to `Sync`: every debugger event the worker had before it is sent.
    Synced { id: u64 },
    /// A kind's own message (what became of a download, the end of an auth challenge's
    /// request, a print's PDF, …), read by the kind whose `type` it is (`host/kinds/`).
    #[serde(untagged)]
    Kind(KindMessage),
}

/// A message only one kind reads: its `type` and the rest of its fields.
#[derive(Debug, Deserialize)]
pub struct KindMessage {
    #[serde(rename = "type")]
    pub name: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl FromBrowser {
    pub fn parse(frame: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(frame)
    }

    /// Whether the state it leaves must be on disk before anyone can act on it (rare
    /// messages); the rest is saved right after.
    pub fn must_be_saved_first(&self) -> bool {
        matches!(
            self,
            Self::Held(_)
                | Self::HeldClosed(_)
                | Self::DebuggerDetached { .. }
                | Self::ConfigAck(_)
                | Self::PromptRequest(_)
                | Self::Pilot { .. }
        )
    }
}

/// A tab as the worker lists it (`tabs`).
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

/// Where a page report came from. The browser adds these (`chrome.runtime.MessageSender`);
/// the page cannot forge them.
#[derive(Debug, Deserialize)]
pub struct Source {
    pub tab_id: i64,
    #[serde(default)]
    pub frame_id: i64,
    #[serde(default)]
    pub document_id: Option<String>,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub page_url: String,
}

#[derive(Debug, Deserialize)]
pub struct DialogReport {
    #[serde(flatten)]
    pub from: Source,
    pub report: PageReport,
    /// The worker's number for this report (see `ToBrowser::Resume`).
    #[serde(default)]
    pub n: Option<u64>,
}

/// What the page hook says about one dialog (`manifest/inject/40-dialogs.js`). Page-made:
/// every field is checked for type here and for meaning by the handler.
#[derive(Debug, Deserialize)]
pub struct PageReport {
    pub seq: u64,
    pub phase: Phase,
    pub kind: DialogKind,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub message_cut: bool,
    #[serde(default)]
    pub default_text: Option<String>,
    /// Only what a page's engine can decide; absent in a `closed` report.
    #[serde(default)]
    pub decided_by: Option<unmodal_engine::DecidedBy>,
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
    /// Why the browser would show no dialog here, so the hook gave the page what the
    /// browser gives (no engine decided it: `decided_by` is absent).
    #[serde(default)]
    pub no_dialog: Option<NoDialog>,
}

/// Where the browser shows no dialog (HTML's "cannot show simple dialogs"; Chromium's page
/// dismissal), as the page hook saw it (`manifest/inject/35-no-dialog.js`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum NoDialog {
    /// The document, or a frame it is in, is sandboxed without `allow-modals`.
    Sandboxed,
    /// A beforeunload, pagehide or unload handler is running: the document is going away.
    Unloading,
    /// The window's frame is gone (a removed iframe's window).
    Detached,
}

impl NoDialog {
    /// Why, in a sentence's middle.
    pub fn why(self) -> &'static str {
        match self {
            Self::Sandboxed => "the frame is sandboxed without allow-modals",
            Self::Unloading => "the document is going away (a beforeunload, pagehide or unload handler)",
            Self::Detached => "the frame is gone",
        }
    }
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

#[derive(Debug, Deserialize)]
pub struct ConfigAck {
    pub tab_id: i64,
    pub rev: u64,
    /// The tab's top frame (and every frame that answered) took the config.
    #[serde(default)]
    pub delivered: bool,
    #[serde(default)]
    pub debugger: DebuggerState,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DebuggerState {
    #[serde(default)]
    pub attached: bool,
    /// Why the session the host asked for could not start.
    #[serde(default)]
    pub error: Option<String>,
}

/// `Page.javascriptDialogOpening` in a tab under a policy.
#[derive(Debug, Deserialize)]
pub struct HeldOpened {
    pub tab_id: i64,
    pub hold: u64,
    pub kind: DialogKind,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub default_prompt: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub top_frame: bool,
}

/// Names a held dialog: the worker numbers them per browser session.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
pub struct HeldRef {
    pub tab_id: i64,
    pub hold: u64,
}

#[derive(Debug, Deserialize)]
pub struct HeldClosed {
    pub tab_id: i64,
    pub hold: u64,
    #[serde(default)]
    pub accepted: bool,
    #[serde(default)]
    pub text: String,
    /// The session ended with the dialog open (it closes with the page or the browser).
    #[serde(default)]
    pub gone: bool,
}

#[derive(Debug, Deserialize)]
pub struct AnswerResult {
    pub tab_id: i64,
    pub hold: u64,
    pub ok: bool,
    #[serde(default)]
    pub error: Option<String>,
}

/// A browser prompt as the worker passes it on (`manifest/prompts.js`). Tab, frame and URL
/// come from the browser; what the kind adds is checked by the kind's handler.
#[derive(Debug, Deserialize)]
pub struct PromptRequest {
    pub tab_id: i64,
    /// The worker's number for the request (answers name it).
    pub id: u64,
    #[serde(default)]
    pub frame_id: i64,
    /// The asking frame's URL (auth: the request's).
    #[serde(default)]
    pub url: String,
    /// The pilot is off: the browser handles it (nothing to answer).
    #[serde(default)]
    pub native: bool,
    /// Which kind of prompt (a page dialog's kind is refused by the registry).
    pub kind: crate::kind::Kind,
    /// What the kind adds, read and checked by the kind (`host/kinds/`).
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
pub struct PromptResult {
    pub kind: crate::kind::Kind,
    pub tab_id: i64,
    pub id: u64,
    /// The answer reached the request or page (false: it was gone).
    pub ok: bool,
    /// What was applied was an accept: credentials given, permission granted.
    #[serde(default)]
    pub accepted: bool,
    /// No answer came in time; the worker refused on its own.
    #[serde(default)]
    pub expired: bool,
    /// The browser's own prompt settled first (a chooser a person answered).
    #[serde(default)]
    pub settled: bool,
    #[serde(default)]
    pub error: Option<String>,
}

/// What an answer to a browser prompt carries besides its decision (`host/kinds/`: each
/// kind's accept fills in its own).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Carried {
    /// HTTP auth's login: the only thing sent anywhere that holds a password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<crate::api::Credentials>,
    /// An accepted file chooser: the files (checked, canonical paths) the page gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// What else a kind's accept carries (the keys a passkey's virtual authenticator starts
    /// with).
    #[serde(flatten)]
    pub more: KindFields,
}

/// What the worker does with a held prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptDecision {
    /// Credentials given, permission granted.
    Accept,
    /// Cancelled, denied: the page gets the browser's own refusal.
    Refuse,
    /// Left to the browser: it knows the answer already, or its own prompt stands.
    Native,
}

/// The answer to `ToBrowser::PilotCall` `id`: a result (its shape is the tool's, read by
/// `host/pilot.rs`) or why the browser could not do it.
#[derive(Debug, Deserialize)]
pub struct PilotResult {
    pub id: u64,
    #[serde(default)]
    pub result: Option<serde_json::Value>,
    #[serde(default)]
    pub error: Option<PilotFailure>,
}

#[derive(Debug, Deserialize)]
pub struct PilotFailure {
    /// One of `reply::ErrorCode`'s names; anything else reads as `pilot_failed`.
    pub code: String,
    #[serde(default)]
    pub message: String,
}

/// Fields a kind adds to a message of the core's (a tab's config, an answer's carried
/// part), by wire name, in a fixed order: the core passes them on without reading them.
pub type KindFields = std::collections::BTreeMap<&'static str, serde_json::Value>;

#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToBrowser {
    /// What the host stored of a dialog, redacted: the popup shows only this.
    Recorded {
        tab_id: i64,
        kind: crate::kind::Kind,
        message: String,
        decided_by: DecidedBy,
        accepted: Option<bool>,
        state: DialogState,
    },
    /// A tab's config (engine/src/config.rs), passed to its pages whole. The extension
    /// answers with `ConfigAck` for `rev`.
    Config {
        tab_id: i64,
        rev: u64,
        config: String,
        /// The tab's policy needs a debugger session (the extension also needs the pilot on).
        debugger: bool,
        /// What the kinds tell the worker about the tab beside its rules, by field name
        /// (`kinds::tab_config`): whether its session intercepts file choosers, its site's
        /// automatic-downloads setting.
        #[serde(flatten)]
        fields: KindFields,
    },
    /// The answer to `Hello`: the newest report of this worker the host has (0: none). The
    /// worker sends again what is newer; the host drops what it already had.
    Resume { upto: u64 },
    /// The answer to a held dialog; the extension reports `AnswerResult`.
    Answer {
        tab_id: i64,
        hold: u64,
        accept: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// The answer to a browser prompt; the worker reports `PromptResult`. With credentials
    /// (HTTP auth), the only message that carries a password.
    PromptAnswer {
        kind: crate::kind::Kind,
        tab_id: i64,
        id: u64,
        decision: PromptDecision,
        #[serde(flatten)]
        carried: Carried,
        /// The record it answers; not sent (the CDP bridge names it when the files could not
        /// be copied to a remote browser).
        #[serde(skip)]
        record: u64,
    },
    /// The prompt waits for the agent: the worker holds it this long before it refuses on
    /// its own (the watchdog comes first).
    PromptHold { kind: crate::kind::Kind, tab_id: i64, id: u64, wait_ms: u64 },
    /// An AI Web Pilot tool call for a tab; the extension answers with `PilotResult` `id`.
    /// It checks the human's switch itself: the host's word is not enough.
    PilotCall { id: u64, tab_id: i64, call: crate::pilot_api::PilotCall },
    /// A barrier (`barrier.rs`): the worker answers `Synced` after what it had before.
    Sync { id: u64 },
    /// The pilot switch as the host keeps it; the worker applies it, caches it and answers
    /// `PilotApplied`. `terminal_only` says why the popup cannot switch it on here; `id`
    /// and `refused` answer a `Pilot` request from the browser.
    Pilot {
        on: bool,
        rev: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        terminal_only: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
}

/// Where in the browser a switch of the pilot came from, as the worker saw it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PilotVia {
    /// The extension's toolbar popup (the worker checked it is one, with no DevTools on it).
    Popup,
    /// `popup.html` loaded in a tab or a window a program can open.
    PopupInTab,
    /// A write to the extension's storage that the worker did not make.
    Storage,
    /// A message from a page, or from a view that is not the toolbar popup.
    Message,
    /// Anything else the worker could not place.
    #[serde(other)]
    Other,
}

impl ToBrowser {
    pub fn recorded(r: &DialogRecord) -> Self {
        Self::Recorded {
            tab_id: r.tab_id,
            kind: r.kind,
            message: r.message.clone(),
            decided_by: r.decided_by,
            accepted: r.accepted,
            state: r.state,
        }
    }

    /// The tab and revision of a config message, which a setup waits to see acknowledged.
    /// A config message's tab and revision, and whether it asks for a debugger session.
    pub fn config_rev(&self) -> Option<(i64, u64, bool)> {
        match self {
            Self::Config { tab_id, rev, debugger, .. } => Some((*tab_id, *rev, *debugger)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::state::State;
    use ringbuf::traits::Observer;
    use serde_json::json;

    /// One message of each kind, as the extension sends it.
    fn samples() -> Vec<serde_json::Value> {
        vec![
            json!({"type":"hello","version":"0.1.0","pilot":true,"session":"a1b2c3d4e5f6"}),
            json!({"type":"pilot","on":false,"via":"popup"}),
            json!({"type":"tabs","tracked":null,"tabs":[{"id":1,"url":"http://a/"}]}),
            json!({"type":"dialog","tab_id":1,"frame_id":0,"document_id":"d","url":"u","page_url":"p",
                   "report":{"seq":1,"phase":"decided","kind":"confirm","decided_by":"rule","rule_id":3,"t":5}}),
            json!({"type":"folded","tab_id":1,"frame_id":2,"url":"u","page_url":"p","count":7}),
            json!({"type":"config_ack","tab_id":1,"rev":4,"delivered":true,"debugger":{"attached":false}}),
            json!({"type":"held","tab_id":1,"hold":2,"kind":"beforeunload","message":"","url":"u","top_frame":true}),
            json!({"type":"held_closed","tab_id":1,"hold":2,"accepted":true,"text":""}),
            json!({"type":"answer_result","tab_id":1,"hold":2,"ok":true}),
            json!({"type":"debugger_detached","tab_id":1,"reason":"canceled_by_user"}),
            json!({"type":"file_access","allowed":false}),
            json!({"type":"download_done","tab_id":1,"id":2,"state":"complete","path":"/tmp/a.txt","size":3}),
            json!({"type":"prompt_request","kind":"auth","tab_id":1,"id":3,"request_id":"77","url":"http://a/",
                   "frame_id":0,"request_type":"main_frame","realm":"Staff","scheme":"basic","is_proxy":false,
                   "challenger":{"host":"a","port":80},"attempt":1,"native":false}),
            json!({"type":"prompt_result","kind":"auth","tab_id":1,"id":3,"ok":true,"accepted":true,
                   "expired":false,"settled":false}),
            json!({"type":"auth_done","tab_id":1,"request_id":"77","status_code":200}),
            json!({"type":"pilot_result","id":3,"error":{"code":"ai_web_pilot_disabled","message":"off"}}),
            json!({"type":"opened","tab_id":2,"opener_tab_id":1}),
            json!({"type":"synced","id":3}),
            json!({"type":"pilot_refused","via":"storage","reason":"written by an extension page"}),
            json!({"type":"pilot_applied","rev":2}),
            json!({"type":"passkeys_saved","tab_id":1,"id":2,"credentials":[{"credentialId":"AA==",
                   "rpId":"a","privateKey":"AA==","signCount":1,"isResidentCredential":true}]}),
            json!({"type":"app_link_dialog","tab_id":1,"frame_id":4,"target":"myapp://x"}),
            json!({"type":"print_pdf","tab_id":1,"id":3,"data":"JVBERi0="}),
        ]
    }

    #[test]
    fn every_kind_of_browser_message_parses() {
        let mut seen = std::collections::HashSet::new();
        for m in samples() {
            let parsed = FromBrowser::parse(m.to_string().as_bytes());
            // Exhaustive: a new kind of message needs a sample here.
            let kind = match parsed {
                Ok(FromBrowser::Hello { .. }) => "hello",
                Ok(FromBrowser::Pilot { .. }) => "pilot",
                Ok(FromBrowser::Tabs { .. }) => "tabs",
                Ok(FromBrowser::Dialog(_)) => "dialog",
                Ok(FromBrowser::Folded { .. }) => "folded",
                Ok(FromBrowser::ConfigAck(_)) => "config_ack",
                Ok(FromBrowser::Held(_)) => "held",
                Ok(FromBrowser::HeldClosed(_)) => "held_closed",
                Ok(FromBrowser::AnswerResult(_)) => "answer_result",
                Ok(FromBrowser::DebuggerDetached { .. }) => "debugger_detached",
                Ok(FromBrowser::FileAccess { .. }) => "file_access",
                Ok(FromBrowser::PromptRequest(_)) => "prompt_request",
                Ok(FromBrowser::PromptResult(_)) => "prompt_result",
                Ok(FromBrowser::PilotResult(_)) => "pilot_result",
                Ok(FromBrowser::Opened { .. }) => "opened",
                Ok(FromBrowser::Synced { .. }) => "synced",
                Ok(FromBrowser::Kind(m)) => m.name.leak(),
                Ok(FromBrowser::PilotRefused { .. }) => "pilot_refused",
                Ok(FromBrowser::PilotApplied { .. }) => "pilot_applied",
                Err(e) => panic!("{m}: {e}"),
            };
            assert_eq!(m["type"], kind);
            seen.insert(kind);
        }

        assert_eq!(seen.len(), 23, "one sample of each kind");
    }

    #[test]
    fn the_extension_speaks_the_same_message_names() {
        let worker = include_str!("../../../manifest/background.js");
        let js = [
            worker,
            include_str!("../../../manifest/debugger.js"),
            include_str!("../../../manifest/prompts.js"),
            include_str!("../../../manifest/auth.js"),
            include_str!("../../../manifest/passkeys.js"),
            include_str!("../../../manifest/applinks.js"),
            include_str!("../../../manifest/print.js"),
            include_str!("../../../manifest/downloads.js"),
            include_str!("../../../manifest/host_port.js"),
            include_str!("../../../manifest/tabs.js"),
            include_str!("../../../manifest/pilot_switch.js"),
            include_str!("../../../manifest/page_router.js"),
        ]
        .concat();
        for m in samples() {
            let tag = m["type"].as_str().unwrap();
            assert!(js.contains(&format!("type: '{tag}'")), "manifest/ never sends `{tag}`");
        }
        let sent = [
            ToBrowser::recorded(&crate::host::record::tests::record()),
            ToBrowser::Config { tab_id: 1, rev: 1, config: String::new(), debugger: false, fields: KindFields::new() },
            ToBrowser::Answer { tab_id: 1, hold: 1, accept: true, text: None },
            ToBrowser::Resume { upto: 0 },
            ToBrowser::PromptAnswer {
                kind: crate::host::kinds::permission::KIND,
                tab_id: 1,
                id: 1,
                decision: PromptDecision::Accept,
                carried: Carried::default(),
                record: 0,
            },
            ToBrowser::PromptHold { kind: crate::host::kinds::auth::KIND, tab_id: 1, id: 1, wait_ms: 1 },
            ToBrowser::PilotCall {
                id: 1,
                tab_id: 1,
                call: crate::pilot_api::PilotCall::Highlight {
                    selector: "a".into(),
                    duration_ms: 1,
                    frame_url_contains: None,
                },
            },
            ToBrowser::Sync { id: 1 },
            ToBrowser::Pilot { on: false, rev: 1, terminal_only: None, id: None, refused: None },
        ];
        for m in sent {
            let v = serde_json::to_value(&m).unwrap();
            let tag = v["type"].as_str().unwrap();
            assert!(worker.contains(&format!("msg.type === '{tag}'")), "background.js never reads `{tag}`");
        }
    }

    #[test]
    fn what_does_not_fit_is_refused() {
        for m in [
            json!(1),
            json!({}),
            json!({"type":"pilot"}),
            json!({"type":"dialog","tab_id":"x","report":{"seq":1,"phase":"decided","kind":"alert"}}),
            json!({"type":"dialog","tab_id":1,"report":{"seq":1,"phase":"decided","kind":"shout"}}),
            json!({"type":"dialog","tab_id":1,"report":{"seq":1,"phase":"decided","kind":"alert","decided_by":"agent"}}),
            json!({"type":"held","tab_id":1,"kind":"alert"}),
            json!({"type":"tabs","tabs":"all"}),
            json!({"type":"folded","tab_id":1,"count":-1}),
            // A type no kind has, and a kind's own message that kind cannot read: they
            // parse as a kind's message (`KindMessage`), and the state refuses them.
            json!({"type":"nope"}),
            json!({"type":"download_done","tab_id":1}),
            json!({"type":"auth_done","tab_id":1,"request_id":7}),
        ] {
            let mut s = State::new();
            let refused = FromBrowser::parse(m.to_string().as_bytes()).map_err(|e| e.to_string()).and_then(|msg| {
                let kinds = matches!(msg, FromBrowser::Kind(_));
                let r = s.on_browser(msg);
                assert!(kinds || r.is_ok(), "{m}: a core message that parses is taken");
                r
            });
            assert!(refused.is_err(), "{m}");
        }
        assert!(FromBrowser::parse(b"\xff\x00").is_err());
    }

    #[test]
    fn reports_sent_again_are_recorded_once() {
        let mut s = State::new();
        let hello = |w: &str| json!({"type":"hello","pilot":true,"worker":w});
        let report = |n: u64| {
            json!({"type":"dialog","tab_id":1,"n":n,"report":{"seq":n,"phase":"decided",
            "kind":"alert","message":"m","decided_by":"default_policy","rules_loaded":true,"accepted":true}})
        };
        let feed =
            |s: &mut State, v: serde_json::Value| s.on_browser(FromBrowser::parse(v.to_string().as_bytes()).unwrap());
        assert_eq!(feed(&mut s, hello("w1")).unwrap()[1..], [ToBrowser::Resume { upto: 0 }]);
        for n in [1, 2, 3] {
            feed(&mut s, report(n)).unwrap();
        }
        // A new host of the same worker (restored from disk) says how far it got; the
        // worker sends 2 and 3 again anyway (it could not know): nothing is doubled.
        assert_eq!(feed(&mut s, hello("w1")).unwrap()[1..], [ToBrowser::Resume { upto: 3 }]);
        for n in [2, 3, 4] {
            feed(&mut s, report(n)).unwrap();
        }
        assert_eq!(s.history.occupied_len(), 4);
        // Another worker (the old one stopped) numbers from 1 again.
        assert_eq!(feed(&mut s, hello("w2")).unwrap()[1..], [ToBrowser::Resume { upto: 0 }]);
        feed(&mut s, report(1)).unwrap();
        assert_eq!(s.history.occupied_len(), 5);
    }

    #[test]
    fn host_messages_have_the_shapes_the_extension_reads() {
        let config =
            ToBrowser::Config { tab_id: 3, rev: 9, config: "U1E1".into(), debugger: true, fields: KindFields::new() };
        assert_eq!(
            serde_json::to_value(&config).unwrap(),
            json!({"type":"config","tab_id":3,"rev":9,"config":"U1E1","debugger":true})
        );
        assert_eq!(config.config_rev(), Some((3, 9, true)));
        let answer = ToBrowser::Answer { tab_id: 3, hold: 1, accept: false, text: None };
        assert_eq!(serde_json::to_value(&answer).unwrap(), json!({"type":"answer","tab_id":3,"hold":1,"accept":false}));
        assert_eq!(answer.config_rev(), None);
    }
}

/// A file a remote browser downloaded, to copy into `dir` on this machine: what a kind
/// asks of the CDP bridge (`transport/remote_files.rs`), which has the only way to it. The
/// copy's outcome goes back to `kind` (`transport::Report`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchJob {
    pub kind: crate::kind::Kind,
    pub record: u64,
    /// Its path on the browser's machine.
    pub remote: String,
    /// The copy's name, when the file's own is not the download's (a driver's GUID-named file).
    pub name: Option<String>,
    pub dir: std::path::PathBuf,
}
