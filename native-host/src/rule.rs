//! What a rule answers, in types that name no kind: a page dialog's rule (the engine
//! applies it) or one kind's own rule struct (`OwnRule`, in the kind's file under
//! `host/kinds/`), and which dialogs a setup or a clear names (`DialogType`). Low: the
//! host's state keeps these; their `Debug` is the registry's (`host/kinds/args.rs`: every
//! kind's match field names, for the validation snapshot).

use crate::api::MatchArg;
use crate::kind::Kind;
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use unmodal_engine::RuleTarget;

/// Which dialogs a setup or a clear names: one kind, or all of them (`None`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DialogType(pub Option<Kind>);

impl DialogType {
    pub const ALL: DialogType = DialogType(None);

    pub fn of(kind: Kind) -> Self {
        Self(Some(kind))
    }

    /// As agents name it.
    pub fn as_str(self) -> &'static str {
        self.0.map_or("all", Kind::as_str)
    }

    /// What a page dialog's rule of this type targets (browser prompts' rules never reach a page).
    pub fn target(self) -> RuleTarget {
        match self.0.and_then(Kind::dialog) {
            Some(k) => RuleTarget::One(k),
            None => RuleTarget::All,
        }
    }

    /// alert, confirm, prompt, beforeunload or all: the page's engine applies its rules.
    pub fn is_page_dialog(self) -> bool {
        self.0.is_none_or(|k| !k.is_browser_prompt())
    }
}

/// `device_chooser` → `DeviceChooser`: how a kind's name shows in `Debug` (the validation
/// snapshot reads it so).
pub fn camel(name: &str) -> String {
    name.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect()
}

impl fmt::Debug for DialogType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&camel(self.as_str()))
    }
}

/// What a rule answers. The page's engine applies `Dialog` rules; the host applies a
/// kind's own (they never reach a page, and live in memory only).
#[derive(Clone, PartialEq)]
pub enum RuleSpec {
    /// alert, confirm, prompt, beforeunload, or all of them.
    Dialog { target: RuleTarget, accept: bool, text: Option<String>, matcher: MatchArg },
    /// A browser prompt's rule, its kind's own struct.
    Kind(KindRule),
}

/// A kind's rule: its file's struct, behind a handle that names no kind.
#[derive(Clone)]
pub struct KindRule(Arc<dyn OwnRule>);

impl PartialEq for KindRule {
    fn eq(&self, other: &Self) -> bool {
        self.0.eq_dyn(other.0.as_any())
    }
}

impl fmt::Debug for KindRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What every kind's rule struct tells the generic code (`impl_own_rule!` writes the
/// plumbing: `as_any`, `eq_dyn`).
pub trait OwnRule: fmt::Debug + Send + Sync + Any {
    fn kind(&self) -> Kind;
    /// Whether it accepts what it answers (a chooser's cancel, an auth rule without a login: no).
    fn accept(&self) -> bool;
    fn matcher(&self) -> &MatchArg;
    /// Whether the tab's config carries it (what the worker must know: choosers intercepted,
    /// the site's downloads setting). Adding, clearing, spending or copying such a rule
    /// sends the config again.
    fn in_config(&self) -> bool {
        false
    }
    fn as_any(&self) -> &dyn Any;
    fn eq_dyn(&self, other: &dyn Any) -> bool;
}

/// The `as_any` and `eq_dyn` of an `OwnRule` or a `CarryOf` whose type is `Clone + PartialEq`.
#[macro_export]
macro_rules! own_plumbing {
    (carry) => {
        $crate::own_plumbing!();
        fn clone_box(&self) -> Box<dyn $crate::host::kinds::rule::CarryOf> {
            Box::new(self.clone())
        }
    };
    () => {
        fn as_any(&self) -> &dyn std::any::Any {
            self
        }
        fn eq_dyn(&self, other: &dyn std::any::Any) -> bool {
            other.downcast_ref::<Self>() == Some(self)
        }
    };
}

/// A kind's rule struct's `OwnRule` and `Debug` (as `$name { fields…, matcher }`): its
/// kind, whether it accepts (`|r| …`), whether the tab's config carries it, and the fields
/// `Debug` shows before its `matcher`.
#[macro_export]
macro_rules! own_rule {
    ($ty:ident, $name:literal, $kind:expr, accept: $accept:expr, in_config: $in_config:expr, show: [$($f:ident),*]) => {
        impl $crate::rule::OwnRule for $ty {
            fn kind(&self) -> $crate::kind::Kind {
                $kind
            }
            fn accept(&self) -> bool {
                let accept: fn(&Self) -> bool = $accept;
                accept(self)
            }
            fn matcher(&self) -> &$crate::api::MatchArg {
                &self.matcher
            }
            fn in_config(&self) -> bool {
                let in_config: fn(&Self) -> bool = $in_config;
                in_config(self)
            }
            $crate::own_plumbing!();
        }

        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct($name)
                    $(.field(stringify!($f), &self.$f))*
                    .field("matcher", &$crate::host::kinds::args::Shown(&self.matcher))
                    .finish()
            }
        }
    };
}

impl RuleSpec {
    /// A kind's rule.
    pub fn own(rule: impl OwnRule) -> Self {
        Self::Kind(KindRule(Arc::new(rule)))
    }

    /// The kind's own rule struct, if it is of type `T`.
    pub fn of<T: OwnRule>(&self) -> Option<&T> {
        match self {
            Self::Kind(KindRule(r)) => r.as_any().downcast_ref(),
            Self::Dialog { .. } => None,
        }
    }

    /// The kind a browser prompt's rule is of (none: a page dialog's).
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Self::Kind(KindRule(r)) => Some(r.kind()),
            Self::Dialog { .. } => None,
        }
    }

    /// Whether the tab's config carries it: a page dialog's (the page's engine applies it),
    /// or a kind's that says so (`OwnRule::in_config`). The one test of whether adding,
    /// clearing, spending or copying a rule changes what the worker holds for the tab.
    pub fn in_config(&self) -> bool {
        match self {
            Self::Dialog { .. } => true,
            Self::Kind(KindRule(r)) => r.in_config(),
        }
    }

    /// The `dialog_type` it answers, as agents name it.
    pub fn dialog_type(&self) -> &'static str {
        match self {
            Self::Dialog { target, .. } => target.as_str(),
            Self::Kind(KindRule(r)) => r.kind().as_str(),
        }
    }

    pub fn accept(&self) -> bool {
        match self {
            Self::Dialog { accept, .. } => *accept,
            Self::Kind(KindRule(r)) => r.accept(),
        }
    }

    pub fn matcher(&self) -> &MatchArg {
        match self {
            Self::Dialog { matcher, .. } => matcher,
            Self::Kind(KindRule(r)) => r.matcher(),
        }
    }

    /// Whether `clear` with `what` removes it.
    pub fn cleared_by(&self, what: DialogType) -> bool {
        match (self, what.0) {
            (_, None) => true,
            (Self::Dialog { target, .. }, Some(_)) => *target == what.target() && what.is_page_dialog(),
            (Self::Kind(KindRule(r)), Some(k)) => r.kind() == k,
        }
    }
}
