//! What can hold a tab up: a page's JavaScript dialog (the engine's `DialogKind`, decided in
//! the page) or a prompt the browser shows on its own, which the page hook never sees and
//! the host decides (`host/kinds/auth.rs`: HTTP auth; `host/kinds/permission.rs`: permission prompts;
//! `host/kinds/device_chooser.rs`: device choosers). One name space, so records, `dialogs_blocking` and
//! `dialog_type` speak of all of them alike. The engine's wire codes stay as they are: pages never hear
//! of browser prompts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unmodal_engine::DialogKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Alert,
    Confirm,
    Prompt,
    BeforeUnload,
    /// An HTTP authentication challenge (401 or 407, Basic or Digest).
    Auth,
    /// A permission prompt (`host/kinds/permission.rs`): the page hook holds the request, the
    /// extension sets the browser's own decision.
    Permission,
    /// A device chooser (`host/kinds/device_chooser.rs`): the page hook saw one open; it can only be
    /// cancelled.
    #[serde(rename = "device_chooser")]
    DeviceChooser,
    /// A navigation to a scheme the OS handles (`host/kinds/app_link.rs`): the page hook cancelled
    /// it; it can be opened.
    #[serde(rename = "app_link")]
    AppLink,
    /// A WebAuthn request (`host/kinds/passkey/`) the page hook holds before the browser sees it.
    Passkey,
    /// A `window.print()` (`host/kinds/print.rs`), answered in the page as a person's cancel.
    Print,
    /// A FedCM sign-in (`host/kinds/held_in_page.rs`), `navigator.credentials.get({identity})`, held by
    /// the page hook before the browser sees it.
    #[serde(rename = "sign_in")]
    SignIn,
    /// A Payment Request's `show()` (`host/kinds/held_in_page.rs`), held by the page hook.
    Payment,
    /// `document.requestStorageAccess()` (`host/kinds/held_in_page.rs`), held by the page hook.
    #[serde(rename = "storage_access")]
    StorageAccess,
    /// `EyeDropper.open()` (`host/kinds/held_in_page.rs`): the browser opened its eye dropper,
    /// and the page hook asks before the page's promise settles.
    #[serde(rename = "eye_dropper")]
    EyeDropper,
    /// A file chooser (`host/kinds/file_chooser.rs`), intercepted through the tab's debugger.
    #[serde(rename = "file_chooser")]
    FileChooser,
    /// A download a page started (`host/kinds/download.rs`), seen by `chrome.downloads`.
    Download,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self.dialog() {
            Some(k) => k.as_str(),
            None if self == Self::Permission => "permission",
            None if self == Self::DeviceChooser => "device_chooser",
            None if self == Self::AppLink => "app_link",
            None if self == Self::Passkey => "passkey",
            None if self == Self::Print => "print",
            None if self == Self::SignIn => "sign_in",
            None if self == Self::Payment => "payment",
            None if self == Self::StorageAccess => "storage_access",
            None if self == Self::EyeDropper => "eye_dropper",
            None if self == Self::FileChooser => "file_chooser",
            None if self == Self::Download => "download",
            None => "auth",
        }
    }

    /// Open with no watchdog, what an agent must know: no answer reaches it (an app link's
    /// is the browser's own dialog, shown while the pilot is off).
    pub fn unanswerable(self) -> Option<&'static str> {
        (self == Self::AppLink).then_some(
            "An app_link without a watchdog is the browser's own \"Open …?\" dialog: it drops every click and key \
to the tab and no answer reaches it; navigate the tab to another site to clear it.",
        )
    }

    /// The page dialog this is, if it is one.
    pub fn dialog(self) -> Option<DialogKind> {
        match self {
            Self::Alert => Some(DialogKind::Alert),
            Self::Confirm => Some(DialogKind::Confirm),
            Self::Prompt => Some(DialogKind::Prompt),
            Self::BeforeUnload => Some(DialogKind::BeforeUnload),
            Self::Auth
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
            | Self::Download => None,
        }
    }

    /// Shown by the browser itself, not raised by page script (no engine decides it).
    pub fn is_browser_prompt(self) -> bool {
        self.dialog().is_none()
    }
}

#[cfg(test)]
impl Kind {
    /// A kind by its wire name, for a test that needs some kind without naming one.
    pub fn named(name: &str) -> Kind {
        serde_json::from_value(serde_json::Value::from(name)).expect("a kind's wire name")
    }
}

impl From<crate::api::HeldCall> for Kind {
    fn from(h: crate::api::HeldCall) -> Self {
        use crate::api::HeldCall;
        match h {
            HeldCall::SignIn => Self::SignIn,
            HeldCall::Payment => Self::Payment,
            HeldCall::StorageAccess => Self::StorageAccess,
            HeldCall::EyeDropper => Self::EyeDropper,
        }
    }
}

impl From<DialogKind> for Kind {
    fn from(k: DialogKind) -> Self {
        match k {
            DialogKind::Alert => Self::Alert,
            DialogKind::Confirm => Self::Confirm,
            DialogKind::Prompt => Self::Prompt,
            DialogKind::BeforeUnload => Self::BeforeUnload,
        }
    }
}

impl PartialEq<DialogKind> for Kind {
    fn eq(&self, other: &DialogKind) -> bool {
        self.dialog() == Some(*other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_engines_plus_auth() {
        for k in DialogKind::ALL {
            let host = Kind::from(k);
            assert_eq!(host.as_str(), k.as_str());
            assert_eq!(serde_json::to_value(host).unwrap(), serde_json::to_value(k).unwrap());
            assert!(host == k && !host.is_browser_prompt());
        }
        assert_eq!(serde_json::to_value(Kind::Auth).unwrap(), "auth");
        assert!(Kind::Auth.is_browser_prompt());
        assert_eq!(serde_json::to_value(Kind::Permission).unwrap(), Kind::Permission.as_str());
        assert!(Kind::Permission.is_browser_prompt());
        assert_eq!(serde_json::to_value(Kind::DeviceChooser).unwrap(), Kind::DeviceChooser.as_str());
        assert!(Kind::DeviceChooser.is_browser_prompt());
        assert_eq!(serde_json::to_value(Kind::AppLink).unwrap(), Kind::AppLink.as_str());
        assert_eq!(serde_json::to_value(Kind::Passkey).unwrap(), Kind::Passkey.as_str());
    }
}
