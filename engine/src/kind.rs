//! The vocabulary the engine shares with the host: dialog kinds, rule targets and the tab's
//! dialog policy, each with its wire code and the name agents see.

/// The four dialogs a page can raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[repr(u8)]
pub enum DialogKind {
    Alert = 0,
    Confirm = 1,
    Prompt = 2,
    BeforeUnload = 3,
}

impl DialogKind {
    pub const ALL: [DialogKind; 4] = [Self::Alert, Self::Confirm, Self::Prompt, Self::BeforeUnload];

    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.get(usize::from(v)).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Alert => "alert",
            Self::Confirm => "confirm",
            Self::Prompt => "prompt",
            Self::BeforeUnload => "beforeunload",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What a rule applies to: one kind, or every kind (`dialog_type: "all"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RuleTarget {
    One(DialogKind),
    All,
}

impl RuleTarget {
    const ALL_CODE: u8 = 4;

    pub fn code(self) -> u8 {
        match self {
            Self::One(k) => k as u8,
            Self::All => Self::ALL_CODE,
        }
    }

    pub fn from_code(v: u8) -> Option<Self> {
        if v == Self::ALL_CODE { Some(Self::All) } else { DialogKind::from_u8(v).map(Self::One) }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::One(k) => k.as_str(),
            Self::All => "all",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        if s == "all" { Some(Self::All) } else { DialogKind::parse(s).map(Self::One) }
    }

    pub fn matches(self, kind: DialogKind) -> bool {
        match self {
            Self::One(k) => k == kind,
            Self::All => true,
        }
    }
}

/// What answers a dialog no rule matches: the agent's `dialog_policy` for the tab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[repr(u8)]
pub enum Policy {
    /// Default: alert accepted, confirm false, prompt null, at once; beforeunload left alone.
    #[default]
    Auto = 0,
    /// Hold the dialog open until the agent answers it (or the watchdog dismisses it): the
    /// browser opens its own dialog and the extension's debugger session holds it.
    MustRespond = 1,
    /// Accept at once (prompt returns ""; a leave prompt leaves).
    AutoAccept = 2,
    /// Dismiss at once (a leave prompt stays).
    AutoDismiss = 3,
}

impl Policy {
    pub const ALL: [Policy; 4] = [Self::Auto, Self::MustRespond, Self::AutoAccept, Self::AutoDismiss];

    pub fn from_u8(v: u8) -> Option<Self> {
        Self::ALL.get(usize::from(v)).copied()
    }

    /// The name agents use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::MustRespond => "must_respond",
            Self::AutoAccept => "auto_accept",
            Self::AutoDismiss => "auto_dismiss",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in 0..=4 {
            let t = RuleTarget::from_code(code).unwrap();
            assert_eq!(t.code(), code);
            assert_eq!(RuleTarget::parse(t.as_str()), Some(t));
        }
        assert_eq!(RuleTarget::from_code(5), None);
        assert_eq!(RuleTarget::parse("Confirm"), None);
    }

    #[test]
    fn policies_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::from_u8(p as u8), Some(p));
            assert_eq!(Policy::parse(p.as_str()), Some(p));
        }
        assert_eq!(Policy::from_u8(4), None);
    }
}
