//! The agent-facing parameters (MCP tool arguments), their limits and defaults, and their
//! validation. The MCP server checks them before forwarding; the host checks them again
//! (anything on the user's socket may call it). A leaf: it knows nothing of the host.

use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use unmodal_engine::{MAX_MATCH_UNITS, MAX_TEXT_UNITS, Policy, RuleTarget};
use zeroize::Zeroizing;

/// The watchdog's default: a held dialog nobody answers is dismissed after 10 s.
pub const DEFAULT_TIMEOUT_S: u32 = 10;
/// The longest a held dialog may wait for the agent.
pub const MAX_TIMEOUT_S: u32 = 600;
/// HTTP auth: the longest username and password (UTF-16 units) and realm match.
pub const MAX_USERNAME_UNITS: usize = 512;
pub const MAX_PASSWORD_UNITS: usize = 1024;

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum InteractAction {
    /// Respond to, pre-configure, clear or query browser dialogs.
    HandleDialog,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DialogTypeArg {
    Alert,
    Confirm,
    Prompt,
    Beforeunload,
    /// HTTP authentication (a 401/407 challenge the browser would ask a human about).
    Auth,
    /// A permission prompt (camera, microphone, notifications, geolocation, clipboard-read):
    /// accept = grant, dismiss = deny.
    Permission,
    /// A device chooser (WebUSB, WebHID, Web Serial, Web Bluetooth): it can only be
    /// cancelled (no extension can pick a device).
    #[serde(rename = "device_chooser")]
    DeviceChooser,
    /// A link to a scheme the OS handles (mailto:, tel:, myapp://, web+x:): accept = open it
    /// (the browser hands it to the OS), dismiss = cancel it (the page stays where it is).
    #[serde(rename = "app_link")]
    AppLink,
    /// A WebAuthn request (navigator.credentials.create or get with publicKey): accept =
    /// Unmodal's virtual authenticator answers it, dismiss = refuse it as a person's cancel
    /// (NotAllowedError).
    Passkey,
    /// window.print(): accept = print the page to a PDF file (save_to), dismiss = the preview
    /// cancelled (the call returns, nothing printed).
    Print,
    /// A FedCM sign-in (navigator.credentials.get with identity): accept = the browser's own
    /// account chooser (headful: it waits for a person), dismiss = refused at once
    /// (NetworkError, as the browser refuses one it cannot complete).
    #[serde(rename = "sign_in")]
    SignIn,
    /// A Payment Request's show(): accept = the browser's own way (headful, with a payment
    /// app: its payment sheet, which waits for a person), dismiss = refused at once as a
    /// person's closing of the sheet (AbortError).
    Payment,
    /// document.requestStorageAccess(): accept = the browser's own way (headful, another
    /// site's frame: it may ask the person), dismiss = refused at once (NotAllowedError, the
    /// browser's own refusal).
    #[serde(rename = "storage_access")]
    StorageAccess,
    /// EyeDropper.open(), once the browser opened its eye dropper: accept = leave it to the
    /// browser (headless: it never settles; headful: it waits for a person's click),
    /// dismiss = the page gets a person's Escape at once (AbortError).
    #[serde(rename = "eye_dropper")]
    EyeDropper,
    /// A file chooser (<input type=file>): accept = the page gets the rule's or the agent's
    /// `files` as a person's pick gives them, dismiss = cancelled as a person's cancel.
    #[serde(rename = "file_chooser")]
    FileChooser,
    /// A download a page starts (a download link, an attachment, window.open of a file):
    /// accept = saved (into `save_dir` if given), dismiss = cancelled, nothing written.
    Download,
    All,
}

impl DialogTypeArg {
    /// As agents name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auth => "auth",
            Self::Permission => "permission",
            Self::DeviceChooser => "device_chooser",
            Self::AppLink => "app_link",
            Self::Passkey => "passkey",
            Self::Print => "print",
            Self::SignIn => "sign_in",
            Self::Payment => "payment",
            Self::StorageAccess => "storage_access",
            Self::EyeDropper => "eye_dropper",
            Self::FileChooser => "file_chooser",
            Self::Download => "download",
            page => page.target().as_str(),
        }
    }

    /// A call the page hook holds and refuses itself (`RuleSpec::Held`), if this is one.
    pub fn held(self) -> Option<HeldCall> {
        match self {
            Self::SignIn => Some(HeldCall::SignIn),
            Self::Payment => Some(HeldCall::Payment),
            Self::StorageAccess => Some(HeldCall::StorageAccess),
            Self::EyeDropper => Some(HeldCall::EyeDropper),
            _ => None,
        }
    }

    /// alert, confirm, prompt or beforeunload: a dialog the page's engine answers.
    pub fn is_page_dialog(self) -> bool {
        matches!(self, Self::Alert | Self::Confirm | Self::Prompt | Self::Beforeunload)
    }

    pub fn target(self) -> RuleTarget {
        use unmodal_engine::DialogKind as K;
        match self {
            Self::Alert => RuleTarget::One(K::Alert),
            Self::Confirm => RuleTarget::One(K::Confirm),
            Self::Prompt => RuleTarget::One(K::Prompt),
            Self::Beforeunload => RuleTarget::One(K::BeforeUnload),
            // Browser prompts' rules live in the host only (`RuleSpec`), never in a page.
            Self::All
            | Self::Auth
            | Self::Permission
            | Self::DeviceChooser
            | Self::AppLink
            | Self::Passkey
            | Self::Print
            | Self::SignIn
            | Self::Payment
            | Self::StorageAccess
            | Self::EyeDropper
            | Self::FileChooser
            | Self::Download => RuleTarget::All,
        }
    }
}

/// "a" or "an", as `word` (a kind's name) begins: "an app_link", "an eye_dropper".
pub fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" }
}

/// A call the page hook holds and answers itself with the browser's own refusal, or leaves
/// to the browser: one rule shape for all of them (`RuleSpec::Held`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeldCall {
    SignIn,
    Payment,
    StorageAccess,
    EyeDropper,
}

impl HeldCall {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
            Self::Payment => "payment",
            Self::StorageAccess => "storage_access",
            Self::EyeDropper => "eye_dropper",
        }
    }
}

/// Conditions that narrow a rule to some dialogs (both must hold when both are given).
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MatchArg {
    /// Only dialogs whose message contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub message_contains: Option<String>,
    /// Only dialogs on pages whose URL contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub url_contains: Option<String>,
    /// dialog_type "auth" only: only challenges whose realm is exactly this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub realm: Option<String>,
    /// dialog_type "app_link" only: only links of this scheme (e.g. "mailto"; any case,
    /// with or without the colon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub scheme: Option<String>,
    /// dialog_type "passkey" only: only requests for this relying party id (exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub rp_id: Option<String>,
    /// dialog_type "file_chooser" only: only inputs whose accept attribute contains this
    /// text (case-insensitive), such as "pdf" or "image/".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    pub accept_contains: Option<String>,
}

impl MatchArg {
    pub fn is_empty(&self) -> bool {
        self.message_contains.is_none()
            && self.url_contains.is_none()
            && self.realm.is_none()
            && self.scheme.is_none()
            && self.rp_id.is_none()
            && self.accept_contains.is_none()
    }
}

/// `interact` arguments, as in the dialog-handling spec.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InteractArgs {
    /// What to do. `handle_dialog`: answer the pending dialog, or with `setup: true`
    /// pre-configure how future dialogs are answered.
    pub action: InteractAction,
    /// true = OK/accept, false = Cancel/dismiss. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub accept: Option<bool>,
    /// Text a prompt() returns when accepted. Ignored for other dialog types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    pub text: Option<String>,
    /// Target tab id (see `observe` with `what: "tabs"`). Default: the tracked tab, i.e.
    /// the active tab of the last focused window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
    /// true = configure an auto-response for future dialogs (do this before the action
    /// that triggers the dialog).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<bool>,
    /// Which dialogs a setup applies to. Required with `setup: true` unless `clear`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_type: Option<DialogTypeArg>,
    /// true = answer only the next matching dialog, then revert to the default policy;
    /// false = keep answering until cleared. Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub once: Option<bool>,
    /// With setup: remove auto-responses for `dialog_type` (default "all").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear: Option<bool>,
    /// With setup: apply the rule only to dialogs whose message and/or page URL contain
    /// these texts. The most specific matching rule wins, and the dialog's record names it.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<MatchArg>,
    /// true = only report pending dialogs and active auto-responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<bool>,
    /// Which held dialog to answer (`dialog_id` of a pending dialog). Needed when several
    /// are held open; with one, it may be left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog_id: Option<u64>,
    /// HTTP auth (dialog_type "auth"): the username to answer with, in a setup or in the
    /// answer to a held challenge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 512))]
    pub username: Option<String>,
    /// HTTP auth: the password. Never stored on disk, logged or shown in any answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub password: Option<Secret>,
    /// dialog_type "permission" with setup: the permission the rule decides (default: every
    /// one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionName>,
    /// dialog_type "device_chooser" with setup: the chooser the rule cancels (default: every
    /// one of them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chooser: Option<ChooserApi>,
    /// dialog_type "passkey" with setup and accept: true: keep the passkeys this rule makes
    /// for the browser profile (in Unmodal's private data, never shown), so a later session
    /// signs in with them. Default false: they last as long as the browser session.
    #[serde(default)]
    pub keep: Option<bool>,
    /// dialog_type "print" (with setup and accept: true, or answering a held print): the PDF
    /// file to write, an absolute path inside the MCP client's roots or the directories
    /// configured for Unmodal. Default: Unmodal's prints directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_to: Option<String>,
    /// dialog_type "file_chooser" (with setup, or answering a held chooser): the files the
    /// page gets, absolute paths inside the MCP client's roots or the directories configured
    /// for Unmodal (a folder input takes one directory). Answers name files and sizes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 32))]
    pub files: Option<Vec<String>>,
    /// dialog_type "download" (with setup and accept: true, or answering a held download):
    /// the directory a saved download is moved to, an absolute path inside the MCP client's
    /// roots or the directories configured for Unmodal. Default: where the browser saves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_dir: Option<String>,
}

/// A device chooser's API, as the page reaches it (`navigator.usb`, …).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ChooserApi {
    /// WebUSB: navigator.usb.requestDevice.
    Usb,
    /// WebHID: navigator.hid.requestDevice.
    Hid,
    /// Web Serial: navigator.serial.requestPort.
    Serial,
    /// Web Bluetooth: navigator.bluetooth.requestDevice (where the browser exposes it).
    Bluetooth,
    /// The screen-share picker: navigator.mediaDevices.getDisplayMedia (a screen, window or
    /// tab to capture).
    Display,
}

impl ChooserApi {
    pub const ALL: [Self; 5] = [Self::Usb, Self::Hid, Self::Serial, Self::Bluetooth, Self::Display];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Usb => "usb",
            Self::Hid => "hid",
            Self::Serial => "serial",
            Self::Bluetooth => "bluetooth",
            Self::Display => "display",
        }
    }

    /// What the chooser offers, and where the page calls it from.
    pub fn describe(self) -> (&'static str, &'static str) {
        match self {
            Self::Usb => ("USB device chooser", "navigator.usb"),
            Self::Hid => ("HID device chooser", "navigator.hid"),
            Self::Serial => ("serial port chooser", "navigator.serial"),
            Self::Bluetooth => ("Bluetooth device chooser", "navigator.bluetooth"),
            Self::Display => ("screen-share picker", "navigator.mediaDevices"),
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// A permission the browser would prompt for and the extension can decide (Chromium's
/// content settings), named as `navigator.permissions.query` names it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionName {
    /// getUserMedia with video.
    Camera,
    /// getUserMedia with audio.
    Microphone,
    /// Notification.requestPermission.
    Notifications,
    /// geolocation.getCurrentPosition / watchPosition.
    Geolocation,
    /// navigator.clipboard.read / readText.
    ClipboardRead,
    /// The browser's "Download multiple files" prompt: more than one download a page starts
    /// without a new click (headless Chromium denies it and stores the block for the site).
    /// Only when named: a grant or denial is set for the tab's site before the page starts
    /// its downloads, and follows the tab to the sites it goes to.
    AutomaticDownloads,
}

impl PermissionName {
    pub const ALL: [Self; 6] = [
        Self::Camera,
        Self::Microphone,
        Self::Notifications,
        Self::Geolocation,
        Self::ClipboardRead,
        Self::AutomaticDownloads,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Camera => "camera",
            Self::Microphone => "microphone",
            Self::Notifications => "notifications",
            Self::Geolocation => "geolocation",
            Self::ClipboardRead => "clipboard-read",
            Self::AutomaticDownloads => "automatic-downloads",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConfigureAction {
    /// How dialogs that no auto-response matches are handled in a tab.
    DialogPolicy,
}

/// `configure` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigureArgs {
    /// What to configure.
    pub action: ConfigureAction,
    /// For `dialog_policy`: auto, must_respond, auto_accept or auto_dismiss.
    pub policy: Policy,
    /// must_respond: seconds a held dialog waits for the agent before the watchdog
    /// dismisses it; 1 to 600, default 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 600), extend("default" = 10))]
    pub timeout_s: Option<u32>,
    /// Target tab id. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// A validated `dialog_policy` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyCall {
    pub tab: Option<i64>,
    pub policy: Policy,
    pub timeout_s: u32,
}

impl ConfigureArgs {
    pub fn validate(&self) -> Result<PolicyCall, ParamError> {
        check_tab(self.tab_id)?;
        let timeout_s = self.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if !(1..=MAX_TIMEOUT_S).contains(&timeout_s) {
            return Err(bad("timeout_s", format!("{timeout_s} is out of range; 1 to {MAX_TIMEOUT_S} seconds")));
        }
        Ok(PolicyCall { tab: self.tab_id, policy: self.policy, timeout_s })
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ObserveWhat {
    /// Pending dialogs, recent dialogs (who answered each, and why), active auto-responses.
    Dialogs,
    /// The tabs of the connected browser and which one is tracked.
    Tabs,
    /// Log entries: each dialog (`source: "dialog"`) and flood summaries with exact counts.
    Logs,
}

/// `observe` arguments.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObserveArgs {
    /// What to observe.
    pub what: ObserveWhat,
    /// Target tab id for `dialogs` and `logs`. Default: the tracked tab.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub tab_id: Option<i64>,
}

/// A validated `handle_dialog` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DialogCall {
    /// A rule for future dialogs or prompts of one kind.
    Setup {
        tab: Option<i64>,
        once: bool,
        rule: RuleSpec,
    },
    /// Removes the tab's rules for `what` (`all`: every kind).
    Clear {
        tab: Option<i64>,
        what: DialogTypeArg,
    },
    Status {
        tab: Option<i64>,
    },
    Respond {
        tab: Option<i64>,
        accept: bool,
        text: Option<String>,
        dialog_id: Option<u64>,
    },
    /// Accepts a held prompt with what only its kind takes.
    Carrying {
        tab: Option<i64>,
        dialog_id: Option<u64>,
        with: Carry,
    },
}

/// What an accept carries that only one kind of prompt takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Carry {
    /// An auth challenge's login.
    Login(Credentials),
    /// A print's PDF file.
    SaveTo(PathBuf),
    /// The directory a held download is saved into.
    SaveDir(PathBuf),
    /// The files a held file chooser gives the page.
    Files(Vec<PathBuf>),
}

/// What a rule answers, one shape per kind of modal UI. The page's engine applies `Dialog`
/// rules; the host applies the others (they never reach a page, and live in memory only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleSpec {
    /// alert, confirm, prompt, beforeunload, or all of them.
    Dialog { target: RuleTarget, accept: bool, text: Option<String>, matcher: MatchArg },
    /// HTTP auth: credentials to give, or none (cancel: the page gets the 401).
    Auth { credentials: Option<Credentials>, matcher: MatchArg },
    /// A permission prompt: grant (accept) or deny, for one permission or all.
    Permission { accept: bool, permission: Option<PermissionName>, matcher: MatchArg },
    /// A device chooser: cancel it (the only answer there is), for one chooser or all.
    DeviceChooser { chooser: Option<ChooserApi>, matcher: MatchArg },
    /// A link to a scheme the OS handles: open it (accept) or cancel it; `match.url_contains`
    /// is on the link's URL, `match.scheme` its scheme.
    AppLink { accept: bool, matcher: MatchArg },
    /// A WebAuthn request: answer it with Unmodal's virtual authenticator (accept; `keep`:
    /// the passkeys made outlive the browser session) or refuse it (a person's cancel);
    /// `match.url_contains` is on the page's URL, `match.rp_id` the relying party.
    Passkey { accept: bool, keep: bool, matcher: MatchArg },
    /// A window.print(): print the page to a PDF file (accept; `save_to`, else Unmodal's
    /// prints directory) or cancel it (the preview closed); `match.url_contains` is on the
    /// frame's URL.
    Print { accept: bool, save_to: Option<PathBuf>, matcher: MatchArg },
    /// A call the page hook holds and refuses itself (`kind`: sign_in, payment,
    /// storage_access, eye_dropper): leave it to the browser (accept) or refuse it at once with the
    /// browser's own refusal; `match.url_contains` is on the frame's URL.
    Held { kind: HeldCall, accept: bool, matcher: MatchArg },
    /// A file chooser: give the page these files (none: cancel it, as a person does);
    /// `match.url_contains` is on the frame's URL, `match.accept_contains` on the input's
    /// accept attribute.
    FileChooser { files: Vec<PathBuf>, matcher: MatchArg },
    /// A download: save it (accept; into `save_dir`, else where the browser saves) or cancel
    /// it; `match.url_contains` is on the download's URL.
    Download { accept: bool, save_dir: Option<PathBuf>, matcher: MatchArg },
}

impl RuleSpec {
    /// Whether the tab's config carries it: a page dialog's (the page's engine applies it), a
    /// file chooser's (its debugger session intercepts choosers), or an `automatic-downloads`
    /// grant (the worker sets the site's setting). The one test of whether adding, clearing,
    /// spending or copying a rule changes what the worker holds for the tab.
    pub fn in_config(&self) -> bool {
        matches!(self, Self::Dialog { .. }) || self.intercepts_choosers().is_some() || self.downloads().is_some()
    }

    /// A file chooser's rule: the tab's debugger session intercepts choosers while it has one;
    /// `Some(true)` when the rule only cancels them (the browser can do that itself).
    pub fn intercepts_choosers(&self) -> Option<bool> {
        match self {
            Self::FileChooser { files, .. } => Some(files.is_empty()),
            _ => None,
        }
    }

    /// A rule for the browser's "Download multiple files" prompt: whether it grants; the
    /// worker sets the browser's setting for the tab's site before any download.
    pub fn downloads(&self) -> Option<bool> {
        match self {
            Self::Permission { accept, permission: Some(PermissionName::AutomaticDownloads), .. } => Some(*accept),
            _ => None,
        }
    }

    /// The `dialog_type` it answers, as agents name it.
    pub fn dialog_type(&self) -> &'static str {
        match self {
            Self::Dialog { target, .. } => target.as_str(),
            Self::Auth { .. } => "auth",
            Self::Permission { .. } => "permission",
            Self::DeviceChooser { .. } => "device_chooser",
            Self::AppLink { .. } => "app_link",
            Self::Passkey { .. } => "passkey",
            Self::Print { .. } => "print",
            Self::Held { kind, .. } => kind.as_str(),
            Self::FileChooser { .. } => "file_chooser",
            Self::Download { .. } => "download",
        }
    }

    pub fn accept(&self) -> bool {
        match self {
            Self::Dialog { accept, .. }
            | Self::Permission { accept, .. }
            | Self::AppLink { accept, .. }
            | Self::Passkey { accept, .. }
            | Self::Print { accept, .. }
            | Self::Held { accept, .. }
            | Self::Download { accept, .. } => *accept,
            Self::Auth { credentials, .. } => credentials.is_some(),
            Self::FileChooser { files, .. } => !files.is_empty(),
            Self::DeviceChooser { .. } => false,
        }
    }

    pub fn matcher(&self) -> &MatchArg {
        match self {
            Self::Dialog { matcher, .. }
            | Self::Auth { matcher, .. }
            | Self::Permission { matcher, .. }
            | Self::DeviceChooser { matcher, .. }
            | Self::AppLink { matcher, .. }
            | Self::Passkey { matcher, .. }
            | Self::Print { matcher, .. }
            | Self::Held { matcher, .. }
            | Self::FileChooser { matcher, .. }
            | Self::Download { matcher, .. } => matcher,
        }
    }

    /// Whether `clear` with `what` removes it.
    pub fn cleared_by(&self, what: DialogTypeArg) -> bool {
        match (self, what) {
            (_, DialogTypeArg::All) => true,
            (Self::Dialog { target, .. }, w) => *target == w.target() && w.is_page_dialog(),
            (Self::Auth { .. }, DialogTypeArg::Auth)
            | (Self::Permission { .. }, DialogTypeArg::Permission)
            | (Self::DeviceChooser { .. }, DialogTypeArg::DeviceChooser)
            | (Self::AppLink { .. }, DialogTypeArg::AppLink)
            | (Self::Passkey { .. }, DialogTypeArg::Passkey)
            | (Self::Print { .. }, DialogTypeArg::Print)
            | (Self::FileChooser { .. }, DialogTypeArg::FileChooser)
            | (Self::Download { .. }, DialogTypeArg::Download) => true,
            (Self::Held { kind, .. }, w) => w.held() == Some(*kind),
            _ => false,
        }
    }
}

/// What answers an HTTP auth challenge (serialized only into the answer to the browser).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Credentials {
    pub username: String,
    pub password: Secret,
}

/// A parameter the caller got wrong; the message says how to get it right.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid parameter `{param}`: {message}")]
pub struct ParamError {
    pub param: String,
    pub message: String,
}

pub fn bad(param: &str, message: impl Into<String>) -> ParamError {
    ParamError { param: param.to_owned(), message: message.into() }
}

/// Deserializes tool arguments, naming the parameter that is wrong.
pub fn parse<T: DeserializeOwned>(args: serde_json::Value) -> Result<T, ParamError> {
    let args = if args.is_null() { serde_json::Value::Object(Default::default()) } else { args };
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        // Unknown and missing fields are reported at the parent; the name is in the text.
        let param = if path == "." { between_backticks(&inner).unwrap_or_default().to_owned() } else { path };
        // A field with an empty name has no name to report.
        let param = if param.is_empty() { "arguments".to_owned() } else { param };
        ParamError { param, message: inner }
    })
}

fn between_backticks(s: &str) -> Option<&str> {
    let start = s.find('`')? + 1;
    let len = s[start..].find('`')?;
    Some(&s[start..start + len])
}

/// A path parameter as given: absolute, at most 4096 bytes, no NUL (`unmodal mcp` then
/// checks it against the allowed directories, `files.rs`); `wrong` says what was expected.
/// The one check of every path parameter (`save_to`, `save_dir`, `files`).
pub fn absolute_path(param: &str, given: &str, wrong: impl FnOnce() -> String) -> Result<PathBuf, ParamError> {
    if given.len() > 4096 || !is_absolute(given) || given.contains('\0') {
        return Err(bad(param, wrong()));
    }
    Ok(PathBuf::from(given))
}

/// Absolute as POSIX writes it (`/home/me`) or as Windows does (`C:\Users\me`, `C:/Users/me`,
/// `\\server\share`), whatever this build's system: the answer must not depend on where the
/// host runs (the allowed directories then decide, `files.rs`).
pub fn is_absolute(path: &str) -> bool {
    let b = path.as_bytes();
    let drive = b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    path.starts_with('/') || drive || path.starts_with("\\\\")
}

/// `save_to` as given.
fn absolute(to: &str) -> Result<PathBuf, ParamError> {
    absolute_path("save_to", to, || "an absolute path to a file, such as /home/me/work/page.pdf".into())
}

/// `save_dir` as given.
fn absolute_dir(dir: &str) -> Result<PathBuf, ParamError> {
    absolute_path("save_dir", dir, || "an absolute path to a directory, such as /home/me/work/downloads".into())
}

/// The most files one answer gives a page.
pub const MAX_FILES: usize = 32;

/// `files` as given: 1 to 32 absolute paths (`unmodal mcp` then checks each against the
/// allowed directories, `files.rs`).
fn paths(files: &[String]) -> Result<Vec<PathBuf>, ParamError> {
    if files.is_empty() || files.len() > MAX_FILES {
        return Err(bad("files", format!("1 to {MAX_FILES} absolute paths")));
    }
    files
        .iter()
        .map(|f| absolute_path("files", f, || format!("{f:?} is not an absolute path, such as /home/me/work/cv.pdf")))
        .collect()
}

pub fn check_tab(tab: Option<i64>) -> Result<(), ParamError> {
    match tab {
        Some(id) if id < 0 => Err(bad("tab_id", format!("{id} is not a tab id; tab ids are positive"))),
        _ => Ok(()),
    }
}

/// A field that belongs to one kind: its name, how `validate` finds it, its kind, what a
/// held one of the kind is called if the field may answer it (`None`: setups only), and
/// whether a clear refuses it too (a clear ignores the others, as it always has).
type OwnedField = (&'static str, fn(&InteractArgs) -> bool, DialogTypeArg, Option<&'static str>, bool);

/// Which kind owns each field of its own: this table gives every "only with" error, in this
/// order. `match.realm` is checked last, after a prompt's own refusal of `match.message_contains`.
const FIELDS: &[OwnedField] = &[
    ("username", |a| a.username.is_some(), DialogTypeArg::Auth, Some("auth challenge"), true),
    ("password", |a| a.password.is_some(), DialogTypeArg::Auth, Some("auth challenge"), true),
    ("permission", |a| a.permission.is_some(), DialogTypeArg::Permission, None, true),
    ("chooser", |a| a.chooser.is_some(), DialogTypeArg::DeviceChooser, None, true),
    ("match.scheme", |a| a.matcher.as_ref().is_some_and(|m| m.scheme.is_some()), DialogTypeArg::AppLink, None, false),
    ("match.rp_id", |a| a.matcher.as_ref().is_some_and(|m| m.rp_id.is_some()), DialogTypeArg::Passkey, None, false),
    ("keep", |a| a.keep.is_some(), DialogTypeArg::Passkey, None, false),
    ("save_to", |a| a.save_to.is_some(), DialogTypeArg::Print, Some("print"), false),
    ("files", |a| a.files.is_some(), DialogTypeArg::FileChooser, Some("file chooser"), false),
    (
        "match.accept_contains",
        |a| a.matcher.as_ref().is_some_and(|m| m.accept_contains.is_some()),
        DialogTypeArg::FileChooser,
        None,
        false,
    ),
    ("save_dir", |a| a.save_dir.is_some(), DialogTypeArg::Download, Some("download"), false),
    ("match.realm", |a| a.matcher.as_ref().is_some_and(|m| m.realm.is_some()), DialogTypeArg::Auth, None, false),
];

const REALM: &str = "match.realm";

impl InteractArgs {
    pub fn validate(&self) -> Result<DialogCall, ParamError> {
        let tab = self.tab_id;
        check_tab(tab)?;
        if let Some(t) = &self.text
            && t.encode_utf16().count() > MAX_TEXT_UNITS
        {
            return Err(bad("text", format!("at most {MAX_TEXT_UNITS} characters")));
        }
        let setup = self.setup.unwrap_or(false);
        let clear = self.clear == Some(true);
        if self.dialog_id.is_some() && (setup || clear || self.status == Some(true)) {
            return Err(bad("dialog_id", "only when answering a pending dialog (without setup, clear or status)"));
        }
        if self.status == Some(true) {
            if setup || clear {
                return Err(bad("status", "status: true only reads; send it without setup or clear"));
            }
            return Ok(DialogCall::Status { tab });
        }
        for field in FIELDS.iter().filter(|f| f.0 != REALM) {
            self.owned(field, setup)?;
        }
        if clear {
            return Ok(DialogCall::Clear { tab, what: self.dialog_type.unwrap_or(DialogTypeArg::All) });
        }
        if setup {
            let Some(kind) = self.dialog_type else {
                self.realm_owned(setup)?;
                return Err(bad(
                    "dialog_type",
                    "required with setup: true; one of alert, confirm, prompt, beforeunload, auth, permission, \
device_chooser, app_link, passkey, print, sign_in, payment, storage_access, eye_dropper, file_chooser, download, \
all",
                ));
            };
            let rule = self.rule(kind)?;
            return Ok(DialogCall::Setup { tab, once: self.once.unwrap_or(true), rule });
        }
        self.realm_owned(setup)?;
        if self.dialog_type.is_some() {
            return Err(bad("dialog_type", "only with setup: true; to answer the pending dialog, leave it out"));
        }
        self.answer()
    }

    /// A field of one kind's own, refused unless the call is that kind's (`FIELDS`).
    fn owned(&self, &(name, given, kind, held, in_clear): &OwnedField, setup: bool) -> Result<(), ParamError> {
        let clear = self.clear == Some(true);
        if !given(self) || (clear && !in_clear) {
            return Ok(());
        }
        let ours = self.dialog_type == Some(kind);
        let kind = kind.as_str();
        match held {
            None if !(setup && ours) => Err(bad(name, format!("only with setup: true and dialog_type \"{kind}\""))),
            Some(held) if clear || (setup && !ours) => {
                Err(bad(name, format!("only with dialog_type \"{kind}\" in a setup, or when answering a held {held}")))
            }
            _ => Ok(()),
        }
    }

    fn realm_owned(&self, setup: bool) -> Result<(), ParamError> {
        FIELDS.iter().filter(|f| f.0 == REALM).try_for_each(|f| self.owned(f, setup))
    }

    /// The rule a setup of `kind` makes, from the kind's own parameters.
    fn rule(&self, kind: DialogTypeArg) -> Result<RuleSpec, ParamError> {
        use DialogTypeArg as D;
        match kind {
            D::Alert | D::Confirm | D::Prompt | D::Beforeunload | D::All => self.dialog_rule(kind),
            D::Auth => self.auth_rule(),
            D::Permission => self.permission_rule(),
            D::DeviceChooser => self.chooser_rule(),
            D::AppLink => self.app_link_rule(),
            D::Passkey => self.passkey_rule(),
            D::Print => self.print_rule(),
            D::SignIn => self.held_rule(HeldCall::SignIn),
            D::Payment => self.held_rule(HeldCall::Payment),
            D::StorageAccess => self.held_rule(HeldCall::StorageAccess),
            D::EyeDropper => self.held_rule(HeldCall::EyeDropper),
            D::FileChooser => self.file_chooser_rule(),
            D::Download => self.download_rule(),
        }
    }

    /// The answer to a held dialog or prompt (no setup, clear or status).
    fn answer(&self) -> Result<DialogCall, ParamError> {
        let (tab, dialog_id) = (self.tab_id, self.dialog_id);
        if self.username.is_some() || self.password.is_some() {
            if self.accept == Some(false) {
                return Err(bad("password", "accept: false cancels the challenge; send it without credentials"));
            }
            if self.text.is_some() {
                return Err(bad("text", "an auth challenge takes username and password, not text"));
            }
            let credentials = self.credentials()?;
            return Ok(DialogCall::Carrying { tab, dialog_id, with: Carry::Login(credentials) });
        }
        if let Some(dir) = &self.save_dir {
            if self.accept == Some(false) || self.text.is_some() {
                return Err(bad("save_dir", "saves a held download there: only with accept: true, without text"));
            }
            return Ok(DialogCall::Carrying { tab, dialog_id, with: Carry::SaveDir(absolute_dir(dir)?) });
        }
        if let Some(files) = &self.files {
            if self.accept == Some(false) || self.text.is_some() {
                return Err(bad(
                    "files",
                    "gives a held file chooser these files: only with accept: true, without text",
                ));
            }
            return Ok(DialogCall::Carrying { tab, dialog_id, with: Carry::Files(paths(files)?) });
        }
        if let Some(to) = &self.save_to {
            if self.accept == Some(false) || self.text.is_some() {
                return Err(bad("save_to", "prints a held print to this file: only with accept: true, without text"));
            }
            return Ok(DialogCall::Carrying { tab, dialog_id, with: Carry::SaveTo(absolute(to)?) });
        }
        if self.once.is_some() {
            return Err(bad("once", "only with setup: true"));
        }
        if self.matcher.is_some() {
            return Err(bad("match", "only with setup: true"));
        }
        Ok(DialogCall::Respond { tab, accept: self.accept.unwrap_or(true), text: self.text.clone(), dialog_id })
    }

    /// Both halves of the credentials, within their limits.
    fn credentials(&self) -> Result<Credentials, ParamError> {
        let (Some(username), Some(password)) = (&self.username, &self.password) else {
            let missing = if self.username.is_none() { "username" } else { "password" };
            return Err(bad(missing, "HTTP auth needs both username and password"));
        };
        if username.encode_utf16().count() > MAX_USERNAME_UNITS {
            return Err(bad("username", format!("at most {MAX_USERNAME_UNITS} characters")));
        }
        if password.units() > MAX_PASSWORD_UNITS {
            return Err(bad("password", format!("at most {MAX_PASSWORD_UNITS} characters")));
        }
        Ok(Credentials { username: username.clone(), password: password.clone() })
    }

    /// A match's texts, each non-empty and within its limit (`what`: the dialogs it matches).
    fn match_texts(params: &[(&str, &Option<String>)], what: &str) -> Result<(), ParamError> {
        for &(param, v) in params {
            match v {
                Some(t) if t.is_empty() => {
                    return Err(bad(param, format!("must not be empty; leave it out to match every {what}")));
                }
                Some(t) if t.encode_utf16().count() > MAX_MATCH_UNITS => {
                    return Err(bad(param, format!("at most {MAX_MATCH_UNITS} characters")));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// alert, confirm, prompt, beforeunload or all: the page's engine applies the rule.
    fn dialog_rule(&self, kind: DialogTypeArg) -> Result<RuleSpec, ParamError> {
        self.realm_owned(true)?;
        let matcher = self.matcher.clone().unwrap_or_default();
        Self::match_texts(
            &[("match.message_contains", &matcher.message_contains), ("match.url_contains", &matcher.url_contains)],
            "dialog",
        )?;
        Ok(RuleSpec::Dialog {
            target: kind.target(),
            accept: self.accept.unwrap_or(true),
            text: self.text.clone(),
            matcher,
        })
    }

    /// A browser prompt's match: `url_contains` only (it has no message, no realm).
    fn url_only_match(&self, what: &str, name_it: &str) -> Result<MatchArg, ParamError> {
        let matcher = self.matcher.clone().unwrap_or_default();
        if matcher.message_contains.is_some() {
            return Err(bad(
                "match.message_contains",
                format!("{what} has no message; match url_contains, or {name_it}"),
            ));
        }
        self.realm_owned(true)?;
        Self::match_texts(&[("match.url_contains", &matcher.url_contains)], "prompt")?;
        Ok(matcher)
    }

    fn print_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a print", "leave match out")?;
        let accept = self.accept.unwrap_or(true);
        if self.save_to.is_some() && !accept {
            return Err(bad(
                "save_to",
                "where an accepting print rule writes its PDF; leave it out with accept: false",
            ));
        }
        if self.text.is_some() {
            return Err(bad("text", "a print rule takes no text"));
        }
        let save_to = self.save_to.as_deref().map(absolute).transpose()?;
        Ok(RuleSpec::Print { accept, save_to, matcher })
    }

    fn download_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a download", "match url_contains (the download's URL)")?;
        if self.text.is_some() {
            return Err(bad(
                "text",
                "a download rule saves (accept: true) or cancels (accept: false); it takes no text",
            ));
        }
        let accept = self.accept.unwrap_or(true);
        if self.save_dir.is_some() && !accept {
            return Err(bad("save_dir", "where an accepting download rule saves; leave it out with accept: false"));
        }
        let save_dir = self.save_dir.as_deref().map(absolute_dir).transpose()?;
        Ok(RuleSpec::Download { accept, save_dir, matcher })
    }

    fn file_chooser_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a file chooser", "match accept_contains")?;
        if matcher.accept_contains.as_ref().is_some_and(|a| a.is_empty() || a.len() > 256) {
            return Err(bad("match.accept_contains", "a text such as \"pdf\" or \"image/\", 1 to 256 characters"));
        }
        if self.text.is_some() {
            return Err(bad("text", "a file chooser rule gives files (files) or cancels (accept: false); no text"));
        }
        let files = match (&self.files, self.accept.unwrap_or(true)) {
            (Some(f), true) => paths(f)?,
            (None, false) => Vec::new(),
            (Some(_), false) => return Err(bad("files", "accept: false cancels the chooser; leave files out")),
            (None, true) => {
                return Err(bad(
                    "files",
                    "the files the page gets, e.g. [\"/home/me/work/cv.pdf\"]; or accept: false to cancel choosers",
                ));
            }
        };
        Ok(RuleSpec::FileChooser { files, matcher })
    }

    fn held_rule(&self, kind: HeldCall) -> Result<RuleSpec, ParamError> {
        let name = kind.as_str();
        let a = article(name);
        let matcher = self.url_only_match(&format!("{a} {name} call"), "leave match out")?;
        if self.text.is_some() {
            return Err(bad("text", format!("{a} {name} rule takes no text")));
        }
        Ok(RuleSpec::Held { kind, accept: self.accept.unwrap_or(true), matcher })
    }

    fn passkey_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a passkey request", "name the relying party (match.rp_id)")?;
        if matcher.rp_id.as_ref().is_some_and(|r| r.is_empty() || r.len() > 256) {
            return Err(bad("match.rp_id", "a relying party id such as \"example.com\", at most 256 characters"));
        }
        let accept = self.accept.unwrap_or(true);
        let keep = self.keep.unwrap_or(false);
        if keep && !accept {
            return Err(bad("keep", "keeps the passkeys an accepting rule makes; leave it out with accept: false"));
        }
        if self.text.is_some() {
            return Err(bad("text", "a passkey rule takes no text"));
        }
        Ok(RuleSpec::Passkey { accept, keep, matcher })
    }

    fn app_link_rule(&self) -> Result<RuleSpec, ParamError> {
        let mut matcher = self.url_only_match("an app link", "name the scheme")?;
        if let Some(scheme) = &matcher.scheme {
            let s = scheme.strip_suffix(':').unwrap_or(scheme).to_ascii_lowercase();
            let ok = s.len() <= 64
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && s.chars().all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
            if !ok {
                return Err(bad(
                    "match.scheme",
                    "a URL scheme such as \"mailto\" or \"web+app\" (letters, digits, + . -)",
                ));
            }
            matcher.scheme = Some(s);
        }
        if self.text.is_some() {
            return Err(bad(
                "text",
                "an app link rule opens (accept: true) or cancels (accept: false); it takes no text",
            ));
        }
        Ok(RuleSpec::AppLink { accept: self.accept.unwrap_or(true), matcher })
    }

    fn chooser_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a device chooser", "name the chooser")?;
        if self.accept == Some(true) {
            return Err(bad(
                "accept",
                "a device chooser can only be cancelled (accept: false): Chromium gives extensions no way to list or \
pick a device (its DeviceAccess protocol domain is refused to them)",
            ));
        }
        if self.text.is_some() {
            return Err(bad("text", "a chooser rule cancels the chooser; it takes no text"));
        }
        Ok(RuleSpec::DeviceChooser { chooser: self.chooser, matcher })
    }

    fn permission_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.url_only_match("a permission prompt", "name the permission")?;
        if self.text.is_some() {
            return Err(bad(
                "text",
                "a permission rule grants (accept: true) or denies (accept: false); it takes no text",
            ));
        }
        if self.permission == Some(PermissionName::AutomaticDownloads) && !matcher.is_empty() {
            return Err(bad(
                "match",
                "an automatic-downloads rule is set for the tab's site before the page starts its downloads, and \
follows the tab; it takes no match",
            ));
        }
        Ok(RuleSpec::Permission { accept: self.accept.unwrap_or(true), permission: self.permission, matcher })
    }

    fn auth_rule(&self) -> Result<RuleSpec, ParamError> {
        let matcher = self.matcher.clone().unwrap_or_default();
        if matcher.message_contains.is_some() {
            return Err(bad("match.message_contains", "an auth challenge has no message; match url_contains or realm"));
        }
        Self::match_texts(
            &[("match.url_contains", &matcher.url_contains), ("match.realm", &matcher.realm)],
            "challenge",
        )?;
        if self.text.is_some() {
            return Err(bad("text", "an auth rule takes username and password, not text"));
        }
        let credentials = match self.accept.unwrap_or(true) {
            true => Some(self.credentials()?),
            false if self.username.is_some() || self.password.is_some() => {
                return Err(bad("password", "a rule with accept: false cancels challenges; it takes no credentials"));
            }
            false => None,
        };
        Ok(RuleSpec::Auth { credentials, matcher })
    }
}

// ---- Secrets ----
// Credentials the agent hands over for HTTP auth. A `Secret` never shows in `Debug`, in an
// error message or in anything the host stores: it is serialized only where it must travel
// (the agent's call to the host's socket, the answer to the browser), and its memory is
// wiped when it is dropped (`zeroize`). Here because tool parameters carry it.

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    pub fn new(s: String) -> Self {
        Self(Zeroizing::new(s))
    }

    /// The secret itself, for the one place that must send it on.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Length in UTF-16 code units (what the browser counts).
    pub fn units(&self) -> usize {
        self.0.encode_utf16().count()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([withheld])")
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Secret;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Secret, E> {
                Ok(Secret::new(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Secret, E> {
                Ok(Secret::new(v))
            }
            // Anything else is refused without repeating the value (serde's own message
            // would quote a number or a boolean given as a password).
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Secret, E> {
                Err(E::custom("expected a string (the value is not repeated here)"))
            }
        }
        d.deserialize_any(V)
    }
}

impl JsonSchema for Secret {
    fn schema_name() -> Cow<'static, str> {
        "Secret".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use unmodal_engine::DialogKind;

    #[test]
    fn never_shown_but_sent_whole() {
        let s: Secret = serde_json::from_str("\"hunter2\"").unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"hunter2\"");
        let err = serde_json::from_str::<Secret>("918273645").unwrap_err().to_string();
        assert!(!err.contains("918273645"), "{err}");
        let err = serde_json::from_str::<Secret>("true").unwrap_err().to_string();
        assert!(!err.contains("true"), "{err}");
    }

    fn call(v: serde_json::Value) -> Result<DialogCall, ParamError> {
        serde_json::from_value::<InteractArgs>(v).unwrap().validate()
    }

    #[test]
    fn spec_requests_validate() {
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","accept":true,"once":true})),
            Ok(DialogCall::Setup {
                tab: None,
                once: true,
                rule: RuleSpec::Dialog {
                    target: RuleTarget::One(DialogKind::Confirm),
                    accept: true,
                    text: None,
                    matcher: MatchArg::default(),
                },
            })
        );
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"all","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::All })
        );
        assert_eq!(call(json!({"action":"handle_dialog","status":true})), Ok(DialogCall::Status { tab: None }));
        assert_eq!(
            call(json!({"action":"handle_dialog","accept":true,"text":"x","tab_id":4})),
            Ok(DialogCall::Respond { tab: Some(4), accept: true, text: Some("x".into()), dialog_id: None })
        );
    }

    #[test]
    fn permission_calls_validate_and_name_what_is_wrong() {
        let c = call(
            json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","permission":"clipboard-read",
            "accept":false,"once":false,"match":{"url_contains":"/app"}}),
        )
        .unwrap();
        let DialogCall::Setup {
            once: false, rule: RuleSpec::Permission { accept: false, permission, matcher }, ..
        } = c
        else {
            panic!("{c:?}")
        };
        assert_eq!((permission, matcher.url_contains.as_deref()), (Some(PermissionName::ClipboardRead), Some("/app")));
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission"})),
            Ok(DialogCall::Setup { once: true, rule: RuleSpec::Permission { accept: true, permission: None, .. }, .. })
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::Permission })
        );
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","permission":"camera"})),
            "permission"
        );
        assert_eq!(param(json!({"action":"handle_dialog","accept":true,"permission":"camera"})), "permission");
        assert_eq!(param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","text":"x"})), "text");
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"realm":"x"}})),
            "match.realm"
        );
        assert!(parse::<InteractArgs>(json!({"action":"handle_dialog","permission":"usb"})).is_err(), "unknown names");
        for p in PermissionName::ALL {
            assert_eq!(PermissionName::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
    }

    #[test]
    fn chooser_calls_validate_and_refuse_accept() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","chooser":"serial",
            "once":false,"match":{"url_contains":"/flash"}}))
        .unwrap();
        let DialogCall::Setup {
            once: false,
            rule: RuleSpec::DeviceChooser { chooser: Some(ChooserApi::Serial), matcher },
            ..
        } = c
        else {
            panic!("{c:?}")
        };
        assert_eq!(matcher.url_contains.as_deref(), Some("/flash"));
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","accept":false})),
            Ok(DialogCall::Setup { once: true, rule: RuleSpec::DeviceChooser { chooser: None, .. }, .. })
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::DeviceChooser })
        );
        let err = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","accept":true}))
            .unwrap_err();
        assert_eq!(err.param, "accept");
        assert!(err.message.contains("can only be cancelled"), "{}", err.message);
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","chooser":"usb"})),
            "chooser"
        );
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"device_chooser","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert!(parse::<InteractArgs>(json!({"action":"handle_dialog","chooser":"camera"})).is_err(), "unknown APIs");
        for a in ChooserApi::ALL {
            assert_eq!(ChooserApi::parse(a.as_str()), Some(a));
            assert_eq!(serde_json::to_value(a).unwrap(), a.as_str());
        }
        assert_eq!(serde_json::to_value(DialogTypeArg::DeviceChooser).unwrap(), "device_chooser");
    }

    #[test]
    fn app_link_calls_validate_their_scheme() {
        let c =
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"scheme":"MailTo:"}}))
                .unwrap();
        let DialogCall::Setup { rule: RuleSpec::AppLink { accept: true, matcher }, .. } = c else { panic!("{c:?}") };
        assert_eq!(matcher.scheme.as_deref(), Some("mailto"), "stored lower case, without the colon");
        let param = |v| call(v).unwrap_err().param;
        for bad in ["", "1x", "a b", "a/b"] {
            let v = json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"scheme":bad}});
            assert_eq!(param(v), "match.scheme", "{bad:?}");
        }
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"permission","match":{"scheme":"tel"}})),
            "match.scheme"
        );
        assert_eq!(param(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","text":"x"})), "text");
        assert_eq!(
            param(
                json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","match":{"message_contains":"x"}})
            ),
            "match.message_contains"
        );
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"app_link","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::AppLink })
        );
    }

    #[test]
    fn auth_calls_validate_and_name_what_is_wrong() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"ada",
            "password":"pw","once":false,"match":{"realm":"Staff","url_contains":"/admin"}}))
        .unwrap();
        let DialogCall::Setup { once: false, rule: RuleSpec::Auth { credentials: Some(c), matcher }, .. } = c else {
            panic!("{c:?}")
        };
        assert_eq!((c.username.as_str(), c.password.expose()), ("ada", "pw"));
        assert_eq!(matcher.realm.as_deref(), Some("Staff"));
        assert!(!format!("{c:?}").contains("pw\""), "Debug withholds the password");
        assert!(matches!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","accept":false})),
            Ok(DialogCall::Setup { rule: RuleSpec::Auth { credentials: None, .. }, .. })
        ));
        assert_eq!(
            call(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","clear":true})),
            Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::Auth })
        );
        assert!(matches!(
            call(json!({"action":"handle_dialog","dialog_id":4,"username":"ada","password":"pw"})),
            Ok(DialogCall::Carrying { dialog_id: Some(4), with: Carry::Login(_), .. })
        ));
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"ada"})),
            "password"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","password":"pw"})),
            "username"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","username":"a","password":"b"})),
            "username"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"auth","username":"a","password":"b",
                "match":{"message_contains":"x"}})),
            "match.message_contains"
        );
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"confirm","match":{"realm":"x"}})),
            "match.realm"
        );
        assert_eq!(param(json!({"action":"handle_dialog","accept":false,"username":"a","password":"b"})), "password");
        let long = "x".repeat(MAX_PASSWORD_UNITS + 1);
        assert_eq!(param(json!({"action":"handle_dialog","username":"a","password":long})), "password");
        let err = parse::<InteractArgs>(json!({"action":"handle_dialog","password":918273645})).unwrap_err();
        assert_eq!(err.param, "password");
        assert!(!err.message.contains("918273645"), "{}", err.message);
    }

    #[test]
    fn a_kinds_foreign_match_fields_are_refused_by_the_table_first() {
        // The builders once refused match.scheme and match.rp_id themselves ("not with
        // dialog_type ..."), and a clear's save_to, files and save_dir; `FIELDS` refuses or
        // ignores them before any builder runs, so those checks could never answer.
        let err = |v| call(v).unwrap_err();
        for kind in
            ["print", "download", "file_chooser", "sign_in", "payment", "storage_access", "eye_dropper", "passkey"]
        {
            let e = err(json!({"action":"handle_dialog","setup":true,"dialog_type":kind,"match":{"scheme":"tel"}}));
            assert_eq!(e, bad("match.scheme", "only with setup: true and dialog_type \"app_link\""), "{kind}");
            if kind != "passkey" {
                let e = err(json!({"action":"handle_dialog","setup":true,"dialog_type":kind,"match":{"rp_id":"a.b"}}));
                assert_eq!(e, bad("match.rp_id", "only with setup: true and dialog_type \"passkey\""), "{kind}");
            }
        }
        for (field, value) in [("save_to", json!("/a.pdf")), ("files", json!(["/a"])), ("save_dir", json!("/d"))] {
            let mut v = json!({"action":"handle_dialog","clear":true});
            v[field] = value;
            assert_eq!(call(v), Ok(DialogCall::Clear { tab: None, what: DialogTypeArg::All }), "{field}");
        }
    }

    #[test]
    fn defaults_are_accept_and_once() {
        let c = call(json!({"action":"handle_dialog","setup":true,"dialog_type":"prompt"})).unwrap();
        assert!(matches!(c, DialogCall::Setup { once: true, rule: RuleSpec::Dialog { accept: true, .. }, .. }));
    }

    #[test]
    fn errors_name_the_parameter() {
        let param = |v| call(v).unwrap_err().param;
        assert_eq!(param(json!({"action":"handle_dialog","setup":true})), "dialog_type");
        assert_eq!(param(json!({"action":"handle_dialog","dialog_type":"alert"})), "dialog_type");
        assert_eq!(param(json!({"action":"handle_dialog","once":false})), "once");
        assert_eq!(param(json!({"action":"handle_dialog","tab_id":-3})), "tab_id");
        assert_eq!(param(json!({"action":"handle_dialog","status":true,"setup":true})), "status");
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"alert","dialog_id":3})),
            "dialog_id"
        );
        let long = "x".repeat(MAX_TEXT_UNITS + 1);
        assert_eq!(
            param(json!({"action":"handle_dialog","setup":true,"dialog_type":"prompt","text":long.clone()})),
            "text"
        );
    }

    #[test]
    fn dialog_policy_validates_its_range() {
        let v = |j| parse::<ConfigureArgs>(j).map_err(|e| e.param).and_then(|a| a.validate().map_err(|e| e.param));
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond"})),
            Ok(PolicyCall { tab: None, policy: Policy::MustRespond, timeout_s: 10 })
        );
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"auto_accept","timeout_s":600,"tab_id":2})),
            Ok(PolicyCall { tab: Some(2), policy: Policy::AutoAccept, timeout_s: 600 })
        );
        assert_eq!(v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":0})), Err("timeout_s".into()));
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":601})),
            Err("timeout_s".into())
        );
        assert_eq!(
            v(json!({"action":"dialog_policy","policy":"must_respond","timeout_s":-1})),
            Err("timeout_s".into())
        );
        assert_eq!(v(json!({"action":"dialog_policy","policy":"hold"})), Err("policy".into()));
        assert_eq!(v(json!({"action":"dialog_policy"})), Err("policy".into()));
        assert_eq!(v(json!({"action":"policy","policy":"auto"})), Err("action".into()));
    }

    #[test]
    fn api_is_a_leaf() {
        // The host and the MCP server depend on these types, never the other way round.
        let src = include_str!("api.rs");
        let (code, _tests) = src.split_at(src.find("#[cfg(test)]").unwrap());
        assert!(!code.contains(concat!("crate", "::")) && !code.contains(concat!("super", "::")));
    }

    #[test]
    fn the_schema_tells_agents_the_limits_and_defaults() {
        let s = serde_json::to_value(schemars::schema_for!(ConfigureArgs)).unwrap();
        let t = &s["properties"]["timeout_s"];
        assert_eq!((t["minimum"].as_u64(), t["maximum"].as_u64()), (Some(1), Some(u64::from(MAX_TIMEOUT_S))));
        assert_eq!(t["default"], json!(DEFAULT_TIMEOUT_S));
        assert!(s.to_string().contains("must_respond"), "{s}");
        let s = serde_json::to_value(schemars::schema_for!(InteractArgs)).unwrap();
        assert_eq!(s["properties"]["text"]["maxLength"].as_u64(), Some(MAX_TEXT_UNITS as u64));
        assert_eq!(s["properties"]["once"]["default"], json!(true));
        let m = s.to_string();
        assert!(m.contains(&format!("\"maxLength\":{MAX_MATCH_UNITS}")), "{m}");
    }

    #[test]
    fn parse_names_the_wrong_parameter() {
        let p = |v| parse::<InteractArgs>(v).unwrap_err();
        assert_eq!(p(json!({"action":"handle_dialog","dialog_type":"modal"})).param, "dialog_type");
        assert_eq!(p(json!({"action":"handle_dialog","accept":"yes"})).param, "accept");
        assert_eq!(p(json!({"action":"handle_dialog","colour":1})).param, "colour");
        assert_eq!(p(json!({"action":"handle_dialog","":1})).param, "arguments", "a nameless field");
        assert_eq!(p(json!({"accept":true})).param, "action");
        assert_eq!(p(json!({"action":"click"})).param, "action");
        assert!(parse::<InteractArgs>(json!({"action":"handle_dialog"})).is_ok());
        assert_eq!(parse::<ObserveArgs>(serde_json::Value::Null).unwrap_err().param, "what");
    }

    /// Characterisation: a broad table of `interact` inputs through `validate`, every result
    /// (the `DialogCall`, or the error's parameter and message) recorded in
    /// `api_validate.snap` (insta: `INSTA_UPDATE=always` rewrites it; read the diff).
    #[test]
    fn validate_matches_its_snapshot() {
        use serde_json::{Map, Value};
        let long = |n: usize| Value::from("x".repeat(n));
        let s = |v: &str| Value::from(v);
        // (label, fields); a key "match.x" goes into the `match` object.
        let one = |k: &'static str, v: Value| vec![(k, v)];
        let singles: Vec<(String, Vec<(&'static str, Value)>)> = vec![
            ("-".into(), vec![]),
            ("accept=true".into(), one("accept", true.into())),
            ("accept=false".into(), one("accept", false.into())),
            ("text=x".into(), one("text", s("x"))),
            ("text=long".into(), one("text", long(MAX_TEXT_UNITS + 1))),
            ("tab_id=3".into(), one("tab_id", 3.into())),
            ("tab_id=-1".into(), one("tab_id", (-1).into())),
            ("once=false".into(), one("once", false.into())),
            ("once=true".into(), one("once", true.into())),
            ("dialog_id=4".into(), one("dialog_id", 4.into())),
            ("match={}".into(), one("match", Value::Object(Map::new()))),
            ("match.message_contains=m".into(), one("match.message_contains", s("m"))),
            ("match.message_contains=''".into(), one("match.message_contains", s(""))),
            ("match.message_contains=long".into(), one("match.message_contains", long(MAX_MATCH_UNITS + 1))),
            ("match.url_contains=u".into(), one("match.url_contains", s("u"))),
            ("match.url_contains=''".into(), one("match.url_contains", s(""))),
            ("match.url_contains=long".into(), one("match.url_contains", long(MAX_MATCH_UNITS + 1))),
            ("match.realm=R".into(), one("match.realm", s("R"))),
            ("match.realm=''".into(), one("match.realm", s(""))),
            ("match.realm=long".into(), one("match.realm", long(MAX_MATCH_UNITS + 1))),
            ("match.scheme=MailTo:".into(), one("match.scheme", s("MailTo:"))),
            ("match.scheme=1x".into(), one("match.scheme", s("1x"))),
            ("match.scheme=''".into(), one("match.scheme", s(""))),
            ("match.rp_id=example.com".into(), one("match.rp_id", s("example.com"))),
            ("match.rp_id=''".into(), one("match.rp_id", s(""))),
            ("match.rp_id=long".into(), one("match.rp_id", long(257))),
            ("match.accept_contains=pdf".into(), one("match.accept_contains", s("pdf"))),
            ("match.accept_contains=''".into(), one("match.accept_contains", s(""))),
            ("match.accept_contains=long".into(), one("match.accept_contains", long(257))),
            ("username=ada".into(), one("username", s("ada"))),
            ("password=pw".into(), one("password", s("pw"))),
            ("username=ada password=pw".into(), vec![("username", s("ada")), ("password", s("pw"))]),
            (
                "username=long password=pw".into(),
                vec![("username", long(MAX_USERNAME_UNITS + 1)), ("password", s("pw"))],
            ),
            (
                "username=ada password=long".into(),
                vec![("username", s("ada")), ("password", long(MAX_PASSWORD_UNITS + 1))],
            ),
            ("permission=camera".into(), one("permission", s("camera"))),
            ("permission=automatic-downloads".into(), one("permission", s("automatic-downloads"))),
            (
                "permission=automatic-downloads match.url_contains=u".into(),
                vec![("permission", s("automatic-downloads")), ("match.url_contains", s("u"))],
            ),
            ("chooser=usb".into(), one("chooser", s("usb"))),
            ("keep=true".into(), one("keep", true.into())),
            ("keep=false".into(), one("keep", false.into())),
            ("save_to=/tmp/a.pdf".into(), one("save_to", s("/tmp/a.pdf"))),
            ("save_to=rel.pdf".into(), one("save_to", s("rel.pdf"))),
            ("files=[/a]".into(), one("files", json!(["/a"]))),
            ("files=[]".into(), one("files", json!([]))),
            ("files=[rel]".into(), one("files", json!(["rel"]))),
            ("files=33".into(), one("files", json!(vec!["/a"; MAX_FILES + 1]))),
            ("save_dir=/d".into(), one("save_dir", s("/d"))),
            ("save_dir=d".into(), one("save_dir", s("d"))),
        ];
        // Fields whose pairs are tried too (which error wins when two are wrong).
        let pairable = [
            "accept=true",
            "accept=false",
            "text=x",
            "once=false",
            "dialog_id=4",
            "match.message_contains=m",
            "match.url_contains=u",
            "match.realm=R",
            "match.scheme=MailTo:",
            "match.rp_id=example.com",
            "match.accept_contains=pdf",
            "username=ada",
            "password=pw",
            "username=ada password=pw",
            "permission=camera",
            "chooser=usb",
            "keep=true",
            "save_to=/tmp/a.pdf",
            "files=[/a]",
            "save_dir=/d",
        ];
        let find = |l: &str| singles.iter().find(|(s, _)| s == l).unwrap().1.clone();
        let mut extras = singles.clone();
        for (i, a) in pairable.iter().enumerate() {
            for b in &pairable[i + 1..] {
                extras.push((format!("{a} {b}"), [find(a), find(b)].concat()));
            }
        }
        let modes: [(&str, &[(&str, bool)]); 5] = [
            ("answer", &[]),
            ("setup", &[("setup", true)]),
            ("setup+clear", &[("setup", true), ("clear", true)]),
            ("clear", &[("clear", true)]),
            ("status", &[("status", true)]),
        ];
        let kinds = [
            None,
            Some("alert"),
            Some("confirm"),
            Some("prompt"),
            Some("beforeunload"),
            Some("auth"),
            Some("permission"),
            Some("device_chooser"),
            Some("app_link"),
            Some("passkey"),
            Some("print"),
            Some("sign_in"),
            Some("payment"),
            Some("storage_access"),
            Some("eye_dropper"),
            Some("file_chooser"),
            Some("download"),
            Some("all"),
        ];
        let default_match = format!("{:?}", MatchArg::default());
        // The snapshot: the columns (the extra fields), the results (each once), then a row per
        // mode and dialog_type with the result of each column (`.`: that case is not tried).
        let mut results: Vec<String> = Vec::new();
        let mut rows = String::new();
        for (mode, flags) in modes {
            for kind in kinds {
                rows += &format!("{mode} {}:", kind.unwrap_or("-"));
                for (label, fields) in &extras {
                    // Pairs only where they decide most: a setup, or an answer.
                    let pair = !singles.iter().any(|(s, _)| s == label);
                    if pair && !matches!(mode, "setup" | "answer") {
                        rows += " .";
                        continue;
                    }
                    let mut v = Map::new();
                    v.insert("action".into(), s("handle_dialog"));
                    for (k, b) in flags {
                        v.insert((*k).into(), (*b).into());
                    }
                    if let Some(k) = kind {
                        v.insert("dialog_type".into(), s(k));
                    }
                    for (k, x) in fields {
                        match k.strip_prefix("match.") {
                            Some(m) => {
                                let o = v.entry("match").or_insert_with(|| Value::Object(Map::new()));
                                o.as_object_mut().unwrap().insert(m.into(), x.clone());
                            }
                            None => {
                                v.insert((*k).into(), x.clone());
                            }
                        }
                    }
                    let result = match parse::<InteractArgs>(Value::Object(v)) {
                        Err(e) => format!("parse error {}: {}", e.param, e.message),
                        Ok(a) => match a.validate() {
                            Ok(c) => format!("{c:?}").replace(&default_match, "MatchArg::default()"),
                            Err(e) => format!("Err {}: {}", e.param, e.message),
                        },
                    };
                    let id = results.iter().position(|r| *r == result).unwrap_or_else(|| {
                        results.push(result);
                        results.len() - 1
                    });
                    rows += &format!(" {id}");
                }
                rows += "\n";
            }
        }
        let mut out = String::from("# columns\n");
        for (i, (label, _)) in extras.iter().enumerate() {
            out += &format!("{i} {label}\n");
        }
        out += "# results\n";
        for (i, r) in results.iter().enumerate() {
            out += &format!("{i} {r}\n");
        }
        out += "# rows\n";
        out += &rows;
        insta::with_settings!({snapshot_path => ".", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!("api_validate", out);
        });
    }
}
