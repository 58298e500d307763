//! What can hold a tab up: a page's JavaScript dialog (the engine's `DialogKind`, decided in
//! the page) or a prompt the browser shows on its own, which the host decides (one file
//! each under `host/kinds/`). One name space, so records, `dialogs_blocking` and
//! `dialog_type` speak of all of them alike. A `Kind` is a handle: a browser prompt's is
//! declared once, in its own file (`pub const KIND`), and read back through the registry
//! (`host::kinds::ALL`, which also reads one from the wire: its `Deserialize`, `all`);
//! this file names none of them and imports nothing of the host. The engine's wire codes stay as they
//! are: pages never hear of browser prompts.

use serde::{Serialize, Serializer};
use std::fmt;
use unmodal_engine::DialogKind;

/// A kind, by the name it has on every wire.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Kind(&'static str);

impl Kind {
    pub const ALERT: Kind = Kind("alert");
    pub const CONFIRM: Kind = Kind("confirm");
    pub const PROMPT: Kind = Kind("prompt");
    pub const BEFORE_UNLOAD: Kind = Kind("beforeunload");

    /// A browser prompt's handle, for the `KIND` constant of its own file: the one place its
    /// name is written (the registry, `host/kinds/mod.rs`, lists the file).
    pub const fn new(name: &'static str) -> Self {
        Self(name)
    }

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// The page dialog this is, if it is one.
    pub fn dialog(self) -> Option<DialogKind> {
        DialogKind::ALL.into_iter().find(|k| k.as_str() == self.0)
    }

    /// Shown by the browser itself, not raised by page script (no engine decides it).
    pub fn is_browser_prompt(self) -> bool {
        self.dialog().is_none()
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0)
    }
}

impl From<DialogKind> for Kind {
    fn from(k: DialogKind) -> Self {
        match k {
            DialogKind::Alert => Self::ALERT,
            DialogKind::Confirm => Self::CONFIRM,
            DialogKind::Prompt => Self::PROMPT,
            DialogKind::BeforeUnload => Self::BEFORE_UNLOAD,
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
    use crate::host::kinds::{app_link, auth, device_chooser, passkey, permission};

    #[test]
    fn names_are_the_engines_plus_auth() {
        for k in DialogKind::ALL {
            let host = Kind::from(k);
            assert_eq!(host.as_str(), k.as_str());
            assert_eq!(serde_json::to_value(host).unwrap(), serde_json::to_value(k).unwrap());
            assert!(host == k && !host.is_browser_prompt());
        }
        assert_eq!(serde_json::to_value(auth::KIND).unwrap(), "auth");
        assert!(auth::KIND.is_browser_prompt());
        assert_eq!(serde_json::to_value(permission::KIND).unwrap(), permission::KIND.as_str());
        assert!(permission::KIND.is_browser_prompt());
        assert_eq!(serde_json::to_value(device_chooser::KIND).unwrap(), device_chooser::KIND.as_str());
        assert!(device_chooser::KIND.is_browser_prompt());
        assert_eq!(serde_json::to_value(app_link::KIND).unwrap(), app_link::KIND.as_str());
        assert_eq!(serde_json::to_value(passkey::KIND).unwrap(), passkey::KIND.as_str());
    }

    /// Every kind reads back from its own name, and no other name reads as a kind.
    #[test]
    fn every_kind_reads_back_from_its_name() {
        for k in Kind::all() {
            assert_eq!(serde_json::from_value::<Kind>(serde_json::to_value(k).unwrap()).unwrap(), k);
        }
        assert!(serde_json::from_value::<Kind>("toast".into()).is_err());
        assert!(Kind::all().count() >= 16);
    }
}
